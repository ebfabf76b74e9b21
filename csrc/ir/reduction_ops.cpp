#include "ir/reduction_ops.h"

#include <limits>

namespace parir {

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
