#include "passes/apply_parallel_spec.h"

#include <set>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

class ApplySpec : public IRMutator {
 public:
  ApplySpec(const SpecializedFunction& p, const ParallelSpec& s) : prog_(p), spec_(s) {}
  std::set<std::string> used;

 protected:
  const SpecializedFunction& prog_;
  const ParallelSpec& spec_;

  // The LoopPar for a statement's labels, if any of them is in the spec.
  std::optional<LoopPar> lookup(const StmtNode& s) {
    std::optional<LoopPar> found;
    std::string found_label;
    for (const auto& l : s.labels) {
      auto it = spec_.find(l);
      if (it == spec_.end()) continue;
      used.insert(l);
      if (found && !(*found == it->second))
        prog_.error(s.loc, fmt::format("labels '{}' and '{}' of this statement map to different "
                                       "parallelizations",
                                       found_label, l));
      found = it->second;
      found_label = l;
    }
    return found;
  }

  StmtPtr mutate_node(const For* n, const StmtPtr&) override {
    std::optional<LoopPar> par = lookup(*n);
    if (par && par->threads == 0 && !certainly_empty(*n))
      prog_.error(n->loc, fmt::format("the parallel specification gives this loop 0 threads, so "
                                      "none of its iterations would run; give it at least one "
                                      "thread (parir.threads(n) with n >= 1)"));
    // A loop that lower_slices made for a slice reduction reduces whatever its label says (a
    // label shared with a scan too), and one it made for a slice scan scans.
    if (par && n->par && n->par->reduce) {
      par->reduce = true;
      par->scan = false;
    }
    if (par && n->par && n->par->scan) {
      par->scan = true;
      par->reduce = false;
    }
    Body body = mutate(n->body);
    return std::make_shared<For>(n->var, n->lo, n->hi, n->step, std::move(body), n->loc,
                                 n->labels, par);
  }

  // A loop over constant bounds that runs no iteration (range(0) when a size is 0, say).
  static bool certainly_empty(const For& f) {
    auto lo = f.lo->as<IntImm>(), hi = f.hi->as<IntImm>(), step = f.step->as<IntImm>();
    return lo && hi && step && (step->value > 0 ? lo->value >= hi->value : lo->value <= hi->value);
  }

  void reject_if_parallel(const StmtNode& s, const char* what) {
    if (lookup(s))
      prog_.error(s.loc, fmt::format("only for-loops can be parallelized, but the label of this "
                                     "{} is in the parallel specification",
                                     what));
  }

  StmtPtr mutate_node(const While* n, const StmtPtr& self) override {
    reject_if_parallel(*n, "while-loop");
    return IRMutator::mutate_node(n, self);
  }
  StmtPtr mutate_node(const If* n, const StmtPtr& self) override {
    reject_if_parallel(*n, "if-statement");
    return IRMutator::mutate_node(n, self);
  }
  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    reject_if_parallel(*n, "assignment");
    return self;
  }
  StmtPtr mutate_node(const AtomicUpdate* n, const StmtPtr& self) override {
    reject_if_parallel(*n, "atomic update");
    return self;
  }
  StmtPtr mutate_node(const GpuBlock* n, const StmtPtr& self) override {
    reject_if_parallel(*n, "`with parir.gpu:` block");
    return IRMutator::mutate_node(n, self);
  }
};

}  // namespace

void apply_parallel_spec(SpecializedFunction& prog, const ParallelSpec& spec) {
  PARIR_CHECK(!contains(prog.body, ExprKind::Slice),
              "{}() still has slices; call lower_slices before apply_parallel_spec", prog.name);
  for (const auto& [label, par] : spec) {
    if (par.threads < 0)
      fail("label '{}': the number of threads must not be negative (got {})", label, par.threads);
    if (par.reduce && par.scan)
      fail("label '{}': a loop is either a reduction (.reduce()) or a scan (.scan()), not both",
           label);
    if (par.tpb != 0 && (par.tpb < 32 || par.tpb > 1024 || par.tpb % 32 != 0))
      fail("label '{}': threads per block must be a multiple of 32 between 32 and 1024 (got {})",
           label, par.tpb);
  }
  ApplySpec pass(prog, spec);
  prog.body = pass.mutate(prog.body);
  // One specification is often shared by several functions: a label this function does not use
  // is someone else's. Only a specification that matches nothing at all looks like a mistake.
  if (pass.used.empty() && !spec.empty()) {
    std::vector<std::string> labels;
    for (const auto& [label, par] : spec) labels.push_back("'" + label + "'");
    prog.warnings.push_back(fmt::format(
        "{}: the parallel specification names {}, but no statement of {}() has such a label, "
        "so none of its loops runs in parallel",
        prog.source->filename, fmt::join(labels, ", "), prog.name));
  }
}

}  // namespace parir
