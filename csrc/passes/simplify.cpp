#include "passes/simplify.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/arith.h"
#include "ir/interval.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {

namespace {

// Python's // and % of floats as the prelude computes them (floordiv, mod), in T's precision.
template <typename T>
std::optional<double> fold_floor_div_or_mod(BinaryOp op, T a, T b) {
  if (b == T(0)) return std::nullopt;
  if (op == BinaryOp::FloorDiv) return static_cast<double>(std::floor(a / b));
  T r = std::fmod(a, b);
  return static_cast<double>((r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r);
}

std::optional<double> fold_float(BinaryOp op, double a, double b, ScalarType t) {
  // float16 and bfloat16 arithmetic is left to the GPU, which rounds as those types do.
  if (t != ScalarType::F32 && t != ScalarType::F64) return std::nullopt;
  const bool f32 = t == ScalarType::F32;
  double r;
  switch (op) {
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      return f32 ? fold_floor_div_or_mod<float>(op, static_cast<float>(a), static_cast<float>(b))
                 : fold_floor_div_or_mod<double>(op, a, b);
    case BinaryOp::Pow:
      // `beta1 ** t` of constants. Python raises where the result is not a finite real (0.0 **
      // -1, (-8.0) ** (1/3)); the GPU's NaN or infinity is left to it.
      r = f32 ? static_cast<double>(std::pow(static_cast<float>(a), static_cast<float>(b)))
              : std::pow(a, b);
      if (!std::isfinite(r)) return std::nullopt;
      break;
    case BinaryOp::Add:
      r = a + b;
      break;
    case BinaryOp::Sub:
      r = a - b;
      break;
    case BinaryOp::Mul:
      r = a * b;
      break;
    case BinaryOp::Div:
      if (b == 0.0) return std::nullopt;
      r = a / b;
      break;
    default:
      return std::nullopt;
  }
  // Fold in the precision the GPU would use.
  return f32 ? static_cast<double>(static_cast<float>(r)) : r;
}

std::optional<double> fold_math(Builtin f, const std::vector<ExprPtr>& args, ScalarType t) {
  if (t != ScalarType::F32 && t != ScalarType::F64) return std::nullopt;
  const bool f32 = t == ScalarType::F32;
  const double a = args[0]->as<FloatImm>()->value;
  const double b = args.size() > 1 ? args[1]->as<FloatImm>()->value : 0.0;
  double r;
  switch (f) {
    case Builtin::Sqrt: r = f32 ? std::sqrt(static_cast<float>(a)) : std::sqrt(a); break;
    case Builtin::Floor: r = std::floor(a); break;
    case Builtin::Ceil: r = std::ceil(a); break;
    case Builtin::Trunc: r = std::trunc(a); break;
    case Builtin::Round: r = std::nearbyint(a); break;  // to the nearest even, as rint
    case Builtin::Abs: r = std::fabs(a); break;
    // As the prelude's min and max: a NaN operand gives NaN, and of equal operands (0.0 and
    // -0.0) the first.
    case Builtin::Min: r = std::isnan(a) ? a : std::isnan(b) ? b : b < a ? b : a; break;
    case Builtin::Max: r = std::isnan(a) ? a : std::isnan(b) ? b : b > a ? b : a; break;
    default:
      if (f32) return std::nullopt;
      switch (f) {
        case Builtin::Exp: r = std::exp(a); break;
        case Builtin::Exp2: r = std::exp2(a); break;
        case Builtin::Log: r = std::log(a); break;
        case Builtin::Log2: r = std::log2(a); break;
        case Builtin::Log10: r = std::log10(a); break;
        case Builtin::Sin: r = std::sin(a); break;
        case Builtin::Cos: r = std::cos(a); break;
        case Builtin::Tan: r = std::tan(a); break;
        case Builtin::Tanh: r = std::tanh(a); break;
        case Builtin::Atan: r = std::atan(a); break;
        case Builtin::Atan2: r = std::atan2(a, b); break;
        case Builtin::Hypot: r = std::hypot(a, b); break;
        default: return std::nullopt;
      }
  }
  if (!std::isfinite(r) && std::isfinite(a) && std::isfinite(b)) return std::nullopt;
  return f32 ? static_cast<double>(static_cast<float>(r)) : r;
}

bool is_int_const(const ExprPtr& e, int64_t v) {
  auto i = e->as<IntImm>();
  return i && i->value == v;
}

class Simplify : public IRMutator {
 protected:
  ExprPtr mutate_node(const Binary* n, const ExprPtr& self) override {
    ExprPtr a = mutate(n->a), b = mutate(n->b);
    auto ia = a->as<IntImm>(), ib = b->as<IntImm>();
    // Only int64 is folded: narrower integers would need their own wrap-around, and uint64
    // its own comparisons, division and right shift.
    bool int64 = ia && ib && a->type.scalar == ScalarType::I64 &&
                 b->type.scalar == ScalarType::I64;
    if (int64) {
      if (auto c = compare(n->op, ia->value, ib->value)) return bool_imm(*c, n->loc);
      if (auto v = fold_int(n->op, ia->value, ib->value)) return int_imm(*v, n->loc, n->type);
    }
    if (is_comparison(n->op) && a->type.scalar == ScalarType::I64 &&
        b->type.scalar == ScalarType::I64)
      if (auto c = decided_by_loop_ranges(n->op, a, b)) return bool_imm(*c, n->loc);
    auto fa = a->as<FloatImm>(), fb = b->as<FloatImm>();
    if (fa && fb) {
      if (auto c = compare(n->op, fa->value, fb->value)) return bool_imm(*c, n->loc);
      if (auto v = fold_float(n->op, fa->value, fb->value, n->type.scalar))
        return float_imm(*v, n->loc, n->type);
    }
    // Expressions have no side effects, so a constant operand decides and/or alone.
    auto ba = a->as<BoolImm>(), bb = b->as<BoolImm>();
    if (n->op == BinaryOp::And && ba) return ba->value ? b : a;
    if (n->op == BinaryOp::And && bb) return bb->value ? a : b;
    if (n->op == BinaryOp::Or && ba) return ba->value ? a : b;
    if (n->op == BinaryOp::Or && bb) return bb->value ? b : a;
    if (is_int(n->type.scalar)) {
      if ((n->op == BinaryOp::Add || n->op == BinaryOp::Sub) && is_int_const(b, 0)) return a;
      if (n->op == BinaryOp::Add && is_int_const(a, 0)) return b;
      if ((n->op == BinaryOp::Mul || n->op == BinaryOp::FloorDiv) && is_int_const(b, 1)) return a;
      if (n->op == BinaryOp::Mul && is_int_const(a, 1)) return b;
    }
    if (a == n->a && b == n->b) return self;
    return binary(n->op, a, b, n->loc, n->type);
  }

  // A loop over a constant range: its variable's values, for the comparisons they decide (when
  // the body does not assign it).
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    const RangeEnv saved = ranges_;
    auto lo = mutate(n->lo)->as<IntImm>(), hi = mutate(n->hi)->as<IntImm>();
    auto step = mutate(n->step)->as<IntImm>();
    std::optional<Range> r;
    if (lo && hi && step && step->value > 0 && !assigned_names(n->body).count(n->var))
      r = loop_variable_range(lo->value, hi->value, step->value);
    if (r)
      ranges_[n->var] = *r;
    else
      ranges_.erase(n->var);
    StmtPtr out = IRMutator::mutate_node(n, self);
    ranges_ = saved;
    return out;
  }

  ExprPtr mutate_node(const Unary* n, const ExprPtr& self) override {
    ExprPtr a = mutate(n->a);
    if (n->op == UnaryOp::Not)
      if (auto b = a->as<BoolImm>()) return bool_imm(!b->value, n->loc);
    if (n->op == UnaryOp::Neg) {
      if (auto i = a->as<IntImm>(); i && size_in_bytes(i->type.scalar) == 8)
        return int_imm(wrap(0 - static_cast<uint64_t>(i->value)), n->loc, n->type);
      if (auto f = a->as<FloatImm>()) return float_imm(-f->value, n->loc, n->type);
    }
    if (a == n->a) return self;
    return std::make_shared<Unary>(n->op, a, n->type, n->loc);
  }

  // sqrt(64.0), floor(2.5), abs(-3.0): a math function of constants, where the host computes
  // what the GPU would. float64: the C library's double functions (Python's math module's too);
  // float32: only the functions IEEE rounds exactly (sqrt, rounding, abs, min, max), which every
  // library computes alike. Integers, halves and the other functions are left to the GPU.
  ExprPtr mutate_node(const Call* n, const ExprPtr& self) override {
    std::vector<ExprPtr> args;
    bool all_constant = true, changed = false;
    for (const auto& a : n->args) {
      args.push_back(mutate(a));
      changed = changed || args.back() != a;
      all_constant = all_constant && args.back()->as<FloatImm>();
    }
    if (all_constant)
      if (auto v = fold_math(n->fn, args, n->type.scalar)) return float_imm(*v, n->loc, n->type);
    if (!changed) return self;
    return std::make_shared<Call>(n->fn, std::move(args), n->type, n->loc);
  }

  ExprPtr mutate_node(const Select* n, const ExprPtr& self) override {
    ExprPtr c = mutate(n->cond);
    if (auto b = c->as<BoolImm>()) return mutate(b->value ? n->a : n->b);
    ExprPtr a = mutate(n->a), b = mutate(n->b);
    if (c == n->cond && a == n->a && b == n->b) return self;
    return std::make_shared<Select>(c, a, b, n->type, n->loc);
  }

  ExprPtr mutate_node(const Cast* n, const ExprPtr& self) override {
    ExprPtr a = mutate(n->a);
    ScalarType t = n->type.scalar;
    if (auto i = a->as<IntImm>()) {
      if (t == ScalarType::I64) return int_imm(i->value, n->loc, n->type);
      if (t == ScalarType::F64) {
        const bool u64 = i->type.scalar == ScalarType::U64;
        return float_imm(u64 ? static_cast<double>(static_cast<uint64_t>(i->value))
                             : static_cast<double>(i->value),
                         n->loc, n->type);
      }
    }
    if (auto f = a->as<FloatImm>()) {
      if (t == ScalarType::F64 || t == ScalarType::F32)
        return float_imm(t == ScalarType::F32 ? static_cast<float>(f->value) : f->value, n->loc,
                         n->type);
      if (t == ScalarType::I64 && std::isfinite(f->value) && std::fabs(f->value) < 9.2e18)
        return int_imm(static_cast<int64_t>(f->value), n->loc, n->type);
    }
    if (a == n->a) return self;
    return std::make_shared<Cast>(a, n->type, n->loc);
  }

  // `s = s`, what `s *= 1` or `s += 0` leave: nothing to do (and no accumulation that a
  // reduction loop would have to combine).
  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    StmtPtr out = IRMutator::mutate_node(n, self);
    auto a = out->as<Assign>();
    auto t = a->target->as<Var>(), v = a->value->as<Var>();
    if (t && v && t->name == v->name) return nullptr;
    return out;
  }

