// Calls of Python functions from a jit function are inlined; calls of externals stay calls.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/ir.h"

namespace parir {

// What a name called in a function refers to: a Python function (decorated or not) or an
// external device function (parir.external).
struct Callee {
  std::shared_ptr<const Function> function;
  std::shared_ptr<const ExternFunction> external;
};

// For each function involved in a compilation (the jit function and everything it calls), the
// functions its calls name, as the Python front end resolved them in that function's globals.
using CalleeTable = std::map<const Function*, std::map<std::string, Callee>>;

// Returns `fn` with every CallFunction replaced: an external by an ExternCall; a function whose
// body is a single `return e` by e, its parameters replaced by the arguments; any other function
// by its body, placed before the statement that calls it, its locals renamed apart and its
// `return e` (at the end of the body, or at the end of both branches of a final if) turned into
// an assignment to the call's result. Tensor parameters are renamed to the tensor passed.
// A while condition that calls a function with statements is computed into a local before the
// loop and at the end of each iteration; in a conditional expression or and/or, the statements
// run under an if, only where Python evaluates them.
// Errors: unknown names, recursion, wrong argument counts, `return` in the jit function itself
// or in a loop of a called function.
Function inline_functions(const Function& fn, const CalleeTable& callees);

}  // namespace parir
