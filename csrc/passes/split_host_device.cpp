#include "passes/split_host_device.h"

#include <set>

#include "ir/visitor.h"
#include "ir/queries.h"

namespace parir {
namespace {

// Stops with an error when the host cannot compute `e` (why_not_on_host), naming what it uses.
void check_on_host(const SpecializedFunction& prog, const ExprPtr& e,
                   const std::set<std::string>& host_vars, const char* what) {
  auto fault = why_not_on_host(e, host_vars);
  if (!fault) return;
  const ExprNode* n = fault->node;
  switch (fault->reason) {
    case NotOnHost::Reason::GpuValue:
      prog.error(n->loc, fmt::format("the {} uses '{}', which is only known on the GPU; code "
                                     "outside parallel loops runs on the host. Move it inside "
                                     "`with parir.gpu:` or a parallel loop",
                                     what, n->as<Var>()->name));
    case NotOnHost::Reason::TensorData:
      prog.error(n->loc, fmt::format("the {} reads tensor '{}', whose data is on the GPU; code "
                                     "outside parallel loops runs on the host. Move it inside "
                                     "`with parir.gpu:` or a parallel loop",
                                     what, n->as<Load>()->tensor));
    case NotOnHost::Reason::Float:
      prog.error(n->loc, fmt::format("the {} computes with floating-point values, but code "
                                     "outside parallel loops runs on the host and may only use "
                                     "integers",
                                     what));
    case NotOnHost::Reason::Builtin:
      prog.error(n->loc, fmt::format("the {} calls {}(), which the host does not compute (it "
                                     "computes min, max and abs of integers); code outside "
                                     "parallel loops runs on the host. Compute it in the "
                                     "kernels that use it",
                                     what, python_name(n->as<Call>()->fn)));
    case NotOnHost::Reason::Extern:
      prog.error(n->loc, fmt::format("the {} calls the external device function {}(), which only "
                                     "runs on the GPU; code outside parallel loops runs on the "
                                     "host",
                                     what, n->as<ExternCall>()->fn->python_name));
  }
}

// A kernel may read the locals the host computes (as arguments) but not assign them.
class KernelAssignsHostLocal : public IRVisitor {
 public:
  explicit KernelAssignsHostLocal(const SpecializedFunction& p) : prog_(p) {}

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>(); v && prog_.host_locals.count(v->name)) {
      const std::string& name = prog_.user_name(v->name);
      prog_.error(n->loc, fmt::format("'{}' is assigned outside the parallel loops and read by "
                                      "the host (in a host loop's range or condition, or an "
                                      "if's condition), so the host computes it; code on the "
                                      "GPU may read '{}' but not assign it. For a loop that "
                                      "runs until the GPU says so (a convergence flag), put "
                                      "the whole loop inside `with parir.gpu:`; otherwise give "
                                      "the GPU's value a name of its own",
                                      name, name));
    }
    IRVisitor::visit_node(n);
  }

 private:
  const SpecializedFunction& prog_;
};

class Splitter {
 public:
  explicit Splitter(const SpecializedFunction& p) : prog_(p) {}

  Lowered run() {
    if (!contains_parallel_code(prog_.body, /*gpu_blocks=*/true)) no_parallel_code();
    host_vars_ = prog_.host_locals;
    Lowered out;
    out.plan.function = prog_.name;
    out.plan.signature = prog_.signature;
    out.plan.steps = steps(prog_.body);
    if (roots_.empty()) no_parallel_code();
    for (const auto& root : roots_) KernelAssignsHostLocal(prog_).visit(root);
    for (size_t i = 0; i < roots_.size(); ++i) {
      Kernel k;
      k.name = roots_.size() == 1 ? prog_.name : fmt::format("{}_{}", prog_.name, i);
      k.root = roots_[i];
      out.kernels.push_back(std::move(k));
    }
    // Name the launches now that the number of kernels is known.
    for_each_launch(out.plan.steps,
                    [&](PlanStep& s) { s.kernel = out.kernels[std::stoul(s.kernel)].name; });
    return out;
  }

