#include "passes/keep_rows_in_registers.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"
#include "passes/simplify.h"
#include "passes/widen_accesses.h"

namespace parir {
namespace {

// A parallel loop over a constant range with a plain body: range(lo, lo + trip * step, step).
struct RowLoop {
  const For* loop;
  int64_t lo, step, trip;
  bool same_range(const RowLoop& o) const {
    return lo == o.lo && step == o.step && trip == o.trip;
  }
};

std::optional<RowLoop> row_loop(const StmtPtr& s) {
  auto f = s->as<For>();
  if (!f || !f->par || f->par->cooperative) return std::nullopt;
  if (const Reduction* r = f->reduction.get();
      r && (r->scan || r->is_index() || !r->chunk.empty()))
    return std::nullopt;
  auto trip = constant_trip_count(*f);
  if (!trip || *trip == 0) return std::nullopt;
  return RowLoop{f, f->lo->as<IntImm>()->value, f->step->as<IntImm>()->value, *trip};
}

// The placeholder for the loop variable in an access's key.
const char* const kElement = "@";

// The access with the loop variable `loop_var` as kElement (none when loop_var is empty).
ExprPtr at_placeholder(const Load& l, const std::string& loop_var) {
  Substitute rename(loop_var, var(kElement, l.loc, Type{ScalarType::I64, true}));
  std::vector<ExprPtr> indices;
  for (const auto& i : l.indices) indices.push_back(loop_var.empty() ? i : rename.mutate(i));
  return std::make_shared<Load>(l.tensor, std::move(indices), l.type, l.loc, l.in_bounds);
}

// An access's indices as text, with the loop variable as kElement: equal keys in two loops of
// a run are the same element of the same iteration.
std::string key_of(const Load& l, const std::string& loop_var) {
  std::string key;
  const ExprPtr access = at_placeholder(l, loop_var);
  for (const auto& i : access->as<Load>()->indices) key += to_string(i) + ", ";
  return key;
}

// One access of a tensor in a run of loops, at position `pos` (the run's statements, in order).
struct Event {
  std::string tensor;
  std::string key;
  bool write;
  bool keepable;  // unconditional, in a loop's top-level statement, own element, in bounds
  int pos;
  int loop;  // the loop of the run it is in; -1 between the loops
  const Load* load;
};

// The tensor accesses of one statement of a run, in evaluation order.
class EventCollector : public IRVisitor {
 public:
  EventCollector(std::vector<Event>& events, const std::set<std::string>& assigned)
      : events_(events), assigned_(assigned) {}

  // A statement at `pos`; in loop `loop` (with variable `loop_var`) or between loops (-1).
  void statement(const StmtPtr& s, int pos, int loop, const std::string& loop_var) {
    pos_ = pos;
    loop_ = loop;
    loop_var_ = loop_var;
    // Only the top-level assignments of a loop's body run unconditionally, once per element.
    conditional_ = loop >= 0 && s->as<Assign>() ? 0 : 1;
    visit(s);
  }

  // The combination of a reduction's result into a tensor element, after loop `loop`.
  void reduction_result(const Reduction& r, int pos) {
    pos_ = pos;
    loop_ = -1;
    loop_var_.clear();
    conditional_ = 1;
    if (auto t = r.target->as<Load>()) {
      visit(r.target);
      add(*t, true);
    }
  }

 protected:
  void visit_node(const Load* n) override {
    IRVisitor::visit_node(n);
    add(*n, false);
  }
  void visit_node(const Select* n) override {
    visit(n->cond);
    ++conditional_;
    visit(n->a);
    visit(n->b);
    --conditional_;
  }
  void visit_node(const Binary* n) override {
    if (!is_logical(n->op)) return IRVisitor::visit_node(n);
    visit(n->a);
    ++conditional_;
    visit(n->b);
    --conditional_;
  }
  void visit_node(const Assign* n) override {
    visit(n->value);
    auto t = n->target->as<Load>();
    if (!t) return;
    for (const auto& i : t->indices) visit(i);
    add(*t, true);
  }
  void visit_node(const AtomicUpdate* n) override {
    ++conditional_;
    IRVisitor::visit_node(n);  // the target as a read
    add(*n->target->as<Load>(), true);
    --conditional_;
  }
  // A tensor passed to an external may be read and written anywhere.
  void visit_node(const ExternCall* n) override {
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (!n->fn->is_pointer(i)) {
        visit(n->args[i]);
        continue;
      }
      const std::string& t = n->args[i]->as<Var>()->name;
      for (bool write : {false, true}) events_.push_back({t, "*", write, false, pos_, loop_, nullptr});
    }
  }

