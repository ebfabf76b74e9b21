#include "passes/fuse_host_loops.h"

#include <algorithm>

#include <fmt/format.h>

namespace parir {
namespace {

bool constant(const ExprPtr& e) { return e && e->as<IntImm>(); }

// The persistent launch of loop `s`, or nothing when the loop does not qualify.
std::vector<PlanStep> fused_launch(const Lowered& l, const PlanStep& s, const std::string& name) {
  if (s.kind != PlanStep::Kind::For || !constant(s.lo) || !constant(s.hi) || !constant(s.step) ||
      s.step->as<IntImm>()->value <= 0 || s.body.empty())
    return {};
  int64_t block = 0, grid = 0;
  std::vector<std::string> tensors;  // the loop's tensor arguments, in the plan's order
  for (const auto& step : s.body) {
    const Kernel* k = step.kind == PlanStep::Kind::Launch ? l.kernel(step.kernel) : nullptr;
    if (!k || k->bounds_checked || step.cluster > 1 || step.shared_bytes > 0 ||
        step.grid > kMaxFusedGrid || (block && step.block != block))
      return {};
    block = step.block;
    grid = std::max(grid, step.grid);
    for (const auto& a : step.args)
      if (a != s.var && std::find(tensors.begin(), tensors.end(), a) == tensors.end()) {
        if (!l.plan.param(a)) return {};  // a temporary, or an outer loop's variable
        tensors.push_back(a);
      }
  }
  if (grid == 0) return {};
  std::vector<std::string> ordered;
  for (const auto& p : l.plan.params)
    if (std::find(tensors.begin(), tensors.end(), p.name) != tensors.end())
      ordered.push_back(p.name);
  PlanStep fused;
  fused.kind = PlanStep::Kind::Launch;
  fused.kernel = name;
  fused.cluster = fused.grid = std::min(grid, kMaxPersistentCluster);
  fused.block = block;
  fused.args = std::move(ordered);
  return {fused};
}

}  // namespace

void fuse_host_loops(Lowered& lowered) {
  int count = 0;
  for (auto& s : lowered.plan.steps) {
    std::string name = fmt::format("{}_loop{}", lowered.plan.function, count);
    s.persistent = fused_launch(lowered, s, name);
    if (!s.persistent.empty()) ++count;
  }
  resolve_launch_args(lowered.plan);
}

}  // namespace parir
