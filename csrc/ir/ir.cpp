#include "ir/ir.h"

#include <cmath>

namespace parir {

const char* python_symbol(BinaryOp op) {
  switch (op) {
#define X(e, s)        \
  case BinaryOp::e: \
    return s;
    PARIR_FOR_EACH_BINARY_OP(X)
#undef X
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

bool is_logical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor ||
         op == BinaryOp::Shl || op == BinaryOp::Shr;
}

const char* python_name(Builtin f) {
  switch (f) {
#define X(e, py, n)    \
  case Builtin::e: \
    return py;
    PARIR_FOR_EACH_BUILTIN(X)
#undef X
  }
  return "?";
}

int arity(Builtin f) {
  switch (f) {
#define X(e, py, n)    \
  case Builtin::e: \
    return n;
    PARIR_FOR_EACH_BUILTIN(X)
#undef X
  }
  return 0;
}

std::optional<Builtin> builtin_from_name(const std::string& name) {
#define X(e, py, n) \
  if (name == py) return Builtin::e;
  PARIR_FOR_EACH_BUILTIN(X)
#undef X
  return std::nullopt;
}

const char* python_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

const char* scan_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "cumsum";
    case ReduceOp::Prod:
      return "cumprod";
    case ReduceOp::Min:
      return "cummin";
    case ReduceOp::Max:
      return "cummax";
  }
  return "?";
}

const char* python_name(AtomicOp op) {
  switch (op) {
#define X(e, py)       \
  case AtomicOp::e: \
    return py;
    PARIR_FOR_EACH_ATOMIC_OP(X)
#undef X
  }
  return "?";
}

std::optional<AtomicOp> atomic_op_from_name(const std::string& name) {
#define X(e, py) \
  if (name == py) return AtomicOp::e;
  PARIR_FOR_EACH_ATOMIC_OP(X)
#undef X
  return std::nullopt;
}

ExprPtr int_imm(int64_t v, Loc l, Type t) { return std::make_shared<IntImm>(v, t, l); }
ExprPtr float_imm(double v, Loc l, Type t) { return std::make_shared<FloatImm>(v, t, l); }
ExprPtr bool_imm(bool v, Loc l) { return std::make_shared<BoolImm>(v, l); }
ExprPtr var(const std::string& name, Loc l, Type t) { return std::make_shared<Var>(name, t, l); }
ExprPtr binary(BinaryOp op, ExprPtr a, ExprPtr b, Loc l, Type t) {
  return std::make_shared<Binary>(op, std::move(a), std::move(b), t, l);
}
StmtPtr with_body(const For& loop, Body body) {
  auto f = std::make_shared<For>(loop.var, loop.lo, loop.hi, loop.step, std::move(body), loop.loc,
                                 loop.labels, loop.par, loop.reduction);
  f->unroll = loop.unroll;
  return f;
}

// ---------------------------------------------------------------------------------------------
// Printing, in Python syntax with types shown on casts only.

