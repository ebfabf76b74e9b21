#include "passes/detect_scans.h"

#include <set>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/reduction_ops.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// What a statement (or expression) reads and writes: locals read and assigned (loop variables
// and atomic results included), tensors loaded and stored.
struct Uses : IRVisitor {
  std::set<std::string> reads, assigns, loads, stores;

  static Uses of(const StmtPtr& s) {
    Uses u;
    u.visit(s);
    return u;
  }
  static Uses of(const ExprPtr& e) {
    Uses u;
    u.visit(e);
    return u;
  }

 protected:
  void visit_node(const Var* n) override { reads.insert(n->name); }
  void visit_node(const Load* n) override {
    loads.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) {
      assigns.insert(v->name);
    } else {
      stores.insert(n->target->as<Load>()->tensor);
      for (const auto& i : n->target->as<Load>()->indices) visit(i);
    }
    visit(n->value);
  }
  void visit_node(const AtomicUpdate* n) override {
    auto t = n->target->as<Load>();
    stores.insert(t->tensor);
    loads.insert(t->tensor);
    for (const auto& i : t->indices) visit(i);
    visit(n->compare);
    visit(n->value);
    if (n->result) assigns.insert(n->result->as<Var>()->name);
  }
  void visit_node(const For* n) override {
    assigns.insert(n->var);
    IRVisitor::visit_node(n);
  }
};

// The locals read, in program order, before anything assigns them.
struct FirstReads : IRVisitor {
  std::set<std::string> defined, reads;

 protected:
  void visit_node(const Var* n) override {
    if (!defined.count(n->name)) reads.insert(n->name);
  }
  void visit_node(const Assign* n) override {
    visit(n->value);
    if (auto v = n->target->as<Var>())
      defined.insert(v->name);
    else
      for (const auto& i : n->target->as<Load>()->indices) visit(i);
  }
  void visit_node(const AtomicUpdate* n) override {
    for (const auto& i : n->target->as<Load>()->indices) visit(i);
    visit(n->compare);
    visit(n->value);
    if (n->result) defined.insert(n->result->as<Var>()->name);
  }
  void visit_node(const For* n) override {
    visit(n->lo);
    visit(n->hi);
    visit(n->step);
    defined.insert(n->var);
    visit(n->body);
  }
};

bool meets(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& x : a)
    if (b.count(x)) return true;
  return false;
}

// Reads of the running value become reads of the local that holds it at that point.
class Replace : public IRMutator {
 public:
  Replace(std::string from, ExprPtr to) : from_(std::move(from)), to_(std::move(to)) {}

 protected:
  std::string from_;
  ExprPtr to_;
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    return n->name == from_ ? to_ : self;
  }
};

class Detect : public IRMutator {
 public:
  explicit Detect(const SpecializedFunction& p) : prog_(p), names_(p) {}

 protected:
  const SpecializedFunction& prog_;
  FreshNames names_;

  std::string user(const std::string& local) const { return prog_.user_name(local); }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (!n->par || !n->par->scan) return IRMutator::mutate_node(n, self);
    if (contains_parallel_code(n->body, /*gpu_blocks=*/false))
      prog_.error(n->loc, "this scan loop contains parallel loops; a scan must be an innermost "
                          "parallel loop (label the loop over the rows for blocks, and the loop "
                          "along the row .scan())");
    const std::string line = fmt::format("{}", n->loc.line);

    // The accumulations at the top of the body into locals not assigned before them in the
    // iteration (those are per-iteration temporaries): the first is the running value.
    std::set<std::string> assigned_in_body, defined;
    std::optional<size_t> acc_at;
    std::string running;
    std::optional<Accumulation> acc;
    for (size_t i = 0; i < n->body.size(); ++i) {
      const StmtPtr& s = n->body[i];
      auto a = s->as<Assign>();
      auto v = a ? a->target->as<Var>() : nullptr;
      std::optional<Accumulation> m =
          v && !defined.count(v->name) ? match(a->target, a->value) : std::nullopt;
      if (m && !acc_at) {
        acc_at = i;
        running = v->name;
        acc = m;
      } else if (m && v->name != running) {
        prog_.error(s->loc, fmt::format("this scan loop carries two running values, '{}' and "
                                        "'{}'; a scan carries one (scan the other in a loop of "
                                        "its own)",
                                        user(running), user(v->name)));
      } else if (m) {
        prog_.error(s->loc, fmt::format("'{}' is the running value of the scan loop on line {} "
                                        "and is accumulated into twice in one iteration; a scan "
                                        "accumulates once per iteration",
                                        user(running), line));
      }
      // A running value in a tensor element would be shared by the block's threads.
      if (auto t = a ? a->target->as<Load>() : nullptr; t && match(a->target, a->value)) {
        bool own = false;
        for (const auto& idx : t->indices) own = own || mentions(idx, {n->var});
        if (!own)
          prog_.error(s->loc, fmt::format("this scan loop accumulates into the tensor element "
                                          "{}; a scan carries its running value in a local "
                                          "(s += x[i, j]; out[i, j] = s)",
                                          to_string(a->target)));
      }
      Uses u = Uses::of(s);
      defined.insert(u.assigns.begin(), u.assigns.end());
      assigned_in_body.insert(u.assigns.begin(), u.assigns.end());
    }
    // Any other local that an iteration reads before assigning it is carried between
    // iterations, which the threads of a scan cannot do.
    FirstReads first;
    first.visit(n->body);
    for (const auto& r : first.reads)
      if (assigned_in_body.count(r) && r != running)
        prog_.error(n->loc, fmt::format("this scan loop carries '{}' from one iteration to the "
                                        "next other than as its running value; a scan carries "
                                        "one running value, accumulated by a statement of its "
                                        "own at the top of the loop body (s += x[i, j])",
                                        user(r)));
    // A loop that shares a scan label but carries nothing is an ordinary parallel loop.
    if (!acc_at) return IRMutator::mutate_node(n, self);
    const auto& accumulation = *n->body[*acc_at]->as<Assign>();
    const Type s_type = accumulation.target->type;
    if (mentions(acc->operand, {running}))
      prog_.error(accumulation.loc, fmt::format("the element that this scan combines into '{}' "
                                                "reads '{}' itself; a scan combines values that "
                                                "do not depend on the running value",
                                                user(running), user(running)));
    for (size_t i = 0; i < n->body.size(); ++i)
      if (i != *acc_at && Uses::of(n->body[i]).assigns.count(running))
        prog_.error(n->body[i]->loc,
                    fmt::format("'{}' is the running value of the scan loop on line {}; it can "
                                "only be accumulated into there, once per iteration",
                                user(running), line));

