#include "passes/tile_matrix_products.h"

#include <algorithm>
#include <map>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

constexpr int64_t kSide = 16;                // threads along each side of a tile
constexpr int64_t kThreads = kSide * kSide;  // per block
// Elements of a load's chunk in shared memory (T x TK): 4 KB of float32, each thread copying
// four per chunk.
constexpr int64_t kChunkElements = 1024;
constexpr int64_t kCopiesPerThread = kChunkElements / kThreads;
// A shared memory load moves at most 16 bytes: a thread's consecutive columns are grouped so
// that each group is one such load.
constexpr int64_t kWidestLoadBytes = 16;
constexpr size_t kMaxOperands = 4;  // loads in the k loop's body, each a shared array
// The tile shrinks until the product has this many blocks with work, about one per SM (132 on
// an H100): a thread with 8 x 8 pairs does twice the arithmetic per shared memory load that one
// with 4 x 4 does, which pays for a wave of blocks that is not full.
constexpr int64_t kMinBlocks = 128;
constexpr int64_t kMinExtent = 32;  // rows and columns at least, else the kernel is left alone
constexpr int64_t kMinDepth = 8;    // k iterations at least, when known
constexpr int64_t kMaxTilesCounted = int64_t{1} << 20;
constexpr int64_t kBlocksPerSm = 2;

const Type kIndex{ScalarType::I64, false};
const Type kBool{ScalarType::Bool, false};

ExprPtr imm(int64_t v) { return int_imm(v, {}, kIndex); }
ExprPtr arith(BinaryOp op, ExprPtr a, ExprPtr b) {
  return binary(op, std::move(a), std::move(b), {}, kIndex);
}
ExprPtr add(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Add, std::move(a), std::move(b)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return arith(BinaryOp::Mul, std::move(a), std::move(b)); }
ExprPtr test(BinaryOp op, ExprPtr a, ExprPtr b) {
  return binary(op, std::move(a), std::move(b), {}, kBool);
}
ExprPtr both(ExprPtr a, ExprPtr b) { return test(BinaryOp::And, std::move(a), std::move(b)); }
ExprPtr call(Builtin f, ExprPtr a, ExprPtr b) {
  return std::make_shared<Call>(f, std::vector<ExprPtr>{std::move(a), std::move(b)}, kIndex,
                                Loc{});
}
StmtPtr assign(ExprPtr target, ExprPtr value) {
  return std::make_shared<Assign>(std::move(target), std::move(value), Loc{});
}
// 0 of a scalar type (false for bool): what the copies and accumulators of pairs and elements
// outside the ranges hold.
ExprPtr zero_of(ScalarType t) {
  const Type type{t, false};
  if (t == ScalarType::Bool) return bool_imm(false);
  return is_float(t) ? float_imm(0, {}, type) : int_imm(0, {}, type);
}
int log2_of(int64_t power_of_two) {
  int n = 0;
  while ((int64_t{1} << n) < power_of_two) ++n;
  return n;
}

// a * v + b, for a bound of the j loop as a function of i.
struct Affine {
  int64_t a = 0, b = 0;
  int64_t at(int64_t v) const { return a * v + b; }
  ExprPtr at(const ExprPtr& v) const {
    ExprPtr scaled = a == 0 ? nullptr : a == 1 ? v : mul(imm(a), v);
    if (!scaled) return imm(b);
    return b == 0 ? scaled : add(scaled, imm(b));
  }
};

