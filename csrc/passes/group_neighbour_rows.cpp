#include "passes/group_neighbour_rows.h"

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Rows a block walks. Measured on the 16384^2 five-point stencil (fraction of the copy
// bandwidth, benchmarks/NOTES.md): on an H200 1 row 83%, 2 rows 91%, 3 rows 94%, 4 rows 92%;
// on an H100 1 row 94%, 2 rows 98%, 3 rows 81%, 4 rows 79%. Two rows gain on both.
constexpr int64_t kRowsPerBlock = 2;
// Blocks the grouped kernel keeps at least: about four waves of 256-thread blocks on an H200.
constexpr int64_t kMinGroupedBlocks = 4096;

// The tensors a body reads and the offsets it reads them at, in element and wide loads.
class TensorReads : public IRVisitor {
 public:
  std::map<std::string, std::vector<ExprPtr>> offsets;

 protected:
  void visit_node(const FlatLoad* n) override {
    offsets[n->tensor].push_back(n->offset);
    IRVisitor::visit_node(n);
  }
  void visit_node(const WideLoad* n) override {
    offsets[n->tensor].push_back(n->offset);
    IRVisitor::visit_node(n);
  }
};

// Whether the body reads some tensor that it does not write at two offsets a whole number of
// `row` rows apart: x[i - 1, j] and x[i + 1, j], whose offsets differ by twice what one step of
// `row` adds.
bool reads_neighbour_rows(const Body& body, const std::string& row) {
  TensorReads reads;
  reads.visit(body);
  const std::set<std::string> written = stored_tensors(body);
  for (const auto& [tensor, offsets] : reads.offsets) {
    if (written.count(tensor)) continue;
    for (size_t a = 0; a < offsets.size(); ++a) {
      const std::optional<int64_t> stride = coefficient(offsets[a], row);
      if (!stride || *stride == 0) continue;
      for (size_t b = a + 1; b < offsets.size(); ++b) {
        const std::optional<int64_t> apart = constant_difference(offsets[a], offsets[b]);
        if (apart && *apart != 0 && *apart % *stride == 0) return true;
      }
    }
  }
  return false;
}

// The root loop over blocks, when the kernel has the shape grouping serves: that loop (one
// block an iteration, unit step) around a single loop over threads.
const For* groupable_root(const Kernel& k) {
  if (k.levels.size() != 2 || k.levels[0].threads || !k.levels[1].threads) return nullptr;
  if (k.lanes != 1 || k.warps != 1 || k.cluster != 1 || !k.shared_arrays.empty() ||
      !k.row_groups.empty())
    return nullptr;
  const For* f = k.root->as<For>();
  if (!f || !f->par || f->reduction || f->par->cooperative) return nullptr;
  const IntImm* step = f->step->as<IntImm>();
  const std::optional<int64_t> trip = constant_trip_count(*f);
  if (!step || step->value != 1 || !trip || *trip > k.levels[0].count) return nullptr;
  if (f->body.size() != 1) return nullptr;
  const For* inner = f->body[0]->as<For>();
  if (!inner || !inner->par || inner->reduction || inner->par->cooperative) return nullptr;
  return f;
}

}  // namespace

void group_neighbour_rows(const SpecializedFunction& prog, Lowered& lowered) {
  FreshNames fresh(prog, lowered);
  const Type index{prog.int_type, false};
  for (auto& k : lowered.kernels) {
    const For* f = groupable_root(k);
    if (!f) continue;
    const int64_t groups = (*constant_trip_count(*f) + kRowsPerBlock - 1) / kRowsPerBlock;
    if (groups < 2 || groups * k.inner_blocks < kMinGroupedBlocks) continue;
    if (!reads_neighbour_rows(f->body, f->var)) continue;
    // for i in range(lo, hi) over blocks becomes
    //   for g in range(groups) over blocks:
    //     for i in range(lo + g * R, min(lo + g * R + R, hi)): ...
    const std::string group = fresh.make("row_group");
    ExprPtr first = binary(BinaryOp::Add, f->lo,
                           binary(BinaryOp::Mul, var(group, {}, index),
                                  int_imm(kRowsPerBlock, {}, index), {}, index),
                           {}, index);
    ExprPtr past = std::make_shared<Call>(
        Builtin::Min,
        std::vector<ExprPtr>{binary(BinaryOp::Add, first, int_imm(kRowsPerBlock, {}, index),
                                    {}, index),
                             f->hi},
        index, Loc{});
    auto rows = std::make_shared<For>(f->var, first, past, f->step, f->body, f->loc);
    k.root = std::make_shared<For>(group, int_imm(0, {}, index), int_imm(groups, {}, index),
                                   int_imm(1, {}, index), Body{rows}, f->loc, f->labels,
                                   f->par);
    k.levels[0].count = groups;
    for_each_launch(lowered.plan.steps, [&](PlanStep& s) {
      if (s.kernel == k.name) s.grid = k.grid();
    });
  }
}

}  // namespace parir
