#pragma once

#include "ir/kernel.h"

namespace parir {

// Math that a loop inside a kernel computes from values the loop does not change is computed
// once, into a local before the loop. A float of the time step that inline_host_values moved
// into the kernels (`0.5 * sin(0.1 * step) + 0.25`) sits in the body of the loop over each
// thread's elements; where a thread runs several of its iterations (a tile of 4,096 elements
// on 1,024 threads, step after step), the CUDA compiler evaluated it in every one, each under
// that iteration's bounds test. Hoisted: the largest float subexpressions that call the math
// library and read only the kernel's host variables and the variables of the sequential loops
// around the loop inside the kernel, none of which the loop assigns; equal ones share a local.
// Math is pure, so computing it where the loop would not run changes no result. Left alone:
// the kernel's outermost loop (nothing around it in the kernel to hoist to), reduction and scan
// loops, whose bodies the code generator lays out around their element, and values of other
// locals or of the parallel loops' variables.
void hoist_invariant_math(SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
