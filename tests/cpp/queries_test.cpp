// Questions the passes ask of the IR (ir/queries.h).
#include <gtest/gtest.h>

#include "ir/queries.h"

namespace parir {
namespace {

const Type kInt{ScalarType::I64, false};

ExprPtr iv(const std::string& name) { return var(name, {}, kInt); }
ExprPtr add(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Add, a, b, {}, kInt); }
ExprPtr sub(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Sub, a, b, {}, kInt); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Mul, a, b, {}, kInt); }

TEST(Queries, ConstantDifferenceOfNeighbouringOffsets) {
  // x[i, j - 1], x[i, j] and x[i, j + 1] of a row-major 100-wide x.
  ExprPtr row = mul(iv("i"), int_imm(100));
  ExprPtr left = add(row, sub(iv("j"), int_imm(1)));
  ExprPtr centre = add(row, iv("j"));
  ExprPtr right = add(add(row, iv("j")), int_imm(1));
  EXPECT_EQ(constant_difference(left, centre), -1);
  EXPECT_EQ(constant_difference(right, centre), 1);
  EXPECT_EQ(constant_difference(right, left), 2);
  EXPECT_EQ(constant_difference(centre, centre), 0);
  // Terms in another order, and a slice's offsets (1 + s, s, 2 + s).
  EXPECT_EQ(constant_difference(add(iv("j"), row), centre), 0);
  EXPECT_EQ(constant_difference(add(int_imm(2), iv("s")), add(int_imm(1), iv("s"))), 1);
  // Another row, or another variable: not a constant apart.
  ExprPtr below = add(mul(add(iv("i"), int_imm(1)), int_imm(100)), iv("j"));
  EXPECT_EQ(constant_difference(below, centre), std::nullopt);
  EXPECT_EQ(constant_difference(add(row, iv("k")), centre), std::nullopt);
  EXPECT_EQ(constant_difference(add(iv("j"), iv("j")), iv("j")), std::nullopt);
}

TEST(Queries, KnownPowerOfTwoDivisor) {
  EXPECT_EQ(known_power_of_two_divisor(mul(iv("i"), int_imm(16384))), 16384);
  EXPECT_EQ(known_power_of_two_divisor(add(mul(iv("i"), int_imm(16384)), int_imm(4))), 4);
  EXPECT_EQ(known_power_of_two_divisor(add(mul(iv("i"), int_imm(1002)), int_imm(4))), 2);
  EXPECT_EQ(known_power_of_two_divisor(iv("j")), 1);
}

}  // namespace
}  // namespace parir
