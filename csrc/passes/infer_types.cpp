#include "passes/infer_types.h"

#include <cmath>
#include <set>

#include "ir/arith.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

constexpr Type kBool{ScalarType::Bool, false};
constexpr Type kIndex{ScalarType::I64, false};

bool same_scalar(Type a, Type b) { return a.scalar == b.scalar; }

// Converts `e` (already typed) to type t: literals are retyped in place, anything else is cast.
ExprPtr coerce(const ExprPtr& e, Type t) {
  if (!t.known() || same_scalar(e->type, t)) return e;
  // Constants convert now, as the GPU would convert them.
  if (auto i = e->as<IntImm>()) {
    if (is_float(t.scalar)) {
      // A uint64 of 2^63 or more holds its bits in int64: convert its unsigned value.
      const double v = i->type.scalar == ScalarType::U64
                           ? static_cast<double>(static_cast<uint64_t>(i->value))
                           : static_cast<double>(i->value);
      return float_imm(convert_float(v, t.scalar), e->loc, t);
    }
    if (is_int(t.scalar)) return int_imm(convert_int(i->value, t.scalar), e->loc, t);
    return bool_imm(i->value != 0, e->loc);
  }
  if (auto f = e->as<FloatImm>()) {
    if (is_float(t.scalar)) return float_imm(convert_float(f->value, t.scalar), e->loc, t);
  }
  return std::make_shared<Cast>(e, Type{t.scalar, e->type.weak && t.weak}, e->loc);
}

// Python truthiness: a number is true when non-zero.
ExprPtr truth(const ExprPtr& e) {
  if (is_bool(e->type.scalar)) return e;
  ExprPtr zero = is_float(e->type.scalar) ? float_imm(0.0, e->loc, e->type)
                                          : int_imm(0, e->loc, e->type);
  return binary(BinaryOp::Ne, e, zero, e->loc, kBool);
}

std::string not_defined(const std::string& name) {
  return fmt::format("name '{}' is not defined: parir functions see their arguments, loop "
                     "variables and locals, and the module's numbers (bools, ints, floats) "
                     "bound when the function was decorated",
                     name);
}

class Typer : public IRMutator {
 public:
  Typer(const SpecializedFunction& p, std::map<std::string, Type>& locals, bool final_pass)
      : prog_(p), locals_(locals), final_(final_pass), loop_var_{p.int_type, true} {}

 protected:
  const SpecializedFunction& prog_;
  std::map<std::string, Type>& locals_;
  bool final_;                        // the pass that keeps its result and reports all errors
  std::map<std::string, int> loop_vars_;  // in scope, with nesting count
  std::set<std::string> assigned_;  // locals assigned on every path to here (final pass)
  std::map<std::string, Loc> first_strong_;  // where a local first got a strong type
  const Type loop_var_;  // loop variables are weak ints of the default int type
  const ExternCall* statement_call_ = nullptr;  // the call an ExprStmt being typed makes

  [[noreturn]] void error(const Loc& l, const std::string& msg) const { prog_.error(l, msg); }

  // Bool arithmetic computes in the default int type, as True + True == 2 in Python.
  Type numeric(Type t) const { return is_bool(t.scalar) ? Type{prog_.int_type, t.weak} : t; }
  // A float computed from integers (true division, exp of an int) has the default float type.
  Type default_float(bool weak) const { return Type{prog_.float_type, weak}; }

  // ----- expressions ----------------------------------------------------------------------

  // Literals are weak int64 and float64 as the front end reads them; they take the default
  // types (CompileOptions.force_int_size, force_float_size).
  ExprPtr mutate_node(const IntImm* n, const ExprPtr& self) override {
    if (n->type == Type{ScalarType::I64, true} && prog_.int_type != ScalarType::I64)
      return int_imm(n->value, n->loc, Type{prog_.int_type, true});
    return self;
  }
  ExprPtr mutate_node(const FloatImm* n, const ExprPtr& self) override {
    if (n->type == Type{ScalarType::F64, true} && prog_.float_type != ScalarType::F64)
      return float_imm(n->value, n->loc, default_float(true));
    return self;
  }
  ExprPtr mutate_node(const BoolImm*, const ExprPtr& self) override { return self; }

