#include "ir/fresh_names.h"

#include "ir/queries.h"

namespace parir {
FreshNames::FreshNames(const SpecializedFunction& prog) {
  used_ = names_in(prog.body);
  used_.insert(prog.tensor_params.begin(), prog.tensor_params.end());
  for (const auto& [name, type] : prog.locals) used_.insert(name);
}

FreshNames::FreshNames(const SpecializedFunction& prog, const Lowered& lowered)
    : FreshNames(prog) {
  for (const auto& k : lowered.kernels) {
    std::set<std::string> names = names_in(Body{k.root});
    used_.insert(names.begin(), names.end());
  }
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
