#include "ir/reduction_ops.h"

#include <limits>

namespace parir {

ExprPtr strip_casts(const ExprPtr& e) {
  const ExprNode* n = e.get();
  ExprPtr cur = e;
  while (auto c = n->as<Cast>()) {
    cur = c->a;
    n = cur.get();
  }
  return cur;
}

bool same_place(const ExprPtr& a, const ExprPtr& b) {
  ExprPtr x = strip_casts(a), y = strip_casts(b);
  if (x->kind != y->kind) return false;
  if (auto v = x->as<Var>()) return v->name == y->as<Var>()->name;
  if (auto l = x->as<Load>()) return l->tensor == y->as<Load>()->tensor && to_string(x) == to_string(y);
  return false;
}

std::optional<Accumulation> match(const ExprPtr& target, const ExprPtr& value) {
  ExprPtr v = strip_casts(value);
  if (auto b = v->as<Binary>()) {
    bool left = same_place(b->a, target), right = same_place(b->b, target);
    if (b->op == BinaryOp::Add && (left || right)) return Accumulation{ReduceOp::Sum, left ? b->b : b->a};
    if (b->op == BinaryOp::Mul && (left || right)) return Accumulation{ReduceOp::Prod, left ? b->b : b->a};
    if (b->op == BinaryOp::Sub && left)
      return Accumulation{ReduceOp::Sum,
                          std::make_shared<Unary>(UnaryOp::Neg, b->b, b->b->type, b->b->loc)};
  }
  if (auto c = v->as<Call>(); c && (c->fn == Builtin::Min || c->fn == Builtin::Max)) {
    bool left = same_place(c->args[0], target), right = same_place(c->args[1], target);
    if (left || right)
      return Accumulation{c->fn == Builtin::Min ? ReduceOp::Min : ReduceOp::Max,
                          left ? c->args[1] : c->args[0]};
  }
  return std::nullopt;
}

Type accumulator_type(Type so_far, Type value) {
  ScalarType t = promote(Type{so_far.scalar, false}, value).scalar;
  if (is_bool(t) || (is_int(t) && size_in_bytes(t) < 4)) t = ScalarType::I64;
  if (is_half(t)) t = ScalarType::F32;
  return Type{t, false};
}

ExprPtr combine(ReduceOp op, ExprPtr a, ExprPtr b, Type type, Loc loc) {
  switch (op) {
    case ReduceOp::Sum:
      return binary(BinaryOp::Add, std::move(a), std::move(b), loc, type);
    case ReduceOp::Prod:
      return binary(BinaryOp::Mul, std::move(a), std::move(b), loc, type);
    case ReduceOp::Min:
    case ReduceOp::Max:
      break;
  }
  return std::make_shared<Call>(op == ReduceOp::Min ? Builtin::Min : Builtin::Max,
                                std::vector<ExprPtr>{std::move(a), std::move(b)}, type, loc);
}

ExprPtr reduction_identity(ReduceOp op, Type type, Loc loc) {
  const bool fp = is_float(type.scalar);
  auto number = [&](int64_t i, double f) { return fp ? float_imm(f, loc, type) : int_imm(i, loc, type); };
  switch (op) {
    case ReduceOp::Sum:
      return number(0, 0.0);
    case ReduceOp::Prod:
      return number(1, 1.0);
    case ReduceOp::Min:
      return number(int_limits(type.scalar).second, std::numeric_limits<double>::infinity());
    case ReduceOp::Max:
      break;
  }
  return number(int_limits(type.scalar).first, -std::numeric_limits<double>::infinity());
}

void combine_into_target(Reduction& r) {
  const Type t = r.target->type;
  const Type acc_t = r.acc_type;
  const Loc loc = r.target->loc;
  const bool narrower = acc_t.scalar != t.scalar;
  ExprPtr acc = var(r.acc, loc, acc_t);
  if (!narrower) {
    r.acc_value = acc;
    r.combined = combine(r.op, r.target, acc, t, loc);
    return;
  }
  ExprPtr target_wide = std::make_shared<Cast>(r.target, acc_t, loc);
  r.combined = std::make_shared<Cast>(combine(r.op, target_wide, acc, acc_t, loc), t, loc);
  ExprPtr clamped = acc;
  if ((r.op == ReduceOp::Min || r.op == ReduceOp::Max) && is_int(t.scalar)) {
    auto [lo, hi] = int_limits(t.scalar);
    clamped = combine(ReduceOp::Max, clamped, int_imm(lo, loc, acc_t), acc_t, loc);
    clamped = combine(ReduceOp::Min, clamped, int_imm(hi, loc, acc_t), acc_t, loc);
  }
  r.acc_value = std::make_shared<Cast>(clamped, t, loc);
}

}  // namespace parir
