#include "passes/warn_narrowed_loop_variables.h"

#include <set>

#include "ir/interval.h"
#include "ir/queries.h"
#include "ir/types.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// The values of an integer type narrower than 64 bits, or nullopt for a 64-bit type.
std::optional<Range> values_of(ScalarType t) {
  const int bits = 8 * size_in_bytes(t);
  if (bits >= 64 || !is_int(t)) return std::nullopt;
  if (is_unsigned_int(t)) return Range{0, (int64_t{1} << bits) - 1, true};
  return Range{-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1, true};
}

class FindNarrowedLoopVariables : public IRVisitor {
 public:
  explicit FindNarrowedLoopVariables(SpecializedFunction& prog) : prog_(prog) {}

 protected:
  void visit_node(const For* n) override {
    const RangeEnv saved = env_;
    auto l = n->lo->as<IntImm>(), h = n->hi->as<IntImm>(), s = n->step->as<IntImm>();
    std::optional<Range> r;
    if (l && h && s && s->value == 1) r = loop_variable_range(l->value, h->value, 1);
    if (r)
      env_[n->var] = *r;
    else
      env_.erase(n->var);
    IRVisitor::visit_node(n);
    env_ = saved;
  }

  void visit_node(const Cast* n) override {
    IRVisitor::visit_node(n);
    const ExprPtr& a = n->a;
    // A weak integer that varies (a loop variable, i + 1) becoming a typed narrower integer:
    // the conversion infer_types makes where it meets one. Constants are checked as PyTorch
    // does nothing for them either; only run-time values that leave the type's range warn.
    if (!a->type.weak || !is_int(a->type.scalar) || n->type.weak || !mentions_loop_var(a)) return;
    auto allowed = values_of(n->type.scalar);
    if (!allowed) return;
    auto r = range_of(a, env_);
    if (!r || (r->lo >= allowed->lo && r->hi <= allowed->hi)) return;
    if (!warned_.insert(n->loc.line).second) return;
    prog_.warn(n->loc, fmt::format(
        "{} takes values from {} to {} here, and meets a {} value, so it is computed as a {} "
        "(loop variables are weak ints, as Python's ints are in PyTorch) and wraps around "
        "outside {}..{}; convert the {} value with parir.int64(...) to compute in int64",
        to_string(a), r->lo, r->hi, python_name(n->type.scalar), python_name(n->type.scalar),
        allowed->lo, allowed->hi, python_name(n->type.scalar)));
  }

 private:
  bool mentions_loop_var(const ExprPtr& e) const {
    std::set<std::string> vars;
    for (const auto& [name, range] : env_) vars.insert(name);
    return mentions(e, vars);
  }

  SpecializedFunction& prog_;
  RangeEnv env_;
  std::set<int> warned_;
};

}  // namespace

void warn_narrowed_loop_variables(SpecializedFunction& prog) {
  FindNarrowedLoopVariables(prog).visit(prog.body);
}

}  // namespace parir
