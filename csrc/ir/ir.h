// The compiler's intermediate representation.
//
// General notes on the semantics
// -------------------------------
// * The IR is a small, Python-like language of statements and scalar expressions. Tensors appear
//   only as the base of an element access (Load, or the target of an Assign); a tensor value as a
//   whole is never computed.
// * Nodes are immutable and shared (ExprPtr / StmtPtr); passes build new trees. The mutators in
//   visitor.h rebuild a node only when one of its children changed.
// * Integers are 64-bit by default (Python ints); floats are 64-bit by default (Python floats).
//   Literals and Python scalar arguments are weakly typed (types.h). Integer overflow wraps as in
//   CUDA C++; Python would grow the integer instead.
// * Division `/` is true division and yields a float; `//` and `%` follow Python: the quotient
//   is floored and the remainder has the sign of the divisor.
// * Evaluation order is left to right; `and`/`or` short-circuit; a Select evaluates only the
//   chosen operand.
// * Loops run over Python `range(lo, hi, step)`; step is non-zero, and may be negative.
// * Labels attach to the statement after `parir.label(...)`. After apply_parallel_spec a For
//   whose label names an entry of the parallel spec carries that LoopPar in `par`; such a loop's
//   iterations are independent and may run in any order, in parallel.
// * Every node has a Loc pointing into the user's Python source, used for errors and `#line`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/types.h"

namespace parir {

// ---------------------------------------------------------------------------------------------
// Node kinds, written once; the enums, visitor and mutator are derived from these lists.

#define PARIR_FOR_EACH_EXPR(X) \
  X(IntImm)                    \
  X(FloatImm)                  \
  X(BoolImm)                   \
  X(Var)                       \
  X(Load)                      \
  X(FlatLoad)                  \
  X(Unary)                     \
  X(Binary)                    \
  X(Call)                      \
  X(Cast)                      \
  X(Select)                    \
  X(Slice)                     \
  X(SliceReduce)               \
  X(CallFunction)              \
  X(ExternCall)                \
  X(TensorShape)               \
  X(IsNone)                    \
  X(PointersAligned)

#define PARIR_FOR_EACH_STMT(X) \
  X(Assign)                    \
  X(For)                       \
  X(While)                     \
  X(If)                        \
  X(GpuBlock)                  \
  X(Return)                    \
  X(ExprStmt)                  \
  X(AtomicUpdate)              \
  X(WideLoad)                  \
  X(WideStore)

enum class ExprKind : uint8_t {
#define X(n) n,
  PARIR_FOR_EACH_EXPR(X)
#undef X
};

enum class StmtKind : uint8_t {
#define X(n) n,
  PARIR_FOR_EACH_STMT(X)
#undef X
};

// ---------------------------------------------------------------------------------------------
// Expressions

struct ExprNode {
  const ExprKind kind;
  Type type;  // Unknown until infer_types
  Loc loc;

  ExprNode(ExprKind k, Type t, Loc l) : kind(k), type(t), loc(l) {}
  virtual ~ExprNode() = default;

  template <typename T>
  const T* as() const {
    return kind == T::static_kind ? static_cast<const T*>(this) : nullptr;
  }
};
using ExprPtr = std::shared_ptr<const ExprNode>;

struct IntImm : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::IntImm;
  int64_t value;
  IntImm(int64_t v, Type t, Loc l) : ExprNode(static_kind, t, l), value(v) {}
};

struct FloatImm : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::FloatImm;
  double value;
  FloatImm(double v, Type t, Loc l) : ExprNode(static_kind, t, l), value(v) {}
};

struct BoolImm : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::BoolImm;
  bool value;
  BoolImm(bool v, Loc l) : ExprNode(static_kind, Type{ScalarType::Bool, false}, l), value(v) {}
};

// A named scalar: a local, a loop variable or a scalar parameter. Tensors are never Vars.
struct Var : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Var;
  std::string name;
  Var(std::string n, Type t, Loc l) : ExprNode(static_kind, t, l), name(std::move(n)) {}
};

