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

// The update of an index reduction (parir.argmax / parir.argmin), as lower_slices writes it:
//
//     if v > best or (v != v and best == best):    # v < best for argmin
//         best = v
//         at = index
//
// with `index` the row-major flattening of the loop variables from the reduce loop's down to
// the update's innermost loop, so that it grows with the sequential order of the iterations:
// then a tie between threads goes to the lower index, as the sequential pass keeps the first.
struct ArgUpdate {
  ReduceOp op;
  ExprPtr value, best, at, index;  // Vars, and the index expression
};

std::optional<ArgUpdate> match_arg_update(const If& n) {
  if (!n.else_body.empty() || n.then_body.size() != 2) return std::nullopt;
  auto set_best = n.then_body[0]->as<Assign>(), set_at = n.then_body[1]->as<Assign>();
  if (!set_best || !set_at || !set_best->target->as<Var>() || !set_best->value->as<Var>() ||
      !set_at->target->as<Var>())
    return std::nullopt;
  ExprPtr v = set_best->value, best = set_best->target;
  auto is = [](const ExprPtr& e, const ExprPtr& place) { return same_place(e, place); };
  auto cond = n.cond->as<Binary>();
  if (!cond || cond->op != BinaryOp::Or) return std::nullopt;
  auto cmp = strip_casts(cond->a)->as<Binary>(), nan = strip_casts(cond->b)->as<Binary>();
  if (!cmp || (cmp->op != BinaryOp::Gt && cmp->op != BinaryOp::Lt) || !is(cmp->a, v) ||
      !is(cmp->b, best))
    return std::nullopt;
  if (!nan || nan->op != BinaryOp::And) return std::nullopt;
  auto ne = strip_casts(nan->a)->as<Binary>(), eq = strip_casts(nan->b)->as<Binary>();
  if (!ne || ne->op != BinaryOp::Ne || !is(ne->a, v) || !is(ne->b, v) || !eq ||
      eq->op != BinaryOp::Eq || !is(eq->a, best) || !is(eq->b, best))
    return std::nullopt;
  return ArgUpdate{cmp->op == BinaryOp::Gt ? ReduceOp::Max : ReduceOp::Min, v, best,
                   set_at->target, set_at->value};
}

// The type in which an index reduction compares and combines values: bool and small integers
// in int64 and the half types in float32, which keep their order and NaNs, and which the
// block-wide combination can shuffle and load from other blocks.
Type comparison_type(Type t) {
  if (is_bool(t.scalar) || (is_int(t.scalar) && size_in_bytes(t.scalar) < 4))
    return Type{ScalarType::I64, false};
  if (is_half(t.scalar)) return Type{ScalarType::F32, false};
  return Type{t.scalar, false};
}

// Finds the index-reduction update in a reduce loop's body and rewrites it to combine into the
// per-thread accumulators: each thread visits its iterations in order, so its pair starts at
// ("no value", INT64_MAX) and takes an element that beats it or ties it with a lower index.
class RewriteArgUpdate : public IRMutator {
 public:
  RewriteArgUpdate(const SpecializedFunction& p, const For& loop, std::string acc,
                   FreshNames& names)
      : prog_(p), loop_(loop), acc_(std::move(acc)), names_(names) {
    loops_.push_back(&loop);
  }

  std::optional<ArgUpdate> found;
  Type acc_type;
  std::string index_acc;  // named when the update is found

