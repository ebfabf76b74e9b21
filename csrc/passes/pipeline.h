// The compiler: a specialized function in, CUDA C++ (with its launch plan) out.
#pragma once

#include "passes/inline_functions.h"
#include "passes/program.h"

namespace parir {

struct CompileResult {
  std::string cuda;       // kernels + "//@" launch plan; see codegen/cuda_codegen.h
  std::string debug_log;  // with CompileOptions::debug_print: the IR after each pass, timed
};

// `callees` resolves the functions that fn (and the functions it calls) call by name.
CompileResult compile(const Function& fn, const std::vector<ArgValue>& args,
                      const CompileOptions& opts, const CalleeTable& callees = {});

}  // namespace parir
