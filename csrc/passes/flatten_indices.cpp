#include "passes/flatten_indices.h"

#include <map>
#include <optional>

#include "ir/visitor.h"
#include "passes/simplify.h"

namespace parir {
namespace {

class Flatten : public IRMutator {
 public:
  // Check sites are numbered on from `sites` (the plan's list), for kernel `kernel`.
  Flatten(const SpecializedFunction& prog, const std::string& kernel,
          std::vector<BoundsSite>* sites)
      : prog_(prog), kernel_(kernel), sites_(sites) {}

  bool checked = false;  // some access got a run-time check

  // The reductions of the kernel as they were before flattening, and what they became.
  std::map<const Reduction*, const Reduction*> renewed;

 protected:
  ExprPtr mutate_node(const Load* n, const ExprPtr&) override {
    std::vector<ExprPtr> indices;
    for (const auto& i : n->indices) indices.push_back(mutate(i));
    const TensorType& t = prog_.tensors.at(n->tensor);
    const Type i64{ScalarType::I64, false};
    const Loc& loc = n->loc;
    ExprPtr offset = int_imm(0, loc, i64);
    std::vector<IndexCheck> checks;
    for (size_t d = 0; d < indices.size(); ++d) {
      ExprPtr idx = indices[d];
      if (sites_ && !n->in_bounds) check(*n, d, idx, t.shape[d], checks);
      if (auto c = idx->as<IntImm>(); c && c->value < 0) {
        idx = int_imm(c->value + t.shape[d], loc, i64);
      } else if (!nonnegative(idx)) {
        ExprPtr negative =
            binary(BinaryOp::Lt, idx, int_imm(0, loc, i64), loc, Type{ScalarType::Bool, false});
        ExprPtr wrapped = binary(BinaryOp::Add, idx, int_imm(t.shape[d], loc, i64), loc, i64);
        idx = std::make_shared<Select>(negative, wrapped, idx, i64, loc);
      }
      ExprPtr term = binary(BinaryOp::Mul, idx, int_imm(t.strides[d], loc, i64), loc, i64);
      offset = binary(BinaryOp::Add, offset, term, loc, i64);
    }
    return std::make_shared<FlatLoad>(n->tensor, simplify(offset), n->type, loc,
                                      std::move(checks));
  }

  StmtPtr mutate_node(const For* n, const StmtPtr&) override {
    // The bounds are evaluated outside the loop; the reduction's result is stored after it.
    ExprPtr lo = mutate(n->lo), hi = mutate(n->hi), step = mutate(n->step);
    enter_loop(*n);
    Body body = mutate(n->body);
    leave_loop(*n);
    std::shared_ptr<const Reduction> reduction = n->reduction;
    if (reduction) {
      PARIR_CHECK(reduction->combined,
                  "a reduction loop without its combination; call detect_reductions before "
                  "flatten_indices");
      Reduction r = *reduction;
      if (!r.chunk.empty()) lower_bounds_[r.chunk].push_back(0);  // a block's number
      r.target = mutate(r.target);
      r.acc_value = mutate(r.acc_value);
      r.combined = mutate(r.combined);
      if (r.chunk_totals) r.chunk_totals = mutate(r.chunk_totals);
      if (r.scan_result) r.scan_result = mutate(r.scan_result);
      if (!r.chunk.empty()) forget(r.chunk);
      auto flat = std::make_shared<const Reduction>(std::move(r));
      renewed[reduction.get()] = flat.get();
      reduction = flat;
    }
    return std::make_shared<For>(n->var, lo, hi, step, std::move(body), n->loc, n->labels,
                                 n->par, std::move(reduction));
  }

 private:
  const SpecializedFunction& prog_;
  const std::string& kernel_;
  std::vector<BoundsSite>* sites_;  // null: no run-time checks
  // The lowest value of each variable of the enclosing loops, innermost definition last
  // (nullopt: not known, for a loop that shadows the name without a constant start).
  std::map<std::string, std::vector<std::optional<int64_t>>> lower_bounds_;

  void forget(const std::string& name) {
    auto it = lower_bounds_.find(name);
    if (it == lower_bounds_.end()) return;
    it->second.pop_back();
    if (it->second.empty()) lower_bounds_.erase(it);
  }