// tensor[i0, i1, ...]: one element of a tensor parameter, one index per dimension.
struct Load : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Load;
  std::string tensor;
  std::vector<ExprPtr> indices;
  bool in_bounds;  // verify_bounds proved every index within its dimension's extent
  Load(std::string t, std::vector<ExprPtr> idx, Type ty, Loc l, bool proved = false)
      : ExprNode(static_kind, ty, l),
        tensor(std::move(t)),
        indices(std::move(idx)),
        in_bounds(proved) {}
};

// A run-time check of one index of an access (CompileOptions.bounds_check): -extent <= index
// < extent, or the access is skipped and the violation recorded for check site `site` of the
// launch plan (LaunchPlan::bounds_sites).
struct IndexCheck {
  ExprPtr index;  // int64, as the user wrote it (before negative indices are wrapped)
  int64_t extent;
  int site;
};

// tensor[offset]: one element of a tensor parameter at an element offset from its first element,
// after flatten_indices has turned a Load's indices into an offset through the tensor's strides.
// Only kernels hold FlatLoads, and they hold no Loads. `checks` are the run-time bounds checks
// the access needs (none unless CompileOptions.bounds_check).
struct FlatLoad : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::FlatLoad;
  std::string tensor;
  ExprPtr offset;  // int64
  std::vector<IndexCheck> checks;
  FlatLoad(std::string t, ExprPtr off, Type ty, Loc l, std::vector<IndexCheck> c = {})
      : ExprNode(static_kind, ty, l),
        tensor(std::move(t)),
        offset(std::move(off)),
        checks(std::move(c)) {}
};

enum class UnaryOp : uint8_t { Neg, Not, BitNot };

struct Unary : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Unary;
  UnaryOp op;
  ExprPtr a;
  Unary(UnaryOp o, ExprPtr x, Type t, Loc l) : ExprNode(static_kind, t, l), op(o), a(std::move(x)) {}
};

#define PARIR_FOR_EACH_BINARY_OP(X) \
  X(Add, "+")                       \
  X(Sub, "-")                       \
  X(Mul, "*")                       \
  X(Div, "/")                       \
  X(FloorDiv, "//")                 \
  X(Mod, "%")                       \
  X(Pow, "**")                      \
  X(BitAnd, "&")                    \
  X(BitOr, "|")                     \
  X(BitXor, "^")                    \
  X(Shl, "<<")                      \
  X(Shr, ">>")                      \
  X(Eq, "==")                       \
  X(Ne, "!=")                       \
  X(Lt, "<")                        \
  X(Le, "<=")                       \
  X(Gt, ">")                        \
  X(Ge, ">=")                       \
  X(And, "and")                     \
  X(Or, "or")

enum class BinaryOp : uint8_t {
#define X(e, s) e,
  PARIR_FOR_EACH_BINARY_OP(X)
#undef X
};
const char* python_symbol(BinaryOp op);
bool is_comparison(BinaryOp op);
bool is_logical(BinaryOp op);  // and, or
bool is_bitwise(BinaryOp op);  // & | ^ << >>

struct Binary : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Binary;
  BinaryOp op;
  ExprPtr a, b;
  Binary(BinaryOp o, ExprPtr x, ExprPtr y, Type t, Loc l)
      : ExprNode(static_kind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
};

