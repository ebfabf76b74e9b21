#include "passes/specialize_arguments.h"

#include <functional>
#include <set>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

class Specialize : public IRMutator {
 public:
  Specialize(const SpecializedFunction& p, const std::map<std::string, ExprPtr>& scalars,
             const std::set<std::string>& dicts, const std::set<std::string>& nones)
      : prog_(p), scalars_(scalars), dicts_(dicts), nones_(nones) {}

 protected:
  const SpecializedFunction& prog_;
  const std::map<std::string, ExprPtr>& scalars_;
  const std::set<std::string>& dicts_;
  // The arguments that are None, but those the function assigns (`if scale is None: scale =
  // 1.0`), which are locals from there.
  const std::set<std::string>& nones_;

  // A name "d.k" (the front end's d['k']) of a dict argument d without the entry k.
  void check_dict_entry(const std::string& name, const Loc& loc) const {
    size_t dot = name.find('.');
    if (dot == std::string::npos) return;
    std::string dict = name.substr(0, dot);
    if (!dicts_.count(dict))
      prog_.error(loc, fmt::format("'{}' is not a dict argument of {}; only dict arguments are "
                                   "indexed with strings",
                                   dict, prog_.name));
    if (!prog_.is_tensor(name) && !scalars_.count(name) && !nones_.count(name))
      prog_.error(loc, fmt::format("the dict argument '{}' has no entry '{}'", dict,
                                   name.substr(dot + 1)));
  }

