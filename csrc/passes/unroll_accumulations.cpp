#include "passes/unroll_accumulations.h"

#include <cstdlib>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

constexpr int kUnroll = 4;
constexpr int64_t kMinIterationsPerThread = 128;
constexpr int64_t kMinElementsPerIteration = 32;  // 128 bytes of 4-byte elements: a new row

// An offset with each select replaced by its else branch: a negative-index wrap
// `(i < 0) ? i + n : i` becomes i, so that coefficient() sees the walk's usual stride.
class WithoutWraps : public IRMutator {
 protected:
  ExprPtr mutate_node(const Select* n, const ExprPtr&) override { return mutate(n->b); }
};

// The loads in a body whose offsets mention `var`.
class MovingLoads : public IRVisitor {
 public:
  explicit MovingLoads(std::string var) : var_{std::move(var)} {}
  std::vector<const FlatLoad*> loads;

 protected:
  void visit_node(const FlatLoad* n) override {
    if (mentions(n->offset, var_)) loads.push_back(n);
    IRVisitor::visit_node(n);
  }

 private:
  std::set<std::string> var_;
};

class Unroll : public IRMutator {
 public:
  explicit Unroll(const Kernel& k) : k_(k) {}
  int depth = 0;  // enclosing parallel levels

 protected:
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    const int64_t workers = n->par ? workers_at(depth) : 1;
    if (n->par) ++depth;
    StmtPtr m = IRMutator::mutate_node(n, self);
    if (n->par) --depth;
    if (workers == 0 || !walks_a_column(*n) || !long_enough(*n, workers)) return m;
    auto f = std::make_shared<For>(*m->as<For>());
    f->unroll = kUnroll;
    return f;
  }

 private:
  const Kernel& k_;

  // The threads that share a parallel loop at this depth; 0 for a level of blocks.
  int64_t workers_at(int d) const {
    if (d >= static_cast<int>(k_.levels.size())) return 0;
    const ParLevel& level = k_.levels[d];
    return level.threads ? level.count : 0;
  }

  static bool walks_a_column(const For& f) {
    const Reduction* r = f.reduction.get();
    if ((r && (r->scan || !r->chunk.empty())) || (f.par && f.par->cooperative)) return false;
    // Assignments to locals only: no store, atomic update, branch or inner loop. An external
    // call may still write through the pointers it is given.
    for (const auto& s : f.body)
      if (!s->as<Assign>() || !s->as<Assign>()->target->as<Var>()) return false;
    if (contains(f.body, ExprKind::ExternCall)) return false;
    MovingLoads moving(f.var);
    moving.visit(f.body);
    auto step = f.step->as<IntImm>();
    if (moving.loads.size() != 1 || !step) return false;
    std::optional<int64_t> c =
        coefficient(WithoutWraps().mutate(moving.loads[0]->offset), f.var);
    return c && std::abs(*c) * std::abs(step->value) >= kMinElementsPerIteration;
  }

  static bool long_enough(const For& f, int64_t workers) {
    std::optional<int64_t> trip = constant_trip_count(f);
    return !trip || (*trip + workers - 1) / workers >= kMinIterationsPerThread;
  }
};

}  // namespace

void unroll_accumulations(Lowered& lowered) {
  for (auto& k : lowered.kernels) {
    Unroll unroll(k);
    unroll.depth = k.root->as<GpuBlock>() ? 1 : 0;  // a block root is the kernel's level 0
    k.root = unroll.mutate(k.root);
  }
}

}  // namespace parir
