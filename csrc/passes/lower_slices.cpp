#include "passes/lower_slices.h"

#include <functional>

#include "ir/arith.h"
#include "ir/visitor.h"
#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "passes/simplify.h"

namespace parir {
namespace {

// The integer locals that the function's own body assigns a constant once (`n, m = x.shape`,
// `half = m // 2`), which simplify later puts in their place: slice bounds may name them.
using ConstantLocals = std::map<std::string, int64_t>;

ConstantLocals constant_locals(const Body& body) {
  ConstantLocals locals;
  for (const Assign* a : single_assignments_at_top(body))
    if (auto c = integer_value(a->value, locals)) locals[a->target->as<Var>()->name] = *c;
  return locals;
}

// One slice dimension of one tensor access: element index = start + i * step, i < extent.
struct SliceDim {
  int64_t start, step, extent;
};

class FindSlices : public IRVisitor {
 public:
  bool found = false;

 protected:
  void visit_node(const Slice*) override { found = true; }
  void visit_node(const SliceReduce*) override { found = true; }
};

bool has_slices(const ExprPtr& e) {
  FindSlices f;
  f.visit(e);
  return f.found;
}

ExprPtr i64(int64_t v, Loc l) { return int_imm(v, l); }

class Lowering {
 public:
  Lowering(const SpecializedFunction& p, const CompileOptions& opts, FreshNames& names,
           std::set<std::string>& wide, const ConstantLocals& locals, const Assign& a,
           bool host_level)
      : prog_(p), opts_(opts), spec_(opts.parallelize), names_(names), wide_(wide),
        locals_(locals), a_(a), host_(host_level) {}

  Body run() {
    std::vector<SliceDim> target_dims;
    ExprPtr target = a_.target;
    if (auto l = target->as<Load>()) target = access(*l, target_dims);
    for (size_t d = 0; d < target_dims.size(); ++d) {
      outer_.push_back(names_.make("s"));
      outer_extents_.push_back(target_dims[d].extent);
    }
    target = bind(target, target_dims, outer_);
    labels_used_ = outer_.size();
    if (auto r = a_.value->as<SliceReduce>(); r && r->scan) return scan(target, *r);

    // `t[...] = parir.sum(...)` outside parallel code over several blocks, where combining in
    // t's type is exact: initialize t in one loop nest and accumulate into it atomically in
    // another (two kernels, where a local accumulator would need three and a temporary).
    // So does a reduction over several parallel dimensions, whose outer ones run on blocks
    // that a local could not combine.
    if (auto r = a_.value->as<SliceReduce>(); r && !r->index && host_ && target->as<Load>() &&
                                              (parallel_reduced_dims() > 1 ||
                                               (spans_blocks() && accumulates_exactly_in(*r, target))))
      return reduce_into_tensor(target, *r);

    Body inner;
    ExprPtr value = rhs(a_.value, inner);
    inner.push_back(std::make_shared<Assign>(target, value, a_.loc));
    // `t[0] = parir.sum(x[:])` outside parallel code: its reduction loops need a block to run
    // in. (One that spans several blocks is cut into kernels by split_multi_block_kernels.)
    if (host_ && outer_.empty() && inner.size() > 1)
      return Body{std::make_shared<GpuBlock>(std::move(inner), a_.loc)};
    return nest(outer_, outer_extents_, inner, 0, false);
  }

 private:
  const SpecializedFunction& prog_;
  const CompileOptions& opts_;
  const ParallelSpec& spec_;
  FreshNames& names_;
  std::set<std::string>& wide_;  // SpecializedFunction::wide_accumulators
  const ConstantLocals& locals_;
  const Assign& a_;
  bool host_;
  std::vector<std::string> outer_;
  std::vector<int64_t> outer_extents_;
  size_t labels_used_ = 0;

  [[noreturn]] void error(const std::string& msg) const { prog_.error(a_.loc, msg); }