 private:
  std::vector<Event>& events_;
  const std::set<std::string>& assigned_;
  int pos_ = 0, loop_ = -1, conditional_ = 1;
  std::string loop_var_;

  void add(const Load& l, bool write) {
    std::string key = key_of(l, loop_var_);
    bool keepable = conditional_ == 0 && loop_ >= 0 && l.in_bounds;
    if (keepable) {
      bool moves = false;
      for (const auto& i : l.indices) {
        moves = moves || mentions(i, {loop_var_});
        keepable = keepable && !contains(i, ExprKind::Load) && !contains(i, ExprKind::ExternCall);
      }
      keepable = keepable && moves;
    }
    if (keepable)  // the other values of the indices must stay the same throughout the run
      for (const auto& i : l.indices)
        for (const auto& name : assigned_)
          if (name != loop_var_ && mentions(i, {name})) keepable = false;
    events_.push_back({l.tensor, key, write, keepable, pos_, loop_, &l});
  }
};

// An element kept in registers across a run: (tensor, key), with its accesses in the run.
struct Kept {
  std::string tensor, key;
  std::vector<const Event*> events;  // in order
  int last_write = -1;               // position of the store that goes to memory
  std::vector<std::string> regs;     // one local per element of the thread
  ExprPtr load;  // its access, with the loop variable as kElement
};

// Whether keeping `c` can change what the run computes, given all the run's accesses (see the
// header): a kept value read after another tensor is written, or another tensor read between a
// kept store and the store to memory.
bool safe_to_keep(const Kept& c, const std::vector<Event>& events) {
  const int first = c.events.front()->pos;
  int first_write = -1;
  for (const Event* e : c.events)
    if (e->write && first_write < 0) first_write = e->pos;
  for (const Event* e : c.events) {
    if (e->write || e == c.events.front()) continue;
    for (const Event& o : events)
      if (o.tensor != c.tensor && o.write && o.pos >= first && o.pos < e->pos) return false;
  }
  if (first_write >= 0)
    for (const Event& o : events)
      if (o.tensor != c.tensor && !o.write && o.pos > first_write && o.pos <= c.last_write)
        return false;
  return true;
}

class RowRewriter {
 public:
  RowRewriter(SpecializedFunction& prog, Kernel& k, FreshNames& names, bool group_elements)
      : prog_(prog),
        k_(k),
        names_(names),
        threads_(k.levels.back().count),
        group_elements_(group_elements) {}

  // The statements of a body at block level (outside the thread loops), with its runs
  // rewritten; statements nested in sequential code at block level too.
  Body block_level(const Body& body) {
    Body out;
    for (const auto& s : body) out.push_back(nested(s));
    Body result;
    size_t i = 0;
    while (i < out.size()) {
      size_t end = run_end(out, i);
      if (end == i) {
        result.push_back(out[i++]);
        continue;
      }
      Body run(out.begin() + static_cast<std::ptrdiff_t>(i),
               out.begin() + static_cast<std::ptrdiff_t>(end));
      for (auto& s : rewrite_run(run)) result.push_back(s);
      i = end;
    }
    return result;
  }

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;
  const int64_t threads_;
  const bool group_elements_;

