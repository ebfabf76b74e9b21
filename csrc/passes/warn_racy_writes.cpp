#include "passes/warn_racy_writes.h"

#include <set>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

class FindRacyWrites : public IRVisitor {
 public:
  explicit FindRacyWrites(SpecializedFunction& prog) : prog_(prog) {}

 protected:
  void visit_node(const For* n) override {
    parallel_ += n->par ? 1 : 0;
    IRVisitor::visit_node(n);
    parallel_ -= n->par ? 1 : 0;
  }

  void visit_node(const Assign* n) override {
    auto target = n->target->as<Load>();
    // `k = idx[i]` and then `y[k] = ...`: a local holding data read from memory chooses the
    // element as the read itself would.
    if (auto v = n->target->as<Var>(); v && parallel_ > 0 && chosen_by_data(n->value))
      data_locals_.insert(v->name);
    if (parallel_ > 0 && target) {
      for (const auto& i : target->indices) {
        if (!chosen_by_data(i)) continue;
        if (warned_.insert(n->loc.line).second)
          prog_.warn(n->loc, fmt::format("this write to '{}' inside a parallel loop goes to an "
                                         "element chosen by data read from memory; iterations "
                                         "that choose the same element race and lose updates "
                                         "(parir.atomic_add and the other parir.atomic_* "
                                         "functions update an element atomically)",
                                         display_name(target->tensor)));
        break;
      }
    }
    IRVisitor::visit_node(n);
  }

 private:
  bool chosen_by_data(const ExprPtr& e) const {
    return contains(e, ExprKind::Load) || mentions(e, data_locals_);
  }

  SpecializedFunction& prog_;
  int parallel_ = 0;
  std::set<int> warned_;
  std::set<std::string> data_locals_;  // locals assigned values read from memory
};

}  // namespace

void warn_racy_writes(SpecializedFunction& prog) { FindRacyWrites(prog).visit(prog.body); }

}  // namespace parir
