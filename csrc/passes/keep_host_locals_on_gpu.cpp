#include "passes/keep_host_locals_on_gpu.h"

#include <map>
#include <set>
#include <vector>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Names of the variables an expression reads.
class VarsRead : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_node(const Var* n) override { names.insert(n->name); }
};

// The locals assigned by statements outside every parallel loop (with the values assigned and
// where), the names the host reads (host loops' ranges and conditions, ifs' conditions) and the
// variables of the host loops.
class HostNames {
 public:
  std::set<std::string> assigned, needed, loop_variables;
  std::map<std::string, std::vector<ExprPtr>> values;
  std::map<std::string, Loc> first_assignment;

  void walk(const Body& body) {
    for (const auto& s : body) {
      if (auto f = s->as<For>(); f && !f->par) {
        read(f->lo);
        read(f->hi);
        read(f->step);
        needed.insert(f->var);
        loop_variables.insert(f->var);
        walk(f->body);
      } else if (auto i = s->as<If>()) {
        read(i->cond);
        walk(i->then_body);
        walk(i->else_body);
      } else if (auto w = s->as<While>()) {
        read(w->cond);
        walk(w->body);
      } else if (auto a = s->as<Assign>()) {
        if (auto v = a->target->as<Var>()) {
          assigned.insert(v->name);
          values[v->name].push_back(a->value);
          first_assignment.emplace(v->name, a->loc);
        }
      }
    }
  }

 private:
  void read(const ExprPtr& e) {
    VarsRead r;
    r.visit(e);
    needed.insert(r.names.begin(), r.names.end());
  }
};

// Names that must stay locals: those bound other than by assignment (loop variables, atomic
// updates' old values), and the locals that parallel code (parallel loops, `with parir.gpu:`
// blocks) assigns. Also the names parallel loops' ranges read, with where
// (`in_parallel_ranges`): a kernel's threads do not wait for a value on the GPU before they
// start, so those the host assigns must be host locals.
class StayLocal : public IRVisitor {
 public:
  std::set<std::string> names, assigned_in_parallel_code;
  std::map<std::string, Loc> in_parallel_ranges;

 protected:
  void visit_node(const For* n) override {
    names.insert(n->var);
    if (n->par)
      for (const ExprPtr& e : {n->lo, n->hi, n->step}) {
        VarsRead r;
        r.visit(e);
        for (const auto& name : r.names) in_parallel_ranges.emplace(name, n->loc);
      }
    parallel_depth_ += n->par ? 1 : 0;
    IRVisitor::visit_node(n);
    parallel_depth_ -= n->par ? 1 : 0;
  }
  void visit_node(const GpuBlock* n) override {
    ++parallel_depth_;
    IRVisitor::visit_node(n);
    --parallel_depth_;
  }
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>(); v && parallel_depth_ > 0)
      assigned_in_parallel_code.insert(v->name);
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    if (n->result)
      if (auto v = n->result->as<Var>()) names.insert(v->name);
    IRVisitor::visit_node(n);
  }

 private:
  int parallel_depth_ = 0;
};

// The locals the host computes (SpecializedFunction::host_locals): the int64 and bool locals
// assigned outside the parallel code only, with values the host can compute from host loop
// variables and each other (the largest such set), and the locals the host reads, with those
// their values read (split_host_device explains the ones it cannot compute).
std::set<std::string> host_computed_locals(const SpecializedFunction& prog, const HostNames& host,
                                           const StayLocal& stay) {
  auto kept_local = [&](const std::string& name) {
    return host.assigned.count(name) && !stay.names.count(name) && prog.locals.count(name) &&
           !prog.is_tensor(name);
  };
  std::set<std::string> computed;
  for (const auto& name : host.assigned) {
    if (!kept_local(name) || stay.assigned_in_parallel_code.count(name)) continue;
    const ScalarType t = prog.locals.at(name).scalar;
    if (t == ScalarType::I64 || t == ScalarType::Bool) computed.insert(name);
  }
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> known = computed;
    known.insert(host.loop_variables.begin(), host.loop_variables.end());
    for (auto it = computed.begin(); it != computed.end();) {
      bool ok = true;
      for (const auto& value : host.values.at(*it)) ok = ok && !why_not_on_host(value, known);
      if (ok) {
        ++it;
      } else {
        it = computed.erase(it);
        changed = true;
      }
    }
  }
  std::vector<std::string> work(host.needed.begin(), host.needed.end());
  std::set<std::string> seen;
  while (!work.empty()) {
    const std::string name = work.back();
    work.pop_back();
    if (!kept_local(name) || !seen.insert(name).second) continue;
    computed.insert(name);
    for (const auto& value : host.values.at(name)) {
      VarsRead r;
      r.visit(value);
      work.insert(work.end(), r.names.begin(), r.names.end());
    }
  }
  return computed;
}

