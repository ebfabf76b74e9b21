#include "passes/widen_accesses.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"
#include "passes/simplify.h"

namespace parir {
namespace {

// Whether a loop body is only assignments of expressions without side effects or run-time
// checks, which may be repeated and reordered across iterations.
class PlainAssignments : public AssignmentsOnly {
 public:
  PlainAssignments() : AssignmentsOnly(/*allow_ifs=*/false) {}

 protected:
  void visit_node(const FlatLoad* n) override {
    if (!n->checks.empty()) ok = false;
    IRVisitor::visit_node(n);
  }
};

// For each name of a kernel, the thread-level loops that mention it and those that assign it
// (nullptr: code outside them).
class NameRegions : public IRVisitor {
 public:
  explicit NameRegions(int thread_depth) : thread_depth_(thread_depth) {}
  std::map<std::string, std::set<const For*>> regions, assigned_in;

 protected:
  void visit_node(const For* n) override {
    const For* outer = loop_;
    if (n->par && depth_ == thread_depth_) loop_ = n;
    note(n->var);
    assigned_in[n->var].insert(loop_);
    if (!n->par) {
      loop_ = outer;
      return IRVisitor::visit_node(n);
    }
    ++depth_;
    IRVisitor::visit_node(n);
    --depth_;
    loop_ = outer;
  }
  void visit_node(const Var* n) override { note(n->name); }
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) assigned_in[v->name].insert(loop_);
    IRVisitor::visit_node(n);
  }

 private:
  void note(const std::string& name) { regions[name].insert(loop_); }
  int thread_depth_;
  int depth_ = 0;
  const For* loop_ = nullptr;
};

// Fewer iterations than this over a whole kernel move too few bytes (16 KB of float32 per
// tensor) for the width of the accesses to matter: such a loop keeps its plain code.
constexpr int64_t kMinWideIterations = 4096;

// Rewrites the thread-level loops of one kernel that can be widened.
class Widener : public IRMutator {
 public:
  Widener(SpecializedFunction& prog, Kernel& k, FreshNames& names, int thread_depth,
          const NameRegions& regions, int64_t memory_bandwidth_gbps)
      : prog_(prog), k_(k), names_(names), thread_depth_(thread_depth), regions_(regions),
        memory_bandwidth_gbps_(memory_bandwidth_gbps) {}

  int thread_loops = 0;       // thread-level loops seen
  int64_t widened_groups = 0;  // the groups of the last loop widened (0: none)