namespace {

std::string float_text(double v) {
  if (std::isinf(v)) return v > 0 ? "parir.inf" : "-parir.inf";
  if (std::isnan(v)) return "parir.nan";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string expr_text(const ExprNode& e) {
  switch (e.kind) {
    case ExprKind::IntImm:
      return fmt::format("{}", static_cast<const IntImm&>(e).value);
    case ExprKind::FloatImm:
      return float_text(static_cast<const FloatImm&>(e).value);
    case ExprKind::BoolImm:
      return static_cast<const BoolImm&>(e).value ? "True" : "False";
    case ExprKind::Var:
      return static_cast<const Var&>(e).name;
    case ExprKind::Load: {
      const auto& n = static_cast<const Load&>(e);
      std::vector<std::string> idx;
      for (const auto& i : n.indices) idx.push_back(expr_text(*i));
      return fmt::format("{}[{}]", n.tensor, fmt::join(idx, ", "));
    }
    case ExprKind::FlatLoad: {
      const auto& n = static_cast<const FlatLoad&>(e);
      std::string checks;
      for (const auto& c : n.checks)
        checks += fmt::format(" if -{} <= {} < {}", c.extent, expr_text(*c.index), c.extent);
      return fmt::format("{}.flat[{}{}]", n.tensor, expr_text(*n.offset), checks);
    }
    case ExprKind::Unary: {
      const auto& n = static_cast<const Unary&>(e);
      const char* op = n.op == UnaryOp::Neg ? "-" : n.op == UnaryOp::Not ? "not " : "~";
      return fmt::format("{}({})", op, expr_text(*n.a));
    }
    case ExprKind::Binary: {
      const auto& n = static_cast<const Binary&>(e);
      return fmt::format("({} {} {})", expr_text(*n.a), python_symbol(n.op), expr_text(*n.b));
    }
    case ExprKind::Call: {
      const auto& n = static_cast<const Call&>(e);
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(expr_text(*a));
      return fmt::format("parir.{}({})", python_name(n.fn), fmt::join(args, ", "));
    }
    case ExprKind::Cast: {
      const auto& n = static_cast<const Cast&>(e);
      return fmt::format("parir.{}({})", python_name(n.type.scalar), expr_text(*n.a));
    }
    case ExprKind::Select: {
      const auto& n = static_cast<const Select&>(e);
      return fmt::format("({} if {} else {})", expr_text(*n.a), expr_text(*n.cond),
                         expr_text(*n.b));
    }
    case ExprKind::Slice: {
      const auto& n = static_cast<const Slice&>(e);
      auto part = [](const ExprPtr& p) { return p ? expr_text(*p) : std::string(); };
      return n.step ? fmt::format("{}:{}:{}", part(n.lo), part(n.hi), part(n.step))
                    : fmt::format("{}:{}", part(n.lo), part(n.hi));
    }
    case ExprKind::CallFunction: {
      const auto& n = static_cast<const CallFunction&>(e);
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(expr_text(*a));
      std::string call = fmt::format("{}({})", n.name, fmt::join(args, ", "));
      if (n.unpacked_into.empty()) return call;
      std::vector<std::string> targets;
      for (const auto& t : n.unpacked_into) targets.push_back(expr_text(*t));
      return fmt::format("{} = {}", fmt::join(targets, ", "), call);
    }
    case ExprKind::ExternCall: {
      const auto& n = static_cast<const ExternCall&>(e);
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(expr_text(*a));
      return fmt::format("{}({})", n.fn->python_name, fmt::join(args, ", "));
    }
    case ExprKind::TensorShape: {
      const auto& n = static_cast<const TensorShape&>(e);
      std::string view = n.skip ? fmt::format("{}[{} indices]", n.tensor, n.skip) : n.tensor;
      switch (n.query) {
        case TensorShape::Query::Dim:
          return fmt::format("{}.shape[{}]", view, n.dim);
        case TensorShape::Query::Numel:
          return fmt::format("{}.numel()", view);
        case TensorShape::Query::Rank:
          return fmt::format("{}.ndim", view);
      }
      return "?";
    }
    case ExprKind::SliceReduce: {
      const auto& n = static_cast<const SliceReduce&>(e);
      std::string name = n.scan ? scan_name(n.op)
                                : std::string(n.index ? "arg" : "") + python_name(n.op);
      std::string extra = n.axis ? fmt::format(", axis={}", *n.axis) : "";
      if (n.exclusive) extra += ", exclusive=True";
      return fmt::format("parir.{}({}{})", name, expr_text(*n.arg), extra);
    }
    case ExprKind::IsNone:
      return fmt::format("{} is None", display_name(static_cast<const IsNone&>(e).name));
    case ExprKind::PointersAligned: {
      const auto& n = static_cast<const PointersAligned&>(e);
      return fmt::format("aligned({}, {})", fmt::join(n.tensors, ", "), n.bytes);
    }
  }
  return "?";
}

std::string par_text(const LoopPar& p) {
  std::string s = fmt::format("parir.threads({})", p.threads);
  if (p.reduce) s += ".reduce()";
  if (p.scan) s += ".scan()";
  if (p.tpb) s += fmt::format(".tpb({})", p.tpb);
  return s;
}

void body_text(const Body& body, int indent, std::string& out);

void stmt_text(const StmtNode& s, int indent, std::string& out) {
  std::string pad(indent * 2, ' ');
  for (const auto& l : s.labels) out += fmt::format("{}parir.label('{}')\n", pad, l);
  switch (s.kind) {
    case StmtKind::Assign: {
      const auto& n = static_cast<const Assign&>(s);
      out += fmt::format("{}{} = {}\n", pad, expr_text(*n.target), expr_text(*n.value));
      break;
    }
    case StmtKind::For: {
      const auto& n = static_cast<const For&>(s);
      std::string note = n.par ? "  # " + par_text(*n.par) : "";
      if (n.reduction && n.reduction->is_index())
        note += fmt::format("; {}, {} = arg{}(({}, {}) over the loop)",
                            expr_text(*n.reduction->target), expr_text(*n.reduction->index_target),
                            python_name(n.reduction->op), n.reduction->acc,
                            n.reduction->index_acc);
      else if (n.reduction && n.reduction->scan)
        note += fmt::format("; {} = {}(running value {}, {} before and {} after the element)",
                            expr_text(*n.reduction->target), scan_name(n.reduction->op),
                            n.reduction->acc, n.reduction->exclusive, n.reduction->inclusive) +
                (n.reduction->scan_pass == ScanPass::ChunkTotals
                     ? fmt::format("; chunk totals into {}", expr_text(*n.reduction->chunk_totals))
                 : n.reduction->scan_pass == ScanPass::FromChunkTotals
                     ? fmt::format("; from chunk totals {}, result into {}",
                                   expr_text(*n.reduction->chunk_totals),
                                   expr_text(*n.reduction->scan_result))
                     : "");
      else if (n.reduction)
        note += fmt::format("; {} = {}({} over the loop)", expr_text(*n.reduction->target),
                            python_name(n.reduction->op), n.reduction->acc);
      if (n.unroll > 0)
        note += fmt::format("{}unrolled {} times", note.empty() ? "  # " : "; ", n.unroll);
      out += fmt::format("{}for {} in range({}, {}, {}):{}\n", pad, n.var, expr_text(*n.lo),
                         expr_text(*n.hi), expr_text(*n.step), note);
      body_text(n.body, indent + 1, out);
      break;
    }
    case StmtKind::While: {
      const auto& n = static_cast<const While&>(s);
      out += fmt::format("{}while {}:\n", pad, expr_text(*n.cond));
      body_text(n.body, indent + 1, out);
      break;
    }
    case StmtKind::If: {
      const auto& n = static_cast<const If&>(s);
      out += fmt::format("{}if {}:\n", pad, expr_text(*n.cond));
      body_text(n.then_body, indent + 1, out);
      if (!n.else_body.empty()) {
        out += pad + "else:\n";
        body_text(n.else_body, indent + 1, out);
      }
      break;
    }
    case StmtKind::GpuBlock: {
      const auto& n = static_cast<const GpuBlock&>(s);
      out += pad + "with parir.gpu:\n";
      body_text(n.body, indent + 1, out);
      break;
    }
    case StmtKind::Return: {
      const auto& n = static_cast<const Return&>(s);
      std::vector<std::string> values;
      if (n.value) values.push_back(expr_text(*n.value));
      for (const auto& e : n.elements) values.push_back(expr_text(*e));
      out += values.empty() ? pad + "return\n"
                            : fmt::format("{}return {}\n", pad, fmt::join(values, ", "));
      break;
    }
    case StmtKind::ExprStmt:
      out += fmt::format("{}{}\n", pad, expr_text(*static_cast<const ExprStmt&>(s).value));
      break;
    case StmtKind::AtomicUpdate: {
      const auto& n = static_cast<const AtomicUpdate&>(s);
      std::string args = expr_text(*n.target);
      if (n.compare) args += ", " + expr_text(*n.compare);
      args += ", " + expr_text(*n.value);
      std::string result = n.result ? expr_text(*n.result) + " = " : "";
      out += fmt::format("{}{}parir.{}({})\n", pad, result, python_name(n.op), args);
      break;
    }
    case StmtKind::WideLoad: {
      const auto& n = static_cast<const WideLoad&>(s);
      out += fmt::format("{}{} = {}.flat[{}:+{}]\n", pad, fmt::join(n.targets, ", "), n.tensor,
                         expr_text(*n.offset), n.targets.size());
      break;
    }
    case StmtKind::WideStore: {
      const auto& n = static_cast<const WideStore&>(s);
      std::vector<std::string> values;
      for (const auto& v : n.values) values.push_back(expr_text(*v));
      out += fmt::format("{}{}.flat[{}:+{}] = {}\n", pad, n.tensor, expr_text(*n.offset),
                         n.values.size(), fmt::join(values, ", "));
      break;
    }
  }
}

void body_text(const Body& body, int indent, std::string& out) {
  if (body.empty()) out += std::string(indent * 2, ' ') + "pass\n";
  for (const auto& s : body) stmt_text(*s, indent, out);
}

}  // namespace

std::string to_string(const ExprPtr& e) { return e ? expr_text(*e) : "<null>"; }

std::string to_string(const Body& body, int indent) {
  std::string out;
  body_text(body, indent, out);
  return out;
}

std::string to_string(const Function& f) {
  std::vector<std::string> names;
  for (const auto& p : f.params) names.push_back(p.name);
  return fmt::format("def {}({}):\n{}", f.name, fmt::join(names, ", "), to_string(f.body, 1));
}

std::string display_name(const std::string& name) {
  size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  return fmt::format("{}['{}']", name.substr(0, dot), name.substr(dot + 1));
}

}  // namespace parir
