// Early returns as branches: `if x < 0.0: return 0.0` followed by more statements, as Python
// functions are written, becomes an if whose else branch holds those statements, so that every
// `return` ends its function (in both branches of a final if), the form inline_functions
// inlines.
#pragma once

#include "ir/ir.h"

namespace parir::frontend {

// `body` (a function's) with the statements after each if that returns on one branch moved into
// its other branch, level by level (elif chains too), and statements after a return that every
// path reaches dropped, as Python never runs them. Returns in loops and in `with parir.gpu:`
// are left where they are (inline_functions rejects them: leaving a loop early needs control
// flow parir lacks).
Body early_returns_as_branches(const Body& body);

}  // namespace parir::frontend
