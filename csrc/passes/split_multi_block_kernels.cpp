#include "passes/split_multi_block_kernels.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/reduction_ops.h"
#include "ir/visitor.h"

namespace parir {
namespace {

const For* parallel_loop(const StmtPtr& s) {
  auto f = s->as<For>();
  return f && f->par ? f : nullptr;
}

std::set<std::string> loaded_tensors(const Body& body) {
  class Loads : public IRVisitor {
   public:
    std::set<std::string> names;

   protected:
    void visit_node(const Load* n) override {
      names.insert(n->tensor);
      IRVisitor::visit_node(n);
    }
  } loads;
  loads.visit(body);
  return loads.names;
}

// The parallel loops at a kernel's deepest parallel depth: those that map_parallelism maps to
// threads.
class ThreadLoops : public IRVisitor {
 public:
  std::vector<std::pair<const For*, int>> loops;  // with their depth
  int deepest = 0;

 protected:
  int depth_ = 0;
  void visit_node(const For* n) override {
    if (!n->par) return IRVisitor::visit_node(n);
    ++depth_;
    if (!contains_parallel_code(n->body, false)) {
      loops.emplace_back(n, depth_);
      deepest = std::max(deepest, depth_);
    }
    IRVisitor::visit_node(n);
    --depth_;
  }
};

// The blocks that a thread-level loop's threads span.
int64_t blocks_of(const For& loop) {
  return block_shape(loop.par->threads, loop.par->threads_per_block()).blocks;
}

// A reduction over several blocks that CompileOptions.deterministic combines in a fixed order
// through a temporary (KernelCut::reduce_in_fixed_order).
bool reduces_in_fixed_order(const For& loop, const CompileOptions& opts) {
  return opts.deterministic && loop.reduction && !loop.reduction->scan && blocks_of(loop) > 1;
}

// Whether the kernel's thread level spans several blocks that will not form a cluster, by the
// rules map_parallelism applies: the threads per block that a thread-level loop asks for (or
// the default), and the largest thread count of that level, rounded up to a warp.
bool spans_blocks(const StmtPtr& kernel, const CompileOptions& opts) {
  ThreadLoops t;
  t.visit(kernel);
  int64_t count = 0, tpb = 0;
  for (const auto& [loop, depth] : t.loops) {
    if (depth != t.deepest) continue;
    count = std::max(count, loop->par->threads);
    if (!tpb) tpb = loop->par->tpb;
  }
  if (!tpb) tpb = LoopPar::kDefaultThreadsPerBlock;
  int64_t blocks = block_shape(count, tpb).blocks;
  bool chunked_scan = false;  // a scan over several blocks is cut even in a cluster
  for (const auto& [loop, depth] : t.loops)
    chunked_scan = chunked_scan ||
                   (loop->reduction && loop->reduction->scan && blocks_of(*loop) > 1);
  return blocks > 1 &&
         (chunked_scan || !(runs_as_cluster(opts, blocks) && contains_reduction(kernel)));
}

// Whether `body` holds a parallel loop that maps to blocks (one with parallel loops inside),
// directly or in its sequential loops and ifs.
bool has_block_level_loop(const Body& body) {
  for (const auto& s : body) {
    if (auto f = s->as<For>()) {
      if (f->par ? contains_parallel_code(f->body, false) : has_block_level_loop(f->body))
        return true;
    } else if (auto w = s->as<While>()) {
      if (has_block_level_loop(w->body)) return true;
    } else if (auto i = s->as<If>()) {
      if (has_block_level_loop(i->then_body) || has_block_level_loop(i->else_body)) return true;
    }
  }
  return false;
}

class KernelCut {
 public:
  // `thread_level_spans_blocks`: cut at the thread level too (spans_blocks); otherwise only
  // the bodies that hold loops mapped to blocks are cut, each thread-level body staying whole
  // in one block, where barriers order its statements.
  KernelCut(SpecializedFunction& p, const CompileOptions& opts, FreshNames& names,
            const StmtPtr& kernel, bool thread_level_spans_blocks)
      : prog_(p), opts_(opts), names_(names), kernel_(kernel),
        thread_level_spans_blocks_(thread_level_spans_blocks) {}

