// What the compiler is given for one call (the arguments it specializes on and the options),
// and the level of IR the passes between specialize_arguments and split_host_device work on: the
// function specialized to those arguments. (Below it, ir/kernel.h: kernels and launch plan.)
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/launch_plan.h"

namespace parir {

// One argument of a call, as the compiler specializes on it: scalars by value, tensors by
// element type, shape and strides (never by contents). None (a parameter left at a default of
// None, an optional tensor not given) is a value only `x is None` may read.
struct ArgValue {
  enum class Kind { Int, Float, Bool, Tensor, Dict, None };
  Kind kind = Kind::Int;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  // A scalar with a type of its own (a 0-d tensor's dtype) is strongly typed; Unknown for
  // Python numbers, which are weak and take the program's default int or float type.
  ScalarType scalar_type = ScalarType::Unknown;
  TensorType tensor;
  // A dict argument `d`: its entries, each an argument of its own named "d.<key>" (the front
  // end turns d['key'] into that name).
  std::vector<std::string> entry_keys;
  std::vector<ArgValue> entries;
};

using ParallelSpec = std::map<std::string, LoopPar>;

struct CompileOptions {
  ParallelSpec parallelize;
  bool debug_print = false;  // log the IR after each pass, with elapsed time
  CudaGraphs use_cuda_graphs = CudaGraphs::Auto;  // when the launch plan runs as a CUDA graph
  bool persistent_loops = true;  // host loops of small kernels also become persistent kernels
  bool time_tiling = true;  // time loops of 1-D stencils run several steps per launch
  bool product_tiling = true;  // matrix-product loop nests run in register tiles
  bool wide_accesses = true;  // contiguous thread loops move 16 bytes per access (widen_accesses)
  // Accesses verify_bounds could not prove in bounds are checked at run time (flatten_indices).
  bool bounds_check = false;
  // Multi-block reductions combine through thread block clusters of at most this many blocks.
  bool use_cuda_thread_block_clusters = false;
  int64_t max_thread_blocks_per_cluster = 8;
  // CompileOptions.force_int_size / force_float_size: the type of integer and float values that
  // have no type of their own (literals, Python scalars, loop variables); Unknown = int64 and
  // float64.
  ScalarType force_int_size = ScalarType::Unknown;
  ScalarType force_float_size = ScalarType::Unknown;
  // float16 and bfloat16 elements are read as float32, so that arithmetic on them computes in
  // float32 and rounds once, when stored (as PyTorch's elementwise kernels compute).
  bool half_in_float32 = false;
  // Reductions over several blocks combine the blocks' results in a fixed order, through a
  // temporary, instead of atomically (split_multi_block_kernels).
  bool deterministic = false;
  // The peak DRAM bandwidth of the GPU the code is compiled for, in GB/s (0: compiled without
  // one, as on a machine with no GPU). Streaming kernels keep more bytes in flight per thread
  // where memory is faster (widen_accesses).
  int64_t memory_bandwidth_gbps = 0;
  // Recorded in the launch plan for the runtime: NVRTC include directories and flags, and
  // device libraries to link.
  std::vector<std::string> includes, extra_flags, link_libraries;
};

// How the thread level of a kernel maps onto blocks: `threads` rounded up to a warp, in blocks
// of `tpb` threads (the requested size, at most that many threads and at least a warp).
struct BlockShape {
  int64_t threads, tpb, blocks;
};
inline BlockShape block_shape(int64_t threads, int64_t requested_tpb) {
  int64_t rounded = (threads + 31) / 32 * 32;
  int64_t tpb = std::max<int64_t>(32, std::min(rounded, requested_tpb));
  return {rounded, tpb, (rounded + tpb - 1) / tpb};
}

// Whether a reduction over `blocks` blocks runs them as one thread block cluster.
inline bool runs_as_cluster(const CompileOptions& opts, int64_t blocks) {
  return opts.use_cuda_thread_block_clusters && blocks > 1 &&
         blocks <= opts.max_thread_blocks_per_cluster;
}

// A function specialized to its arguments: scalar parameters are gone (replaced by their values)
// and every tensor parameter has a TensorType.
struct SpecializedFunction {
  std::string name;
  std::shared_ptr<const SourceInfo> source;
  std::vector<std::string> tensor_params;       // in parameter order
  std::map<std::string, TensorType> tensors;    // by name, temporaries included
  // Tensors the compiler adds (split_multi_block_kernels): contiguous, allocated by the runtime
  // for each call, never passed by the caller.
  std::vector<std::string> temporaries;
  std::map<std::string, Type> locals;           // set by infer_types
  // Locals the host computes (keep_host_locals_on_gpu): assigned outside the parallel loops and
  // read by the host (a host loop's range or condition, an if's condition). They stay in
  // `locals`; the launch plan assigns them (PlanStep::Kind::Assign) and kernels read them as
  // arguments, as they read host loop variables.
  std::set<std::string> host_locals;
  // Locals that infer_types widens to int64 when their values are integers or bools: the
  // accumulators of slice sums and products (lower_slices).
  std::set<std::string> wide_accumulators;
  // Locals that split_variable_webs renamed apart -> the name the user wrote.
  std::map<std::string, std::string> renamed_locals;
  const std::string& user_name(const std::string& local) const {
    auto it = renamed_locals.find(local);
    return it == renamed_locals.end() ? local : it->second;
  }
  Body body;
  // The call this program was specialized for, as the launch plan's signature line prints it:
  // "f(x, y, N=1000, d['k']=2.5)" (tensors by name, scalars with their values).
  std::string signature;
  // The types of integer and float values that have no type of their own (see CompileOptions).
  ScalarType int_type = ScalarType::I64;
  ScalarType float_type = ScalarType::F64;
  bool half_in_float32 = false;  // CompileOptions.half_in_float32

  // Warnings for the user (Python's warnings.warn), each naming the file and line.
  std::vector<std::string> warnings;

  [[noreturn]] void error(const Loc& loc, const std::string& msg) const {
    throw_at(loc.src ? *loc.src : *source, loc, msg);
  }
  void warn(const Loc& loc, const std::string& msg) {
    warnings.push_back(message_at(loc.src ? *loc.src : *source, loc, msg));
  }
  bool is_tensor(const std::string& name) const { return tensors.count(name) > 0; }
};

}  // namespace parir
