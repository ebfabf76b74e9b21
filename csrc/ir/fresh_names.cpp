#include "ir/fresh_names.h"

#include "ir/queries.h"

namespace parir {
FreshNames::FreshNames(const SpecializedFunction& prog) {
  used_ = names_in(prog.body);
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