std::optional<Affine> affine(const ExprPtr& e, const std::string& v) {
  if (auto c = e->as<IntImm>()) return Affine{0, c->value};
  if (auto x = e->as<Var>()) return x->name == v ? std::optional<Affine>(Affine{1, 0}) : std::nullopt;
  auto b = e->as<Binary>();
  if (!b || !is_int(b->type.scalar)) return std::nullopt;
  std::optional<Affine> l = affine(b->a, v), r = affine(b->b, v);
  if (!l || !r) return std::nullopt;
  switch (b->op) {
    case BinaryOp::Add:
      return Affine{l->a + r->a, l->b + r->b};
    case BinaryOp::Sub:
      return Affine{l->a - r->a, l->b - r->b};
    case BinaryOp::Mul:
      if (l->a == 0) return Affine{l->b * r->a, l->b * r->b};
      if (r->a == 0) return Affine{r->b * l->a, r->b * l->b};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// A load in the k loop's body: of row i (A[i, k]) or of column j (B[k, j]).
struct Operand {
  const FlatLoad* load = nullptr;
  bool row = false;
  // Consecutive k are consecutive elements: the copy into shared memory walks k fastest.
  bool k_contiguous = false;
  std::string shared;  // its shared array
};

// What the kernel is, when it is a matrix product (see the header).
struct Product {
  const For* rows = nullptr;   // i
  const For* cols = nullptr;   // j
  const For* inner = nullptr;  // k
  std::string acc;             // t
  ExprPtr init, update;        // t = init; per k: t = update
  Body epilogue;
  int64_t i_lo = 0, i_hi = 0;
  Affine j_lo, j_hi;
  // The k range as a function of i (trmm's range(i + 1, M)), when it depends on i; then the
  // columns do not (so that every element a tile copies is one the kernel as written loads).
  std::optional<Affine> k_lo, k_hi;
  int64_t j_min = 0, j_max = 0;  // the columns of every row
  std::vector<Operand> operands;
  std::map<const FlatLoad*, size_t> operand_of;
};

// Checks the k loop's body and the statements after it, and collects the operands.
class BodyScan : public AssignmentsOnly {
 public:
  BodyScan(Product& p, const std::set<std::string>& locals) : p_(p), locals_(locals) {
    for (const auto& l : locals_)
      if (l != p_.rows->var && l != p_.cols->var && l != p_.inner->var) not_loop_vars_.insert(l);
  }
  bool in_update = false;
  std::set<std::string> epilogue_locals;  // assigned by the statements after the k loop

 protected:
  void visit_node(const FlatLoad* n) override {
    if (!n->checks.empty()) ok = false;
    if (!in_update) return IRVisitor::visit_node(n);
    const bool on_i = mentions(n->offset, {p_.rows->var}), on_j = mentions(n->offset, {p_.cols->var});
    if (on_i == on_j || contains(n->offset, ExprKind::FlatLoad) ||
        mentions(n->offset, not_loop_vars_)) {
      ok = false;
      return;
    }
    for (size_t o = 0; o < p_.operands.size(); ++o) {
      const FlatLoad* other = p_.operands[o].load;
      if (other->tensor == n->tensor && constant_difference(other->offset, n->offset) == 0) {
        p_.operand_of[n] = o;
        return;
      }
    }
    std::optional<int64_t> along_k = coefficient(n->offset, p_.inner->var);
    p_.operand_of[n] = p_.operands.size();
    p_.operands.push_back({n, on_i, along_k == 1, ""});
  }
  void visit_node(const Var* n) override {
    if (in_update && (n->name == p_.rows->var || n->name == p_.cols->var)) ok = false;
    if (in_update && locals_.count(n->name) && n->name != p_.acc && n->name != p_.inner->var)
      ok = false;
    if (!in_update && locals_.count(n->name) && n->name != p_.acc && n->name != p_.rows->var &&
        n->name != p_.cols->var && !epilogue_locals.count(n->name))
      ok = false;  // a value from before the statement: replicating it would be wrong
  }
  void visit_node(const Assign* n) override {
    IRVisitor::visit(n->value);
    if (auto t = n->target->as<FlatLoad>()) {
      if (!t->checks.empty()) ok = false;
      IRVisitor::visit(t->offset);
    } else if (auto v = n->target->as<Var>()) {
      if (v->name == p_.acc || v->name == p_.rows->var || v->name == p_.cols->var) ok = false;
      epilogue_locals.insert(v->name);
    }
  }

 private:
  Product& p_;
  const std::set<std::string>& locals_;
  std::set<std::string> not_loop_vars_;  // the locals an operand's offset must not read
};

// The tensors that the loads of an expression read.
class LoadedTensors : public IRVisitor {
 public:
  std::set<std::string> tensors;

 protected:
  void visit_node(const FlatLoad* n) override {
    tensors.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
};

// The update with the locals that the k loop's body assigns before it replaced by their values:
// `a = A[i, k]; b = B[k, j]; t += a * b`, as Parboil's sgemm and many CUDA ports name their
// loads, is `t += A[i, k] * B[k, j]`. Null when such a local is the accumulator or the loop's
// variable, or is read anywhere outside the body (the tiles do not assign it).
ExprPtr named_values_in_place(const Product& p, const Kernel& k) {
  const Body& body = p.inner->body;
  auto update = body.back()->as<Assign>();
  ExprPtr value = update->value;
  const std::set<std::string> after = names_in(Body(p.cols->body.begin() + 2, p.cols->body.end()));
  for (size_t s = body.size() - 1; s-- > 0;) {  // the last assignment first
    auto a = body[s]->as<Assign>();
    auto v = a ? a->target->as<Var>() : nullptr;
    if (!v || v->name == p.acc || v->name == p.inner->var || !k.locals.count(v->name) ||
        after.count(v->name) || mentions(p.init, {v->name}) || mentions(p.inner->lo, {v->name}) ||
        mentions(p.inner->hi, {v->name}))
      return nullptr;
    value = Substitute(v->name, a->value).mutate(value);
  }
  return value;
}

std::optional<Product> match_product(const Kernel& k) {
  // How the levels map onto blocks (several per row, or rows side by side) does not matter:
  // the tiles replace it.
  if (k.levels.size() != 2 || k.levels[0].threads || !k.levels[1].threads || k.cluster != 1 ||
      k.bounds_checked || !k.atomic_reductions.empty() || !k.shared_arrays.empty())
    return std::nullopt;
  Product p;
  p.rows = k.root->as<For>();
  if (!p.rows || !p.rows->par || p.rows->reduction || p.rows->par->cooperative ||
      p.rows->body.size() != 1)
    return std::nullopt;
  p.cols = p.rows->body[0]->as<For>();
  if (!p.cols || !p.cols->par || p.cols->reduction || p.cols->par->cooperative ||
      p.cols->body.size() < 2)
    return std::nullopt;
  auto i_lo = p.rows->lo->as<IntImm>(), i_hi = p.rows->hi->as<IntImm>();
  auto i_step = p.rows->step->as<IntImm>(), j_step = p.cols->step->as<IntImm>();
  if (!i_lo || !i_hi || !i_step || i_step->value != 1 || !j_step || j_step->value != 1)
    return std::nullopt;
  p.i_lo = i_lo->value;
  p.i_hi = i_hi->value;
  std::optional<Affine> j_lo = affine(p.cols->lo, p.rows->var), j_hi = affine(p.cols->hi, p.rows->var);
  if (!j_lo || !j_hi || p.i_hi - p.i_lo < kMinExtent) return std::nullopt;
  p.j_lo = *j_lo;
  p.j_hi = *j_hi;
  // Every row has columns, and the columns of neighbouring rows overlap or touch: then the
  // columns of all rows are [j_min, j_max), each of them loaded by the kernel as written.
  const int64_t first = p.i_lo, last = p.i_hi - 1;
  for (int64_t i : {first, last}) {
    if (p.j_lo.at(i) >= p.j_hi.at(i)) return std::nullopt;
    if (i < last && (p.j_lo.at(i + 1) > p.j_hi.at(i) || p.j_lo.at(i) > p.j_hi.at(i + 1)))
      return std::nullopt;
  }
  p.j_min = std::min(p.j_lo.at(first), p.j_lo.at(last));
  p.j_max = std::max(p.j_hi.at(first), p.j_hi.at(last));
  if (p.j_max - p.j_min < kMinExtent) return std::nullopt;

  // t = init; for k ...: t = update; epilogue
  auto init = p.cols->body[0]->as<Assign>();
  p.inner = p.cols->body[1]->as<For>();
  if (!init || !init->target->as<Var>() || !p.inner || p.inner->par || p.inner->unroll ||
      p.inner->body.empty())
    return std::nullopt;
  p.acc = init->target->as<Var>()->name;
  if (!k.locals.count(p.acc)) return std::nullopt;
  p.init = init->value;
  auto step = p.inner->step->as<IntImm>();
  auto update = p.inner->body.back()->as<Assign>();
  if (!step || step->value != 1 || !update || !update->target->as<Var>() ||
      update->target->as<Var>()->name != p.acc)
    return std::nullopt;
  p.update = named_values_in_place(p, k);
  if (!p.update) return std::nullopt;
  std::optional<int64_t> depth = constant_trip_count(*p.inner);
  if (depth && *depth < kMinDepth) return std::nullopt;

  std::set<std::string> locals;
  for (const auto& [name, type] : k.locals) locals.insert(name);
  locals.insert(p.rows->var);
  locals.insert(p.cols->var);
  locals.insert(p.inner->var);
  // The initial value reads nothing of other pairs or iterations (it may load elements of i
  // and j, as trmm's B[i, j]).
  std::set<std::string> not_i_j = locals;
  not_i_j.erase(p.rows->var);
  not_i_j.erase(p.cols->var);
  if (mentions(p.init, not_i_j) || contains(p.init, ExprKind::ExternCall)) return std::nullopt;
  // The k range is that of every pair, or a function of i.
  if (contains(p.inner->lo, ExprKind::FlatLoad) || contains(p.inner->hi, ExprKind::FlatLoad) ||
      mentions(p.inner->lo, not_i_j) || mentions(p.inner->hi, not_i_j) ||
      mentions(p.inner->lo, {p.cols->var}) || mentions(p.inner->hi, {p.cols->var}))
    return std::nullopt;
  if (mentions(p.inner->lo, {p.rows->var}) || mentions(p.inner->hi, {p.rows->var})) {
    p.k_lo = affine(p.inner->lo, p.rows->var);
    p.k_hi = affine(p.inner->hi, p.rows->var);
    if (!p.k_lo || !p.k_hi || p.j_lo.a != 0 || p.j_hi.a != 0) return std::nullopt;
  }
  BodyScan scan(p, locals);
  scan.visit(p.init);
  scan.in_update = true;
  scan.visit(p.update);
  scan.in_update = false;
  p.epilogue.assign(p.cols->body.begin() + 2, p.cols->body.end());
  scan.visit(p.epilogue);
  if (!scan.ok || p.operands.size() > kMaxOperands) return std::nullopt;
  bool rows = false, cols = false;
  for (const auto& o : p.operands) (o.row ? rows : cols) = true;
  if (!rows || !cols) return std::nullopt;  // nothing loaded is shared by a tile's rows or columns
  // The k loop reads nothing that the statements after it write.
  LoadedTensors loaded;
  loaded.visit(p.update);
  for (const auto& w : stored_tensors(p.epilogue))
    if (loaded.tensors.count(w)) return std::nullopt;
  return p;
}

// The columns of rows [i0, i_last] that may fall in the tile's columns: the least of the
// first columns and the greatest of the ends, which the affine bounds take at the ends.
bool tile_has_work(const Product& p, int64_t i0, int64_t tile, int64_t j0) {
  const int64_t i_last = std::min(i0 + tile, p.i_hi) - 1;
  const int64_t lo = std::min(p.j_lo.at(i0), p.j_lo.at(i_last));
  const int64_t hi = std::max(p.j_hi.at(i0), p.j_hi.at(i_last));
  return lo < j0 + tile && hi > j0;
}

// Pairs per thread along each side: the most that still leaves the GPU kMinBlocks tiles with
// work (8 bytes per element: four at most, for registers).
int64_t choose_register_tile(const Product& p, int64_t element_bytes) {
  const int64_t most = element_bytes > 4 ? 4 : 8;
  for (int64_t r = most; r > 2; r /= 2) {
    const int64_t tile = kSide * r;
    const int64_t row_tiles = (p.i_hi - p.i_lo + tile - 1) / tile;
    const int64_t col_tiles = (p.j_max - p.j_min + tile - 1) / tile;
    if (row_tiles * col_tiles > kMaxTilesCounted) return r;
    int64_t busy = 0;
    for (int64_t bi = 0; bi < row_tiles; ++bi)
      for (int64_t bj = 0; bj < col_tiles; ++bj)
        busy += tile_has_work(p, p.i_lo + bi * tile, tile, p.j_min + bj * tile);
    if (busy >= kMinBlocks) return r;
  }
  return 2;
}

// Writes the tiled kernel.
class TileBuilder {
 public:
  TileBuilder(SpecializedFunction& prog, FreshNames& names, Kernel& k, Product& p, int64_t r,
              int64_t element_bytes)
      : prog_(prog), names_(names), k_(k), p_(p), r_(r), tile_(kSide * r),
        depth_(kChunkElements / tile_),
        group_(std::min(r, std::max<int64_t>(1, kWidestLoadBytes / element_bytes))) {}

  void build() {
    const Type elem_of_acc = k_.locals.at(p_.acc);
    const Loc loc = p_.rows->loc;
    for (auto& o : p_.operands) {
      o.shared = names_.make(o.load->tensor + (o.row ? "_rows" : "_cols"));
      k_.shared_arrays.push_back({o.shared, o.load->type.scalar, kChunkElements});
    }
    for (int64_t a = 0; a < r_; ++a)
      for (int64_t b = 0; b < r_; ++b) accs_.push_back(local(p_.acc + "_tile", elem_of_acc));
    const int64_t row_tiles = (p_.i_hi - p_.i_lo + tile_ - 1) / tile_;
    const int64_t col_tiles = (p_.j_max - p_.j_min + tile_ - 1) / tile_;
    const int64_t blocks = row_tiles * col_tiles;

    thread_ = var(names_.make("thread"), {}, loop_type());
    const std::string block = names_.make("tile");
    const ExprPtr block_var = var(block, {}, loop_type());
    i0_ = local("tile_row", kIndex);
    j0_ = local("tile_col", kIndex);
    for (const auto* v : {&p_.rows->var, &p_.cols->var, &p_.inner->var})
      add_kernel_local(prog_, k_, *v, loop_type());
    Body work;
    const ExprPtr i_last =
        add(call(Builtin::Min, add(i0_, imm(tile_)), imm(p_.i_hi)), imm(-1));
    k_first_ = p_.inner->lo;
    k_end_ = p_.inner->hi;
    if (p_.k_lo) {
      // The union of the k ranges of the tile's rows: affine bounds take their extremes at
      // the first and the last row.
      k_first_ = local(p_.inner->var + "_first", kIndex);
      k_end_ = local(p_.inner->var + "_end", kIndex);
      work.push_back(assign(k_first_, call(Builtin::Min, p_.k_lo->at(i0_), p_.k_lo->at(i_last))));
      work.push_back(assign(k_end_, call(Builtin::Max, p_.k_hi->at(i0_), p_.k_hi->at(i_last))));
    }
    for (const auto& o : p_.operands)
      for (int64_t e = 0; e < kCopiesPerThread; ++e)
        next_.push_back(local(o.load->tensor + "_next", Type{o.load->type.scalar, false}));
    Body first = init_accumulators();
    for (auto& s : fetch_chunk(k_first_)) first.push_back(std::move(s));
    work.push_back(thread_loop(std::move(first)));
    work.push_back(chunk_loop());
    work.push_back(thread_loop(finish_pairs()));
    const ExprPtr has_work =
        both(test(BinaryOp::Lt, call(Builtin::Min, p_.j_lo.at(i0_), p_.j_lo.at(i_last)),
                  add(j0_, imm(tile_))),
             test(BinaryOp::Gt, call(Builtin::Max, p_.j_hi.at(i0_), p_.j_hi.at(i_last)), j0_));
    Body body{
        assign(i0_, add(imm(p_.i_lo), mul(arith(BinaryOp::FloorDiv, block_var, imm(col_tiles)),
                                          imm(tile_)))),
        assign(j0_, add(imm(p_.j_min),
                        mul(arith(BinaryOp::Mod, block_var, imm(col_tiles)), imm(tile_)))),
        std::make_shared<If>(has_work, std::move(work), Body{}, Loc{})};
    LoopPar over_blocks;
    over_blocks.threads = blocks;
    over_blocks.tpb = kThreads;
    k_.root = std::make_shared<For>(block, imm(0), imm(blocks), imm(1), std::move(body), loc,
                                    p_.rows->labels, over_blocks);
    k_.levels = {ParLevel{blocks, false}, ParLevel{kThreads, true}};
    k_.tpb = kThreads;
    // Two blocks per multiprocessor, so that one block's barriers and loads overlap the other's
    // arithmetic: at most 128 registers a thread (R = 8 fits without spilling).
    k_.min_blocks_per_sm = kBlocksPerSm;
    k_.inner_blocks = k_.lanes = k_.warps = 1;
  }

 private:
  SpecializedFunction& prog_;
  FreshNames& names_;
  Kernel& k_;
  Product& p_;
  const int64_t r_, tile_, depth_;  // pairs per thread per side, tile side, k per chunk
  const int64_t group_;             // the thread's consecutive columns, in groups of this many
  std::vector<ExprPtr> accs_;       // accs_[a * r_ + b]: the thread's pair (a, b)
  // next_[o * kCopiesPerThread + e]: the thread's e-th element of operand o's next chunk,
  // loaded while the block computes on the current one.
  std::vector<ExprPtr> next_;
  ExprPtr i0_, j0_, k0_;            // the tile's first row and column, the chunk's first k
  ExprPtr k_first_, k_end_;         // the k range of the tile's pairs
  ExprPtr thread_;                  // the thread loop's variable

  Type loop_type() const { return Type{prog_.int_type, false}; }

  ExprPtr local(const std::string& base, Type type) {
    const std::string name = names_.make(base);
    add_kernel_local(prog_, k_, name, type);
    return var(name, {}, type);
  }

  // A loop that runs its body once on each thread of the block, `thread_` its number.
  StmtPtr thread_loop(Body body) {
    LoopPar threads;
    threads.threads = kThreads;
    threads.tpb = kThreads;
    return std::make_shared<For>(thread_->as<Var>()->name, imm(0), imm(kThreads), imm(1),
                                 std::move(body), Loc{}, std::vector<std::string>{"tile pairs"},
                                 threads);
  }
  // The thread's first row and column within the tile: R * ty and G * tx. Its rows are the R
  // after the first; its columns G consecutive ones, then G more 16 G further on, and so on,
  // so that neighbouring threads read neighbouring groups (no shared memory bank conflicts)
  // and each group is one wide load.
  std::pair<ExprPtr, ExprPtr> thread_position() {
    return {mul(arith(BinaryOp::Shr, thread_, imm(log2_of(kSide))), imm(r_)),
            mul(arith(BinaryOp::BitAnd, thread_, imm(kSide - 1)), imm(group_))};
  }
  // The thread's b-th column, from its first.
  int64_t column_offset(int64_t b) const { return b % group_ + (b / group_) * kSide * group_; }

  // t's initial value for each pair; one that depends on i and j (trmm's s = B[i, j]) only for
  // the pairs in the original ranges, whose elements the kernel as written loads.
  Body init_accumulators() {
    Body body;
    if (!mentions(p_.init, {p_.rows->var, p_.cols->var}) &&
        !contains(p_.init, ExprKind::FlatLoad)) {
      for (const auto& acc : accs_) body.push_back(assign(acc, p_.init));
      return body;
    }
    const ExprPtr zero = zero_of(k_.locals.at(p_.acc).scalar);
    for (int64_t a = 0; a < r_; ++a)
      for (int64_t b = 0; b < r_; ++b) {
        const ExprPtr& acc = accs_[a * r_ + b];
        for_pair(body, a, b, Body{assign(acc, p_.init)}, Body{assign(acc, zero)});
      }
    return body;
  }

  // Sets i and j to the thread's pair (a, b) and runs `then` when the pair is one the kernel
  // as written has, `otherwise` when not.
  void for_pair(Body& body, int64_t a, int64_t b, Body then, Body otherwise = {}) {
    auto [row, col] = thread_position();
    const ExprPtr i = var(p_.rows->var, {}, loop_type()), j = var(p_.cols->var, {}, loop_type());
    body.push_back(assign(i, add(i0_, add(row, imm(a)))));
    body.push_back(assign(j, add(j0_, add(col, imm(column_offset(b))))));
    ExprPtr in_range = both(test(BinaryOp::Lt, i, imm(p_.i_hi)),
                            both(test(BinaryOp::Ge, j, p_.j_lo.at(i)),
                                 test(BinaryOp::Lt, j, p_.j_hi.at(i))));
    body.push_back(std::make_shared<If>(in_range, std::move(then), std::move(otherwise), Loc{}));
  }

  // for k0 in range(K0, K1, TK): store the chunk's operands (loaded into registers during the
  // previous chunk) into shared memory; then load the next chunk's into registers, whose
  // latency the updates of every pair of the thread with each k of this chunk hide.
  StmtPtr chunk_loop() {
    const std::string chunk = names_.make(p_.inner->var + "_chunk");
    k0_ = var(chunk, {}, loop_type());
    Body compute = fetch_chunk(add(k0_, imm(depth_)));
    for (auto& s : update_pairs()) compute.push_back(std::move(s));
    Body body{thread_loop(store_chunk()), thread_loop(std::move(compute))};
    return std::make_shared<For>(chunk, k_first_, k_end_, imm(depth_), std::move(body),
                                 p_.inner->loc);
  }

  // The thread's e-th element of a chunk: where it lies along the tile's side and along k.
  // Consecutive threads take consecutive elements of the tensor where they can.
  std::pair<ExprPtr, ExprPtr> chunk_position(const Operand& o, int64_t e) const {
    const ExprPtr q = add(thread_, imm(e * kThreads));
    if (o.k_contiguous)
      return {arith(BinaryOp::Shr, q, imm(log2_of(depth_))),
              arith(BinaryOp::BitAnd, q, imm(depth_ - 1))};
    return {arith(BinaryOp::BitAnd, q, imm(tile_ - 1)), arith(BinaryOp::Shr, q, imm(log2_of(tile_)))};
  }

  // Loads the thread's elements of the chunk that starts at k = `start` into registers (zeros
  // outside the ranges, and past their end: the chunk after the last loads nothing).
  Body fetch_chunk(const ExprPtr& start) {
    const ExprPtr i = var(p_.rows->var, {}, loop_type()), j = var(p_.cols->var, {}, loop_type());
    const ExprPtr kv = var(p_.inner->var, {}, loop_type());
    Body body;
    for (size_t n = 0; n < p_.operands.size(); ++n) {
      const Operand& o = p_.operands[n];
      const ExprPtr side_var = o.row ? i : j;
      const ExprPtr side_start = o.row ? i0_ : j0_;
      const int64_t side_end = o.row ? p_.i_hi : p_.j_max;
      for (int64_t e = 0; e < kCopiesPerThread; ++e) {
        auto [along_side, along_k] = chunk_position(o, e);
        body.push_back(assign(side_var, add(side_start, along_side)));
        body.push_back(assign(kv, add(start, along_k)));
        ExprPtr inside = both(test(BinaryOp::Lt, side_var, imm(side_end)),
                              test(BinaryOp::Lt, kv, k_end_));
        if (o.row && p_.k_lo)  // only the k of the row's own range
          inside = both(inside, both(test(BinaryOp::Ge, kv, p_.k_lo->at(i)),
                                     test(BinaryOp::Lt, kv, p_.k_hi->at(i))));
        const ExprPtr& reg = next_[n * kCopiesPerThread + e];
        ExprPtr load = std::make_shared<FlatLoad>(o.load->tensor, o.load->offset, o.load->type,
                                                  o.load->loc);
        body.push_back(std::make_shared<If>(inside, Body{assign(reg, load)},
                                            Body{assign(reg, zero_of(o.load->type.scalar))},
                                            o.load->loc));
      }
    }
    return body;
  }

  // Stores the registers fetch_chunk loaded into the operands' shared arrays.
  Body store_chunk() {
    Body body;
    for (size_t n = 0; n < p_.operands.size(); ++n) {
      const Operand& o = p_.operands[n];
      const Type elem{o.load->type.scalar, false};
      for (int64_t e = 0; e < kCopiesPerThread; ++e) {
        auto [along_side, along_k] = chunk_position(o, e);
        ExprPtr slot = std::make_shared<FlatLoad>(
            o.shared, add(mul(along_k, imm(tile_)), along_side), elem, Loc{});
        body.push_back(assign(slot, next_[n * kCopiesPerThread + e]));
      }
    }
    return body;
  }

  // Replaces the operands with the thread's values of them and t with a pair's accumulator.
  class ForPair : public IRMutator {
   public:
    ForPair(const Product& p, const std::vector<ExprPtr>& values, ExprPtr acc)
        : p_(p), values_(values), acc_(std::move(acc)) {}

   protected:
    ExprPtr mutate_node(const FlatLoad* n, const ExprPtr& self) override {
      auto o = p_.operand_of.find(n);
      return o == p_.operand_of.end() ? self : values_[o->second];
    }
    ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
      return n->name == p_.acc ? acc_ : self;
    }

   private:
    const Product& p_;
    const std::vector<ExprPtr>& values_;
    ExprPtr acc_;
  };

  Body update_pairs() {
    auto [row, col] = thread_position();
    const std::string kk = names_.make(p_.inner->var + "_in_chunk");
    const ExprPtr kk_var = var(kk, {}, loop_type());
    const ExprPtr kv = var(p_.inner->var, {}, loop_type());
    Body step{assign(kv, add(k0_, kk_var))};
    // values[a][o]: operand o's value for the thread's a-th row (or column).
    std::vector<std::vector<ExprPtr>> values(r_, std::vector<ExprPtr>(p_.operands.size()));
    for (size_t o = 0; o < p_.operands.size(); ++o) {
      const Operand& op = p_.operands[o];
      const Type elem{op.load->type.scalar, false};
      for (int64_t a = 0; a < r_; ++a) {
        ExprPtr within = add(op.row ? row : col, imm(op.row ? a : column_offset(a)));
        ExprPtr at = add(mul(kk_var, imm(tile_)), within);
        values[a][o] = local(op.load->tensor + "_value", elem);
        step.push_back(assign(values[a][o], std::make_shared<FlatLoad>(op.shared, at, elem, Loc{})));
      }
    }
    for (int64_t a = 0; a < r_; ++a) {
      Body updates;
      for (int64_t b = 0; b < r_; ++b) {
        std::vector<ExprPtr> pair(p_.operands.size());
        for (size_t o = 0; o < p_.operands.size(); ++o)
          pair[o] = values[p_.operands[o].row ? a : b][o];
        const ExprPtr& acc = accs_[a * r_ + b];
        updates.push_back(std::make_shared<Assign>(acc, ForPair(p_, pair, acc).mutate(p_.update),
                                                   p_.inner->body[0]->loc));
      }
      if (p_.k_lo) {  // this k may lie outside the row's own range
        const ExprPtr i = add(i0_, add(row, imm(a)));
        updates = Body{std::make_shared<If>(
            both(test(BinaryOp::Ge, kv, p_.k_lo->at(i)), test(BinaryOp::Lt, kv, p_.k_hi->at(i))),
            std::move(updates), Body{}, Loc{})};
      }
      step.insert(step.end(), updates.begin(), updates.end());
    }
    // The last chunk may end early (the rows' own ranges have said where, when there are some).
    std::optional<int64_t> depth = constant_trip_count(*p_.inner);
    if (!p_.k_lo && (!depth || *depth % depth_ != 0))
      step = Body{std::make_shared<If>(test(BinaryOp::Lt, add(k0_, kk_var), k_end_),
                                       std::move(step), Body{}, Loc{})};
    auto loop = std::make_shared<For>(kk, imm(0), imm(depth_), imm(1), std::move(step),
                                      p_.inner->loc);
    loop->unroll = static_cast<int>(depth_);
    return {loop};
  }

  // Each pair of the thread that the kernel as written has runs the statements after the k
  // loop, with i, j and t its own.
  Body finish_pairs() {
    const ExprPtr t = var(p_.acc, {}, k_.locals.at(p_.acc));
    Body body;
    for (int64_t a = 0; a < r_; ++a)
      for (int64_t b = 0; b < r_; ++b) {
        Body pair{assign(t, accs_[a * r_ + b])};
        pair.insert(pair.end(), p_.epilogue.begin(), p_.epilogue.end());
        for_pair(body, a, b, std::move(pair));
      }
    return body;
  }
};

void set_launch_shape(std::vector<PlanStep>& steps, const Kernel& k) {
  for (auto& s : steps) {
    if (s.kind == PlanStep::Kind::Launch && s.kernel == k.name) {
      s.grid = k.grid();
      s.block = k.tpb;
    }
    set_launch_shape(s.body, k);
    set_launch_shape(s.else_body, k);
  }
}

}  // namespace

void tile_matrix_products(SpecializedFunction& prog, Lowered& lowered) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    std::optional<Product> p = match_product(k);
    if (!p) continue;
    int64_t element_bytes = 0;
    for (const auto& o : p->operands)
      element_bytes = std::max<int64_t>(element_bytes, size_in_bytes(o.load->type.scalar));
    element_bytes = std::max<int64_t>(element_bytes, size_in_bytes(k.locals.at(p->acc).scalar));
    TileBuilder(prog, names, k, *p, choose_register_tile(*p, element_bytes), element_bytes).build();
    set_launch_shape(lowered.plan.steps, k);
  }
}

}  // namespace parir
