#include "passes/map_parallelism.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "ir/visitor.h"
#include "ir/queries.h"

namespace parir {
namespace {

constexpr int64_t kMaxGrid = 2147483647;  // gridDim.x limit

// The end of an error about blocks that cannot combine: how thread block clusters could help.
std::string cluster_advice(const CompileOptions& opts, int64_t blocks) {
  constexpr int64_t kMaxCluster = 16;  // Hopper's largest (non-portable) cluster
  if (blocks > kMaxCluster)
    return fmt::format(" (a thread block cluster holds at most {} blocks)", kMaxCluster);
  if (!opts.use_cuda_thread_block_clusters)
    return ", or enable use_cuda_thread_block_clusters";
  int64_t need = 1;
  while (need < blocks) need *= 2;
  return fmt::format(", or raise max_thread_blocks_per_cluster (now {}) to {}",
                     opts.max_thread_blocks_per_cluster, need);
}

// Whether the statement is, or holds, the loop.
class HoldsLoop : public IRVisitor {
 public:
  explicit HoldsLoop(const For* loop) : loop_(loop) {}
  bool found = false;

 protected:
  void visit_node(const For* n) override {
    found = found || n == loop_;
    IRVisitor::visit_node(n);
  }

 private:
  const For* loop_;
};

// Whether each iteration of `outer` assigns the local afresh before the statement that holds
// `loop`: `s = 0.0` at the top of the body of a loop over rows, before the loop that reduces
// the row into s. A reduction into s then starts over in every iteration of `outer` rather
// than reducing over it.
bool reset_in_each_iteration(const For& outer, const std::string& local, const For* loop) {
  for (const auto& s : outer.body) {
    HoldsLoop holds(loop);
    holds.visit(s);
    if (holds.found) return false;
    auto a = s->as<Assign>();
    if (a && a->target->as<Var>() && a->target->as<Var>()->name == local) return true;
  }
  return false;
}

struct LevelUse {
  const For* loop;  // nullptr for a GpuBlock root
  int64_t count;
};

// Collects the parallel loops of a kernel by nesting depth.
class LevelCollector : public IRVisitor {
 public:
  std::vector<std::vector<LevelUse>> levels;
  int depth = 0;

 protected:
  void visit_node(const For* n) override {
    if (!n->par) return IRVisitor::visit_node(n);
    if (static_cast<int>(levels.size()) <= depth) levels.resize(depth + 1);
    levels[depth].push_back({n, n->par->threads});
    ++depth;
    visit(n->body);
    --depth;
  }
};

// Walks a kernel in program order to find what it uses and to check the rules on locals and
// on writes outside the innermost parallel loop.
class KernelScan : public IRVisitor {
 public:
  // depth: the parallel depth of the statements visited first (1 inside a GpuBlock root, whose
  // block is level 0).
  // cluster_advice: how the options could let this kernel's blocks combine (see below).
  // deterministic: CompileOptions.deterministic (no reduction may combine atomically).
  KernelScan(const SpecializedFunction& p, Kernel& k, int depth, int thread_depth,
             bool writes_need_one_block, std::string cluster_advice, bool deterministic)
      : prog_(p), k_(k), thread_depth_(thread_depth), one_block_(writes_need_one_block),
        depth_(depth), cluster_advice_(std::move(cluster_advice)),
        deterministic_(deterministic) {}

  std::set<std::string> tensors, written, host_vars;

 protected:
  const SpecializedFunction& prog_;
  Kernel& k_;
  int thread_depth_;  // parallel depth of the thread level; -1 when there is none
  bool one_block_;
  int depth_;  // number of enclosing parallel levels
  std::string cluster_advice_;  // how the options could let this kernel's blocks combine
  bool deterministic_;
  std::map<std::string, int> loop_vars_;
  std::set<std::string> assigned_;
  std::vector<std::set<std::string>> assigned_in_loop_;  // one set per enclosing parallel loop
  std::vector<std::string> block_vars_;  // variables of the enclosing loops that map to blocks
  std::vector<const For*> block_loops_;  // and those loops
  std::map<std::string, Loc> escaped_;  // locals whose value differs per parallel iteration