// A moved local assigned inside parallel loops none of which is a reduction (`total += w[i]`
// in a loop over threads(n)): every iteration would update the one element at once, losing
// updates. An error that says how to make it a reduction.
class UnreducedUpdates : public IRVisitor {
 public:
  UnreducedUpdates(const SpecializedFunction& prog, const std::set<std::string>& moved)
      : prog_(prog), moved_(moved) {}

 protected:
  void visit_node(const For* n) override {
    if (n->par) loops_.push_back(n);
    IRVisitor::visit_node(n);
    if (n->par) loops_.pop_back();
  }
  void visit_node(const Assign* n) override {
    auto v = n->target->as<Var>();
    if (v && moved_.count(v->name) && !loops_.empty()) {
      bool reduced = false;
      for (const For* f : loops_) reduced = reduced || f->par->reduce || f->par->scan;
      if (!reduced) {
        const For& loop = *loops_.back();
        const std::string label = loop.labels.empty() ? loop.var : loop.labels.front();
        const std::string& name = prog_.user_name(v->name);
        prog_.error(n->loc, fmt::format(
            "'{}' is assigned outside the parallel loops, and here inside the parallel loop "
            "'{}', whose iterations run at the same time: each would update the one '{}' and "
            "updates would be lost. To sum (or take the min or max) into '{}', make the loop a "
            "reduction: parir.threads(n).reduce() for '{}' in the parallel spec",
            name, label, name, name, label));
      }
    }
    IRVisitor::visit_node(n);
  }

 private:
  const SpecializedFunction& prog_;
  const std::set<std::string>& moved_;
  std::vector<const For*> loops_;
};

// Every use of a moved local becomes its element: `total` -> total[0].
class ToElement : public IRMutator {
 public:
  explicit ToElement(const std::map<std::string, std::string>& element_of) : of_(element_of) {}

 protected:
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    auto it = of_.find(n->name);
    if (it == of_.end()) return self;
    return std::make_shared<Load>(it->second, std::vector<ExprPtr>{int_imm(0, n->loc)}, n->type,
                                  n->loc, /*proved=*/true);
  }

 private:
  const std::map<std::string, std::string>& of_;
};

// The names that statements outside `skip` read (not those they only assign).
class ReadsOutside : public IRVisitor {
 public:
  explicit ReadsOutside(const For* skip) : skip_(skip) {}
  std::set<std::string> names;

 protected:
  void visit_node(const Var* n) override { names.insert(n->name); }
  void visit_node(const For* n) override {
    if (n != skip_) IRVisitor::visit_node(n);
  }
  void visit_node(const Assign* n) override {
    if (!n->target->as<Var>()) visit(n->target);
    visit(n->value);
  }

 private:
  const For* skip_;
};

// A scan loop run by the host whose running value is a moved local (`s = 0.0` before `for i in
// range(n): s += x[i]; out[i] = s`, the plainest cumulative sum): a scan carries its running
// value in a local of the code that runs it, so the loop goes into a `with parir.gpu:` block
// that copies the local from its element before the loop and, where anything else reads it,
// back after it, as the user would have written it. With a copy back the copy in reads a
// temporary of its own, which nothing after it in the block writes: a scan over several
// blocks runs as several kernels, and each needs the starting value. Parallel code is left as
// it is.
class ScansOnLocalCopies : public IRMutator {
 public:
  ScansOnLocalCopies(SpecializedFunction& prog, const std::set<std::string>& moved)
      : prog_(prog), moved_(moved), names_(prog) {}

