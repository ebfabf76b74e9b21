#include "codegen/cuda_codegen.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "codegen/cuda_literals.h"
#include "codegen/cuda_names.h"
#include "codegen/prelude.h"
#include "ir/queries.h"
#include "ir/visitor.h"
#include "codegen/plan_text.h"

namespace parir {

namespace {

class KernelPrinter {
 public:
  KernelPrinter(const SpecializedFunction& p, const Kernel& k, const CudaNames& names,
                std::string& out)
      : prog_(p), k_(k), names_(names), out_(out) {}

  // The kernel as a __global__ function. With `block_function`, its code is a __device__
  // function NAME_block taking the block index as its last argument, which the kernel calls
  // with blockIdx.x and a persistent kernel (print_persistent_kernel) calls for each block.
  void print(bool block_function = false) {
    std::vector<std::string> params, args;
    for (const auto& name : k_.tensors) {
      const TensorType& t = prog_.tensors.at(name);
      bool written = std::find(k_.written.begin(), k_.written.end(), name) != k_.written.end();
      params.push_back(fmt::format("{}{}* {}", written ? "" : "const ", cuda_name(t.elem),
                                   names_(name)));
    }
    for (const auto& v : k_.host_vars) params.push_back("int64_t " + names_(v));
    if (k_.bounds_checked) params.push_back("parir::BoundsError* parir_bounds");
    for (const auto& name : k_.tensors) args.push_back(names_(name));
    for (const auto& v : k_.host_vars) args.push_back(names_(v));
    const std::string bounds = k_.min_blocks_per_sm > 0
                                   ? fmt::format("{}, {}", k_.tpb, k_.min_blocks_per_sm)
                                   : std::to_string(k_.tpb);
    const std::string kernel = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({})",
                                           bounds, names_(k_.name), fmt::join(params, ", "));
    if (block_function) {
      params.push_back("int64_t parir_block_index");
      line(fmt::format("__device__ __forceinline__ void {}_block({}) {{", names_(k_.name),
                       fmt::join(params, ", ")));
    } else {
      line(kernel + " {");
    }
    ++indent_;
    grid_prologue(block_function ? "parir_block_index" : "blockIdx.x");
    for (const auto& [name, type] : k_.locals)
      line(fmt::format("{} {};", cuda_name(type.scalar), names_(name)));
    // Aligned to 16 bytes, so that the compiler may read four consecutive float32 elements
    // (or two float64) in one load.
    // Arrays in dynamic shared memory (the launch's shared(bytes)) point into one buffer.
    bool dynamic = false;
    for (const auto& a : k_.shared_arrays) {
      if (a.dynamic_offset < 0) {
        line(fmt::format("__align__(16) __shared__ {} {}[{}];", cuda_name(a.elem),
                         names_(a.name), a.size));
        continue;
      }
      if (!dynamic) line("extern __shared__ __align__(16) unsigned char parir_dynamic_shared[];");
      dynamic = true;
      line(fmt::format("{0}* const {1} = reinterpret_cast<{0}*>(parir_dynamic_shared + {2});",
                       cuda_name(a.elem), names_(a.name), a.dynamic_offset));
    }
    // The statement that ends the kernel; a block function's caller goes on to the next block.
    if (auto g = k_.root->as<GpuBlock>()) {
      if (!block_function && !g->body.empty()) last_statement_ = g->body.back().get();
      depth_ = 1;
      body(g->body);
    } else {
      if (!block_function) last_statement_ = k_.root.get();
      stmt(k_.root);
    }
    if (!block_function) drop_final_barrier(indent_);
    --indent_;
    line("}");
    if (block_function) {
      args.push_back("blockIdx.x");
      line(kernel + " {");
      line(fmt::format("  {}_block({});", names_(k_.name), fmt::join(args, ", ")));
      line("}");
    }
  }

 private:
  const SpecializedFunction& prog_;
  const Kernel& k_;
  const CudaNames& names_;
  std::string& out_;
  int indent_ = 0;
  int depth_ = 0;  // enclosing parallel levels
  int last_line_ = -1;
  int shared_slots_ = 0;  // the __shared__ old values of block-level atomic updates so far
  const StmtNode* last_statement_ = nullptr;  // the kernel's last statement, if nothing follows
  // No memory access since the block's last barrier (one printed, or block_reduce's), on the
  // straight-line path to the statement being printed: a barrier there would order nothing.
  bool fenced_ = false;
  const SourceInfo* last_src_ = nullptr;  // the file of the last #line
  std::set<std::string> internal_;  // names the compiler made: printed as they are
  std::string name(const std::string& n) const {
    return internal_.count(n) ? n : names_(n);
  }

  void line(const std::string& text) {
    out_ += std::string(indent_ * 2, ' ') + text + "\n";
  }

  // A #line directive back to the user's source, when the line changes.
  void at(const Loc& loc) {
    const SourceInfo* src = loc.src ? loc.src : prog_.source.get();
    if (!loc.known() || (loc.line == last_line_ && src == last_src_)) return;
    last_line_ = loc.line;
    last_src_ = src;
    out_ += fmt::format("#line {} \"{}\"\n", loc.line, escape_for_comment(src->filename));
  }