  // Outside the thread-level loops: all threads of a block run these statements together.
  bool at_block_level() const { return thread_depth_ >= 0 && depth_ <= thread_depth_; }

  void visit_node(const Var* n) override {
    if (loop_vars_.count(n->name)) return;
    if (!prog_.locals.count(n->name) || prog_.host_locals.count(n->name)) {
      host_vars.insert(n->name);
      return;
    }
    if (auto e = escaped_.find(n->name); e != escaped_.end())
      prog_.error(n->loc, fmt::format("local variable '{0}' is assigned inside the parallel loop "
                                      "on line {1} and read after it; each parallel iteration has "
                                      "its own value. Store the values in a tensor instead, or "
                                      "combine them in a reduction: label the loop with "
                                      ".reduce() and accumulate into '{0}' with +=, -=, *=, min "
                                      "or max (`if v > {0}: {0} = v` is {0} = max({0}, v))",
                                      prog_.user_name(n->name), e->second.line));
    if (!assigned_.count(n->name))
      prog_.error(n->loc, fmt::format("local variable '{}' is read in kernel {} but assigned "
                                      "only in other parallel code; locals do not carry values "
                                      "between parallel loops. Pass the value through a tensor",
                                      prog_.user_name(n->name), k_.name));
  }

  void visit_node(const Load* n) override {
    tensors.insert(n->tensor);
    IRVisitor::visit_node(n);
  }

  // A pointer argument hands the tensor to the external, which may write it.
  void visit_node(const ExternCall* n) override {
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (!n->fn->is_pointer(i)) {
        visit(n->args[i]);
        continue;
      }
      const std::string& t = n->args[i]->as<Var>()->name;
      tensors.insert(t);
      written.insert(t);
    }
  }

  void visit_node(const Assign* n) override {
    visit(n->value);
    if (auto v = n->target->as<Var>()) {
      if (loop_vars_.count(v->name)) return;  // a reduction's accumulator
      defines_local(v->name);
      return;
    }
    auto t = n->target->as<Load>();
    for (const auto& i : t->indices) visit(i);
    writes(*t, n->loc, fmt::format("write to '{}'", t->tensor), "no other block would see it");
  }

  // A store to the element `t` (its indices visited): outside the thread-level loops it needs
  // the block to be the only one of its iteration.
  void writes(const Load& t, const Loc& loc, const std::string& what, const char* why) {
    tensors.insert(t.tensor);
    written.insert(t.tensor);
    if (at_block_level() && !one_block_)
      prog_.error(loc, fmt::format("this {} is outside the innermost parallel loop, which spans "
                                   "{} blocks; {}. Move it into its own parallel loop, or use at "
                                   "most {} threads in the inner loop",
                                   what, k_.inner_blocks, why, k_.tpb));
  }

  // An atomic update writes its tensor and, like an assignment, its result local. Outside the
  // thread-level loops one thread of the block updates for all of them (as it writes), and
  // shares the old value through shared memory; a cluster's blocks would need distributed
  // shared memory for that, which is not generated.
  void visit_node(const AtomicUpdate* n) override {
    auto t = n->target->as<Load>();
    for (const auto& i : t->indices) visit(i);
    visit(n->compare);
    visit(n->value);
    writes(*t, n->loc, fmt::format("atomic update of '{}'", t->tensor),
           "each of them would run it");
    if (!n->result) return;
    if (at_block_level() && k_.cluster > 1)
      prog_.error(n->loc, fmt::format("the old value of this atomic update outside the innermost "
                                      "parallel loop would have to reach every block of a thread "
                                      "block cluster, which parir does not do; update '{}' "
                                      "without using the old value here, or turn "
                                      "use_cuda_thread_block_clusters off",
                                      t->tensor));
    defines_local(n->result->as<Var>()->name);
  }

  void defines_local(const std::string& name) {
    assigned_.insert(name);
    if (!assigned_in_loop_.empty()) assigned_in_loop_.back().insert(name);
    escaped_.erase(name);
    k_.locals[name] = prog_.locals.at(name);
  }

