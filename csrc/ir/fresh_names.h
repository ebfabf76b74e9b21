// Names for variables the compiler introduces, distinct from every name of the program.
#pragma once

#include <set>
#include <string>

#include "ir/specialized_function.h"

namespace parir {

class FreshNames {
 public:
  explicit FreshNames(const SpecializedFunction& prog);
  // "<base><n>" for the smallest n not in use; the name is then in use.
  std::string make(const std::string& base);
  // Names in use elsewhere (a kernel's body, after the program was split into kernels).
  void reserve(const std::set<std::string>& names) { used_.insert(names.begin(), names.end()); }

 private:
  std::set<std::string> used_;
  int next_ = 0;
};

}  // namespace parir
