#pragma once

#include "ir/kernel.h"

namespace parir {

// Prints the CUDA C++ source of a lowered program: the kernels, then the launch plan as "//@"
// comment lines (launch_plan.h). Statements carry `#line` directives back to the user's Python
// file, so NVRTC's diagnostics point at the user's code. The source includes "parir.h"
// (prelude.h), which the compiler supplies.
std::string generate_cuda(const SpecializedFunction& prog, const Lowered& lowered);

}  // namespace parir
