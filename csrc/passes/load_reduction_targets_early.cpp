#include "passes/load_reduction_targets_early.h"

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Whether a body may write memory: stores to tensor elements, atomic updates, calls of
// externals (which may write through the tensors they are given).
bool writes_memory(const Body& body) {
  return !stored_tensors(body).empty() || contains(body, StmtKind::AtomicUpdate) ||
         contains(body, ExprKind::ExternCall) || contains(body, StmtKind::ExprStmt);
}

// Replaces reads of one tensor element (the same tensor and offset as written) with a local.
class ReplaceElement : public IRMutator {
 public:
  ReplaceElement(const FlatLoad& element, ExprPtr with)
      : tensor_(element.tensor), offset_(to_string(element.offset)), with_(std::move(with)) {}

 protected:
  ExprPtr mutate_node(const FlatLoad* n, const ExprPtr& self) override {
    if (n->tensor == tensor_ && to_string(n->offset) == offset_) return with_;
    return IRMutator::mutate_node(n, self);
  }

 private:
  std::string tensor_, offset_;
  ExprPtr with_;
};

class EarlyTargets : public IRMutator {
 public:
  EarlyTargets(SpecializedFunction& prog, Kernel& k, FreshNames& names)
      : prog_(prog), k_(k), names_(names) {}

  using IRMutator::mutate;
  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      StmtPtr m = IRMutator::mutate(s);
      if (!m) continue;
      const For* f = m->as<For>();
      const FlatLoad* target = f ? early_target(*f) : nullptr;
      if (!target) {
        out.push_back(m);
        continue;
      }
      const std::string name = names_.make(target->tensor + "_before");
      add_kernel_local(prog_, k_, name, target->type);
      ExprPtr before = var(name, f->loc, target->type);
      out.push_back(std::make_shared<Assign>(before, f->reduction->target, f->loc));
      auto r = std::make_shared<Reduction>(*f->reduction);
      r->combined = ReplaceElement(*target, before).mutate(r->combined);
      out.push_back(std::make_shared<For>(f->var, f->lo, f->hi, f->step, f->body, f->loc,
                                          f->labels, f->par, std::move(r)));
    }
    return out;
  }

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;

  // The loop's reduction target when it may be loaded before the loop.
  const FlatLoad* early_target(const For& f) const {
    const Reduction* r = f.reduction.get();
    if (!r || r->scan || r->is_index() || !r->chunk.empty() || k_.atomic_reductions.count(r))
      return nullptr;
    const FlatLoad* target = r->target->as<FlatLoad>();
    if (!target || !target->checks.empty()) return nullptr;
    if (writes_memory(f.body)) return nullptr;
    std::set<std::string> changing = assigned_names(f.body);
    changing.insert(f.var);
    changing.insert(r->acc);
    return mentions(target->offset, changing) ? nullptr : target;
  }
};

}  // namespace

void load_reduction_targets_early(SpecializedFunction& prog, Lowered& lowered) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    if (k.cluster != 1) continue;
    // Loops inside the root: a root that is itself a reduction loop (over the kernel's only
    // level) has no code before it to load in, and combines once per kernel.
    k.root = EarlyTargets(prog, k, names).mutate(k.root);
  }
}

}  // namespace parir
