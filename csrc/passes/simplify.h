#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Folds constant expressions (after specialization most sizes and scalars are constants),
// removes the identities `x + 0`, `x * 1`, `x // 1` from integer arithmetic (dropping the
// assignments `s = s` that this leaves), and replaces an `if` on a constant condition by the
// branch taken. Keeps generated code and launch plans small
// and readable. Requires typed IR (infer_types).
void simplify(SpecializedFunction& prog);

ExprPtr simplify(const ExprPtr& e);
Body simplify(const Body& body);

}  // namespace parir