  // Which grid index each parallel level uses, decoded from blockIdx.x (innermost fastest).
  void grid_prologue(const char* block_index) {
    std::vector<std::string> desc;
    for (size_t d = 0; d < k_.levels.size(); ++d)
      desc.push_back(fmt::format("level {}: {} {}", d, k_.levels[d].count,
                                 k_.levels[d].threads ? "threads" : "blocks"));
    line(fmt::format("// grid({}) block({}){}{}; {}", k_.grid(), k_.tpb,
                     k_.cluster > 1 ? fmt::format(" cluster({})", k_.cluster) : "",
                     k_.lanes > 1   ? fmt::format(" lanes({})", k_.lanes)
                     : k_.warps > 1 ? fmt::format(" warps({})", k_.warps)
                                    : "",
                     fmt::join(desc, ", ")));
    size_t nblock_levels = k_.levels.size() - (k_.has_thread_level() ? 1 : 0);
    bool decode = k_.grid() > 1;
    if (decode) line(fmt::format("int64_t parir_block = {};", block_index));
    if (k_.has_thread_level()) {
      if (k_.inner_blocks > 1) {
        line(fmt::format("const int64_t parir_t = (parir_block % {}) * {} + threadIdx.x;",
                         k_.inner_blocks, k_.tpb));
        if (nblock_levels > 0) line(fmt::format("parir_block /= {};", k_.inner_blocks));
      } else if (k_.lanes > 1) {
        line(fmt::format("const int64_t parir_t = threadIdx.x / {};", k_.lanes));
      } else if (k_.warps > 1) {
        line("const int64_t parir_t = threadIdx.x % 32;");
      } else {
        line("const int64_t parir_t = threadIdx.x;");
      }
    }
    for (size_t i = nblock_levels; i-- > 0;) {
      // The innermost level over blocks may run several of its iterations per block, side by
      // side on the lanes or on the warps.
      const bool innermost = i + 1 == nblock_levels;
      const int64_t lanes = innermost ? k_.lanes * k_.warps : 1;
      const std::string within = !innermost  ? "0"
                                 : k_.lanes > 1 ? fmt::format("threadIdx.x % {}", k_.lanes)
                                 : k_.warps > 1 ? "threadIdx.x / 32"
                                                : "0";
      const std::string lane = lanes > 1 ? fmt::format(" * {} + {}", lanes, within) : "";
      const int64_t blocks = k_.levels[i].count / lanes;
      if (blocks == 1 || !decode) {
        line(fmt::format("const int64_t parir_b{} = {};", i, within));
        continue;
      }
      line(fmt::format(lanes > 1 ? "const int64_t parir_b{} = (parir_block % {}){};"
                                 : "const int64_t parir_b{} = parir_block % {}{};",
                       i, blocks, lane));
      if (i > 0) line(fmt::format("parir_block /= {};", blocks));
    }
  }

  // The thread that writes for a block, or for a cluster of blocks.
  std::string writer() const {
    if (k_.lanes > 1) return fmt::format("threadIdx.x < {}", k_.lanes);  // one per lane
    if (k_.warps > 1) return "threadIdx.x % 32 == 0";  // one per warp
    return k_.cluster > 1 ? "threadIdx.x == 0 && parir::cluster_rank() == 0" : "threadIdx.x == 0";
  }
  // The barrier between the threads that share block-level code.
  std::string barrier() const {
    if (k_.warps > 1) return "__syncwarp();";
    return k_.cluster > 1 ? "parir::cluster_sync();" : "__syncthreads();";
  }

  // Where the last statement line printed starts, when it is the barrier at `indent` (#line
  // directives after it aside); npos otherwise.
  size_t last_barrier_at(int indent) const {
    const std::string text = std::string(indent * 2, ' ') + barrier() + "\n";
    size_t end = out_.size();
    while (end > 0) {
      const size_t newline = end >= 2 ? out_.rfind('\n', end - 2) : std::string::npos;
      const size_t start = newline == std::string::npos ? 0 : newline + 1;
      if (out_.compare(start, 6, "#line ") != 0)
        return end - start == text.size() && out_.compare(start, text.size(), text) == 0
                   ? start
                   : std::string::npos;
      end = start;
    }
    return std::string::npos;
  }

  // A barrier, unless no memory access since the last one (fenced_) leaves it nothing to
  // order.
  void barrier_line() {
    if (fenced_) return;
    if (last_barrier_at(indent_) == std::string::npos) line(barrier());
    fenced_ = true;
  }

  // Drops a block barrier that would be the kernel's last instruction: no access follows it
  // for it to order. A cluster's barrier stays: it keeps each block's shared memory alive
  // until the cluster's other blocks are done reading it.
  void drop_final_barrier(int indent) {
    if (k_.cluster > 1) return;
    const size_t at = last_barrier_at(indent);
    if (at != std::string::npos) out_.erase(at, out_.find('\n', at) + 1 - at);
  }

  bool at_block_level() const {
    return k_.has_thread_level() && depth_ < static_cast<int>(k_.levels.size());
  }

  // ----- statements -----------------------------------------------------------------------

  void body(const Body& b) {
    for (const auto& s : b) stmt(s);
  }

  void block(const Body& b) {
    ++indent_;
    body(b);
    --indent_;
  }

  void stmt(const StmtPtr& s) {
    at(s->loc);
    // A block-level write by one thread comes after its barrier (assign); anything else that
    // accesses memory does so from here on. After a branch or a sequential loop, fenced_ holds
    // only where it holds on every path: through the body, and around it (no iteration, the
    // other branch).
    auto a = s->as<Assign>();
    const bool one_writer = a && a->target->as<FlatLoad>() && at_block_level();
    if (!one_writer && touches_memory(s)) fenced_ = false;
    const bool entry = fenced_;
    statement(s);
    if (s->as<If>() || s->as<While>() || (s->as<For>() && !s->as<For>()->par))
      fenced_ = fenced_ && entry;
  }

