#include "passes/verify_bounds.h"

#include "ir/interval.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Python-like text without the outermost parentheses.
std::string bare(const ExprPtr& e) {
  std::string s = to_string(e);
  if (s.size() > 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  return s;
}

class Verify : public IRMutator {
 public:
  Verify(const SpecializedFunction& prog, BoundsStats& stats) : prog_(prog), stats_(stats) {}

 protected:
  ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
    ExprPtr rebuilt = IRMutator::mutate_node(n, self);  // accesses inside the indices first
    const Load* l = rebuilt->as<Load>();
    const TensorType& t = prog_.tensors.at(l->tensor);
    ++stats_.accesses;
    bool proved = true;
    for (size_t d = 0; d < l->indices.size(); ++d) {
      const int64_t extent = t.shape[d];
      std::optional<Range> r = range_of(l->indices[d], env_);
      if (r && r->lo >= -extent && r->hi < extent) continue;
      proved = false;
      if (r && r->exact && certain_) out_of_bounds(*l, d, *r, extent);
    }
    if (!proved) return rebuilt;
    ++stats_.proved;
    return std::make_shared<Load>(l->tensor, l->indices, l->type, l->loc, true);
  }

  // The operands evaluated only under a condition: not certainly reached.
  ExprPtr mutate_node(const Select* n, const ExprPtr& self) override {
    ExprPtr c = mutate(n->cond);
    Uncertain u(*this);
    ExprPtr a = mutate(n->a), b = mutate(n->b);
    if (c == n->cond && a == n->a && b == n->b) return self;
    return std::make_shared<Select>(c, a, b, n->type, n->loc);
  }
  ExprPtr mutate_node(const Binary* n, const ExprPtr& self) override {
    if (!is_logical(n->op)) return IRMutator::mutate_node(n, self);
    ExprPtr a = mutate(n->a);
    Uncertain u(*this);
    ExprPtr b = mutate(n->b);
    if (a == n->a && b == n->b) return self;
    return binary(n->op, a, b, n->loc, n->type);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    ExprPtr lo = mutate(n->lo), hi = mutate(n->hi), step = mutate(n->step);
    const RangeEnv saved = env_;
    const bool saved_certain = certain_;
    auto l = lo->as<IntImm>(), h = hi->as<IntImm>(), s = step->as<IntImm>();
    if (l && h && s && s->value != 0) {
      // Constant bounds: the variable counts through every value of its range.
      std::optional<Range> r = loop_variable_range(l->value, h->value, s->value);
      if (!r) return self;  // never runs: nothing in it is reached
      env_[n->var] = *r;
    } else {
      // Bounds known only as ranges: the loop may be empty for some values around it.
      certain_ = false;
      std::optional<Range> rl = range_of(lo, env_), rh = range_of(hi, env_);
      if (s && s->value > 0 && rl && rh && rh->hi > INT64_MIN)
        env_[n->var] = Range{rl->lo, rh->hi - 1, false};
      else if (s && s->value < 0 && rl && rh && rh->lo < INT64_MAX)
        env_[n->var] = Range{rh->lo + 1, rl->hi, false};
      else
        env_.erase(n->var);
    }
    Body body = mutate(n->body);
    env_ = saved;
    certain_ = saved_certain;
    return std::make_shared<For>(n->var, lo, hi, step, std::move(body), n->loc, n->labels, n->par,
                                 n->reduction);
  }

  StmtPtr mutate_node(const While* n, const StmtPtr&) override {
    ExprPtr cond = mutate(n->cond);
    Uncertain u(*this);
    return std::make_shared<While>(cond, mutate(n->body), n->loc, n->labels);
  }

  StmtPtr mutate_node(const If* n, const StmtPtr&) override {
    ExprPtr cond = mutate(n->cond);
    Uncertain u(*this);
    const RangeEnv saved = env_;
    narrow(cond, true);
    Body then_body = mutate(n->then_body);
    env_ = saved;
    narrow(cond, false);
    Body else_body = mutate(n->else_body);
    env_ = saved;
    return std::make_shared<If>(cond, std::move(then_body), std::move(else_body), n->loc,
                                n->labels);
  }

 private:
  const SpecializedFunction& prog_;
  BoundsStats& stats_;
  RangeEnv env_;
  // Whether the code being visited runs for every combination of the values of the loop
  // variables around it (no condition, while-loop or loop of unknown bounds on the way).
  bool certain_ = true;

  struct Uncertain {
    Verify& v;
    bool saved;
    explicit Uncertain(Verify& verify) : v(verify), saved(verify.certain_) { v.certain_ = false; }
    ~Uncertain() { v.certain_ = saved; }
  };

  // Narrows the ranges of loop variables by a condition that holds (or, with holds = false,
  // does not): comparisons of a variable with a constant, and conjunctions of them.
  void narrow(const ExprPtr& cond, bool holds) {
    auto b = cond->as<Binary>();
    if (!b) return;
    if (b->op == BinaryOp::And && holds) {
      narrow(b->a, true);
      narrow(b->b, true);
      return;
    }
    if (b->op == BinaryOp::Or && !holds) {
      narrow(b->a, false);
      narrow(b->b, false);
      return;
    }
    BinaryOp op = b->op;
    auto v = b->a->as<Var>();
    auto c = b->b->as<IntImm>();
    if (!v || !c) {  // constant on the left: mirror the comparison
      v = b->b->as<Var>();
      c = b->a->as<IntImm>();
      switch (op) {
        case BinaryOp::Lt: op = BinaryOp::Gt; break;
        case BinaryOp::Le: op = BinaryOp::Ge; break;
        case BinaryOp::Gt: op = BinaryOp::Lt; break;
        case BinaryOp::Ge: op = BinaryOp::Le; break;
        default: break;
      }
    }
    if (!v || !c) return;
    auto it = env_.find(v->name);
    if (it == env_.end()) return;
    if (!holds) {
      switch (op) {
        case BinaryOp::Lt: op = BinaryOp::Ge; break;
        case BinaryOp::Le: op = BinaryOp::Gt; break;
        case BinaryOp::Gt: op = BinaryOp::Le; break;
        case BinaryOp::Ge: op = BinaryOp::Lt; break;
        case BinaryOp::Eq: op = BinaryOp::Ne; break;
        default: return;
      }
    }
    Range& r = it->second;
    const int64_t k = c->value;
    switch (op) {
      case BinaryOp::Lt:
        if (k > INT64_MIN) r.hi = std::min(r.hi, k - 1);
        break;
      case BinaryOp::Le:
        r.hi = std::min(r.hi, k);
        break;
      case BinaryOp::Gt:
        if (k < INT64_MAX) r.lo = std::max(r.lo, k + 1);
        break;
      case BinaryOp::Ge:
        r.lo = std::max(r.lo, k);
        break;
      case BinaryOp::Eq:
        r.lo = std::max(r.lo, k);
        r.hi = std::min(r.hi, k);
        break;
      default:
        return;
    }
    r.exact = false;  // the loop's step may skip the new ends
  }

  [[noreturn]] void out_of_bounds(const Load& l, size_t d, const Range& r, int64_t extent) {
    std::vector<std::string> idx;
    for (const auto& i : l.indices) idx.push_back(bare(i));
    const ExprPtr& index = l.indices[d];
    std::string runs =
        fmt::format("runs over [{}, {})", r.lo, r.hi == INT64_MAX ? r.hi : r.hi + 1);
    std::string what = index->as<Var>() ? fmt::format("{} {}", bare(index), runs)
                                        : fmt::format("the index {} {}", bare(index), runs);
    std::string negative =
        r.lo < -extent ? fmt::format("; negative indices count from the end, down to {}", -extent)
                       : "";
    prog_.error(l.loc, fmt::format("`{}[{}]`: {} but {} has {} element{} (dimension {}){}",
                                   display_name(l.tensor), fmt::join(idx, ", "), what,
                                   display_name(l.tensor), extent, extent == 1 ? "" : "s", d,
                                   negative));
  }
};

}  // namespace

void verify_bounds(SpecializedFunction& prog, BoundsStats* stats) {
  BoundsStats local;
  prog.body = Verify(prog, stats ? *stats : local).mutate(prog.body);
}

}  // namespace parir
