#include "frontend/python_ast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "frontend/early_returns.h"
#include "frontend/math_and_numpy.h"

namespace py = pybind11;

namespace parir::frontend {
namespace {

std::string node_type(const py::handle& node) {
  return py::str(py::type::handle_of(node).attr("__name__"));
}

class Converter {
 public:
  Converter(std::shared_ptr<const SourceInfo> src, const std::map<std::string, std::string>& al,
            const std::map<std::string, py::object>& constants)
      : src_(std::move(src)), aliases_(al), constants_(constants) {}

  Function function(const py::handle& def) {
    Function f;
    f.name = py::str(def.attr("name"));
    f.source = src_;
    py::handle args = def.attr("args");
    if (!args.attr("vararg").is_none() || !args.attr("kwarg").is_none() ||
        py::len(args.attr("kwonlyargs")) > 0)
      fail_at(def, "parir functions take positional parameters only (no *args, **kwargs or "
                   "keyword-only parameters)");
    for (auto list : {"posonlyargs", "args"})
      for (const auto& a : args.attr(list)) f.params.push_back({py::str(a.attr("arg")), loc(a)});
    // Defaults belong to the last parameters, as Python matches them.
    py::list defaults = args.attr("defaults");
    for (size_t k = 0; k < py::len(defaults); ++k)
      f.params[f.params.size() - py::len(defaults) + k].default_value = expr(defaults[k]);
    f.body = early_returns_as_branches(body(def.attr("body"), /*allow_docstring=*/true));
    return f;
  }

 private:
  std::shared_ptr<const SourceInfo> src_;
  const std::map<std::string, std::string>& aliases_;
  const std::map<std::string, py::object>& constants_;

  Loc loc(const py::handle& node) const {
    Loc l;
    int off = src_->first_line - 1;
    l.line = node.attr("lineno").cast<int>() + off;
    l.col = node.attr("col_offset").cast<int>();
    py::object el = node.attr("end_lineno");
    l.end_line = el.is_none() ? l.line : el.cast<int>() + off;
    py::object ec = node.attr("end_col_offset");
    l.end_col = ec.is_none() ? l.col : ec.cast<int>();
    l.src = src_.get();
    return l;
  }

  [[noreturn]] void fail_at(const py::handle& node, const std::string& msg) const {
    throw_at(*src_, loc(node), msg);
  }

  // The parir_torch name a node refers to: `parir.exp` or a bare `exp` imported from it.
  // Returns "" for anything else.
  std::string parir_name(const py::handle& node) const {
    std::string t = node_type(node);
    if (t == "Attribute") {
      py::handle base = node.attr("value");
      if (node_type(base) == "Name") {
        auto it = aliases_.find(py::str(base.attr("id")));
        if (it != aliases_.end() && it->second == "module") return py::str(node.attr("attr"));
        if (it != aliases_.end() && it->second == "math")
          return "math." + std::string(py::str(node.attr("attr")));
        if (it != aliases_.end() && it->second == "numpy")
          return numpy_name(py::str(base.attr("id")), py::str(node.attr("attr")), *src_,
                            loc(node));
      }
    } else if (t == "Name") {
      auto it = aliases_.find(py::str(node.attr("id")));
      if (it != aliases_.end() && it->second != "module") return it->second;
    }
    return "";
  }

  // ----- statements -----------------------------------------------------------------------

  Body body(const py::handle& stmts, bool allow_docstring = false) {
    Body out;
    std::vector<std::string> labels;
    py::handle label_node;
    bool first = true;
    for (const auto& s : stmts) {
      std::string t = node_type(s);
      if (t == "Expr") {
        py::handle v = s.attr("value");
        if (allow_docstring && first && node_type(v) == "Constant" &&
            py::isinstance<py::str>(v.attr("value"))) {
          first = false;
          continue;
        }
        if (node_type(v) == "Call" && parir_name(v.attr("func")) == "label") {
          labels.push_back(label_name(v));
          label_node = s;
          first = false;
          continue;
        }
        if (is_atomic_call(v)) {
          out.push_back(atomic_update(v, nullptr, loc(s), std::move(labels)));
          labels.clear();
          first = false;
          continue;
        }
        // A call of a Python function on its own is made for its effects (writes to tensors);
        // a parir builtin on its own would compute nothing.
        if (node_type(v) == "Call") {
          ExprPtr call = expr(v);
          if (call->as<CallFunction>()) {
            out.push_back(std::make_shared<ExprStmt>(call, loc(s), std::move(labels)));
            labels.clear();
            first = false;
            continue;
          }
        }
        fail_at(s, "an expression on its own is not a statement parir can compile; only "
                   "assignments, loops, conditionals, function calls and parir.label(...) may "
                   "stand alone");
      }
      first = false;
      if (t == "Pass") {
        if (!labels.empty()) fail_at(s, "parir.label(...) must be followed by the statement it labels, not `pass`");
        continue;
      }
      if (Body unpacked = shape_unpacking(s); !unpacked.empty()) {
        if (!labels.empty()) fail_at(s, "parir.label(...) cannot label an assignment");
        out.insert(out.end(), unpacked.begin(), unpacked.end());
        continue;
      }
      if (Body assigned = tuple_assignment(s); !assigned.empty()) {
        if (!labels.empty()) fail_at(s, "parir.label(...) cannot label an assignment");
        out.insert(out.end(), assigned.begin(), assigned.end());
        continue;
      }
      out.push_back(stmt(s, std::move(labels)));
      labels.clear();
    }
    if (!labels.empty())
      fail_at(label_node, "parir.label(...) must be followed by the statement it labels");
    return out;
  }

  std::string label_name(const py::handle& call) const {
    py::list args = call.attr("args");
    if (py::len(args) != 1 || py::len(call.attr("keywords")) != 0 ||
        node_type(args[0]) != "Constant" || !py::isinstance<py::str>(args[0].attr("value")))
      fail_at(call, "parir.label takes one string literal, as in parir.label('N')");
    return py::str(args[0].attr("value"));
  }