  // The statement itself, as stmt() prints it.
  void statement(const StmtPtr& s) {
    if (auto a = s->as<Assign>()) return assign(*a);
    if (auto f = s->as<For>()) return f->par ? parallel_for(*f) : sequential_for(*f);
    if (auto w = s->as<While>()) {
      line(fmt::format("while ({}) {{", condition(w->cond)));
      block(w->body);
      line("}");
      return;
    }
    if (auto i = s->as<If>()) return if_stmt(*i, false);
    if (auto e = s->as<ExprStmt>()) return line(expr(e->value) + ";");
    if (auto u = s->as<AtomicUpdate>()) return atomic_update(*u);
    if (auto w = s->as<WideLoad>()) {
      std::vector<std::string> targets{names_(w->tensor) + " + " + index_expr(w->offset)};
      for (const auto& t : w->targets) targets.push_back(name(t));
      return line(fmt::format("parir::load_wide({});", fmt::join(targets, ", ")));
    }
    if (auto w = s->as<WideStore>()) {
      std::vector<std::string> values{names_(w->tensor) + " + " + index_expr(w->offset)};
      for (const auto& v : w->values) values.push_back(expr(v));
      return line(fmt::format("parir::store_wide({});", fmt::join(values, ", ")));
    }
    if (auto g = s->as<GpuBlock>()) {
      // Already on the GPU: a nested `with parir.gpu:` is just its body.
      line("{");
      block(g->body);
      line("}");
    }
  }

  void assign(const Assign& a) {
    std::string text = fmt::format("{} = {};", place(a.target), expr(a.value));
    if (auto t = a.target->as<FlatLoad>(); t && !t->checks.empty())
      text = fmt::format("if ({}) {}", checks(*t), text);
    if (a.target->as<FlatLoad>() && at_block_level()) {
      // Outside the thread-level loops every thread of the block (of the cluster) runs this
      // statement: one thread writes, and barriers order the write with the others' accesses.
      barrier_line();
      line(fmt::format("if ({}) {}", writer(), text));
      fenced_ = false;
      barrier_line();
      return;
    }
    line(text);
  }

  static const char* atomic_struct(AtomicOp op) {
    switch (op) {
      case AtomicOp::Add:
        return "parir::Sum";
      case AtomicOp::Sub:
        return "parir::Sub";
      case AtomicOp::Min:
        return "parir::Min";
      case AtomicOp::Max:
        return "parir::Max";
      case AtomicOp::Exchange:
        return "parir::Exchange";
      case AtomicOp::And:
        return "parir::BitAnd";
      case AtomicOp::Or:
        return "parir::BitOr";
      case AtomicOp::Xor:
        return "parir::BitXor";
      case AtomicOp::CompareExchange:
        break;
    }
    internal_error("parir.{} has no combining operation", python_name(op));
  }

  // The prelude's atomic_combine (atomic_compare_exchange for atomic_cas), whose value is the
  // element's old value; with run-time bounds checks, skipped with a zero for its value when
  // one fails, as a checked load is.
  void atomic_update(const AtomicUpdate& u) {
    const FlatLoad& t = *u.target->as<FlatLoad>();
    const ScalarType elem = t.type.scalar;
    std::string ptr = "&" + element(t);
    std::string call = u.op == AtomicOp::CompareExchange
                           ? fmt::format("parir::atomic_compare_exchange({}, {}, {})", ptr,
                                         expr(u.compare), expr(u.value))
                           : fmt::format("parir::atomic_combine({}(), {}, {})",
                                         atomic_struct(u.op), ptr, expr(u.value));
    std::string guarded = fmt::format("{};", call);
    if (!t.checks.empty()) {
      guarded = fmt::format("if ({}) {};", checks(t), call);
      call = fmt::format("({} ? {} : {}{{}})", checks(t), call, cuda_name(elem));
    }
    // The old value, as the result local's type holds it.
    auto assign_result = [&](const std::string& old) {
      const Var& r = *u.result->as<Var>();
      ScalarType to = r.type.scalar;
      return fmt::format("{} = {};", name(r.name), to == elem ? old : conversion(to, elem, old));
    };
    if (!at_block_level()) {
      line(u.result ? assign_result(call) : guarded);
      return;
    }
    // Outside the thread-level loops every thread of the block runs this statement: one thread
    // updates, barriers order the update with the others' accesses, and the old value reaches
    // them all through shared memory (map_parallelism rules out clusters here).
    barrier_line();
    if (!u.result) {
      line(fmt::format("if ({}) {}", writer(), guarded));
      fenced_ = false;
      barrier_line();
      return;
    }
    std::string slot = fmt::format("parir_old{}", shared_slots_++);
    line("{");
    ++indent_;
    line(fmt::format("__shared__ {} {};", cuda_name(elem), slot));
    line(fmt::format("if ({}) {} = {};", writer(), slot, call));
    fenced_ = false;
    barrier_line();
    line(assign_result(slot));
    --indent_;
    line("}");
  }

  void if_stmt(const If& i, bool is_else_if) {
    line(fmt::format("{}if ({}) {{", is_else_if ? "} else " : "", condition(i.cond)));
    // Each branch starts from what holds before the statement; both must leave fenced_.
    const bool entry = fenced_;
    block(i.then_body);
    const bool then_fenced = fenced_;
    fenced_ = entry;
    if (i.else_body.size() == 1 && i.else_body[0]->as<If>() && i.else_body[0]->labels.empty()) {
      at(i.else_body[0]->loc);
      if_stmt(*i.else_body[0]->as<If>(), true);
      fenced_ = fenced_ && then_fenced;
      return;
    }
    if (!i.else_body.empty()) {
      line("} else {");
      block(i.else_body);
    }
    line("}");
    fenced_ = fenced_ && then_fenced;
  }

  // Loop variables have the program's default int type (int64 unless force_int_size).
  const char* loop_var_type() const { return cuda_name(prog_.int_type); }

  // Whether a loop variable of the program's int type can run from `lo` to past `hi` in steps
  // of `stride` iterations without overflowing, so that it can be the loop's counter. A narrower
  // forced int type (int8 with 128 threads) would wrap around and loop forever; such loops count
  // in int64 and convert the variable, which then wraps as its type says.
  bool counter_fits(const ExprPtr& lo, const ExprPtr& hi, int64_t step, int64_t stride) const {
    if (size_in_bytes(prog_.int_type) == 8) return true;
    auto l = lo->as<IntImm>();
    auto h = hi->as<IntImm>();
    if (!l || !h) return false;
    const double reach = std::abs(static_cast<double>(stride) * static_cast<double>(step));
    const double limit = std::ldexp(1.0, 8 * size_in_bytes(prog_.int_type) - 1) - 1;
    return std::abs(static_cast<double>(l->value)) + reach <= limit &&
           std::abs(static_cast<double>(h->value)) + reach <= limit;
  }

