#include "ir/queries.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <type_traits>

#include "ir/arith.h"
#include "ir/launch_plan.h"
#include "ir/visitor.h"

namespace parir {
namespace {

class Mentions : public IRVisitor {
 public:
  explicit Mentions(const std::set<std::string>& vars) : vars_(vars) {}
  bool found = false;

 protected:
  const std::set<std::string>& vars_;
  void visit_node(const Var* n) override { found = found || vars_.count(n->name); }
};

class FindParallel : public IRVisitor {
 public:
  explicit FindParallel(bool gpu_blocks) : gpu_blocks_(gpu_blocks) {}
  bool found = false;

 protected:
  bool gpu_blocks_;
  void visit_node(const For* n) override {
    found = found || n->par.has_value();
    IRVisitor::visit_node(n);
  }
  void visit_node(const GpuBlock* n) override {
    found = found || gpu_blocks_;
    IRVisitor::visit_node(n);
  }
};

class FindStores : public IRVisitor {
 public:
  std::set<std::string> tensors;

 protected:
  void visit_node(const Assign* n) override {
    note(n->target);
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    note(n->target);
    IRVisitor::visit_node(n);
  }
  void visit_node(const WideStore* n) override {
    tensors.insert(n->tensor);
    IRVisitor::visit_node(n);
  }

 private:
  void note(const ExprPtr& target) {
    if (auto load = target->as<Load>()) tensors.insert(load->tensor);
    if (auto load = target->as<FlatLoad>()) tensors.insert(load->tensor);
  }
};

}  // namespace

bool mentions(const ExprPtr& e, const std::set<std::string>& vars) {
  Mentions m(vars);
  m.visit(e);
  return m.found;
}

bool pure_of(const ExprPtr& e, const std::set<std::string>& variables) {
  if (e->as<IntImm>() || e->as<FloatImm>() || e->as<BoolImm>()) return true;
  if (auto v = e->as<Var>()) return variables.count(v->name) > 0;
  if (auto u = e->as<Unary>()) return pure_of(u->a, variables);
  if (auto b = e->as<Binary>()) return pure_of(b->a, variables) && pure_of(b->b, variables);
  if (auto c = e->as<Cast>()) return pure_of(c->a, variables);
  if (auto s = e->as<Select>())
    return pure_of(s->cond, variables) && pure_of(s->a, variables) && pure_of(s->b, variables);
  if (auto c = e->as<Call>()) {
    for (const auto& a : c->args)
      if (!pure_of(a, variables)) return false;
    return true;
  }
  return false;
}

bool contains_parallel_code(const Body& body, bool gpu_blocks) {
  FindParallel f(gpu_blocks);
  f.visit(body);
  return f.found;
}

size_t scan_element_statements(const For& scan_loop) {
  const std::string& value = scan_loop.reduction->value;
  size_t n = 0;
  while (n < scan_loop.body.size()) {
    auto a = scan_loop.body[n++]->as<Assign>();
    if (a && a->target->as<Var>() && a->target->as<Var>()->name == value) break;
  }
  return n;
}

std::set<std::string> stored_tensors(const Body& body) {
  FindStores f;
  f.visit(body);
  return f.tensors;
}

namespace {

class Names : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_node(const Var* n) override { names.insert(n->name); }
  void visit_node(const Load* n) override {
    names.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
  void visit_node(const FlatLoad* n) override {
    names.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    names.insert(n->var);
    if (n->reduction) names.insert(n->reduction->acc);
    if (n->reduction && n->reduction->scan)
      names.insert({n->reduction->value, n->reduction->exclusive, n->reduction->inclusive});
    IRVisitor::visit_node(n);
  }
};

class Calls : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_node(const CallFunction* n) override {
    names.insert(n->name);
    IRVisitor::visit_node(n);
  }
};

}  // namespace

namespace {

// Finds a node of one kind: an ExprKind or a StmtKind.
template <typename Kind>
struct KindFinder : IRVisitor {
  Kind kind;
  bool found = false;
  explicit KindFinder(Kind k) : kind(k) {}
  template <typename K>
  bool is(K k) const {
    if constexpr (std::is_same_v<K, Kind>) return k == kind;
    return false;
  }
#define X(n)                                 \
  void visit_node(const n* node) override {  \
    found = found || is(n::static_kind);     \
    IRVisitor::visit_node(node);             \
  }
  PARIR_FOR_EACH_EXPR(X)
  PARIR_FOR_EACH_STMT(X)
#undef X
};

}  // namespace

