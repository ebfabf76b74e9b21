#include "passes/expand_cooperative_calls.h"

#include "ir/fresh_names.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// The first cooperative external that an expression or a statement calls.
class FindCooperative : public IRVisitor {
 public:
  const ExternCall* found = nullptr;

  static const ExternCall* in(const ExprPtr& e) {
    FindCooperative f;
    if (e) f.visit(e);
    return f.found;
  }
  static const ExternCall* in(const StmtPtr& s) {
    FindCooperative f;
    f.visit(s);
    return f.found;
  }

 protected:
  void visit_node(const ExternCall* n) override {
    if (!found && n->fn->cooperative_threads > 0) found = n;
    IRVisitor::visit_node(n);
  }
};

class Expand : public IRMutator {
 public:
  explicit Expand(SpecializedFunction& p) : prog_(p), names_(p) {}

 protected:
  SpecializedFunction& prog_;
  FreshNames names_;

  StmtPtr around(const StmtPtr& s, const ExternCall& call) {
    LoopPar par;
    par.threads = call.fn->cooperative_threads;
    par.tpb = call.fn->cooperative_tpb;
    par.cooperative = true;
    return std::make_shared<For>(names_.make("coop"), int_imm(0, s->loc),
                                 int_imm(par.threads, s->loc), int_imm(1, s->loc), Body{s},
                                 s->loc, std::vector<std::string>{}, par, nullptr);
  }

  [[noreturn]] void misplaced(const ExternCall& call, const char* where) const {
    prog_.error(call.loc, fmt::format("the cooperative external {}() is called in {}; the "
                                      "threads of one block call it together, in a statement of "
                                      "its own or as the value of an assignment",
                                      call.fn->python_name, where));
  }

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    if (FindCooperative::in(n->target)) misplaced(*FindCooperative::in(n->target), "an index");
    const ExternCall* c = FindCooperative::in(n->value);
    return c ? around(self, *c) : self;
  }
  StmtPtr mutate_node(const ExprStmt* n, const StmtPtr& self) override {
    const ExternCall* c = FindCooperative::in(n->value);
    return c ? around(self, *c) : self;
  }
  StmtPtr mutate_node(const AtomicUpdate* n, const StmtPtr& self) override {
    for (const auto* e : {&n->target, &n->compare, &n->value})
      if (const ExternCall* c = FindCooperative::in(*e)) misplaced(*c, "an atomic update");
    return self;
  }
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    for (const auto* e : {&n->lo, &n->hi, &n->step})
      if (const ExternCall* c = FindCooperative::in(*e)) misplaced(*c, "a loop's range");
    if (n->reduction)
      for (const auto& s : n->body)
        if (FindCooperative::in(s))
          prog_.error(s->loc, fmt::format("this statement calls a cooperative external inside "
                                          "the {} loop on line {}, whose threads share the "
                                          "iterations; call it outside the loop",
                                          n->reduction->scan ? "scan" : "reduction",
                                          n->loc.line));
    return IRMutator::mutate_node(n, self);
  }
  StmtPtr mutate_node(const While* n, const StmtPtr& self) override {
    if (const ExternCall* c = FindCooperative::in(n->cond)) misplaced(*c, "a loop's condition");
    return IRMutator::mutate_node(n, self);
  }
  StmtPtr mutate_node(const If* n, const StmtPtr& self) override {
    if (const ExternCall* c = FindCooperative::in(n->cond)) misplaced(*c, "a condition");
    return IRMutator::mutate_node(n, self);
  }
};

}  // namespace

void expand_cooperative_calls(SpecializedFunction& prog) {
  prog.body = Expand(prog).mutate(prog.body);
}

}  // namespace parir
