#include "passes/specialize_arguments.h"

#include "ir/visitor.h"

namespace parir {
namespace {

class Specialize : public IRMutator {
 public:
  Specialize(const Program& p, const std::map<std::string, ExprPtr>& scalars)
      : prog_(p), scalars_(scalars) {}

 protected:
  const Program& prog_;
  const std::map<std::string, ExprPtr>& scalars_;

  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    if (prog_.is_tensor(n->name))
      prog_.error(n->loc, fmt::format("tensor '{}' is used as a value; index it with one index "
                                      "per dimension, as in {}[i]",
                                      n->name, n->name));
    auto it = scalars_.find(n->name);
    if (it == scalars_.end()) return self;
    // Keep the user's location on the literal for error messages.
    const ExprNode& v = *it->second;
    if (auto i = v.as<IntImm>()) return int_imm(i->value, n->loc, i->type);
    if (auto f = v.as<FloatImm>()) return float_imm(f->value, n->loc, f->type);
    return bool_imm(v.as<BoolImm>()->value, n->loc);
  }

  ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
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

  StmtPtr mutate_node(const Assign* n, const StmtPtr& self) override {
    if (auto v = n->target->as<Var>()) {
      if (prog_.is_tensor(v->name) || scalars_.count(v->name))
        prog_.error(n->loc, fmt::format("cannot assign to the argument '{}'; {}", v->name,
                                        prog_.is_tensor(v->name)
                                            ? "write to its elements instead, as in x[i] = ..."
                                            : "copy it into a local variable first"));
      // The target is a local: only the value is rewritten.
      ExprPtr value = mutate(n->value);
      if (value == n->value) return self;
      return std::make_shared<Assign>(n->target, value, n->loc, n->labels);
    }
    return IRMutator::mutate_node(n, self);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    if (prog_.is_tensor(n->var) || scalars_.count(n->var))
      prog_.error(n->loc, fmt::format("the loop variable '{}' shadows an argument of {}; rename "
                                      "it",
                                      n->var, prog_.name));
    return IRMutator::mutate_node(n, self);
  }
};

}  // namespace

Program specialize_arguments(const Function& fn, const std::vector<ArgValue>& args) {
  Program p;
  p.name = fn.name;
  p.source = fn.source;
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
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& name = fn.params[i].name;
    const ArgValue& a = args[i];
    switch (a.kind) {
      case ArgValue::Kind::Int:
        scalars[name] = int_imm(a.int_value);
        break;
      case ArgValue::Kind::Float:
        scalars[name] = float_imm(a.float_value);
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
    }
  }
  p.body = Specialize(p, scalars).mutate(fn.body);
  return p;
}

}  // namespace parir
