// verify_bounds: accesses proved in bounds, accesses certainly out of bounds rejected with the
// tensor, dimension, range and extent, and everything else left to run-time checks.
#include <gtest/gtest.h>

#include "compiler/pipeline.h"
#include "ir_builder.h"

namespace parir {
namespace {

using namespace test;

// def axpy(x, y, N):
//   parir.label('i')
//   for i in range(N):          # line 2
//     y[i] = y[i] + x[i]        # line 3
Function axpy() {
  Body body{assign(ld("y", {v("i", 3)}, 3),
                   bin(BinaryOp::Add, ld("y", {v("i", 3)}, 3), ld("x", {v("i", 3)}, 3), 3), 3)};
  return function("axpy", {"x", "y", "N"}, {loop("i", i64(0), v("N", 2), body, 2, {"i"})});
}

std::string error_of(const Function& f, const std::vector<ArgValue>& args,
                     const CompileOptions& o) {
  try {
    compile(f, args, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VerifyBounds, ProvesMatchingShapes) {
  CompileResult r = compile(
      axpy(), {tensor(ScalarType::F32, {1000}), tensor(ScalarType::F32, {1000}), integer(1000)},
      par({{"i", 1000}}));
  EXPECT_EQ(r.bounds.accesses, 3);
  EXPECT_EQ(r.bounds.proved, 3);
}

TEST(VerifyBounds, RejectsALoopLongerThanTheTensor) {
  std::string e = error_of(
      axpy(), {tensor(ScalarType::F32, {10}), tensor(ScalarType::F32, {10}), integer(1000)},
      par({{"i", 1000}}));
  EXPECT_NE(e.find("user.py:3"), std::string::npos) << e;
  EXPECT_NE(e.find("`y[i]`: i runs over [0, 1000) but y has 10 elements (dimension 0)"),
            std::string::npos)
      << e;
}

TEST(VerifyBounds, NamesTheDimensionAndTheIndexExpression) {
  // for i in range(N): out[i] = x[i, i + 1]  with x of 5 x 5 and N = 5: i + 1 reaches 5.
  Body body{assign(ld("out", {v("i", 3)}, 3),
                   ld("x", {v("i", 3), bin(BinaryOp::Add, v("i", 3), i64(1), 3)}, 3), 3)};
  Function f =
      function("f", {"x", "out", "N"}, {loop("i", i64(0), v("N", 2), body, 2, {"i"})});
  std::string e = error_of(
      f, {tensor(ScalarType::F32, {5, 5}), tensor(ScalarType::F32, {5}), integer(5)},
      par({{"i", 5}}));
  EXPECT_NE(e.find("`x[i, i + 1]`: the index i + 1 runs over [1, 6) but x has 5 elements "
                   "(dimension 1)"),
            std::string::npos)
      << e;
}

TEST(VerifyBounds, GuardedAccessesAreNotErrors) {
  // for i in range(N): if i < 10: y[i] = x[i]   with 10 elements and N = 100: in bounds.
  auto guarded = [](BinaryOp op, int64_t k) {
    Body then{assign(ld("y", {v("i", 4)}, 4), ld("x", {v("i", 4)}, 4), 4)};
    Body body{std::make_shared<If>(bin(op, v("i", 3), i64(k), 3), then, Body{}, at(3))};
    return function("f", {"x", "y", "N"}, {loop("i", i64(0), v("N", 2), body, 2, {"i"})});
  };
  std::vector<ArgValue> args = {tensor(ScalarType::F32, {10}), tensor(ScalarType::F32, {10}),
                                integer(100)};
  CompileResult r = compile(guarded(BinaryOp::Lt, 10), args, par({{"i", 100}}));
  EXPECT_EQ(r.bounds.proved, r.bounds.accesses);
  // i < 20 does not prove it, but the access may never be out of bounds on a taken branch as
  // far as the analysis can tell: no error, left to run-time checks.
  r = compile(guarded(BinaryOp::Lt, 20), args, par({{"i", 100}}));
  EXPECT_EQ(r.bounds.proved, 0);
}

TEST(VerifyBounds, NegativeIndicesCountFromTheEnd) {
  // for i in range(N): y[i] = x[i - 1]: x[-1] is x's last element, as in Python.
  Body body{assign(ld("y", {v("i", 3)}, 3),
                   ld("x", {bin(BinaryOp::Sub, v("i", 3), i64(1), 3)}, 3), 3)};
  Function f = function("f", {"x", "y", "N"}, {loop("i", i64(0), v("N", 2), body, 2, {"i"})});
  CompileResult r = compile(
      f, {tensor(ScalarType::F32, {8}), tensor(ScalarType::F32, {8}), integer(8)},
      par({{"i", 8}}));
  EXPECT_EQ(r.bounds.proved, 2);
}

TEST(VerifyBounds, EmptyLoopsAreNeverOutOfBounds) {
  CompileResult r = compile(
      axpy(), {tensor(ScalarType::F32, {0}), tensor(ScalarType::F32, {0}), integer(0)},
      par({{"i", 1}}));
  EXPECT_EQ(r.bounds.accesses, 0);
}

}  // namespace
}  // namespace parir