  StmtPtr stmt(const py::handle& s, std::vector<std::string> labels) {
    std::string t = node_type(s);
    Loc l = loc(s);
    if (t == "Assign") {
      py::list targets = s.attr("targets");
      if (py::len(targets) != 1)
        fail_at(s, "chained assignment (a = b = ...) is not supported; assign each name separately");
      ExprPtr t = target(targets[0]);  // checked first: its errors are the more telling
      if (is_atomic_call(s.attr("value"))) return atomic_update(s.attr("value"), t, l, labels);
      return std::make_shared<Assign>(t, expr(s.attr("value")), l, labels);
    }
    if (t == "AnnAssign") {
      if (s.attr("value").is_none()) fail_at(s, "a declaration without a value is not supported");
      ExprPtr t = target(s.attr("target"));
      if (is_atomic_call(s.attr("value"))) return atomic_update(s.attr("value"), t, l, labels);
      return std::make_shared<Assign>(t, expr(s.attr("value")), l, labels);
    }
    if (t == "AugAssign") {
      ExprPtr tgt = target(s.attr("target"));
      ExprPtr rhs = binary(binop(s.attr("op")), tgt, expr(s.attr("value")), l);
      return std::make_shared<Assign>(tgt, rhs, l, labels);
    }
    if (t == "For") return for_loop(s, std::move(labels));
    if (t == "While") {
      if (py::len(s.attr("orelse")) > 0) fail_at(s, "`while ... else` is not supported");
      return std::make_shared<While>(expr(s.attr("test")), body(s.attr("body")), l, labels);
    }
    if (t == "If")
      return std::make_shared<If>(expr(s.attr("test")), body(s.attr("body")),
                                  body(s.attr("orelse")), l, labels);
    if (t == "With") {
      py::list items = s.attr("items");
      if (py::len(items) != 1 || parir_name(items[0].attr("context_expr")) != "gpu" ||
          !items[0].attr("optional_vars").is_none())
        fail_at(s, "the only supported `with` statement is `with parir.gpu:`");
      return std::make_shared<GpuBlock>(body(s.attr("body")), l, labels);
    }
    if (t == "Return") {
      py::object v = s.attr("value");
      if (!v.is_none() && node_type(v) == "Tuple") {  // `return a, b`
        std::vector<ExprPtr> elements;
        for (const auto& e : v.attr("elts")) {
          if (node_type(e) == "Starred" || node_type(e) == "Tuple")
            fail_at(e, "a returned tuple holds values only (no nested tuples or *starred)");
          elements.push_back(expr(e));
        }
        if (elements.size() < 2) fail_at(v, "a returned tuple must hold at least two values");
        return std::make_shared<Return>(std::move(elements), l, labels);
      }
      return std::make_shared<Return>(v.is_none() ? ExprPtr() : expr(v), l, labels);
    }
    if (t == "Break" || t == "Continue")
      fail_at(s, fmt::format("`{}` is not supported; express the condition in the loop or with if",
                             t == "Break" ? "break" : "continue"));
    fail_at(s, fmt::format("{} statements are not supported in parir functions", describe(t)));
  }

  static std::string describe(const std::string& t) {
    if (t == "FunctionDef") return "nested function definition";
    if (t == "Import" || t == "ImportFrom") return "import";
    if (t == "Try") return "try";
    if (t == "Raise") return "raise";
    if (t == "Delete") return "del";
    if (t == "Global" || t == "Nonlocal") return "global/nonlocal";
    return t;
  }

  StmtPtr for_loop(const py::handle& s, std::vector<std::string> labels) {
    Loc l = loc(s);
    if (py::len(s.attr("orelse")) > 0) fail_at(s, "`for ... else` is not supported");
    py::handle tgt = s.attr("target");
    if (node_type(tgt) != "Name")
      fail_at(tgt, "a for-loop must bind a single name, as in `for i in range(N):`");
    py::handle it = s.attr("iter");
    if (node_type(it) != "Call" || node_type(it.attr("func")) != "Name" ||
        std::string(py::str(it.attr("func").attr("id"))) != "range")
      fail_at(it, "parir for-loops iterate over range(...)");
    py::list args = it.attr("args");
    size_t n = py::len(args);
    if (n < 1 || n > 3 || py::len(it.attr("keywords")) > 0)
      fail_at(it, "range takes one to three positional arguments");
    ExprPtr lo = n == 1 ? int_imm(0, loc(it)) : expr(args[0]);
    ExprPtr hi = n == 1 ? expr(args[0]) : expr(args[1]);
    ExprPtr step = n == 3 ? expr(args[2]) : int_imm(1, loc(it));
    return std::make_shared<For>(py::str(tgt.attr("id")), lo, hi, step, body(s.attr("body")), l,
                                 std::move(labels));
  }

  // ----- atomic updates -------------------------------------------------------------------

  bool is_atomic_call(const py::handle& node) const {
    return node_type(node) == "Call" && atomic_op_from_name(parir_name(node.attr("func")));
  }

  // `parir.atomic_add(t[i], v)` on its own (result null), or `old = parir.atomic_add(...)`
  // (result the target of the assignment, which must be a local).
  StmtPtr atomic_update(const py::handle& call, const ExprPtr& result, const Loc& l,
                        std::vector<std::string> labels) {
    std::string name = parir_name(call.attr("func"));
    AtomicOp op = *atomic_op_from_name(name);
    if (result && !result->as<Var>())
      fail_at(call, fmt::format("the old value that parir.{} returns can only be assigned to a "
                                "local variable (old = parir.{}(...)); store the local into the "
                                "tensor in a statement of its own",
                                name, name));
    if (py::len(call.attr("keywords")) > 0)
      fail_at(call, fmt::format("parir.{} takes its arguments by position only", name));
    py::list args = call.attr("args");
    size_t want = op == AtomicOp::CompareExchange ? 3 : 2;
    const char* usage = op == AtomicOp::CompareExchange ? "(t[i], expected, desired)" : "(t[i], value)";
    if (py::len(args) != want)
      fail_at(call, fmt::format("parir.{} takes {} arguments, {}; got {}", name, want, usage,
                                py::len(args)));
    for (const auto& a : args)
      if (node_type(a) == "Starred") fail_at(a, "*args in calls are not supported");
    ExprPtr target = atomic_target(args[0], name);
    ExprPtr compare = op == AtomicOp::CompareExchange ? expr(args[1]) : nullptr;
    ExprPtr value = expr(args[want - 1]);
    return std::make_shared<AtomicUpdate>(op, target, value, compare, result, l,
                                          std::move(labels));
  }

