// Locals that name tensor arguments, as a CUDA port swaps its pointers between time steps
// (`src, dst = a, b` before a host loop, `src, dst = dst, src` at the end of its body), are
// replaced by the tensors they name at each statement.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "ir/specialized_function.h"

namespace parir {

// Returns `fn` (after inline_functions) with every local that only ever takes tensor arguments
// (or other such locals) replaced by the tensor it names where it is read, and its assignments
// removed. A host loop whose body changes which tensors the locals name is unrolled by the
// period of that change (two iterations for a swap of two), so that each copy of the body
// names fixed tensors: a `for` loop over a range the scalar arguments fix, with a remainder of
// fewer iterations after it. Where the names after a statement depend on what only the run
// knows (a while loop, an if, a range of host locals), they must not change there.
// Errors: such a local assigned in parallel code or in `with parir.gpu:`, assigned something
// other than a tensor, read before it names one, or changing in a loop or if as above.
// A function without such locals is returned unchanged.
Function resolve_tensor_aliases(const Function& fn, const std::vector<ArgValue>& args);

}  // namespace parir