bool touches_memory(const StmtPtr& s) {
  class Find : public IRVisitor {
   public:
    bool found = false;

   protected:
    void visit_node(const Load*) override { found = true; }
    void visit_node(const FlatLoad*) override { found = true; }
    void visit_node(const ExternCall*) override { found = true; }
    void visit_node(const CallFunction*) override { found = true; }
    void visit_node(const WideLoad*) override { found = true; }
    void visit_node(const WideStore*) override { found = true; }
    void visit_node(const AtomicUpdate*) override { found = true; }
    void visit_node(const GpuBlock*) override { found = true; }
    void visit_node(const For* n) override {
      if (n->reduction && (!n->reduction->target->as<Var>() || n->reduction->scan)) found = true;
      IRVisitor::visit_node(n);
    }
  } f;
  f.visit(s);
  return f.found;
}

bool contains(const Body& body, StmtKind kind) {
  KindFinder<StmtKind> finder(kind);
  finder.visit(body);
  return finder.found;
}

bool contains(const Body& body, ExprKind kind) {
  KindFinder<ExprKind> finder(kind);
  finder.visit(body);
  return finder.found;
}

bool contains(const ExprPtr& e, ExprKind kind) {
  KindFinder<ExprKind> finder(kind);
  finder.visit(e);
  return finder.found;
}

std::set<std::string> names_in(const Body& body) {
  Names v;
  v.visit(body);
  return std::move(v.names);
}

std::set<std::string> called_names(const Body& body) {
  Calls v;
  v.visit(body);
  return std::move(v.names);
}

bool contains_reduction(const StmtPtr& s) {
  class Find : public IRVisitor {
   public:
    bool found = false;

   protected:
    void visit_node(const For* n) override {
      found = found || (n->reduction && !n->reduction->scan);
      IRVisitor::visit_node(n);
    }
  } f;
  f.visit(s);
  return f.found;
}

std::optional<int64_t> constant_trip_count(const For& loop) {
  auto lo = loop.lo->as<IntImm>();
  auto hi = loop.hi->as<IntImm>();
  auto step = loop.step->as<IntImm>();
  constexpr int64_t kLimit = int64_t{1} << 60;  // no overflow below
  if (!lo || !hi || !step || step->value == 0 || std::abs(lo->value) > kLimit ||
      std::abs(hi->value) > kLimit || std::abs(step->value) > kLimit)
    return std::nullopt;
  const int64_t span = step->value > 0 ? hi->value - lo->value : lo->value - hi->value;
  const int64_t stride = std::abs(step->value);
  return span <= 0 ? 0 : (span + stride - 1) / stride;
}

namespace {

class Assigned : public IRVisitor {
 public:
  explicit Assigned(bool loop_variables) : loop_variables_(loop_variables) {}
  std::set<std::string> names;

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) names.insert(v->name);
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    if (n->result) names.insert(n->result->as<Var>()->name);
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    if (loop_variables_) names.insert(n->var);
    IRVisitor::visit_node(n);
  }

 private:
  bool loop_variables_;
};

}  // namespace

std::set<std::string> assigned_names(const Body& body) {
  Assigned a(/*loop_variables=*/true);
  a.visit(body);
  return a.names;
}

std::set<std::string> assigned_locals(const Body& body) {
  Assigned a(/*loop_variables=*/false);
  a.visit(body);
  return a.names;
}

std::map<std::string, std::vector<const Assign*>> local_bindings(const Body& body) {
  class Bindings : public IRVisitor {
   public:
    std::map<std::string, std::vector<const Assign*>> of;

   protected:
    void visit_node(const Assign* n) override {
      if (auto v = n->target->as<Var>()) of[v->name].push_back(n);
      IRVisitor::visit_node(n);
    }
    void visit_node(const For* n) override {
      of[n->var].push_back(nullptr);
      IRVisitor::visit_node(n);
    }
    void visit_node(const AtomicUpdate* n) override {
      if (n->result) of[n->result->as<Var>()->name].push_back(nullptr);
      IRVisitor::visit_node(n);
    }
  } b;
  b.visit(body);
  return b.of;
}

