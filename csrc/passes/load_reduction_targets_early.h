#pragma once

#include "ir/kernel.h"

namespace parir {

// Reduction targets loaded before their loop. A reduction into a tensor element
// (`y[i] += x[i, j]` over the threads of a block) combines the block's result with the
// element's old value at the end: one more load from memory after the block's reduction, which
// the whole block waits for before it can retire, once per row. Where the loop itself stores
// nothing (no assignment to a tensor, atomic update or external call), nothing in it can change
// the element, so each thread loads it into a local just before the loop, where its latency
// hides behind the loop's own loads, and the result combines with that local. Left alone:
// targets checked at run time, reductions that several blocks combine atomically or in chunks,
// index reductions, scans, and kernels whose blocks form clusters.
void load_reduction_targets_early(SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
