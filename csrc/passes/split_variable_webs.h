#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Gives each web of a local variable a name of its own. A web is a set of assignments and reads
// that reaching definitions connect: a read joins every assignment that can reach it. Python
// lets one name hold an int in one part of a function and a float in another (`x = xyz // 4`
// used as an index in one branch, `x = 0.0` in another), or be a loop variable in one loop and
// a local elsewhere; renaming the webs apart lets infer_types type each on its own, so only a
// read that genuinely merges kinds is an error. The web that can see the value the name had on
// entry keeps the name; names that are only ever loop variables are left alone.
void split_variable_webs(SpecializedFunction& prog);

}  // namespace parir