  // The first argument of parir.atomic_*: one element of a tensor argument.
  ExprPtr atomic_target(const py::handle& node, const std::string& fn) {
    std::string what;
    if (node_type(node) == "Subscript") {
      ExprPtr t = subscript(node);
      auto load = t->as<Load>();
      if (!load) {
        what = fmt::format("{} is a dict entry, not an element of a tensor",
                           display_name(t->as<Var>()->name));
      } else {
        bool sliced = false;
        for (const auto& i : load->indices) sliced = sliced || i->as<Slice>();
        if (!sliced) return t;
        what = "a slice is several elements; update each in a loop";
      }
    } else if (node_type(node) == "Name") {
      what = fmt::format("'{}' is a name, not an element of a tensor (a local or a scalar "
                         "cannot be updated atomically; a shape-(1,) tensor is updated as {}[0])",
                         std::string(py::str(node.attr("id"))),
                         std::string(py::str(node.attr("id"))));
    } else {
      what = "it is not an element of a tensor";
    }
    fail_at(node, fmt::format("the first argument of parir.{} must be one tensor element with "
                              "one index per dimension, as in parir.{}(hist[b], 1): {}",
                              fn, fn, what));
  }

  ExprPtr target(const py::handle& node) {
    std::string t = node_type(node);
    if (t == "Name") return var(py::str(node.attr("id")), loc(node));
    if (t == "Subscript") return subscript(node);
    if (t == "Tuple" || t == "List")
      fail_at(node, "tuple assignment is not supported; assign each value separately");
    fail_at(node, "only names and tensor elements can be assigned to");
  }

  // ----- expressions ----------------------------------------------------------------------

  ExprPtr expr(const py::handle& node) {
    std::string t = node_type(node);
    Loc l = loc(node);
    if (t == "Constant") return constant(node);
    if (t == "Name") {
      // A name bound to parir.pi or math.pi (from math import pi) is the constant.
      if (std::string name = parir_name(node); name.rfind("math.", 0) == 0)
        return math_constant(name.substr(5), *src_, l);
      if (auto c = constants_.find(py::str(node.attr("id"))); c != constants_.end())
        return global_constant(node, c->second);
      return var(py::str(node.attr("id")), l);
    }
    if (t == "Attribute") {
      std::string name = parir_name(node);
      if (name == "inf") return float_imm(std::numeric_limits<double>::infinity(), l);
      if (name == "nan") return float_imm(std::numeric_limits<double>::quiet_NaN(), l);
      if (name == "pi") return float_imm(3.141592653589793, l);
      if (name == "e") return float_imm(2.718281828459045, l);
      if (name.rfind("math.", 0) == 0) return math_constant(name.substr(5), *src_, l);
      if (!name.empty()) fail_at(node, fmt::format("parir.{} cannot be used as a value", name));
      if (ExprPtr s = shape_attribute(node)) return s;
      fail_at(node, "attribute access is not supported in parir functions");
    }
    if (t == "Subscript") return subscript(node);
    if (t == "BinOp")
      return binary(binop(node.attr("op")), expr(node.attr("left")), expr(node.attr("right")), l);
    if (t == "UnaryOp") return unary(node);
    if (t == "BoolOp") {
      BinaryOp op = node_type(node.attr("op")) == "And" ? BinaryOp::And : BinaryOp::Or;
      py::list values = node.attr("values");
      ExprPtr acc = expr(values[0]);
      for (size_t i = 1; i < py::len(values); ++i) acc = binary(op, acc, expr(values[i]), l);
      return acc;
    }
    if (t == "Compare") return compare(node);
    if (t == "IfExp")
      return std::make_shared<Select>(expr(node.attr("test")), expr(node.attr("body")),
                                      expr(node.attr("orelse")), Type{}, l);
    if (t == "Call") return call(node);
    if (t == "Slice") fail_at(node, "a slice can only index a tensor, as in x[i, :]");
    fail_at(node, fmt::format("{} expressions are not supported in parir functions", t));
  }

  // A Python int as a weak int64, or from 2^63 to 2^64 - 1 (the constants of 64-bit hashes,
  // 0x9E3779B97F4A7C15) as a uint64, as C types a literal too large for its signed type;
  // nullptr when it fits neither.
  static ExprPtr integer_imm(const py::handle& v, Loc l) {
    try {
      return int_imm(v.cast<int64_t>(), l);
    } catch (const py::cast_error&) {
    }
    try {
      return int_imm(static_cast<int64_t>(v.cast<uint64_t>()), l, Type{ScalarType::U64, false});
    } catch (const py::cast_error&) {
      return nullptr;
    }
  }

  ExprPtr constant(const py::handle& node) {
    py::object v = node.attr("value");
    Loc l = loc(node);
    if (py::isinstance<py::bool_>(v)) return bool_imm(v.cast<bool>(), l);
    if (py::isinstance<py::int_>(v)) {
      if (ExprPtr i = integer_imm(v, l)) return i;
      fail_at(node, "integer literal does not fit in 64 bits (int64, or uint64 where it is "
                    "2^63 or more)");
    }
    if (py::isinstance<py::float_>(v)) return float_imm(v.cast<double>(), l);
    // None (a default, an argument of a called function) is the name no variable can have:
    // `p is None` of a parameter bound to it holds, and specialize_arguments rejects any other
    // use of it.
    if (v.is_none()) return var("None", l);
    fail_at(node, fmt::format("constants of type {} are not supported",
                              std::string(py::str(py::type::handle_of(v).attr("__name__")))));
  }

