#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Folds constant expressions (after specialization most sizes and scalars are constants;
// `**`, `//`, `%` of floats and the math functions the host computes as the GPU would too),
// removes the identities `x + 0`, `x * 1`, `x // 1` from integer arithmetic (dropping the
// assignments `s = s` that this leaves), folds an int64 comparison that the constant ranges of
// the loops around it decide (`i < C.shape[0]` inside `for i in range(C.shape[0])`, the guard
// CUDA and Numba ports keep), replaces an `if` on a constant condition by the branch taken,
// drops an `if` left with nothing to do whose condition reads no memory, and replaces a local
// that every assignment gives the same constant or expression of constants (`m, n = x.shape`,
// `scale = 0.5`, `correction = 1.0 - beta1 ** t` at the function's top, `step_div_Cap = step /
// Cap` at the top of a helper inlined in each step of a host loop) by that value. Keeps
// generated code and launch plans small and readable, and leaves no such statement to run on
// the host or as a one-thread kernel. Requires typed IR (infer_types).
void simplify(SpecializedFunction& prog);

ExprPtr simplify(const ExprPtr& e);
Body simplify(const Body& body);

}  // namespace parir
