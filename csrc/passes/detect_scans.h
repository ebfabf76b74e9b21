#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Finds the running value of each scan loop (a parallel loop whose LoopPar has .scan()) and
// attaches a scan Reduction to it (ir.h). The body must accumulate into one local s, once per
// iteration, in a statement of its own at the top of the body, in one of the forms that
// reductions accept (s += e, s -= e, s *= e, s = parir.min(s, e), s = parir.max(e, s)), and
// may read s elsewhere: before the accumulation a read sees the running value without this
// iteration's element (the exclusive scan), after it with it (the inclusive scan). The body is
// reordered into the statements that compute the element (those before the accumulation that
// do not read s, then `value = e`) and those that use the running value (the stores before the
// accumulation that read s, then everything after it), which the code generator runs on both
// sides of a block-wide scan. After the loop s holds the total, as after the sequential loop.
// The running value accumulates in the type a reduction would (accumulator_type).
// Errors, naming the line: a scan loop around parallel loops, an accumulation into a tensor
// element, nested in another statement or
// repeated, two running values, the element reading s, other assignments to s, reads of s
// before the accumulation other than by stores to tensor elements (or by stores the
// reordering would move past what they depend on), and other locals carried from one
// iteration to the next. A scan loop that accumulates nothing and carries nothing is an
// ordinary parallel loop. Requires typed IR.
void detect_scans(SpecializedFunction& prog);

}  // namespace parir
