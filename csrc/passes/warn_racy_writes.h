// Warns where a parallel loop writes to a tensor element chosen by data, as in a histogram
// (`out[idx[i]] += w[i]` with i parallel, or `k = idx[i]` then `out[k] += w[i]`): two
// iterations may pick the same element, and their
// read-modify-writes then race, losing updates. The compiler cannot tell whether the indices
// are distinct (a permutation) or not, so this is a warning naming the statement, not an error.
// A reduction into a fixed element (a reduce-labelled loop) is not such a write, nor is an
// atomic update (parir.atomic_add, ...), which the warning suggests. Needs the
// parallel specification applied (apply_parallel_spec).
#pragma once

#include "ir/specialized_function.h"

namespace parir {

void warn_racy_writes(SpecializedFunction& prog);

}  // namespace parir
