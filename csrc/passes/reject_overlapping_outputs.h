// Rejects a store to a tensor whose elements share memory: an expanded tensor (`y.expand(4, 3)`,
// stride 0 along a dimension of more than one element), where the parallel iterations that
// write different elements would write the same memory and race. PyTorch refuses in-place
// operations on such tensors for the same reason; the error names the first statement that
// writes the tensor and the dimension. Reading such a tensor is fine (a broadcast input).
// Requires typed IR.
#pragma once

#include "ir/specialized_function.h"

namespace parir {

void reject_overlapping_outputs(const SpecializedFunction& prog);

}  // namespace parir
