#include "passes/keep_rows_on_chip.h"

#include <algorithm>
#include <limits>
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
  std::vector<std::string> regs;     // one local per element of the thread (or of a group)
  ExprPtr load;  // its access, with the loop variable as kElement
  std::string slot;  // kept in shared memory: the array of its elements
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
  RowRewriter(SpecializedFunction& prog, Kernel& k, LaunchPlan& plan, FreshNames& names,
              bool group_elements)
      : prog_(prog),
        k_(k),
        plan_(plan),
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
  LaunchPlan& plan_;
  FreshNames& names_;
  const int64_t threads_;
  const bool group_elements_;
  bool shared_run_made_ = false;  // a kernel keeps one run in shared memory at most

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

  // The end of the run that starts at `i`: loops over the same range, separated by
  // assignments; i when none starts.
  size_t run_end(const Body& b, size_t i) const {
    auto first = row_loop(b[i]);
    if (!first) return i;
    size_t end = i + 1, j = i + 1;
    for (; j < b.size(); ++j) {
      if (b[j]->as<Assign>()) continue;
      auto l = row_loop(b[j]);
      if (!l || !l->same_range(*first)) break;
      end = j + 1;
    }
    return end > i + 1 ? end : i;
  }

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
    std::vector<Kept> in_registers = fitting_registers(kept, loops);
    auto registers = [&] {
      return in_registers.empty() ? run : in_registers_run(run, loops, in_registers);
    };
    // Warps that each walk their own row in one block would share the arrays: registers only.
    if (in_registers.size() == kept.size() || shared_run_made_ || k_.warps != 1)
      return registers();
    std::optional<SharedRun> shared =
        in_shared_memory_run(run, loops, kept, in_registers.size());
    if (!shared) return registers();
    shared_run_made_ = true;
    if (shared->bytes <= kSharedBytesEveryGpuGives) return shared->body;
    // More than some GPUs give a block: there the kernel is launched without it and takes the
    // run as it is without shared memory.
    const Loc& loc = run.front()->loc;
    auto fn = std::make_shared<ExternFunction>();
    fn->name = fn->python_name = "parir::dynamic_shared_bytes";
    fn->result = ScalarType::I64;
    ExprPtr got = std::make_shared<ExternCall>(fn, std::vector<ExprPtr>{}, loc);
    ExprPtr granted = binary(BinaryOp::Ge, got,
                             int_imm(shared->bytes, loc, Type{ScalarType::I64, false}), loc,
                             Type{ScalarType::Bool, false});
    return {std::make_shared<If>(granted, std::move(shared->body), registers(), loc)};
  }

  // The kept elements that registers hold (kMaxElementsPerThread a thread at most, within
  // kMaxKeptValuesPerThread, the most accessed first): all of `kept`, some, or none.
  std::vector<Kept> fitting_registers(std::vector<Kept> kept,
                                      const std::vector<std::optional<RowLoop>>& loops) const {
    const int64_t width = group_width(*loops.front(), kept, loops, kMaxElementsPerThread);
    const int64_t per_thread = groups_per_thread(*loops.front(), width) * width;
    if (per_thread > kMaxElementsPerThread) return {};
    if (per_thread > kMaxElementsPerThreadOfTwoLoopRows &&
        threads_ > kMaxThreadsForLongTwoLoopRows) {
      auto in_fewer_than_three_loops = [](const Kept& c) { return loops_accessing(c) < 3; };
      kept.erase(std::remove_if(kept.begin(), kept.end(), in_fewer_than_three_loops), kept.end());
    }
    const auto fit = std::max<std::ptrdiff_t>(1, kMaxKeptValuesPerThread / per_thread);
    if (static_cast<std::ptrdiff_t>(kept.size()) > fit) kept.erase(kept.begin() + fit, kept.end());
    return kept;
  }

  // The run with `kept` in registers: each loop that accesses them becomes one iteration per
  // thread over the thread's elements (unrolled).
  Body in_registers_run(const Body& run, const std::vector<std::optional<RowLoop>>& loops,
                        std::vector<Kept> kept) {
    const int64_t width = group_width(*loops.front(), kept, loops, kMaxElementsPerThread);
    const int64_t per_thread = groups_per_thread(*loops.front(), width) * width;
    for (auto& c : kept) {
      for (int64_t e = 0; e < per_thread; ++e) {
        c.regs.push_back(names_.make(c.tensor + "_r"));
        add_kernel_local(prog_, k_, c.regs.back(), c.load->type);
      }
    }
    return each_loop_of_kept(run, loops, kept, [&](const RowLoop& l, int, int first_pos) {
      if (width > 1) k_.row_groups[l.loop->var] = width;
      return unrolled(l, kept, first_pos, width);
    });
  }

  // The run with each loop that accesses a kept element replaced by rewrite(loop, its number in
  // the run, the position of its first statement).
  template <typename Rewrite>
  static Body each_loop_of_kept(const Body& run, const std::vector<std::optional<RowLoop>>& loops,
                                const std::vector<Kept>& kept, Rewrite rewrite) {
    Body out;
    int pos = 0;
    for (size_t j = 0; j < run.size(); ++j) {
      if (!loops[j]) {
        out.push_back(run[j]);
        ++pos;
        continue;
      }
      const RowLoop& l = *loops[j];
      int first_pos = pos;
      pos += static_cast<int>(l.loop->body.size()) + (l.loop->reduction ? 1 : 0);
      out.push_back(touches(kept, static_cast<int>(j))
                        ? rewrite(l, static_cast<int>(j), first_pos)
                        : run[j]);
    }
    return out;
  }

  static size_t loops_accessing(const Kept& c) {
    std::set<int> in_loops;
    for (const Event* e : c.events)
      if (e->loop >= 0) in_loops.insert(e->loop);
    return in_loops.size();
  }

  static bool touches(const std::vector<Kept>& kept, int loop) {
    for (const auto& c : kept)
      for (const Event* e : c.events)
        if (e->loop == loop) return true;
    return false;
  }

  // A run with its kept elements in shared memory, and the bytes it needs a block.
  struct SharedRun {
    Body body;
    int64_t bytes = 0;
  };

  // The run with `kept` in shared memory, for rows too long for the registers: each thread's
  // elements in arrays of the row's length (slots), which only that thread reads and writes,
  // so no barrier is needed; a kept element whose accesses all come before another's first
  // store shares its slot. Each loop stays a loop (over the thread's elements, or groups of
  // them as for registers), its statements using locals loaded from or stored to the slots.
  // The most accessed elements are kept while their slots fit kMaxSharedRowBytes, or
  // kMaxSharedRowBytesBesideRegisters where the registers keep some (`in_registers` elements)
  // or no element is accessed by three loops; nothing when that keeps no more than the
  // registers do.
  std::optional<SharedRun> in_shared_memory_run(const Body& run,
                                                const std::vector<std::optional<RowLoop>>& loops,
                                                std::vector<Kept> kept,
                                                size_t in_registers) {
    const RowLoop& first = *loops.front();
    size_t most_loops = 0;
    for (const auto& c : kept) most_loops = std::max(most_loops, loops_accessing(c));
    const int64_t most_bytes = in_registers > 0 || most_loops < 3
                                   ? kMaxSharedRowBytesBesideRegisters
                                   : kMaxSharedRowBytes;
    // Each array starts on a 16-byte boundary.
    auto array_bytes = [&](ScalarType t) { return (first.trip * size_in_bytes(t) + 15) / 16 * 16; };
    std::vector<int> slot_of;
    std::vector<ScalarType> slots;
    for (;;) {
      if (kept.size() <= in_registers) return std::nullopt;  // registers keep as many
      slot_of = assign_slots(kept, slots);
      int64_t bytes = 0;
      for (ScalarType t : slots) bytes += array_bytes(t);
      if (bytes <= most_bytes) break;
      kept.pop_back();
    }
    const int64_t width = group_width(first, kept, loops, std::numeric_limits<int64_t>::max());
    SharedRun out;
    std::vector<std::string> slot_names;
    for (ScalarType t : slots) {
      slot_names.push_back(names_.make("row_slot"));
      k_.shared_arrays.push_back({slot_names.back(), t, first.trip, out.bytes});
      out.bytes += array_bytes(t);
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      kept[i].slot = slot_names[static_cast<size_t>(slot_of[i])];
      for (int64_t e = 0; e < width; ++e) {
        kept[i].regs.push_back(names_.make(kept[i].tensor + "_r"));
        add_kernel_local(prog_, k_, kept[i].regs.back(), kept[i].load->type);
      }
    }
    out.body = each_loop_of_kept(run, loops, kept, [&](const RowLoop& l, int j, int first_pos) {
      return through_slots(l, j, kept, first_pos, width);
    });
    for_each_launch(plan_.steps, [&](PlanStep& step) {
      if (step.kernel != k_.name) return;
      step.shared_bytes = out.bytes;
      step.shared_if_available = out.bytes > kSharedBytesEveryGpuGives;
    });
    return out;
  }

  // For each kept element (in order), its slot: a slot is reused by an element whose first
  // access comes after every access of the slot's earlier elements, or is a store in the same
  // statement as their last accesses (reads, which come first). `slots` gets each slot's type.
  static std::vector<int> assign_slots(const std::vector<Kept>& kept,
                                       std::vector<ScalarType>& slots) {
    slots.clear();
    std::vector<int> slot_of(kept.size(), -1);
    std::vector<size_t> order(kept.size());
    for (size_t i = 0; i < kept.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return kept[a].events.front()->pos < kept[b].events.front()->pos;
    });
    std::vector<int> free_after;  // per slot: the last position its elements access
    std::vector<bool> last_is_write;
    for (size_t i : order) {
      const Kept& c = kept[i];
      const Event& start = *c.events.front();
      const ScalarType type = c.load->type.scalar;
      for (size_t s = 0; s < slots.size() && slot_of[i] < 0; ++s)
        if (slots[s] == type && (free_after[s] < start.pos ||
                                 (free_after[s] == start.pos && start.write && !last_is_write[s])))
          slot_of[i] = static_cast<int>(s);
      if (slot_of[i] < 0) {
        slot_of[i] = static_cast<int>(slots.size());
        slots.push_back(type);
        free_after.push_back(-1);
        last_is_write.push_back(false);
      }
      const size_t s = static_cast<size_t>(slot_of[i]);
      free_after[s] = c.events.back()->pos;
      last_is_write[s] = false;
      for (const Event* e : c.events)
        if (e->pos == free_after[s] && e->write) last_is_write[s] = true;
    }
    return slot_of;
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
                      const std::vector<std::optional<RowLoop>>& loops,
                      int64_t max_per_thread) const {
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
          groups_per_thread(l, width) * width > max_per_thread)
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
        Kept c{tensor, key, es, -1, {}, nullptr, {}};
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
        std::vector<Copy> copies;
        std::set<const Kept*> live;  // for arrays in shared memory only
        for (int64_t c = 0; c < width; ++c)
          copies.push_back(copy(s, f.var, element(l, f.var, g, c, width), nullptr, kept, pos,
                                -1, g * width + c, live));
        append_side_by_side(copies, group);
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

  // The loop variable's value at element c of the thread's group g, where `t` counts the
  // thread's iterations (its thread index t, or in a loop over groups the group's number):
  // lo + (t + g * T) * step for single elements, lo + (t + g * T) * W + c for groups (whose
  // step is 1).
  ExprPtr element(const RowLoop& l, const std::string& t, int64_t g, int64_t c,
                  int64_t width) const {
    const For& f = *l.loop;
    const Type index_type = f.lo->type;
    const Loc& loc = f.loc;
    auto imm = [&](int64_t v) { return int_imm(v, loc, index_type); };
    ExprPtr e = var(t, loc, index_type);
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

  // A statement's copy for one element: the kept elements' loads before it, the statement,
  // the stores after it.
  struct Copy {
    Body loads, body, stores;
  };

  // Reads of kept elements (Loads of their tensor at their key) replaced by their locals
  // regs[e].
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
      return c ? var(c->regs[static_cast<size_t>(e)], n->loc, n->type)
               : IRMutator::mutate_node(n, self);
    }
  };

  // The copies of a statement for a group's W elements, appended part by part and each part
  // statement by statement: W loads, then W of the next load, ..., then W computations, then
  // W stores, so that the W accesses of each lie side by side (for widen_row_groups). Every
  // copy has the same statements, for another element.
  static void append_side_by_side(const std::vector<Copy>& copies, Body& out) {
    for (Body Copy::*part : {&Copy::loads, &Copy::body, &Copy::stores})
      for (size_t i = 0; i < (copies.front().*part).size(); ++i)
        for (const Copy& c : copies) out.push_back((c.*part)[i]);
  }

  // The run's loop number `loop` with the kept elements in their slots of shared memory: a
  // loop over the thread's elements (or groups of `width`, each statement by statement), whose
  // statements read a kept element from a local, loaded from memory where the run first reads
  // it and from its slot where this loop first does, and store it to a local, then to its slot
  // when a later loop accesses it and to memory by the run's last store.
  StmtPtr through_slots(const RowLoop& l, int loop, const std::vector<Kept>& kept, int first_pos,
                        int64_t width) {
    const For& f = *l.loop;
    const Type index_type = f.lo->type;
    const Loc& loc = f.loc;
    const std::string t = names_.make(f.var);
    auto imm = [&](int64_t v) { return int_imm(v, loc, index_type); };
    std::set<const Kept*> live;  // those whose locals hold the element's value in this loop
    Body body;
    int pos = first_pos;
    for (const auto& s : f.body) {
      std::vector<Copy> copies;
      std::set<const Kept*> after;
      for (int64_t c = 0; c < width; ++c) {
        after = live;
        ExprPtr slot_index = var(t, loc, index_type);
        if (width > 1)
          slot_index = binary(BinaryOp::Add, binary(BinaryOp::Mul, slot_index, imm(width), loc,
                                                    index_type),
                              imm(c), loc, index_type);
        copies.push_back(copy(s, f.var, element(l, t, 0, c, width), simplify(slot_index), kept,
                              pos, loop, c, after));
      }
      live = after;
      append_side_by_side(copies, body);
      ++pos;
    }
    if (width > 1) k_.row_groups[t] = width;
    return std::make_shared<For>(t, imm(0), imm(l.trip / width), imm(1), std::move(body), loc,
                                 f.labels, f.par, f.reduction);
  }

  // Statement `s` at position `pos` of the run's loop number `loop`, for the element `element`
  // (the loop variable's value), with the kept values in the locals regs[e]: loaded where the
  // run first reads them (`loads`), stored to memory by the run's last store (`stores`, after
  // `body`). Kept in shared memory (Kept::slot), a value is also stored to its slot at
  // `slot_index` where a later loop accesses it, and loaded from there where a loop reads it
  // first; `live` (updated) names the kept elements whose locals hold the value in this loop.
  Copy copy(const StmtPtr& s, const std::string& loop_var, const ExprPtr& element,
            const ExprPtr& slot_index, const std::vector<Kept>& kept, int pos, int loop,
            int64_t e, std::set<const Kept*>& live) const {
    Substitute at_element(loop_var, element), kept_at_element(kElement, element);
    UseRegisters use(kept, loop_var, e);
    auto slot = [&](const Kept& c) {
      return std::make_shared<FlatLoad>(c.slot, slot_index, c.load->type, s->loc);
    };
    auto stashed = [&](const Kept& c) {
      if (c.slot.empty()) return false;
      for (const Event* ev : c.events)
        if (ev->loop > loop) return true;
      return false;
    };
    Copy out;
    for (const auto& c : kept) {
      bool read = false;
      for (const Event* ev : c.events) read = read || (ev->pos == pos && !ev->write);
      const bool first = c.events.front()->pos == pos;
      // A register holds the value from its first load on.
      if (!read || (c.slot.empty() ? !first : live.count(&c) > 0)) continue;
      ExprPtr reg = var(c.regs[static_cast<size_t>(e)], s->loc, c.load->type);
      if (first) {
        ExprPtr value = kept_at_element.mutate(c.load);
        out.loads.push_back(std::make_shared<Assign>(reg, std::move(value), s->loc));
        if (stashed(c)) out.loads.push_back(std::make_shared<Assign>(slot(c), reg, s->loc));
      } else {
        out.loads.push_back(std::make_shared<Assign>(reg, slot(c), s->loc));
      }
      live.insert(&c);
    }
    const Assign* a = s->as<Assign>();
    const Load* target = a ? a->target->as<Load>() : nullptr;
    const Kept* stored = target ? use.find(*target) : nullptr;
    if (!stored) {
      out.body.push_back(at_element.mutate(use.mutate(s)));
      return out;
    }
    ExprPtr reg = var(stored->regs[static_cast<size_t>(e)], a->loc, target->type);
    out.body.push_back(std::make_shared<Assign>(reg, at_element.mutate(use.mutate(a->value)),
                                                a->loc, a->labels));
    live.insert(stored);
    if (stashed(*stored))
      out.stores.push_back(std::make_shared<Assign>(slot(*stored), reg, a->loc));
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

void keep_rows_on_chip(SpecializedFunction& prog, Lowered& lowered, bool group_elements) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    // The row of a run must be one block's (or one warp's), whose barriers order the loops.
    if (!k.has_thread_level() || k.inner_blocks != 1 || k.cluster != 1 || k.lanes != 1) continue;
    const int thread_depth = static_cast<int>(k.levels.size()) - 1;
    if (thread_depth < 1) continue;
    RowRewriter rows(prog, k, lowered.plan, names, group_elements);
    k.root = rewrite_kernel(k.root, 0, thread_depth, rows);
  }
}

}  // namespace parir