  // An argument that is None, used as a value: only `x is None` may read it.
  void check_not_none(const std::string& name, const Loc& loc) const {
    if (name == "None")
      prog_.error(loc, "None is used as a value here; parir code can only test arguments with "
                       "`x is None` (None passed to a called function included)");
    if (nones_.count(name))
      prog_.error(loc, fmt::format("argument '{}' is None in this call, and {}() uses it here; "
                                   "put its uses under `if {} is not None:`",
                                   display_name(name), prog_.name, display_name(name)));
  }

  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    check_dict_entry(n->name, n->loc);
    check_not_none(n->name, n->loc);
    if (dicts_.count(n->name))
      prog_.error(n->loc, fmt::format("the dict argument '{}' is used as a value; use its "
                                      "entries, as in {}['key']",
                                      n->name, n->name));
    if (prog_.is_tensor(n->name)) {
      // A shape-(1,) tensor passes a value without specializing on it: its name reads it.
      const TensorType& t = prog_.tensors.at(n->name);
      if (t.rank() == 1 && t.shape[0] == 1)
        return std::make_shared<Load>(n->name, std::vector<ExprPtr>{int_imm(0, n->loc)}, Type{},
                                      n->loc);
      prog_.error(n->loc, fmt::format("tensor '{}' is used as a value; index it with one index "
                                      "per dimension, as in {}[i] (only a shape-(1,) tensor "
                                      "stands for its one element)",
                                      display_name(n->name), display_name(n->name)));
    }
    auto it = scalars_.find(n->name);
    if (it == scalars_.end()) return self;
    // Keep the user's location on the literal for error messages.
    const ExprNode& v = *it->second;
    if (auto i = v.as<IntImm>()) return int_imm(i->value, n->loc, i->type);
    if (auto f = v.as<FloatImm>()) return float_imm(f->value, n->loc, f->type);
    return bool_imm(v.as<BoolImm>()->value, n->loc);
  }

  // A pointer parameter's argument is a tensor parameter, which stays a name (of the pointer).
  ExprPtr mutate_node(const ExternCall* n, const ExprPtr&) override {
    std::vector<ExprPtr> args;
    for (size_t i = 0; i < n->args.size(); ++i) {
      const ExprPtr& a = n->args[i];
      if (!n->fn->is_pointer(i)) {
        args.push_back(mutate(a));
        continue;
      }
      auto v = a->as<Var>();
      if (v) check_not_none(v->name, v->loc);
      if (!v || !prog_.is_tensor(v->name))
        prog_.error(a->loc, fmt::format("argument {} of the external {}() is a tensor "
                                        "(torch.Tensor), passed as a pointer to its first "
                                        "element: pass a tensor argument by its name, not {}",
                                        i + 1, n->fn->python_name, to_string(a)));
      check_dict_entry(v->name, v->loc);
      args.push_back(a);
    }
    return std::make_shared<ExternCall>(n->fn, std::move(args), n->loc);
  }

  ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
    check_dict_entry(n->tensor, n->loc);
    check_not_none(n->tensor, n->loc);
    auto t = prog_.tensors.find(n->tensor);
    if (t == prog_.tensors.end()) {
      if (scalars_.count(n->tensor))
        prog_.error(n->loc, fmt::format("argument '{}' is a scalar and cannot be indexed",
                                        n->tensor));
      prog_.error(n->loc, fmt::format("'{}' is not a tensor argument of {}; only tensor "
                                      "arguments can be indexed",
                                      n->tensor, prog_.name));
    }
    if (static_cast<int>(n->indices.size()) != t->second.rank())
      prog_.error(n->loc, fmt::format("tensor '{}' has {} dimension{} ({}) but is indexed with {} "
                                      "index{}; give one index per dimension",
                                      n->tensor, t->second.rank(), t->second.rank() == 1 ? "" : "s",
                                      t->second.str(), n->indices.size(),
                                      n->indices.size() == 1 ? "" : "es"));
    return IRMutator::mutate_node(n, self);
  }

  // x.shape[d], x.numel(), x.ndim: the value, a Python int as the same code in Python gives.
  ExprPtr mutate_node(const TensorShape* n, const ExprPtr&) override {
    check_not_none(n->tensor, n->loc);
    auto t = prog_.tensors.find(n->tensor);
    if (t == prog_.tensors.end())
      prog_.error(n->loc, fmt::format("'{}' is not a tensor argument of {}; only tensors have a "
                                      "shape",
                                      display_name(n->tensor), prog_.name));
    const std::vector<int64_t>& full = t->second.shape;
    PARIR_CHECK(n->skip <= static_cast<int>(full.size()), "a view of '{}' with {} indices",
                n->tensor, n->skip);
    std::vector<int64_t> shape(full.begin() + n->skip, full.end());
    const int rank = static_cast<int>(shape.size());
    if (n->unpacked_into && n->unpacked_into != rank)
      prog_.error(n->loc, fmt::format("'{}' has {} dimension{} ({}), unpacked into {} name{}",
                                      display_name(n->tensor), rank, rank == 1 ? "" : "s",
                                      n->skip ? "a view" : t->second.str(), n->unpacked_into,
                                      n->unpacked_into == 1 ? "" : "s"));
    int64_t value = rank;
    if (n->query == TensorShape::Query::Numel) {
      value = 1;
      for (int64_t e : shape) value *= e;
    } else if (n->query == TensorShape::Query::Dim) {
      if (n->dim < -rank || n->dim >= rank)
        prog_.error(n->loc, fmt::format("dimension {} is out of range for '{}', which has {} "
                                        "dimension{} ({})",
                                        n->dim, display_name(n->tensor), rank,
                                        rank == 1 ? "" : "s",
                                        n->skip ? "a view" : t->second.str()));
      value = shape[n->dim < 0 ? n->dim + rank : n->dim];
    }
    return int_imm(value, n->loc, Type{prog_.int_type, true});
  }

  // An assignment to a local (or an atomic update's result): not to an argument.
  void check_local_target(const Var& v, const Loc& loc) const {
    check_dict_entry(v.name, v.loc);
    if (prog_.is_tensor(v.name) || scalars_.count(v.name) || dicts_.count(v.name))
      prog_.error(loc, fmt::format("cannot assign to the argument '{}'; {}",
                                   display_name(v.name),
                                   prog_.is_tensor(v.name)
                                       ? "write to its elements instead, as in x[i] = ..."
                                       : "copy it into a local variable first"));
  }

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    if (auto v = n->target->as<Var>()) {
      check_local_target(*v, n->loc);
      // The target is a local: only the value is rewritten.
      ExprPtr value = mutate(n->value);
      if (value == n->value) return self;
      return std::make_shared<Assign>(n->target, value, n->loc, n->labels);
    }
    return IRMutator::mutate_node(n, self);
  }

  StmtPtr mutate_node(const AtomicUpdate* n, const StmtPtr& self) override {
    if (n->result) check_local_target(*n->result->as<Var>(), n->loc);
    ExprPtr t = mutate(n->target), c = mutate(n->compare), v = mutate(n->value);
    if (t == n->target && c == n->compare && v == n->value) return self;
    return std::make_shared<AtomicUpdate>(n->op, t, v, c, n->result, n->loc, n->labels);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (prog_.is_tensor(n->var) || scalars_.count(n->var))
      prog_.error(n->loc, fmt::format("the loop variable '{}' shadows an argument of {}; rename "
                                      "it",
                                      n->var, prog_.name));
    return IRMutator::mutate_node(n, self);
  }
};

// The items of the signature line for one argument: "x" for a tensor, "N=1000" for a Python
// number, "N=int32(5)" for a scalar with a type of its own, one item per entry of a dict
// ("d['k']=2.5"). Floats are printed so that they read back exactly.
void signature_items(const std::string& name, const ArgValue& a, std::vector<std::string>& out) {
  auto typed = [&](const std::string& v) {
    return a.scalar_type == ScalarType::Unknown
               ? v
               : fmt::format("{}({})", python_name(a.scalar_type), v);
  };
  switch (a.kind) {
    case ArgValue::Kind::Tensor:
      out.push_back(display_name(name));
      break;
    case ArgValue::Kind::Int:
      out.push_back(fmt::format("{}={}", display_name(name),
                                typed(is_unsigned_int(a.scalar_type)
                                          ? std::to_string(static_cast<uint64_t>(a.int_value))
                                          : std::to_string(a.int_value))));
      break;
    case ArgValue::Kind::Float:
      out.push_back(fmt::format("{}={}", display_name(name), typed(fmt::format("{}", a.float_value))));
      break;
    case ArgValue::Kind::Bool:
      out.push_back(fmt::format("{}={}", display_name(name), typed(a.bool_value ? "True" : "False")));
      break;
    case ArgValue::Kind::Dict:
      for (size_t k = 0; k < a.entries.size(); ++k)
        signature_items(name + "." + a.entry_keys[k], a.entries[k], out);
      break;
    case ArgValue::Kind::None:
      out.push_back(fmt::format("{}=None", display_name(name)));
      break;
  }
}

}  // namespace