 protected:
  const SpecializedFunction& prog_;
  const For& loop_;
  std::string acc_;
  FreshNames& names_;
  std::vector<const For*> loops_;  // the reduce loop and the sequential loops around here

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    loops_.push_back(n);
    StmtPtr out = IRMutator::mutate_node(n, self);
    loops_.pop_back();
    return out;
  }

  StmtPtr mutate_node(const If* n, const StmtPtr& self) override {
    std::optional<ArgUpdate> m = match_arg_update(*n);
    if (!m) return IRMutator::mutate_node(n, self);
    if (found)
      prog_.error(n->loc, fmt::format("the reduction loop on line {} has two index "
                                      "reductions; a reduction loop combines one",
                                      loop_.loc.line));
    if (!grows_with_iterations(m->index))
      prog_.error(n->loc, fmt::format("the index kept by this update in the reduction loop on "
                                      "line {} is not the row-major position of its "
                                      "iterations, which a parallel index reduction needs to "
                                      "break ties",
                                      loop_.loc.line));
    found = m;
    index_acc = names_.make("acc_index");
    const Loc l = n->loc;
    const Type b{ScalarType::Bool, false}, i64{ScalarType::I64, false};
    acc_type = comparison_type(m->value->type);
    ExprPtr v = m->value;
    if (v->type.scalar != acc_type.scalar) v = std::make_shared<Cast>(v, acc_type, l);
    ExprPtr acc = var(acc_, l, acc_type), at = var(index_acc, l, i64);
    ExprPtr cond = binary(BinaryOp::Or,
                          binary(BinaryOp::Or, beats(m->op, v, acc, l),
                                 binary(BinaryOp::And, binary(BinaryOp::Ne, v, v, l, b),
                                        binary(BinaryOp::Eq, acc, acc, l, b), l, b),
                                 l, b),
                          binary(BinaryOp::And, binary(BinaryOp::Eq, v, acc, l, b),
                                 binary(BinaryOp::Lt, m->index, at, l, b), l, b),
                          l, b);
    Body update{std::make_shared<Assign>(acc, v, l), std::make_shared<Assign>(at, m->index, l)};
    return std::make_shared<If>(cond, std::move(update), Body{}, l, n->labels);
  }

  // Whether `index` is v0, v0 * e1 + v1, (v0 * e1 + v1) * e2 + v2, ... for the variables of the
  // loops from the reduce loop inwards, each running up from 0 by 1 below its e, plus (as
  // c + v0) a value c that does not change within the reduce loop (the position of the
  // enclosing sequential loops' iteration, which the reduce loop's run shares).
  bool grows_with_iterations(const ExprPtr& index) const {
    ExprPtr e = strip_casts(index);
    for (size_t d = loops_.size(); d-- > 0;) {
      const For& f = *loops_[d];
      auto lo = f.lo->as<IntImm>(), hi = f.hi->as<IntImm>(), step = f.step->as<IntImm>();
      if (!lo || lo->value != 0 || !step || step->value != 1) return false;
      if (d == 0) {
        if (auto add = e->as<Binary>(); add && add->op == BinaryOp::Add) {
          std::set<std::string> changing = assigned_names(loop_.body);
          for (const For* l : loops_) changing.insert(l->var);
          if (mentions(add->a, changing)) return false;
          e = strip_casts(add->b);
        }
        auto v = e->as<Var>();
        return v && v->name == f.var;
      }
      auto add = e->as<Binary>();
      if (!add || add->op != BinaryOp::Add) return false;
      auto v = strip_casts(add->b)->as<Var>();
      auto mul = strip_casts(add->a)->as<Binary>();
      if (!v || v->name != f.var || !mul || mul->op != BinaryOp::Mul) return false;
      auto e_d = strip_casts(mul->b)->as<IntImm>();
      if (!hi || !e_d || hi->value > e_d->value) return false;
      e = strip_casts(mul->a);
    }
    return false;
  }


  static ExprPtr beats(ReduceOp op, const ExprPtr& a, const ExprPtr& b, Loc l) {
    return binary(op == ReduceOp::Max ? BinaryOp::Gt : BinaryOp::Lt, a, b, l,
                  Type{ScalarType::Bool, false});
  }
};

// Whether the expression reads the element `place` (through operators, casts, selects and
// calls).
bool reads(const ExprPtr& e, const ExprPtr& place) {
  if (!e) return false;
  if (same_place(e, place)) return true;
  if (auto b = e->as<Binary>()) return reads(b->a, place) || reads(b->b, place);
  if (auto u = e->as<Unary>()) return reads(u->a, place);
  if (auto c = e->as<Cast>()) return reads(c->a, place);
  if (auto s = e->as<Select>())
    return reads(s->cond, place) || reads(s->a, place) || reads(s->b, place);
  if (auto c = e->as<Call>())
    return std::any_of(c->args.begin(), c->args.end(),
                       [&](const ExprPtr& a) { return reads(a, place); });
  return false;
}