  void visit_node(const For* n) override {
    visit(n->lo);
    visit(n->hi);
    visit(n->step);
    ++loop_vars_[n->var];
    if (n->reduction) {  // declared by the code generator
      ++loop_vars_[n->reduction->acc];
      if (n->reduction->is_index()) ++loop_vars_[n->reduction->index_acc];
    }
    if (n->reduction && n->reduction->scan)
      for (const auto* name : {&n->reduction->value, &n->reduction->exclusive,
                               &n->reduction->inclusive})
        ++loop_vars_[*name];
    bool on_blocks = n->par && thread_depth_ >= 0 && depth_ < thread_depth_;
    if (on_blocks) {
      block_vars_.push_back(n->var);
      block_loops_.push_back(n);
    }
    if (n->par) {
      ++depth_;
      assigned_in_loop_.emplace_back();
    }
    visit(n->body);
    if (on_blocks) {
      block_vars_.pop_back();
      block_loops_.pop_back();
    }
    if (n->par) {
      --depth_;
      // Values assigned in parallel iterations are per-iteration: none may be read later
      // (but those of a cooperative call's loop, whose threads all compute the same ones).
      std::set<std::string> inside = std::move(assigned_in_loop_.back());
      assigned_in_loop_.pop_back();
      if (n->par->cooperative) inside.clear();
      for (const auto& name : inside) {
        escaped_[name] = n->loc;
        if (!assigned_in_loop_.empty()) assigned_in_loop_.back().insert(name);
      }
    }
    if (n->reduction) {
      if (n->reduction->scan)
        for (const auto* name : {&n->reduction->value, &n->reduction->exclusive,
                                 &n->reduction->inclusive})
          if (--loop_vars_[*name] == 0) loop_vars_.erase(*name);
      if (--loop_vars_[n->reduction->acc] == 0) loop_vars_.erase(n->reduction->acc);
      if (n->reduction->is_index() && --loop_vars_[n->reduction->index_acc] == 0)
        loop_vars_.erase(n->reduction->index_acc);
      reduction_result(*n);
    }
    if (--loop_vars_[n->var] == 0) loop_vars_.erase(n->var);
  }

