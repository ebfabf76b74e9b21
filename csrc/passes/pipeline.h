// The compiler: a specialized function in, CUDA C++ (with its launch plan) out.
#pragma once

#include "passes/program.h"

namespace parir {

struct CompileResult {
  std::string cuda;       // kernels + "//@" launch plan; see codegen/cuda_codegen.h
  std::string debug_log;  // with CompileOptions::debug_print: the IR after each pass, timed
};

CompileResult compile(const Function& fn, const std::vector<ArgValue>& args,
                      const CompileOptions& opts);

}  // namespace parir
