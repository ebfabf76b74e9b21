// The compiler: a function and a call's arguments in, CUDA C++ (with its launch plan) out. The
// passes (csrc/passes) run in the order compile() lists them, then code generation (csrc/codegen).
#pragma once

#include "ir/specialized_function.h"
#include "passes/inline_functions.h"
#include "passes/verify_bounds.h"

namespace parir {

struct CompileResult {
  std::string cuda;       // kernels + "//@" launch plan; see codegen/cuda_codegen.h
  std::string debug_log;  // with CompileOptions::debug_print: the IR after each pass, timed
  BoundsStats bounds;     // the tensor accesses, and how many were proved in bounds
  std::vector<std::string> warnings;  // for the user, each naming the file and line
};

// `callees` resolves the functions that fn (and the functions it calls) call by name.
CompileResult compile(const Function& fn, const std::vector<ArgValue>& args,
                      const CompileOptions& opts, const CalleeTable& callees = {});

}  // namespace parir