  // d['k'] of a dict argument d: the compiler's name "d.k" for that entry, or "" when `node`
  // is not indexed by a string.
  std::string dict_entry(const py::handle& node) const {
    py::handle base = node.attr("value"), key = node.attr("slice");
    if (node_type(key) != "Constant" || !py::isinstance<py::str>(key.attr("value"))) return "";
    if (node_type(base) != "Name")
      fail_at(node, "only dict arguments are indexed with strings, as in params['N']");
    std::string k = py::str(key.attr("value"));
    // The entry's name splits at its first dot (the dict's name has none), so keys may hold
    // dots, as a state_dict's 'fc1.weight' does.
    // The launch plan's signature line quotes the key and lists arguments between brackets
    // and commas: a key holding those characters could not be read back.
    if (k.empty() || k.find_first_of("'\"[](),\n\r") != std::string::npos)
      fail_at(node, fmt::format("the dict key '{}' cannot be used in a parir function; use keys "
                                "that are not empty and hold no quotes, brackets, parentheses, "
                                "commas or line breaks",
                                k));
    return std::string(py::str(base.attr("id"))) + "." + k;
  }

  // ----- shapes: x.shape[d], x.size(d), len(x), x.numel(), x.ndim, x.dim() --------------

  // The tensor that `node` names as the base of a shape query: "x" for x, "d.x" for d['x'];
  // "" for anything else.
  std::string tensor_name(const py::handle& node) const {
    if (node_type(node) == "Name" && parir_name(node).empty()) return py::str(node.attr("id"));
    if (node_type(node) == "Subscript") return dict_entry(node);
    return "";
  }

  ExprPtr shape_query(const std::string& tensor, TensorShape::Query q, const py::handle& node,
                      int dim = 0) {
    return std::make_shared<TensorShape>(tensor, q, dim, 0, loc(node));
  }

  // The literal dimension of x.shape[d] or x.size(d).
  int literal_dim(const py::handle& d, const py::handle& node, const char* what) {
    bool negative = node_type(d) == "UnaryOp" && node_type(d.attr("op")) == "USub";
    py::handle c = negative ? d.attr("operand") : d;
    if (node_type(c) != "Constant" || !py::isinstance<py::int_>(c.attr("value")) ||
        py::isinstance<py::bool_>(c.attr("value")))
      fail_at(node, fmt::format("the dimension in {} must be an integer literal, as in {}",
                                what, std::string(what) == "x.shape[d]" ? "x.shape[0]"
                                                                        : "x.size(0)"));
    int v = c.attr("value").cast<int>();
    return negative ? -v : v;
  }

  // `a, b = e1, e2` (a swap, `zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci`, or
  // `x[j], x[j + 1] = x[j + 1], x[j]`): as in Python, every value is computed before any target
  // is assigned, left to right. Each value goes to a temporary named after its target with a
  // prime (zr' is the new zr; no Python name holds a prime), then the targets take them. Empty
  // for any other statement.
  Body tuple_assignment(const py::handle& s) {
    if (node_type(s) != "Assign" || py::len(s.attr("targets")) != 1) return {};
    py::handle lhs = py::list(s.attr("targets"))[0], value = s.attr("value");
    const std::string kind = node_type(lhs);
    if (kind != "Tuple" && kind != "List") return {};
    py::list targets = lhs.attr("elts");
    if (node_type(value) == "Call") return unpacked_call(s, targets, value);
    if (node_type(value) != "Tuple" && node_type(value) != "List")
      fail_at(s, "a tuple can be assigned only from values written out (a, b = b, a) or from "
                 "a function that returns a tuple (a, b = f(x)); assign each value "
                 "separately");
    py::list values = value.attr("elts");
    if (py::len(values) != py::len(targets))
      fail_at(s, fmt::format("{} values are assigned to {} targets", py::len(values),
                             py::len(targets)));
    Body computed, taken;
    for (size_t k = 0; k < py::len(targets); ++k) {
      const std::string tk = node_type(targets[k]);
      if (!plain_target(targets[k]) || node_type(values[k]) == "Starred") fail_nested(targets[k]);
      if (sliced(targets[k]) || sliced(values[k]))
        fail_at(s, "a tuple assignment of slices (x[i, :], y[i, :] = y[i, :], x[i, :]) is not "
                   "supported; swap the elements in a loop over the slice");
      ExprPtr t = target(targets[k]);
      std::string base = tk == "Name" ? std::string(py::str(targets[k].attr("id")))
                                      : tensor_name(targets[k].attr("value"));
      std::replace(base.begin(), base.end(), '.', '_');  // a dict entry's "d.k": not an entry
      std::string temporary = fmt::format("{}'{}", base.empty() ? "tuple" : base, k);
      computed.push_back(
          std::make_shared<Assign>(var(temporary, loc(values[k])), expr(values[k]), loc(s)));
      taken.push_back(std::make_shared<Assign>(t, var(temporary, loc(targets[k])), loc(s)));
    }
    computed.insert(computed.end(), taken.begin(), taken.end());
    return computed;
  }

  // `a, b = f(x)` for a Python function f that returns a tuple (`return p, q`): one statement,
  // a call whose results go to the targets; `q, r = divmod(a, b)` is `a // b, a % b`.
  Body unpacked_call(const py::handle& s, const py::list& targets, const py::handle& value) {
    std::vector<ExprPtr> into;
    for (const auto& t : targets) {
      if (!plain_target(t)) fail_nested(t);
      if (sliced(t))
        fail_at(t, "a function's results can be unpacked into names and tensor elements, not "
                   "slices");
      into.push_back(target(t));
    }
    py::handle func = value.attr("func");
    if (node_type(func) == "Name" && std::string(py::str(func.attr("id"))) == "divmod")
      return divmod_assignment(s, into, value);
    ExprPtr call = expr(value);
    auto f = call->as<CallFunction>();
    if (!f)
      fail_at(value, "this call returns one value, which cannot be unpacked into several "
                     "targets; assign it to one name");
    return {std::make_shared<ExprStmt>(
        std::make_shared<CallFunction>(f->name, f->args, f->loc, std::move(into)), loc(s))};
  }

