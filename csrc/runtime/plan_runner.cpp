#include "runtime/plan_runner.h"

#include <algorithm>

#include "ir/arith.h"

namespace parir {

size_t HostEnv::slot(const std::string& name) const {
  for (size_t i = names.size(); i-- > 0;)
    if (names[i] == name) return i;
  fail("launch plan: unknown name '{}'", name);
}

int64_t eval_host_expr(const ExprPtr& e, const HostEnv& env) {
  if (auto i = e->as<IntImm>()) return i->value;
  if (auto b = e->as<BoolImm>()) return b->value;
  if (auto v = e->as<Var>()) return env.value(v->name);
  if (auto u = e->as<Unary>()) {
    int64_t a = eval_host_expr(u->a, env);
    switch (u->op) {
      case UnaryOp::Neg:
        return wrap(0 - static_cast<uint64_t>(a));
      case UnaryOp::Not:
        return !a;
      case UnaryOp::BitNot:
        return ~a;
    }
  }
  if (auto b = e->as<Binary>()) {
    int64_t x = eval_host_expr(b->a, env);
    if (b->op == BinaryOp::And) return x && eval_host_expr(b->b, env);
    if (b->op == BinaryOp::Or) return x || eval_host_expr(b->b, env);
    int64_t y = eval_host_expr(b->b, env);
    // The constant folder's arithmetic, so that host and compile time agree.
    if (auto c = compare(b->op, x, y)) return *c;
    if (auto r = fold_int(b->op, x, y)) return *r;
    fail("launch plan: cannot evaluate {} {} {} (division by zero?)", x, python_symbol(b->op), y);
  }
  if (auto s = e->as<Select>())
    return eval_host_expr(s->cond, env) ? eval_host_expr(s->a, env) : eval_host_expr(s->b, env);
  if (auto c = e->as<Cast>()) {
    const int64_t v = eval_host_expr(c->a, env);
    if (is_bool(c->type.scalar)) return v != 0;
    if (is_int(c->type.scalar)) return convert_int(v, c->type.scalar);
  }
  if (auto c = e->as<Call>(); c && is_host_builtin(c->fn) && c->args.size() == (c->fn == Builtin::Abs ? 1u : 2u)) {
    const int64_t a = eval_host_expr(c->args[0], env);
    if (c->fn == Builtin::Abs) return a < 0 ? wrap(0 - static_cast<uint64_t>(a)) : a;
    const int64_t b = eval_host_expr(c->args[1], env);
    return c->fn == Builtin::Min ? std::min(a, b) : std::max(a, b);
  }
  fail("launch plan: unsupported expression {}", to_string(e));
}

namespace {

void run_steps(const std::vector<PlanStep>& steps, HostEnv& env,
               const std::function<void(const PlanStep&, const HostEnv&)>& launch,
               bool persistent) {
  for (const auto& s : steps) {
    switch (s.kind) {
      case PlanStep::Kind::Launch:
        launch(s, env);
        break;
      case PlanStep::Kind::If:
        run_steps(eval_host_expr(s.cond, env) ? s.body : s.else_body, env, launch, persistent);
        break;
      case PlanStep::Kind::Assign: {
        const int64_t value = eval_host_expr(s.value, env);
        env.values[env.slot(s.var)] = value;
        break;
      }
      case PlanStep::Kind::While:
        while (eval_host_expr(s.cond, env)) run_steps(s.body, env, launch, persistent);
        break;
      case PlanStep::Kind::For: {
        if (persistent && !s.persistent.empty()) {
          launch(s.persistent.front(), env);
          break;
        }
        int64_t lo = eval_host_expr(s.lo, env), hi = eval_host_expr(s.hi, env),
                step = eval_host_expr(s.step, env);
        if (step == 0) fail("launch plan: range() step of '{}' is zero", s.var);
        env.names.push_back(s.var);
        env.values.push_back(lo);
        for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
          env.values.back() = v;
          run_steps(s.body, env, launch, persistent);
        }
        env.names.pop_back();
        env.values.pop_back();
        break;
      }
    }
  }
}

}  // namespace

void run_plan(const LaunchPlan& plan,
              const std::function<void(const PlanStep&, const HostEnv&)>& launch,
              bool persistent) {
  HostEnv env;
  env.names = plan.host_locals;
  env.values.assign(plan.host_locals.size(), 0);
  run_steps(plan.steps, env, launch, persistent);
}

}  // namespace parir