// The accumulation `t += e` (a Sum, Min or Max) as the atomic update of t that makes it: + and -
// atomic_add, min atomic_min, max atomic_max, of e converted to t's type.
StmtPtr atomic_accumulation(const Assign& n, const Accumulation& acc) {
  ExprPtr other = acc.operand;
  if (other->type.scalar != n.target->type.scalar)
    other = std::make_shared<Cast>(other, Type{n.target->type.scalar, false}, other->loc);
  const AtomicOp op = acc.op == ReduceOp::Sum   ? AtomicOp::Add
                      : acc.op == ReduceOp::Min ? AtomicOp::Min
                                                : AtomicOp::Max;
  return std::make_shared<AtomicUpdate>(op, n.target, other, nullptr, nullptr, n.loc, n.labels);
}

// The accumulations into `places` (tensor elements) as atomic updates, each iteration's own:
// + and - become atomic_add, min and max atomic_min and atomic_max.
class AccumulationsToAtomics : public IRMutator {
 public:
  explicit AccumulationsToAtomics(std::vector<ExprPtr> places) : places_(std::move(places)) {}

  // Whether every place is a tensor element whose accumulations an atomic operation makes.
  static bool possible(const Body& body, const std::vector<ExprPtr>& places) {
    class Ops : public IRVisitor {
     public:
      const std::vector<ExprPtr>& places;
      bool ok = true;
      explicit Ops(const std::vector<ExprPtr>& p) : places(p) {}

     protected:
      void visit_node(const Assign* n) override {
        for (const auto& p : places)
          if (same_place(n->target, p)) {
            std::optional<Accumulation> acc = match(n->target, n->value);
            ok = ok && acc && acc->op != ReduceOp::Prod && !reads(acc->operand, p);
          }
        IRVisitor::visit_node(n);
      }
    } ops(places);
    for (const auto& p : places)
      if (!strip_casts(p)->as<Load>()) return false;
    ops.visit(body);
    return ops.ok;
  }

 protected:
  std::vector<ExprPtr> places_;
  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    for (const auto& p : places_) {
      if (!same_place(n->target, p)) continue;
      std::optional<Accumulation> acc = match(n->target, n->value);
      return acc ? atomic_accumulation(*n, *acc) : self;
    }
    return self;
  }
};

// A reduce loop in which no accumulation was found may still update one element from every
// iteration (`out[0] ^= x[i]`, `out[0] = out[0] | x[i]`): an operation that parir does not
// combine across threads. As an ordinary parallel loop every thread would read, update and
// write the element at once, losing updates; that is an error naming the statement.
class RejectUnreducedUpdates : public IRVisitor {
 public:
  RejectUnreducedUpdates(const SpecializedFunction& p, const For& loop)
      : prog_(p), loop_(loop), changing_(assigned_names(loop.body)) {
    changing_.insert(loop.var);
  }

 protected:
  const SpecializedFunction& prog_;
  const For& loop_;
  std::set<std::string> changing_;  // the loop's variable and the names its body assigns

  void visit_node(const Assign* n) override {
    IRVisitor::visit_node(n);
    auto l = n->target->as<Load>();
    if (!l) return;
    for (const auto& i : l->indices)
      if (mentions(i, changing_)) return;  // each iteration's own element, or data-chosen
    if (!reads(n->value, n->target)) return;
    // `out[0] *= 1` folded to out[0] = out[0] (simplify): every thread writes back the value
    // it read, which changes nothing whatever the order.
    if (same_place(strip_casts(n->value), n->target)) return;
    auto b = strip_casts(n->value)->as<Binary>();
    const char* op = b ? python_symbol(b->op) : "an operation";
    prog_.error(n->loc, fmt::format(
        "the reduction loop on line {} updates {} with {} in every iteration, which parir "
        "does not combine across threads (it reduces +, -, *, min and max); its threads "
        "would update {} at once and lose updates. Use an atomic update (parir.atomic_xor, "
        "parir.atomic_or, parir.atomic_and, ...), or drop .reduce() from the label to run "
        "the loop sequentially",
        loop_.loc.line, to_string(n->target), op, to_string(n->target)));
  }
};