  // `q, r = divmod(a, b)`: both values computed before either target is assigned, as in Python.
  Body divmod_assignment(const py::handle& s, const std::vector<ExprPtr>& into,
                         const py::handle& value) {
    if (into.size() != 2 || py::len(value.attr("args")) != 2 ||
        py::len(value.attr("keywords")) != 0)
      fail_at(value, "divmod(a, b) takes two arguments and is unpacked into two targets, as in "
                     "q, r = divmod(a, b)");
    py::list args = value.attr("args");
    Loc l = loc(value);
    Body out;
    // Operands other than names and literals are computed once (they may call functions).
    auto operand = [&](const py::handle& e, const char* temporary) {
      const std::string t = node_type(e);
      if (t == "Name" || t == "Constant") return expr(e);
      out.push_back(std::make_shared<Assign>(var(temporary, loc(e)), expr(e), l));
      return var(temporary, loc(e));
    };
    ExprPtr a = operand(args[0], "divmod'a"), b = operand(args[1], "divmod'b");
    const char* names[] = {"divmod'0", "divmod'1"};
    out.push_back(
        std::make_shared<Assign>(var(names[0], l), binary(BinaryOp::FloorDiv, a, b, l), l));
    out.push_back(std::make_shared<Assign>(var(names[1], l), binary(BinaryOp::Mod, a, b, l), l));
    for (int k = 0; k < 2; ++k)
      out.push_back(std::make_shared<Assign>(into[k], var(names[k], l), loc(s)));
    return out;
  }

  // A target of a tuple assignment that is neither nested nor starred.
  static bool plain_target(const py::handle& t) {
    const std::string kind = node_type(t);
    return kind != "Starred" && kind != "Tuple" && kind != "List";
  }
  [[noreturn]] void fail_nested(const py::handle& t) {
    fail_at(t, "nested or starred tuple assignment is not supported; assign each value "
               "separately");
  }

  // Whether the node is a subscript with a slice among its indices (x[i, :], x[1:]).
  static bool sliced(const py::handle& node) {
    if (node_type(node) != "Subscript") return false;
    py::handle index = node.attr("slice");
    if (node_type(index) == "Slice") return true;
    if (node_type(index) != "Tuple") return false;
    for (const auto& e : index.attr("elts"))
      if (node_type(e) == "Slice") return true;
    return false;
  }

  // `m, n = x.shape` (or x.size()): one assignment per name; empty for any other statement.
  Body shape_unpacking(const py::handle& s) {
    if (node_type(s) != "Assign" || py::len(s.attr("targets")) != 1) return {};
    py::handle target = py::list(s.attr("targets"))[0], value = s.attr("value");
    if (node_type(target) != "Tuple" && node_type(target) != "List") return {};
    std::string tensor;
    if (node_type(value) == "Attribute" && std::string(py::str(value.attr("attr"))) == "shape")
      tensor = tensor_name(value.attr("value"));
    else if (node_type(value) == "Call" && node_type(value.attr("func")) == "Attribute" &&
             std::string(py::str(value.attr("func").attr("attr"))) == "size" &&
             py::len(value.attr("args")) == 0 && py::len(value.attr("keywords")) == 0)
      tensor = tensor_name(value.attr("func").attr("value"));
    if (tensor.empty()) return {};
    py::list names = target.attr("elts");
    Body out;
    for (size_t k = 0; k < py::len(names); ++k) {
      if (node_type(names[k]) != "Name")
        fail_at(names[k], "the sizes of a shape can only be unpacked into names, as in "
                          "m, n = x.shape");
      auto size = std::make_shared<TensorShape>(tensor, TensorShape::Query::Dim, int(k), 0,
                                                loc(value), int(py::len(names)));
      out.push_back(std::make_shared<Assign>(var(py::str(names[k].attr("id")), loc(names[k])),
                                             size, loc(s)));
    }
    return out;
  }

  // x.ndim, and x.shape on its own (which is a tuple): nullptr for other attributes.
  ExprPtr shape_attribute(const py::handle& node) {
    std::string attr = py::str(node.attr("attr"));
    std::string tensor = tensor_name(node.attr("value"));
    if (tensor.empty() || (attr != "ndim" && attr != "shape")) return nullptr;
    if (attr == "shape")
      fail_at(node, fmt::format("{}.shape is a tuple, which parir functions do not have; use "
                                "one dimension at a time, as in {}.shape[0]",
                                display_name(tensor), display_name(tensor)));
    return shape_query(tensor, TensorShape::Query::Rank, node);
  }

  // x.size(d), x.numel(), x.dim(), len(x): nullptr for other calls.
  ExprPtr shape_call(const py::handle& node) {
    py::handle func = node.attr("func");
    py::list args = node.attr("args");
    if (py::len(node.attr("keywords")) > 0) return nullptr;
    if (node_type(func) == "Name" && std::string(py::str(func.attr("id"))) == "len" &&
        py::len(args) == 1) {
      std::string tensor = tensor_name(args[0]);
      if (tensor.empty()) fail_at(node, "len() is only defined for tensor arguments here");
      return shape_query(tensor, TensorShape::Query::Dim, node, 0);
    }
    if (node_type(func) != "Attribute") return nullptr;
    std::string tensor = tensor_name(func.attr("value"));
    std::string method = py::str(func.attr("attr"));
    if (tensor.empty() || (method != "size" && method != "numel" && method != "dim"))
      return nullptr;
    if (method == "size") {
      if (py::len(args) != 1)
        fail_at(node, fmt::format("{}.size() is a tuple, which parir functions do not have; "
                                  "use one dimension at a time, as in {}.size(0)",
                                  display_name(tensor), display_name(tensor)));
      return shape_query(tensor, TensorShape::Query::Dim, node,
                         literal_dim(args[0], node, "x.size(d)"));
    }
    if (py::len(args) != 0) fail_at(node, fmt::format("{}.{}() takes no arguments", tensor,
                                                      method));
    return shape_query(tensor, method == "numel" ? TensorShape::Query::Numel
                                                 : TensorShape::Query::Rank,
                       node);
  }