// Built-in functions, called as parir.<name>(...): (enumerator, Python name, arity). How each
// is typed is in infer_types (builtin_result_type); the CUDA for each is in the prelude.
// parir.pow, parir.remainder, parir.clamp and parir.where are not calls: the front end writes
// them as **, %, min/max and a Select.
#define PARIR_FOR_EACH_BUILTIN(X) \
  X(Exp, "exp", 1)                \
  X(Exp2, "exp2", 1)              \
  X(Expm1, "expm1", 1)            \
  X(Log, "log", 1)                \
  X(Log2, "log2", 1)              \
  X(Log10, "log10", 1)            \
  X(Log1p, "log1p", 1)            \
  X(Sqrt, "sqrt", 1)              \
  X(Rsqrt, "rsqrt", 1)            \
  X(Sin, "sin", 1)                \
  X(Cos, "cos", 1)                \
  X(Tan, "tan", 1)                \
  X(Asin, "asin", 1)              \
  X(Acos, "acos", 1)              \
  X(Atan, "atan", 1)              \
  X(Sinh, "sinh", 1)              \
  X(Cosh, "cosh", 1)              \
  X(Tanh, "tanh", 1)              \
  X(Asinh, "asinh", 1)            \
  X(Acosh, "acosh", 1)            \
  X(Atanh, "atanh", 1)            \
  X(Erf, "erf", 1)                \
  X(Erfc, "erfc", 1)              \
  X(Sigmoid, "sigmoid", 1)        \
  X(Floor, "floor", 1)            \
  X(Ceil, "ceil", 1)              \
  X(Round, "round", 1)            \
  X(Trunc, "trunc", 1)            \
  X(Abs, "abs", 1)                \
  X(Sign, "sign", 1)              \
  X(IsNan, "isnan", 1)            \
  X(IsInf, "isinf", 1)            \
  X(IsFinite, "isfinite", 1)      \
  X(Atan2, "atan2", 2)            \
  X(Copysign, "copysign", 2)      \
  X(Hypot, "hypot", 2)            \
  X(Fmod, "fmod", 2)              \
  X(Min, "min", 2)                \
  X(Max, "max", 2)

enum class Builtin : uint8_t {
#define X(e, py, n) e,
  PARIR_FOR_EACH_BUILTIN(X)
#undef X
};
const char* python_name(Builtin f);
int arity(Builtin f);
std::optional<Builtin> builtin_from_name(const std::string& name);

struct Call : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Call;
  Builtin fn;
  std::vector<ExprPtr> args;
  Call(Builtin f, std::vector<ExprPtr> a, Type t, Loc l)
      : ExprNode(static_kind, t, l), fn(f), args(std::move(a)) {}
};

// parir.float32(a) and friends: an explicit conversion to a strong type.
struct Cast : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Cast;
  ExprPtr a;
  Cast(ExprPtr x, Type t, Loc l) : ExprNode(static_kind, t, l), a(std::move(x)) {}
};

// `a if cond else b`
struct Select : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Select;
  ExprPtr cond, a, b;
  Select(ExprPtr c, ExprPtr x, ExprPtr y, Type t, Loc l)
      : ExprNode(static_kind, t, l), cond(std::move(c)), a(std::move(x)), b(std::move(y)) {}
};

// lo:hi:step as an index of a Load, before lower_slices turns slice statements into loops.
// Missing parts are null.
struct Slice : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::Slice;
  ExprPtr lo, hi, step;
  Slice(ExprPtr l_, ExprPtr h, ExprPtr s, Loc l)
      : ExprNode(static_kind, Type{}, l), lo(std::move(l_)), hi(std::move(h)), step(std::move(s)) {}
};

// The combining operation of a reduction.
enum class ReduceOp : uint8_t { Sum, Prod, Min, Max };
const char* python_name(ReduceOp op);  // "sum", "prod", "min", "max"
const char* scan_name(ReduceOp op);    // "cumsum", "cumprod", "cummin", "cummax"

// parir.sum(e, axis=k) and friends over the slice dimensions of e: over slice dimension `axis`
// (counting e's slice dimensions only, from the left; negative from the right), or over all of
// them when there is no axis. Removed by lower_slices.
struct SliceReduce : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::SliceReduce;
  ReduceOp op;
  ExprPtr arg;
  std::optional<int> axis;
  // parir.argmax / parir.argmin (op Max / Min): the int64 index of the first extreme element
  // (flattened over the reduced dimensions) instead of its value.
  bool index = false;
  // parir.cumsum / cumprod / cummin / cummax: the running values along slice dimension `axis`
  // (the last when none is given) instead of one value; only the whole value of an assignment
  // to a slice. `exclusive` leaves out each element's own value (sums and products).
  bool scan = false;
  bool exclusive = false;
  SliceReduce(ReduceOp o, ExprPtr a, std::optional<int> ax, Loc l, bool idx = false,
              bool sc = false, bool excl = false)
      : ExprNode(static_kind, Type{}, l),
        op(o),
        arg(std::move(a)),
        axis(ax),
        index(idx),
        scan(sc),
        exclusive(excl) {}
};