  StmtPtr mutate_node(const If* n, const StmtPtr& self) override {
    ExprPtr c = mutate(n->cond);
    if (auto b = c->as<BoolImm>()) {
      // Keep the branch taken under an always-true if; mutate(Body) splices it into place.
      Body taken = mutate(b->value ? n->then_body : n->else_body);
      if (taken.empty()) return nullptr;
      return std::make_shared<If>(bool_imm(true, n->loc), std::move(taken), Body{}, n->loc,
                                  n->labels);
    }
    StmtPtr out = IRMutator::mutate_node(n, self);
    // An if left with nothing to do (`if p > 5: t = t`, its one statement dropped above) whose
    // condition reads no memory and calls nothing external goes too: the launch plan has no
    // empty body to print for it.
    auto i = out->as<If>();
    if (i && i->then_body.empty() && i->else_body.empty() && i->labels.empty() &&
        !touches_memory(out))
      return nullptr;
    return out;
  }


 private:
  // `i < C.shape[0]` inside `for i in range(C.shape[0])`, as CUDA and Numba ports guard their
  // threads: true for every value of the loop's variable. (A guard left in place would also hide
  // the loop nest from the passes that match one, such as the matrix-product tiles.)
  std::optional<bool> decided_by_loop_ranges(BinaryOp op, const ExprPtr& a,
                                             const ExprPtr& b) const {
    if (ranges_.empty()) return std::nullopt;
    std::optional<Range> x = range_of(a, ranges_), y = range_of(b, ranges_);
    if (!x || !y) return std::nullopt;
    // Whether the comparison holds for all values (`always`), for none (`never`), or neither.
    auto decided = [](bool always, bool never) -> std::optional<bool> {
      if (always) return true;
      if (never) return false;
      return std::nullopt;
    };
    const bool apart = x->hi < y->lo || y->hi < x->lo;
    switch (op) {
      case BinaryOp::Lt: return decided(x->hi < y->lo, x->lo >= y->hi);
      case BinaryOp::Le: return decided(x->hi <= y->lo, x->lo > y->hi);
      case BinaryOp::Gt: return decided(x->lo > y->hi, x->hi <= y->lo);
      case BinaryOp::Ge: return decided(x->lo >= y->hi, x->hi < y->lo);
      case BinaryOp::Eq: return decided(false, apart);
      case BinaryOp::Ne: return decided(apart, false);
      default: break;
    }
    return std::nullopt;
  }