  // After a reduction loop its result is combined into the target, outside the loop: one
  // thread per block writes a tensor target (with an atomic when the loop spans several
  // blocks); every thread of the block updates a local target with the same value.
  void reduction_result(const For& n) {
    const ExprPtr& target = n.reduction->target;
    if (n.reduction->scan) {
      // Every thread of the block ends the scan with the total: the block must be the only
      // one of the loop, as its threads walk the row together, unless each block scans a
      // chunk (split_multi_block_kernels), passing totals through temporaries.
      if (n.reduction->chunk_totals) ++loop_vars_[n.reduction->chunk];  // declared by codegen
      for (const auto& e : {n.reduction->chunk_totals, n.reduction->scan_result}) {
        if (!e) continue;
        for (const auto& i : e->as<Load>()->indices) visit(i);
        tensors.insert(e->as<Load>()->tensor);
      }
      if (n.reduction->chunk_totals && --loop_vars_[n.reduction->chunk] == 0)
        loop_vars_.erase(n.reduction->chunk);
      if (n.reduction->scan_pass == ScanPass::ChunkTotals)
        written.insert(n.reduction->chunk_totals->as<Load>()->tensor);
      if (n.reduction->scan_pass == ScanPass::FromChunkTotals)
        written.insert(n.reduction->scan_result->as<Load>()->tensor);
      if (n.reduction->scan_pass == ScanPass::ChunkTotals) return;
      if (k_.inner_blocks > 1 && n.reduction->scan_pass == ScanPass::Whole)
        prog_.error(n.loc, fmt::format("this scan loop runs on {} blocks inside a sequential "
                                       "loop of its kernel, which cannot be cut into the two "
                                       "kernels that a scan over several blocks needs; use at "
                                       "most {} threads, or move it out of that loop",
                                       k_.inner_blocks, k_.tpb));
      auto v = target->as<Var>();
      visit(target);
      assigned_.insert(v->name);
      escaped_.erase(v->name);
      return;
    }
    if (auto v = target->as<Var>()) {
      visit(target);
      for (const For* b : block_loops_)
        if (b->par->reduce && !reset_in_each_iteration(*b, v->name, &n))
          prog_.error(n.loc, fmt::format("the reduction into local '{}' also reduces over the "
                                         "loop on line {}, which runs on thread blocks; blocks "
                                         "cannot combine their results into a local. Reduce into "
                                         "a tensor element instead",
                                         prog_.user_name(v->name), b->loc.line));
      if (k_.inner_blocks > 1 && k_.cluster == 1)
        prog_.error(n.loc, fmt::format("the reduction into local '{}' runs on {} blocks, which "
                                       "cannot combine their results into a local; use at most "
                                       "{} threads, reduce into a tensor element{}",
                                       prog_.user_name(v->name), k_.inner_blocks, k_.tpb,
                                       cluster_advice_));
      assigned_.insert(v->name);
      escaped_.erase(v->name);
      if (const Reduction& r = *n.reduction; r.is_index()) {
        visit(r.index_target);
        const std::string& at = r.index_target->as<Var>()->name;
        assigned_.insert(at);
        escaped_.erase(at);
      }
      return;
    }
    auto t = target->as<Load>();
    const std::string& chunk = n.reduction->chunk;  // each block's own element: declared by codegen
    if (!chunk.empty()) ++loop_vars_[chunk];
    for (const auto& i : t->indices) visit(i);
    if (!chunk.empty() && --loop_vars_[chunk] == 0) loop_vars_.erase(chunk);
    tensors.insert(t->tensor);
    written.insert(t->tensor);
    // Blocks share the target when the loop spans several (unless each has its own), or when
    // the target does not depend on the variable of some enclosing loop over blocks.
    bool shared = k_.inner_blocks > 1 && k_.cluster == 1 && chunk.empty();
    const For* across = nullptr;
    for (size_t b = 0; b < block_vars_.size(); ++b)
      if (!mentions(target, {block_vars_[b]})) across = block_loops_[b];
    if (across && deterministic_)
      prog_.error(n.loc, fmt::format("with deterministic=True, the reduction into {} also "
                                     "combines over the loop on line {}, whose iterations run "
                                     "on different blocks and would combine atomically; reduce "
                                     "into an element per iteration of that loop, then combine "
                                     "those in a loop of their own",
                                     to_string(target), across->loc.line));
    if (shared && deterministic_)
      prog_.error(n.loc, fmt::format("with deterministic=True, this reduction over {} blocks "
                                     "would combine atomically: inside a sequential loop of its "
                                     "kernel it cannot be cut into the kernels that combine in a "
                                     "fixed order; use at most {} threads, or move it out of "
                                     "that loop",
                                     k_.inner_blocks, k_.tpb));
    if (shared || across) k_.atomic_reductions.insert(n.reduction.get());
  }
};


// ----- lanes: a block across neighbouring iterations of the loop over blocks ----------------

constexpr int64_t kLanes = 32;  // a warp's width: one 128-byte line of float32 per warp access

// Reads the accesses of a kernel's thread-level loops: whether some walk the contiguous
// dimension with the block-level variable and across it with the thread-level one (the case
// for lanes), and whether some already walk it with the thread-level one (which lanes would
// spoil). Also whether the kernel holds anything that needs the whole block as one iteration.
class LaneScan : public IRVisitor {
 public:
  LaneScan(const SpecializedFunction& p, std::string block_var, int thread_depth)
      : prog_(p), block_var_(std::move(block_var)), thread_depth_(thread_depth) {}

  bool across = false, along = false, blocked = false;

