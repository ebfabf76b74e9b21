#pragma once

#include "ir/specialized_function.h"

namespace parir {

// A float (or narrow integer) local that the host code assigns once, from the variables of the
// host loops around it alone (`dt = 0.5 * t` or `phase = math.sin(0.1 * step)` at the top of a
// time step), and that only the statements after that assignment in the same body read, is
// replaced by its value where it is read: each kernel that reads it computes it from the loop
// variables the host passes. Left a local, keep_host_locals_on_gpu would keep it in a
// one-element temporary written by a one-thread kernel before the step's kernels: a launch per
// iteration for a value each thread computes in a few instructions. The value is computed as
// the assignment computed it (in its own types, then converted to the local's), so results do
// not change. Left alone: int64 and bool locals (the host computes those itself), locals a
// host loop's range or a condition reads, locals assigned more than once or read before their
// assignment, and values that read memory, other locals or call functions other than the math
// library's. Requires typed IR (infer_types); runs after simplify, which replaces the locals
// of constants.
void inline_host_values(SpecializedFunction& prog);

}  // namespace parir