    // Before the accumulation: statements that read the running value move after the
    // element is computed, which must not change what they or the rest compute.
    Body compute, use;
    std::vector<std::pair<size_t, Uses>> moved;
    for (size_t i = 0; i < *acc_at; ++i) {
      const StmtPtr& s = n->body[i];
      Uses u = Uses::of(s);
      if (!u.reads.count(running)) {
        for (const auto& [at, m] : moved)
          if (meets(u.assigns, m.reads) || meets(u.loads, m.stores) ||
              meets(u.stores, m.stores) || meets(u.stores, m.loads))
            prog_.error(n->body[at]->loc,
                        fmt::format("this store reads the running value '{}' before the scan "
                                    "accumulates into it, and the scan computes it after line "
                                    "{}, which it depends on (or which depends on it); move "
                                    "the store after that line",
                                    user(running), s->loc.line));
        compute.push_back(s);
        continue;
      }
      auto a = s->as<Assign>();
      if (!a || !a->target->as<Load>())
        prog_.error(s->loc, fmt::format("this statement reads the running value '{}' of the scan "
                                        "loop on line {} before the accumulation; only stores to "
                                        "tensor elements may do that (out[i, j] = {}), or move it "
                                        "after the accumulation",
                                        user(running), line, user(running)));
      moved.emplace_back(i, u);
    }
    Uses e = Uses::of(acc->operand);
    for (const auto& [at, m] : moved)
      if (meets(e.loads, m.stores))
        prog_.error(n->body[at]->loc,
                    fmt::format("this store reads the running value '{}' before the scan "
                                "accumulates into it, and the element the scan combines on line "
                                "{} reads the tensor it stores to",
                                user(running), accumulation.loc.line));

    auto r = std::make_shared<Reduction>();
    r->scan = true;
    r->op = acc->op;
    r->acc = names_.make("scan_carry");
    r->value = names_.make("scan_x");
    r->exclusive = names_.make("scan_excl");
    r->inclusive = names_.make("scan_incl");
    r->acc_type = accumulator_type(s_type, acc->operand->type);
    r->target = accumulation.target;
    ExprPtr carry = var(r->acc, n->loc, r->acc_type);
    r->acc_value = carry;
    r->combined = r->acc_type.scalar == s_type.scalar
                      ? carry
                      : std::make_shared<Cast>(carry, s_type, n->loc);

    ExprPtr operand = acc->operand;
    if (operand->type.scalar != r->acc_type.scalar)
      operand = std::make_shared<Cast>(operand, r->acc_type, operand->loc);
    compute.push_back(std::make_shared<Assign>(var(r->value, accumulation.loc, r->acc_type),
                                               operand, accumulation.loc, accumulation.labels));
    Replace before(running, var(r->exclusive, n->loc, s_type));
    for (const auto& [at, m] : moved) use.push_back(before.mutate(n->body[at]));
    Replace after(running, var(r->inclusive, n->loc, s_type));
    for (size_t i = *acc_at + 1; i < n->body.size(); ++i) use.push_back(after.mutate(n->body[i]));
    compute.insert(compute.end(), use.begin(), use.end());
    return std::make_shared<For>(n->var, n->lo, n->hi, n->step, std::move(compute), n->loc,
                                 n->labels, n->par, std::move(r));
  }
};

}  // namespace

void detect_scans(SpecializedFunction& prog) { prog.body = Detect(prog).mutate(prog.body); }

}  // namespace parir