  // The loop header for `var` over range(lo, hi, step), starting at iteration `first` and
  // advancing `stride` iterations at a time. `hi_text` is how the bound `hi` is printed (the
  // name it was hoisted into, say).
  // `trips` > 0: every worker (`first`, below `stride`) runs exactly that many iterations,
  // which the header then says with a counter from 0: the CUDA compiler sees a constant trip
  // count, unrolls, and issues all of a thread's loads before it uses the first (from
  // `first` up to `hi`, it would not know how many iterations a thread has, and keeps them
  // one after the other).
  void loop_header(const std::string& v, const ExprPtr& lo, const ExprPtr& hi,
                   const std::string& hi_text, const ExprPtr& step, const std::string& first,
                   int64_t stride, int unroll = 0, int64_t trips = 0) {
    const std::string pragma = unroll > 0 ? fmt::format("#pragma unroll {}", unroll) : "";
    auto s = step->as<IntImm>();
    std::string name = names_(v);
    const std::string stride_text = stride == 1 ? "1" : fmt::format("{}L", stride);
    if (s && counter_fits(lo, hi, s->value, stride)) {
      bool lo_zero = lo->as<IntImm>() && lo->as<IntImm>()->value == 0;
      std::string scaled = s->value == 1 ? first : fmt::format("{} * {}", first, s->value);
      std::string start = first == "0" ? expr(lo)
                          : lo_zero    ? scaled
                                       : fmt::format("{} + {}", expr(lo), scaled);
      std::string inc = stride == 1     ? fmt::format("{}", s->value)
                        : s->value == 1 ? stride_text
                                        : fmt::format("{} * {}", stride_text, s->value);
      if (!pragma.empty()) line(pragma);
      if (trips > 0) {
        const std::string k = "parir_k_" + name;
        line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", k, trips));
        line(fmt::format("  const {} {} = {} + {} * {};", loop_var_type(), name, start, k, inc));
        return;
      }
      line(fmt::format("for ({} {} = {}; {} {} {}; {} += {}) {{", loop_var_type(), name, start, name,
                       s->value > 0 ? "<" : ">", hi_text, name, inc));
      return;
    }
    // A step known only at run time: count iterations, as range() does.
    std::string k = "parir_k_" + name;
    line(fmt::format("const int64_t {}_lo = {}, {}_step = {};", k, expr(lo), k, expr(step)));
    line(fmt::format("const int64_t {}_n = parir::trip_count({}_lo, {}, {}_step);", k, k,
                     hi_text, k));
    if (!pragma.empty()) line(pragma);
    line(fmt::format("for (int64_t {} = {}; {} < {}_n; {} += {}) {{", k, first, k, k, k,
                     stride_text));
    line(fmt::format("  const {} {} = {}_lo + {} * {}_step;", loop_var_type(), name, k, k, k));
  }

  void sequential_for(const For& f) {
    // range() evaluates its bounds once; hoist a bound that is not a constant.
    const bool hoisted = !f.hi->as<IntImm>();
    std::string hi;
    if (hoisted) {
      hi = "parir_stop_" + names_(f.var);
      line("{");
      ++indent_;
      line(fmt::format("const int64_t {} = {};", hi, expr(f.hi)));
    }
    loop_header(f.var, f.lo, f.hi, hoisted ? hi : expr(f.hi), f.step, "0", 1, f.unroll);
    block(f.body);
    line("}");
    if (hoisted) {
      --indent_;
      line("}");
    }
  }

  // How many iterations of the thread-level loop `f` each of the level's `count` threads
  // runs, when that is the same for all of them and more than one; else 0. parir_t is below
  // `count` in every launched thread: the level has a whole number of blocks' worth of threads
  // (map_parallelism), a lane's threads are threadIdx.x / lanes and a warp's its 32.
  int64_t iterations_per_thread(const For& f, int64_t count) const {
    const int64_t workers = k_.lanes > 1   ? k_.tpb / k_.lanes
                            : k_.warps > 1 ? 32
                                           : k_.inner_blocks * k_.tpb;
    const auto trips = constant_trip_count(f);
    if (count < 1 || workers != count || !trips || *trips % count != 0 || *trips / count < 2)
      return 0;
    return *trips / count;
  }

  void parallel_for(const For& f) {
    const ParLevel& level = k_.levels.at(depth_);
    std::string worker = level.threads ? "parir_t" : fmt::format("parir_b{}", depth_);
    std::string labels = escape_for_comment(fmt::format("{}", fmt::join(f.labels, "', '")));
    const Reduction* r = f.reduction.get();
    if (r && r->scan) return scan_for(f, labels);
    if (f.par->cooperative)
      line(fmt::format("// the block's {} threads call a cooperative external together, once",
                       level.count));
    else
      line(fmt::format("// label '{}': parallel {}over {} {}", labels,
                       r ? fmt::format("reduction ({}) ", python_name(r->op)) : "", level.count,
                       level.threads ? "threads" : "blocks"));
    if (r) {
      line("{");
      ++indent_;
      internal_.insert(r->acc);
      line(fmt::format("{} {} = {}::identity<{}>();", cuda_name(r->acc_type.scalar), r->acc,
                       op_struct(r->op), cuda_name(r->acc_type.scalar)));
      if (r->is_index()) {
        // No element yet: any element's index is lower, so it wins a tie with the identity.
        internal_.insert(r->index_acc);
        line(fmt::format("int64_t {} = parir::highest<int64_t>();", r->index_acc));
      }
    }
    loop_header(f.var, f.lo, f.hi, expr(f.hi), f.step, worker, level.count, f.unroll,
                level.threads ? iterations_per_thread(f, level.count) : 0);
    ++depth_;
    block(f.body);
    --depth_;
    // A loop over blocks that ends the kernel and that each block runs at most once: its body's
    // final barrier is the block's last instruction.
    const auto trip = constant_trip_count(f);
    if (&f == last_statement_ && !level.threads && !r && trip && *trip <= level.count)
      drop_final_barrier(indent_ + 1);
    line("}");
    if (r) {
      reduction_result(*r);
      --indent_;
      line("}");
    }
    if (level.threads && depth_ > 0 && at_block_level()) barrier_line();
  }

