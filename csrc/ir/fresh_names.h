// Names for variables the compiler introduces, distinct from every name of the program.
#pragma once

#include <set>
#include <string>

#include "ir/kernel.h"
#include "ir/specialized_function.h"

namespace parir {

class FreshNames {
 public:
  explicit FreshNames(const SpecializedFunction& prog);
  // After the program was split into kernels: distinct from every name of the kernels too.
  FreshNames(const SpecializedFunction& prog, const Lowered& lowered);
  // "<base><n>" for the smallest n not in use; the name is then in use.
  std::string make(const std::string& base);

 private:
  std::set<std::string> used_;
  int next_ = 0;
};

}  // namespace parir