// f(a, b): a call of a Python function by the name the caller uses for it, which
// inline_functions resolves: a function (decorated with @parir.jit or not) is inlined, an
// external (parir.external) becomes an ExternCall. Gone after inline_functions.
// `unpacked_into` holds the targets of `a, b = f(x)` (names or tensor elements), which take the
// values of the tuple f returns in order; such a call is a statement (an ExprStmt).
struct CallFunction : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::CallFunction;
  std::string name;  // as written: "helper" or "module.helper"
  std::vector<ExprPtr> args;
  std::vector<ExprPtr> unpacked_into;
  CallFunction(std::string n, std::vector<ExprPtr> a, Loc l, std::vector<ExprPtr> into = {})
      : ExprNode(static_kind, Type{}, l), name(std::move(n)), args(std::move(a)),
        unpacked_into(std::move(into)) {}
};

// x.shape[d], x.size(d) and len(x) (a Dim), x.numel() (a Numel), x.ndim and x.dim() (a Rank)
// of a tensor argument x: compile-time constants, as shapes are part of a specialization, which
// specialize_arguments puts in their place. `dim` is as written (negative counts from the end).
// `skip` counts the leading dimensions that a view x[i, j] passed to a called function has
// indexed away (inline_functions sets it): the view's shape is the tensor's after those.
// `unpacked_into` is the number of names of `m, n = x.shape` (0 elsewhere), which must be the
// rank.
struct TensorShape : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::TensorShape;
  enum class Query : uint8_t { Dim, Numel, Rank };
  std::string tensor;
  Query query;
  int dim;
  int skip;
  int unpacked_into;
  TensorShape(std::string t, Query q, int d, int s, Loc l, int unpacked = 0)
      : ExprNode(static_kind, Type{}, l),
        tensor(std::move(t)),
        query(q),
        dim(d),
        skip(s),
        unpacked_into(unpacked) {}
};

// `x is None` of an argument x (a parameter, a dict entry "d.k", or a called function's parameter
// bound to one): whether the call passed None, a bool constant that fold_none_tests puts in its
// place. `x is not None` is its negation.
struct IsNone : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::IsNone;
  std::string name;
  IsNone(std::string n, Loc l) : ExprNode(static_kind, Type{}, l), name(std::move(n)) {}
};

// Whether the data pointers of these tensors are all multiples of `bytes` (a power of two): a
// bool that is the same for every thread of a launch. widen_accesses chooses with it between
// wide and element-by-element accesses; only kernels hold it.
struct PointersAligned : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::PointersAligned;
  std::vector<std::string> tensors;
  int64_t bytes;
  PointersAligned(std::vector<std::string> t, int64_t b, Loc l)
      : ExprNode(static_kind, Type{ScalarType::Bool, false}, l), tensors(std::move(t)), bytes(b) {}
};

// A device function from outside parir (parir.external): a CUDA intrinsic or a function of a
// user header, with the parameter and result types its Python declaration gives.
struct ExternFunction {
  std::string name;          // the C++ name called
  std::string python_name;   // the decorated Python function's, for errors
  std::vector<ScalarType> params;  // Unknown for a pointer
  ScalarType result = ScalarType::Unknown;  // Unknown: returns nothing (void)
  std::string header;        // #included by programs that call it; "" for none
  // Parameters annotated torch.Tensor: the argument is a tensor parameter of the jit function,
  // passed as a pointer to its first element (a Var naming the tensor, in the IR).
  std::vector<bool> pointer;
  // parallelize=parir.threads(n): n threads of one block call it together, each with the same
  // arguments (expand_cooperative_calls); 0 for an ordinary external. tpb: its .tpb(), or 0.
  int64_t cooperative_threads = 0, cooperative_tpb = 0;
  bool is_pointer(size_t i) const { return i < pointer.size() && pointer[i]; }
};

struct ExternCall : ExprNode {
  static constexpr ExprKind static_kind = ExprKind::ExternCall;
  std::shared_ptr<const ExternFunction> fn;
  std::vector<ExprPtr> args;
  ExternCall(std::shared_ptr<const ExternFunction> f, std::vector<ExprPtr> a, Loc l)
      : ExprNode(static_kind, Type{f->result, false}, l), fn(std::move(f)), args(std::move(a)) {}
};

