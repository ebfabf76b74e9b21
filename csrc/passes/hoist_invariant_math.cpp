#include "passes/hoist_invariant_math.h"

#include <map>
#include <set>
#include <string>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Replaces, in a loop's body, the largest float subexpressions that call the math library and
// read only `invariant` variables by locals, and collects the assignments of those locals.
class ReplaceInvariantMath : public IRMutator {
 public:
  ReplaceInvariantMath(SpecializedFunction& prog, Kernel& k, FreshNames& names,
                       std::set<std::string> invariant)
      : prog_(prog), k_(k), names_(names), invariant_(std::move(invariant)) {}

  Body assignments;  // of the new locals, in the order first met

 protected:
  // The kinds of node a hoisted expression can be (one that calls the math library).
#define PARIR_HOIST_OR_VISIT_CHILDREN(Kind)                               \
  ExprPtr mutate_node(const Kind* n, const ExprPtr& self) override {      \
    if (ExprPtr local = hoisted(self)) return local;                      \
    return IRMutator::mutate_node(n, self);                               \
  }
  PARIR_HOIST_OR_VISIT_CHILDREN(Unary)
  PARIR_HOIST_OR_VISIT_CHILDREN(Binary)
  PARIR_HOIST_OR_VISIT_CHILDREN(Call)
  PARIR_HOIST_OR_VISIT_CHILDREN(Cast)
  PARIR_HOIST_OR_VISIT_CHILDREN(Select)
#undef PARIR_HOIST_OR_VISIT_CHILDREN

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;
  std::set<std::string> invariant_;
  std::map<std::string, ExprPtr> locals_;  // printed expression -> its local

  // The local that holds `e` when `e` is worth hoisting, else null.
  ExprPtr hoisted(const ExprPtr& e) {
    if (!is_float(e->type.scalar) || !contains(e, ExprKind::Call) || !pure_of(e, invariant_))
      return nullptr;
    const std::string key = to_string(e);
    auto found = locals_.find(key);
    if (found != locals_.end()) return found->second;
    const std::string name = names_.make("invariant");
    add_kernel_local(prog_, k_, name, e->type);
    ExprPtr local = var(name, e->loc, e->type);
    assignments.push_back(std::make_shared<Assign>(local, e, e->loc));
    locals_.emplace(key, local);
    return local;
  }
};

class HoistInvariantMath : public IRMutator {
 public:
  HoistInvariantMath(SpecializedFunction& prog, Kernel& k, FreshNames& names)
      : prog_(prog), k_(k), names_(names), invariant_(k.host_vars.begin(), k.host_vars.end()) {}

  using IRMutator::mutate;
  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      const For* f = s->as<For>();
      if (!f) {
        if (StmtPtr m = IRMutator::mutate(s)) out.push_back(std::move(m));
        continue;
      }
      if (f->reduction) {
        out.push_back(s);
        continue;
      }
      std::set<std::string> invariant = invariant_;
      for (const auto& name : assigned_names(f->body)) invariant.erase(name);
      invariant.erase(f->var);
      ReplaceInvariantMath replace(prog_, k_, names_, std::move(invariant));
      Body loop_body = replace.mutate(f->body);
      out.insert(out.end(), replace.assignments.begin(), replace.assignments.end());
      // Then the loops inside, where the variable of a sequential loop is invariant too.
      const bool added = !f->par && invariant_.insert(f->var).second;
      loop_body = mutate(loop_body);
      if (added) invariant_.erase(f->var);
      // Unchanged (the same statements), the loop stays shared with the input.
      out.push_back(loop_body == f->body ? s : with_body(*f, std::move(loop_body)));
    }
    return out;
  }

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;
  std::set<std::string> invariant_;  // the host variables and enclosing sequential loops'
};

}  // namespace

void hoist_invariant_math(SpecializedFunction& prog, Lowered& lowered) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) k.root = HoistInvariantMath(prog, k, names).mutate(k.root);
}

}  // namespace parir
