#include "passes/reject_overlapping_outputs.h"

#include "ir/visitor.h"

namespace parir {
namespace {

class FirstStores : public IRVisitor {
 public:
  explicit FirstStores(const SpecializedFunction& prog) : prog_(prog) {}

 protected:
  void visit_node(const Assign* n) override {
    check(n->target, n->loc);
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    check(n->target, n->loc);
    IRVisitor::visit_node(n);
  }

 private:
  const SpecializedFunction& prog_;

  void check(const ExprPtr& target, const Loc& loc) const {
    auto load = target->as<Load>();
    if (!load) return;
    const TensorType& t = prog_.tensors.at(load->tensor);
    for (int d = 0; d < t.rank(); ++d)
      if (t.strides[d] == 0 && t.shape[d] > 1)
        prog_.error(loc, fmt::format("this statement writes '{0}', whose {1} elements along "
                                     "dimension {2} are one element in memory (stride 0, as "
                                     "expand() makes): writes to different elements would "
                                     "overwrite each other. Pass a tensor with memory of its "
                                     "own ({0}.contiguous(), or torch.empty)",
                                     display_name(load->tensor), t.shape[d], d));
  }
};

}  // namespace

void reject_overlapping_outputs(const SpecializedFunction& prog) { FirstStores(prog).visit(prog.body); }

}  // namespace parir