 protected:
  void visit_node(const For* n) override {
    if (!n->par) return IRVisitor::visit_node(n);
    if (n->par->cooperative || (n->reduction && (n->reduction->scan || n->reduction->is_index() ||
                                                 !n->reduction->chunk.empty())))
      blocked = true;
    const bool threads = depth_ == thread_depth_;
    if (threads) thread_vars_.push_back(n->var);
    ++depth_;
    IRVisitor::visit_node(n);
    --depth_;
    if (threads) thread_vars_.pop_back();
  }
  void visit_node(const AtomicUpdate*) override { blocked = true; }
  void visit_node(const ExternCall*) override { blocked = true; }
  void visit_node(const Load* n) override {
    IRVisitor::visit_node(n);
    if (thread_vars_.empty()) return;
    const TensorType& t = prog_.tensors.at(n->tensor);
    auto stride = [&](const std::string& v) -> std::optional<int64_t> {
      int64_t total = 0;
      for (size_t d = 0; d < n->indices.size(); ++d) {
        auto c = coefficient(n->indices[d], v);
        if (!c) return std::nullopt;
        total += *c * t.strides[d];
      }
      return total;
    };
    auto by_block = stride(block_var_), by_thread = stride(thread_vars_.back());
    if (!by_block || !by_thread) return;
    if (std::abs(*by_thread) == 1) along = true;
    if (std::abs(*by_block) == 1 && std::abs(*by_thread) > 1) across = true;
  }

