// The state that flows through the compiler pipeline for one specialization of a function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace parir {

// One argument of a call, as the compiler specializes on it: scalars by value, tensors by
// element type, shape and strides (never by contents).
struct ArgValue {
  enum class Kind { Int, Float, Bool, Tensor };
  Kind kind = Kind::Int;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  TensorType tensor;
};

using ParallelSpec = std::map<std::string, LoopPar>;

struct CompileOptions {
  ParallelSpec parallelize;
  bool debug_print = false;  // log the IR after each pass, with elapsed time
  bool use_cuda_graphs = false;  // the launch plan runs as one CUDA graph
  // Multi-block reductions combine through thread block clusters of at most this many blocks.
  bool use_clusters = false;
  int64_t max_blocks_per_cluster = 8;
};

// A function specialized to its arguments: scalar parameters are gone (replaced by their values)
// and every tensor parameter has a TensorType.
struct Program {
  std::string name;
  std::shared_ptr<const SourceInfo> source;
  std::vector<std::string> tensor_params;       // in parameter order
  std::map<std::string, TensorType> tensors;    // by name
  std::map<std::string, Type> locals;           // set by infer_types
  Body body;

  [[noreturn]] void error(const Loc& loc, const std::string& msg) const {
    throw_at(*source, loc, msg);
  }
  bool is_tensor(const std::string& name) const { return tensors.count(name) > 0; }
};

}  // namespace parir
