#include "ir/interval.h"

#include <algorithm>

#include "ir/arith.h"

namespace parir {
namespace {

using Wide = __int128;

struct Result {
  Range range;
  std::set<std::string> vars;  // variables used, to tell whether operands are independent
};

std::optional<Range> fits(Wide lo, Wide hi, bool exact) {
  if (lo < INT64_MIN || hi > INT64_MAX) return std::nullopt;
  return Range{static_cast<int64_t>(lo), static_cast<int64_t>(hi), exact};
}

bool disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& x : a)
    if (b.count(x)) return false;
  return true;
}

std::optional<Result> eval(const ExprPtr& e, const RangeEnv& env) {
  if (auto i = e->as<IntImm>()) return Result{Range{i->value, i->value, true}, {}};
  if (auto v = e->as<Var>()) {
    auto it = env.find(v->name);
    if (it == env.end()) return std::nullopt;
    return Result{it->second, {v->name}};
  }
  if (auto c = e->as<Cast>()) {
    // An integer conversion keeps the value where the target type holds the whole range.
    if (!is_int(c->type.scalar) || !is_int(c->a->type.scalar)) return std::nullopt;
    auto r = eval(c->a, env);
    if (!r) return std::nullopt;
    auto [min, max] = int_limits(c->type.scalar);
    if (r->range.lo < min || r->range.hi > max) return std::nullopt;
    return r;
  }
  if (auto u = e->as<Unary>()) {
    if (u->op != UnaryOp::Neg) return std::nullopt;
    auto r = eval(u->a, env);
    if (!r) return std::nullopt;
    auto n = fits(-Wide(r->range.hi), -Wide(r->range.lo), r->range.exact);
    if (!n) return std::nullopt;
    return Result{*n, r->vars};
  }
  if (auto c = e->as<Call>(); c && (c->fn == Builtin::Min || c->fn == Builtin::Max)) {
    auto a = eval(c->args[0], env), b = eval(c->args[1], env);
    if (!a || !b) return std::nullopt;
    const bool min = c->fn == Builtin::Min;
    Range r{min ? std::min(a->range.lo, b->range.lo) : std::max(a->range.lo, b->range.lo),
            min ? std::min(a->range.hi, b->range.hi) : std::max(a->range.hi, b->range.hi),
            a->range.exact && b->range.exact && disjoint(a->vars, b->vars)};
    a->vars.insert(b->vars.begin(), b->vars.end());
    return Result{r, a->vars};
  }
  auto b = e->as<Binary>();
  if (!b) return std::nullopt;
  auto x = eval(b->a, env), y = eval(b->b, env);
  if (!x || !y) return std::nullopt;
  const Range& p = x->range;
  const Range& q = y->range;
  const bool independent = p.exact && q.exact && disjoint(x->vars, y->vars);
  std::set<std::string> vars = x->vars;
  vars.insert(y->vars.begin(), y->vars.end());
  std::optional<Range> r;
  switch (b->op) {
    case BinaryOp::Add:
      r = fits(Wide(p.lo) + q.lo, Wide(p.hi) + q.hi, independent);
      break;
    case BinaryOp::Sub:
      r = fits(Wide(p.lo) - q.hi, Wide(p.hi) - q.lo, independent);
      break;
    case BinaryOp::Mul: {
      Wide c[] = {Wide(p.lo) * q.lo, Wide(p.lo) * q.hi, Wide(p.hi) * q.lo, Wide(p.hi) * q.hi};
      // Exact when one side is a constant: the other's ends map to the product's ends.
      bool constant = (p.lo == p.hi && p.exact) || (q.lo == q.hi && q.exact);
      r = fits(*std::min_element(c, c + 4), *std::max_element(c, c + 4), independent && constant);
      break;
    }
    case BinaryOp::FloorDiv:
      // By a positive constant: monotone, so the ends map to the ends.
      if (q.lo != q.hi || q.lo <= 0) return std::nullopt;
      r = Range{floor_div(p.lo, q.lo), floor_div(p.hi, q.lo), p.exact};
      break;
    case BinaryOp::Mod:
      // By a positive constant: Python's modulo lies in [0, c), and equals the operand's offset
      // within one period when the whole range lies in that period.
      if (q.lo != q.hi || q.lo <= 0) return std::nullopt;
      if (floor_div(p.lo, q.lo) == floor_div(p.hi, q.lo))
        r = Range{floor_mod(p.lo, q.lo), floor_mod(p.hi, q.lo), p.exact};
      else
        r = Range{0, q.lo - 1, false};
      break;
    case BinaryOp::BitAnd:
      // With a non-negative constant mask: between 0 and the mask.
      if (q.lo == q.hi && q.lo >= 0 && p.lo >= 0) r = Range{0, std::min(p.hi, q.lo), false};
      else if (p.lo == p.hi && p.lo >= 0 && q.lo >= 0) r = Range{0, std::min(q.hi, p.lo), false};
      break;
    default:
      break;
  }
  if (!r) return std::nullopt;
  return Result{*r, vars};
}

}  // namespace

std::optional<Range> range_of(const ExprPtr& e, const RangeEnv& env) {
  if (!is_int(e->type.scalar) && e->type.known()) return std::nullopt;
  auto r = eval(e, env);
  if (!r) return std::nullopt;
  return r->range;
}

std::optional<Range> loop_variable_range(int64_t lo, int64_t hi, int64_t step) {
  Wide span = step > 0 ? Wide(hi) - lo : Wide(lo) - hi;
  Wide step_size = step > 0 ? Wide(step) : -Wide(step);
  Wide trips = span <= 0 ? 0 : (span + step_size - 1) / step_size;
  if (trips == 0) return std::nullopt;
  int64_t last = static_cast<int64_t>(lo + (trips - 1) * Wide(step));
  return Range{std::min(lo, last), std::max(lo, last), true};
}

}  // namespace parir
