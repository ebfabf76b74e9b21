#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Splits a parallel nest into several kernels where one kernel cannot run it, as the README's
// "How loops map to the GPU" describes: an outermost parallel loop whose body holds sibling
// parallel loops that request different numbers of threads (and do not all fit in one block)
// becomes one copy of the outer loop per group of siblings, each with the statements before
// its siblings. (Kernels whose thread level spans several blocks are cut further by
// split_multi_block_kernels.) A local assigned in one part and read in a later one would not survive the split: that is an
// error naming both. Requires typed IR; runs before split_host_device.
void split_parallel_nests(SpecializedFunction& prog);

}  // namespace parir