SpecializedFunction specialize_arguments(const Function& fn, const std::vector<ArgValue>& args,
                             const CompileOptions& opts) {
  PARIR_CHECK(!contains(fn.body, ExprKind::CallFunction),
              "{}() still calls functions; call inline_functions before specialize_arguments",
              fn.name);
  PARIR_CHECK(!contains(fn.body, ExprKind::IsNone),
              "{}() still tests arguments for None; call fold_none_tests before "
              "specialize_arguments",
              fn.name);
  SpecializedFunction p;
  p.name = fn.name;
  p.source = fn.source;
  if (opts.force_int_size != ScalarType::Unknown) {
    if (!is_int(opts.force_int_size))
      fail("CompileOptions.force_int_size must be an integer type, not {}",
           python_name(opts.force_int_size));
    p.int_type = opts.force_int_size;
  }
  if (opts.force_float_size != ScalarType::Unknown) {
    if (!is_float(opts.force_float_size))
      fail("CompileOptions.force_float_size must be a floating-point type, not {}",
           python_name(opts.force_float_size));
    p.float_type = opts.force_float_size;
  }
  p.half_in_float32 = opts.half_in_float32;
  // A Python number is weak, of the default type; a 0-d tensor's value has its dtype.
  auto type_of = [&](const ArgValue& a, ScalarType dflt) {
    return a.scalar_type == ScalarType::Unknown ? Type{dflt, true} : Type{a.scalar_type, false};
  };
  if (args.size() != fn.params.size())
    fail("{}() takes {} argument{} ({}) but {} were given", fn.name, fn.params.size(),
         fn.params.size() == 1 ? "" : "s",
         [&] {
           std::vector<std::string> n;
           for (const auto& x : fn.params) n.push_back(x.name);
           return fmt::format("{}", fmt::join(n, ", "));
         }(),
         args.size());
  std::map<std::string, ExprPtr> scalars;
  std::set<std::string> dicts, nones;
  // Binds one argument (a dict entry "d.k" included) to its name.
  std::function<void(const std::string&, const ArgValue&)> bind = [&](const std::string& name,
                                                                      const ArgValue& a) {
    switch (a.kind) {
      case ArgValue::Kind::Int:
        scalars[name] = int_imm(a.int_value, {}, type_of(a, p.int_type));
        break;
      case ArgValue::Kind::Float:
        scalars[name] = float_imm(a.float_value, {}, type_of(a, p.float_type));
        break;
      case ArgValue::Kind::Bool:
        scalars[name] = bool_imm(a.bool_value);
        break;
      case ArgValue::Kind::Tensor:
        if (a.tensor.shape.size() != a.tensor.strides.size())
          fail("argument '{}': shape and strides differ in length", name);
        p.tensors[name] = a.tensor;
        p.tensor_params.push_back(name);
        break;
      case ArgValue::Kind::Dict:
        if (name.find('.') != std::string::npos)
          fail("argument '{}': a dict cannot hold another dict", display_name(name));
        dicts.insert(name);
        for (size_t k = 0; k < a.entries.size(); ++k)
          bind(name + "." + a.entry_keys[k], a.entries[k]);
        break;
      case ArgValue::Kind::None:
        nones.insert(name);
        break;
    }
  };
  for (size_t i = 0; i < args.size(); ++i) bind(fn.params[i].name, args[i]);
  // A scalar argument the function assigns (`decay = get_decay(step, decay, ...)`, as Python
  // allows) is a local that starts at the argument's value.
  Body prelude;
  const std::set<std::string> assigned = assigned_locals(fn.body);
  for (const Param& param : fn.params) {
    auto it = scalars.find(param.name);
    if (it == scalars.end() || !assigned.count(param.name)) continue;
    prelude.push_back(std::make_shared<Assign>(var(param.name, param.loc), it->second, param.loc));
    scalars.erase(it);
  }
  std::vector<std::string> sig;
  for (size_t i = 0; i < args.size(); ++i) signature_items(fn.params[i].name, args[i], sig);
  p.signature = fmt::format("{}({})", fn.name, fmt::join(sig, ", "));
  for (const std::string& name : assigned) nones.erase(name);
  p.body = Specialize(p, scalars, dicts, nones).mutate(fn.body);
  p.body.insert(p.body.begin(), prelude.begin(), prelude.end());
  return p;
}

}  // namespace parir
