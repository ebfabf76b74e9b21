// The launch plan: printing, parsing back, and running.
#include <gtest/gtest.h>

#include "codegen/plan_text.h"
#include "ir/arith.h"
#include "runtime/plan_runner.h"

namespace parir {
namespace {

const char* kSource = R"(#include "parir.h"
extern "C" __global__ void jacobi_0(float* A, const float* B) {}
//@ parir.plan jacobi
//@ param A float32[100, 100] strides(100, 1) inout
//@ param B float32[100, 100] strides(100, 1) in
//@ for t in range(1, 10, 2):
//@   if t % 3 == 0 or t > (8 - 1):
//@     launch jacobi_0 grid(98) block(128) (A, B, t)
//@   else:
//@     launch jacobi_1 grid(7) block(32) shared(256) (B, A)
)";

TEST(LaunchPlan, ParsesAndRoundTrips) {
  LaunchPlan plan = parse_plan(kSource);
  EXPECT_EQ(plan.function, "jacobi");
  ASSERT_EQ(plan.params.size(), 2u);
  EXPECT_TRUE(plan.params[0].written);
  EXPECT_FALSE(plan.params[1].written);
  EXPECT_EQ(plan.params[1].type.shape, (std::vector<int64_t>{100, 100}));
  LaunchPlan again = parse_plan(print_plan(plan));
  EXPECT_EQ(print_plan(again), print_plan(plan));
}

TEST(LaunchPlan, CudaGraphsFlagRoundTrips) {
  std::string src = kSource;
  src.replace(src.find("parir.plan jacobi"), 17, "parir.plan jacobi cuda_graphs");
  LaunchPlan plan = parse_plan(src);
  EXPECT_EQ(plan.cuda_graphs, CudaGraphs::On);
  EXPECT_EQ(parse_plan(print_plan(plan)).cuda_graphs, CudaGraphs::On);
  EXPECT_EQ(parse_plan(kSource).cuda_graphs, CudaGraphs::Auto);
  plan.cuda_graphs = CudaGraphs::Off;
  EXPECT_EQ(parse_plan(print_plan(plan)).cuda_graphs, CudaGraphs::Off);
}

TEST(LaunchPlan, ApartLinesRoundTrip) {
  std::string src = kSource;
  src.replace(src.find("//@ for"), 0, "//@ apart A from B\n");
  LaunchPlan plan = parse_plan(src);
  ASSERT_EQ(plan.apart.size(), 1u);
  EXPECT_EQ(plan.apart[0].tensor, "A");
  EXPECT_EQ(plan.apart[0].others, std::vector<std::string>{"B"});
  EXPECT_NE(print_plan(plan).find("//@ apart A from B\n"), std::string::npos);
  std::string bad = kSource;
  bad.replace(bad.find("//@ for"), 0, "//@ apart A B\n");
  EXPECT_THROW(parse_plan(bad), Error);
}

TEST(LaunchPlan, PersistentLoopRoundTripsAndRunsInsteadOfTheLoop) {
  std::string src = kSource;
  src.replace(src.find("//@ for"), 0,
              "//@ persistent launch jacobi_loop0 grid(7) block(128) cluster(7) (A, B)\n");
  LaunchPlan plan = parse_plan(src);
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].persistent.size(), 1u);
  const PlanStep& fused = plan.steps[0].persistent[0];
  EXPECT_EQ(fused.cluster, 7);
  EXPECT_EQ(plan.kernels.back(), "jacobi_loop0");  // resolved like any launch
  EXPECT_EQ(print_plan(parse_plan(print_plan(plan))), print_plan(plan));
  std::vector<std::string> plain, persistent;
  run_plan(plan, [&](const PlanStep& s, const HostEnv&) { plain.push_back(s.kernel); });
  run_plan(plan, [&](const PlanStep& s, const HostEnv&) { persistent.push_back(s.kernel); },
           /*persistent=*/true);
  EXPECT_EQ(plain.size(), 5u);  // t = 1, 3, 5, 7, 9
  EXPECT_EQ(persistent, std::vector<std::string>{"jacobi_loop0"});
  // The line belongs right before its loop.
  std::string stray = kSource;
  stray += "//@ persistent launch jacobi_loop0 grid(7) block(128) cluster(7) (A, B)\n";
  EXPECT_THROW(parse_plan(stray), Error);
}

