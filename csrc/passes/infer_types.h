#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Gives every expression its type and makes every conversion explicit, so code generation never
// has to reason about types:
// * locals get the promotion of all values assigned to them (README.md, "Types"); assigning strong
//   values of different kinds (int32 and float32, say) to one local is an error;
// * weak literals are retyped to the type they meet (`x[i] * 2.0` multiplies by 2.0f when x is
//   float32), other operands of a different type are wrapped in Casts;
// * conditions become bool, indices and range bounds int64, and stored values take the element
//   type of their tensor or the type of their local.
// Errors: undefined names, use before assignment, assignment to a loop variable, float indices,
// bit operations on floats, and the like.
void infer_types(SpecializedFunction& prog);

}  // namespace parir