// ---------------------------------------------------------------------------------------------
// Statements

// How a labelled loop is to run in parallel: the user's
// parir.threads(n)[.reduce() | .scan()][.tpb(t)].
struct LoopPar {
  int64_t threads = 1;
  bool reduce = false;
  int64_t tpb = 0;  // threads per block; 0 = the default (kDefaultThreadsPerBlock)
  bool scan = false;  // the loop carries a running value (s += x[j]; out[j] = s)
  // The loop around a cooperative external's call (expand_cooperative_calls): each of its
  // threads runs the body once, with the same values, so its locals are the block's.
  bool cooperative = false;
  bool operator==(const LoopPar& o) const {
    return threads == o.threads && reduce == o.reduce && tpb == o.tpb && scan == o.scan &&
           cooperative == o.cooperative;
  }

  static constexpr int64_t kDefaultThreadsPerBlock = 1024;
  int64_t threads_per_block() const { return tpb ? tpb : kDefaultThreadsPerBlock; }
};

// A reduction loop (a For whose LoopPar has .reduce()), as detect_reductions finds it: every
// iteration combines a value into `target` with `op`. In the loop body the target is replaced
// by the accumulator `acc`, a per-thread variable of type `acc_type` that starts at the op's
// identity; after the loop the threads' accumulators are combined and then combined into the
// target (a local, or a tensor element that does not depend on the loop) as `target = combined`.
//
// A scan loop (a For whose LoopPar has .scan(), found by detect_scans) is a Reduction with
// `scan` set: its target is the local that carries the running value, `acc` the running value
// of the iterations before the current tile of the loop (declared by the code generator,
// starting from the target's value), and the body is cut in two at the assignment to `value`:
// the statements up to it compute this iteration's operand, those after it read the running
// value as the locals `exclusive` (before this iteration's element) and `inclusive` (after it),
// of the target's type. After the loop the target holds `combined`, the total.
//
// A scan whose threads span several blocks gives each block a contiguous chunk of the
// iterations and runs as two kernels (split_multi_block_kernels): `ScanPass::ChunkTotals`
// combines each chunk's elements (the body up to `value` only) and stores the total as
// `chunk_totals`; `ScanPass::FromChunkTotals` starts each chunk's running value from the totals
// of the chunks before it and runs the whole body, and the last chunk's block stores the
// loop's final running value as `scan_result`. `chunk_totals` is an element of a temporary
// whose last index is the local `chunk`, which the code generator sets to the chunk wanted.
//
// A reduction (not a scan) with `chunk` set is one over several blocks combined in a fixed
// order (CompileOptions.deterministic): each block stores its result, as `combined`, into its
// own element of a temporary, the target, whose last index is the local `chunk`, which the
// code generator sets to the block's number within the loop's blocks.
enum class ScanPass { Whole, ChunkTotals, FromChunkTotals };

struct Reduction {
  ReduceOp op;
  std::string acc;
  Type acc_type;
  ExprPtr target;
  // The accumulator converted to the target's type, and the target combined with it
  // (`target + acc_value`, `parir.min(target, acc_value)`, ...): what the threads' combined
  // result is stored as.
  ExprPtr acc_value, combined;
  // An index reduction (parir.argmax / parir.argmin, op Max / Min) also carries the index of
  // the extreme value: `index_acc`, an int64 per-thread variable that starts at INT64_MAX
  // ("no element yet"), and `index_target`, a local. Threads combine (value, index) pairs,
  // ties going to the lower index and a NaN beating any number; then, when `better` (the
  // combined pair beats the target's: strictly, as a later element in the sequential pass),
  // the target becomes `combined` (the accumulator in the target's type) and `index_target`
  // the index. `index_acc` is empty for the other reductions.
  std::string index_acc;
  ExprPtr index_target, better;
  bool is_index() const { return !index_acc.empty(); }
  bool scan = false;
  std::string value, exclusive, inclusive;  // a scan's locals (above)
  ScanPass scan_pass = ScanPass::Whole;     // a scan over several blocks (above)
  std::string chunk;                        // a scan's or a reduction's chunk (above)
  ExprPtr chunk_totals, scan_result;
};