  // The kernel's cuts, in order; the kernel itself when it needs no cut.
  Body run() {
    Body out;
    if (auto g = kernel_->as<GpuBlock>()) {
      std::vector<Segment> cuts = cut(g->body);
      if (cuts.size() <= 1) return {kernel_};
      for (auto& c : cuts) {
        // A lone parallel loop is a kernel by itself, as it would be outside the block.
        if (!c.block_level && c.body.size() == 1 && parallel_loop(c.body[0]))
          out.push_back(c.body[0]);
        else
          out.push_back(std::make_shared<GpuBlock>(std::move(c.body), g->loc, g->labels));
      }
      return out;
    }
    const For& f = *kernel_->as<For>();
    std::vector<Segment> cuts = cut_loop(f);
    if (cuts.size() <= 1) return {kernel_};
    for (auto& c : cuts) out.push_back(c.body[0]);
    return out;
  }

 private:
  // A cut: the statements of one kernel, or at an inner level, of one copy of the loop body.
  struct Segment {
    Body body;
    bool block_level = false;  // block-level statements only, no parallel loop
  };

  SpecializedFunction& prog_;
  const CompileOptions& opts_;
  FreshNames& names_;
  StmtPtr kernel_;
  bool thread_level_spans_blocks_;
  std::vector<const For*> enclosing_;   // the parallel loops around the body being cut

  // Copies of the parallel loop `f`, one per cut of its body.
  std::vector<Segment> cut_loop(const For& f) {
    enclosing_.push_back(&f);
    std::vector<Segment> inner = cut(f.body);
    enclosing_.pop_back();
    std::vector<Segment> out;
    for (auto& s : inner)
      out.push_back({Body{std::make_shared<For>(f.var, f.lo, f.hi, f.step, std::move(s.body),
                                                f.loc, f.labels, f.par, f.reduction)},
                     false});
    return out;
  }

  // A statement that only computes locals, from tensors that no statement after it in its body
  // changes (`stored_after`), so it may run again at the start of every later cut: the cuts
  // before it, which may write what it reads, have finished by then. Never an atomic update,
  // even one whose old value goes to a local: running it again would update the element again.
  bool repeatable(const StmtPtr& s, const std::set<std::string>& stored_after) const {
    Body b{s};
    if (!stored_tensors(b).empty() || contains_parallel_code(b, false)) return false;
    if (contains(b, StmtKind::AtomicUpdate)) return false;
    for (const auto& t : loaded_tensors(b))
      if (stored_after.count(t)) return false;
    return true;
  }

  std::vector<Segment> cut(const Body& body) {
    // A body that only one block's threads run needs no cut when the thread level fits in a
    // block: its barriers order its statements.
    if (!thread_level_spans_blocks_ && !has_block_level_loop(body)) return {Segment{body}};
    std::vector<Segment> cuts;
    Body repeated;               // the repeatable statements so far, for every later cut
    size_t repeated_in_last = 0;  // how many of them the last cut already has
    // `uses_locals`: s may read the locals of the statements before it.
    auto add = [&](StmtPtr s, bool block_level, bool uses_locals = true) {
      if (block_level && !cuts.empty() && cuts.back().block_level) {
        // Only repeatable statements came since the last block-level cut: extend it.
        Body& b = cuts.back().body;
        if (uses_locals) b.insert(b.end(), repeated.begin() + repeated_in_last, repeated.end());
        b.push_back(std::move(s));
      } else {
        Segment c{uses_locals ? repeated : Body{}, block_level};
        c.body.push_back(std::move(s));
        cuts.push_back(std::move(c));
      }
      if (uses_locals) repeated_in_last = repeated.size();
    };
    // The tensors that the statements after each position store to.
    std::vector<std::set<std::string>> stored_after(body.size() + 1);
    for (size_t k = body.size(); k-- > 0;) {
      stored_after[k] = stored_after[k + 1];
      for (const auto& t : stored_tensors(Body{body[k]})) stored_after[k].insert(t);
    }
    for (size_t at = 0; at < body.size(); ++at) {
      const StmtPtr& s = body[at];
      if (auto f = parallel_loop(s)) {
        if (contains_parallel_code(f->body, false)) {
          for (auto& c : cut_loop(*f)) add(c.body[0], false);
        } else if (f->reduction && f->reduction->is_index()) {
          index_reduction_alone(*f);
          add(s, false);
        } else if (f->reduction && f->reduction->scan && blocks_of(*f) > 1) {
          scan_in_two_passes(*f, add, repeated);
        } else if (reduces_in_fixed_order(*f, opts_)) {
          reduce_in_fixed_order(*f, add, repeated);
        } else if (f->reduction && !f->reduction->scan && f->reduction->target->as<Var>()) {
          reduce_through_temporary(*f, s, add, repeated);
        } else {
          add(s, false);
        }
      } else if (repeatable(s, stored_after[at + 1])) {
        repeated.push_back(s);
      } else {
        warn_if_unordered(s);
        add(s, !contains_parallel_code(Body{s}, false));
      }
    }
    return cuts;
  }

