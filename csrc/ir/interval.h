// The values an integer expression takes as the variables in it run over their ranges, for
// proving accesses in bounds (and, where the range is exact, out of bounds).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/ir.h"

namespace parir {

// The integers lo..hi (inclusive). `exact`: both ends are values the expression takes for some
// values of its variables, not just limits; only then does an end outside an extent prove an
// out-of-bounds access.
struct Range {
  int64_t lo = 0, hi = 0;
  bool exact = false;
};

// Ranges of the loop variables in scope. A variable with an exact range takes every value of it
// (it counts through it) independently of the others.
using RangeEnv = std::map<std::string, Range>;

// The range of an integer expression, or nullopt when it is not known (a local, a value read
// from memory, arithmetic that could overflow int64). Conservative: the expression never takes a
// value outside the range. Exact when the expression is built from constants and exact
// variables, each used once, by +, -, * by a constant, // by a positive constant, min and max.
std::optional<Range> range_of(const ExprPtr& e, const RangeEnv& env);

// The values the variable of a loop over range(lo, hi, step) takes (step not 0): exact, from the
// first to the last; nullopt when the loop never runs.
std::optional<Range> loop_variable_range(int64_t lo, int64_t hi, int64_t step);

}  // namespace parir
