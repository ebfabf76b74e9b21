#include "passes/simplify.h"

#include <cmath>
#include <map>

#include "ir/arith.h"
#include "ir/visitor.h"

namespace parir {

namespace {

std::optional<double> fold_float(BinaryOp op, double a, double b, ScalarType t) {
  // float16 and bfloat16 arithmetic is left to the GPU, which rounds as those types do.
  if (t != ScalarType::F32 && t != ScalarType::F64) return std::nullopt;
  double r;
  switch (op) {
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
  return t == ScalarType::F32 ? static_cast<double>(static_cast<float>(r)) : r;
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
    // Only 64-bit integers are folded: narrower ones would need their own wrap-around.
    bool int64 = ia && ib && a->type.scalar == b->type.scalar &&
                 size_in_bytes(a->type.scalar) == 8;
    if (int64) {
      if (auto c = compare(n->op, ia->value, ib->value)) return bool_imm(*c, n->loc);
      if (auto v = fold_int(n->op, ia->value, ib->value)) return int_imm(*v, n->loc, n->type);
    }
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
      if (t == ScalarType::F64) return float_imm(static_cast<double>(i->value), n->loc, n->type);
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
    return IRMutator::mutate_node(n, self);
  }


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

// How many times each local is assigned (a loop variable and an atomic update's old value
// count too), anywhere.
class AssignmentCount : public IRVisitor {
 public:
  std::map<std::string, int> count;

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) ++count[v->name];
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    ++count[n->var];
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    if (n->result) ++count[n->result->as<Var>()->name];
    IRVisitor::visit_node(n);
  }
};

// Reads of the given locals replaced by their constant values.
class SubstituteConstants : public IRMutator {
 public:
  explicit SubstituteConstants(const std::map<std::string, ExprPtr>& v) : values_(v) {}

 protected:
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    auto it = values_.find(n->name);
    if (it == values_.end()) return self;
    if (auto i = it->second->as<IntImm>()) return int_imm(i->value, n->loc, n->type);
    if (auto f = it->second->as<FloatImm>()) return float_imm(f->value, n->loc, n->type);
    return bool_imm(it->second->as<BoolImm>()->value, n->loc);
  }
  const std::map<std::string, ExprPtr>& values_;
};

// `m, n = x.shape` or `scale = 0.5` at the top of a function: a local given a constant once,
// by a statement of the function's own body, is that constant everywhere. The statement would
// otherwise run on the host, where only launches and loops around them run.
Body propagate_constant_locals(const Body& body) {
  AssignmentCount counts;
  counts.visit(body);
  std::map<std::string, ExprPtr> values;
  Body rest;
  for (const auto& s : body) {
    auto a = s->as<Assign>();
    auto v = a ? a->target->as<Var>() : nullptr;
    const bool constant = a && (a->value->as<IntImm>() || a->value->as<FloatImm>() ||
                                a->value->as<BoolImm>());
    if (v && constant && counts.count[v->name] == 1 && s->labels.empty())
      values[v->name] = a->value;
    else
      rest.push_back(s);
  }
  if (values.empty()) return body;
  return SubstituteConstants(values).mutate(rest);
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