  // A sequential loop or an if inside the kernel whose body holds a parallel loop over several
  // blocks beside other work: every block would have to finish one statement before any
  // starts the next, which no cut gives inside a loop or a branch. The kernel stays as it is
  // (each block sees its own writes, which is all that many such loops read); a warning says
  // what it cannot promise.
  void warn_if_unordered(const StmtPtr& s) const {
    std::vector<const Body*> bodies;
    if (auto f = s->as<For>()) bodies = {&f->body};
    if (auto w = s->as<While>()) bodies = {&w->body};
    if (auto i = s->as<If>()) bodies = {&i->then_body, &i->else_body};
    for (const Body* body : bodies) {
      int work = 0;
      bool over_blocks = false;
      for (const auto& t : *body) {
        Body one{t};
        if (contains_parallel_code(one, false) || !stored_tensors(one).empty() ||
            contains(one, StmtKind::AtomicUpdate))
          ++work;
        if (auto f = parallel_loop(t))
          over_blocks = over_blocks || thread_level_spans_blocks_ ||
                        contains_parallel_code(f->body, false);
      }
      if (work >= 2 && over_blocks)
        return prog_.warn(
            s->loc, fmt::format("this {} runs inside a kernel, where the parallel loops in its "
                                "body run on several thread blocks that cannot wait for each "
                                "other: a statement sees what the statements before it wrote "
                                "only in its own block. If it reads what other blocks write, "
                                "move the {} outside the parallel loops around it",
                                s->as<If>() ? "if" : "sequential loop",
                                s->as<If>() ? "if" : "loop"));
    }
  }

  // An index reduction has no temporary to combine blocks through: its loop becomes a kernel
  // of its own, which must fit in one block (lower_slices rejects a label that does not;
  // here the kernel spans several blocks for another loop's sake).
  void index_reduction_alone(const For& loop) const {
    BlockShape shape = block_shape(loop.par->threads, loop.par->threads_per_block());
    if (shape.blocks > 1)
      prog_.error(loop.loc, fmt::format("this index reduction (parir.{}) runs on {} blocks, "
                                        "which cannot combine their (value, index) pairs; give "
                                        "it at most {} threads",
                                        loop.reduction->op == ReduceOp::Max ? "argmax" : "argmin",
                                        shape.blocks, shape.tpb));
  }

  // The element of a new temporary that the enclosing parallel iterations own, or nullptr when
  // an enclosing loop's bounds are not constants. With `last`, the temporary has one more
  // dimension of `last.first` elements, indexed by the variable `last.second`.
  ExprPtr temporary_element(Type type, Loc loc,
                            std::optional<std::pair<int64_t, std::string>> last = {}) {
    std::vector<ExprPtr> indices;
    std::vector<int64_t> shape;
    for (const For* e : enclosing_) {
      auto lo = e->lo->as<IntImm>(), hi = e->hi->as<IntImm>(), step = e->step->as<IntImm>();
      if (!lo || !hi || !step || step->value == 0) return nullptr;
      int64_t span = step->value > 0 ? hi->value - lo->value : lo->value - hi->value;
      int64_t by = step->value > 0 ? step->value : -step->value;
      shape.push_back(std::max<int64_t>(1, (span + by - 1) / by));
      Type it = e->lo->type;
      ExprPtr i = var(e->var, loc, it);
      if (lo->value != 0) i = binary(BinaryOp::Sub, i, e->lo, loc, it);
      if (step->value != 1) i = binary(BinaryOp::FloorDiv, i, e->step, loc, it);
      indices.push_back(i);
    }
    if (last) {
      shape.push_back(last->first);
      indices.push_back(var(last->second, loc, Type{ScalarType::I64, true}));
    } else if (indices.empty()) {
      shape.push_back(1);
      indices.push_back(int_imm(0, loc));
    }
    TensorType t{type.scalar, shape, std::vector<int64_t>(shape.size(), 1)};
    for (size_t d = shape.size() - 1; d-- > 0;) t.strides[d] = t.strides[d + 1] * shape[d + 1];
    std::string name = names_.make("partial");
    prog_.tensors[name] = t;
    prog_.temporaries.push_back(name);
    return std::make_shared<Load>(name, std::move(indices), type, loc, /*proved=*/true);
  }

