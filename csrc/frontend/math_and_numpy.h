// What the names of Python's math module and of NumPy mean in parir code: math.pi, math.exp(x),
// np.arcsin(x), np.float32(x). The converter of Python ast objects (python_ast.cpp) calls these
// where a name resolves to one of those modules; each error names the user's line.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace parir::frontend {

// math.pi, math.e, math.tau, math.inf, math.nan as float literals.
ExprPtr math_constant(const std::string& name, const SourceInfo& src, const Loc& loc);

// math.exp(x) and the other functions of Python's math module that parir has: parir's,
// except that math.floor, ceil and trunc give int64, as in Python (builtins.py lists them).
ExprPtr math_call(const std::string& name, std::vector<ExprPtr> args, bool has_keywords,
                  const SourceInfo& src, const Loc& loc);

// The parir name of NumPy's `alias.attr` (np.arcsin -> "asin", np.float32 -> "float32",
// np.pi -> "math.pi"): its constants, its math functions that parir has (some spelled
// differently), and its dtypes as conversions. Its min and max are left out: their second
// argument is an axis, not a value.
std::string numpy_name(const std::string& alias, const std::string& attr, const SourceInfo& src,
                       const Loc& loc);

}  // namespace parir::frontend
