#include "codegen/plan_text.h"

#include <cctype>
#include <optional>

#include "codegen/cuda_names.h"
#include "ir/visitor.h"

namespace parir {

// ---------------------------------------------------------------------------------------------
// Printing

namespace {

// The plan names parameters and host variables by their C++ identifiers (cuda_names.h), so that
// every name is one word of letters, digits and underscores, whatever the program called it;
// the parser maps them back. Kernels are named as the source defines them.
class RenameVars : public IRMutator {
 public:
  explicit RenameVars(std::string (*rename)(const std::string&)) : rename_(rename) {}

 protected:
  ExprPtr mutate_node(const Var* v, const ExprPtr& self) override {
    std::string name = rename_(v->name);
    return name == v->name ? self : var(name, v->loc, v->type);
  }

 private:
  std::string (*rename_)(const std::string&);
};

std::string identifier(const std::string& name) {
  static const CudaNames names;
  return name == kBoundsBufferArg ? name : names(name);
}

std::string expr_text(const ExprPtr& e) { return to_string(RenameVars(identifier).mutate(e)); }

// `bare`: a launch's text alone, without the line's prefix (after "persistent ").
void print_steps(const std::vector<PlanStep>& steps, int indent, std::string& out,
                 bool bare = false) {
  std::string pad = bare ? "" : "//@ " + std::string(indent * 2, ' ');
  // A loop or branch whose body does nothing on the host (its statements all folded away)
  // still needs an indented line, as in Python.
  if (steps.empty() && indent > 0 && !bare) out += pad + "pass\n";
  for (const auto& s : steps) {
    switch (s.kind) {
      case PlanStep::Kind::For:
        for (const auto& p : s.persistent) {
          out += pad + "persistent ";
          print_steps({p}, 0, out, /*bare=*/true);
        }
        out += fmt::format("{}for {} in range({}, {}, {}):\n", pad, identifier(s.var),
                           expr_text(s.lo), expr_text(s.hi), expr_text(s.step));
        print_steps(s.body, indent + 1, out);
        break;
      case PlanStep::Kind::If:
        out += fmt::format("{}if {}:\n", pad, expr_text(s.cond));
        print_steps(s.body, indent + 1, out);
        if (!s.else_body.empty()) {
          out += pad + "else:\n";
          print_steps(s.else_body, indent + 1, out);
        }
        break;
      case PlanStep::Kind::While:
        out += fmt::format("{}while {}:\n", pad, expr_text(s.cond));
        print_steps(s.body, indent + 1, out);
        break;
      case PlanStep::Kind::Assign:
        out += fmt::format("{}{} = {}\n", pad, identifier(s.var), expr_text(s.value));
        break;
      case PlanStep::Kind::Launch:
        out += fmt::format("{}launch {} grid({}) block({})", pad, s.kernel, s.grid, s.block);
        if (s.shared_bytes)
          out += fmt::format(" shared({}{})", s.shared_bytes,
                             s.shared_if_available ? " if available" : "");
        if (s.cluster > 1) out += fmt::format(" cluster({})", s.cluster);
        std::vector<std::string> args;
        for (const auto& a : s.args) args.push_back(identifier(a));
        out += fmt::format(" ({})", fmt::join(args, ", "));
        if (!s.aligned_kernel.empty()) out += fmt::format(" aligned({})", s.aligned_kernel);
        out += "\n";
        break;
    }
  }
}

}  // namespace

std::string print_plan(const LaunchPlan& plan) {
  std::string out = fmt::format("//@ parir.plan {}{}\n", plan.function,
                                plan.cuda_graphs == CudaGraphs::On    ? " cuda_graphs"
                                : plan.cuda_graphs == CudaGraphs::Off ? " no_cuda_graphs"
                                                                      : "");
  if (!plan.signature.empty()) out += fmt::format("//@ signature {}\n", plan.signature);
  if (!plan.location.empty()) out += fmt::format("//@ location {}\n", plan.location);
  for (const auto& d : plan.includes) out += fmt::format("//@ include {}\n", d);
  for (const auto& f : plan.extra_flags) out += fmt::format("//@ flag {}\n", f);
  for (const auto& l : plan.link_libraries) out += fmt::format("//@ link {}\n", l);
  for (const auto& p : plan.params)
    out += fmt::format("//@ param {} {} strides({}) {}\n", identifier(p.name), p.type.str(),
                       fmt::join(p.type.strides, ", "), p.written ? "inout" : "in");
  for (const auto& t : plan.temporaries)
    out += fmt::format("//@ temp {} {}\n", identifier(t.name), t.type.str());
  for (const auto& a : plan.apart) {
    std::vector<std::string> others;
    for (const auto& o : a.others) others.push_back(identifier(o));
    out += fmt::format("//@ apart {} from {}\n", identifier(a.tensor), fmt::join(others, ", "));
  }
  for (const auto& c : plan.bounds_sites)
    out += fmt::format("//@ check {} {} {} {} {} {} {}\n", c.id, c.kernel, identifier(c.tensor),
                       c.dim,
                       c.extent, c.line, c.file);
  print_steps(plan.steps, 0, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parsing: a line-based reader for the statements and a small recursive-descent parser for the
// expressions.

namespace {

struct Line {
  int number;  // in the CUDA source, for errors
  int indent;  // in spaces
  std::string text;
};

[[noreturn]] void bad(const Line& l, const std::string& why) {
  fail("launch plan, line {} of the CUDA source: {}: '{}'", l.number, why, l.text);
}

class ExprParser {
 public:
  ExprParser(const Line& line, const std::string& text) : line_(line), s_(text) {}

  ExprPtr parse_all() {
    ExprPtr e = parse_conditional();
    skip_ws();
    if (pos_ != s_.size()) bad(line_, "unexpected text in expression");
    return e;
  }

 private:
  const Line& line_;
  const std::string& s_;
  size_t pos_ = 0;

  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(const std::string& tok) {
    skip_ws();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    // Keywords must not run into a following name character.
    if (std::isalpha(static_cast<unsigned char>(tok.back())) && pos_ + tok.size() < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[pos_ + tok.size()])) || s_[pos_ + tok.size()] == '_'))
      return false;
    pos_ += tok.size();
    return true;
  }
  ExprPtr mk(BinaryOp op, ExprPtr a, ExprPtr b) {
    Type t = is_comparison(op) || is_logical(op) ? Type{ScalarType::Bool, false}
                                                 : Type{ScalarType::I64, false};
    return binary(op, std::move(a), std::move(b), Loc{}, t);
  }

  // `a if cond else b`
  ExprPtr parse_conditional() {
    ExprPtr e = parse_or();
    if (!eat("if")) return e;
    ExprPtr cond = parse_or();
    if (!eat("else")) bad(line_, "expected 'else'");
    ExprPtr other = parse_conditional();
    return std::make_shared<Select>(std::move(cond), std::move(e), std::move(other),
                                    Type{ScalarType::I64, false}, Loc{});
  }
  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (eat("or")) e = mk(BinaryOp::Or, e, parse_and());
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (eat("and")) e = mk(BinaryOp::And, e, parse_not());
    return e;
  }
  ExprPtr parse_not() {
    if (eat("not"))
      return std::make_shared<Unary>(UnaryOp::Not, parse_not(), Type{ScalarType::Bool, false},
                                     Loc{});
    return parse_cmp();
  }
  ExprPtr parse_cmp() {
    ExprPtr e = parse_bits();
    static const std::pair<const char*, BinaryOp> ops[] = {
        {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne}, {"<=", BinaryOp::Le},
        {">=", BinaryOp::Ge}, {"<", BinaryOp::Lt},  {">", BinaryOp::Gt}};
    for (const auto& [tok, op] : ops) {
      size_t save = pos_;
      if (eat(tok)) {
        // "<<" and ">>" are shifts, handled lower down.
        if ((op == BinaryOp::Lt || op == BinaryOp::Gt) && pos_ < s_.size() && s_[pos_] == tok[0]) {
          pos_ = save;
          continue;
        }
        return mk(op, e, parse_bits());
      }
    }
    return e;
  }
  ExprPtr parse_bits() {
    ExprPtr e = parse_shift();
    for (;;) {
      if (eat("&")) e = mk(BinaryOp::BitAnd, e, parse_shift());
      else if (eat("|")) e = mk(BinaryOp::BitOr, e, parse_shift());
      else if (eat("^")) e = mk(BinaryOp::BitXor, e, parse_shift());
      else return e;
    }
  }
  ExprPtr parse_shift() {
    ExprPtr e = parse_sum();
    for (;;) {
      if (eat("<<")) e = mk(BinaryOp::Shl, e, parse_sum());
      else if (eat(">>")) e = mk(BinaryOp::Shr, e, parse_sum());
      else return e;
    }
  }
  ExprPtr parse_sum() {
    ExprPtr e = parse_product();
    for (;;) {
      if (eat("+")) e = mk(BinaryOp::Add, e, parse_product());
      else if (eat("-")) e = mk(BinaryOp::Sub, e, parse_product());
      else return e;
    }
  }
  ExprPtr parse_product() {
    ExprPtr e = parse_unary();
    for (;;) {
      if (eat("*")) e = mk(BinaryOp::Mul, e, parse_unary());
      else if (eat("//")) e = mk(BinaryOp::FloorDiv, e, parse_unary());
      else if (eat("%")) e = mk(BinaryOp::Mod, e, parse_unary());
      else return e;
    }
  }
  ExprPtr parse_unary() {
    for (auto [tok, op] : {std::pair{"-", UnaryOp::Neg}, std::pair{"~", UnaryOp::BitNot}})
      if (eat(tok))
        return std::make_shared<Unary>(op, parse_unary(), Type{ScalarType::I64, false}, Loc{});
    return parse_power();
  }
  ExprPtr parse_power() {  // right-associative, tighter than a unary minus on its left
    ExprPtr e = parse_atom();
    if (eat("**")) return mk(BinaryOp::Pow, e, parse_unary());
    return e;
  }
  // parir.NAME(ARGS): a conversion to a scalar type, or a builtin (min, max, abs).
  ExprPtr parse_call() {
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    const std::string name = s_.substr(start, pos_ - start);
    if (!eat("(")) bad(line_, "expected '(' after parir." + name);
    std::vector<ExprPtr> args;
    if (!eat(")")) {
      do args.push_back(parse_conditional());
      while (eat(","));
      if (!eat(")")) bad(line_, "missing ')'");
    }
    if (auto type = scalar_type_from_name(name); type && args.size() == 1)
      return std::make_shared<Cast>(args[0], Type{*type, false}, Loc{});
    if (auto fn = builtin_from_name(name))
      return std::make_shared<Call>(*fn, std::move(args), Type{ScalarType::I64, false}, Loc{});
    bad(line_, "unknown function parir." + name);
  }
  ExprPtr parse_atom() {
    skip_ws();
    if (eat("(")) {
      ExprPtr e = parse_conditional();
      if (!eat(")")) bad(line_, "missing ')'");
      return e;
    }
    if (eat("parir.")) return parse_call();
    if (eat("True")) return bool_imm(true);
    if (eat("False")) return bool_imm(false);
    size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      try {
        return int_imm(std::stoll(s_.substr(start, pos_ - start)), Loc{},
                       Type{ScalarType::I64, false});
      } catch (const std::out_of_range&) {
        bad(line_, "integer out of range");
      }
    }
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (pos_ == start) bad(line_, "expected a number or a name");
    return var(program_name(s_.substr(start, pos_ - start)), Loc{}, Type{ScalarType::I64, false});
  }
};