  StmtPtr nested(const StmtPtr& s) {
    if (auto f = s->as<For>(); f && !f->par)
      return std::make_shared<For>(f->var, f->lo, f->hi, f->step, block_level(f->body), f->loc,
                                   f->labels, f->par, f->reduction);
    if (auto i = s->as<If>())
      return std::make_shared<If>(i->cond, block_level(i->then_body), block_level(i->else_body),
                                  i->loc, i->labels);
    if (auto w = s->as<While>())
      return std::make_shared<While>(w->cond, block_level(w->body), w->loc, w->labels);
    return s;
  }

  // The end of the run that starts at `i`: loops over the same range with at most
  // kMaxElementsPerThread iterations per thread, separated by assignments; i when none starts.
  size_t run_end(const Body& b, size_t i) const {
    auto first = row_loop(b[i]);
    if (!first || elements(*first) > kMaxElementsPerThread) return i;
    size_t end = i + 1, j = i + 1;
    for (; j < b.size(); ++j) {
      if (b[j]->as<Assign>()) continue;
      auto l = row_loop(b[j]);
      if (!l || !l->same_range(*first)) break;
      end = j + 1;
    }
    return end > i + 1 ? end : i;
  }

  int64_t elements(const RowLoop& l) const { return (l.trip + threads_ - 1) / threads_; }

  Body rewrite_run(const Body& run) {
    const std::set<std::string> assigned = assigned_names(run);
    std::vector<Event> events;
    EventCollector collect(events, assigned);
    int pos = 0;
    std::vector<std::optional<RowLoop>> loops;
    for (size_t j = 0; j < run.size(); ++j) {
      loops.push_back(row_loop(run[j]));
      if (!loops.back()) {
        collect.statement(run[j], pos++, -1, "");
        continue;
      }
      const For& f = *loops.back()->loop;
      for (const auto& s : f.body) collect.statement(s, pos++, static_cast<int>(j), f.var);
      if (f.reduction) collect.reduction_result(*f.reduction, pos++);
    }
    std::vector<Kept> kept = choose(events);
    if (kept.empty()) return run;
    for (auto& c : kept) {
      const Event& first = *c.events.front();
      c.load = at_placeholder(*first.load, loops[first.loop]->loop->var);
    }
    const int64_t width = group_width(*loops.front(), kept, loops);
    const int64_t per_thread = groups_per_thread(*loops.front(), width) * width;
    if (per_thread > kMaxElementsPerThreadOfTwoLoopRows &&
        threads_ > kMaxThreadsForLongTwoLoopRows) {
      auto in_fewer_than_three_loops = [](const Kept& c) {
        std::set<int> in_loops;
        for (const Event* e : c.events)
          if (e->loop >= 0) in_loops.insert(e->loop);
        return in_loops.size() < 3;
      };
      kept.erase(std::remove_if(kept.begin(), kept.end(), in_fewer_than_three_loops), kept.end());
      if (kept.empty()) return run;
    }
    // Within the registers' budget: the most accessed first (choose's order).
    const auto fit = std::max<std::ptrdiff_t>(1, kMaxKeptValuesPerThread / per_thread);
    if (static_cast<std::ptrdiff_t>(kept.size()) > fit) kept.erase(kept.begin() + fit, kept.end());
    for (auto& c : kept) {
      const Load& l = *c.events.front()->load;
      for (int64_t e = 0; e < per_thread; ++e) {
        c.regs.push_back(names_.make(c.tensor + "_r"));
        add_kernel_local(prog_, k_, c.regs.back(), l.type);
      }
    }
    Body out;
    pos = 0;
    for (size_t j = 0; j < run.size(); ++j) {
      if (!loops[j]) {
        out.push_back(run[j]);
        ++pos;
        continue;
      }
      const RowLoop& l = *loops[j];
      int first_pos = pos;
      pos += static_cast<int>(l.loop->body.size()) + (l.loop->reduction ? 1 : 0);
      bool touched = false;
      for (const auto& c : kept)
        for (const Event* e : c.events) touched = touched || e->loop == static_cast<int>(j);
      if (!touched) {
        out.push_back(run[j]);
        continue;
      }
      out.push_back(unrolled(l, kept, first_pos, width));
      if (width > 1) k_.row_groups[l.loop->var] = width;
    }
    return out;
  }