struct StmtNode;
using StmtPtr = std::shared_ptr<const StmtNode>;
using Body = std::vector<StmtPtr>;

struct StmtNode {
  const StmtKind kind;
  Loc loc;
  std::vector<std::string> labels;  // from parir.label(...) before the statement

  StmtNode(StmtKind k, Loc l, std::vector<std::string> lb)
      : kind(k), loc(l), labels(std::move(lb)) {}
  virtual ~StmtNode() = default;

  template <typename T>
  const T* as() const {
    return kind == T::static_kind ? static_cast<const T*>(this) : nullptr;
  }
};

// target = value, where target is a Var (a local) or a Load (a tensor element).
// Augmented assignment `t op= v` is lowered to `t = t op v` by the front end.
struct Assign : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::Assign;
  ExprPtr target, value;
  Assign(ExprPtr t, ExprPtr v, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), target(std::move(t)), value(std::move(v)) {}
};

// for var in range(lo, hi, step): body
struct For : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::For;
  std::string var;
  ExprPtr lo, hi, step;
  Body body;
  std::optional<LoopPar> par;  // set by apply_parallel_spec for labelled loops in the spec
  std::shared_ptr<const Reduction> reduction;  // set by detect_reductions for reduce loops
  int unroll = 0;  // > 0: the CUDA compiler unrolls it this many times (unroll_accumulations)
  For(std::string v, ExprPtr lo_, ExprPtr hi_, ExprPtr st, Body b, Loc l,
      std::vector<std::string> lb = {}, std::optional<LoopPar> p = std::nullopt,
      std::shared_ptr<const Reduction> r = nullptr)
      : StmtNode(static_kind, l, std::move(lb)),
        var(std::move(v)),
        lo(std::move(lo_)),
        hi(std::move(hi_)),
        step(std::move(st)),
        body(std::move(b)),
        par(p),
        reduction(std::move(r)) {}
};

struct While : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::While;
  ExprPtr cond;
  Body body;
  While(ExprPtr c, Body b, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), cond(std::move(c)), body(std::move(b)) {}
};

// if/elif/else; an elif chain is an If in else_body.
struct If : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::If;
  ExprPtr cond;
  Body then_body, else_body;
  If(ExprPtr c, Body t, Body e, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)),
        cond(std::move(c)),
        then_body(std::move(t)),
        else_body(std::move(e)) {}
};

// `with parir.gpu:` — the body runs on the GPU, sequentially unless it holds parallel loops.
struct GpuBlock : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::GpuBlock;
  Body body;
  GpuBlock(Body b, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), body(std::move(b)) {}
};

// `return value` (value may be null), or `return a, b` for a call unpacked as `x, y = f(...)`,
// in a function that a jit function calls; inline_functions turns it into assignments to the
// call's results.
struct Return : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::Return;
  ExprPtr value;                  // null for a bare `return` and for a tuple
  std::vector<ExprPtr> elements;  // the values of `return a, b` (empty otherwise)
  Return(ExprPtr v, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), value(std::move(v)) {}
  Return(std::vector<ExprPtr> e, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), elements(std::move(e)) {}
};

// A call made for its effects, `f(x, y)` on a line of its own.
struct ExprStmt : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::ExprStmt;
  ExprPtr value;
  ExprStmt(ExprPtr v, Loc l, std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)), value(std::move(v)) {}
};

// The read-modify-write operations of parir.atomic_*: (enumerator, Python name).
#define PARIR_FOR_EACH_ATOMIC_OP(X)        \
  X(Add, "atomic_add")                     \
  X(Sub, "atomic_sub")                     \
  X(Min, "atomic_min")                     \
  X(Max, "atomic_max")                     \
  X(Exchange, "atomic_exchange")           \
  X(CompareExchange, "atomic_cas")         \
  X(And, "atomic_and")                     \
  X(Or, "atomic_or")                       \
  X(Xor, "atomic_xor")

enum class AtomicOp : uint8_t {
#define X(e, py) e,
  PARIR_FOR_EACH_ATOMIC_OP(X)
#undef X
};
const char* python_name(AtomicOp op);
std::optional<AtomicOp> atomic_op_from_name(const std::string& name);