ExprPtr parse_expr(const Line& l, const std::string& text) { return ExprParser(l, text).parse_all(); }

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "name(a, b, c)" after the given prefix word -> the parenthesized text.
std::string group(const Line& l, const std::string& text, size_t& pos, const std::string& word) {
  size_t open = text.find(word + "(", pos);
  if (open == std::string::npos) bad(l, "expected " + word + "(...)");
  size_t close = text.find(')', open);
  if (close == std::string::npos) bad(l, "missing ')'");
  pos = close + 1;
  return text.substr(open + word.size() + 1, close - open - word.size() - 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  for (auto& item : split(s, ',')) {
    item = trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The first word of `s` (up to a space) and the rest after it.
std::pair<std::string, std::string> first_word(const std::string& s) {
  std::string t = trim(s);
  size_t sp = t.find(' ');
  if (sp == std::string::npos) return {t, ""};
  return {t.substr(0, sp), trim(t.substr(sp + 1))};
}

int64_t to_int(const Line& l, const std::string& s) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    if (used != s.size()) bad(l, "expected an integer, got '" + s + "'");
    return v;
  } catch (const std::logic_error&) {
    bad(l, "expected an integer, got '" + s + "'");
  }
}

PlanParam parse_param(const Line& l) {
  // param NAME TYPE[d0, d1] strides(s0, s1) in|inout
  PlanParam p;
  auto [name, rest] = first_word(l.text.substr(6));
  p.name = program_name(name);
  size_t lb = rest.find('['), rb = rest.find(']');
  if (p.name.empty() || lb == std::string::npos || rb == std::string::npos)
    bad(l, "expected 'param NAME TYPE[SHAPE] strides(...) in|inout'");
  auto elem = scalar_type_from_name(rest.substr(0, lb));
  if (!elem) bad(l, "unknown element type '" + rest.substr(0, lb) + "'");
  p.type.elem = *elem;
  for (const auto& d : split_commas(rest.substr(lb + 1, rb - lb - 1)))
    p.type.shape.push_back(to_int(l, d));
  size_t pos = rb;
  for (const auto& s : split_commas(group(l, rest, pos, "strides")))
    p.type.strides.push_back(to_int(l, s));
  if (p.type.strides.size() != p.type.shape.size()) bad(l, "shape and strides differ in length");
  std::string mode = trim(rest.substr(pos));
  if (mode != "in" && mode != "inout") bad(l, "expected 'in' or 'inout' at the end");
  p.written = mode == "inout";
  return p;
}

ApartTensors parse_apart(const Line& l) {
  // apart NAME from NAME, NAME
  ApartTensors a;
  auto [name, rest] = first_word(l.text.substr(6));
  auto [from, others] = first_word(rest);
  a.tensor = program_name(name);
  if (a.tensor.empty() || from != "from") bad(l, "expected 'apart NAME from NAME, ...'");
  for (const auto& o : split_commas(others)) a.others.push_back(program_name(o));
  if (a.others.empty()) bad(l, "expected 'apart NAME from NAME, ...'");
  return a;
}

PlanParam parse_temporary(const Line& l) {
  // temp NAME TYPE[d0, d1]: contiguous
  PlanParam p;
  auto [name, rest] = first_word(l.text.substr(5));
  p.name = program_name(name);
  size_t lb = rest.find('['), rb = rest.find(']');
  if (p.name.empty() || lb == std::string::npos || rb == std::string::npos ||
      !trim(rest.substr(rb + 1)).empty())
    bad(l, "expected 'temp NAME TYPE[SHAPE]'");
  auto elem = scalar_type_from_name(rest.substr(0, lb));
  if (!elem) bad(l, "unknown element type '" + rest.substr(0, lb) + "'");
  p.type.elem = *elem;
  for (const auto& d : split_commas(rest.substr(lb + 1, rb - lb - 1))) {
    p.type.shape.push_back(to_int(l, d));
    if (p.type.shape.back() < 0) bad(l, "a negative extent");
  }
  p.type.strides.assign(p.type.shape.size(), 1);
  for (size_t d = p.type.shape.size(); d-- > 1;)
    p.type.strides[d - 1] = p.type.strides[d] * p.type.shape[d];
  p.written = true;
  return p;
}

BoundsSite parse_check(const Line& l) {
  // check ID KERNEL TENSOR DIM EXTENT LINE FILE (the file name may hold spaces)
  std::vector<std::string> words;
  std::string rest = trim(l.text.substr(6));
  for (int i = 0; i < 6; ++i) {
    auto [word, more] = first_word(rest);
    if (word.empty()) bad(l, "expected 'check ID KERNEL TENSOR DIM EXTENT LINE FILE'");
    words.push_back(word);
    rest = more;
  }
  if (rest.empty()) bad(l, "expected 'check ID KERNEL TENSOR DIM EXTENT LINE FILE'");
  BoundsSite c;
  c.id = static_cast<int>(to_int(l, words[0]));
  c.kernel = words[1];
  c.tensor = program_name(words[2]);
  c.dim = static_cast<int>(to_int(l, words[3]));
  c.extent = to_int(l, words[4]);
  c.line = static_cast<int>(to_int(l, words[5]));
  c.file = rest;
  return c;
}

PlanStep parse_launch(const Line& l) {
  // launch NAME grid(G) block(B) [shared(S)] [cluster(C)] (args) [aligned(NAME)]
  PlanStep s;
  s.kind = PlanStep::Kind::Launch;
  s.kernel = first_word(l.text.substr(7)).first;
  size_t pos = l.text.find(s.kernel) + s.kernel.size();
  s.grid = to_int(l, trim(group(l, l.text, pos, "grid")));
  s.block = to_int(l, trim(group(l, l.text, pos, "block")));
  if (l.text.find("shared(", pos) != std::string::npos) {
    std::string bytes = trim(group(l, l.text, pos, "shared"));
    const std::string optional = " if available";
    if (bytes.size() > optional.size() &&
        bytes.compare(bytes.size() - optional.size(), optional.size(), optional) == 0) {
      s.shared_if_available = true;
      bytes = trim(bytes.substr(0, bytes.size() - optional.size()));
    }
    s.shared_bytes = to_int(l, bytes);
  }
  if (l.text.find("cluster(", pos) != std::string::npos)
    s.cluster = to_int(l, trim(group(l, l.text, pos, "cluster")));
  if (s.cluster < 1 || s.cluster > 16 || (s.cluster > 1 && s.grid % s.cluster != 0))
    bad(l, "a cluster holds 1 to 16 blocks and divides the grid");
  for (const auto& a : split_commas(group(l, l.text, pos, ""))) s.args.push_back(program_name(a));
  if (l.text.find("aligned(", pos) != std::string::npos)
    s.aligned_kernel = trim(group(l, l.text, pos, "aligned"));
  if (s.kernel.empty() || s.grid < 0 || s.block < 1 || s.block > 1024 || s.shared_bytes < 0)
    bad(l, "expected 'launch KERNEL grid(G) block(B) [shared(S [if available])] (ARGS)' with "
           "1 <= B <= 1024 and S >= 0");
  return s;
}

class StepParser {
 public:
  explicit StepParser(const std::vector<Line>& lines) : lines_(lines) {}

  std::vector<PlanStep> block(int indent) {
    std::vector<PlanStep> out;
    while (i_ < lines_.size() && lines_[i_].indent >= indent) {
      const Line& l = lines_[i_];
      if (l.indent != indent) bad(l, "unexpected indentation");
      if (l.text == "pass") {
        ++i_;
      } else if (l.text.rfind("launch ", 0) == 0) {
        out.push_back(parse_launch(l));
        ++i_;
      } else if (l.text.rfind("persistent launch ", 0) == 0) {
        // The loop on the next line as one kernel.
        Line launch = l;
        launch.text = l.text.substr(11);
        PlanStep fused = parse_launch(launch);
        ++i_;
        if (i_ >= lines_.size() || lines_[i_].indent != indent ||
            lines_[i_].text.rfind("for ", 0) != 0)
          bad(l, "a 'persistent launch' line comes right before the for loop it runs");
        out.push_back(for_step(lines_[i_], indent));
        out.back().persistent.push_back(std::move(fused));
      } else if (l.text.rfind("for ", 0) == 0) {
        out.push_back(for_step(l, indent));
      } else if (l.text.rfind("if ", 0) == 0) {
        out.push_back(if_step(l, indent));
      } else if (l.text.rfind("while ", 0) == 0) {
        out.push_back(while_step(l, indent));
      } else if (assigned_name(l.text)) {
        out.push_back(assign_step(l));
        ++i_;
      } else {
        bad(l, "expected 'for', 'if', 'while', 'NAME = VALUE', 'launch', 'persistent launch' "
               "or 'pass'");
      }
    }
    return out;
  }

 private:
  const std::vector<Line>& lines_;
  size_t i_ = 0;

  std::vector<PlanStep> nested(const Line& l, int indent) {
    ++i_;
    if (i_ >= lines_.size() || lines_[i_].indent <= indent) bad(l, "expected an indented body");
    return block(lines_[i_].indent);
  }

  PlanStep for_step(const Line& l, int indent) {
    // for VAR in range(LO, HI, STEP):
    PlanStep s;
    s.kind = PlanStep::Kind::For;
    size_t in = l.text.find(" in range(");
    if (in == std::string::npos || l.text.back() != ':' || l.text[l.text.size() - 2] != ')')
      bad(l, "expected 'for VAR in range(LO, HI, STEP):'");
    s.var = program_name(trim(l.text.substr(4, in - 4)));
    std::string args = l.text.substr(in + 10, l.text.size() - in - 12);
    // Split at top-level commas only.
    std::vector<std::string> parts;
    int depth = 0;
    std::string cur;
    for (char c : args) {
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (c == ',' && depth == 0) {
        parts.push_back(trim(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    parts.push_back(trim(cur));
    if (parts.size() != 3) bad(l, "range() in a launch plan takes exactly three arguments");
    s.lo = parse_expr(l, parts[0]);
    s.hi = parse_expr(l, parts[1]);
    s.step = parse_expr(l, parts[2]);
    s.body = nested(l, indent);
    return s;
  }

  // The NAME of a line "NAME = VALUE", or null.
  static std::optional<std::string> assigned_name(const std::string& text) {
    size_t eq = text.find(" = ");
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    std::string name = text.substr(0, eq);
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
    return name;
  }

  PlanStep assign_step(const Line& l) {
    PlanStep s;
    s.kind = PlanStep::Kind::Assign;
    const std::string name = *assigned_name(l.text);
    s.var = program_name(name);
    s.value = parse_expr(l, l.text.substr(name.size() + 3));
    return s;
  }

  // "KEYWORD COND:" (if, while) and the indented body after it.
  PlanStep conditional(const Line& l, int indent, PlanStep::Kind kind, const std::string& keyword) {
    PlanStep s;
    s.kind = kind;
    if (l.text.back() != ':') bad(l, "expected ':' at the end");
    const size_t start = keyword.size() + 1;
    s.cond = parse_expr(l, l.text.substr(start, l.text.size() - start - 1));
    s.body = nested(l, indent);
    return s;
  }

  PlanStep while_step(const Line& l, int indent) {
    return conditional(l, indent, PlanStep::Kind::While, "while");
  }

  PlanStep if_step(const Line& l, int indent) {
    PlanStep s = conditional(l, indent, PlanStep::Kind::If, "if");
    if (i_ < lines_.size() && lines_[i_].indent == indent && lines_[i_].text == "else:")
      s.else_body = nested(lines_[i_], indent);
    return s;
  }
};

}  // namespace

LaunchPlan parse_plan(const std::string& source) {
  LaunchPlan plan;
  std::vector<Line> steps;
  int number = 0;
  bool header = false;
  for (const std::string& raw : split(source, '\n')) {
    ++number;
    if (raw.rfind("//@", 0) != 0) continue;
    std::string body = raw.substr(3);
    if (!body.empty() && body[0] == ' ') body = body.substr(1);
    size_t ind = body.find_first_not_of(' ');
    if (ind == std::string::npos) continue;
    Line l{number, static_cast<int>(ind), trim(body)};
    if (l.text.rfind("parir.plan ", 0) == 0) {
      if (header) bad(l, "a second 'parir.plan' header");
      header = true;
      auto [name, flags] = first_word(l.text.substr(11));
      plan.function = name;
      if (flags == "cuda_graphs") plan.cuda_graphs = CudaGraphs::On;
      else if (flags == "no_cuda_graphs") plan.cuda_graphs = CudaGraphs::Off;
      else if (!flags.empty())
        bad(l, "unknown plan flag '" + flags + "' (expected cuda_graphs or no_cuda_graphs)");
    } else if (l.text.rfind("signature ", 0) == 0) {
      plan.signature = trim(l.text.substr(10));
    } else if (l.text.rfind("location ", 0) == 0) {
      plan.location = trim(l.text.substr(9));
    } else if (l.text.rfind("include ", 0) == 0) {
      plan.includes.push_back(trim(l.text.substr(8)));
    } else if (l.text.rfind("flag ", 0) == 0) {
      plan.extra_flags.push_back(trim(l.text.substr(5)));
    } else if (l.text.rfind("link ", 0) == 0) {
      plan.link_libraries.push_back(trim(l.text.substr(5)));
    } else if (l.text.rfind("param ", 0) == 0) {
      plan.params.push_back(parse_param(l));
    } else if (l.text.rfind("temp ", 0) == 0) {
      plan.temporaries.push_back(parse_temporary(l));
    } else if (l.text.rfind("apart ", 0) == 0) {
      plan.apart.push_back(parse_apart(l));
    } else if (l.text.rfind("check ", 0) == 0) {
      plan.bounds_sites.push_back(parse_check(l));
      if (plan.bounds_sites.back().id != static_cast<int>(plan.bounds_sites.size()))
        bad(l, "check lines are numbered 1, 2, 3, ... in order");
    } else {
      steps.push_back(l);
    }
  }
  if (!header)
    fail("the CUDA source has no launch plan: expected '//@ parir.plan NAME' and the '//@' lines "
         "that print_compiled writes at its end");
  StepParser parser(steps);
  plan.steps = parser.block(steps.empty() ? 0 : steps.front().indent);
  resolve_launch_args(plan);
  return plan;
}

}  // namespace parir