  // A run-time check of index `idx` of dimension `d`, unless it is a constant within range.
  void check(const Load& l, size_t d, const ExprPtr& idx, int64_t extent,
             std::vector<IndexCheck>& checks) {
    if (auto c = idx->as<IntImm>(); c && c->value >= -extent && c->value < extent) return;
    BoundsSite site;
    site.id = static_cast<int>(sites_->size()) + 1;
    site.kernel = kernel_;
    site.tensor = l.tensor;
    site.dim = static_cast<int>(d);
    site.extent = extent;
    site.line = l.loc.line;
    const SourceInfo* src = l.loc.src ? l.loc.src : prog_.source.get();
    site.file = src->filename;
    sites_->push_back(site);
    checks.push_back(IndexCheck{idx, extent, site.id});
    checked = true;
  }

  // Whether an index is certainly >= 0, so that Python's negative indexing needs no check
  // (x[i - 1] in a loop from 1, say).
  bool nonnegative(const ExprPtr& e) const {
    auto lo = lower_bound(e);
    return lo && *lo >= 0;
  }

  // A value the integer expression is never below, when one is known. The bounds involved are
  // loop starts and constants of index arithmetic, far from overflowing.
  std::optional<int64_t> lower_bound(const ExprPtr& e) const {
    constexpr int64_t kLimit = int64_t{1} << 40;
    auto small = [&](std::optional<int64_t> v) -> std::optional<int64_t> {
      if (v && std::abs(*v) < kLimit) return v;
      return std::nullopt;
    };
    if (auto i = e->as<IntImm>()) return small(i->value);
    if (auto v = e->as<Var>()) {
      auto it = lower_bounds_.find(v->name);
      return it == lower_bounds_.end() ? std::nullopt : it->second.back();
    }
    if (auto c = e->as<Cast>())
      return is_int(c->a->type.scalar) && is_int(c->type.scalar) ? lower_bound(c->a)
                                                                  : std::nullopt;
    auto b = e->as<Binary>();
    if (!b) return std::nullopt;
    auto positive_const = [](const ExprPtr& x) {
      auto i = x->as<IntImm>();
      return i && i->value > 0;
    };
    auto a = lower_bound(b->a);
    switch (b->op) {
      case BinaryOp::Add: {
        auto c = lower_bound(b->b);
        return a && c ? small(*a + *c) : std::nullopt;
      }
      case BinaryOp::Sub: {
        auto c = b->b->as<IntImm>();
        return a && c ? small(*a - c->value) : std::nullopt;
      }
      case BinaryOp::Mul: {
        auto c = lower_bound(b->b);
        return a && c && *a >= 0 && *c >= 0 ? small(*a * *c) : std::nullopt;
      }
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod:
        return a && *a >= 0 && positive_const(b->b) ? std::optional<int64_t>(0) : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  // Loop variables of loops over range(lo, hi, step) with a constant lo and step > 0 start at
  // lo; an inner loop that shadows the variable defines it anew until it ends.
  void enter_loop(const For& f) {
    auto lo = f.lo->as<IntImm>();
    auto step = f.step->as<IntImm>();
    std::optional<int64_t> start;
    if (lo && step && step->value > 0) start = lo->value;
    lower_bounds_[f.var].push_back(start);
  }
  void leave_loop(const For& f) { forget(f.var); }
};

}  // namespace

void flatten_indices(const SpecializedFunction& prog, Lowered& lowered, bool bounds_check) {
  for (auto& k : lowered.kernels) {
    PARIR_CHECK(!k.levels.empty(),
                "kernel '{}' has no parallel levels; call map_parallelism before flatten_indices",
                k.name);
    Flatten flatten(prog, k.name, bounds_check ? &lowered.plan.bounds_sites : nullptr);
    k.root = flatten.mutate(k.root);
    if (flatten.checked) {
      k.bounds_checked = true;
      for_each_launch(lowered.plan.steps, [&](PlanStep& step) {
        if (step.kernel == k.name) step.args.push_back(kBoundsBufferArg);
      });
    }
    std::set<const Reduction*> atomic;
    for (const Reduction* r : k.atomic_reductions) {
      auto it = flatten.renewed.find(r);
      PARIR_CHECK(it != flatten.renewed.end(),
                  "kernel '{}' combines a reduction atomically that it does not contain",
                  k.name);
      atomic.insert(it->second);
    }
    k.atomic_reductions = std::move(atomic);
  }
}

}  // namespace parir