  ExprPtr mutate_node(const Var* n, const ExprPtr&) override {
    if (loop_vars_.count(n->name)) return var(n->name, n->loc, loop_var_);
    auto it = locals_.find(n->name);
    if (it == locals_.end() && !final_) return var(n->name, n->loc, Type{});
    if (it == locals_.end())
      error(n->loc, not_defined(n->name));
    if (final_ && !assigned_.count(n->name))
      error(n->loc, fmt::format("local variable '{}' may be used before it is assigned: it is "
                                "not assigned on every path to here (a branch or a loop that "
                                "might not run). Assign it a value first",
                                prog_.user_name(n->name)));
    return var(n->name, n->loc, it->second);
  }

  // An element read as a value: with CompileOptions.half_in_float32, a float16 or bfloat16
  // element is read as float32 (exactly), so what is computed from it computes in float32.
  ExprPtr mutate_node(const Load* n, const ExprPtr&) override {
    ExprPtr load = typed_load(*n);
    if (prog_.half_in_float32 && is_half(load->type.scalar))
      return std::make_shared<Cast>(load, Type{ScalarType::F32, false}, n->loc);
    return load;
  }

  // An element with its type: read as it is, or written (an assignment's target).
  ExprPtr typed_load(const Load& l) {
    const Load* n = &l;
    std::vector<ExprPtr> idx;
    for (const auto& i : n->indices) {
      ExprPtr t = mutate(i);
      if (t->type.known() && !is_int(t->type.scalar) && !is_bool(t->type.scalar))
        error(i->loc, fmt::format("index into '{}' must be an integer, not {}", n->tensor,
                                  python_name(t->type.scalar)));
      idx.push_back(coerce(t, kIndex));
    }
    Type elem{prog_.tensors.at(n->tensor).elem, false};
    return std::make_shared<Load>(n->tensor, std::move(idx), elem, n->loc);
  }

  ExprPtr mutate_node(const Unary* n, const ExprPtr&) override {
    ExprPtr a = mutate(n->a);
    if (!a->type.known()) return std::make_shared<Unary>(n->op, a, Type{}, n->loc);
    switch (n->op) {
      case UnaryOp::Not:
        return std::make_shared<Unary>(UnaryOp::Not, truth(a), kBool, n->loc);
      case UnaryOp::Neg: {
        Type t = numeric(a->type);
        return std::make_shared<Unary>(UnaryOp::Neg, coerce(a, t), t, n->loc);
      }
      case UnaryOp::BitNot:
        // On bool, ~ is logical negation, as for PyTorch bool tensors.
        if (is_bool(a->type.scalar)) return std::make_shared<Unary>(UnaryOp::Not, a, kBool, n->loc);
        if (!is_int(a->type.scalar))
          error(n->loc, fmt::format("~ needs an integer or bool operand, not {}",
                                    python_name(a->type.scalar)));
        return std::make_shared<Unary>(UnaryOp::BitNot, a, a->type, n->loc);
    }
    return a;
  }

  ExprPtr mutate_node(const Binary* n, const ExprPtr&) override {
    ExprPtr a = mutate(n->a), b = mutate(n->b);
    if (!a->type.known() || !b->type.known()) return binary(n->op, a, b, n->loc, Type{});
    if (is_logical(n->op)) return binary(n->op, truth(a), truth(b), n->loc, kBool);
    Type t = promote(a->type, b->type);
    if (is_comparison(n->op)) return binary(n->op, coerce(a, t), coerce(b, t), n->loc, kBool);
    if (is_bitwise(n->op)) {
      for (const auto& x : {a, b})
        if (is_float(x->type.scalar))
          error(n->loc, fmt::format("the operator {} needs integer or bool operands, not {}",
                                    python_symbol(n->op), python_name(x->type.scalar)));
      if (is_bool(t.scalar) && (n->op == BinaryOp::Shl || n->op == BinaryOp::Shr)) t = numeric(t);
      return binary(n->op, coerce(a, t), coerce(b, t), n->loc, t);
    }
    t = numeric(t);
    Type result = t;
    if (n->op == BinaryOp::Div && !is_float(t.scalar)) {
      // True division of integers gives a float, as in Python.
      t = result = default_float(t.weak);
    } else if (n->op == BinaryOp::Pow && !is_float(t.scalar)) {
      auto e = b->as<IntImm>();
      if (e && e->value < 0) t = result = default_float(t.weak);  // 2 ** -1 == 0.5
    }
    return binary(n->op, coerce(a, t), coerce(b, t), n->loc, result);
  }