 protected:
  StmtPtr mutate_node(const GpuBlock*, const StmtPtr& self) override { return self; }
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (!n->par) return IRMutator::mutate_node(n, self);
    if (!n->par->scan) return self;
    ReadsOutside reads(n);
    reads.visit(prog_.body);
    Body before, after;
    StmtPtr loop = self;
    for (const auto& name : assigned_locals(n->body)) {
      if (!moved_.count(name)) continue;
      const Type type = prog_.locals.at(name);
      const std::string copy = names_.make(name + "_running");
      prog_.locals[copy] = type;
      prog_.renamed_locals[copy] = prog_.user_name(name);
      ExprPtr start = var(name, n->loc, type);
      if (reads.names.count(name)) {
        const std::string temporary = names_.make(prog_.user_name(name) + "_start");
        prog_.tensors[temporary] = TensorType{type.scalar, {1}, {1}};
        prog_.temporaries.push_back(temporary);
        ExprPtr element = std::make_shared<Load>(
            temporary, std::vector<ExprPtr>{int_imm(0, n->loc)}, type, n->loc, /*proved=*/true);
        before.push_back(std::make_shared<Assign>(element, start, n->loc));
        start = element;
        after.push_back(std::make_shared<Assign>(var(name, n->loc, type),
                                                 var(copy, n->loc, type), n->loc));
      }
      before.push_back(std::make_shared<Assign>(var(copy, n->loc, type), start, n->loc));
      loop = Substitute(name, var(copy, n->loc, type)).mutate(loop);
    }
    if (before.empty()) return self;
    before.push_back(loop);
    before.insert(before.end(), after.begin(), after.end());
    return std::make_shared<GpuBlock>(std::move(before), n->loc);
  }

 private:
  SpecializedFunction& prog_;
  const std::set<std::string>& moved_;
  FreshNames names_;
};

// The host's statements with each run of assignments to the temporaries in one
// `with parir.gpu:` block.
Body wrap_host_assignments(const Body& body, const std::set<std::string>& temporaries) {
  Body out, run;
  auto flush = [&] {
    if (run.empty()) return;
    Loc loc = run.front()->loc;
    out.push_back(std::make_shared<GpuBlock>(std::move(run), loc));
    run.clear();
  };
  for (const auto& s : body) {
    auto a = s->as<Assign>();
    auto element = a ? a->target->as<Load>() : nullptr;
    if (element && temporaries.count(element->tensor)) {
      run.push_back(s);
      continue;
    }
    flush();
    if (auto f = s->as<For>(); f && !f->par) {
      out.push_back(std::make_shared<For>(f->var, f->lo, f->hi, f->step,
                                          wrap_host_assignments(f->body, temporaries), f->loc,
                                          f->labels, f->par, f->reduction));
    } else if (auto i = s->as<If>()) {
      out.push_back(std::make_shared<If>(i->cond, wrap_host_assignments(i->then_body, temporaries),
                                         wrap_host_assignments(i->else_body, temporaries),
                                         i->loc, i->labels));
    } else if (auto w = s->as<While>()) {
      out.push_back(std::make_shared<While>(w->cond, wrap_host_assignments(w->body, temporaries),
                                            w->loc, w->labels));
    } else {
      out.push_back(s);
    }
  }
  flush();
  return out;
}

}  // namespace

void keep_host_locals_on_gpu(SpecializedFunction& prog) {
  HostNames host;
  host.walk(prog.body);
  StayLocal stay;
  stay.visit(prog.body);
  for (const auto& [name, loop] : stay.in_parallel_ranges) {
    if (!host.assigned.count(name)) {
      stay.names.insert(name);  // a kernel's own local or a loop variable
    } else if (stay.assigned_in_parallel_code.count(name)) {
      prog.error(loop, fmt::format("the range of this parallel loop reads '{}', which parallel "
                                   "code assigns (on the GPU), but the host must know a "
                                   "parallel loop's range when it launches the kernel: compute "
                                   "'{}' outside the parallel loops and `with parir.gpu:` "
                                   "blocks, or loop over the largest range and skip the "
                                   "iterations past the end with an if",
                                   prog.user_name(name), prog.user_name(name)));
    } else {
      host.needed.insert(name);  // the host passes the kernel its value
    }
  }
  prog.host_locals = host_computed_locals(prog, host, stay);
  std::map<std::string, std::string> element_of;  // local -> its temporary
  FreshNames names(prog);
  for (const auto& local : host.assigned) {
    auto type = prog.locals.find(local);
    if (stay.names.count(local) || type == prog.locals.end() || prog.is_tensor(local) ||
        prog.host_locals.count(local))
      continue;
    std::string temporary = names.make(prog.user_name(local) + "_on_gpu");
    prog.tensors[temporary] = TensorType{type->second.scalar, {1}, {1}};
    prog.temporaries.push_back(temporary);
    element_of[local] = temporary;
  }
  if (element_of.empty()) return;
  std::set<std::string> moved;
  for (const auto& [local, temporary] : element_of) moved.insert(local);
  UnreducedUpdates(prog, moved).visit(prog.body);
  prog.body = ScansOnLocalCopies(prog, moved).mutate(prog.body);
  std::set<std::string> temporaries;
  for (const auto& [local, temporary] : element_of) {
    temporaries.insert(temporary);
    prog.locals.erase(local);
  }
  prog.body = wrap_host_assignments(ToElement(element_of).mutate(prog.body), temporaries);
}

}  // namespace parir
