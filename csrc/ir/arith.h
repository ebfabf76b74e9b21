// Integer arithmetic and comparisons as the IR defines them (ir.h): 64-bit two's complement
// wrap-around, Python's floor division and modulo. Shared by the constant folder
// (passes/simplify) and the runtime's evaluation of launch plans, so that a value computed at
// compile time and one computed on the host agree.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/ir.h"

namespace parir {

// Python's floor division and modulo for integers (b != 0).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

// a op b for an arithmetic or bitwise operator; nullopt where the result is undefined (division
// by zero, shifts out of range, negative powers) or op is not arithmetic.
std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b);

// a op b for a comparison operator; nullopt for any other operator.
template <typename T>
std::optional<bool> compare(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Eq:
      return a == b;
    case BinaryOp::Ne:
      return a != b;
    case BinaryOp::Lt:
      return a < b;
    case BinaryOp::Le:
      return a <= b;
    case BinaryOp::Gt:
      return a > b;
    case BinaryOp::Ge:
      return a >= b;
    default:
      return std::nullopt;
  }
}

// Two's complement wrap-around, without signed-overflow undefined behaviour.
inline int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

// An integer converted to the integer type t as C++ and PyTorch convert it: wrapped to t's
// width (int8(200) is -56, uint8(-1) is 255); uint64 keeps the bits.
int64_t convert_int(int64_t v, ScalarType t);

// A number rounded to the floating-point type t, to nearest with ties to even (float16 and
// bfloat16 included: 65520 is inf in float16), as the GPU converts it.
double convert_float(double v, ScalarType t);

}  // namespace parir
