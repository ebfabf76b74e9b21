#include "passes/specialize_aligned_kernels.h"

#include <map>

#include "ir/visitor.h"

namespace parir {
namespace {

// The suffix of a kernel's aligned copy.
constexpr const char* kAlignedSuffix = "_aligned";

// Whether an expression is, or contains, a test of alignment, and whether all of them test 16
// bytes or a divisor of it (what the runtime checks before it launches the copy).
class FindsAlignmentTests : public IRVisitor {
 public:
  bool found = false;
  bool within_16_bytes = true;

 protected:
  void visit_node(const PointersAligned* n) override {
    found = true;
    if (n->bytes <= 0 || 16 % n->bytes != 0) within_16_bytes = false;
  }
};

// Every alignment test taken as true: `tested && rest` becomes `rest`, and an if whose whole
// condition was the test is replaced by its then-branch.
class AssumeAligned : public IRMutator {
 public:
  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      auto i = s->as<If>();
      if (i && i->cond->as<PointersAligned>() && i->labels.empty()) {
        Body taken = mutate(i->then_body);
        out.insert(out.end(), taken.begin(), taken.end());
        continue;
      }
      if (StmtPtr m = IRMutator::mutate(s)) out.push_back(m);
    }
    return out;
  }
  using IRMutator::mutate;

 protected:
  ExprPtr mutate_node(const PointersAligned* n, const ExprPtr&) override {
    return bool_imm(true, n->loc);
  }
  ExprPtr mutate_node(const Binary* n, const ExprPtr& self) override {
    if (n->op == BinaryOp::And) {
      if (n->a->as<PointersAligned>()) return mutate(n->b);
      if (n->b->as<PointersAligned>()) return mutate(n->a);
    }
    return IRMutator::mutate_node(n, self);
  }
};

}  // namespace

void specialize_aligned_kernels(Lowered& lowered) {
  std::vector<Kernel> copies;
  std::map<std::string, std::string> copy_of;  // kernel -> its copy's name
  for (const auto& k : lowered.kernels) {
    FindsAlignmentTests tests;
    tests.visit(k.root);
    if (!tests.found || !tests.within_16_bytes) continue;
    Kernel copy = k;
    copy.name = copy_of[k.name] = k.name + kAlignedSuffix;
    copy.root = AssumeAligned().mutate(k.root);
    copies.push_back(std::move(copy));
  }
  if (copies.empty()) return;
  for_each_launch(lowered.plan.steps, [&](PlanStep& step) {
    if (auto it = copy_of.find(step.kernel); it != copy_of.end()) step.aligned_kernel = it->second;
  });
  // After the kernels they copy, so that the source reads the general kernel first.
  for (auto& c : copies) lowered.kernels.push_back(std::move(c));
  resolve_launch_args(lowered.plan);
}

}  // namespace parir
