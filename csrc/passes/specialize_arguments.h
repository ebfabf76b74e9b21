#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Binds a call's arguments to the function's parameters: scalar parameters are replaced by their
// values (weakly typed literals, so the compiled code is specialized on them) and tensor
// parameters get their types. Checks the argument count, that tensors are only indexed (with one
// index per dimension) and scalars never are, and that parameters are not assigned to. Python
// numbers take the default int and float types of `opts` (force_int_size, force_float_size).
// A None argument (its tests already folded by fold_none_tests) may not be used at all, unless
// the function assigns it, which makes it a local.
SpecializedFunction specialize_arguments(const Function& fn, const std::vector<ArgValue>& args,
                             const CompileOptions& opts);

}  // namespace parir
