// The whole compiler on hand-built IR: CUDA text out, or an error naming the user's line.
#include <gtest/gtest.h>

#include "ir_builder.h"
#include "compiler/pipeline.h"

namespace parir {
namespace {

using namespace test;

// def sum_rows(x, y, N, M):
//   parir.label('N')
//   for i in range(N):         # line 3
//     for j in range(M):       # line 4
//       y[i] += x[i, j]        # line 5
Function sum_rows() {
  Body inner{assign(ld("y", {v("i", 5)}, 5),
                    bin(BinaryOp::Add, ld("y", {v("i", 5)}, 5), ld("x", {v("i"), v("j")}, 5), 5),
                    5)};
  Body outer{loop("j", i64(0), v("M", 4), inner, 4)};
  return function("sum_rows", {"x", "y", "N", "M"},
                  {loop("i", i64(0), v("N", 3), outer, 3, {"N"})});
}

std::vector<ArgValue> sum_rows_args(int64_t n, int64_t m) {
  return {tensor(ScalarType::F32, {n, m}), tensor(ScalarType::F32, {n}), integer(n), integer(m)};
}

TEST(Pipeline, SumRowsGeneratesOneKernelAndPlan) {
  CompileResult r = compile(sum_rows(), sum_rows_args(1000, 517), par({{"N", 1000}}));
  const std::string& cu = r.cuda;
  EXPECT_NE(cu.find("#include \"parir.h\""), std::string::npos);
  EXPECT_NE(cu.find("__launch_bounds__(1024) sum_rows(const float* x, float* y)"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("for (int64_t i = parir_t; i < 1000L; i += 1024L)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("for (int64_t j = 0L; j < 517L; j += 1)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("y[i] = (y[i] + x[i * 517 + j]);"), std::string::npos) << cu;
  EXPECT_NE(cu.find("#line 5 \"user.py\""), std::string::npos) << cu;
  EXPECT_NE(cu.find("//@ launch sum_rows grid(1) block(1024) (x, y)"), std::string::npos) << cu;
  EXPECT_TRUE(r.debug_log.empty());
}

TEST(Pipeline, ThreadsRoundUpAndSpreadOverBlocks) {
  CompileResult r = compile(sum_rows(), sum_rows_args(5000, 3), par({{"N", 5000}}));
  EXPECT_NE(r.cuda.find("grid(5) block(1024)"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("i += 5120L"), std::string::npos) << r.cuda;
}

TEST(Pipeline, DebugLogHasEveryPass) {
  CompileOptions o = par({{"N", 10}});
  o.debug_print = true;
  CompileResult r = compile(sum_rows(), sum_rows_args(10, 3), o);
  for (const char* pass : {"specialize_arguments", "apply_parallel_spec", "infer_types",
                           "simplify", "split_host_device", "map_parallelism", "generate_cuda"})
    EXPECT_NE(r.debug_log.find(std::string("=== after ") + pass), std::string::npos) << pass;
}

TEST(Pipeline, NoParallelismIsAnError) {
  try {
    compile(sum_rows(), sum_rows_args(10, 3), CompileOptions{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no parallel code"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, StatementOnTheHostNamesItsLine) {
  Function f = function("f", {"x", "N"},
                        {assign(ld("x", {i64(0)}, 2), f64(0.0), 2),
                         loop("i", i64(0), v("N", 3), {assign(ld("x", {v("i")}, 4), f64(1.0), 4)},
                              3, {"i"})});
  try {
    compile(f, {tensor(ScalarType::F32, {8}), integer(8)}, par({{"i", 8}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("user.py:2: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("with parir.gpu:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;  // the quoted source
  }
}

TEST(Pipeline, WrongRankNamesTheTensor) {
  Function f = function("f", {"x", "N"},
                        {loop("i", i64(0), v("N", 3), {assign(ld("x", {v("i")}, 4), f64(1.0), 4)},
                              3, {"i"})});
  try {
    compile(f, {tensor(ScalarType::F32, {8, 2}), integer(8)}, par({{"i", 8}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'x' has 2 dimensions"), std::string::npos)
        << e.what();
  }
}

TEST(Pipeline, HostLoopLaunchesEachIteration) {
  // for t in range(T): parir.label('i'); for i in range(N): x[i] = x[i] + t
  Body kernel{assign(ld("x", {v("i")}, 4), bin(BinaryOp::Add, ld("x", {v("i")}, 4), v("t", 4), 4),
                     4)};
  Function f = function("f", {"x", "T", "N"},
                        {loop("t", i64(0), v("T", 2), {loop("i", i64(0), v("N", 3), kernel, 3,
                                                            {"i"})},
                              2)});
  CompileResult r = compile(f, {tensor(ScalarType::I64, {39}), integer(3), integer(39)},
                            par({{"i", 39}}));
  EXPECT_NE(r.cuda.find("//@ for t in range(0, 3, 1):"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@   launch f grid(1) block(64) (x, t)"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("f(int64_t* x, int64_t t)"), std::string::npos) << r.cuda;
}

TEST(Pipeline, TimeLoopOfAStencilRunsInTilesOfTimeSteps) {
  // for t in range(T): parir.label('i'); for i in range(1, N - 1): y[i] = x[i - 1] + x[i + 1]
  //                    parir.label('i'); for i in range(N): x[i] = y[i]
  Body step{assign(ld("y", {v("i")}, 4),
                   bin(BinaryOp::Add, ld("x", {bin(BinaryOp::Sub, v("i"), i64(1))}, 4),
                       ld("x", {bin(BinaryOp::Add, v("i"), i64(1))}, 4), 4),
                   4)};
  Body copy{assign(ld("x", {v("i")}, 6), ld("y", {v("i")}, 6), 6)};
  Function f = function(
      "f", {"x", "y", "T", "N"},
      {loop("t", i64(0), v("T", 2),
            {loop("i", i64(1), bin(BinaryOp::Sub, v("N", 3), i64(1)), step, 3, {"i"}),
             loop("i", i64(0), v("N", 5), copy, 5, {"i"})},
            2)});
  std::vector<ArgValue> args{tensor(ScalarType::F32, {10000}), tensor(ScalarType::F32, {10000}),
                             integer(100), integer(10000)};
  CompileResult r = compile(f, args, par({{"i", 10000}}));
  // Radius 1 per step: 32 steps per launch, a halo of 32 around cores of 256 elements.
  EXPECT_NE(r.cuda.find("//@ for t in range(0, 100, 64):"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@   launch f_2 grid(40) block(320) (x, y, x_alt0, y_alt1, t)"),
            std::string::npos)
      << r.cuda;
  EXPECT_NE(r.cuda.find("__shared__ float x_tile"), std::string::npos) << r.cuda;
  CompileOptions off = par({{"i", 10000}});
  off.time_tiling = false;
  EXPECT_NE(compile(f, args, off).cuda.find("//@ for t in range(0, 100, 1):"), std::string::npos);
}

TEST(Pipeline, MatrixProductRunsInRegisterTiles) {
  // parir.label('i'); for i in range(M): parir.label('j'); for j in range(N):
  //   t = 0.0; for k in range(K): t = t + a[i, k] * b[k, j]
  //   c[i, j] = t
  Body pair{assign(v("t", 4), f64(0.0), 4),
            loop("k", i64(0), v("K", 5),
                 {assign(v("t", 6),
                         bin(BinaryOp::Add, v("t", 6),
                             bin(BinaryOp::Mul, ld("a", {v("i"), v("k")}, 6),
                                 ld("b", {v("k"), v("j")}, 6), 6),
                             6),
                         6)},
                 5),
            assign(ld("c", {v("i"), v("j")}, 7), v("t", 7), 7)};
  Function f = function(
      "f", {"a", "b", "c", "M", "N", "K"},
      {loop("i", i64(0), v("M", 2), {loop("j", i64(0), v("N", 3), pair, 3, {"j"})}, 2, {"i"})});
  std::vector<ArgValue> args{tensor(ScalarType::F32, {2048, 300}),
                             tensor(ScalarType::F32, {300, 1000}),
                             tensor(ScalarType::F32, {2048, 1000}), integer(2048), integer(1000),
                             integer(300)};
  CompileResult r = compile(f, args, par({{"i", 2048}, {"j", 256}}));
  // 16 x 8 tiles of 128 x 128 pairs (8 x 8 per thread), chunks of 8 k in shared memory.
  EXPECT_NE(r.cuda.find("//@ launch f grid(128) block(256) (a, b, c)"), std::string::npos)
      << r.cuda;
  EXPECT_NE(r.cuda.find("__shared__ float a_rows"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("__shared__ float b_cols"), std::string::npos) << r.cuda;
  CompileOptions off = par({{"i", 2048}, {"j", 256}});
  off.product_tiling = false;
  EXPECT_NE(compile(f, args, off).cuda.find("//@ launch f grid(2048) block(256) (a, b, c)"),
            std::string::npos);
}

TEST(Pipeline, GpuBlockWithInnerParallelLoopGuardsBlockLevelWrites) {
  Function f = function(
      "f", {"x", "N"},
      {gpu({assign(ld("x", {i64(0)}, 3), f64(2.0), 3),
            loop("i", i64(1), v("N", 4), {assign(ld("x", {v("i")}, 5), ld("x", {i64(0)}, 5), 5)},
                 4, {"i"})},
           2)});
  CompileResult r = compile(f, {tensor(ScalarType::F64, {100}), integer(100)}, par({{"i", 100}}));
  EXPECT_NE(r.cuda.find("if (threadIdx.x == 0) x[0] = 2.0;"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("__syncthreads();"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("grid(1) block(128)"), std::string::npos) << r.cuda;
}

}  // namespace
}  // namespace parir