 private:
  const SpecializedFunction& prog_;
  std::string block_var_;
  int thread_depth_;
  int depth_ = 0;
  std::vector<std::string> thread_vars_;
};

// Lanes for the kernel (Kernel::lanes), or 1: when the threads of its one-block thread level
// would otherwise read down a column (y[j] = sum(x[:, j]) with j over blocks), each block takes
// kLanes neighbouring iterations of the innermost loop over blocks instead, so that a warp reads
// neighbouring elements; its threads per iteration are as many of those the user requested as
// fit in the block. The loop over blocks must give every lane of a block an iteration or none
// (a range of a multiple of kLanes, step 1), as its lanes share the block's barriers.
int64_t choose_lanes(const SpecializedFunction& prog, const Kernel& k,
                     const std::vector<std::vector<LevelUse>>& uses, int64_t requested_tpb) {
  if (!k.has_thread_level() || k.inner_blocks != 1 || k.cluster != 1 || k.levels.size() < 2 ||
      !k.atomic_reductions.empty())
    return 1;
  const size_t block_level = k.levels.size() - 2;
  if (uses[block_level].size() != 1 || !uses[block_level][0].loop) return 1;
  const For& loop = *uses[block_level][0].loop;
  auto lo = loop.lo->as<IntImm>(), hi = loop.hi->as<IntImm>(), step = loop.step->as<IntImm>();
  if (!lo || !hi || !step || step->value != 1 || (hi->value - lo->value) % kLanes != 0 ||
      k.levels[block_level].count % kLanes != 0 || requested_tpb < kLanes)
    return 1;
  LaneScan scan(prog, loop.var, static_cast<int>(k.levels.size()) - 1);
  scan.visit(k.root);
  return scan.across && !scan.along && !scan.blocked ? kLanes : 1;
}

// Iterations of the innermost loop over blocks per block, one per warp (Kernel::warps), or 1:
// when every loop of a one-block thread level has a short constant range (a row of at most
// kMaxWarpRow elements, which a warp walks in a few steps), a block would spend most of its time
// at barriers and waiting for its few loads; a warp per row needs no block barrier and has more
// loads in flight per thread. Only with enough rows to give every warp of the GPU one
// (kMinWarpRows), so that the parallelism the user asked for is not cut short where it matters.
constexpr int64_t kMaxWarpRow = 512;
constexpr int64_t kMinWarpRows = 8192;  // an H100's 132 SMs hold 8448 warps

int64_t choose_warps(const SpecializedFunction& prog, const Kernel& k,
                     const std::vector<std::vector<LevelUse>>& uses) {
  if (!k.has_thread_level() || k.inner_blocks != 1 || k.cluster != 1 || k.levels.size() < 2 ||
      !k.atomic_reductions.empty() || k.grid() < kMinWarpRows)
    return 1;
  const size_t block_level = k.levels.size() - 2;
  if (uses[block_level].size() != 1 || !uses[block_level][0].loop) return 1;
  for (const auto& u : uses.back()) {
    if (!u.loop) return 1;
    auto trip = constant_trip_count(*u.loop);
    auto step = u.loop->step->as<IntImm>();
    if (!trip || !step || step->value != 1 || *trip > kMaxWarpRow) return 1;
  }
  LaneScan scan(prog, uses[block_level][0].loop->var, static_cast<int>(k.levels.size()) - 1);
  scan.visit(k.root);
  if (scan.blocked) return 1;
  for (int64_t warps : {8, 4, 2})
    if (k.levels[block_level].count % warps == 0) return warps;
  return 1;
}

// The threads of a one-block thread level, no more than its loops have iterations (rounded up
// to a warp): a row of 448 elements with parir.threads(1024) gets 448 threads, not 576 idle
// ones that would wait at every barrier of the block. Loops with bounds known only at run time,
// and cooperative calls (which need the block they asked for), keep the requested count.
int64_t fit_to_iterations(const std::vector<LevelUse>& loops, int64_t count) {
  int64_t most = 0;
  for (const auto& u : loops) {
    if (!u.loop || u.loop->par->cooperative) return count;
    auto trip = constant_trip_count(*u.loop);
    if (!trip || *trip >= count) return count;
    most = std::max(most, *trip);
  }
  return std::min(count, std::max<int64_t>(32, (most + 31) / 32 * 32));
}

// A reduction that is its kernel's only parallel loop, over a constant range, and asks for at
// least as many threads as the GPU holds at once (kResidentThreads), runs on as many more
// threads (a power of two times the requested count) as leave each at least kSpreadIterations
// iterations. Past that count the spec's threads no longer say how many run together, only how
// long each block runs; many short blocks keep more loads in flight as they start and finish
// unevenly than a few long ones. A sum of 2^28 float32 with threads(2^20).reduce() on an H100:
// 0.358 ms; on 2^25 threads 0.348, Triton's 0.355 (benchmarks/NOTES.md). Each block combines
// its result into the target atomically, as before; a deterministic reduction (one temporary
// element per block) keeps the requested count.
constexpr int64_t kSpreadIterations = 8;
constexpr int64_t kResidentThreads = 132 * 2048;  // an H100's multiprocessors, 2,048 threads each

int64_t spread_long_reduction(const std::vector<LevelUse>& level, int64_t count, int64_t tpb,
                              const CompileOptions& opts) {
  if (level.size() != 1 || !level[0].loop || opts.deterministic) return count;
  const For& loop = *level[0].loop;
  if (!loop.reduction || loop.reduction->scan || loop.par->cooperative) return count;
  auto trip = constant_trip_count(loop);
  if (count < kResidentThreads || !trip) return count;
  int64_t spread = count;
  while (spread <= *trip / kSpreadIterations / 2 && spread / tpb < kMaxGrid / 2) spread *= 2;
  return spread;
}

// The threads of a one-block thread level over rows of a constant length, fewer where each
// would get fewer than kElementsPerThread iterations: a row of 768 elements with
// parir.threads(1024) runs on 96 threads of 8 elements each, many rows' blocks to a
// multiprocessor, instead of 768 threads that each load one element and then wait at the row's
// barriers with few bytes in flight. Layer norm of 174,762 x 768 float32 on an H100: 1.087 ms on
// 768 threads, 0.360 on 96 (torch.compile 0.360); softmax of 1,000-wide rows: 0.932 on 1,000,
// 0.361 on 128 (Triton 0.361); rows of 2,048 and 4,096 best at 8 elements a thread as well.
// Only for rows that a reduction walks (whose barriers the one-element threads wait at; rows
// that are only copied or updated element by element have none, and keep a thread an
// element), where the rows still give the GPU all the threads it holds (rows x threads >=
// kResidentThreads), where each iteration is straight-line code (a loop inside would be work to
// share out, not an element; scans, whose tiles are laid out otherwise, keep theirs), and never
// below kMinRowThreads, the fewest whose blocks (at most 32 a multiprocessor) fill one.
constexpr int64_t kElementsPerThread = 8;
constexpr int64_t kMinRowThreads = 64;

int64_t threads_for_short_rows(const std::vector<LevelUse>& loops, int64_t count, double rows) {
  int64_t longest = 0;
  bool reduces = false;
  for (const auto& u : loops) {
    if (!u.loop || u.loop->par->cooperative || (u.loop->reduction && u.loop->reduction->scan) ||
        contains(u.loop->body, StmtKind::For) || contains(u.loop->body, StmtKind::While))
      return count;
    auto trip = constant_trip_count(*u.loop);
    if (!trip) return count;
    longest = std::max(longest, *trip);
    reduces = reduces || u.loop->reduction;
  }
  if (!reduces) return count;
  auto whole_warps = [](double n) { return static_cast<int64_t>(std::ceil(n / 32)) * 32; };
  int64_t enough = std::max({kMinRowThreads,
                             whole_warps(static_cast<double>(longest) / kElementsPerThread),
                             whole_warps(static_cast<double>(kResidentThreads) / rows)});
  return std::min(count, enough);
}

void map_kernel(const SpecializedFunction& prog, Kernel& k, const CompileOptions& opts) {
  LevelCollector collect;
  bool gpu_root = k.root->as<GpuBlock>() != nullptr;
  if (gpu_root) collect.depth = 1;  // the block itself is level 0
  collect.visit(k.root);
  std::vector<std::vector<LevelUse>>& uses = collect.levels;
  if (gpu_root) {
    if (uses.empty()) uses.resize(1);
    uses[0] = {{nullptr, 1}};
  }

  // Threads per block: the default unless a loop that maps to threads asks for another value.
  // (A loop that maps to blocks has no threads to group: its .tpb() does not apply.)
  bool has_threads = !(gpu_root && uses.size() == 1);
  int64_t tpb = 0;
  const For* tpb_loop = nullptr;
  if (has_threads)
    for (const auto& u : uses.back()) {
      if (!u.loop) continue;
      int64_t t = u.loop->par->tpb;
      if (t == 0) continue;
      if (tpb && t != tpb)
        prog.error(u.loop->loc, fmt::format("this loop asks for {} threads per block, but the loop "
                                            "on line {} of the same kernel asks for {}",
                                            t, tpb_loop->loc.line, tpb));
      tpb = t;
      tpb_loop = u.loop;
    }
  if (!tpb) tpb = LoopPar::kDefaultThreadsPerBlock;

  for (size_t d = 0; d < uses.size(); ++d) {
    bool innermost = d + 1 == uses.size();
    int64_t count = uses[d][0].count;
    for (const auto& u : uses[d]) {
      if (u.count == count) continue;
      if (innermost && has_threads && std::max(u.count, count) <= tpb) {
        // Siblings that all fit in one block share it; the smaller ones leave threads idle.
        count = std::max(count, u.count);
        continue;
      }
      prog.error(u.loop->loc,
                 fmt::format("this parallel loop asks for {} threads, but the loop on line {} at "
                             "the same parallel depth asks for {}; parallel loops at one depth "
                             "must request the same number of threads",
                             u.count, uses[d][0].loop->loc.line, uses[d][0].count));
    }
    for (const auto& u : uses[d])
      if (u.loop && u.loop->reduction && !(has_threads && innermost))
        prog.error(u.loop->loc, fmt::format("this {0} loop maps to thread blocks because other "
                                            "parallel loops at its depth contain parallel "
                                            "loops; a {0} must be an innermost parallel loop",
                                            u.loop->reduction->scan ? "scan" : "reduction"));
    if (has_threads && innermost && count <= tpb) count = fit_to_iterations(uses[d], count);
    if (has_threads && innermost && count <= tpb && d > 0) {
      double rows = 1;
      for (const auto& l : k.levels) rows *= static_cast<double>(l.count);
      count = threads_for_short_rows(uses[d], count, rows);
    }
    if (has_threads && innermost && uses.size() == 1 && !gpu_root)
      count = spread_long_reduction(uses[d], count, tpb, opts);
    ParLevel level{count, has_threads && innermost};
    k.levels.push_back(level);
  }

  if (has_threads) {
    ParLevel& inner = k.levels.back();
    BlockShape shape = block_shape(inner.count, tpb);
    k.tpb = shape.tpb;
    k.inner_blocks = shape.blocks;
    // Every launched thread takes part: a loop over blocks has a whole number of blocks' worth
    // of threads, else the last block's extra threads would repeat other threads' iterations.
    inner.count = k.inner_blocks * k.tpb;
  } else {
    k.tpb = 1;
    k.inner_blocks = 1;
  }
  if (runs_as_cluster(opts, k.inner_blocks) && contains_reduction(k.root))
    k.cluster = k.inner_blocks;
  // A cooperative external's threads are all of the block's (it may synchronize them).
  if (has_threads)
    for (const auto& u : uses.back())
      if (u.loop && u.loop->par->cooperative && k.tpb != u.count)
        prog.error(u.loop->loc, fmt::format("this statement calls a cooperative external on "
                                            "{} threads, which must be all of its block's, but "
                                            "the loops at its parallel depth give the block {} "
                                            "threads; call it apart from them, or give them {} "
                                            "threads",
                                            u.count, k.tpb, u.count));
  // Guard the product against overflow before comparing it with the limit.
  double grid = static_cast<double>(k.inner_blocks);
  for (const auto& l : k.levels)
    if (!l.threads) grid *= static_cast<double>(l.count);
  if (grid > static_cast<double>(kMaxGrid))
    prog.error(k.root->loc, fmt::format("this parallel code needs {:.0f} thread blocks, more than "
                                        "CUDA's limit of {}; request fewer threads",
                                        grid, kMaxGrid));

  int thread_depth = has_threads ? static_cast<int>(k.levels.size()) - 1 : -1;
  // Writes outside the thread loops need one writer that all the inner level's blocks wait
  // for: a single block, or a cluster (whose barrier spans its blocks).
  KernelScan scan(prog, k, gpu_root ? 1 : 0, thread_depth, k.inner_blocks == 1 || k.cluster > 1,
                  cluster_advice(opts, k.inner_blocks), opts.deterministic);
  if (gpu_root) {
    scan.visit(k.root->as<GpuBlock>()->body);
  } else {
    scan.visit(k.root);
  }
  for (const auto* names : {&prog.tensor_params, &prog.temporaries})
    for (const auto& name : *names)
      if (scan.tensors.count(name)) {
        k.tensors.push_back(name);
        if (scan.written.count(name)) k.written.push_back(name);
      }
  k.host_vars.assign(scan.host_vars.begin(), scan.host_vars.end());

  if (gpu_root) return;
  if (choose_lanes(prog, k, uses, tpb) > 1) {
    k.lanes = kLanes;
    ParLevel& inner = k.levels.back();
    inner.count = std::min(inner.count, tpb / kLanes);
    k.tpb = inner.count * kLanes;
  } else if (int64_t warps = choose_warps(prog, k, uses); warps > 1) {
    k.warps = warps;
    k.levels.back().count = 32;
    k.tpb = 32 * warps;
  }
}

}  // namespace