 private:
  const SpecializedFunction& prog_;
  std::set<std::string> host_vars_;
  std::vector<StmtPtr> roots_;

  // The warnings so far say why, where the specification's labels match none of the loops'.
  [[noreturn]] void no_parallel_code() {
    fail("{} ({}) has no parallel code: label a for-loop with parir.label('N') and map it with "
         "opts=parir.par({{'N': parir.threads(n)}}), or wrap the body in `with parir.gpu:`{}",
         prog_.name, prog_.source->filename,
         prog_.warnings.empty() ? "" : fmt::format(" ({})", fmt::join(prog_.warnings, "; ")));
  }

  void check(const ExprPtr& e, const char* what) { check_on_host(prog_, e, host_vars_, what); }

  std::vector<PlanStep> steps(const Body& body) {
    std::vector<PlanStep> out;
    for (const auto& s : body) {
      if (auto f = s->as<For>(); f && !f->par) {
        check(f->lo, "loop bound");
        check(f->hi, "loop bound");
        check(f->step, "loop step");
        PlanStep st;
        st.kind = PlanStep::Kind::For;
        st.var = f->var;
        st.lo = f->lo;
        st.hi = f->hi;
        st.step = f->step;
        bool shadow = host_vars_.count(f->var);
        host_vars_.insert(f->var);
        st.body = steps(f->body);
        if (!shadow) host_vars_.erase(f->var);
        out.push_back(std::move(st));
      } else if (auto i = s->as<If>()) {
        check(i->cond, "condition");
        PlanStep st;
        st.kind = PlanStep::Kind::If;
        st.cond = i->cond;
        st.body = steps(i->then_body);
        st.else_body = steps(i->else_body);
        out.push_back(std::move(st));
      } else if (s->as<For>() || s->as<GpuBlock>()) {
        PlanStep st;
        st.kind = PlanStep::Kind::Launch;
        st.kernel = std::to_string(roots_.size());  // replaced by the kernel name in run()
        roots_.push_back(s);
        out.push_back(std::move(st));
      } else if (auto w = s->as<While>()) {
        check(w->cond, "loop condition");
        PlanStep st;
        st.kind = PlanStep::Kind::While;
        st.cond = w->cond;
        st.body = steps(w->body);
        out.push_back(std::move(st));
      } else if (auto a = s->as<Assign>();
                 a && a->target->as<Var>() && prog_.host_locals.count(a->target->as<Var>()->name)) {
        out.push_back(host_assignment(*a));
      } else {
        prog_.error(s->loc, "this statement is outside any parallel loop, so it would run on "
                            "the host, which cannot touch GPU data. Wrap it in "
                            "`with parir.gpu:` to run it sequentially on the GPU, or put it "
                            "inside a parallel loop");
      }
    }
    return out;
  }

  // `name = value` for a local the host computes: an integer from host values.
  PlanStep host_assignment(const Assign& a) {
    const std::string& name = a.target->as<Var>()->name;
    const Type& type = prog_.locals.at(name);
    if (is_float(type.scalar))
      prog_.error(a.loc, fmt::format("'{}' is assigned outside the parallel loops and read by "
                                     "the host (in a host loop's range or condition, or an if's "
                                     "condition), so the host computes it, but the host computes "
                                     "with integers only and '{}' is a {}: compute the host's "
                                     "loops and conditions from integers, or run the loop "
                                     "inside `with parir.gpu:`",
                                     prog_.user_name(name), prog_.user_name(name),
                                     python_name(type.scalar)));
    check(a.value, "assignment");
    PlanStep st;
    st.kind = PlanStep::Kind::Assign;
    st.var = name;
    st.value = a.value;
    return st;
  }
};

}  // namespace

Lowered split_host_device(const SpecializedFunction& prog) { return Splitter(prog).run(); }

}  // namespace parir