  // A scan loop (detect_scans): the block's threads walk the iterations in tiles of blockDim.x
  // consecutive iterations, thread t taking iteration base + t. Each thread computes its
  // element (the body up to the assignment to r.value; the identity past the end), the block
  // scans the tile, and each thread runs the rest of the body with the running values before
  // and after its element: the carry of the tiles before combined with the tile's exclusive and
  // inclusive prefixes. The carry starts from the running local's value and ends as its value.
  // Every thread runs every tile, so all reach block_scan's barriers; the iterations past the
  // end are guarded element by element. Over several blocks (ScanPass in ir.h), each block
  // walks its own chunk of the iterations: first only to combine its elements into its chunk's
  // total, then, in the next kernel, to scan them starting from the totals of the chunks
  // before it.
  void scan_for(const For& f, const std::string& labels) {
    const Reduction& r = *f.reduction;
    const bool chunked = r.scan_pass != ScanPass::Whole;
    PARIR_CHECK(chunked || k_.inner_blocks == 1, "a scan over several blocks without chunks");
    const std::string acc_t = cuda_name(r.acc_type.scalar);
    const ScalarType s_t = r.target->type.scalar;
    const std::string op = op_struct(r.op) + "()";
    const std::string identity = fmt::format("{}::identity<{}>()", op_struct(r.op), acc_t);
    for (const auto* n : {&r.acc, &r.value, &r.exclusive, &r.inclusive}) internal_.insert(*n);
    if (!chunked)
      line(fmt::format("// label '{}': parallel scan ({}) over {} threads of one block", labels,
                       scan_name(r.op), k_.tpb));
    else
      line(fmt::format("// label '{}': parallel scan ({}) over {} blocks of {} threads, a chunk "
                       "each: {}",
                       labels, scan_name(r.op), k_.inner_blocks, k_.tpb,
                       r.scan_pass == ScanPass::ChunkTotals
                           ? "the chunks' totals"
                           : "each chunk from the totals of the chunks before it"));
    line("{");
    ++indent_;
    if (r.scan_pass == ScanPass::ChunkTotals)
      line(fmt::format("{} {} = {};", acc_t, r.acc, identity));
    else
      line(fmt::format("{} {} = {};", acc_t, r.acc,
                       s_t == r.acc_type.scalar
                           ? expr(r.target)
                           : conversion(r.acc_type.scalar, s_t, expr(r.target))));
    const std::string v = names_(f.var);
    const std::string n = "parir_n_" + v, base = "parir_base_" + v, k = "parir_k_" + v;
    line(fmt::format("const int64_t {} = parir::trip_count({}, {}, {});", n,
                     cast_text(ScalarType::I64, f.lo), cast_text(ScalarType::I64, f.hi),
                     cast_text(ScalarType::I64, f.step)));
    // The iterations this block walks: [parir_first, parir_end).
    if (chunked) {
      internal_.insert(r.chunk);
      line(fmt::format("const int64_t parir_chunk = parir_t / {};", k_.tpb));
      line(fmt::format("const int64_t parir_chunk_len = (({} + {} - 1) / {} + 31) / 32 * 32;", n,
                       k_.inner_blocks, k_.inner_blocks));
      line(fmt::format("const int64_t parir_first = parir::min({}, parir_chunk * parir_chunk_len);",
                       n));
      line(fmt::format("const int64_t parir_end = parir::min({}, parir_first + parir_chunk_len);",
                       n));
    } else {
      line("const int64_t parir_first = 0;");
      line(fmt::format("const int64_t parir_end = {};", n));
    }
    if (r.scan_pass == ScanPass::FromChunkTotals) {
      line(fmt::format("{} parir_before = {};", acc_t, identity));
      line(fmt::format("for (int64_t {0} = threadIdx.x; {0} < parir_chunk; {0} += blockDim.x)",
                       r.chunk));
      line(fmt::format("  parir_before = {}(parir_before, {});", op, expr(r.chunk_totals)));
      line(fmt::format("{} = {}({}, parir::block_reduce(parir_before, {}));", r.acc, op, r.acc,
                       op));
    }
    line(fmt::format("for (int64_t {} = parir_first; {} < parir_end; {} += {}) {{", base, base,
                     base, k_.tpb));
    ++indent_;
    line(fmt::format("const int64_t {} = {} + (int64_t)threadIdx.x;", k, base));
    line(fmt::format("const {} {} = ({})({} + {} * {});", loop_var_type(), v, loop_var_type(),
                     cast_text(ScalarType::I64, f.lo), k, cast_text(ScalarType::I64, f.step)));
    line(fmt::format("{} {} = {};", acc_t, r.value, identity));
    // The body up to and with the element's assignment, then the rest.
    const size_t split = scan_element_statements(f);
    Body compute(f.body.begin(), f.body.begin() + split), use(f.body.begin() + split, f.body.end());
    ++depth_;
    line(fmt::format("if ({} < parir_end) {{", k));
    block(compute);
    line("}");
    --depth_;
    if (r.scan_pass == ScanPass::ChunkTotals) {
      // Each thread combines its own elements; the block combines the threads' after the loop.
      line(fmt::format("{} = {}({}, {});", r.acc, op, r.acc, r.value));
      --indent_;
      line("}");
      line(fmt::format("{} = parir::block_reduce({}, {});", r.acc, r.acc, op));
      line(fmt::format("if (threadIdx.x == 0) {{ const int64_t {} = parir_chunk; {} = {}; }}",
                       r.chunk, expr(r.chunk_totals), r.acc));
      --indent_;
      line("}");
      return;
    }
    line(fmt::format("{} parir_excl, parir_total;", acc_t));
    line(fmt::format("const {} parir_incl = parir::block_scan({}, {}, parir_excl, parir_total);",
                     acc_t, r.value, op));
    ++depth_;
    line(fmt::format("if ({} < parir_end) {{", k));
    ++indent_;
    auto running = [&](const std::string& name, const std::string& prefix) {
      std::string value = fmt::format("{}({}, {})", op, r.acc, prefix);
      if (s_t != r.acc_type.scalar) value = conversion(s_t, r.acc_type.scalar, value);
      line(fmt::format("const {} {} = {};", cuda_name(s_t), name, value));
    };
    running(r.exclusive, "parir_excl");
    running(r.inclusive, "parir_incl");
    body(use);
    --indent_;
    line("}");
    --depth_;
    line(fmt::format("{} = {}({}, parir_total);", r.acc, op, r.acc));
    --indent_;
    line("}");
    if (r.scan_pass == ScanPass::FromChunkTotals) {
      // The last chunk ends with the loop's final running value, which the kernels after this
      // one read; within this kernel no statement follows the loop.
      line(fmt::format("if (parir_chunk == {} && threadIdx.x == 0) {} = {};", k_.inner_blocks - 1,
                       expr(r.scan_result), expr(r.combined)));
    } else {
      line(fmt::format("{} = {};", expr(r.target), expr(r.combined)));
    }
    --indent_;
    line("}");
    if (depth_ > 0 && at_block_level()) barrier_line();
  }

