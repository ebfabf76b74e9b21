#include "passes/split_parallel_nests.h"

#include <set>

#include "ir/visitor.h"

namespace parir {
namespace {

// Locals assigned and read in a list of statements.
class LocalUse : public IRVisitor {
 public:
  std::map<std::string, Loc> assigned, read;

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) assigned.emplace(v->name, n->loc);
    else visit(n->target);
    visit(n->value);
  }
  void visit_node(const AtomicUpdate* n) override {
    visit(n->target);
    visit(n->compare);
    visit(n->value);
    if (n->result) assigned.emplace(n->result->as<Var>()->name, n->loc);
  }
  void visit_node(const Var* n) override { read.emplace(n->name, n->loc); }
};

// Checks that no part reads a local that an earlier part assigns.
void check_parts(const SpecializedFunction& prog, const std::vector<Body>& parts, const char* why) {
  std::map<std::string, Loc> earlier;
  for (const auto& part : parts) {
    LocalUse use;
    use.visit(part);
    for (const auto& [name, loc] : use.read) {
      auto e = earlier.find(name);
      if (e != earlier.end() && prog.locals.count(name) && !use.assigned.count(name))
        prog.error(loc, fmt::format("{}, so this code runs in a separate kernel from the "
                                    "assignment to local '{}' on line {}, whose value does not "
                                    "carry over; compute it again here or pass it through a "
                                    "tensor",
                                    why, name, e->second.line));
    }
    earlier.insert(use.assigned.begin(), use.assigned.end());
  }
}

const For* parallel_loop(const StmtPtr& s) {
  auto f = s->as<For>();
  return f && f->par ? f : nullptr;
}

class Split : public IRMutator {
 public:
  explicit Split(const SpecializedFunction& p) : prog_(p) {}

  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      if (auto f = parallel_loop(s)) {
        for (auto& part : split_loop(*f, s)) out.push_back(part);
      } else if (s->as<GpuBlock>()) {
        out.push_back(s);
      } else if (StmtPtr m = IRMutator::mutate(s)) {
        out.push_back(m);  // host loops and ifs: look inside
      }
    }
    return out;
  }
  using IRMutator::mutate;

 private:
  const SpecializedFunction& prog_;

  // Host code only: the mutators stop at kernels (handled in mutate(Body) above).
  Body split_loop(const For& f, const StmtPtr& self) {
    std::vector<const For*> children;
    for (const auto& s : f.body)
      if (auto c = parallel_loop(s)) children.push_back(c);
    bool differ = false, one_block = true;
    for (const For* c : children) {
      differ = differ || c->par->threads != children[0]->par->threads;
      one_block = one_block && c->par->threads <= c->par->threads_per_block();
    }
    if (!differ || one_block) return {self};
    // Group the body: each group runs up to and including a run of siblings with one thread
    // count; statements after the last sibling join the last group.
    std::vector<Body> parts(1);
    int64_t current = -1;
    for (const auto& s : f.body) {
      auto c = parallel_loop(s);
      if (c && current >= 0 && c->par->threads != current) parts.emplace_back();
      if (c) current = c->par->threads;
      parts.back().push_back(s);
    }
    check_parts(prog_, parts,
                "the parallel loops inside this loop request different numbers of threads");
    Body out;
    for (auto& p : parts)
      out.push_back(std::make_shared<For>(f.var, f.lo, f.hi, f.step, std::move(p), f.loc,
                                          f.labels, f.par, f.reduction));
    return out;
  }
};

}  // namespace

void split_parallel_nests(SpecializedFunction& prog) { prog.body = Split(prog).mutate(prog.body); }

}  // namespace parir
