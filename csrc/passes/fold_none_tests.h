// Tests of None arguments (`bias is not None`, an optional tensor not given) become constants of
// the call, and the code they rule out is dropped before anything reads it.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "ir/specialized_function.h"

namespace parir {

// Returns `fn` (after inline_functions) with every `x is None` replaced by whether the call
// passed None for x (a parameter, or a dict entry "d.k"; the frontend's literal None, "None",
// always is), and the code those tests decide reduced to what runs: an `if` to the branch taken,
// `a if c else b` to the value taken, `c and e` and `c or e` to what Python evaluates (the right
// side is not read where the left decides). A local assigned once, outside loops and branches,
// from such a test (`has_bias = bias is not None`, as Triton ports write a constexpr) is that
// constant wherever it is read.
// A None argument that the function assigns (`if scale is None: scale = 1.0`) is a local that
// starts as None: it may be tested only outside loops and before its first assignment (an error
// otherwise). Other uses of None arguments are left for specialize_arguments, which rejects them.
Function fold_none_tests(const Function& fn, const std::vector<ArgValue>& args);

}  // namespace parir
