#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Turns slice statements into loops, as the README's "Slices" describes: each slice dimension of
// the assignment's target becomes a loop, outermost first, and the slices of the right-hand side
// are matched to those loops in order (their extents must agree). A slice reduction
// parir.sum/prod/min/max(e[, axis=k]) becomes reduction loops over the reduced dimensions, which
// accumulate into a fresh local stored once into the target (or, for `t[...] = parir.sum(...)`
// outside parallel code over several thread blocks with values of t's own type, into the
// target itself after a loop nest that initializes it). A slice scan
// `t[...] = parir.cumsum/cumprod/cummin/cummax(e[, axis=k][, exclusive=True])` becomes the loop
// form of a scan: loops over the target's dimensions with the scanned one innermost, carrying a
// running local that each iteration combines and stores, each loop labelled with its
// dimension's label (the scanned loop marked .scan() for apply_parallel_spec). The statement's
// labels go to the other loops it
// becomes, in nesting order; loops that reduce are marked .reduce() for apply_parallel_spec. Slice
// bounds follow Python (negative bounds count from the end) and must be constants: of the scalar
// arguments and shapes, and of the integer locals the function assigns a constant once at its
// top (`half = n // 2`). Errors: mismatched extents, a slice assigned to a local (which would
// need a new tensor), slices outside assignments. Runs after specialize_arguments and before
// apply_parallel_spec (it uses the spec to tell parallel code from host code and to see how
// many blocks a reduction spans).
void lower_slices(SpecializedFunction& prog, const CompileOptions& opts);

}  // namespace parir
