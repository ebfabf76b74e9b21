// Calls of other functions (inline_functions), externals, half types and forced sizes, through
// the whole compiler.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir_builder.h"
#include "passes/inline_functions.h"
#include "compiler/pipeline.h"

namespace parir {
namespace {

using namespace test;

ExprPtr call(const std::string& name, std::vector<ExprPtr> args, int line = 1) {
  return std::make_shared<CallFunction>(name, std::move(args), at(line));
}

StmtPtr ret(ExprPtr value, int line) { return std::make_shared<Return>(std::move(value), at(line)); }

// def square_plus(a, k):   return a * a + k
std::shared_ptr<Function> square_plus() {
  return std::make_shared<Function>(function(
      "square_plus", {"a", "k"},
      {ret(bin(BinaryOp::Add, bin(BinaryOp::Mul, v("a"), v("a")), v("k")), 2)}));
}

// def f(x, y, N):
//   parir.label('i')
//   for i in range(N):            # line 3
//     y[i] = <value>              # line 4
Function loop_storing(const std::string& name, ExprPtr value) {
  return function(name, {"x", "y", "N"},
                  {loop("i", i64(0), v("N", 3),
                        {assign(ld("y", {v("i", 4)}, 4), std::move(value), 4)}, 3, {"i"})});
}

std::vector<ArgValue> args_of(ScalarType t, int64_t n) {
  return {tensor(t, {n}), tensor(t, {n}), integer(n)};
}

TEST(InlineFunctions, SingleReturnBecomesAnExpression) {
  Function f = loop_storing("f", call("square_plus", {ld("x", {v("i")}), f64(1.5)}, 4));
  auto sq = square_plus();
  CalleeTable callees;
  callees[&f]["square_plus"] = Callee{sq, nullptr};
  CompileResult r = compile(f, args_of(ScalarType::F32, 99), par({{"i", 99}}), callees);
  EXPECT_NE(r.cuda.find("y[i] = ((x[i] * x[i]) + 1.5f);"), std::string::npos) << r.cuda;
}

TEST(InlineFunctions, RecursionIsAnError) {
  // def again(a): return again(a)
  auto again = std::make_shared<Function>(
      function("again", {"a"}, {ret(call("again", {v("a")}, 2), 2)}));
  Function f = loop_storing("f", call("again", {ld("x", {v("i")})}, 4));
  CalleeTable callees;
  callees[&f]["again"] = Callee{again, nullptr};
  callees[again.get()]["again"] = Callee{again, nullptr};
  try {
    compile(f, args_of(ScalarType::F32, 10), par({{"i", 10}}), callees);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("again() calls itself"), std::string::npos) << e.what();
  }
}

TEST(InlineFunctions, UnknownNameIsAnError) {
  Function f = loop_storing("f", call("nowhere", {ld("x", {v("i")})}, 4));
  try {
    compile(f, args_of(ScalarType::F32, 10), par({{"i", 10}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("user.py:4"), std::string::npos) << e.what();
  }
}

TEST(Externals, CallKeepsTheCudaNameAndConvertsArguments) {
  auto ext = std::make_shared<ExternFunction>();
  ext->name = "__fdividef";
  ext->python_name = "fast_divide";
  ext->params = {ScalarType::F32, ScalarType::F32};
  ext->result = ScalarType::F32;
  Function f = loop_storing("f", call("fast_divide", {ld("x", {v("i")}), f64(3.0)}, 4));
  CalleeTable callees;
  callees[&f]["fast_divide"] = Callee{nullptr, ext};
  CompileResult r = compile(f, args_of(ScalarType::F64, 10), par({{"i", 10}}), callees);
  EXPECT_NE(r.cuda.find("__fdividef(((float)x[i]), 3.0f)"), std::string::npos) << r.cuda;
}

TEST(HalfTypes, ArithmeticUsesIntrinsicsThroughTheHalfHeader) {
  Function f = loop_storing("f", bin(BinaryOp::Mul, ld("x", {v("i")}), f64(2.5)));
  for (auto t : {ScalarType::F16, ScalarType::BF16}) {
    CompileResult r = compile(f, args_of(t, 33), par({{"i", 33}}));
    EXPECT_NE(r.cuda.find("#include \"parir_half.h\""), std::string::npos) << r.cuda;
    EXPECT_NE(r.cuda.find(t == ScalarType::F16 ? "__half* y" : "__nv_bfloat16* y"),
              std::string::npos)
        << r.cuda;
  }
  CompileResult plain = compile(f, args_of(ScalarType::F32, 33), par({{"i", 33}}));
  EXPECT_EQ(plain.cuda.find("parir_half.h"), std::string::npos) << plain.cuda;
}

TEST(ForcedSizes, WeakFloatsAndTrueDivisionFollowTheForcedType) {
  // y[i] = x[i] / 3 on int32 tensors, stored back as int32: the division's type is forced.
  Function f = loop_storing("f", bin(BinaryOp::Div, ld("x", {v("i")}), i64(3)));
  CompileOptions o = par({{"i", 10}});
  CompileResult wide = compile(f, args_of(ScalarType::I32, 10), o);
  EXPECT_NE(wide.cuda.find("(double)"), std::string::npos) << wide.cuda;
  o.force_float_size = ScalarType::F32;
  CompileResult narrow = compile(f, args_of(ScalarType::I32, 10), o);
  EXPECT_EQ(narrow.cuda.find("double"), std::string::npos) << narrow.cuda;
  EXPECT_NE(narrow.cuda.find("(float)"), std::string::npos) << narrow.cuda;
}

}  // namespace
}  // namespace parir
