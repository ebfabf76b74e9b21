#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Runs each call of a cooperative external (parir.external(..., parallelize=parir.threads(n)))
// on n threads of one block, which call it together with the same arguments: the statement
// that makes the call becomes the body of a parallel loop of n threads (LoopPar::cooperative),
// each running it once,
//
//   y[i] = row_sum(x, i)      ->   for coop0 in range(n):   # parir.threads(n), cooperative
//                                      y[i] = row_sum(x, i)
//
// The loop is an innermost parallel loop, so the loops around it map to blocks and the block
// has n threads; map_parallelism checks that it has exactly n (all of them call a function
// that may synchronize the block) and lets the statement's locals be read after the loop (the
// threads agree on them). The call must be a statement of its own or the value of an
// assignment; elsewhere (a loop bound, a condition, an atomic update's operand, a parallel
// loop's reduction) it is an error naming the line. Requires typed IR; runs after
// detect_scans, before split_parallel_nests.
void expand_cooperative_calls(SpecializedFunction& prog);

}  // namespace parir