  // A scan loop over several blocks, which cannot pass running values to each other within a
  // kernel: each block takes a chunk of the iterations, a first kernel stores each chunk's
  // total in a temporary, and a second scans each chunk from the totals before it and stores
  // the final running value in another temporary, which the later cuts read into the local.
  // The statements that compute the elements run in both kernels, so they must give the same
  // result twice.
  template <typename Add>
  void scan_in_two_passes(const For& loop, Add& add, Body& repeated) {
    const Reduction& r = *loop.reduction;
    const int64_t blocks = blocks_of(loop);
    const Body compute(loop.body.begin(), loop.body.begin() + scan_element_statements(loop));
    const std::set<std::string> loaded = loaded_tensors(compute);
    for (const auto& s : compute) {
      Body one{s};
      bool twice = contains(one, StmtKind::AtomicUpdate);
      for (const auto& t : stored_tensors(one)) twice = twice || loaded.count(t);
      if (twice)
        prog_.error(s->loc, fmt::format("this scan loop runs on {} blocks, which compute each "
                                        "element twice (once for the totals of their chunks, "
                                        "once for the scan), and this statement would update "
                                        "its tensor twice: compute the element without updating "
                                        "a tensor it reads, or use at most {} threads",
                                        blocks, loop.par->threads_per_block()));
    }
    const std::string chunk = names_.make("chunk");
    ExprPtr totals = temporary_element(r.acc_type, loop.loc, std::make_pair(blocks, chunk));
    if (!totals)
      prog_.error(loop.loc, fmt::format("this scan loop runs on {} blocks, which pass their "
                                        "totals through a temporary indexed by the enclosing "
                                        "parallel loops, whose bounds must then be constants; "
                                        "use at most {} threads",
                                        blocks, loop.par->threads_per_block()));
    ExprPtr result = temporary_element(r.target->type, loop.loc);
    auto totals_pass = std::make_shared<Reduction>(r);
    totals_pass->scan_pass = ScanPass::ChunkTotals;
    totals_pass->chunk = chunk;
    totals_pass->chunk_totals = totals;
    add(std::make_shared<For>(loop.var, loop.lo, loop.hi, loop.step, compute, loop.loc,
                              loop.labels, loop.par, totals_pass),
        false);
    auto scan_pass = std::make_shared<Reduction>(*totals_pass);
    scan_pass->scan_pass = ScanPass::FromChunkTotals;
    scan_pass->scan_result = result;
    add(std::make_shared<For>(loop.var, loop.lo, loop.hi, loop.step, loop.body, loop.loc,
                              loop.labels, loop.par, scan_pass),
        false);
    repeated.push_back(std::make_shared<Assign>(r.target, result, loop.loc));
  }