 protected:
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (!n->par) return IRMutator::mutate_node(n, self);
    if (depth_ == thread_depth_) {
      ++thread_loops;
      StmtPtr wide = widen(*n);
      return wide ? wide : self;
    }
    auto trip = constant_trip_count(*n);
    const bool repeats = !trip || *trip > 1;
    if (repeats) outer_vars_.insert(n->var);
    ++depth_;
    StmtPtr out = IRMutator::mutate_node(n, self);
    --depth_;
    if (repeats) outer_vars_.erase(n->var);
    return out;
  }

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;
  const int thread_depth_;
  const NameRegions& regions_;
  const int64_t memory_bandwidth_gbps_;
  int depth_ = 0;
  std::set<std::string> outer_vars_;  // of the parallel loops around, that run more than once

  // A loop's statements for W consecutive iterations, as widen() prepares them.
  struct Plan {
    const For* loop;
    int64_t width;                 // W
    std::set<std::string> wide;    // the accesses (access_key) that move W elements at a time
    std::map<std::string, std::vector<std::string>> renamed;  // a local -> its name per element
    std::vector<ExprPtr> elements;  // the loop variable's value for each of the W iterations
    ExprPtr group_start;            // the loop variable's value at the first of them
    // Group g starts at iteration base + g * W; groups [first_full, end_full) of the `groups`
    // lie wholly in the loop's range.
    int64_t base = 0, groups = 0, first_full = 0, end_full = 0;
    int64_t hi = 0;  // the loop's end (its range is [lo, hi))
    std::map<std::string, std::pair<std::string, int64_t>> neighbours;  // see neighbours()
  };

  StmtPtr widen(const For& f) {
    auto lo = f.lo->as<IntImm>(), step = f.step->as<IntImm>();
    auto trip = constant_trip_count(f);
    if (!lo || !step || step->value != 1 || !trip || *trip <= 0 || f.par->cooperative ||
        f.par->scan)
      return nullptr;
    // The iterations over the whole kernel: the loop's, once per worker of the levels above.
    int64_t runs = *trip;
    for (size_t l = 0; l + 1 < k_.levels.size() && runs < kMinWideIterations; ++l)
      runs *= k_.levels[l].count;
    if (runs < kMinWideIterations) return nullptr;
    const Reduction* r = f.reduction.get();
    if (r && (r->scan || r->is_index() || !r->chunk.empty())) return nullptr;
    PlainAssignments plain;
    plain.visit(f.body);
    if (!plain.ok) return nullptr;

    const std::optional<std::map<std::string, Type>> own = own_locals(f);
    if (!own) return nullptr;
    std::set<std::string> own_names;
    for (const auto& [name, type] : *own) own_names.insert(name);

    // The element size most of the contiguous accesses have sets W.
    std::map<int64_t, int> by_size;
    // The tensors the loop reads contiguously and afresh for each iteration of the loops
    // around it (x[i, j] under a loop over i; a vector v[j] that each i reads again is served
    // by the cache), by element size.
    std::map<int64_t, std::set<std::string>> streamed_by_size;
    std::vector<const FlatLoad*> contiguous;
    for (const auto& s : f.body) {
      const Assign& a = *s->as<Assign>();
      std::vector<const FlatLoad*> accesses;
      unconditional_loads(a.value, accesses);
      if (auto t = a.target->as<FlatLoad>()) {
        unconditional_loads(t->offset, accesses);
        accesses.push_back(t);
      }
      for (const FlatLoad* l : accesses) {
        // An offset that reads the iteration's own locals may move with the loop variable in
        // ways the offset does not show.
        const int64_t size = size_in_bytes(l->type.scalar);
        if (size < 2 || size > 8 || coefficient(l->offset, f.var) != 1 ||
            mentions(l->offset, own_names))
          continue;
        contiguous.push_back(l);
        ++by_size[size];
        if (l != a.target.get() && (outer_vars_.empty() || mentions(l->offset, outer_vars_)))
          streamed_by_size[size].insert(l->tensor);
      }
    }
    if (by_size.empty()) return nullptr;
    int64_t size = 0;
    for (const auto& [s, count] : by_size)
      if (!size || count >= by_size[size]) size = s;
    const int64_t width = group_width(size, r != nullptr, streamed_by_size[size].size());

    // Each access's shift: how many iterations past lo its offset first falls on a W-element
    // boundary. The shift most accesses share sets where the groups of W iterations start;
    // those accesses move W elements at once, the others (a stencil's neighbours one element
    // to the side) element by element within the group.
    std::map<std::string, std::pair<int64_t, std::string>> shift_of;  // access_key -> shift, tensor
    std::map<int64_t, int> by_shift;
    for (const FlatLoad* l : contiguous) {
      if (size_in_bytes(l->type.scalar) != size) continue;
      for (int64_t s = 0; s < width; ++s) {
        ExprPtr at = simplify(Substitute(f.var, int_imm(lo->value + s, f.loc, f.lo->type))
                                  .mutate(l->offset));
        if (known_power_of_two_divisor(at) % width != 0) continue;
        shift_of[access_key(*l)] = {s, l->tensor};
        ++by_shift[s];
        break;
      }
    }
    if (by_shift.empty()) return nullptr;
    int64_t shift = by_shift.begin()->first;
    for (const auto& [s, count] : by_shift)
      if (count > by_shift[shift]) shift = s;

    // Groups of W iterations from `base`, the first and the last cut by the loop's range where
    // it does not start on the shift or is not a multiple of W long; those edge groups run
    // element by element.
    Plan plan{&f, width, {}, {}, {}, nullptr};
    plan.base = shift == 0 ? lo->value : lo->value + shift - width;
    plan.hi = lo->value + *trip;
    plan.groups = (plan.hi - plan.base + width - 1) / width;
    plan.first_full = plan.base < lo->value ? 1 : 0;
    plan.end_full = (plan.hi - plan.base) / width;
    if (plan.end_full <= plan.first_full) return nullptr;  // no group of W iterations
    const bool edges = plan.first_full > 0 || plan.end_full < plan.groups;

    std::set<std::string> tensors;
    for (const auto& [key, at] : shift_of) {
      if (at.first != shift) continue;
      plan.wide.insert(key);
      tensors.insert(at.second);
    }

    plan.neighbours = neighbours(f, plan, contiguous);

    const Type index_type = f.lo->type;
    const Loc& loc = f.loc;
    const std::string group = names_.make(f.var + "_w");
    ExprPtr g = var(group, loc, index_type);
    plan.group_start = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, g,
                                                             int_imm(width, loc, index_type), loc,
                                                             index_type),
                                       int_imm(plan.base, loc, index_type), loc, index_type));
    for (int64_t e = 0; e < width; ++e)
      plan.elements.push_back(simplify(binary(BinaryOp::Add, plan.group_start,
                                              int_imm(e, loc, index_type), loc, index_type)));
    for (const auto& [name, type] : *own) {
      std::vector<std::string>& names = plan.renamed[name];
      for (int64_t e = 0; e < width; ++e) {
        names.push_back(names_.make(name + "_e"));
        add_kernel_local(prog_, k_, names.back(), type);
      }
      k_.locals.erase(name);  // no code of the kernel uses the name any more
    }

    ExprPtr wide_when = std::make_shared<PointersAligned>(
        std::vector<std::string>(tensors.begin(), tensors.end()), width * size, loc);
    if (edges) {
      auto full_from = binary(BinaryOp::Ge, g, int_imm(plan.first_full, loc, index_type), loc,
                              Type{ScalarType::Bool});
      auto full_to = binary(BinaryOp::Lt, g, int_imm(plan.end_full, loc, index_type), loc,
                            Type{ScalarType::Bool});
      if (plan.first_full > 0)
        wide_when = binary(BinaryOp::And, full_from, wide_when, loc, Type{ScalarType::Bool});
      if (plan.end_full < plan.groups)
        wide_when = binary(BinaryOp::And, full_to, wide_when, loc, Type{ScalarType::Bool});
    }
    Body body{std::make_shared<If>(wide_when, expand(plan, true, false),
                                   expand(plan, false, edges), loc)};
    widened_groups = plan.groups;
    return std::make_shared<For>(group, int_imm(0, loc, index_type),
                                 int_imm(plan.groups, loc, index_type),
                                 int_imm(1, loc, index_type), std::move(body), loc, f.labels,
                                 f.par, f.reduction);
  }

  // W for a loop whose contiguous accesses are mostly of `size` bytes: 16 bytes per access,
  // or 8 where a loop that is not a reduction streams several tensors from memory, so that
  // each thread's group loads about 16 bytes from memory in all, unless the GPU's memory is
  // fast enough to want more bytes in flight. Measured (benchmarks/NOTES.md): on an H100
  // (3.35 TB/s) streaming kernels ran fastest so, axpy and c = a + b 1.5% faster in 8-byte
  // groups than in 16-byte ones, b = 2 * a 3-6% slower in 8-byte groups; on an H200
  // (4.8 TB/s) axpy ran 4% faster in 16-byte groups. W stays at least 2 (float64 keeps 16
  // bytes).
  int64_t group_width(int64_t size, bool reduction, size_t tensors_streamed) const {
    const int64_t width = kWideAccessBytes / size;
    if (reduction || tensors_streamed < 2 || width <= 2 ||
        memory_bandwidth_gbps_ >= kFastMemoryGbps)
      return width;
    return kNarrowWideAccessBytes / size;
  }

  // The reads a few elements beside a wide read of a tensor the loop does not store to (a
  // stencil's x[i, j - 1] and x[i, j + 1] beside x[i, j]): access_key -> the wide read's key and
  // the distance d, so that element e of the group takes element e + d of the wide read where
  // that is in the group, and loads only the elements past its ends.
  static std::map<std::string, std::pair<std::string, int64_t>> neighbours(
      const For& f, const Plan& plan, const std::vector<const FlatLoad*>& contiguous) {
    std::map<std::string, std::pair<std::string, int64_t>> out;
    const std::set<std::string> stored = stored_tensors(f.body);
    for (const FlatLoad* l : contiguous) {
      const std::string key = access_key(*l);
      if (plan.wide.count(key) || stored.count(l->tensor) || out.count(key)) continue;
      for (const FlatLoad* w : contiguous) {
        if (w->tensor != l->tensor || w->type != l->type || !plan.wide.count(access_key(*w)))
          continue;
        const std::optional<int64_t> d = constant_difference(l->offset, w->offset);
        if (d && *d != 0 && *d > -plan.width && *d < plan.width) {
          out[key] = {access_key(*w), *d};
          break;
        }
      }
    }
    return out;
  }

  // The locals the loop's iterations assign, with their types, when each iteration owns them
  // (no code outside the loop mentions them) and reads them only after assigning them, so each
  // element of a group can get names of its own; nullopt when some local is not so, or when
  // the body reads a local that another thread-level loop assigns, which holds a value of that
  // loop's iteration for this thread (a row kept in registers). A reduction's accumulator is
  // the loop's, shared by the iterations; values assigned outside the thread loops are the
  // block's and may be read.
  std::optional<std::map<std::string, Type>> own_locals(const For& f) const {
    const Reduction* r = f.reduction.get();
    auto is_acc = [&](const std::string& name) { return r && name == r->acc; };
    std::map<std::string, Type> own;
    for (const auto& s : f.body)
      if (auto v = s->as<Assign>()->target->as<Var>(); v && !is_acc(v->name)) {
        auto it = regions_.regions.find(v->name);
        if (it == regions_.regions.end() || it->second != std::set<const For*>{&f})
          return std::nullopt;
        own[v->name] = v->type;
      }
    std::set<std::string> assigned;
    for (const auto& s : f.body) {
      const Assign& a = *s->as<Assign>();
      for (const auto& [name, type] : own)
        if (!assigned.count(name) &&
            (mentions(a.value, {name}) || (a.target->as<FlatLoad>() && mentions(a.target, {name}))))
          return std::nullopt;
      if (auto v = a.target->as<Var>()) assigned.insert(v->name);
    }
    for (const auto& name : names_in(f.body)) {
      if (own.count(name) || is_acc(name) || name == f.var) continue;
      auto it = regions_.assigned_in.find(name);
      if (it == regions_.assigned_in.end()) continue;
      for (const For* loop : it->second)
        if (loop && loop != &f) return std::nullopt;
    }
    return own;
  }

  // The loop body for the W iterations of a group, statement by statement: each statement
  // computes its W values, then stores them, so that the loads of all W iterations are in
  // flight together (the stores, which may alias them, come after). With `wide`, the planned
  // accesses move the W elements at once; with `guarded` (the edge groups), each element's
  // computation and store run only where its iteration lies in the loop's range.
  Body expand(const Plan& plan, bool wide, bool guarded) {
    const For& f = *plan.loop;
    std::map<std::string, std::vector<std::string>> loaded;  // access_key -> the W elements' locals
    Body out;
    auto guard = [&](int64_t e, StmtPtr s) -> StmtPtr {
      if (!guarded) return s;
      const Loc loc = s->loc;
      return std::make_shared<If>(in_range(plan, e), Body{std::move(s)}, Body{}, loc);
    };
    for (const auto& s : f.body) {
      const Assign& a = *s->as<Assign>();
      const FlatLoad* target = a.target->as<FlatLoad>();
      if (wide) {
        std::vector<const FlatLoad*> reads;
        unconditional_loads(a.value, reads);
        if (target) unconditional_loads(target->offset, reads);
        for (const FlatLoad* l : reads) {
          const std::string key = access_key(*l);
          if (!plan.wide.count(key) || loaded.count(key)) continue;
          std::vector<std::string> regs;
          for (int64_t e = 0; e < plan.width; ++e) {
            regs.push_back(names_.make(l->tensor + "_v"));
            add_kernel_local(prog_, k_, regs.back(), l->type);
          }
          out.push_back(std::make_shared<WideLoad>(l->tensor, group_offset(plan, l->offset),
                                                   regs, a.loc));
          loaded[key] = std::move(regs);
        }
      }
      const bool wide_store = wide && target && plan.wide.count(access_key(*target));
      std::vector<std::string> stored;
      Body stores;
      for (int64_t e = 0; e < plan.width; ++e) {
        ElementCopy copy(plan, loaded, e);
        ExprPtr value = copy.mutate(a.value);
        if (!target) {
          out.push_back(
              guard(e, std::make_shared<Assign>(copy.mutate(a.target), value, a.loc, a.labels)));
          continue;
        }
        stored.push_back(names_.make(target->tensor + "_s"));
        add_kernel_local(prog_, k_, stored.back(), target->type);
        ExprPtr v = var(stored.back(), a.loc, target->type);
        out.push_back(guard(e, std::make_shared<Assign>(v, value, a.loc, a.labels)));
        if (wide_store) continue;
        auto place = std::make_shared<FlatLoad>(target->tensor, copy.mutate(target->offset),
                                                target->type, target->loc);
        stores.push_back(guard(e, std::make_shared<Assign>(place, v, a.loc, a.labels)));
      }
      if (!target) continue;
      if (wide_store) {
        std::vector<ExprPtr> values;
        for (const auto& name : stored) values.push_back(var(name, a.loc, target->type));
        stores.push_back(std::make_shared<WideStore>(
            target->tensor, group_offset(plan, target->offset), std::move(values), a.loc));
      }
      out.insert(out.end(), stores.begin(), stores.end());
      // A store may write memory that another tensor's loaded elements view; the stored
      // elements themselves are known.
      loaded.clear();
      loaded[access_key(*target)] = std::move(stored);
    }
    return out;
  }

  // Whether element e of the group is an iteration of the loop: lo <= its value < hi.
  static ExprPtr in_range(const Plan& plan, int64_t e) {
    const For& f = *plan.loop;
    const Type boolean{ScalarType::Bool};
    const ExprPtr& v = plan.elements[static_cast<size_t>(e)];
    return binary(BinaryOp::And, binary(BinaryOp::Ge, v, f.lo, f.loc, boolean),
                  binary(BinaryOp::Lt, v, int_imm(plan.hi, f.loc, f.lo->type), f.loc, boolean),
                  f.loc, boolean);
  }

  // An access's offset at the first element of the group.
  static ExprPtr group_offset(const Plan& plan, const ExprPtr& offset) {
    return simplify(Substitute(plan.loop->var, plan.group_start).mutate(offset));
  }

  // A statement's expression for element e of the group: the loop variable at that element,
  // the iteration's locals by their names for it, loaded elements from their locals.
  class ElementCopy : public IRMutator {
   public:
    ElementCopy(const Plan& p, const std::map<std::string, std::vector<std::string>>& loaded,
                int64_t e)
        : plan_(p), loaded_(loaded), e_(static_cast<size_t>(e)) {}

   protected:
    ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
      if (n->name == plan_.loop->var) return plan_.elements[e_];
      auto it = plan_.renamed.find(n->name);
      return it == plan_.renamed.end() ? self : var(it->second[e_], n->loc, n->type);
    }
    ExprPtr mutate_node(const FlatLoad* n, const ExprPtr& self) override {
      const std::string key = access_key(*n);
      auto it = loaded_.find(key);
      if (it != loaded_.end()) return var(it->second[e_], n->loc, n->type);
      if (auto beside = plan_.neighbours.find(key); beside != plan_.neighbours.end()) {
        auto wide = loaded_.find(beside->second.first);
        const int64_t at = static_cast<int64_t>(e_) + beside->second.second;
        if (wide != loaded_.end() && at >= 0 && at < plan_.width)
          return var(wide->second[static_cast<size_t>(at)], n->loc, n->type);
      }
      return IRMutator::mutate_node(n, self);
    }

   private:
    const Plan& plan_;
    const std::map<std::string, std::vector<std::string>>& loaded_;
    size_t e_;
  };
};