  std::string cast_text(ScalarType to, const ExprPtr& e) {
    return e->type.scalar == to ? expr(e) : conversion(to, e->type.scalar, expr(e));
  }

  static std::string op_struct(ReduceOp op) {
    switch (op) {
      case ReduceOp::Sum:
        return "parir::Sum";
      case ReduceOp::Prod:
        return "parir::Prod";
      case ReduceOp::Min:
        return "parir::Min";
      case ReduceOp::Max:
        return "parir::Max";
    }
    return "?";
  }

  // The threads' accumulators are combined across the block, then into the target: by every
  // thread for a local (they all hold the same value), by one thread per block for a tensor
  // element, atomically when the loop spans several blocks.
  void reduction_result(const Reduction& r) {
    const std::string& acc = r.acc;
    if (r.is_index()) return index_reduction_result(r);
    line(fmt::format("{} = parir::{}({}, {}());", acc,
                     k_.lanes > 1   ? fmt::format("lane_reduce<{}>", k_.lanes)
                     : k_.warps > 1 ? "warp_reduce"
                                    : "block_reduce",
                     acc, op_struct(r.op)));
    // block_reduce's barrier comes after every access of the loop's body, by every thread.
    if (k_.lanes == 1 && k_.warps == 1 && k_.cluster == 1) fenced_ = true;
    if (k_.cluster > 1)
      line(fmt::format("{} = parir::cluster_reduce({}, {}());", acc, acc, op_struct(r.op)));
    auto target = r.target->as<FlatLoad>();
    bool tensor = target != nullptr;
    if (tensor || contains(r.combined, ExprKind::FlatLoad)) fenced_ = false;
    if (!r.chunk.empty()) {  // the block's own element (CompileOptions.deterministic)
      internal_.insert(r.chunk);
      line(fmt::format("const int64_t {} = parir_t / {};", r.chunk, k_.tpb));
    }
    // The thread that writes, and only when the target's bounds checks pass.
    std::string when = tensor && !target->checks.empty()
                           ? fmt::format("{} && {}", writer(), checks(*target))
                           : writer();
    if (tensor && k_.atomic_reductions.count(&r)) {
      line(fmt::format("if ({}) parir::atomic_combine({}(), &{}, {});", when, op_struct(r.op),
                       place(r.target), expr(r.acc_value)));
      return;
    }
    std::string text = fmt::format("{} = {};", place(r.target), expr(r.combined));
    line(tensor ? fmt::format("if ({}) {}", when, text) : text);
  }

  // An index reduction's (value, index) pairs are combined across the block (and the
  // cluster); every thread then updates the two locals with the same pair.
  void index_reduction_result(const Reduction& r) {
    line(fmt::format("parir::block_arg_reduce({}, {}, {}());", r.acc, r.index_acc,
                     op_struct(r.op)));
    if (k_.cluster > 1)
      line(fmt::format("parir::cluster_arg_reduce({}, {}, {}());", r.acc, r.index_acc,
                       op_struct(r.op)));
    line(fmt::format("if ({}) {{", condition(r.better)));
    line(fmt::format("  {} = {};", place(r.target), expr(r.combined)));
    line(fmt::format("  {} = {};", place(r.index_target), r.index_acc));
    line("}");
  }

  // ----- expressions ----------------------------------------------------------------------

  // An if/while condition, without the parentheses the statement already supplies.
  std::string condition(const ExprPtr& e) {
    std::string text = expr(e);
    if (e->as<Binary>() && text.size() > 2 && text.front() == '(' && text.back() == ')')
      return text.substr(1, text.size() - 2);
    return text;
  }

