#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Attaches the user's parallel specification to the loops it names: a For labelled with a label
// of the spec gets that LoopPar. Every label of the spec must mark a for-loop of the function;
// a while-loop or plain statement cannot be parallelized this way.
void apply_parallel_spec(SpecializedFunction& prog, const ParallelSpec& spec);

}  // namespace parir