// parir.atomic_add(t[i], v) and the other parir.atomic_* functions: the element `target` is
// read, combined with `value` and written back as one indivisible operation that no other
// thread's access to the element comes between (CUDA's atomicAdd and friends). Min and Max
// propagate NaN as parir.min/max do; Exchange stores `value`; CompareExchange stores `value`
// only when the element's bits equal those of `compare` (CUDA's atomicCAS). `result`, when
// present, is a local that receives the element's old value (`old = parir.atomic_add(...)`),
// as an assignment of a value of the element's type would.
// A statement, not an expression: it writes a tensor, and passes that copy or repeat
// expressions and local computations (inlining, kernel splitting) must never duplicate it.
// Its children are, in evaluation order, target's indices, compare, value; `result` last.
struct AtomicUpdate : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::AtomicUpdate;
  AtomicOp op;
  ExprPtr target;   // a Load (a FlatLoad after flatten_indices): one tensor element
  ExprPtr value;    // converted to the element's type by infer_types
  ExprPtr compare;  // CompareExchange's expected value; null for the other operations
  ExprPtr result;   // a Var, or null when the old value is not used
  AtomicUpdate(AtomicOp o, ExprPtr t, ExprPtr v, ExprPtr c, ExprPtr r, Loc l,
               std::vector<std::string> lb = {})
      : StmtNode(static_kind, l, std::move(lb)),
        op(o),
        target(std::move(t)),
        value(std::move(v)),
        compare(std::move(c)),
        result(std::move(r)) {}
};

// Wide accesses (widen_accesses): `width` consecutive elements of a tensor moved by one memory
// instruction, tensor[offset], tensor[offset + 1], ..., where the element at `offset` (int64)
// lies on a boundary of width * the element's size in bytes, which the code that holds the
// statement has checked (PointersAligned) or proved. Only kernels hold them.
//
// WideLoad: the locals `targets` (one per element, of the element's type) get the elements.
struct WideLoad : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::WideLoad;
  std::string tensor;
  ExprPtr offset;
  std::vector<std::string> targets;
  WideLoad(std::string t, ExprPtr off, std::vector<std::string> tg, Loc l)
      : StmtNode(static_kind, l, {}),
        tensor(std::move(t)),
        offset(std::move(off)),
        targets(std::move(tg)) {}
};

// WideStore: the elements get `values` (of the element's type), evaluated in order first.
struct WideStore : StmtNode {
  static constexpr StmtKind static_kind = StmtKind::WideStore;
  std::string tensor;
  ExprPtr offset;
  std::vector<ExprPtr> values;
  WideStore(std::string t, ExprPtr off, std::vector<ExprPtr> v, Loc l)
      : StmtNode(static_kind, l, {}),
        tensor(std::move(t)),
        offset(std::move(off)),
        values(std::move(v)) {}
};

// ---------------------------------------------------------------------------------------------
// A function as captured at decoration time (untyped) and after specialization (typed).

struct Param {
  std::string name;
  Loc loc;
  ExprPtr default_value;  // `mu=0.0` in the def: what a call that leaves the parameter out passes
};

struct Function {
  std::string name;
  std::vector<Param> params;
  Body body;
  std::shared_ptr<const SourceInfo> source;
};

// ---------------------------------------------------------------------------------------------
// Construction helpers (types left Unknown unless given).

ExprPtr int_imm(int64_t v, Loc l = {}, Type t = {ScalarType::I64, true});
ExprPtr float_imm(double v, Loc l = {}, Type t = {ScalarType::F64, true});
ExprPtr bool_imm(bool v, Loc l = {});
ExprPtr var(const std::string& name, Loc l = {}, Type t = {});
ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b, Loc l = {}, Type t = {});
// The loop with another body; everything else about it (range, labels, parallelism,
// reduction, unrolling) kept.
StmtPtr with_body(const For& loop, Body body);

// A name as the user wrote it: the compiler's "d.k" for the entry d['k'] of a dict argument.
std::string display_name(const std::string& name);

// Python-like text of an expression or statement list, for debugging and tests.
std::string to_string(const ExprPtr& e);
std::string to_string(const Body& body, int indent = 0);
std::string to_string(const Function& f);

}  // namespace parir