// Fewer threads where the kernel's only thread-level loop now has fewer iterations (groups)
// than it had threads: as many blocks as before, each of fewer threads (at least a warp), so
// that a small kernel, bound by the latency of its accesses rather than by bandwidth, keeps
// its work spread over as many multiprocessors.
void fit_threads(Kernel& k, int64_t groups) {
  ParLevel& level = k.levels.back();
  if (groups >= level.count) return;
  const int64_t per_block = (groups + k.inner_blocks - 1) / k.inner_blocks;
  k.tpb = std::min(k.tpb, std::max<int64_t>(32, (per_block + 31) / 32 * 32));
  k.inner_blocks = (groups + k.tpb - 1) / k.tpb;
  level.count = k.inner_blocks * k.tpb;
}

}  // namespace

void widen_accesses(SpecializedFunction& prog, Lowered& lowered, int64_t memory_bandwidth_gbps) {
  if (size_in_bytes(prog.int_type) != 8) return;  // loop counters as narrow ints: left alone
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    if (!k.has_thread_level() || k.lanes != 1 || k.warps != 1 || k.cluster != 1) continue;
    // The tiles of tile_time_loops and tile_matrix_products (static shared memory) are laid
    // out for their loops already; rows kept in shared memory are not.
    bool tiles = false;
    for (const auto& a : k.shared_arrays) tiles = tiles || a.dynamic_offset < 0;
    if (tiles) continue;
    const int thread_depth = static_cast<int>(k.levels.size()) - 1;
    // A `with parir.gpu:` root is level 0 of the kernel, not a loop.
    const int loop_depth = k.root->as<GpuBlock>() ? thread_depth - 1 : thread_depth;
    NameRegions regions(loop_depth);
    regions.visit(k.root);
    Widener widener(prog, k, names, loop_depth, regions, memory_bandwidth_gbps);
    k.root = widener.mutate(k.root);
    if (widener.thread_loops != 1 || widener.widened_groups == 0) continue;
    fit_threads(k, widener.widened_groups);
    for_each_launch(lowered.plan.steps, [&](PlanStep& s) {
      if (s.kernel != k.name) return;
      s.grid = k.grid();
      s.block = k.tpb;
    });
  }
}

}  // namespace parir
