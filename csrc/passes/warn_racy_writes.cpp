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
    if (parallel_ > 0 && target) {
      for (const auto& i : target->indices) {
        if (!contains(i, ExprKind::Load)) continue;
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
  SpecializedFunction& prog_;
  int parallel_ = 0;
  std::set<int> warned_;
};

}  // namespace

void warn_racy_writes(SpecializedFunction& prog) { FindRacyWrites(prog).visit(prog.body); }

}  // namespace parir
