#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Folds constant expressions (after specialization most sizes and scalars are constants),
// removes the identities `x + 0`, `x * 1`, `x // 1` from integer arithmetic (dropping the
// assignments `s = s` that this leaves), replaces an `if` on a constant condition by the
// branch taken, and replaces a local that the function's own body assigns a constant once
// (`m, n = x.shape`, `scale = 0.5`) by that constant. Keeps generated code and launch plans small
// and readable. Requires typed IR (infer_types).
void simplify(SpecializedFunction& prog);

ExprPtr simplify(const ExprPtr& e);
Body simplify(const Body& body);

}  // namespace parir