  // With CompileOptions.deterministic, a reduction over several blocks: each block stores its
  // result into its own element of a temporary, and the statement after the loop combines the
  // elements into the target in order, block 0 first. For a local target that statement is
  // repeated at the start of every later cut; a tensor target is updated by a cut of its own.
  template <typename Add>
  void reduce_in_fixed_order(const For& loop, Add& add, Body& repeated) {
    const Reduction& r = *loop.reduction;
    const int64_t blocks = blocks_of(loop);
    const std::string chunk = names_.make("chunk"), block = names_.make("block");
    const Type i64{ScalarType::I64, true};
    ExprPtr element = temporary_element(r.acc_type, loop.loc, std::make_pair(blocks, chunk));
    if (!element)
      prog_.error(loop.loc, fmt::format("with deterministic=True, this reduction over {} blocks "
                                        "passes their results through a temporary indexed by "
                                        "the enclosing parallel loops, whose bounds must then "
                                        "be constants; use at most {} threads",
                                        blocks, loop.par->threads_per_block()));
    auto per_block = std::make_shared<Reduction>(r);
    per_block->target = element;
    per_block->chunk = chunk;
    per_block->acc_value = var(r.acc, loop.loc, r.acc_type);
    per_block->combined = per_block->acc_value;
    add(std::make_shared<For>(loop.var, loop.lo, loop.hi, loop.step, loop.body, loop.loc,
                              loop.labels, loop.par, per_block),
        false);
    // for block in range(blocks): target = target op temporary[..., block]
    auto t = element->as<Load>();
    std::vector<ExprPtr> indices(t->indices.begin(), t->indices.end() - 1);
    indices.push_back(var(block, loop.loc, i64));
    ExprPtr part = std::make_shared<Load>(t->tensor, std::move(indices), t->type, loop.loc,
                                          /*proved=*/true);
    StmtPtr combine = std::make_shared<Assign>(r.target, Substitute(r.acc, part).mutate(r.combined),
                                               loop.loc);
    StmtPtr fold = std::make_shared<For>(block, int_imm(0, loop.loc), int_imm(blocks, loop.loc),
                                         int_imm(1, loop.loc), Body{combine}, loop.loc,
                                         std::vector<std::string>{}, std::nullopt, nullptr);
    if (r.target->as<Var>())
      repeated.push_back(fold);
    else
      add(fold, true);
  }

  // `loop` reduces into a local: its blocks combine into a temporary element instead, which a
  // cut before sets to the identity and the statements after combine into the local.
  template <typename Add>
  void reduce_through_temporary(const For& loop, const StmtPtr& self, Add& add, Body& repeated) {
    const Reduction& r = *loop.reduction;
    ExprPtr element = temporary_element(r.acc_type, loop.loc);
    if (!element) return add(self, false);
    add(std::make_shared<Assign>(element, reduction_identity(r.op, r.acc_type, loop.loc),
                                 loop.loc),
        true, /*uses_locals=*/false);
    auto into_temp = std::make_shared<Reduction>(r);
    into_temp->target = element;
    combine_into_target(*into_temp);
    add(std::make_shared<For>(loop.var, loop.lo, loop.hi, loop.step, loop.body, loop.loc,
                              loop.labels, loop.par, into_temp),
        false);
    repeated.push_back(
        std::make_shared<Assign>(r.target, Substitute(r.acc, element).mutate(r.combined), loop.loc));
  }
};

class SplitKernels : public IRMutator {
 public:
  SplitKernels(SpecializedFunction& p, const CompileOptions& opts)
      : prog_(p), opts_(opts), names_(p) {}

  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      bool kernel = s->as<GpuBlock>() || (parallel_loop(s) && contains_parallel_code(
                                                                  parallel_loop(s)->body, false));
      auto lone = parallel_loop(s);
      if (!kernel && lone && reduces_in_fixed_order(*lone, opts_)) {
        // A reduction loop that is a kernel by itself: cut as the body of a sequential block.
        StmtPtr block = std::make_shared<GpuBlock>(Body{s}, s->loc, std::vector<std::string>{});
        for (auto& part : KernelCut(prog_, opts_, names_, block, true).run()) out.push_back(part);
      } else if (kernel) {
        for (auto& part : KernelCut(prog_, opts_, names_, s, spans_blocks(s, opts_)).run())
          out.push_back(part);
      } else if (parallel_loop(s)) {
        out.push_back(s);
      } else if (StmtPtr m = IRMutator::mutate(s)) {
        out.push_back(m);  // host loops and ifs: look inside
      }
    }
    return out;
  }
  using IRMutator::mutate;

 private:
  SpecializedFunction& prog_;
  const CompileOptions& opts_;
  FreshNames names_;
};

}  // namespace

void split_multi_block_kernels(SpecializedFunction& prog, const CompileOptions& opts) {
  prog.body = SplitKernels(prog, opts).mutate(prog.body);
}

}  // namespace parir