  RangeEnv ranges_;

 public:
  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : IRMutator::mutate(body)) {
      auto i = s->as<If>();
      auto c = i ? i->cond->as<BoolImm>() : nullptr;
      if (c && c->value && i->labels.empty())
        out.insert(out.end(), i->then_body.begin(), i->then_body.end());
      else
        out.push_back(s);
    }
    return out;
  }
  using IRMutator::mutate;
};

// Reads of the given locals replaced by their values: constants, or expressions of constants
// alone (which read nothing, so give the same value wherever they are computed).
class SubstituteConstants : public IRMutator {
 public:
  explicit SubstituteConstants(const std::map<std::string, ExprPtr>& v) : values_(v) {}

 protected:
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    auto it = values_.find(n->name);
    if (it == values_.end()) return self;
    if (auto i = it->second->as<IntImm>()) return int_imm(i->value, n->loc, n->type);
    if (auto f = it->second->as<FloatImm>()) return float_imm(f->value, n->loc, n->type);
    if (auto b = it->second->as<BoolImm>()) return bool_imm(b->value, n->loc);
    return it->second;
  }
  const std::map<std::string, ExprPtr>& values_;
};

// The one constant value that every binding of a local gives it, by name: assignments all of
// an expression of constants only, of the local's type, with the same text, and no label.
std::map<std::string, ExprPtr> constant_locals(const Body& body) {
  auto constant = [](const Assign* a) {
    return a && a->labels.empty() && pure_of(a->value, {}) &&
           a->value->type == a->target->type;
  };
  std::map<std::string, ExprPtr> values;
  for (const auto& [name, assignments] : local_bindings(body)) {
    const Assign* first = assignments.front();
    if (std::all_of(assignments.begin(), assignments.end(), [&](const Assign* a) {
          return constant(a) && to_string(a->value) == to_string(first->value);
        }))
      values[name] = first->value;
  }
  return values;
}

