#include "ir/visitor.h"

namespace parir {

// ---------------------------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit(const ExprPtr& e) {
  if (!e) return;
  switch (e->kind) {
#define X(n)                                    \
  case ExprKind::n:                             \
    visit_node(static_cast<const n*>(e.get())); \
    break;
    PARIR_FOR_EACH_EXPR(X)
#undef X
  }
}

void IRVisitor::visit(const StmtPtr& s) {
  if (!s) return;
  switch (s->kind) {
#define X(n)                                    \
  case StmtKind::n:                             \
    visit_node(static_cast<const n*>(s.get())); \
    break;
    PARIR_FOR_EACH_STMT(X)
#undef X
  }
}

void IRVisitor::visit(const Body& body) {
  for (const auto& s : body) visit(s);
}

void IRVisitor::visit_node(const IntImm*) {}
void IRVisitor::visit_node(const FloatImm*) {}
void IRVisitor::visit_node(const BoolImm*) {}
void IRVisitor::visit_node(const Var*) {}
void IRVisitor::visit_node(const TensorShape*) {}
void IRVisitor::visit_node(const IsNone*) {}
void IRVisitor::visit_node(const PointersAligned*) {}
void IRVisitor::visit_node(const Load* n) {
  for (const auto& i : n->indices) visit(i);
}
void IRVisitor::visit_node(const FlatLoad* n) {
  visit(n->offset);
  for (const auto& c : n->checks) visit(c.index);
}
void IRVisitor::visit_node(const Unary* n) { visit(n->a); }
void IRVisitor::visit_node(const Binary* n) {
  visit(n->a);
  visit(n->b);
}
void IRVisitor::visit_node(const Call* n) {
  for (const auto& a : n->args) visit(a);
}
void IRVisitor::visit_node(const Cast* n) { visit(n->a); }
void IRVisitor::visit_node(const Select* n) {
  visit(n->cond);
  visit(n->a);
  visit(n->b);
}
void IRVisitor::visit_node(const Slice* n) {
  visit(n->lo);
  visit(n->hi);
  visit(n->step);
}
void IRVisitor::visit_node(const SliceReduce* n) { visit(n->arg); }
void IRVisitor::visit_node(const CallFunction* n) {
  for (const auto& a : n->args) visit(a);
  for (const auto& t : n->unpacked_into) visit(t);
}
void IRVisitor::visit_node(const ExternCall* n) {
  for (const auto& a : n->args) visit(a);
}
void IRVisitor::visit_node(const Return* n) {
  visit(n->value);
  for (const auto& e : n->elements) visit(e);
}
void IRVisitor::visit_node(const ExprStmt* n) { visit(n->value); }
void IRVisitor::visit_node(const AtomicUpdate* n) {
  visit(n->target);
  visit(n->compare);
  visit(n->value);
  visit(n->result);
}
void IRVisitor::visit_node(const WideLoad* n) { visit(n->offset); }
void IRVisitor::visit_node(const WideStore* n) {
  visit(n->offset);
  for (const auto& v : n->values) visit(v);
}
void IRVisitor::visit_node(const Assign* n) {
  visit(n->target);
  visit(n->value);
}
void IRVisitor::visit_node(const For* n) {
  visit(n->lo);
  visit(n->hi);
  visit(n->step);
  visit(n->body);
}
void IRVisitor::visit_node(const While* n) {
  visit(n->cond);
  visit(n->body);
}
void IRVisitor::visit_node(const If* n) {
  visit(n->cond);
  visit(n->then_body);
  visit(n->else_body);
}
void IRVisitor::visit_node(const GpuBlock* n) { visit(n->body); }

// ---------------------------------------------------------------------------------------------
// IRMutator

ExprPtr IRMutator::mutate(const ExprPtr& e) {
  if (!e) return e;
  switch (e->kind) {
#define X(n)         \
  case ExprKind::n:  \
    return mutate_node(static_cast<const n*>(e.get()), e);
    PARIR_FOR_EACH_EXPR(X)
#undef X
  }
  return e;
}

StmtPtr IRMutator::mutate(const StmtPtr& s) {
  if (!s) return s;
  switch (s->kind) {
#define X(n)         \
  case StmtKind::n:  \
    return mutate_node(static_cast<const n*>(s.get()), s);
    PARIR_FOR_EACH_STMT(X)
#undef X
  }
  return s;
}

