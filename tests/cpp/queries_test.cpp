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
  // The next row: products by constants are multiplied out, (i + 1) * 100 + j is 100 past
  // i * 100 + j (and 100 * (i + 1) too).
  ExprPtr below = add(mul(add(iv("i"), int_imm(1)), int_imm(100)), iv("j"));
  EXPECT_EQ(constant_difference(below, centre), 100);
  EXPECT_EQ(constant_difference(add(mul(int_imm(100), add(iv("i"), int_imm(1))), iv("j")), centre),
            100);
  // Another row stride, or another variable: not a constant apart.
  EXPECT_EQ(constant_difference(add(mul(iv("i"), int_imm(101)), iv("j")), centre), std::nullopt);
  EXPECT_EQ(constant_difference(add(row, iv("k")), centre), std::nullopt);
  EXPECT_EQ(constant_difference(add(iv("j"), iv("j")), iv("j")), std::nullopt);
}

TEST(Queries, KnownPowerOfTwoDivisor) {
  EXPECT_EQ(known_power_of_two_divisor(mul(iv("i"), int_imm(16384))), 16384);
  EXPECT_EQ(known_power_of_two_divisor(add(mul(iv("i"), int_imm(16384)), int_imm(4))), 4);
  EXPECT_EQ(known_power_of_two_divisor(add(mul(iv("i"), int_imm(1002)), int_imm(4))), 2);
  EXPECT_EQ(known_power_of_two_divisor(iv("j")), 1);
}

TEST(Queries, UnconditionalLoadsLeaveOutWhatMayBeSkipped) {
  // x[idx[i]] + (c ? y[i] : z[i]) + (x[i] > 0 && w[i] > 0): the index read first, then the
  // element; the condition's reads, not those of its branches or of the right of `&&`.
  const Type f32{ScalarType::F32, false}, boolean{ScalarType::Bool, false};
  auto load = [&](const std::string& t, ExprPtr off) {
    return std::make_shared<FlatLoad>(t, std::move(off), t == "idx" ? kInt : f32, Loc{});
  };
  ExprPtr gather = load("x", load("idx", iv("i")));
  ExprPtr cond = binary(BinaryOp::Gt, load("c", iv("i")), int_imm(0), {}, boolean);
  ExprPtr pick =
      std::make_shared<Select>(cond, load("y", iv("i")), load("z", iv("i")), f32, Loc{});
  auto positive = [&](const std::string& t) {
    return binary(BinaryOp::Gt, load(t, iv("i")), int_imm(0), {}, boolean);
  };
  ExprPtr both = binary(BinaryOp::And, positive("x"), positive("w"), {}, boolean);
  std::vector<const FlatLoad*> reads;
  unconditional_loads(binary(BinaryOp::Add, binary(BinaryOp::Add, gather, pick, {}, f32),
                             std::make_shared<Cast>(both, f32, Loc{}), {}, f32),
                      reads);
  std::vector<std::string> tensors;
  for (const FlatLoad* r : reads) tensors.push_back(r->tensor);
  EXPECT_EQ(tensors, (std::vector<std::string>{"idx", "x", "c", "x"}));
}

TEST(Queries, TouchesMemoryOnlyWhereTensorsOrArraysAreAccessed) {
  // Locals alone (a row kept in registers, a reduction into a local): no memory; a tensor's
  // element read or written, or an external called, anywhere inside: memory.
  const Type f32{ScalarType::F32, false};
  auto local = [&](const std::string& n) { return var(n, {}, f32); };
  auto element = [&](const std::string& t) {
    return std::make_shared<FlatLoad>(t, iv("j"), f32, Loc{});
  };
  auto set = [&](ExprPtr target, ExprPtr value) {
    return std::make_shared<Assign>(std::move(target), std::move(value), Loc{});
  };
  auto loop_of = [&](StmtPtr s) {
    return std::make_shared<For>("j", int_imm(0), int_imm(8), int_imm(1), Body{std::move(s)},
                                 Loc{});
  };
  EXPECT_FALSE(touches_memory(loop_of(set(local("o0"), local("x0")))));
  EXPECT_TRUE(touches_memory(loop_of(set(local("o0"), element("x")))));
  EXPECT_TRUE(touches_memory(loop_of(set(element("out"), local("o0")))));
  EXPECT_TRUE(touches_memory(
      std::make_shared<If>(local("c"), Body{set(local("a"), element("y"))}, Body{}, Loc{})));
  EXPECT_FALSE(touches_memory(
      std::make_shared<If>(local("c"), Body{set(local("a"), local("b"))}, Body{}, Loc{})));
}

}  // namespace
}  // namespace parir
