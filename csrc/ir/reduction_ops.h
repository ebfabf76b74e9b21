// The operations of reductions, for the passes that build or move them: combining two values
// with a reduction's operation, an operation's identity, and how a reduction's combined result
// is stored into its target.
#pragma once

#include "ir/ir.h"

namespace parir {

// The expression under any conversions (the Casts that infer_types makes explicit).
ExprPtr strip_casts(const ExprPtr& e);

// Whether two targets are the same local, or the same tensor element as written.
bool same_place(const ExprPtr& a, const ExprPtr& b);

// The value combined into `target` by `value`, if `target = value` is an accumulation:
//     t = t + e    t = e + t    t = t - e    t = t * e    t = parir.min(t, e)    t = parir.max(e, t)
struct Accumulation {
  ReduceOp op;
  ExprPtr operand;  // e, negated for t -= e
};
std::optional<Accumulation> match(const ExprPtr& target, const ExprPtr& value);

// The type a reduction accumulates in: that of target op value (so 0.5s summed into an int32
// element add up before the one conversion at the store, as `out[0] = out[0] + x.sum()` does),
// widened as PyTorch's reductions widen: bool and small integers to int64, float16 and bfloat16
// to float32. The result is converted to the target's type once.
Type accumulator_type(Type so_far, Type value);

// a op b, for a reduction's operation: a + b, a * b, parir.min(a, b), parir.max(a, b), of `type`.
ExprPtr combine(ReduceOp op, ExprPtr a, ExprPtr b, Type type, Loc loc);

// The value x with x op v == v for every v of `type`: 0, 1, the type's largest value (or inf)
// for min, its smallest (or -inf) for max.
ExprPtr reduction_identity(ReduceOp op, Type type, Loc loc);

// Sets r.combined and r.acc_value from r.op, r.acc, r.acc_type and r.target: `combined` is
// target op acc computed in the accumulator's type and converted to the target's once (as
// seq=True rounds or wraps the final value); `acc_value`, what an atomic combination of several
// blocks adds in, is the accumulator converted to the target's type, clamped first for min and
// max into a narrower integer, so that a block that reduced nothing (its accumulator still the
// identity, INT64_MAX say) leaves the target as it is instead of storing the identity's
// truncated bits.
void combine_into_target(Reduction& r);

}  // namespace parir
