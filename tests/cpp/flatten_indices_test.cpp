// flatten_indices: element accesses become offsets through the strides, and code generation
// refuses IR that an earlier pass should have lowered.
#include <gtest/gtest.h>

#include "codegen/cuda_codegen.h"
#include "ir_builder.h"
#include "passes/flatten_indices.h"
#include "passes/infer_types.h"
#include "passes/map_parallelism.h"
#include "passes/apply_parallel_spec.h"
#include "passes/specialize_arguments.h"
#include "passes/split_host_device.h"

namespace parir {
namespace {

using namespace test;

// def f(x, y, N):
//   parir.label('N')
//   for i in range(N):
//     y[i] = x[i, -1] + x[N - 1 - i, 0]
Function last_column() {
  ExprPtr n = v("N", 3);
  Body body{assign(ld("y", {v("i", 3)}, 3),
                   bin(BinaryOp::Add, ld("x", {v("i", 3), i64(-1)}, 3),
                       ld("x", {bin(BinaryOp::Sub, bin(BinaryOp::Sub, n, i64(1)), v("i")), i64(0)},
                          3)),
                   3)};
  return function("f", {"x", "y", "N"}, {loop("i", i64(0), v("N", 2), body, 2, {"N"})});
}

Lowered lower(const SpecializedFunction& prog, const CompileOptions& o) {
  Lowered l = split_host_device(prog);
  map_parallelism(prog, l, o);
  return l;
}

SpecializedFunction specialize(const CompileOptions& o) {
  SpecializedFunction p = specialize_arguments(
      last_column(), {tensor(ScalarType::F32, {10, 7}), tensor(ScalarType::F32, {10}), integer(10)},
      o);
  apply_parallel_spec(p, o.parallelize);
  infer_types(p);
  return p;
}

TEST(FlattenIndices, OffsetsThroughStridesWithNegativeIndicesWrapped) {
  CompileOptions o = par({{"N", 10}});
  SpecializedFunction p = specialize(o);
  Lowered l = lower(p, o);
  flatten_indices(p, l);
  std::string text = to_string(Body{l.kernels.at(0).root});
  // A negative constant counts from the end; i is a loop variable from 0 upwards, so it needs
  // no check, while N - 1 - i (a difference) is wrapped at run time.
  EXPECT_NE(text.find("x.flat[((i * 7) + 6)]"), std::string::npos) << text;
  EXPECT_NE(text.find("x.flat[((((9 - i) + 10) if ((9 - i) < 0) else (9 - i)) * 7)]"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("x["), std::string::npos) << text;
}

TEST(FlattenIndices, CodeGenerationRejectsUnflattenedAccesses) {
  CompileOptions o = par({{"N", 10}});
  SpecializedFunction p = specialize(o);
  Lowered l = lower(p, o);
  try {
    generate_cuda(p, l);
    FAIL() << "generate_cuda printed a Load";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("call flatten_indices before generate_cuda"),
              std::string::npos)
        << e.what();
  }
  flatten_indices(p, l);
  EXPECT_NE(generate_cuda(p, l).find("x[i * 7 + 6]"), std::string::npos);
}

TEST(FlattenIndices, NeedsMappedKernels) {
  CompileOptions o = par({{"N", 10}});
  SpecializedFunction p = specialize(o);
  Lowered l = split_host_device(p);
  EXPECT_THROW(flatten_indices(p, l), Error);
}

}  // namespace
}  // namespace parir