// Drops the assignments of the locals that became constants.
class DropAssignments : public IRMutator {
 public:
  explicit DropAssignments(const std::map<std::string, ExprPtr>& v) : values_(v) {}

 protected:
  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    auto v = n->target->as<Var>();
    if (v && values_.count(v->name)) return nullptr;
    return IRMutator::mutate_node(n, self);
  }
  const std::map<std::string, ExprPtr>& values_;
};

// `m, n = x.shape`, `scale = 0.5` or `correction = 1.0 - beta1 ** t` at the top of a function,
// or `step_div_Cap = step / Cap` at the top of a helper that each step of a host loop calls
// (inlined there, perhaps twice an iteration where the loop swaps buffers): a local that every
// assignment gives the same constant (or an expression of constants that simplify does not
// fold, such as a power or a square root) is that value everywhere. Its statements would
// otherwise run on the host, where only launches and loops around them run, or as one-thread
// kernels before every step. (A read before the first assignment, a NameError in Python,
// reads the value too.)
Body propagate_constant_locals(const Body& body) {
  std::map<std::string, ExprPtr> values = constant_locals(body);
  if (values.empty()) return body;
  return SubstituteConstants(values).mutate(DropAssignments(values).mutate(body));
}

}  // namespace

ExprPtr simplify(const ExprPtr& e) { return Simplify().mutate(e); }
Body simplify(const Body& body) { return Simplify().mutate(body); }
void simplify(SpecializedFunction& prog) {
  prog.body = simplify(prog.body);
  // `n = x.shape[0]; w = 1.0 / n`: each constant propagated may make another.
  for (Body b = propagate_constant_locals(prog.body); b != prog.body;
       b = propagate_constant_locals(prog.body))
    prog.body = simplify(b);
}

}  // namespace parir
