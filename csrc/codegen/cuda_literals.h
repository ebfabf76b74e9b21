// How the code generator spells constants and operators in CUDA C++: integer literals of each
// type (the most negative ones as expressions), float literals that round to the same value
// (infinities and NaN through the prelude; float16 and bfloat16, which have no literals, as
// conversions), and the binary operators.
#pragma once

#include <string>

#include "ir/ir.h"

namespace parir {

std::string int_literal(int64_t v, ScalarType t);
std::string float_literal(double v, ScalarType t);
const char* cuda_operator(BinaryOp op);

}  // namespace parir
