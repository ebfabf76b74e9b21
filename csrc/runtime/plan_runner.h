// Running a launch plan on the host: its loops and conditions are evaluated, and a callback is
// called for every launch. Torch- and CUDA-free; runtime/program.cpp supplies the callback
// that launches kernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/launch_plan.h"

namespace parir {

// The plan's host locals, then the host loop variables around a launch, outermost loop first:
// PlanStep::Arg's index of a host value is its position here.
struct HostEnv {
  std::vector<std::string> names;
  std::vector<int64_t> values;

  // The innermost variable of that name; throws parir::Error when there is none.
  int64_t value(const std::string& name) const { return values[slot(name)]; }
  size_t slot(const std::string& name) const;
};

// Walks the plan, evaluating loops, conditions and assignments to host locals, and calls
// `launch` for every launch step.
// With `persistent`, a loop that has a persistent kernel (PlanStep::persistent) is that one
// launch instead of its iterations.
void run_plan(const LaunchPlan& plan,
              const std::function<void(const PlanStep& launch, const HostEnv& env)>& launch,
              bool persistent = false);

// Evaluates an int64 host expression (Python semantics for // and %): integers, names,
// arithmetic, bitwise and logical operators, comparisons, `a if c else b`, conversions to
// integer types and the builtins of is_host_builtin. Throws on unknown names and other nodes.
int64_t eval_host_expr(const ExprPtr& e, const HostEnv& env);


}  // namespace parir
