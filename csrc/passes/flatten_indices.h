// Turns every element access of the kernels, x[i, j], into an access at an element offset,
// x.flat[i * stride0 + j * stride1], through the strides the tensor was specialized for.
// Python's negative indices count from the end: a negative constant index is adjusted here, and
// an index that may be negative (not provably >= 0 from constants and the variables of loops
// that start at a constant >= 0 and step upwards) is wrapped at run time,
// `(i < 0 ? i + extent : i)`. Reduction targets are flattened too. Afterwards the kernels hold
// no Load, only FlatLoads, so that code generation prints what it is given.
// With `bounds_check`, each index of an access that verify_bounds could not prove in bounds
// (other than a constant within its extent) gets a run-time check (IndexCheck): a check site
// is added to the launch plan, the kernel is marked bounds_checked and its launches take the
// plan's error buffer.
// Runs after map_parallelism, on the kernels it mapped.
#pragma once

#include "ir/kernel.h"

namespace parir {

void flatten_indices(const SpecializedFunction& prog, Lowered& lowered, bool bounds_check = false);

}  // namespace parir