  ExprPtr subscript(const py::handle& node) {
    if (std::string entry = dict_entry(node); !entry.empty()) return var(entry, loc(node));
    if (py::handle v = node.attr("value");
        node_type(v) == "Attribute" && std::string(py::str(v.attr("attr"))) == "shape") {
      std::string tensor = tensor_name(v.attr("value"));
      if (!tensor.empty())
        return shape_query(tensor, TensorShape::Query::Dim, node,
                           literal_dim(node.attr("slice"), node, "x.shape[d]"));
    }
    py::handle base = node.attr("value");
    std::string tensor;
    if (node_type(base) == "Subscript") tensor = dict_entry(base);  // d['x'][i]
    if (tensor.empty() && node_type(base) == "Name") tensor = py::str(base.attr("id"));
    if (tensor.empty()) {
      expr(base);  // rejects an attribute, list, call, ... by name
      fail_at(node, "only tensor arguments can be indexed, as in x[i, j]");
    }
    py::handle sl = node.attr("slice");
    std::vector<ExprPtr> idx;
    auto index = [&](const py::handle& e) {
      if (node_type(e) != "Slice") return expr(e);
      auto part = [&](const char* name) {
        py::object p = e.attr(name);
        return p.is_none() ? ExprPtr() : expr(p);
      };
      return ExprPtr(std::make_shared<Slice>(part("lower"), part("upper"), part("step"), loc(e)));
    };
    if (node_type(sl) == "Tuple") {
      for (const auto& e : sl.attr("elts")) idx.push_back(index(e));
    } else {
      idx.push_back(index(sl));
    }
    return std::make_shared<Load>(tensor, std::move(idx), Type{}, loc(node));
  }

  BinaryOp binop(const py::handle& op) const {
    std::string t = node_type(op);
    if (t == "Add") return BinaryOp::Add;
    if (t == "Sub") return BinaryOp::Sub;
    if (t == "Mult") return BinaryOp::Mul;
    if (t == "Div") return BinaryOp::Div;
    if (t == "FloorDiv") return BinaryOp::FloorDiv;
    if (t == "Mod") return BinaryOp::Mod;
    if (t == "Pow") return BinaryOp::Pow;
    if (t == "BitAnd") return BinaryOp::BitAnd;
    if (t == "BitOr") return BinaryOp::BitOr;
    if (t == "BitXor") return BinaryOp::BitXor;
    if (t == "LShift") return BinaryOp::Shl;
    if (t == "RShift") return BinaryOp::Shr;
    throw Error(fmt::format("the operator {} is not supported", t));
  }

  ExprPtr unary(const py::handle& node) {
    std::string t = node_type(node.attr("op"));
    ExprPtr a = expr(node.attr("operand"));
    Loc l = loc(node);
    if (t == "UAdd") return a;
    if (t == "USub") {
      // Fold negative literals here so that -9223372036854775808 and -1.5 stay literals.
      if (auto i = a->as<IntImm>()) return int_imm(-i->value, l);
      if (auto f = a->as<FloatImm>()) return float_imm(-f->value, l);
      return std::make_shared<Unary>(UnaryOp::Neg, a, Type{}, l);
    }
    if (t == "Not") return std::make_shared<Unary>(UnaryOp::Not, a, Type{}, l);
    return std::make_shared<Unary>(UnaryOp::BitNot, a, Type{}, l);
  }

  // `x is None` and `x is not None` of an argument x (or a dict argument's entry, or a global,
  // whose value is known now).
  ExprPtr none_test(const py::handle& node) {
    auto is_none = [](const py::handle& e) {
      return node_type(e) == "Constant" && e.attr("value").is_none();
    };
    py::handle a = node.attr("left"), b = py::list(node.attr("comparators"))[0];
    if (is_none(a)) std::swap(a, b);
    const std::string t = node_type(a);
    const std::string name = t == "Name" ? std::string(py::str(a.attr("id")))
                             : t == "Subscript" ? dict_entry(a) : "";
    if (!is_none(b) || name.empty() || py::len(node.attr("ops")) != 1)
      fail_at(node, "`is` and `is not` compare an argument with None, as in "
                    "`if bias is not None:`");
    const bool negate = node_type(py::list(node.attr("ops"))[0]) == "IsNot";
    ExprPtr test = std::make_shared<IsNone>(name, loc(node));
    if (auto c = constants_.find(name); c != constants_.end())
      test = bool_imm(c->second.is_none(), loc(node));
    return negate ? std::make_shared<Unary>(UnaryOp::Not, test, Type{}, loc(node)) : test;
  }

  ExprPtr compare(const py::handle& node) {
    // a < b < c is (a < b) and (b < c), as in Python.
    Loc l = loc(node);
    py::list ops = node.attr("ops");
    py::list rest = node.attr("comparators");
    for (const auto& op : ops)
      if (node_type(op) == "Is" || node_type(op) == "IsNot") return none_test(node);
    ExprPtr left = expr(node.attr("left"));
    ExprPtr acc;
    for (size_t i = 0; i < py::len(ops); ++i) {
      std::string t = node_type(ops[i]);
      BinaryOp op;
      if (t == "Eq") op = BinaryOp::Eq;
      else if (t == "NotEq") op = BinaryOp::Ne;
      else if (t == "Lt") op = BinaryOp::Lt;
      else if (t == "LtE") op = BinaryOp::Le;
      else if (t == "Gt") op = BinaryOp::Gt;
      else if (t == "GtE") op = BinaryOp::Ge;
      else fail_at(node, fmt::format("the comparison `{}` is not supported", t));
      ExprPtr right = expr(rest[i]);
      ExprPtr cmp = binary(op, left, right, l);
      acc = acc ? binary(BinaryOp::And, acc, cmp, l) : cmp;
      left = right;
    }
    return acc;
  }