  int64_t groups_per_thread(const RowLoop& l, int64_t width) const {
    return (l.trip / width + threads_ - 1) / threads_;
  }

  // W > 1 where each thread's elements should be groups of W consecutive ones (group g * T + t
  // of the row for thread t, g = 0, 1, ...) rather than single elements (t, t + T, ...), so
  // that widen_row_groups can move each group with one access of 16 (or 8) bytes: where every
  // kept element lies in the contiguous dimension of its tensor (the loop variable, with
  // coefficient 1, in the last index only; stride 1, the other strides multiples of W; the
  // row's first element on a group boundary), all of one size; the range is whole groups, at
  // least one for each thread; and no loop of the run assigns a local but a reduction's
  // accumulator (a group's W elements run statement by statement, which would mix the values
  // of such a local). W is 16 bytes of elements, or 8 bytes' where that spreads the groups
  // evenly over the threads and 16 bytes' does not (H100, a warp per 448-wide row: 8-byte
  // groups 1.245 ms, 16 lanes with 16-byte groups 1.248; benchmarks/NOTES.md). 1: no groups.
  int64_t group_width(const RowLoop& l, const std::vector<Kept>& kept,
                      const std::vector<std::optional<RowLoop>>& loops) const {
    if (!group_elements_ || l.step != 1) return 1;
    for (const auto& loop : loops) {
      if (!loop) continue;
      const For& f = *loop->loop;
      for (const auto& name : assigned_names(f.body))
        if (!f.reduction || name != f.reduction->acc) return 1;
    }
    const int64_t size = size_in_bytes(kept.front().load->type.scalar);
    int64_t chosen = 1;
    for (int64_t bytes : {kWideAccessBytes, kNarrowWideAccessBytes}) {
      const int64_t width = bytes / size;
      if (width < 2 || l.trip % width != 0 || l.trip / width < threads_ ||
          groups_per_thread(l, width) * width > kMaxElementsPerThread)
        continue;
      bool contiguous = true;
      for (const auto& c : kept) contiguous = contiguous && in_groups(c, l, width, size);
      if (!contiguous) continue;
      if ((l.trip / width) % threads_ == 0) return width;
      if (chosen == 1) chosen = width;
    }
    return chosen;
  }

  // Whether a kept element's accesses walk its tensor's contiguous dimension in groups of
  // `width` elements of `size` bytes that start on a group boundary.
  bool in_groups(const Kept& c, const RowLoop& l, int64_t width, int64_t size) const {
    const TensorType& t = prog_.tensors.at(c.tensor);
    const auto& indices = c.load->as<Load>()->indices;
    if (size_in_bytes(c.load->type.scalar) != size || t.strides.size() != indices.size() ||
        t.strides.back() != 1 || coefficient(indices.back(), kElement) != std::optional<int64_t>(1))
      return false;
    for (size_t d = 0; d + 1 < indices.size(); ++d)
      if (mentions(indices[d], {kElement}) || t.strides[d] % width != 0) return false;
    const Loc& loc = indices.back()->loc;
    ExprPtr first = Substitute(kElement, int_imm(l.lo, loc, indices.back()->type))
                        .mutate(indices.back());
    return known_power_of_two_divisor(simplify(first)) % width == 0;
  }