TEST(LaunchPlan, TemporariesFollowTheParameters) {
  std::string src = kSource;
  src.replace(src.find("//@ for"), 0, "//@ temp partial0 float64[3, 4]\n");
  src.replace(src.find("(B, A)"), 6, "(B, partial0, A)");
  LaunchPlan plan = parse_plan(src);
  ASSERT_EQ(plan.temporaries.size(), 1u);
  EXPECT_EQ(plan.temporaries[0].type.strides, (std::vector<int64_t>{4, 1}));
  const PlanStep* second = nullptr;
  for_each_launch(plan.steps, [&](const PlanStep& s) { second = &s; });
  ASSERT_EQ(second->resolved_args.size(), 3u);
  EXPECT_EQ(second->resolved_args[1].kind, PlanStep::Arg::Kind::Param);
  EXPECT_EQ(second->resolved_args[1].index, 2);  // after A and B
  EXPECT_EQ(print_plan(parse_plan(print_plan(plan))), print_plan(plan));
  EXPECT_THROW(parse_plan(src.replace(src.find("[3, 4]"), 6, "[3, 4] x")), Error);
}

TEST(LaunchPlan, AlignedCopiesRoundTripAndFollowTheirKernel) {
  std::string src = kSource;
  src.replace(src.find("(B, A)"), 6, "(B, A) aligned(jacobi_1_aligned)");
  LaunchPlan plan = parse_plan(src);
  EXPECT_EQ(plan.kernels,
            (std::vector<std::string>{"jacobi_0", "jacobi_1", "jacobi_1_aligned"}));
  std::vector<std::pair<int, int>> indices;
  for_each_launch(plan.steps, [&](const PlanStep& s) {
    indices.emplace_back(s.kernel_index, s.aligned_kernel_index);
  });
  EXPECT_EQ(indices, (std::vector<std::pair<int, int>>{{0, -1}, {1, 2}}));
  const std::string printed = print_plan(plan);
  EXPECT_NE(printed.find("launch jacobi_1 grid(7) block(32) shared(256) (B, A) "
                         "aligned(jacobi_1_aligned)\n"),
            std::string::npos)
      << printed;
  EXPECT_EQ(print_plan(parse_plan(printed)), printed);
  EXPECT_THROW(parse_plan(src.replace(src.find("aligned(jacobi_1_aligned)"), 25, "aligned(x")),
               Error);
}

TEST(LaunchPlan, RunsLoopsAndConditions) {
  LaunchPlan plan = parse_plan(kSource);
  std::vector<std::string> launches;
  run_plan(plan, [&](const PlanStep& s, const HostEnv& env) {
    launches.push_back(fmt::format("{}@{}", s.kernel, env.value("t")));
  });
  // t = 1, 3, 5, 7, 9: t % 3 == 0 for 3 and 9, t > 7 for 9.
  EXPECT_EQ(launches, (std::vector<std::string>{"jacobi_1@1", "jacobi_0@3", "jacobi_1@5",
                                                "jacobi_1@7", "jacobi_0@9"}));
}

// The bitonic sort's host loops: integer locals the host computes, while loops over them.
const char* kHostLocals = R"(#include "parir.h"
//@ parir.plan bitonic
//@ param v float32[8] strides(1) inout
//@ k = 2
//@ while k <= 8:
//@   j = k >> 1
//@   while j > 0:
//@     launch bitonic grid(1) block(32) (v, k, j)
//@     j = j >> 1
//@   k = k << 1
)";

TEST(LaunchPlan, HostLocalsAndWhileLoopsRoundTripAndRun) {
  LaunchPlan plan = parse_plan(kHostLocals);
  EXPECT_EQ(plan.host_locals, (std::vector<std::string>{"k", "j"}));
  EXPECT_EQ(print_plan(parse_plan(print_plan(plan))), print_plan(plan));
  EXPECT_NE(print_plan(plan).find("//@ while (k <= 8):\n//@   j = (k >> 1)\n"), std::string::npos)
      << print_plan(plan);
  std::vector<std::string> launches;
  run_plan(plan, [&](const PlanStep& s, const HostEnv& env) {
    ASSERT_EQ(s.resolved_args.size(), 3u);
    // The kernel's arguments read the host locals' slots, as the runtime does.
    launches.push_back(fmt::format("{}/{}", env.values[s.resolved_args[1].index],
                                   env.values[s.resolved_args[2].index]));
  });
  EXPECT_EQ(launches,
            (std::vector<std::string>{"2/1", "4/2", "4/1", "8/4", "8/2", "8/1"}));
}