  ExprPtr mutate_node(const Call* n, const ExprPtr&) override {
    std::vector<ExprPtr> args;
    Type t{ScalarType::Unknown, true};
    bool first = true;
    for (const auto& x : n->args) {
      args.push_back(mutate(x));
      t = first ? args.back()->type : promote(t, args.back()->type);
      first = false;
    }
    if (!t.known()) return std::make_shared<Call>(n->fn, std::move(args), Type{}, n->loc);
    Type result;
    switch (n->fn) {
      case Builtin::Min:
      case Builtin::Max:
      case Builtin::Sign:  // as torch.sign: of a bool, a bool
        result = t;
        break;
      case Builtin::Abs:
      case Builtin::Fmod:
      case Builtin::Floor:  // as torch.floor: of an integer, the integer itself
      case Builtin::Ceil:
      case Builtin::Round:
      case Builtin::Trunc:
        result = t = numeric(t);
        break;
      case Builtin::IsNan:  // a test of the value as it is
      case Builtin::IsInf:
      case Builtin::IsFinite:
        result = kBool;
        break;
      default:  // exp, log, ... compute in floating point
        if (!is_float(t.scalar)) t = default_float(t.weak);
        result = t;
    }
    for (auto& x : args) x = coerce(x, t);
    return std::make_shared<Call>(n->fn, std::move(args), result, n->loc);
  }