std::vector<const Assign*> single_assignments_at_top(const Body& body) {
  auto bindings = local_bindings(body);
  std::vector<const Assign*> out;
  for (const auto& s : body) {
    auto a = s->as<Assign>();
    auto v = a ? a->target->as<Var>() : nullptr;
    if (v && bindings[v->name].size() == 1 && s->labels.empty()) out.push_back(a);
  }
  return out;
}

std::optional<int64_t> coefficient(const ExprPtr& e, const std::string& v) {
  if (!mentions(e, {v})) return 0;
  if (auto x = e->as<Var>()) return x->name == v ? 1 : 0;
  if (auto c = e->as<Cast>()) return is_int(c->type.scalar) ? coefficient(c->a, v) : std::nullopt;
  if (auto u = e->as<Unary>(); u && u->op == UnaryOp::Neg) {
    auto a = coefficient(u->a, v);
    return a ? std::optional<int64_t>(-*a) : std::nullopt;
  }
  auto b = e->as<Binary>();
  if (!b) return std::nullopt;
  auto a = coefficient(b->a, v), c = coefficient(b->b, v);
  if (!a || !c) return std::nullopt;
  switch (b->op) {
    case BinaryOp::Add:
      return *a + *c;
    case BinaryOp::Sub:
      return *a - *c;
    case BinaryOp::Mul:
      if (auto k = b->b->as<IntImm>()) return *a * k->value;
      if (auto k = b->a->as<IntImm>()) return *c * k->value;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}


int64_t known_power_of_two_divisor(const ExprPtr& e) {
  constexpr int64_t kAll = int64_t{1} << 30;
  if (auto i = e->as<IntImm>()) {
    if (i->value == 0) return kAll;
    const uint64_t bits = static_cast<uint64_t>(i->value);
    return static_cast<int64_t>(std::min<uint64_t>(bits & (~bits + 1), kAll));
  }
  if (auto c = e->as<Cast>())
    return is_int(c->type.scalar) && is_int(c->a->type.scalar) &&
                   size_in_bytes(c->type.scalar) >= size_in_bytes(c->a->type.scalar)
               ? known_power_of_two_divisor(c->a)
               : 1;
  if (auto u = e->as<Unary>(); u && u->op == UnaryOp::Neg) return known_power_of_two_divisor(u->a);
  auto b = e->as<Binary>();
  if (!b || !is_int(b->type.scalar)) return 1;
  const int64_t x = known_power_of_two_divisor(b->a), y = known_power_of_two_divisor(b->b);
  switch (b->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return std::min(x, y);
    case BinaryOp::Mul:
      return std::min(x * y, kAll);  // each at most 2^30: no overflow
    default:
      return 1;
  }
}

namespace {

// An integer expression as a sum of terms (each by its printed form, with how many times it is
// added, less how many times it is subtracted) and a constant.
struct SumOfTerms {
  std::map<std::string, int64_t> terms;
  int64_t constant = 0;

  void add(const ExprPtr& e, int64_t sign) {
    if (auto i = e->as<IntImm>()) {
      constant = wrap(static_cast<uint64_t>(constant) +
                      static_cast<uint64_t>(sign) * static_cast<uint64_t>(i->value));
      return;
    }
    auto b = e->as<Binary>();
    if (b && is_int(b->type.scalar) && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)) {
      add(b->a, sign);
      add(b->b, b->op == BinaryOp::Sub ? -sign : sign);
      return;
    }
    // A product by a constant multiplies each term: (i - 1) * 16384 is i * 16384 - 16384.
    if (b && is_int(b->type.scalar) && b->op == BinaryOp::Mul) {
      const IntImm* c = b->b->as<IntImm>() ? b->b->as<IntImm>() : b->a->as<IntImm>();
      if (c) {
        add(c == b->b->as<IntImm>() ? b->a : b->b,
            static_cast<int64_t>(static_cast<uint64_t>(sign) * static_cast<uint64_t>(c->value)));
        return;
      }
    }
    const std::string term = to_string(e);
    if ((terms[term] = wrap(static_cast<uint64_t>(terms[term]) + static_cast<uint64_t>(sign))) == 0)
      terms.erase(term);
  }
};

}  // namespace

