// detect_scans and the code of parallel scans, on hand-built IR through the whole pipeline.
#include <gtest/gtest.h>

#include "compiler/pipeline.h"
#include "ir_builder.h"

namespace parir {
namespace {

using namespace test;

CompileOptions scan_spec(int64_t rows, int64_t threads) {
  CompileOptions o;
  o.parallelize["N"] = LoopPar{rows, false, 0};
  o.parallelize["M"] = LoopPar{threads, false, 0, true};
  return o;
}

// for i (N): s = 0.0; for j (M): out[i, j] = s (if exclusive); s += x[i, j]; out[i, j] = s
Function row_scan(bool exclusive) {
  Body inner;
  if (exclusive) inner.push_back(assign(ld("out", {v("i", 5), v("j", 5)}, 5), v("s", 5), 5));
  inner.push_back(assign(v("s", 6), bin(BinaryOp::Add, v("s", 6), ld("x", {v("i"), v("j")}, 6), 6), 6));
  if (!exclusive) inner.push_back(assign(ld("out", {v("i", 7), v("j", 7)}, 7), v("s", 7), 7));
  Body row{assign(v("s", 3), f64(0.0), 3), loop("j", i64(0), i64(1000), inner, 4, {"M"}),
           assign(ld("tot", {v("i", 8)}, 8), v("s", 8), 8)};
  return function("f", {"x", "out", "tot"}, {loop("i", i64(0), i64(4), row, 2, {"N"})});
}

std::vector<ArgValue> args() {
  return {tensor(ScalarType::F32, {4, 1000}), tensor(ScalarType::F32, {4, 1000}),
          tensor(ScalarType::F32, {4})};
}

TEST(DetectScans, InclusiveScanWalksTheRowInTilesOfTheBlock) {
  CompileResult r = compile(row_scan(false), args(), scan_spec(4, 256));
  const std::string& c = r.cuda;
  EXPECT_NE(c.find("parallel scan (cumsum) over 256 threads of one block"), std::string::npos) << c;
  EXPECT_NE(c.find("+= 256) {"), std::string::npos) << c;
  EXPECT_NE(c.find("parir::block_scan("), std::string::npos) << c;
  // The element is computed before the block's scan, the store after it from the inclusive
  // value, and the carry moves on by the tile's total; the local ends as the total.
  size_t scan_at = c.find("parir::block_scan("), store_at = c.find("= scan_incl");
  EXPECT_LT(c.find("scan_x"), scan_at) << c;
  EXPECT_LT(scan_at, store_at) << c;
  EXPECT_NE(c.find("scan_carry0 = parir::Sum()(scan_carry0, parir_total);"), std::string::npos)
      << c;
  EXPECT_NE(c.find("//@ launch f grid(4) block(256)"), std::string::npos) << c;
}

TEST(DetectScans, ExclusiveStoreMovesAfterTheElement) {
  CompileResult r = compile(row_scan(true), args(), scan_spec(4, 128));
  const std::string& c = r.cuda;
  size_t scan_at = c.find("parir::block_scan("), store_at = c.find("= scan_excl");
  ASSERT_NE(store_at, std::string::npos) << c;
  EXPECT_LT(scan_at, store_at) << c;
}

TEST(DetectScans, MoreThreadsThanOneBlockScanChunksInTwoKernels) {
  CompileResult r = compile(row_scan(false), args(), scan_spec(4, 4096));
  const std::string& c = r.cuda;
  // 4 rows of 4 blocks: the chunks' totals, then each chunk from the totals before it; the
  // statement after the loop reads the final running value from a temporary.
  EXPECT_NE(c.find("//@ temp partial1 float32[4, 4]"), std::string::npos) << c;
  EXPECT_NE(c.find("//@ launch f_0 grid(16) block(1024) (x, partial1)"), std::string::npos) << c;
  EXPECT_NE(c.find("//@ launch f_1 grid(16) block(1024) (x, out, partial1, partial2)"),
            std::string::npos) << c;
  // (Four rows of float32 move as one 16-byte load where aligned.)
  EXPECT_TRUE(c.find("s = partial2[i];") != std::string::npos ||
              c.find("parir::load_wide(partial2 + ") != std::string::npos)
      << c;
  EXPECT_NE(c.find("if (parir_chunk == 3 && threadIdx.x == 0) partial2[i] = "),
            std::string::npos) << c;
}

TEST(DetectScans, WithoutTheScanFlagTheRowIsSequentialPerThread) {
  CompileOptions o;
  o.parallelize["N"] = LoopPar{4, false, 0};
  CompileResult r = compile(row_scan(false), args(), o);
  EXPECT_EQ(r.cuda.find("block_scan"), std::string::npos) << r.cuda;
}

}  // namespace
}  // namespace parir
