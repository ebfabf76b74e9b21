#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Attaches the user's parallel specification to the loops it names: a For labelled with a label
// of the spec gets that LoopPar. A label of the spec that the function does not use is ignored
// (one spec is often shared by several functions); a spec none of whose labels the function
// uses gets a warning. A label in the spec may only mark for-loops: a while-loop or plain
// statement cannot be parallelized this way. A loop given 0 threads that is not certainly empty
// is an error: none of its iterations would run.
void apply_parallel_spec(SpecializedFunction& prog, const ParallelSpec& spec);

}  // namespace parir
