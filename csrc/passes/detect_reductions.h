#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Finds what each reduction loop (a parallel loop whose LoopPar has .reduce()) accumulates into
// and attaches a Reduction to it. Accumulations are the forms
//     t += e    t = t + e    t = e + t    t -= e    t *= e    t = t * e
//     t = parir.min(t, e)    t = parir.max(e, t)    (and Python's min/max)
// into one target t: a local, or a tensor element whose indices do not change within the loop.
// A local assigned afresh in the body before it is accumulated into is a per-iteration
// temporary, not a target. Each is rewritten to combine into a per-thread accumulator instead; code generation combines
// the accumulators after the loop. A reduce loop that accumulates nothing stays an ordinary
// parallel loop, and one around further parallel loops reduces through its innermost loops.
// A loop that accumulates into several places becomes one copy per place, when that repeats
// nothing but its computations. An atomic update (parir.atomic_add, ...) is never an
// accumulation: it stays in the body, updating its element in every iteration.
// Errors: accumulations with different operations, a target read or assigned other than by its
// accumulation, a target that changes within the loop, a bool target, and several places in a
// loop that also stores to other tensors or updates elements atomically. Requires typed IR.
void detect_reductions(SpecializedFunction& prog);

}  // namespace parir