  // Python's slice.indices(n) for constant bounds.
  SliceDim slice_dim(const Slice& s, int64_t n, const std::string& tensor) const {
    auto need = [&](const ExprPtr& e, const char* what) -> std::optional<int64_t> {
      if (!e) return std::nullopt;
      auto v = integer_value(e, locals_);
      if (!v)
        error(fmt::format("the {} of a slice of '{}' must be a constant (an expression of the "
                          "scalar arguments), not {}, since a slice's length is part of its "
                          "type; a loop's range may read a local the host computes "
                          "(`for i in range(w):` instead of `[:w]`)",
                          what, tensor, to_string(e)));
      return v;
    };
    int64_t step = need(s.step, "step").value_or(1);
    if (step == 0) error(fmt::format("a slice of '{}' has step zero", tensor));
    auto lo = need(s.lo, "start"), hi = need(s.hi, "stop");
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t min, int64_t max) {
      if (!v) return dflt;
      int64_t x = *v < 0 ? *v + n : *v;
      return std::max(min, std::min(max, x));
    };
    int64_t start, stop, extent;
    if (step > 0) {
      start = clamp(lo, 0, 0, n);
      stop = clamp(hi, n, 0, n);
      extent = stop > start ? (stop - start + step - 1) / step : 0;
    } else {
      start = clamp(lo, n - 1, -1, n - 1);
      stop = clamp(hi, -1, -1, n - 1);
      extent = start > stop ? (start - stop - step - 1) / -step : 0;
    }
    return SliceDim{start, step, extent};
  }

  // A Load whose slice indices are replaced by placeholders (null), with their dims.
  ExprPtr access(const Load& l, std::vector<SliceDim>& dims) const {
    const TensorType& t = prog_.tensors.at(l.tensor);
    std::vector<ExprPtr> idx;
    for (size_t d = 0; d < l.indices.size(); ++d) {
      if (auto s = l.indices[d]->as<Slice>()) {
        dims.push_back(slice_dim(*s, t.shape[d], l.tensor));
        idx.push_back(nullptr);
      } else {
        if (has_slices(l.indices[d]))
          error(fmt::format("an index of '{}' contains a slice; use slices only as indices",
                            l.tensor));
        idx.push_back(l.indices[d]);
      }
    }
    return std::make_shared<Load>(l.tensor, std::move(idx), l.type, l.loc);
  }

  // Fills the placeholders of a Load from `access` with start + var * step.
  static ExprPtr bind(const ExprPtr& e, const std::vector<SliceDim>& dims,
                      const std::vector<std::string>& vars) {
    auto l = e->as<Load>();
    if (!l) return e;
    std::vector<ExprPtr> idx;
    size_t k = 0;
    for (const auto& i : l->indices) {
      if (i) {
        idx.push_back(i);
        continue;
      }
      const SliceDim& d = dims[k];
      ExprPtr v = var(vars[k++], l->loc);
      if (d.step != 1) v = binary(BinaryOp::Mul, v, i64(d.step, l->loc), l->loc);
      if (d.start != 0) v = binary(BinaryOp::Add, i64(d.start, l->loc), v, l->loc);
      idx.push_back(v);
    }
    return std::make_shared<Load>(l->tensor, std::move(idx), l->type, l->loc);
  }

  // Rewrites the slices of an expression outside reductions onto the loop variables `vars`.
  class Bind : public IRMutator {
   public:
    Bind(Lowering& low, const std::vector<std::string>& vars, const std::vector<int64_t>& extents,
         Body* pre)
        : low_(low), vars_(vars), extents_(extents), pre_(pre) {}