std::optional<int64_t> constant_difference(const ExprPtr& a, const ExprPtr& b) {
  SumOfTerms x, y;
  x.add(a, 1);
  y.add(b, 1);
  if (x.terms != y.terms) return std::nullopt;
  return wrap(static_cast<uint64_t>(x.constant) - static_cast<uint64_t>(y.constant));
}

std::string access_key(const FlatLoad& l) { return l.tensor + "@" + to_string(l.offset); }

void unconditional_loads(const ExprPtr& e, std::vector<const FlatLoad*>& out) {
  if (!e) return;
  if (auto l = e->as<FlatLoad>()) {
    unconditional_loads(l->offset, out);
    out.push_back(l);
  } else if (auto s = e->as<Select>()) {
    unconditional_loads(s->cond, out);
  } else if (auto b = e->as<Binary>()) {
    unconditional_loads(b->a, out);
    if (!is_logical(b->op)) unconditional_loads(b->b, out);
  } else if (auto u = e->as<Unary>()) {
    unconditional_loads(u->a, out);
  } else if (auto c = e->as<Cast>()) {
    unconditional_loads(c->a, out);
  } else if (auto c = e->as<Call>()) {
    for (const auto& a : c->args) unconditional_loads(a, out);
  }
}

std::optional<int64_t> integer_value(const ExprPtr& e,
                                     const std::map<std::string, int64_t>& values) {
  if (!e) return std::nullopt;
  if (auto i = e->as<IntImm>()) return i->value;
  if (auto v = e->as<Var>()) {
    auto it = values.find(v->name);
    return it == values.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  if (auto u = e->as<Unary>(); u && u->op == UnaryOp::Neg) {
    auto a = integer_value(u->a, values);
    return a ? std::optional<int64_t>(wrap(0 - static_cast<uint64_t>(*a))) : std::nullopt;
  }
  if (auto b = e->as<Binary>()) {
    auto x = integer_value(b->a, values), y = integer_value(b->b, values);
    if (!x || !y) return std::nullopt;
    if (auto c = compare(b->op, *x, *y)) return *c ? 1 : 0;
    return fold_int(b->op, *x, *y);
  }
  return std::nullopt;
}

namespace {

class HostComputability : public IRVisitor {
 public:
  explicit HostComputability(const std::set<std::string>& names) : names_(names) {}
  std::optional<NotOnHost> found;

 protected:
  void fault(NotOnHost::Reason reason, const ExprNode* n) {
    if (!found) found = NotOnHost{reason, n};
  }
  // The node's own value first, then its operands'.
  void no_float(const ExprNode* n) {
    if (is_float(n->type.scalar)) fault(NotOnHost::Reason::Float, n);
  }
  void visit_node(const Var* n) override {
    if (!names_.count(n->name)) fault(NotOnHost::Reason::GpuValue, n);
    no_float(n);
  }
  void visit_node(const Load* n) override { fault(NotOnHost::Reason::TensorData, n); }
  void visit_node(const FloatImm* n) override { no_float(n); }
  void visit_node(const Unary* n) override {
    no_float(n);
    IRVisitor::visit_node(n);
  }
  void visit_node(const Binary* n) override {
    no_float(n);
    IRVisitor::visit_node(n);
  }
  void visit_node(const Call* n) override {
    no_float(n);
    if (!is_host_builtin(n->fn)) fault(NotOnHost::Reason::Builtin, n);
    IRVisitor::visit_node(n);
  }
  void visit_node(const Cast* n) override {
    no_float(n);
    IRVisitor::visit_node(n);
  }
  void visit_node(const Select* n) override {
    no_float(n);
    IRVisitor::visit_node(n);
  }
  void visit_node(const ExternCall* n) override { fault(NotOnHost::Reason::Extern, n); }

 private:
  const std::set<std::string>& names_;
};

}  // namespace

std::optional<NotOnHost> why_not_on_host(const ExprPtr& e,
                                         const std::set<std::string>& host_names) {
  HostComputability c(host_names);
  c.visit(e);
  return c.found;
}

}  // namespace parir
