// Atomic updates through the compiler: printed IR, generated CUDA, and the passes that must
// treat an update as a write (never repeated into another kernel, never an accumulation).
#include <gtest/gtest.h>

#include "compiler/pipeline.h"
#include "ir/queries.h"
#include "ir_builder.h"

namespace parir {
namespace {

using namespace test;

StmtPtr atomic(AtomicOp op, ExprPtr target, ExprPtr value, ExprPtr result = nullptr,
               int line = 1, ExprPtr compare = nullptr) {
  return std::make_shared<AtomicUpdate>(op, std::move(target), std::move(value),
                                        std::move(compare), std::move(result), at(line));
}

std::string compile_error(const Function& f, const std::vector<ArgValue>& args,
                          const CompileOptions& o) {
  try {
    compile(f, args, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// def hist(x, h, N):
//   parir.label('i')
//   for i in range(N):                   # line 3
//     old = parir.atomic_add(h[x[i]], 1) # line 4
//     x[i] = old                         # line 5
Function histogram(bool keep_old) {
  Body body{atomic(AtomicOp::Add, ld("h", {ld("x", {v("i")}, 4)}, 4), i64(1),
                   keep_old ? v("old", 4) : nullptr, 4)};
  if (keep_old) body.push_back(assign(ld("x", {v("i")}, 5), v("old", 5), 5));
  return function("hist", {"x", "h", "N"}, {loop("i", i64(0), v("N", 3), body, 3, {"i"})});
}

std::vector<ArgValue> histogram_args() {
  return {tensor(ScalarType::I64, {100}), tensor(ScalarType::I32, {10}), integer(100)};
}

TEST(Atomics, PrintsAsTheCallItCameFrom) {
  Body b{atomic(AtomicOp::CompareExchange, ld("h", {v("i")}), i64(2), v("old"), 1, i64(1)),
         atomic(AtomicOp::Max, ld("h", {v("i")}), f64(0.5))};
  EXPECT_EQ(to_string(b), "old = parir.atomic_cas(h[i], 1, 2)\nparir.atomic_max(h[i], 0.5)\n");
  EXPECT_EQ(python_name(AtomicOp::Exchange), std::string("atomic_exchange"));
  EXPECT_EQ(atomic_op_from_name("atomic_xor"), AtomicOp::Xor);
  EXPECT_FALSE(atomic_op_from_name("atomic_mul"));
}

TEST(Atomics, UpdatesAreStoresOfTheirTensor) {
  Body b{atomic(AtomicOp::Add, ld("h", {v("i")}), i64(1), v("old"))};
  EXPECT_EQ(stored_tensors(b), std::set<std::string>{"h"});
  EXPECT_TRUE(contains(b, StmtKind::AtomicUpdate));
  EXPECT_TRUE(names_in(b).count("old"));
}

TEST(Atomics, HistogramGeneratesOneAtomicAddAndNoRaceWarning) {
  CompileResult r = compile(histogram(false), histogram_args(), par({{"i", 100}}));
  EXPECT_NE(r.cuda.find("parir::atomic_combine(parir::Sum(), &h["), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("hist(const int64_t* x, int32_t* h)"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@ param h int32[10] strides(1) inout"), std::string::npos) << r.cuda;
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Atomics, OldValueGoesToALocalOfTheElementType) {
  CompileResult r = compile(histogram(true), histogram_args(), par({{"i", 100}}));
  EXPECT_NE(r.cuda.find("int32_t old;"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("old = parir::atomic_combine(parir::Sum(), &h["), std::string::npos)
      << r.cuda;
}

TEST(Atomics, BoundsChecksSkipTheUpdate) {
  CompileOptions o = par({{"i", 100}});
  o.bounds_check = true;
  CompileResult r = compile(histogram(true), histogram_args(), o);
  EXPECT_NE(r.cuda.find("old = (parir::in_bounds(parir_bounds, 1, x[i], 10) ? "
                        "parir::atomic_combine(parir::Sum(), &h["),
            std::string::npos)
      << r.cuda;
  EXPECT_NE(r.cuda.find(" : int32_t{});"), std::string::npos) << r.cuda;
}

TEST(Atomics, BitwiseUpdateOfAFloatIsAnError) {
  Function f = function("f", {"h", "N"},
                        {loop("i", i64(0), v("N", 3),
                              {atomic(AtomicOp::Or, ld("h", {i64(0)}, 4), i64(1), nullptr, 4)}, 3,
                              {"i"})});
  std::string msg = compile_error(f, {tensor(ScalarType::F32, {4}), integer(8)}, par({{"i", 8}}));
  EXPECT_EQ(msg.rfind("user.py:4: parir.atomic_or needs an integer or bool element", 0), 0u)
      << msg;
}

// for r in range(3) (blocks):
//   old = parir.atomic_add(c[0], 1)   # line 3
//   k = r * 2                         # line 4
//   for j in range(M) (threads):       # line 5
//     y[r, j] = k                       # line 6
Function claim(bool use_old) {
  Body inner{assign(ld("y", {v("r", 6), v("j", 6)}, 6), use_old ? v("old", 6) : v("k", 6), 6)};
  Body body{atomic(AtomicOp::Add, ld("c", {i64(0)}, 3), i64(1), v("old", 3), 3),
            assign(v("k", 4), bin(BinaryOp::Mul, v("r", 4), i64(2), 4), 4),
            loop("j", i64(0), v("M", 5), inner, 5, {"j"})};
  return function("claim", {"c", "y", "M"}, {loop("r", i64(0), i64(3), body, 2, {"r"})});
}

std::vector<ArgValue> claim_args(int64_t m) {
  return {tensor(ScalarType::I64, {1}), tensor(ScalarType::I64, {3, m}), integer(m)};
}

TEST(Atomics, BlockLevelUpdateSharesItsOldValue) {
  CompileResult r = compile(claim(true), claim_args(256), par({{"r", 3}, {"j", 256}}));
  EXPECT_NE(r.cuda.find("__shared__ int64_t parir_old0;"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("if (threadIdx.x == 0) parir_old0 = parir::atomic_combine(parir::Sum(), "
                        "&c[0], 1L);"),
            std::string::npos)
      << r.cuda;
  EXPECT_NE(r.cuda.find("old = parir_old0;"), std::string::npos) << r.cuda;
}

TEST(Atomics, MultiBlockCutNeverRepeatsTheUpdate) {
  // The update runs in a kernel of its own; `k`, which only computes a local, is repeated.
  CompileResult r = compile(claim(false), claim_args(5000), par({{"r", 3}, {"j", 5000}}));
  size_t first = r.cuda.find("atomic_combine");
  ASSERT_NE(first, std::string::npos) << r.cuda;
  EXPECT_EQ(r.cuda.find("atomic_combine", first + 1), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@ launch claim_0"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("//@ launch claim_1"), std::string::npos) << r.cuda;
  // Its old value does not carry into the next kernel: an error, not a second update.
  std::string msg = compile_error(claim(true), claim_args(5000), par({{"r", 3}, {"j", 5000}}));
  EXPECT_NE(msg.find("local variable 'old' is read in kernel claim_1 but assigned only in other "
                     "parallel code"),
            std::string::npos)
      << msg;
}

TEST(Atomics, UpdateInAReductionLoopIsNotItsAccumulation) {
  // for i (reduce): s[0] += x[i]; parir.atomic_add(h[0], 1)
  Function f = function(
      "f", {"x", "s", "h", "N"},
      {loop("i", i64(0), v("N", 3),
            {assign(ld("s", {i64(0)}, 4),
                    bin(BinaryOp::Add, ld("s", {i64(0)}, 4), ld("x", {v("i")}, 4), 4), 4),
             atomic(AtomicOp::Add, ld("h", {i64(0)}, 5), i64(1), nullptr, 5)},
            3, {"i"})});
  CompileOptions o;
  o.parallelize["i"] = LoopPar{100, true, 0};
  CompileResult r = compile(f, {tensor(ScalarType::F32, {100}), tensor(ScalarType::F32, {1}),
                                tensor(ScalarType::I32, {1}), integer(100)},
                            o);
  EXPECT_NE(r.cuda.find("acc0 = (acc0 + x[i]);"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("parir::atomic_combine(parir::Sum(), &h[0], 1);"), std::string::npos)
      << r.cuda;
}

TEST(Atomics, ReusedResultNamesAreSeparateLocals) {
  // old = atomic_add(h[i], 1) (int32); ...; old = 0.5 * y[i] (float32): two webs, two types.
  Function f = function(
      "f", {"h", "y", "N"},
      {loop("i", i64(0), v("N", 3),
            {atomic(AtomicOp::Add, ld("h", {v("i")}, 4), i64(1), v("old", 4), 4),
             assign(ld("h", {v("i")}, 5), v("old", 5), 5), assign(v("old", 6), bin(BinaryOp::Mul, f64(0.5), ld("y", {v("i")}, 6), 6), 6),
             assign(ld("y", {v("i")}, 7), v("old", 7), 7)},
            3, {"i"})});
  CompileResult r = compile(f, {tensor(ScalarType::I32, {8}), tensor(ScalarType::F32, {8}),
                                integer(8)},
                            par({{"i", 8}}));
  EXPECT_NE(r.cuda.find("int32_t old;"), std::string::npos) << r.cuda;
  EXPECT_NE(r.cuda.find("float old_"), std::string::npos) << r.cuda;
}

}  // namespace
}  // namespace parir