   protected:
    Lowering& low_;
    const std::vector<std::string>& vars_;
    const std::vector<int64_t>& extents_;
    Body* pre_;  // where reductions put their statements; null inside a reduction

    ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
      std::vector<SliceDim> dims;
      ExprPtr placeholder = low_.access(*n, dims);
      if (dims.empty()) return IRMutator::mutate_node(n, self);
      if (vars_.empty())
        low_.error(fmt::format(
            "{} is a slice, and assigning it to a local would create a new tensor, which parir "
            "does not do. Pass a preallocated tensor `a` and write `a[:] = {}` instead",
            to_string(self), to_string(self)));
      if (dims.size() != vars_.size())
        low_.error(fmt::format("{} has {} slice dimension{} but the statement has {}; slices "
                               "are matched to the target's slice dimensions from the left",
                               to_string(self), dims.size(), dims.size() == 1 ? "" : "s",
                               vars_.size()));
      for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d].extent != extents_[d])
          low_.error(fmt::format("shape mismatch: slice dimension {} of {} has {} elements, "
                                 "but the statement's has {}",
                                 d, to_string(self), dims[d].extent, extents_[d]));
      return bind(placeholder, dims, vars_);
    }

    ExprPtr mutate_node(const SliceReduce* n, const ExprPtr&) override {
      if (n->scan)
        low_.error(fmt::format("parir.{} gives the running values of a slice: it can only be "
                               "the whole value assigned to a slice of a tensor, as in "
                               "out[i, :] = parir.{}(x[i, :])",
                               scan_name(n->op), scan_name(n->op)));
      if (!pre_) low_.error("a slice reduction cannot contain another slice reduction");
      return low_.reduction(*n, *pre_, vars_, extents_);
    }
  };

  ExprPtr rhs(const ExprPtr& value, Body& pre) {
    Bind b(*this, outer_, outer_extents_, &pre);
    return b.mutate(value);
  }

  // The slice dimensions of a reduction's argument: all accesses must agree.
  std::vector<int64_t> argument_extents(const ExprPtr& arg) const {
    std::vector<int64_t> extents;
    bool seen = false;
    class Collect : public IRVisitor {
     public:
      Collect(const Lowering& l, std::vector<int64_t>& e, bool& s) : low(l), ext(e), seen(s) {}
      const Lowering& low;
      std::vector<int64_t>& ext;
      bool& seen;

     protected:
      void visit_node(const Load* n) override {
        std::vector<SliceDim> dims;
        low.access(*n, dims);
        if (dims.empty()) return;
        std::vector<int64_t> e;
        for (const auto& d : dims) e.push_back(d.extent);
        if (seen && e != ext)
          low.error(fmt::format("shape mismatch in the reduced expression: {} has slice "
                                "extents [{}], other slices have [{}]",
                                to_string(std::make_shared<Load>(*n)), fmt::join(e, ", "),
                                fmt::join(ext, ", ")));
        ext = e;
        seen = true;
      }
    } c(*this, extents, seen);
    c.visit(arg);
    if (!seen) error("a slice reduction needs slices to reduce over, as in parir.sum(x[i, :])");
    return extents;
  }

  // Lowers a reduction inside the statement's loops into `pre`: a fresh accumulator, its initial
  // value, and reduction loops. Returns the accumulator.
  ExprPtr reduction(const SliceReduce& r, Body& pre, const std::vector<std::string>& outer,
                    const std::vector<int64_t>& outer_extents) {
    std::vector<int64_t> ext = argument_extents(r.arg);
    int k = static_cast<int>(ext.size());
    std::vector<bool> reduced(k, !r.axis.has_value());
    if (r.axis) {
      int axis = *r.axis < 0 ? *r.axis + k : *r.axis;
      if (axis < 0 || axis >= k)
        error(fmt::format("axis={} is out of range for the {} slice dimension{} of {}", *r.axis,
                          k, k == 1 ? "" : "s", to_string(r.arg)));
      reduced[axis] = true;
    }
    // Slice dimensions of the argument, in order: the reduced ones get new loops, the others
    // are the statement's loops, in order.
    std::vector<std::string> vars, red_vars;
    std::vector<int64_t> red_ext, kept_ext;
    size_t next_outer = 0;
    for (int d = 0; d < k; ++d) {
      if (reduced[d]) {
        red_vars.push_back(names_.make("r"));
        red_ext.push_back(ext[d]);
        vars.push_back(red_vars.back());
      } else {
        if (next_outer >= outer.size())
          error(fmt::format("{} keeps more slice dimensions than the statement's target has",
                            to_string(std::make_shared<SliceReduce>(r))));
        kept_ext.push_back(ext[d]);
        vars.push_back(outer[next_outer++]);
      }
    }
    if (r.axis && next_outer != outer.size())
      error(fmt::format("{} keeps {} slice dimension{}, but the statement's target has {}",
                        to_string(std::make_shared<SliceReduce>(r)), next_outer,
                        next_outer == 1 ? "" : "s", outer.size()));
    std::vector<int64_t> all_ext = ext;
    Bind b(*this, vars, all_ext, nullptr);
    ExprPtr body = b.mutate(r.arg);
    for (size_t d = 0; d < kept_ext.size(); ++d)
      if (kept_ext[d] != outer_extents[d])
        error(fmt::format("shape mismatch: {} keeps a dimension of {} elements where the "
                          "statement's has {}",
                          to_string(std::make_shared<SliceReduce>(r)), kept_ext[d],
                          outer_extents[d]));

    if (r.index) return index_reduction(r, body, red_vars, red_ext, pre);
    std::string acc_name = names_.make("red");
    ExprPtr acc = var(acc_name, r.loc);
    // Sums and products of integers and bools add up in int64, as torch.sum does.
    if (r.op == ReduceOp::Sum || r.op == ReduceOp::Prod) wide_.insert(acc_name);
    pre.push_back(std::make_shared<Assign>(acc, initial(r, body, red_vars, red_ext), r.loc));
    Body step{std::make_shared<Assign>(acc, combine(r.op, acc, body, r.loc), r.loc)};
    Body loops = nest(red_vars, red_ext, step, labels_used_, true);
    pre.insert(pre.end(), loops.begin(), loops.end());
    return var(acc_name, r.loc);
  }

  // `target = parir.cumsum(e, axis=k)` and the other scans: a loop nest over the target's slice
  // dimensions with the scanned one innermost, each loop labelled with its dimension's label.
  // Around the scanned loop a running local starts from the identity (the first element for
  // min and max) and each iteration combines its element and stores the running value (or
  // stores, then combines, for exclusive=True): the loop form of a scan, sequential in the
  // thread that runs it unless its label makes it a parallel scan. Sums and products
  // accumulate as torch's do (integers and bools in int64, float16 and bfloat16 in float32);
  // min and max in the element type. The store converts to the target's type.
  Body scan(const ExprPtr& target, const SliceReduce& r) {
    const std::string name = scan_name(r.op);
    if (outer_.empty())
      error(fmt::format("parir.{} gives the running values of a slice: assign them to a slice "
                        "of a tensor, as in out[i, :] = parir.{}(x[i, :])",
                        name, name));
    std::vector<int64_t> ext = argument_extents(r.arg);
    const int k = static_cast<int>(ext.size());
    if (k != static_cast<int>(outer_.size()))
      error(fmt::format("parir.{} of {} has {} slice dimension{}, but the target has {}", name,
                        to_string(r.arg), k, k == 1 ? "" : "s", outer_.size()));
    for (int d = 0; d < k; ++d)
      if (ext[d] != outer_extents_[d])
        error(fmt::format("shape mismatch: slice dimension {} of {} has {} elements, but the "
                          "target's has {}",
                          d, to_string(r.arg), ext[d], outer_extents_[d]));
    const int axis = r.axis ? (*r.axis < 0 ? *r.axis + k : *r.axis) : k - 1;
    if (axis < 0 || axis >= k)
      error(fmt::format("axis={} is out of range for the {} slice dimension{} of {}", *r.axis, k,
                        k == 1 ? "" : "s", to_string(r.arg)));
    for (int64_t e : ext)
      if (e == 0) return Body{};  // no element to scan or store
    const Loc l = r.loc;
    Bind b(*this, outer_, outer_extents_, nullptr);
    ExprPtr elem = b.mutate(r.arg);
    const std::string run_name = names_.make("run");
    ExprPtr run = var(run_name, l);
    ExprPtr init;
    if (r.op == ReduceOp::Sum || r.op == ReduceOp::Prod) {
      wide_.insert(run_name);
      init = i64(r.op == ReduceOp::Sum ? 0 : 1, l);
      if (loads_half(r.arg))
        init = std::make_shared<Cast>(init, Type{ScalarType::F32, false}, l);
    } else {
      SliceReduce first = r;
      first.scan = false;
      init = initial(first, elem, {outer_[axis]}, {ext[axis]});
    }
    StmtPtr step = std::make_shared<Assign>(run, combine(r.op, run, elem, l), l);
    StmtPtr store = std::make_shared<Assign>(target, run, a_.loc);
    Body body = r.exclusive ? Body{store, step} : Body{step, store};
    auto label = [&](int d) {
      return d < static_cast<int>(a_.labels.size()) ? std::vector<std::string>{a_.labels[d]}
                                                     : std::vector<std::string>{};
    };
    // "scan", for apply_parallel_spec: the loop scans when its label is in the specification.
    Body nest{std::make_shared<Assign>(run, init, l),
              std::make_shared<For>(outer_[axis], i64(0, l), i64(ext[axis], l), i64(1, l),
                                    std::move(body), a_.loc, label(axis),
                                    LoopPar{0, false, 0, true})};
    bool parallel_outside = false;
    for (int d = k; d-- > 0;) {
      if (d == axis) continue;
      for (const auto& lb : label(d)) parallel_outside = parallel_outside || spec_.count(lb);
      nest = Body{std::make_shared<For>(outer_[d], i64(0, l), i64(ext[d], l), i64(1, l),
                                        std::move(nest), a_.loc, label(d))};
    }
    // Outside parallel code the running local needs a GPU thread (or block) to live in.
    if (host_ && !parallel_outside) return Body{std::make_shared<GpuBlock>(std::move(nest), a_.loc)};
    return nest;
  }

  // Whether an expression reads a float16 or bfloat16 tensor.
  bool loads_half(const ExprPtr& e) const {
    class Finds : public IRVisitor {
     public:
      explicit Finds(const SpecializedFunction& p) : prog(p) {}
      const SpecializedFunction& prog;
      bool found = false;

     protected:
      void visit_node(const Load* n) override {
        found = found || is_half(prog.tensors.at(n->tensor).elem);
        IRVisitor::visit_node(n);
      }
    } f(prog_);
    f.visit(e);
    return f.found;
  }

  // parir.argmax / parir.argmin: one pass keeping the extreme value and its index. A later
  // element replaces the kept one only when strictly greater (smaller), so ties keep the lowest
  // index; a NaN counts as the extreme, and the first NaN is kept, as torch does. The reduced
  // loops take the statement's labels as a sum's do: one that the specification makes
  // parallel is a reduce loop, which detect_reductions recognizes by this update and turns
  // into a parallel reduction of (value, index) pairs.
  ExprPtr index_reduction(const SliceReduce& r, const ExprPtr& body,
                          const std::vector<std::string>& rv, const std::vector<int64_t>& ext,
                          Body& pre) {
    const char* name = r.op == ReduceOp::Max ? "argmax" : "argmin";
    if (parallel_reduced_dims() > 1)
      error(fmt::format("parir.{} can run in parallel over one of its reduced slice dimensions, "
                        "but the specification makes {} of them parallel; leave all labels but "
                        "one out of it",
                        name, parallel_reduced_dims()));
    // Blocks could only combine their pairs through a temporary and another kernel, which
    // index reductions do not have (yet); a cluster combines them in shared memory.
    for (size_t i = labels_used_; i < a_.labels.size(); ++i) {
      auto it = spec_.find(a_.labels[i]);
      if (it == spec_.end()) continue;
      BlockShape shape = block_shape(it->second.threads, it->second.threads_per_block());
      if (shape.blocks > 1 && !runs_as_cluster(opts_, shape.blocks))
        error(fmt::format("parir.{} over label '{}' runs on {} threads in {} blocks of {}, which "
                          "cannot combine their (value, index) pairs; give it one block "
                          "(parir.threads(n) with n <= 1024, and no .tpb below n), or let the "
                          "blocks form one cluster (use_cuda_thread_block_clusters)",
                          name, a_.labels[i], it->second.threads, shape.blocks, shape.tpb));
    }
    for (int64_t e : ext)
      if (e == 0) error(fmt::format("parir.{} of an empty slice", name));
    Loc l = r.loc;
    ExprPtr best = var(names_.make("best"), l), at = var(names_.make("at"), l),
            v = var(names_.make("v"), l);
    SliceReduce first = r;
    first.index = false;
    pre.push_back(std::make_shared<Assign>(best, initial(first, body, rv, ext), l));
    pre.push_back(std::make_shared<Assign>(at, int_imm(0, l, Type{ScalarType::I64, false}), l));
    // The index flattened over the reduced dimensions, row-major, as torch.argmax without dim:
    // it grows with the loops' iterations, which a parallel combination relies on.
    ExprPtr flat;
    for (size_t d = 0; d < rv.size(); ++d)
      flat = flat ? binary(BinaryOp::Add, binary(BinaryOp::Mul, flat, i64(ext[d], l), l),
                           var(rv[d], l), l)
                  : var(rv[d], l);
    ExprPtr better = binary(r.op == ReduceOp::Max ? BinaryOp::Gt : BinaryOp::Lt, v, best, l);
    ExprPtr nan = binary(BinaryOp::And, binary(BinaryOp::Ne, v, v, l),
                         binary(BinaryOp::Eq, best, best, l), l);
    Body update{std::make_shared<Assign>(best, v, l), std::make_shared<Assign>(at, flat, l)};
    Body step{std::make_shared<Assign>(v, body, l),
              std::make_shared<If>(binary(BinaryOp::Or, better, nan, l), std::move(update),
                                   Body{}, l)};
    Body loops = nest(rv, ext, std::move(step), labels_used_, true);
    pre.insert(pre.end(), loops.begin(), loops.end());
    return at;
  }

  // The identity of sum and prod; min and max start from the first element.
  ExprPtr initial(const SliceReduce& r, const ExprPtr& body, const std::vector<std::string>& rv,
                  const std::vector<int64_t>& ext) const {
    if (r.op == ReduceOp::Sum) return i64(0, r.loc);
    if (r.op == ReduceOp::Prod) return i64(1, r.loc);
    for (int64_t e : ext)
      if (e == 0) error(fmt::format("parir.{} of an empty slice", python_name(r.op)));
    class Zero : public IRMutator {
     public:
      explicit Zero(const std::vector<std::string>& v) : vars(v) {}
      const std::vector<std::string>& vars;

     protected:
      ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
        for (const auto& v : vars)
          if (v == n->name) return int_imm(0, n->loc);
        return self;
      }
    } zero(rv);
    return zero.mutate(body);
  }

  static ExprPtr combine(ReduceOp op, const ExprPtr& acc, const ExprPtr& e, Loc l) {
    switch (op) {
      case ReduceOp::Sum:
        return binary(BinaryOp::Add, acc, e, l);
      case ReduceOp::Prod:
        return binary(BinaryOp::Mul, acc, e, l);
      case ReduceOp::Min:
        return std::make_shared<Call>(Builtin::Min, std::vector<ExprPtr>{acc, e}, Type{}, l);
      case ReduceOp::Max:
        return std::make_shared<Call>(Builtin::Max, std::vector<ExprPtr>{acc, e}, Type{}, l);
    }
    return e;
  }

  // Loops over `vars` (range(0, extent) each) around `body`, outermost first, labelled with the
  // statement's labels from `first_label` on; `reduce` marks them as reduction loops.
  Body nest(const std::vector<std::string>& vars, const std::vector<int64_t>& extents, Body body,
            size_t first_label, bool reduce) const {
    for (size_t d = vars.size(); d-- > 0;) {
      std::vector<std::string> labels;
      if (first_label + d < a_.labels.size()) labels.push_back(a_.labels[first_label + d]);
      std::optional<LoopPar> par;
      if (reduce) par = LoopPar{0, true, 0};  // "reduce", for apply_parallel_spec
      body = Body{std::make_shared<For>(vars[d], i64(0, a_.loc), i64(extents[d], a_.loc),
                                        i64(1, a_.loc), std::move(body), a_.loc, labels, par)};
    }
    return body;
  }

  // The labels after the target's dimensions (those of the reduced ones) that the
  // specification makes parallel.
  size_t parallel_reduced_dims() const {
    size_t n = 0;
    for (size_t l = labels_used_; l < a_.labels.size(); ++l) n += spec_.count(a_.labels[l]);
    return n;
  }

  // Whether the statement's innermost reduction loop, by its label's specification, needs
  // several thread blocks (or a cluster, which combines into locals as well).
  bool spans_blocks() const {
    if (a_.labels.size() <= labels_used_) return false;  // the labels after the target's dims
    auto it = spec_.find(a_.labels.back());
    if (it == spec_.end()) return false;
    int64_t blocks = block_shape(it->second.threads, it->second.threads_per_block()).blocks;
    return blocks > 1 && !runs_as_cluster(opts_, blocks);
  }

  // Whether the values reduced have the target's type and accumulate in it (so no conversion
  // happens between the steps): loads of tensors of that dtype combined by + - * and
  // literals that do not change the type; sums and products of types that torch widens
  // excluded.
  bool accumulates_exactly_in(const SliceReduce& r, const ExprPtr& target) const {
    ScalarType t = prog_.tensors.at(target->as<Load>()->tensor).elem;
    bool widened = is_bool(t) || is_half(t) || (is_int(t) && size_in_bytes(t) < 4);
    if (widened && (r.op == ReduceOp::Sum || r.op == ReduceOp::Prod)) return false;
    std::function<bool(const ExprPtr&)> same = [&](const ExprPtr& e) {
      if (auto l = e->as<Load>()) return prog_.tensors.at(l->tensor).elem == t;
      if (e->as<IntImm>()) return !is_bool(t);
      if (e->as<FloatImm>()) return is_float(t);
      if (auto u = e->as<Unary>()) return u->op == UnaryOp::Neg && same(u->a);
      if (auto b = e->as<Binary>())
        return (b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul) &&
               same(b->a) && same(b->b);
      return false;
    };
    return same(r.arg);
  }

  Body reduce_into_tensor(const ExprPtr& target, const SliceReduce& r) {
    Body pre;
    ExprPtr acc = reduction(r, pre, outer_, outer_extents_);
    // pre = [acc = init, reduction loops accumulating into acc]: retarget both to the tensor.
    std::string acc_name = acc->as<Var>()->name;
    class Retarget : public IRMutator {
     public:
      Retarget(std::string n, ExprPtr t) : name(std::move(n)), target(std::move(t)) {}
      std::string name;
      ExprPtr target;

     protected:
      ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
        return n->name == name ? target : self;
      }
    } retarget(acc_name, target);
    Body init{retarget.mutate(pre[0])};
    Body accumulate{retarget.mutate(pre[1])};
    // The two nests may share loop variable names: each loop binds its own.
    Body out = outer_.empty() ? Body{std::make_shared<GpuBlock>(std::move(init), a_.loc)}
                              : nest(outer_, outer_extents_, std::move(init), 0, false);
    Body acc_nest = nest(outer_, outer_extents_, std::move(accumulate), 0, false);
    out.insert(out.end(), acc_nest.begin(), acc_nest.end());
    return out;
  }
};

