#include "passes/detect_reductions.h"

#include <algorithm>
#include <set>

#include "ir/visitor.h"
#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/reduction_ops.h"

namespace parir {
namespace {

// Rewrites the accumulations of one reduce loop's body.
class RewriteBody : public IRMutator {
 public:
  RewriteBody(const SpecializedFunction& p, const For& loop, std::string acc)
      : prog_(p), loop_(loop), acc_(std::move(acc)) {}

  ExprPtr target;
  std::optional<ReduceOp> op;
  Type acc_type;
  std::set<std::string> assigned{};  // names bound inside the loop
  std::vector<Loc> target_reads;
  // With collect_targets, the body is only scanned: every place it accumulates into, in order
  // of first accumulation, goes here (and `target` stays unset).
  bool collect_targets = false;
  std::vector<ExprPtr> targets;

 protected:
  const SpecializedFunction& prog_;
  const For& loop_;
  std::string acc_;

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    if (target && !same_place(n->target, target)) {
      if (auto v = n->target->as<Var>()) assigned.insert(v->name);
      return IRMutator::mutate_node(n, self);
    }
    std::optional<Accumulation> m = match(n->target, n->value);
    // A local assigned afresh earlier in this body is a per-iteration temporary (c = 0; then
    // c += 1; a while-loop's counter; an inlined helper's locals): its accumulations are
    // ordinary statements, not the loop's reduction. Only what lives across iterations reduces.
    if (m && !target)
      if (auto v = n->target->as<Var>(); v && assigned.count(v->name))
        return IRMutator::mutate_node(n, self);
    // An update of the iteration's own element (x[i] -= c with i the loop's variable) is
    // elementwise work, not a reduction: each iteration has a place of its own.
    if (m && !target)
      if (auto l = n->target->as<Load>())
        for (const auto& i : l->indices)
          if (mentions(i, std::set<std::string>{loop_.var})) return IRMutator::mutate_node(n, self);
    if (!m && target)
      prog_.error(n->loc, fmt::format("'{}' is the result of the reduction loop on line {}; it "
                                      "can only be accumulated into there (+=, *=, min, max)",
                                      to_string(target), loop_.loc.line));
    if (!m) {
      if (auto v = n->target->as<Var>()) assigned.insert(v->name);
      return IRMutator::mutate_node(n, self);
    }
    if (collect_targets) {
      if (std::none_of(targets.begin(), targets.end(),
                       [&](const ExprPtr& t) { return same_place(t, n->target); }))
        targets.push_back(n->target);
      return self;
    }
    if (!target) {
      target = n->target;
      op = m->op;
      acc_type = accumulator_type(target->type, m->operand->type);
    } else if (*op != m->op) {
      prog_.error(n->loc, fmt::format("this loop's reduction combines with {} here but with {} "
                                      "elsewhere; a reduction uses one operation",
                                      python_name(m->op), python_name(*op)));
    } else {
      acc_type = accumulator_type(acc_type, m->operand->type);
    }
    ExprPtr e = mutate(m->operand);
    ExprPtr acc = var(acc_, n->loc, acc_type);
    if (!same_scalar_type(e)) e = std::make_shared<Cast>(e, acc_type, e->loc);
    return std::make_shared<Assign>(acc, combine(*op, acc, e, acc_type, n->loc), n->loc,
                                    n->labels);
  }

  bool same_scalar_type(const ExprPtr& e) const { return e->type.scalar == acc_type.scalar; }

  // An atomic update is never an accumulation of the loop: its result local is bound in the
  // loop like any local assigned there, and its element is read like any other (so an update
  // of the reduction's own target is an error below, as a read of it is).
  StmtPtr mutate_node(const AtomicUpdate* n, const StmtPtr& self) override {
    if (n->result) {
      const std::string& name = n->result->as<Var>()->name;
      if (target && target->as<Var>() && target->as<Var>()->name == name)
        prog_.error(n->loc, fmt::format("'{}' is the result of the reduction loop on line {}; "
                                        "it can only be accumulated into there (+=, *=, min, "
                                        "max)",
                                        name, loop_.loc.line));
      assigned.insert(name);
    }
    ExprPtr t = mutate(n->target), c = mutate(n->compare), v = mutate(n->value);
    if (t == n->target && c == n->compare && v == n->value) return self;
    return std::make_shared<AtomicUpdate>(n->op, t, v, c, n->result, n->loc, n->labels);
  }

  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    if (target && target->as<Var>() && target->as<Var>()->name == n->name)
      target_reads.push_back(n->loc);
    return self;
  }
  ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
    if (target && same_place(self, target)) target_reads.push_back(n->loc);
    return IRMutator::mutate_node(n, self);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (n->par)
      prog_.error(n->loc, fmt::format("this parallel loop is inside the reduction loop on line {}; "
                                      "a reduction must be the innermost parallel loop",
                                      loop_.loc.line));
    assigned.insert(n->var);
    return IRMutator::mutate_node(n, self);
  }
};

// Removes the accumulations into some places (a copy of a reduce loop keeps one target's).
class DropAccumulations : public IRMutator {
 public:
  explicit DropAccumulations(std::vector<ExprPtr> places) : places_(std::move(places)) {}

 protected:
  std::vector<ExprPtr> places_;
  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    for (const auto& p : places_)
      if (same_place(n->target, p) && match(n->target, n->value)) return nullptr;
    return self;
  }
};

class Detect : public IRMutator {
 public:
  explicit Detect(const SpecializedFunction& p) : prog_(p), names_(p) {}

