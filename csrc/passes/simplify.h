#pragma once

#include "passes/program.h"

namespace parir {

// Folds constant expressions (after specialization most sizes and scalars are constants),
// removes the identities `x + 0`, `x * 1`, `x // 1` from integer arithmetic, and replaces an
// `if` on a constant condition by the branch taken. Keeps generated code and launch plans small
// and readable. Requires typed IR (infer_types).
void simplify(Program& prog);

ExprPtr simplify(const ExprPtr& e);
Body simplify(const Body& body);

// Python's floor division and modulo for integers (b != 0).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace parir