  // The accesses to keep: (tensor, key) pairs accessed in at least two loops of the run, only
  // by keepable accesses, for a tensor the run writes at that key only, and safe to keep; the
  // most accessed first (rewrite_run keeps as many as the registers' budget allows).
  std::vector<Kept> choose(const std::vector<Event>& events) const {
    std::map<std::string, std::map<std::string, std::vector<const Event*>>> by_tensor;
    for (const auto& e : events) by_tensor[e.tensor][e.key].push_back(&e);
    std::vector<Kept> candidates;
    for (auto& [tensor, keys] : by_tensor) {
      bool written = false;
      for (auto& [key, es] : keys)
        for (const Event* e : es) written = written || e->write;
      if (written && keys.size() != 1) continue;
      for (auto& [key, es] : keys) {
        std::set<int> in_loops;
        bool keepable = true;
        Kept c{tensor, key, es, -1, {}, nullptr};
        for (const Event* e : es) {
          keepable = keepable && e->keepable;
          in_loops.insert(e->loop);
          if (e->write) c.last_write = e->pos;
        }
        if (!keepable || in_loops.size() < 2 || !safe_to_keep(c, events)) continue;
        candidates.push_back(std::move(c));
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Kept& a, const Kept& b) {
      return a.events.size() > b.events.size();
    });
    return candidates;
  }

  // The loop as one iteration per thread that handles the thread's elements in turn, using the
  // kept elements' registers: elements t, t + T, ... (width 1), or groups of `width`
  // consecutive elements (see group_width), each group statement by statement: the statement's
  // loads for all W elements, then its W computations, then its W stores, so that the loads
  // and the stores of a group lie side by side. That reorders iterations only: those of a
  // parallel loop are independent, and a grouped run assigns no locals but accumulators.
  StmtPtr unrolled(const RowLoop& l, const std::vector<Kept>& kept, int first_pos,
                   int64_t width) {
    const For& f = *l.loop;
    const Type index_type = f.lo->type;
    const Loc& loc = f.loc;
    const int64_t groups = l.trip / width;
    Body body;
    for (int64_t g = 0; g < groups_per_thread(l, width); ++g) {
      Body group;
      int pos = first_pos;
      for (const auto& s : f.body) {
        Copy all;
        for (int64_t c = 0; c < width; ++c) {
          Copy parts = copy(s, f.var, element(l, g, c, width), kept, pos, g * width + c);
          all.loads.insert(all.loads.end(), parts.loads.begin(), parts.loads.end());
          all.body.insert(all.body.end(), parts.body.begin(), parts.body.end());
          all.stores.insert(all.stores.end(), parts.stores.begin(), parts.stores.end());
        }
        for (Body* part : {&all.loads, &all.body, &all.stores})
          group.insert(group.end(), part->begin(), part->end());
        ++pos;
      }
      // The last group exists only for the threads that the range reaches.
      const int64_t last = groups - g * threads_;
      if (last >= threads_) {
        body.insert(body.end(), group.begin(), group.end());
        continue;
      }
      ExprPtr cond = binary(BinaryOp::Lt, var(f.var, loc, index_type),
                            int_imm(last, loc, index_type), loc, Type{ScalarType::Bool, false});
      body.push_back(std::make_shared<If>(cond, std::move(group), Body{}, loc));
    }
    return std::make_shared<For>(f.var, int_imm(0, loc, index_type),
                                 int_imm(threads_, loc, index_type), int_imm(1, loc, index_type),
                                 std::move(body), loc, f.labels, f.par, f.reduction);
  }

  // The loop variable's value at element c of the thread's group g: lo + (t + g * T) * step
  // for single elements, lo + (t + g * T) * W + c for groups (whose step is 1).
  ExprPtr element(const RowLoop& l, int64_t g, int64_t c, int64_t width) const {
    const For& f = *l.loop;
    const Type index_type = f.lo->type;
    const Loc& loc = f.loc;
    auto imm = [&](int64_t v) { return int_imm(v, loc, index_type); };
    ExprPtr e = var(f.var, loc, index_type);
    if (g > 0) e = binary(BinaryOp::Add, e, imm(g * threads_), loc, index_type);
    if (width > 1) {
      e = binary(BinaryOp::Mul, e, imm(width), loc, index_type);
      if (l.lo + c != 0) e = binary(BinaryOp::Add, e, imm(l.lo + c), loc, index_type);
      return e;
    }
    if (l.step != 1) e = binary(BinaryOp::Mul, e, imm(l.step), loc, index_type);
    if (l.lo != 0) e = binary(BinaryOp::Add, imm(l.lo), e, loc, index_type);
    return e;
  }