  // A reduce loop that accumulates into several places (fx += ..., fy += ...; or lo = min(..),
  // hi = max(..)) becomes one copy of the loop per place, each reducing into its own: the
  // body's other work is then repeated, which is correct because its only effects are the
  // accumulations (otherwise the loop is left to the usual errors).
  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      auto f = s->as<For>();
      if (f && f->par && f->par->reduce && !contains_parallel_code(f->body, false)) {
        RewriteBody scan(prog_, *f, "");
        scan.collect_targets = true;
        scan.mutate(f->body);
        if (scan.targets.size() > 1 && !only_accumulates(f->body, scan.targets))
          prog_.error(f->loc, fmt::format("this reduction loop accumulates into {} and {}, and "
                                          "also {}; it cannot become one loop per "
                                          "accumulation, which would repeat that. Accumulate "
                                          "into one place here, or do the rest in a loop of "
                                          "its own",
                                          to_string(scan.targets[0]), to_string(scan.targets[1]),
                                          contains(f->body, StmtKind::AtomicUpdate)
                                              ? "updates tensor elements atomically"
                                              : "stores to other tensors"));
        if (scan.targets.size() > 1) {
          for (const auto& t : scan.targets) check_not_read(*f, t);
          for (const auto& t : scan.targets) {
            std::vector<ExprPtr> others;
            for (const auto& o : scan.targets)
              if (o != t) others.push_back(o);
            auto copy = std::make_shared<For>(f->var, f->lo, f->hi, f->step,
                                              DropAccumulations(others).mutate(f->body), f->loc,
                                              f->labels, f->par);
            out.push_back(IRMutator::mutate(StmtPtr(copy)));
          }
          continue;
        }
      }
      if (StmtPtr m = IRMutator::mutate(s)) out.push_back(std::move(m));
    }
    return out;
  }
  using IRMutator::mutate;

 protected:
  const SpecializedFunction& prog_;
  FreshNames names_;

  // A copy would read another place's value from before the loop, not its running value.
  void check_not_read(const For& loop, const ExprPtr& place) const {
    class Reads : public IRVisitor {
     public:
      explicit Reads(const ExprPtr& p) : place(p) {}
      const ExprPtr& place;
      std::optional<Loc> found;

     protected:
      void visit_node(const Assign* n) override {
        if (same_place(n->target, place) && match(n->target, n->value)) {
          visit(match(n->target, n->value)->operand);
          return;
        }
        IRVisitor::visit_node(n);
      }
      void visit_node(const Var* n) override {
        if (!found && place->as<Var>() && place->as<Var>()->name == n->name) found = n->loc;
      }
      void visit_node(const Load* n) override {
        if (!found && place->as<Load>() && same_place(std::make_shared<Load>(*n), place))
          found = n->loc;
        IRVisitor::visit_node(n);
      }
    } reads(place);
    reads.visit(loop.body);
    if (reads.found)
      prog_.error(*reads.found, fmt::format("'{}' is a result of the reduction loop on line {} "
                                            "and cannot be read inside it, other than by its "
                                            "accumulation",
                                            to_string(place), loop.loc.line));
  }

  // Whether the body stores to no tensor other than those of its accumulation targets, and
  // updates none atomically (each copy would repeat the update).
  static bool only_accumulates(const Body& body, const std::vector<ExprPtr>& targets) {
    if (contains(body, StmtKind::AtomicUpdate)) return false;
    std::set<std::string> allowed;
    for (const auto& t : targets)
      if (auto l = strip_casts(t)->as<Load>()) allowed.insert(l->tensor);
    for (const auto& name : stored_tensors(body))
      if (!allowed.count(name)) return false;
    return true;
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (!n->par || !n->par->reduce) return IRMutator::mutate_node(n, self);
    PARIR_CHECK(n->lo->type.known(), "a reduction loop of {}() is untyped; call infer_types "
                "before detect_reductions", prog_.name);
    // A reduce loop around parallel loops (a reduction over several parallel dimensions)
    // reduces through its innermost loops, which combine into the target atomically when
    // several blocks share it; it is itself an ordinary parallel loop.
    if (contains_parallel_code(n->body, /*gpu_blocks=*/false)) return IRMutator::mutate_node(n, self);
    std::string acc = names_.make("acc");
    // Two passes: the first finds the target, so that the second can also see reads of it
    // that come before the first accumulation.
    RewriteBody find(prog_, *n, acc);
    find.mutate(n->body);
    // A loop that shares a reduce label but accumulates nothing is an ordinary parallel loop
    // (softmax's normalization loop, say).
    if (!find.target) return IRMutator::mutate_node(n, self);
    RewriteBody rewrite(prog_, *n, acc);
    rewrite.target = find.target;
    rewrite.op = find.op;
    rewrite.acc_type = find.acc_type;
    Body body = rewrite.mutate(n->body);
    if (!rewrite.target_reads.empty())
      prog_.error(rewrite.target_reads.front(),
                  fmt::format("'{}' is the result of the reduction loop on line {} and cannot be "
                              "read inside it, other than by its accumulation",
                              to_string(find.target), n->loc.line));
    std::set<std::string> inside = rewrite.assigned;
    inside.insert(n->var);
    if (auto l = find.target->as<Load>())
      for (const auto& i : l->indices)
        if (mentions(i, inside))
          prog_.error(find.target->loc,
                      fmt::format("the reduction target {} changes within the reduction loop on "
                                  "line {}; a reduction combines into one place",
                                  to_string(find.target), n->loc.line));
    auto r = std::make_shared<Reduction>(
        Reduction{*find.op, acc, find.acc_type, find.target, nullptr, nullptr});
    combine_into_target(*r);
    return std::make_shared<For>(n->var, n->lo, n->hi, n->step, std::move(body), n->loc,
                                 n->labels, n->par, std::move(r));
  }
};

}  // namespace

void detect_reductions(SpecializedFunction& prog) { prog.body = Detect(prog).mutate(prog.body); }

}  // namespace parir
