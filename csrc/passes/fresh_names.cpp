#include "passes/fresh_names.h"

#include "ir/visitor.h"

namespace parir {
namespace {

class Names : public IRVisitor {
 public:
  std::set<std::string>& names;
  explicit Names(std::set<std::string>& n) : names(n) {}

 protected:
  void visit_node(const Var* n) override { names.insert(n->name); }
  void visit_node(const Load* n) override {
    names.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    names.insert(n->var);
    if (n->reduction) names.insert(n->reduction->acc);
    IRVisitor::visit_node(n);
  }
};

}  // namespace

FreshNames::FreshNames(const Program& prog) {
  Names n(used_);
  n.visit(prog.body);
  used_.insert(prog.tensor_params.begin(), prog.tensor_params.end());
  for (const auto& [name, type] : prog.locals) used_.insert(name);
}

std::string FreshNames::make(const std::string& base) {
  std::string name;
  do {
    name = fmt::format("{}{}", base, next_++);
  } while (used_.count(name));
  used_.insert(name);
  return name;
}

}  // namespace parir