  // An external's arguments convert to its parameter types, as in a C++ call; a pointer's is
  // the tensor's name, typed with its element type. One that returns nothing (void) can only
  // be called as a statement.
  ExprPtr mutate_node(const ExternCall* n, const ExprPtr&) override {
    if (n->fn->result == ScalarType::Unknown && n != statement_call_)
      prog_.error(n->loc, fmt::format("the external {}() returns nothing (-> None); call it as "
                                      "a statement of its own",
                                      n->fn->python_name));
    std::vector<ExprPtr> args;
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (n->fn->is_pointer(i)) {
        const std::string& t = n->args[i]->as<Var>()->name;
        args.push_back(var(t, n->args[i]->loc, Type{prog_.tensors.at(t).elem, false}));
        continue;
      }
      ExprPtr a = mutate(n->args[i]);
      args.push_back(a->type.known() ? coerce(a, Type{n->fn->params[i], false}) : a);
    }
    return std::make_shared<ExternCall>(n->fn, std::move(args), n->loc);
  }

  StmtPtr mutate_node(const ExprStmt* n, const StmtPtr& self) override {
    statement_call_ = n->value->as<ExternCall>();
    StmtPtr out = IRMutator::mutate_node(n, self);
    statement_call_ = nullptr;
    return out;
  }

  ExprPtr mutate_node(const Cast* n, const ExprPtr&) override {
    ExprPtr a = mutate(n->a);
    if (a->type.known() && same_scalar(a->type, n->type)) {
      // parir.float32(x) of a float32 value is x, but it makes a weak literal strong.
      if (auto f = a->as<FloatImm>()) return float_imm(f->value, a->loc, n->type);
      if (auto i = a->as<IntImm>()) return int_imm(i->value, a->loc, n->type);
      if (!a->type.weak) return a;
    }
    if (a->as<IntImm>() || a->as<FloatImm>()) {
      ExprPtr c = coerce(a, n->type);
      if (c->as<IntImm>() || c->as<FloatImm>())
        return c->as<IntImm>() ? int_imm(c->as<IntImm>()->value, c->loc, n->type)
                               : float_imm(c->as<FloatImm>()->value, c->loc, n->type);
    }
    return std::make_shared<Cast>(a, n->type, n->loc);
  }

  ExprPtr mutate_node(const Select* n, const ExprPtr&) override {
    ExprPtr c = mutate(n->cond), a = mutate(n->a), b = mutate(n->b);
    if (!c->type.known() || !a->type.known() || !b->type.known())
      return std::make_shared<Select>(c, a, b, Type{}, n->loc);
    Type t = promote(a->type, b->type);
    return std::make_shared<Select>(truth(c), coerce(a, t), coerce(b, t), t, n->loc);
  }

  // ----- statements -----------------------------------------------------------------------

  // Records the type of a value assigned to a local, unifying it with earlier assignments.
  void assign_local(const std::string& name, Type t, const Loc& l) {
    if (!t.known()) return;
    Type& cur = locals_[name];
    if (!cur.known()) {
      cur = t;
    } else if (!same_scalar(cur, t)) {
      bool cat_differs = is_float(cur.scalar) != is_float(t.scalar) ||
                         is_bool(cur.scalar) != is_bool(t.scalar);
      if (!cur.weak && !t.weak && cat_differs) {
        auto f = first_strong_.find(name);
        error(l, fmt::format("local variable '{}' is assigned a {} value here, but a {} value{}; "
                             "convert one of them explicitly (e.g. parir.{}(...))",
                             prog_.user_name(name), python_name(t.scalar), python_name(cur.scalar),
                             f != first_strong_.end() && f->second.known()
                                 ? fmt::format(" on line {}", f->second.line)
                                 : std::string(" elsewhere"),
                             python_name(cur.scalar)));
      }
      cur = promote(cur, t);
    } else {
      cur.weak = cur.weak && t.weak;
    }
    if (!t.weak && !first_strong_.count(name)) first_strong_[name] = l;
  }

  StmtPtr mutate_node(const Assign* n, const StmtPtr&) override {
    ExprPtr value = mutate(n->value);
    if (auto v = n->target->as<Var>()) {
      if (loop_vars_.count(v->name))
        error(n->loc, fmt::format("cannot assign to the loop variable '{}'", v->name));
      assign_local(v->name, value->type, n->loc);
      assigned_.insert(v->name);
      Type t = locals_[v->name];
      return std::make_shared<Assign>(var(v->name, v->loc, t), coerce(value, t), n->loc,
                                      n->labels);
    }
    ExprPtr target = typed_load(*n->target->as<Load>());
    return std::make_shared<Assign>(target, coerce(value, target->type), n->loc, n->labels);
  }

  // The value (and atomic_cas's expected value) convert to the element's type, as a store
  // converts; the result local receives a value of the element's type.
  StmtPtr mutate_node(const AtomicUpdate* n, const StmtPtr&) override {
    ExprPtr target = typed_load(*n->target->as<Load>());
    check_atomic_element(*n, target->type.scalar);
    ExprPtr compare = n->compare ? coerce(mutate(n->compare), target->type) : nullptr;
    ExprPtr value = coerce(mutate(n->value), target->type);
    ExprPtr result;
    if (n->result) {
      auto v = n->result->as<Var>();
      if (loop_vars_.count(v->name))
        error(n->loc, fmt::format("cannot assign to the loop variable '{}'", v->name));
      assign_local(v->name, target->type, n->loc);
      assigned_.insert(v->name);
      result = var(v->name, v->loc, locals_[v->name]);
    }
    return std::make_shared<AtomicUpdate>(n->op, target, value, compare, result, n->loc,
                                          n->labels);
  }

  // Arithmetic updates need numbers, bitwise ones integers or bools (as the operators do).
  void check_atomic_element(const AtomicUpdate& n, ScalarType elem) const {
    const std::string& tensor = n.target->as<Load>()->tensor;
    bool bitwise = n.op == AtomicOp::And || n.op == AtomicOp::Or || n.op == AtomicOp::Xor;
    bool arithmetic = n.op == AtomicOp::Add || n.op == AtomicOp::Sub || n.op == AtomicOp::Min ||
                      n.op == AtomicOp::Max;
    if (bitwise && is_float(elem))
      error(n.loc, fmt::format("parir.{} needs an integer or bool element, but '{}' is a {} "
                               "tensor",
                               python_name(n.op), display_name(tensor), python_name(elem)));
    if (arithmetic && is_bool(elem))
      error(n.loc, fmt::format("parir.{} needs a numeric element, but '{}' is a bool tensor; "
                               "atomic_or, atomic_and, atomic_xor, atomic_exchange and "
                               "atomic_cas update bools",
                               python_name(n.op), display_name(tensor)));
  }

  ExprPtr bound(const ExprPtr& e, const char* what) {
    ExprPtr t = mutate(e);
    if (t->type.known() && !is_int(t->type.scalar) && !is_bool(t->type.scalar))
      error(e->loc, fmt::format("range() {} must be an integer, not {}", what,
                                python_name(t->type.scalar)));
    return coerce(t, kIndex);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr&) override {
    ExprPtr lo = bound(n->lo, "start"), hi = bound(n->hi, "stop"), step = bound(n->step, "step");
    if (auto s = step->as<IntImm>(); s && s->value == 0)
      error(n->step->loc, "range() step must not be zero");
    if (locals_.count(n->var))
      error(n->loc, fmt::format("'{}' is used both as a loop variable and as a local variable; "
                                "rename one of them",
                                n->var));
    ++loop_vars_[n->var];
    std::set<std::string> before = assigned_;
    Body body = mutate(n->body);
    assigned_ = before;  // the body may run zero times
    if (--loop_vars_[n->var] == 0) loop_vars_.erase(n->var);
    return std::make_shared<For>(n->var, lo, hi, step, std::move(body), n->loc, n->labels, n->par);
  }

  StmtPtr mutate_node(const While* n, const StmtPtr&) override {
    ExprPtr c = mutate(n->cond);
    std::set<std::string> before = assigned_;
    Body body = mutate(n->body);
    assigned_ = before;  // the body may run zero times
    // The condition is evaluated again after the body: re-type it now that the body's
    // assignments have been seen (they may give a local its type).
    c = mutate(n->cond);
    return std::make_shared<While>(c->type.known() ? truth(c) : c, std::move(body), n->loc,
                                   n->labels);
  }

  StmtPtr mutate_node(const If* n, const StmtPtr&) override {
    ExprPtr c = mutate(n->cond);
    std::set<std::string> before = assigned_;
    Body t = mutate(n->then_body);
    std::set<std::string> after_then = std::move(assigned_);
    assigned_ = before;
    Body e = mutate(n->else_body);
    // Assigned after the if: on both paths.
    std::set<std::string> both;
    for (const auto& name : after_then)
      if (assigned_.count(name)) both.insert(name);
    assigned_ = std::move(both);
    return std::make_shared<If>(c->type.known() ? truth(c) : c, std::move(t), std::move(e),
                                n->loc, n->labels);
  }
};