  // parir.sum(e), parir.sum(e, axis=k), and prod/min/max likewise: a reduction over slices;
  // parir.cumsum(e, axis=k, exclusive=True) and cumprod/cummin/cummax: a scan of one.
  ExprPtr slice_reduction(const py::handle& node, const std::string& name,
                          const std::vector<ExprPtr>& args) {
    const bool scan = name.rfind("cum", 0) == 0;
    const bool exclusive_allowed = name == "cumsum" || name == "cumprod";
    if (args.size() != 1)
      fail_at(node, fmt::format("parir.{} takes one expression (and optionally axis=k{})", name,
                                exclusive_allowed ? ", exclusive=True" : ""));
    std::optional<int> axis;
    bool exclusive = false;
    for (const auto& kw : node.attr("keywords")) {
      py::object arg = kw.attr("arg");
      py::handle v = kw.attr("value");
      if (exclusive_allowed && !arg.is_none() && std::string(py::str(arg)) == "exclusive") {
        if (node_type(v) != "Constant" || !py::isinstance<py::bool_>(v.attr("value")))
          fail_at(node, fmt::format("parir.{} takes exclusive= as True or False", name));
        exclusive = v.attr("value").cast<bool>();
        continue;
      }
      bool literal_int = node_type(v) == "Constant" && py::isinstance<py::int_>(v.attr("value")) &&
                         !py::isinstance<py::bool_>(v.attr("value"));
      bool negative = node_type(v) == "UnaryOp" && node_type(v.attr("op")) == "USub" &&
                      node_type(v.attr("operand")) == "Constant" &&
                      py::isinstance<py::int_>(v.attr("operand").attr("value"));
      // axis= as NumPy and Parir name it, or dim= as torch does.
      const std::string key = arg.is_none() ? "" : std::string(py::str(arg));
      if ((key != "axis" && key != "dim") || !(literal_int || negative))
        fail_at(node, fmt::format("parir.{} takes only the keyword{} axis= (or torch's dim=), an "
                                  "integer literal{}",
                                  name, exclusive_allowed ? "s" : "",
                                  exclusive_allowed ? ", and exclusive=True" : ""));
      if (axis)
        fail_at(node, fmt::format("parir.{} takes axis= or dim= (the same dimension), not both",
                                  name));
      axis = literal_int ? v.attr("value").cast<int>()
                         : -v.attr("operand").attr("value").cast<int>();
    }
    const std::string base = scan ? name.substr(3) : name;
    ReduceOp op = base == "sum"                        ? ReduceOp::Sum
                  : base == "prod"                     ? ReduceOp::Prod
                  : base == "min" || base == "argmin" ? ReduceOp::Min
                                                       : ReduceOp::Max;
    bool index = name == "argmax" || name == "argmin";
    return std::make_shared<SliceReduce>(op, args[0], axis, loc(node), index, scan, exclusive);
  }

  // parir.clamp(x, lo, hi), with lo or hi also as the keywords min= and max= (either may be
  // left out): max(x, lo) then min(.., hi), which keeps a NaN x NaN, as torch.clamp does.
  ExprPtr clamp(const py::handle& node, std::vector<ExprPtr> args) {
    ExprPtr bound[2];
    if (args.empty() || args.size() > 3)
      fail_at(node, "parir.clamp takes a value and the bounds min and max, as in "
                    "parir.clamp(x, 0.0, 1.0) or parir.clamp(x, min=0.0)");
    for (size_t i = 1; i < args.size(); ++i) bound[i - 1] = args[i];
    for (const auto& kw : node.attr("keywords")) {
      py::object arg = kw.attr("arg");
      std::string k = arg.is_none() ? "**" : std::string(py::str(arg));
      int which = k == "min" ? 0 : k == "max" ? 1 : -1;
      if (which < 0) fail_at(node, fmt::format("parir.clamp has no keyword argument '{}'", k));
      if (bound[which]) fail_at(node, fmt::format("parir.clamp is given {} twice", k));
      bound[which] = expr(kw.attr("value"));
    }
    if (!bound[0] && !bound[1])
      fail_at(node, "parir.clamp needs at least one of the bounds min and max");
    Loc l = loc(node);
    ExprPtr v = args[0];
    if (bound[0]) v = std::make_shared<Call>(Builtin::Max, std::vector<ExprPtr>{v, bound[0]},
                                             Type{}, l);
    if (bound[1]) v = std::make_shared<Call>(Builtin::Min, std::vector<ExprPtr>{v, bound[1]},
                                             Type{}, l);
    return v;
  }

  // float('inf'), float('-inf'), float('nan') (as Triton's and PyTorch's code writes
  // infinities): the float Python makes of the string; nullptr for any other call.
  ExprPtr float_of_string(const py::handle& node) const {
    py::handle func = node.attr("func");
    if (node_type(func) != "Name" || std::string(py::str(func.attr("id"))) != "float" ||
        !parir_name(func).empty() || py::len(node.attr("args")) != 1 ||
        py::len(node.attr("keywords")) != 0)
      return nullptr;
    py::handle arg = node.attr("args")[py::int_(0)];
    if (node_type(arg) != "Constant" || !py::isinstance<py::str>(arg.attr("value")))
      return nullptr;
    try {
      return float_imm(py::module_::import("builtins").attr("float")(arg.attr("value"))
                           .cast<double>(),
                       loc(node));
    } catch (const py::error_already_set&) {
      fail_at(node, fmt::format("float({}) is not a number",
                                std::string(py::repr(arg.attr("value")))));
    }
  }

  // "f" for a Name, "mod.f" for an attribute of a name; "" otherwise.
  static std::string dotted_name(const py::handle& node) {
    std::string t = node_type(node);
    if (t == "Name") return py::str(node.attr("id"));
    if (t != "Attribute") return "";
    std::string base = dotted_name(node.attr("value"));
    return base.empty() ? "" : base + "." + std::string(py::str(node.attr("attr")));
  }

