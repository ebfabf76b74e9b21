#include "passes/fold_none_tests.h"

#include <map>
#include <optional>
#include <set>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// How many times the function assigns each local (loop variables and atomic results included).
class AssignmentCounts : public IRVisitor {
 public:
  std::map<std::string, int> count;

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) ++count[v->name];
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    if (n->result) ++count[n->result->as<Var>()->name];
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    ++count[n->var];
    IRVisitor::visit_node(n);
  }
};

// Whether an expression reads one of the given locals.
class ReadsLocal : public IRVisitor {
 public:
  explicit ReadsLocal(const std::map<std::string, bool>& locals) : locals_(locals) {}
  bool found = false;

 protected:
  void visit_node(const Var* n) override { found = found || locals_.count(n->name); }
  const std::map<std::string, bool>& locals_;
};

class NoneFolder : public IRMutator {
 public:
  NoneFolder(const Function& fn, std::set<std::string> nones, std::set<std::string> none_locals)
      : fn_(fn), nones_(std::move(nones)), none_locals_(std::move(none_locals)) {
    AssignmentCounts counts;
    counts.visit(fn.body);
    assignments_ = std::move(counts.count);
  }

  using IRMutator::mutate;

  // An if that a test of None decides is replaced by the branch taken; the other branch, which
  // may use the argument that is None, is dropped unread.
  Body mutate(const Body& body) override {
    Body out;
    for (const StmtPtr& s : body) {
      if (auto i = s->as<If>()) {
        ExprPtr cond = mutate(i->cond);
        if (std::optional<bool> known = known_truth(i->cond, cond)) {
          Body taken = mutate(*known ? i->then_body : i->else_body);
          if (!i->labels.empty())  // kept as a statement, for the labels
            out.push_back(std::make_shared<If>(bool_imm(true, i->loc), std::move(taken), Body{},
                                               i->loc, i->labels));
          else
            out.insert(out.end(), taken.begin(), taken.end());
          continue;
        }
      }
      if (StmtPtr m = mutate(s)) out.push_back(std::move(m));
    }
    return out;
  }

 protected:
  const Function& fn_;
  const std::set<std::string> nones_;        // the arguments that are None
  const std::set<std::string> none_locals_;  // those of them the function assigns
  std::map<std::string, int> assignments_;
  std::map<std::string, bool> known_locals_;  // locals that hold a decided test
  std::set<std::string> assigned_;            // none_locals_ assigned so far
  int loop_depth_ = 0, branch_depth_ = 0;

  [[noreturn]] void error(const Loc& loc, const std::string& msg) const {
    throw_at(loc.src ? *loc.src : *fn_.source, loc, msg);
  }

  // The truth of a condition that tests of None decided (the tests, the locals holding them,
  // and what `not`, `and` and `or` make of those); nullopt for any other condition.
  std::optional<bool> known_truth(const ExprPtr& original, const ExprPtr& cond) const {
    ReadsLocal reads(known_locals_);
    reads.visit(original);
    if (!reads.found && !contains(original, ExprKind::IsNone)) return std::nullopt;
    if (auto b = cond->as<BoolImm>()) return b->value;
    if (auto u = cond->as<Unary>(); u && u->op == UnaryOp::Not)
      if (auto b = u->a->as<BoolImm>()) return !b->value;
    return std::nullopt;
  }

  ExprPtr mutate_node(const IsNone* n, const ExprPtr&) override {
    if (none_locals_.count(n->name) && (loop_depth_ > 0 || assigned_.count(n->name)))
      error(n->loc, fmt::format("`{} is None` is decided when {}() compiles, and '{}' is None "
                                "in this call: a function that assigns it can test it only "
                                "before its loops and before the assignment",
                                display_name(n->name), fn_.name, display_name(n->name)));
    return bool_imm(n->name == "None" || nones_.count(n->name) > 0, n->loc);
  }

  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    auto known = known_locals_.find(n->name);
    return known == known_locals_.end() ? self : bool_imm(known->second, n->loc);
  }

  // `c and e`, `c or e` whose left side is decided: the right side only where Python
  // evaluates it (`b is not None and b[i] > 0` with b None never reads b).
  ExprPtr mutate_node(const Binary* n, const ExprPtr& self) override {
    if (n->op != BinaryOp::And && n->op != BinaryOp::Or) return IRMutator::mutate_node(n, self);
    ExprPtr a = mutate(n->a);
    if (std::optional<bool> left = known_truth(n->a, a)) {
      if (*left == (n->op == BinaryOp::Or)) return bool_imm(*left, n->loc);
      return mutate(n->b);
    }
    ExprPtr b = mutate(n->b);
    if (a == n->a && b == n->b) return self;
    return std::make_shared<Binary>(n->op, a, b, n->type, n->loc);
  }

  // `a if c else b` with c decided: only the value taken.
  ExprPtr mutate_node(const Select* n, const ExprPtr& self) override {
    ExprPtr cond = mutate(n->cond);
    if (std::optional<bool> known = known_truth(n->cond, cond)) return mutate(*known ? n->a : n->b);
    ExprPtr a = mutate(n->a), b = mutate(n->b);
    if (cond == n->cond && a == n->a && b == n->b) return self;
    return std::make_shared<Select>(cond, a, b, n->type, n->loc);
  }

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    auto v = n->target->as<Var>();
    if (!v) return IRMutator::mutate_node(n, self);
    ExprPtr value = mutate(n->value);
    if (none_locals_.count(v->name)) assigned_.insert(v->name);
    // A local assigned once, where every statement after it sees the assignment.
    if (assignments_[v->name] == 1 && loop_depth_ == 0 && branch_depth_ == 0)
      if (std::optional<bool> known = known_truth(n->value, value))
        known_locals_[v->name] = *known;
    if (value == n->value) return self;
    return std::make_shared<Assign>(n->target, value, n->loc, n->labels);
  }

  // The branches of an if that nothing decided, and loops: the statements in them may not run.
  StmtPtr mutate_node(const If* n, const StmtPtr& self) override {
    ++branch_depth_;
    StmtPtr s = IRMutator::mutate_node(n, self);
    --branch_depth_;
    return s;
  }
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    ++loop_depth_;
    StmtPtr s = IRMutator::mutate_node(n, self);
    --loop_depth_;
    return s;
  }
  StmtPtr mutate_node(const While* n, const StmtPtr& self) override {
    ++loop_depth_;
    StmtPtr s = IRMutator::mutate_node(n, self);
    --loop_depth_;
    return s;
  }
};

// The names of the call's None arguments: parameters, and dict entries as "d.k".
void collect_nones(const std::string& name, const ArgValue& a, std::set<std::string>& out) {
  if (a.kind == ArgValue::Kind::None) out.insert(name);
  for (size_t k = 0; k < a.entries.size(); ++k)
    collect_nones(name + "." + a.entry_keys[k], a.entries[k], out);
}

}  // namespace

Function fold_none_tests(const Function& fn, const std::vector<ArgValue>& args) {
  if (!contains(fn.body, ExprKind::IsNone)) return fn;
  std::set<std::string> nones, none_locals;
  for (size_t i = 0; i < args.size() && i < fn.params.size(); ++i)
    collect_nones(fn.params[i].name, args[i], nones);
  const std::set<std::string> assigned = assigned_locals(fn.body);
  for (const std::string& name : nones)
    if (assigned.count(name)) none_locals.insert(name);
  Function out = fn;
  out.body = NoneFolder(fn, std::move(nones), std::move(none_locals)).mutate(fn.body);
  return out;
}

}  // namespace parir