// The first read of a name that is neither a local nor a loop variable anywhere in the body.
const Var* first_undefined_read(const Body& body, const std::map<std::string, Type>& locals) {
  class Find : public IRVisitor {
   public:
    Find(const std::map<std::string, Type>& l, std::set<std::string> loop_vars)
        : locals_(l), bound_(std::move(loop_vars)) {}
    const Var* found = nullptr;

   protected:
    void visit_node(const Var* n) override {
      if (!found && !locals_.count(n->name) && !bound_.count(n->name)) found = n;
    }
    const std::map<std::string, Type>& locals_;
    std::set<std::string> bound_;
  } find(locals, assigned_names(body));
  find.visit(body);
  return find.found;
}

}  // namespace

void infer_types(SpecializedFunction& prog) {
  PARIR_CHECK(!contains(prog.body, ExprKind::Slice) && !contains(prog.body, ExprKind::SliceReduce),
              "{}() still has slices; call lower_slices before infer_types", prog.name);
  // Locals get their types from the values assigned to them, which may mention other locals:
  // iterate until nothing changes (each round can only widen a type, so this terminates).
  std::map<std::string, Type> locals;
  for (int round = 0; round < 16; ++round) {
    std::map<std::string, Type> before = locals;
    Typer(prog, locals, /*final_pass=*/false).mutate(prog.body);
    if (locals == before) break;
  }
  for (const auto& [name, t] : locals)
    if (!t.known()) {
      // Most often a value comes from a name defined nowhere (a module's global constant):
      // that is the error to report, at the read.
      if (const Var* undefined = first_undefined_read(prog.body, locals))
        prog.error(undefined->loc, not_defined(undefined->name));
      fail("{}: the type of local variable '{}' cannot be inferred: every assignment to it "
           "depends on its own value",
           prog.source->filename, prog.user_name(name));
    }
  for (const auto& name : prog.wide_accumulators)
    if (auto it = locals.find(name); it != locals.end())
      if (ScalarType t = it->second.scalar; is_bool(t) || is_int(t))
        if (t != ScalarType::U64) it->second = Type{ScalarType::I64, false};
  prog.body = Typer(prog, locals, /*final_pass=*/true).mutate(prog.body);
  prog.locals = locals;
}

}  // namespace parir
