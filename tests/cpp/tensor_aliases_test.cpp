// resolve_tensor_aliases: locals that name tensor arguments, swapped between a loop's steps.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir_builder.h"
#include "passes/resolve_tensor_aliases.h"

namespace parir {
namespace {

using namespace test;

// def step(a, b, N, steps):
//   src, dst = a, b                      # line 2 (the front end's temporaries)
//   for t in range(steps):               # line 3
//     parir.label('i')
//     for i in range(N):                 # line 5
//       dst[i] = src[i] + t              # line 6
//     src, dst = dst, src                # line 7, or `loop` in place of the for loop
Function swapping(bool while_loop) {
  Body kernel{loop("i", i64(0), v("N", 5),
                   {assign(ld("dst", {v("i", 6)}, 6),
                           bin(BinaryOp::Add, ld("src", {v("i", 6)}, 6), v("t", 6), 6), 6)},
                   5, {"i"})};
  Body swap{assign(v("src'0", 7), v("dst", 7), 7), assign(v("dst'1", 7), v("src", 7), 7),
            assign(v("src", 7), v("src'0", 7), 7), assign(v("dst", 7), v("dst'1", 7), 7)};
  Body body = kernel;
  body.insert(body.end(), swap.begin(), swap.end());
  ExprPtr more = bin(BinaryOp::Lt, v("t", 3), v("steps", 3), 3);
  StmtPtr repeat = while_loop ? StmtPtr(std::make_shared<While>(more, body, at(3)))
                              : loop("t", i64(0), v("steps", 3), body, 3);
  return function("step", {"a", "b", "N", "steps"},
                  {assign(v("src", 2), v("a", 2), 2), assign(v("dst", 2), v("b", 2), 2), repeat});
}

std::vector<ArgValue> args(int64_t steps) {
  return {tensor(ScalarType::F32, {8}), tensor(ScalarType::F32, {8}), integer(8), integer(steps)};
}

TEST(TensorAliases, ASwapUnrollsTheLoopByTwoWithTheOddStepAfterIt) {
  Function f = resolve_tensor_aliases(swapping(false), args(5));
  const std::string text = to_string(f);
  EXPECT_NE(text.find("for t in range(0, 4, 2):"), std::string::npos) << text;
  EXPECT_NE(text.find("b[i] = (a[i] + t)"), std::string::npos) << text;
  EXPECT_NE(text.find("a[i] = (b[i] + (t + 1))"), std::string::npos) << text;
  EXPECT_NE(text.find("b[i] = (a[i] + 4)"), std::string::npos) << text;  // the fifth step
  EXPECT_EQ(text.find("src"), std::string::npos) << text;
  EXPECT_EQ(text.find("dst"), std::string::npos) << text;
}

TEST(TensorAliases, AFunctionWithoutThemIsUnchanged) {
  Function f = function("copy", {"a", "b", "N"},
                        {loop("i", i64(0), v("N"), {assign(ld("b", {v("i")}), ld("a", {v("i")}))},
                              1, {"i"})});
  Function g = resolve_tensor_aliases(f, {tensor(ScalarType::F32, {8}),
                                          tensor(ScalarType::F32, {8}), integer(8)});
  EXPECT_EQ(g.body.front(), f.body.front());
}

TEST(TensorAliases, ASwapInAWhileLoopNamesTheLoop) {
  try {
    resolve_tensor_aliases(swapping(true), args(5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("user.py:3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("after a while loop"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace parir
