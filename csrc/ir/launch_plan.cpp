#include "ir/launch_plan.h"

#include <algorithm>

namespace parir {

const PlanParam* LaunchPlan::param(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

void for_each_launch(std::vector<PlanStep>& steps, const std::function<void(PlanStep&)>& fn) {
  for (auto& s : steps) {
    if (s.kind == PlanStep::Kind::Launch) fn(s);
    for_each_launch(s.body, fn);
    for_each_launch(s.else_body, fn);
    for_each_launch(s.persistent, fn);
  }
}

void for_each_launch(const std::vector<PlanStep>& steps,
                     const std::function<void(const PlanStep&)>& fn) {
  for (const auto& s : steps) {
    if (s.kind == PlanStep::Kind::Launch) fn(s);
    for_each_launch(s.body, fn);
    for_each_launch(s.else_body, fn);
    for_each_launch(s.persistent, fn);
  }
}

namespace {

void collect_host_locals(const std::vector<PlanStep>& steps, std::vector<std::string>& out) {
  for (const auto& s : steps) {
    if (s.kind == PlanStep::Kind::Assign && std::find(out.begin(), out.end(), s.var) == out.end())
      out.push_back(s.var);
    collect_host_locals(s.body, out);
    collect_host_locals(s.else_body, out);
  }
}

// `loops` holds the host locals, then the variables of the host loops around the steps,
// outermost first: a HostEnv's order.
void resolve_steps(LaunchPlan& plan, std::vector<PlanStep>& steps,
                   std::vector<std::string>& loops) {
  for (auto& s : steps) {
    if (s.kind == PlanStep::Kind::For) loops.push_back(s.var);
    resolve_steps(plan, s.body, loops);
    if (s.kind == PlanStep::Kind::For) loops.pop_back();
    resolve_steps(plan, s.else_body, loops);
    resolve_steps(plan, s.persistent, loops);  // runs instead of the loop: outside it
    if (s.kind != PlanStep::Kind::Launch) continue;

    auto index_of = [&](const std::string& kernel) {
      auto k = std::find(plan.kernels.begin(), plan.kernels.end(), kernel);
      if (k == plan.kernels.end()) k = plan.kernels.insert(k, kernel);
      return static_cast<int>(k - plan.kernels.begin());
    };
    s.kernel_index = index_of(s.kernel);
    s.aligned_kernel_index = s.aligned_kernel.empty() ? -1 : index_of(s.aligned_kernel);
    s.resolved_args.clear();
    for (const auto& a : s.args) {
      PlanStep::Arg arg;
      auto named = [&](const PlanParam& q) { return q.name == a; };
      auto p = std::find_if(plan.params.begin(), plan.params.end(), named);
      auto t = std::find_if(plan.temporaries.begin(), plan.temporaries.end(), named);
      if (a == kBoundsBufferArg) {
        arg.kind = PlanStep::Arg::Kind::BoundsBuffer;
      } else if (p != plan.params.end()) {
        arg.index = static_cast<int>(p - plan.params.begin());
      } else if (t != plan.temporaries.end()) {
        arg.index = static_cast<int>(plan.params.size() + (t - plan.temporaries.begin()));
      } else {
        auto v = std::find(loops.rbegin(), loops.rend(), a);  // the innermost loop of that name
        if (v == loops.rend())
          fail("launch plan: kernel '{}' takes '{}', which is neither a parameter, a host local "
               "nor the variable of a host loop around the launch",
               s.kernel, a);
        arg.kind = PlanStep::Arg::Kind::HostVar;
        arg.index = static_cast<int>(loops.rend() - v) - 1;
      }
      s.resolved_args.push_back(arg);
    }
  }
}

}  // namespace

void resolve_launch_args(LaunchPlan& plan) {
  plan.kernels.clear();
  plan.host_locals.clear();
  collect_host_locals(plan.steps, plan.host_locals);
  std::vector<std::string> loops = plan.host_locals;
  resolve_steps(plan, plan.steps, loops);
}

}  // namespace parir