  std::string expr(const ExprPtr& e) {
    switch (e->kind) {
      case ExprKind::IntImm:
        return int_literal(e->as<IntImm>()->value, e->type.scalar);
      case ExprKind::FloatImm:
        return float_literal(e->as<FloatImm>()->value, e->type.scalar);
      case ExprKind::BoolImm:
        return e->as<BoolImm>()->value ? "true" : "false";
      case ExprKind::Var:
        return name(e->as<Var>()->name);
      case ExprKind::FlatLoad:
        return load(*e->as<FlatLoad>());
      case ExprKind::Unary: {
        auto u = e->as<Unary>();
        const char* op = u->op == UnaryOp::Neg ? "-" : u->op == UnaryOp::Not ? "!" : "~";
        // A negative literal operand gets parentheses: "--2.0f" would be a decrement.
        std::string a = expr(u->a);
        if (a.front() == '-') a = "(" + a + ")";
        return narrow(fmt::format("({}{})", op, a), e->type.scalar);
      }
      case ExprKind::Binary:
        return binary_expr(*e->as<Binary>());
      case ExprKind::Call: {
        auto c = e->as<Call>();
        std::vector<std::string> args;
        for (const auto& a : c->args) args.push_back(expr(a));
        return fmt::format("parir::{}({})", python_name(c->fn), fmt::join(args, ", "));
      }
      case ExprKind::Cast:
        return cast(e->type.scalar, e->as<Cast>()->a);
      case ExprKind::Select: {
        auto s = e->as<Select>();
        return fmt::format("({} ? {} : {})", expr(s->cond), expr(s->a), expr(s->b));
      }
      case ExprKind::ExternCall: {
        auto c = e->as<ExternCall>();
        std::vector<std::string> args;
        for (const auto& a : c->args) args.push_back(expr(a));
        return fmt::format("{}({})", c->fn->name, fmt::join(args, ", "));
      }
      case ExprKind::PointersAligned: {
        auto p = e->as<PointersAligned>();
        std::vector<std::string> pointers;
        for (const auto& t : p->tensors) pointers.push_back(names_(t));
        return fmt::format("parir::aligned<{}>({})", p->bytes, fmt::join(pointers, ", "));
      }
      case ExprKind::Load:
        internal_error("'{}' reaches code generation; call flatten_indices before generate_cuda",
                       to_string(e));
      case ExprKind::Slice:
      case ExprKind::SliceReduce:
        internal_error("'{}' reaches code generation; call lower_slices before generate_cuda",
                       to_string(e));
      case ExprKind::CallFunction:
        internal_error("'{}' reaches code generation; call inline_functions before "
                       "generate_cuda",
                       to_string(e));
      case ExprKind::TensorShape:
      case ExprKind::IsNone:
        internal_error("'{}' reaches code generation; call specialize_arguments before "
                       "generate_cuda",
                       to_string(e));
    }
    internal_error("an expression of unknown kind reaches code generation");
  }

  // Conversions to and from the half types go through parir_half.h's helpers, which round
  // once and never rely on C++'s implicit conversions (ambiguous for __half).
  std::string cast(ScalarType to, const ExprPtr& a) {
    return conversion(to, a->type.scalar, expr(a));
  }

  // The value of C++ expression `x`, of type `from`, converted to `to`.
  static std::string conversion(ScalarType to, ScalarType from, const std::string& x) {
    if (to == ScalarType::F16) return fmt::format("parir::to_float16({})", x);
    if (to == ScalarType::BF16) return fmt::format("parir::to_bfloat16({})", x);
    if (is_half(from)) return fmt::format("parir::from_half<{}>({})", cuda_name(to), x);
    return fmt::format("(({}){})", cuda_name(to), x);
  }

  // C++ computes small integer types in int; wrap the result back to the type, as the GPU's
  // registers would hold it.
  static std::string narrow(const std::string& text, ScalarType t) {
    if ((is_int(t) && size_in_bytes(t) < 4)) return fmt::format("(({}){})", cuda_name(t), text);
    return text;
  }

  std::string binary_expr(const Binary& b) {
    std::string x = expr(b.a), y = expr(b.b);
    ScalarType t = b.a->type.scalar;
    switch (b.op) {
      case BinaryOp::FloorDiv:
        return narrow(fmt::format("parir::floordiv({}, {})", x, y), t);
      case BinaryOp::Mod:
        return narrow(fmt::format("parir::mod({}, {})", x, y), t);
      case BinaryOp::Pow:
        return narrow(fmt::format("parir::pow({}, {})", x, y), t);
      default:
        return narrow(fmt::format("({} {} {})", x, cuda_operator(b.op), y), b.type.scalar);
    }
  }

  // x.flat[offset] -> x[offset]: flatten_indices has computed the offset.
  std::string element(const FlatLoad& l) {
    return fmt::format("{}[{}]", names_(l.tensor), index_expr(l.offset));
  }

  // An assignment's target: a local or a tensor element (whose checks guard the statement).
  std::string place(const ExprPtr& target) {
    if (auto l = target->as<FlatLoad>()) return element(*l);
    return expr(target);
  }

  // A read; with run-time bounds checks, a zero when one fails (the access is skipped).
  std::string load(const FlatLoad& l) {
    if (l.checks.empty()) return element(l);
    return fmt::format("parir::checked_load({}, {}, {})", names_(l.tensor),
                       index_expr(l.offset), checks(l));
  }

  // The conjunction of an access's run-time bounds checks.
  std::string checks(const FlatLoad& l) {
    std::vector<std::string> terms;
    for (const auto& c : l.checks)
      terms.push_back(fmt::format("parir::in_bounds(parir_bounds, {}, {}, {})", c.site,
                                  index_expr(c.index), c.extent));
    return terms.size() == 1 ? terms[0] : fmt::format("({})", fmt::join(terms, " && "));
  }