class LowerSlices : public IRMutator {
 public:
  LowerSlices(SpecializedFunction& p, const CompileOptions& opts)
      : prog_(p), opts_(opts), spec_(opts.parallelize), names_(p), wide_(p.wide_accumulators),
        locals_(constant_locals(p.body)) {}

  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      auto a = s->as<Assign>();
      if (a && (has_slices(a->target) || has_slices(a->value))) {
        Body lowered =
            Lowering(prog_, opts_, names_, wide_, locals_, *a, parallel_depth_ == 0).run();
        out.insert(out.end(), lowered.begin(), lowered.end());
        continue;
      }
      if (StmtPtr m = IRMutator::mutate(s)) out.push_back(m);
    }
    return out;
  }
  using IRMutator::mutate;

 protected:
  const SpecializedFunction& prog_;
  const CompileOptions& opts_;
  const ParallelSpec& spec_;
  FreshNames names_;
  std::set<std::string>& wide_;  // the accumulators infer_types widens
  const ConstantLocals locals_;
  int parallel_depth_ = 0;

  bool parallel(const StmtNode& s) const {
    for (const auto& l : s.labels)
      if (spec_.count(l)) return true;
    return false;
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    bool par = parallel(*n);
    parallel_depth_ += par;
    StmtPtr out = IRMutator::mutate_node(n, self);
    parallel_depth_ -= par;
    return out;
  }
  StmtPtr mutate_node(const GpuBlock* n, const StmtPtr& self) override {
    ++parallel_depth_;
    StmtPtr out = IRMutator::mutate_node(n, self);
    --parallel_depth_;
    return out;
  }
};

// Slices left anywhere but in assignments.
class RejectSlices : public IRVisitor {
 public:
  explicit RejectSlices(const SpecializedFunction& p) : prog_(p) {}

 protected:
  const SpecializedFunction& prog_;
  void visit_node(const Slice* n) override {
    prog_.error(n->loc, "slices can only be used in assignments, as in y[:] = x[:] * 2");
  }
  void visit_node(const SliceReduce* n) override {
    prog_.error(n->loc, "slice reductions can only be used in assignments, as in "
                        "s = parir.sum(x[i, :])");
  }
};

}  // namespace

void lower_slices(SpecializedFunction& prog, const CompileOptions& opts) {
  prog.body = LowerSlices(prog, opts).mutate(prog.body);
  RejectSlices(prog).visit(prog.body);
}

}  // namespace parir