// A loop and a branch whose bodies do nothing on the host (their statements folded away).
TEST(LaunchPlan, EmptyBodiesArePassAndRoundTrip) {
  LaunchPlan plan = parse_plan(R"(#include "parir.h"
//@ parir.plan folded
//@ param v float32[8] strides(1) inout
//@ for t in range(0, 3, 1):
//@   pass
//@ for u in range(0, 4, 1):
//@   if u > 1:
//@     pass
//@   else:
//@     launch folded grid(1) block(32) (v, u)
)");
  const std::string printed = print_plan(plan);
  EXPECT_NE(printed.find("//@ for t in range(0, 3, 1):\n//@   pass\n"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("//@   if (u > 1):\n//@     pass\n//@   else:\n"), std::string::npos)
      << printed;
  EXPECT_EQ(print_plan(parse_plan(printed)), printed);
  std::vector<std::string> launches;
  run_plan(plan, [&](const PlanStep& s, const HostEnv& env) {
    launches.push_back(fmt::format("{}@{}", s.kernel, env.value("u")));
  });
  EXPECT_EQ(launches, (std::vector<std::string>{"folded@0", "folded@1"}));
}

TEST(LaunchPlan, HostExpressionsWithCallsConversionsAndConditionals) {
  LaunchPlan plan = parse_plan(R"(#include "parir.h"
//@ parir.plan e
//@ param v float32[4] strides(1) inout
//@ a = parir.min(7, 3)
//@ b = parir.max(a, -2) ** 2
//@ c = (~(b) if b > 5 else 0)
//@ d = parir.abs(c) + parir.int8(300)
//@ launch e grid(1) block(32) (v, a, b, c, d)
)");
  EXPECT_EQ(print_plan(parse_plan(print_plan(plan))), print_plan(plan));
  std::vector<int64_t> values;
  run_plan(plan, [&](const PlanStep& s, const HostEnv& env) {
    for (size_t i = 1; i < s.resolved_args.size(); ++i)
      values.push_back(env.values[s.resolved_args[i].index]);
  });
  // int8(300) wraps to 44, as the GPU converts it.
  EXPECT_EQ(values, (std::vector<int64_t>{3, 9, -10, 54}));
  EXPECT_THROW(parse_plan(std::string(kSource) + "//@ k = parir.nosuch(1)\n"), Error);
}

TEST(LaunchPlan, ResolvesLaunchArgumentsWhenParsed) {
  LaunchPlan plan = parse_plan(kSource);
  EXPECT_EQ(plan.kernels, (std::vector<std::string>{"jacobi_0", "jacobi_1"}));
  std::vector<std::vector<std::pair<bool, int>>> args;
  for_each_launch(plan.steps, [&](const PlanStep& s) {
    args.emplace_back();
    for (const auto& a : s.resolved_args)
      args.back().emplace_back(a.kind == PlanStep::Arg::Kind::Param, a.index);
  });
  // (A, B, t) and (B, A): parameters by position, t as the variable of host loop 0.
  EXPECT_EQ(args, (std::vector<std::vector<std::pair<bool, int>>>{
                      {{true, 0}, {true, 1}, {false, 0}}, {{true, 1}, {true, 0}}}));
  std::string unknown = std::string(kSource) + "//@ launch jacobi_0 grid(1) block(1) (A, u)\n";
  EXPECT_THROW(parse_plan(unknown), Error);
}

TEST(LaunchPlan, MalformedLinesNameTheirLine) {
  std::string bad = std::string(kSource) + "//@ launch broken grid(x) block(1) ()\n";
  try {
    parse_plan(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 11"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_plan("int x;"), Error);
}

TEST(HostExpressions, FollowPythonDivision) {
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_mod(-7, 2), 1);
  EXPECT_EQ(floor_mod(7, -2), -1);
  HostEnv env{{"n"}, {-7}};
  Type i64{ScalarType::I64, false};
  EXPECT_EQ(eval_host_expr(binary(BinaryOp::FloorDiv, var("n", {}, i64), int_imm(2, {}, i64), {}, i64), env), -4);
}

}  // namespace
}  // namespace parir
