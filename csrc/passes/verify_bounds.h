// Checks every tensor access against the tensor's shape, at compile time: with scalars and
// shapes specialized, most indices are functions of loop variables whose ranges are constants.
// Each index's range over the loops around it (ir/interval.h), narrowed by the `if` conditions
// on the way that compare a loop variable with a constant, is compared with the extent of its
// dimension (Python's negative indices count from the end: -extent..extent-1 are valid).
// * An access whose every index is within its extent is marked proved in bounds
//   (Load::in_bounds); it needs no check at run time.
// * An access that is certainly reached and certainly out of bounds on some iteration (its
//   range is exact, see ir/interval.h) is an error naming the tensor, the dimension, the index's
//   range and the extent.
// * Anything else (a data-dependent index, an index under a condition the analysis cannot
//   follow) is left unproved: the run-time checks of CompileOptions.bounds_check cover it.
// Requires typed, simplified IR; runs before detect_reductions, while reduction targets are
// still ordinary accesses. Counts the accesses and the proved ones in `stats`.
#pragma once

#include "ir/specialized_function.h"

namespace parir {

struct BoundsStats {
  int64_t accesses = 0;  // tensor accesses in the code
  int64_t proved = 0;    // of which proved in bounds
};

void verify_bounds(SpecializedFunction& prog, BoundsStats* stats = nullptr);

}  // namespace parir