  // A module-level number the function reads (SIGMA = 10.0 above it): its value, typed as the
  // literal would be; a NumPy integer (value, dtype name) typed as its dtype.
  ExprPtr global_constant(const py::handle& node, const py::object& value) {
    Loc l = loc(node);
    if (value.is_none())
      fail_at(node, fmt::format("the global '{}' is None, which parir code can only test, as in "
                                "`if {} is None:`",
                                std::string(py::str(node.attr("id"))),
                                std::string(py::str(node.attr("id")))));
    if (py::isinstance<py::tuple>(value)) {
      py::object number = value[py::int_(0)];
      ScalarType type = *scalar_type_from_name(py::str(value[py::int_(1)]));
      int64_t bits = type == ScalarType::U64 ? static_cast<int64_t>(number.cast<uint64_t>())
                                             : number.cast<int64_t>();
      return int_imm(bits, l, Type{type, false});
    }
    if (py::isinstance<py::bool_>(value)) return bool_imm(value.cast<bool>(), l);
    if (py::isinstance<py::float_>(value)) return float_imm(value.cast<double>(), l);
    if (ExprPtr i = integer_imm(value, l)) return i;
    fail_at(node, fmt::format("the global '{}' holds an integer that does not fit in 64 bits "
                              "(int64, or uint64 where it is 2^63 or more)",
                              std::string(py::str(node.attr("id")))));
  }

  // Python's round(x): the nearest integer, ties to even, as an int (parir.round keeps the
  // float type, as torch.round does).
  ExprPtr python_round(const py::handle& node, std::vector<ExprPtr> args) {
    if (args.size() != 1 || py::len(node.attr("keywords")) > 0)
      fail_at(node, "round() takes one argument here (rounding to digits is not supported); "
                    "parir.round(x) keeps the float type");
    auto rounded = std::make_shared<Call>(Builtin::Round, std::move(args), Type{}, loc(node));
    return std::make_shared<Cast>(rounded, Type{ScalarType::I64, false}, loc(node));
  }

  ExprPtr call(const py::handle& node) {
    if (ExprPtr s = shape_call(node)) return s;
    Loc l = loc(node);
    py::handle func = node.attr("func");
    if (ExprPtr f = float_of_string(node)) return f;
    std::vector<ExprPtr> args;
    for (const auto& a : node.attr("args")) {
      if (node_type(a) == "Starred") fail_at(a, "*args in calls are not supported");
      args.push_back(expr(a));
    }
    std::string name = parir_name(func);
    if (name.rfind("math.", 0) == 0)
      return math_call(name.substr(5), std::move(args), py::len(node.attr("keywords")) > 0, *src_,
                       l);
    // Python's own abs/min/max/float/int behave like their parir counterparts.
    if (name.empty() && node_type(func) == "Name") {
      std::string id = py::str(func.attr("id"));
      if (id == "abs" || id == "min" || id == "max") name = id;
      else if (id == "round") return python_round(node, std::move(args));
      else if (id == "float") name = "float64";
      else if (id == "int") name = "int64";
      else if (id == "bool") name = "bool";
    }
    if (name.empty()) {
      // A Python function (or an external), resolved and inlined when compiling.
      std::string callee = dotted_name(func);
      if (callee.empty())
        fail_at(node, "only functions named directly (f(x) or module.f(x)) can be called in a "
                      "parir function");
      if (py::len(node.attr("keywords")) > 0)
        fail_at(node, fmt::format("{}() is called with keyword arguments; parir passes "
                                  "arguments to functions by position only",
                                  callee));
      return std::make_shared<CallFunction>(callee, std::move(args), l);
    }
    if (name == "label")
      fail_at(node, "parir.label(...) must stand alone as a statement before what it labels");
    if (atomic_op_from_name(name))
      fail_at(node, fmt::format("parir.{} updates a tensor element and can only be a statement "
                                "of its own, parir.{}(t[i], v), or the whole right-hand side of "
                                "an assignment to a local, old = parir.{}(t[i], v); use the "
                                "local in the larger expression",
                                name, name, name));
    if (name == "cumsum" || name == "cumprod" || name == "cummin" || name == "cummax")
      return slice_reduction(node, name, args);
    bool reduction = name == "sum" || name == "prod" || name == "argmax" || name == "argmin" ||
                     ((name == "min" || name == "max") && args.size() == 1);
    if (reduction) return slice_reduction(node, name, args);
    if (name == "clamp") return clamp(node, std::move(args));
    if ((name == "min" || name == "max") && args.size() > 2 &&
        py::len(node.attr("keywords")) == 0) {
      // max(a, b, c) is max(max(a, b), c), as Python's max compares left to right.
      const Builtin b = name == "min" ? Builtin::Min : Builtin::Max;
      ExprPtr acc = args[0];
      for (size_t k = 1; k < args.size(); ++k)
        acc = std::make_shared<Call>(b, std::vector<ExprPtr>{acc, args[k]}, Type{}, l);
      return acc;
    }
    if (py::len(node.attr("keywords")) > 0)
      fail_at(node, "keyword arguments are not supported in this call");
    if (name == "pow" || name == "remainder" || name == "where") {
      if (args.size() != (name == "where" ? 3u : 2u))
        fail_at(node, fmt::format("parir.{} takes {} arguments, got {}", name,
                                  name == "where" ? 3 : 2, args.size()));
      if (name == "where") return std::make_shared<Select>(args[0], args[1], args[2], Type{}, l);
      return binary(name == "pow" ? BinaryOp::Pow : BinaryOp::Mod, args[0], args[1], l);
    }
    if (auto b = builtin_from_name(name)) {
      if (static_cast<int>(args.size()) != arity(*b))
        fail_at(node, fmt::format("parir.{} takes {} argument{}, got {}", name, arity(*b),
                                  arity(*b) == 1 ? "" : "s", args.size()));
      return std::make_shared<Call>(*b, std::move(args), Type{}, l);
    }
    if (auto st = scalar_type_from_name(name)) {
      if (args.size() != 1) fail_at(node, fmt::format("parir.{} takes one argument", name));
      return std::make_shared<Cast>(args[0], Type{*st, false}, l);
    }
    fail_at(node, fmt::format("parir.{} cannot be called in a parir function", name));
  }
};

}  // namespace

Function convert_function(const py::handle& function_def, std::shared_ptr<const SourceInfo> source,
                          const std::map<std::string, std::string>& aliases,
                          const std::map<std::string, py::object>& constants) {
  if (node_type(function_def) != "FunctionDef")
    throw Error("parir.jit expects a plain function definition (def ...), not " +
                node_type(function_def));
  Converter c(std::move(source), aliases, constants);
  return c.function(function_def);
}

}  // namespace parir::frontend