  // Statement `s` of a loop, at position `pos`, for the thread's element `e` (`element`, the
  // loop variable's value): the kept elements read from and written to their registers, loaded
  // where first read (`loads`), stored to memory by the last store (`stores`, after `body`).
  struct Copy {
    Body loads, body, stores;
  };
  Copy copy(const StmtPtr& s, const std::string& loop_var, const ExprPtr& element,
            const std::vector<Kept>& kept, int pos, int64_t e) const {
    Substitute at_element(loop_var, element), kept_at_element(kElement, element);
    struct UseRegisters : IRMutator {
      const std::vector<Kept>& kept;
      const std::string& loop_var;
      int64_t e;
      UseRegisters(const std::vector<Kept>& k, const std::string& v, int64_t el)
          : kept(k), loop_var(v), e(el) {}
      const Kept* find(const Load& l) const {
        for (const auto& c : kept)
          if (c.tensor == l.tensor && c.key == key_of(l, loop_var)) return &c;
        return nullptr;
      }
      ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
        const Kept* c = find(*n);
        return c ? var(c->regs[e], n->loc, n->type) : IRMutator::mutate_node(n, self);
      }
    } use(kept, loop_var, e);

    Copy out;
    for (const auto& c : kept) {
      const Event* first = c.events.front();
      if (first->pos != pos || first->write) continue;
      out.loads.push_back(std::make_shared<Assign>(var(c.regs[e], s->loc, c.load->type),
                                                   kept_at_element.mutate(c.load), s->loc));
    }
    const Assign* a = s->as<Assign>();
    const Load* target = a ? a->target->as<Load>() : nullptr;
    const Kept* stored = target ? use.find(*target) : nullptr;
    if (!stored) {
      out.body.push_back(at_element.mutate(use.mutate(s)));
      return out;
    }
    ExprPtr reg = var(stored->regs[e], a->loc, target->type);
    out.body.push_back(std::make_shared<Assign>(reg, at_element.mutate(use.mutate(a->value)),
                                                a->loc, a->labels));
    if (stored->last_write == pos)
      out.stores.push_back(
          std::make_shared<Assign>(kept_at_element.mutate(stored->load), reg, a->loc));
    return out;
  }
};

// Rewrites the block-level bodies of a kernel (those directly inside its block-level loops).
StmtPtr rewrite_kernel(const StmtPtr& s, int depth, int thread_depth, RowRewriter& rows) {
  if (auto g = s->as<GpuBlock>(); g && depth == 0) {
    Body body = thread_depth == 1 ? rows.block_level(g->body) : g->body;
    if (thread_depth > 1)
      for (auto& st : body) st = rewrite_kernel(st, 1, thread_depth, rows);
    return std::make_shared<GpuBlock>(std::move(body), g->loc, g->labels);
  }
  auto f = s->as<For>();
  if (!f || !f->par || depth >= thread_depth) return s;
  Body body;
  if (depth + 1 == thread_depth) {
    body = rows.block_level(f->body);
  } else {
    for (const auto& st : f->body) body.push_back(rewrite_kernel(st, depth + 1, thread_depth, rows));
  }
  return std::make_shared<For>(f->var, f->lo, f->hi, f->step, std::move(body), f->loc, f->labels,
                               f->par, f->reduction);
}

}  // namespace

void keep_rows_in_registers(SpecializedFunction& prog, Lowered& lowered, bool group_elements) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    // The row of a run must be one block's (or one warp's), whose barriers order the loops.
    if (!k.has_thread_level() || k.inner_blocks != 1 || k.cluster != 1 || k.lanes != 1) continue;
    const int thread_depth = static_cast<int>(k.levels.size()) - 1;
    if (thread_depth < 1) continue;
    RowRewriter rows(prog, k, names, group_elements);
    k.root = rewrite_kernel(k.root, 0, thread_depth, rows);
  }
}

}  // namespace parir