void map_parallelism(const SpecializedFunction& prog, Lowered& lowered, const CompileOptions& opts) {
  int64_t m = opts.max_thread_blocks_per_cluster;
  if (opts.use_cuda_thread_block_clusters && (m < 1 || m > 16 || (m & (m - 1)) != 0))
    fail("max_thread_blocks_per_cluster must be a power of two from 1 to 16 (got {})", m);
  std::set<std::string> written;
  for (auto& k : lowered.kernels) {
    map_kernel(prog, k, opts);
    written.insert(k.written.begin(), k.written.end());
  }
  // The plan lists every tensor parameter, so a call passes the same tensors as the function.
  lowered.plan.params.clear();
  for (const auto& name : prog.tensor_params)
    lowered.plan.params.push_back({name, prog.tensors.at(name), written.count(name) > 0});
  lowered.plan.temporaries.clear();
  for (const auto& name : prog.temporaries)
    lowered.plan.temporaries.push_back({name, prog.tensors.at(name), true});
  // Launch sizes are known only now.
  std::map<std::string, const Kernel*> by_name;
  for (const auto& k : lowered.kernels) by_name[k.name] = &k;
  for_each_launch(lowered.plan.steps, [&](PlanStep& s) {
    const Kernel& k = *by_name.at(s.kernel);
    s.grid = k.grid();
    s.block = k.tpb;
    s.cluster = k.cluster;
    s.args = k.tensors;
    s.args.insert(s.args.end(), k.host_vars.begin(), k.host_vars.end());
  });
}

}  // namespace parir