Body IRMutator::mutate(const Body& body) {
  Body out;
  out.reserve(body.size());
  for (const auto& s : body) {
    StmtPtr m = mutate(s);
    if (m) out.push_back(std::move(m));
  }
  return out;
}

void AssignmentsOnly::visit_node(const For*) { ok = false; }
void AssignmentsOnly::visit_node(const While*) { ok = false; }
void AssignmentsOnly::visit_node(const If* node) {
  if (allow_ifs_)
    IRVisitor::visit_node(node);
  else
    ok = false;
}
void AssignmentsOnly::visit_node(const GpuBlock*) { ok = false; }
void AssignmentsOnly::visit_node(const Return*) { ok = false; }
void AssignmentsOnly::visit_node(const ExprStmt*) { ok = false; }
void AssignmentsOnly::visit_node(const AtomicUpdate*) { ok = false; }
void AssignmentsOnly::visit_node(const WideLoad*) { ok = false; }
void AssignmentsOnly::visit_node(const WideStore*) { ok = false; }
void AssignmentsOnly::visit_node(const ExternCall*) { ok = false; }

namespace {

bool same(const Body& a, const Body& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

bool same(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace

ExprPtr IRMutator::mutate_node(const IntImm*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const FloatImm*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const BoolImm*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const Var*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const TensorShape*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const IsNone*, const ExprPtr& self) { return self; }
ExprPtr IRMutator::mutate_node(const PointersAligned*, const ExprPtr& self) { return self; }

ExprPtr IRMutator::mutate_node(const Load* n, const ExprPtr& self) {
  std::vector<ExprPtr> idx;
  for (const auto& i : n->indices) idx.push_back(mutate(i));
  if (same(idx, n->indices)) return self;
  return std::make_shared<Load>(n->tensor, std::move(idx), n->type, n->loc, n->in_bounds);
}

ExprPtr IRMutator::mutate_node(const FlatLoad* n, const ExprPtr& self) {
  ExprPtr offset = mutate(n->offset);
  std::vector<IndexCheck> checks = n->checks;
  bool changed = offset != n->offset;
  for (auto& c : checks) {
    ExprPtr i = mutate(c.index);
    changed = changed || i != c.index;
    c.index = std::move(i);
  }
  if (!changed) return self;
  return std::make_shared<FlatLoad>(n->tensor, std::move(offset), n->type, n->loc,
                                    std::move(checks));
}

ExprPtr IRMutator::mutate_node(const Unary* n, const ExprPtr& self) {
  ExprPtr a = mutate(n->a);
  if (a == n->a) return self;
  return std::make_shared<Unary>(n->op, a, n->type, n->loc);
}

ExprPtr IRMutator::mutate_node(const Binary* n, const ExprPtr& self) {
  ExprPtr a = mutate(n->a), b = mutate(n->b);
  if (a == n->a && b == n->b) return self;
  return std::make_shared<Binary>(n->op, a, b, n->type, n->loc);
}

ExprPtr IRMutator::mutate_node(const Call* n, const ExprPtr& self) {
  std::vector<ExprPtr> args;
  for (const auto& a : n->args) args.push_back(mutate(a));
  if (same(args, n->args)) return self;
  return std::make_shared<Call>(n->fn, std::move(args), n->type, n->loc);
}

ExprPtr IRMutator::mutate_node(const Cast* n, const ExprPtr& self) {
  ExprPtr a = mutate(n->a);
  if (a == n->a) return self;
  return std::make_shared<Cast>(a, n->type, n->loc);
}

ExprPtr IRMutator::mutate_node(const Select* n, const ExprPtr& self) {
  ExprPtr c = mutate(n->cond), a = mutate(n->a), b = mutate(n->b);
  if (c == n->cond && a == n->a && b == n->b) return self;
  return std::make_shared<Select>(c, a, b, n->type, n->loc);
}

ExprPtr IRMutator::mutate_node(const Slice* n, const ExprPtr& self) {
  ExprPtr lo = mutate(n->lo), hi = mutate(n->hi), step = mutate(n->step);
  if (lo == n->lo && hi == n->hi && step == n->step) return self;
  return std::make_shared<Slice>(lo, hi, step, n->loc);
}

ExprPtr IRMutator::mutate_node(const SliceReduce* n, const ExprPtr& self) {
  ExprPtr a = mutate(n->arg);
  if (a == n->arg) return self;
  return std::make_shared<SliceReduce>(n->op, a, n->axis, n->loc, n->index, n->scan,
                                       n->exclusive);
}

ExprPtr IRMutator::mutate_node(const CallFunction* n, const ExprPtr& self) {
  std::vector<ExprPtr> args, into;
  for (const auto& a : n->args) args.push_back(mutate(a));
  for (const auto& t : n->unpacked_into) into.push_back(mutate(t));
  if (same(args, n->args) && same(into, n->unpacked_into)) return self;
  return std::make_shared<CallFunction>(n->name, std::move(args), n->loc, std::move(into));
}

ExprPtr IRMutator::mutate_node(const ExternCall* n, const ExprPtr& self) {
  std::vector<ExprPtr> args;
  for (const auto& a : n->args) args.push_back(mutate(a));
  if (same(args, n->args)) return self;
  return std::make_shared<ExternCall>(n->fn, std::move(args), n->loc);
}

StmtPtr IRMutator::mutate_node(const Return* n, const StmtPtr& self) {
  if (!n->elements.empty()) {
    std::vector<ExprPtr> elements;
    for (const auto& e : n->elements) elements.push_back(mutate(e));
    if (same(elements, n->elements)) return self;
    return std::make_shared<Return>(std::move(elements), n->loc, n->labels);
  }
  ExprPtr v = mutate(n->value);
  if (v == n->value) return self;
  return std::make_shared<Return>(v, n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const ExprStmt* n, const StmtPtr& self) {
  ExprPtr v = mutate(n->value);
  if (v == n->value) return self;
  return std::make_shared<ExprStmt>(v, n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const WideLoad* n, const StmtPtr& self) {
  ExprPtr offset = mutate(n->offset);
  if (offset == n->offset) return self;
  return std::make_shared<WideLoad>(n->tensor, offset, n->targets, n->loc);
}

StmtPtr IRMutator::mutate_node(const WideStore* n, const StmtPtr& self) {
  ExprPtr offset = mutate(n->offset);
  std::vector<ExprPtr> values;
  for (const auto& v : n->values) values.push_back(mutate(v));
  if (offset == n->offset && same(values, n->values)) return self;
  return std::make_shared<WideStore>(n->tensor, offset, std::move(values), n->loc);
}

StmtPtr IRMutator::mutate_node(const AtomicUpdate* n, const StmtPtr& self) {
  ExprPtr t = mutate(n->target), c = mutate(n->compare), v = mutate(n->value);
  ExprPtr r = mutate(n->result);
  if (t == n->target && c == n->compare && v == n->value && r == n->result) return self;
  return std::make_shared<AtomicUpdate>(n->op, t, v, c, r, n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const Assign* n, const StmtPtr& self) {
  ExprPtr t = mutate(n->target), v = mutate(n->value);
  if (t == n->target && v == n->value) return self;
  return std::make_shared<Assign>(t, v, n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const For* n, const StmtPtr& self) {
  ExprPtr lo = mutate(n->lo), hi = mutate(n->hi), step = mutate(n->step);
  Body body = mutate(n->body);
  if (lo == n->lo && hi == n->hi && step == n->step && same(body, n->body)) return self;
  auto f = std::make_shared<For>(n->var, lo, hi, step, std::move(body), n->loc, n->labels, n->par,
                                 n->reduction);
  f->unroll = n->unroll;
  return f;
}

StmtPtr IRMutator::mutate_node(const While* n, const StmtPtr& self) {
  ExprPtr c = mutate(n->cond);
  Body body = mutate(n->body);
  if (c == n->cond && same(body, n->body)) return self;
  return std::make_shared<While>(c, std::move(body), n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const If* n, const StmtPtr& self) {
  ExprPtr c = mutate(n->cond);
  Body t = mutate(n->then_body), e = mutate(n->else_body);
  if (c == n->cond && same(t, n->then_body) && same(e, n->else_body)) return self;
  return std::make_shared<If>(c, std::move(t), std::move(e), n->loc, n->labels);
}

StmtPtr IRMutator::mutate_node(const GpuBlock* n, const StmtPtr& self) {
  Body body = mutate(n->body);
  if (same(body, n->body)) return self;
  return std::make_shared<GpuBlock>(std::move(body), n->loc, n->labels);
}

}  // namespace parir