  // Index arithmetic without the redundant parentheses of expr(), for readability.
  std::string index_expr(const ExprPtr& e) {
    if (auto b = e->as<Binary>(); b && (b->op == BinaryOp::Add || b->op == BinaryOp::Mul)) {
      std::string x = index_expr(b->a), y = index_expr(b->b);
      if (b->op == BinaryOp::Mul) {
        auto wrap = [](const ExprPtr& s, const std::string& t) {
          auto sb = s->as<Binary>();
          return sb && sb->op == BinaryOp::Add ? "(" + t + ")" : t;
        };
        return fmt::format("{} * {}", wrap(b->a, x), wrap(b->b, y));
      }
      return fmt::format("{} + {}", x, y);
    }
    if (auto i = e->as<IntImm>()) return fmt::format("{}", i->value);
    return expr(e);
  }
};

// Whether a kernel computes with float16 or bfloat16 anywhere: then the source includes
// parir_half.h, which needs the CUDA toolkit's headers; other programs compile without them.
class FindsHalfTypes : public IRVisitor {
 public:
  bool found = false;

 protected:
  void check(ScalarType t) { found = found || is_half(t); }
#define X(n)                                \
  void visit_node(const n* node) override { \
    check(node->type.scalar);               \
    IRVisitor::visit_node(node);            \
  }
  PARIR_FOR_EACH_EXPR(X)
#undef X
};

// The external functions the kernels call: their headers, in order of first use, and their C
// names, which the program's own names must not hide.
class FindsExternFunctions : public IRVisitor {
 public:
  std::vector<std::string> headers;
  std::set<std::string> names;

 protected:
  void visit_node(const ExternCall* n) override {
    const std::string& h = n->fn->header;
    if (!h.empty() && std::find(headers.begin(), headers.end(), h) == headers.end())
      headers.push_back(h);
    names.insert(n->fn->name);
    IRVisitor::visit_node(n);
  }
};

// The kernels that persistent loops run (passes/fuse_host_loops.h).
std::set<std::string> kernels_of_persistent_loops(const LaunchPlan& plan) {
  std::set<std::string> out;
  for (const auto& s : plan.steps)
    if (!s.persistent.empty())
      for (const auto& launch : s.body) out.insert(launch.kernel);
  return out;
}

// The persistent kernel of host loop `loop`: one thread block cluster runs every iteration, its
// blocks taking each kernel's blocks in turn, with a cluster barrier after each kernel (it
// orders their global memory accesses: what a kernel wrote, the next one reads). Compiled for
// a GPU without clusters it is empty; the runtime runs the loop there instead.
void print_persistent_kernel(const SpecializedFunction& prog, const Lowered& lowered,
                             const PlanStep& loop, const CudaNames& names, std::string& out) {
  const PlanStep& fused = loop.persistent.front();
  std::vector<std::string> params;
  for (const auto& t : fused.args) {
    bool written = false;
    for (const auto& launch : loop.body)
      for (const auto& k : lowered.kernels)
        if (k.name == launch.kernel &&
            std::find(k.written.begin(), k.written.end(), t) != k.written.end())
          written = true;
    params.push_back(fmt::format("{}{}* {}", written ? "" : "const ",
                                 cuda_name(prog.tensors.at(t).elem), names(t)));
  }
  const std::string var = names(loop.var);
  out += fmt::format("\n// The host loop over {} as one kernel: a cluster of up to {} blocks runs "
                     "its {} launches per iteration.\n",
                     var, fused.cluster, loop.body.size());
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n",
                     fused.block, names(fused.kernel), fmt::join(params, ", "));
  out += "#if __CUDA_ARCH__ >= 900\n";
  out += "  const int64_t parir_rank = parir::cluster_rank(), parir_blocks = parir::cluster_size();\n";
  out += fmt::format("  for (int64_t {} = {}L; {} < {}L; {} += {}L) {{\n", var,
                     loop.lo->as<IntImm>()->value, var, loop.hi->as<IntImm>()->value, var,
                     loop.step->as<IntImm>()->value);
  for (const auto& launch : loop.body) {
    std::vector<std::string> args;
    for (const auto& a : launch.args) args.push_back(names(a));
    args.push_back("parir_b");
    out += fmt::format("    for (int64_t parir_b = parir_rank; parir_b < {}; parir_b += "
                       "parir_blocks) {}_block({});\n",
                       launch.grid, names(launch.kernel), fmt::join(args, ", "));
    out += "    parir::cluster_sync();\n";
  }
  out += "  }\n#endif\n}\n";
}

bool uses_half_types(const SpecializedFunction& prog, const Lowered& lowered) {
  FindsHalfTypes finder;
  for (const auto& k : lowered.kernels) finder.visit(k.root);
  for (const auto& [name, t] : prog.tensors)
    if (is_half(t.elem)) return true;
  return finder.found;
}

}  // namespace

std::string generate_cuda(const SpecializedFunction& prog, const Lowered& lowered) {
  std::string out;
  out += fmt::format("// CUDA C++ generated by parir-torch from {}() in {}\n", prog.name,
                     prog.source->filename);
  out += fmt::format("#include \"{}\"\n", kPreludeName);
  if (uses_half_types(prog, lowered)) out += fmt::format("#include \"{}\"\n", kHalfHeaderName);
  FindsExternFunctions externs;
  for (const auto& k : lowered.kernels) externs.visit(k.root);
  for (const auto& h : externs.headers) out += fmt::format("#include \"{}\"\n", h);
  const CudaNames names(externs.names);
  const std::set<std::string> fused = kernels_of_persistent_loops(lowered.plan);
  for (const auto& k : lowered.kernels) {
    out += "\n";
    KernelPrinter(prog, k, names, out).print(fused.count(k.name) > 0);
  }
  for (const auto& step : lowered.plan.steps)
    if (!step.persistent.empty()) print_persistent_kernel(prog, lowered, step, names, out);
  // The plan launches kernels by the names the source defines them with.
  LaunchPlan plan = lowered.plan;
  for_each_launch(plan.steps, [&](PlanStep& step) {
    step.kernel = names(step.kernel);
    if (!step.aligned_kernel.empty()) step.aligned_kernel = names(step.aligned_kernel);
  });
  for (auto& site : plan.bounds_sites) site.kernel = names(site.kernel);
  out += "\n" + print_plan(plan);
  return out;
}

}  // namespace parir