// A reduce loop around parallel loops reduces through its innermost loops (Detect leaves it an
// ordinary parallel loop over blocks). An accumulation into one element in its own body, beside
// those loops (`if s > 0.0: count[0] += 1` after a row's inner reduction into s), is made by
// every block: it becomes an atomic update (+ and - atomic_add, min and max atomic_min and
// atomic_max), which one thread of each block makes. Other updates of one element
// read and written by every block (`out[0] *= x`, `out[0] ^= x`) are an error: no atomic
// operation combines them.
class AtomicUpdatesBesideParallelLoops : public IRMutator {
 public:
  AtomicUpdatesBesideParallelLoops(const SpecializedFunction& p, const For& loop)
      : prog_(p), loop_(loop), changing_(assigned_names(loop.body)) {
    changing_.insert(loop.var);
  }

 protected:
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (n->par) return self;  // reduces by its own rules
    return IRMutator::mutate_node(n, self);
  }

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    auto l = n->target->as<Load>();
    if (!l) return self;
    for (const auto& i : l->indices)
      if (mentions(i, changing_)) return self;  // each iteration's own element, or data-chosen
    std::optional<Accumulation> acc = match(n->target, n->value);
    if (!acc || acc->op == ReduceOp::Prod) {
      if (!reads(n->value, n->target)) return self;
      prog_.error(n->loc, fmt::format(
          "the reduction loop on line {} holds parallel loops, so its blocks all make this "
          "update of {}, and no atomic operation combines it; parir combines +, -, min and "
          "max there. Use an atomic update (parir.atomic_xor, ...), or update {} inside the "
          "inner loops",
          loop_.loc.line, to_string(n->target), to_string(n->target)));
    }
    ExprPtr other = acc->operand;
    if (reads(other, n->target))
      prog_.error(n->loc, fmt::format("{} is updated from its own value twice in one "
                                      "statement; blocks cannot combine that",
                                      to_string(n->target)));
    return atomic_accumulation(*n, *acc);
  }

 private:
  const SpecializedFunction& prog_;
  const For& loop_;
  std::set<std::string> changing_;
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
        if (scan.targets.size() > 1 && !only_accumulates(f->body, scan.targets)) {
          // The loop's other effects (stores, atomic updates) must run once, so it cannot be
          // copied per accumulation: one place (a local, if any) stays its reduction and the
          // others, tensor elements, are updated atomically in every iteration.
          std::vector<ExprPtr> others = scan.targets;
          auto local = std::find_if(others.begin(), others.end(),
                                    [](const ExprPtr& t) { return strip_casts(t)->as<Var>(); });
          others.erase(local != others.end() ? local : others.begin());
          if (AccumulationsToAtomics::possible(f->body, others)) {
            for (const auto& t : scan.targets) check_not_read(*f, t);
            auto one = std::make_shared<For>(f->var, f->lo, f->hi, f->step,
                                             AccumulationsToAtomics(others).mutate(f->body),
                                             f->loc, f->labels, f->par);
            out.push_back(IRMutator::mutate(StmtPtr(one)));
            continue;
          }
          prog_.error(f->loc, fmt::format("this reduction loop accumulates into {} and {}, and "
                                          "also {}; it cannot become one loop per "
                                          "accumulation, which would repeat that. Accumulate "
                                          "into one place here, or do the rest in a loop of "
                                          "its own",
                                          to_string(scan.targets[0]), to_string(scan.targets[1]),
                                          contains(f->body, StmtKind::AtomicUpdate)
                                              ? "updates tensor elements atomically"
                                              : "stores to other tensors"));
        }
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

  // A reduce loop holding an index reduction's update (parir.argmax / argmin) becomes a
  // reduction of (value, index) pairs into its two locals; nullptr for other loops.
  StmtPtr index_reduction(const For& n, const std::string& acc) {
    RewriteArgUpdate rewrite(prog_, n, acc, names_);
    Body body = rewrite.mutate(n.body);
    if (!rewrite.found) return nullptr;
    const ArgUpdate& m = *rewrite.found;
    // The pair is the loop's only result: its locals are not read or assigned elsewhere in
    // the loop, and nothing else accumulates there.
    RewriteBody others(prog_, n, "");
    others.collect_targets = true;
    others.mutate(body);
    if (!others.targets.empty())
      prog_.error(n.loc, fmt::format("this reduction loop computes an index reduction and also "
                                     "accumulates into {}; a reduction loop combines one "
                                     "result",
                                     to_string(others.targets[0])));
    class Uses : public IRVisitor {
     public:
      explicit Uses(std::set<std::string> n) : names(std::move(n)) {}
      std::set<std::string> names;
      std::optional<Loc> found;

     protected:
      void visit_node(const Var* v) override {
        if (!found && names.count(v->name)) found = v->loc;
      }
      void visit_node(const Assign* a) override {
        if (auto v = a->target->as<Var>(); v && !found && names.count(v->name)) found = a->loc;
        IRVisitor::visit_node(a);
      }
    } uses({m.best->as<Var>()->name, m.at->as<Var>()->name});
    uses.visit(body);
    if (uses.found)
      prog_.error(*uses.found, fmt::format("'{}' and '{}' are the result of the index reduction "
                                           "in the loop on line {} and cannot be used elsewhere "
                                           "inside it",
                                           prog_.user_name(m.best->as<Var>()->name),
                                           prog_.user_name(m.at->as<Var>()->name), n.loc.line));
    const Loc l = n.loc;
    const Type b{ScalarType::Bool, false};
    auto r = std::make_shared<Reduction>();
    r->op = m.op;
    r->acc = acc;
    r->acc_type = rewrite.acc_type;
    r->target = m.best;
    r->index_acc = rewrite.index_acc;
    r->index_target = m.at;
    ExprPtr a = var(acc, l, rewrite.acc_type), best = m.best;
    if (best->type.scalar != a->type.scalar) best = std::make_shared<Cast>(best, a->type, l);
    // Strictly better than the target, which comes first in the sequential order.
    r->better = binary(
        BinaryOp::Or,
        binary(m.op == ReduceOp::Max ? BinaryOp::Gt : BinaryOp::Lt, a, best, l, b),
        binary(BinaryOp::And, binary(BinaryOp::Ne, a, a, l, b),
               binary(BinaryOp::Eq, best, best, l, b), l, b),
        l, b);
    r->combined = a->type.scalar == m.best->type.scalar
                      ? a
                      : std::make_shared<Cast>(a, m.best->type, l);
    r->acc_value = r->combined;
    return std::make_shared<For>(n.var, n.lo, n.hi, n.step, std::move(body), n.loc, n.labels,
                                 n.par, std::move(r));
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (!n->par || !n->par->reduce) return IRMutator::mutate_node(n, self);
    PARIR_CHECK(n->lo->type.known(), "a reduction loop of {}() is untyped; call infer_types "
                "before detect_reductions", prog_.name);
    // A reduce loop around parallel loops (a reduction over several parallel dimensions)
    // reduces through its innermost loops, which combine into the target atomically when
    // several blocks share it; it is itself an ordinary parallel loop.
    if (contains_parallel_code(n->body, /*gpu_blocks=*/false)) {
      Body body = AtomicUpdatesBesideParallelLoops(prog_, *n).mutate(n->body);
      For around(n->var, n->lo, n->hi, n->step, std::move(body), n->loc, n->labels, n->par);
      return IRMutator::mutate_node(&around, std::make_shared<For>(around));
    }
    std::string acc = names_.make("acc");
    if (StmtPtr arg = index_reduction(*n, acc)) return arg;
    // Two passes: the first finds the target, so that the second can also see reads of it
    // that come before the first accumulation.
    RewriteBody find(prog_, *n, acc);
    find.mutate(n->body);
    // A loop that shares a reduce label but accumulates nothing is an ordinary parallel loop
    // (softmax's normalization loop, say).
    if (!find.target) {
      RejectUnreducedUpdates(prog_, *n).visit(n->body);
      return IRMutator::mutate_node(n, self);
    }
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
        Reduction{*find.op, acc, find.acc_type, find.target, nullptr, nullptr, "", nullptr,
                  nullptr});
    combine_into_target(*r);
    return std::make_shared<For>(n->var, n->lo, n->hi, n->step, std::move(body), n->loc,
                                 n->labels, n->par, std::move(r));
  }
};

}  // namespace

void detect_reductions(SpecializedFunction& prog) { prog.body = Detect(prog).mutate(prog.body); }

}  // namespace parir
