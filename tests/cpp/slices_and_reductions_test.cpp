// lower_slices, detect_reductions and split_parallel_nests on hand-built IR.
#include <gtest/gtest.h>

#include "ir_builder.h"
#include "passes/apply_parallel_spec.h"
#include "passes/detect_reductions.h"
#include "passes/infer_types.h"
#include "passes/lower_slices.h"
#include "compiler/pipeline.h"
#include "passes/simplify.h"
#include "passes/specialize_arguments.h"
#include "passes/split_parallel_nests.h"

namespace parir {
namespace {

using namespace test;

ExprPtr all() { return std::make_shared<Slice>(nullptr, nullptr, nullptr, at(3)); }

StmtPtr labelled(StmtPtr s, std::vector<std::string> labels) {
  auto a = s->as<Assign>();
  return std::make_shared<Assign>(a->target, a->value, a->loc, std::move(labels));
}

// Runs the passes up to detect_reductions, as the pipeline does.
SpecializedFunction lower(const Function& f, const std::vector<ArgValue>& args, const CompileOptions& o) {
  SpecializedFunction p = specialize_arguments(f, args, CompileOptions{});
  lower_slices(p, o);
  apply_parallel_spec(p, o.parallelize);
  infer_types(p);
  simplify(p);
  detect_reductions(p);
  return p;
}

// y[:] = parir.sum(x[:, :], axis=1) with labels N, M
Function sum_rows2() {
  ExprPtr rhs = std::make_shared<SliceReduce>(ReduceOp::Sum, ld("x", {all(), all()}, 3), 1, at(3));
  return function("sum_rows2", {"x", "y"}, {labelled(assign(ld("y", {all()}, 3), rhs, 3), {"N", "M"})});
}

TEST(LowerSlices, AxisReductionOnTheHostReducesIntoALocalPerRow) {
  SpecializedFunction p = lower(sum_rows2(), {tensor(ScalarType::F32, {10, 20}), tensor(ScalarType::F32, {10})},
                    par({{"N", 10}, {"M", 20}}));
  std::string ir = to_string(p.body);
  // One nest: each row reduces into its own accumulator, stored once (the reduce flag is
  // inferred). A reduction over several blocks is cut into kernels later.
  EXPECT_NE(ir.find("for s0 in range(0, 10, 1):  # parir.threads(10)\n  red2 = 0.0"),
            std::string::npos)
      << ir;
  EXPECT_NE(ir.find("for r1 in range(0, 20, 1):  # parir.threads(20).reduce(); red2 = "
                    "sum(acc0 over the loop)"),
            std::string::npos)
      << ir;
  EXPECT_NE(ir.find("acc0 = (acc0 + x[s0, r1])"), std::string::npos) << ir;
  EXPECT_NE(ir.find("  y[s0] = red2"), std::string::npos) << ir;
}

TEST(LowerSlices, MismatchedExtentsNameTheStatement) {
  // y[:] = x[0, :3] with y of 4 elements
  ExprPtr rhs = ld("x", {i64(0), std::make_shared<Slice>(nullptr, i64(3), nullptr, at(3))}, 3);
  Function f = function("f", {"x", "y"}, {labelled(assign(ld("y", {all()}, 3), rhs, 3), {"i"})});
  try {
    lower(f, {tensor(ScalarType::F32, {4, 5}), tensor(ScalarType::F32, {4})}, par({{"i", 4}}));
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("user.py:3: shape mismatch", 0), 0u) << msg;
  }
}

TEST(DetectReductions, FindsTargetAndOperation) {
  // for i (reduce): out[0] = parir.max(out[0], x[i])
  ExprPtr mx = std::make_shared<Call>(
      Builtin::Max, std::vector<ExprPtr>{ld("out", {i64(0)}, 3), ld("x", {v("i")}, 3)}, Type{}, at(3));
  Function f = function("f", {"x", "out"},
                        {loop("i", i64(0), i64(100), {assign(ld("out", {i64(0)}, 3), mx, 3)}, 2,
                              {"i"})});
  CompileOptions o;
  o.parallelize["i"] = LoopPar{100, true, 0};
  SpecializedFunction p = lower(f, {tensor(ScalarType::I32, {100}), tensor(ScalarType::I32, {1})}, o);
  auto loop = p.body[0]->as<For>();
  ASSERT_TRUE(loop && loop->reduction);
  EXPECT_EQ(loop->reduction->op, ReduceOp::Max);
  EXPECT_EQ(to_string(loop->reduction->target), "out[0]");
  EXPECT_EQ(loop->reduction->acc_type.scalar, ScalarType::I32);
}

// y[:] = parir.argmax(x[:, :], axis=1) with labels N, M
Function argmax_rows(const std::string& reduce_label) {
  ExprPtr rhs = std::make_shared<SliceReduce>(ReduceOp::Max, ld("x", {all(), all()}, 3), 1,
                                              at(3), /*idx=*/true);
  return function("argmax_rows", {"x", "y"},
                  {labelled(assign(ld("y", {all()}, 3), rhs, 3), {"N", reduce_label})});
}

TEST(DetectReductions, ArgmaxOverAParallelDimensionReducesPairsIntoItsLocals) {
  SpecializedFunction p = lower(argmax_rows("M"), {tensor(ScalarType::F16, {10, 200}),
                                                   tensor(ScalarType::I64, {10})},
                                par({{"N", 10}, {"M", 128}}));
  std::string ir = to_string(p.body);
  auto outer = p.body[0]->as<For>();
  ASSERT_TRUE(outer) << ir;
  const For* loop = nullptr;
  for (const auto& s : outer->body)
    if (auto f = s->as<For>()) loop = f;
  ASSERT_TRUE(loop && loop->reduction) << ir;
  const Reduction& r = *loop->reduction;
  EXPECT_TRUE(r.is_index());
  EXPECT_EQ(r.op, ReduceOp::Max);
  // float16 values compare in float32; the index is the loop variable.
  EXPECT_EQ(r.acc_type.scalar, ScalarType::F32);
  EXPECT_EQ(r.index_target->type.scalar, ScalarType::I64);
  EXPECT_NE(ir.find("= argmax(("), std::string::npos) << ir;
  EXPECT_NE(ir.find("< " + r.index_acc + ")"), std::string::npos) << ir;
}

TEST(DetectReductions, ArgmaxWithoutAParallelLabelStaysSequential) {
  SpecializedFunction p = lower(argmax_rows("unused"), {tensor(ScalarType::F32, {10, 200}),
                                                        tensor(ScalarType::I64, {10})},
                                par({{"N", 10}}));
  std::string ir = to_string(p.body);
  EXPECT_EQ(ir.find("argmax(("), std::string::npos) << ir;
  EXPECT_EQ(ir.find("reduce()"), std::string::npos) << ir;
}

TEST(LowerSlices, ArgmaxOverSeveralBlocksNamesTheStatement) {
  try {
    lower(argmax_rows("M"), {tensor(ScalarType::F32, {10, 5000}), tensor(ScalarType::I64, {10})},
          par({{"N", 10}, {"M", 4096}}));
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("user.py:3: parir.argmax over label 'M' runs on 4096 threads in 4 "
                        "blocks",
                        0),
              0u)
        << msg;
  }
}

TEST(SplitParallelNests, SiblingsWithDifferentThreadCountsGetTheirOwnOuterLoop) {
  Body inner_a{assign(ld("x", {v("i"), v("j")}, 4), f64(1.0), 4)};
  Body inner_b{assign(ld("y", {v("i"), v("j")}, 6), f64(2.0), 6)};
  Function f = function("f", {"x", "y"},
                        {loop("i", i64(0), i64(2),
                              {loop("j", i64(0), i64(4999), inner_a, 3, {"a"}),
                               loop("j", i64(0), i64(4999), inner_b, 5, {"b"})},
                              2, {"i"})});
  CompileResult r = compile(f, {tensor(ScalarType::F32, {2, 4999}), tensor(ScalarType::F32, {2, 4999})},
                            par({{"i", 2}, {"a", 2048}, {"b", 4096}}));
  EXPECT_NE(r.cuda.find("//@ launch f_0 grid(4) block(1024) (x)"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@ launch f_1 grid(8) block(1024) (y)"), std::string::npos) << r.cuda;
}

}  // namespace
}  // namespace parir
