// Python `ast` objects -> the untyped IR, once per function at decoration time.
//
// The Python side parses the function's source with `ast.parse` and hands the FunctionDef node
// here together with the source text (for error messages) and the names under which the user
// reached parir in the function's globals (`import parir_torch as parir` gives {"parir":
// "module"}; `from parir_torch import label` gives {"label": "label"}). Every construct outside
// the supported language is rejected here, by name, with the user's file and line.
#pragma once

#include <map>
#include <string>

#include <pybind11/pybind11.h>

#include "ir/ir.h"

namespace parir::frontend {

// aliases: a global name -> "module" when it is the parir_torch module itself, or the public
// name of the parir_torch function it refers to ("label", "exp", "float32", "gpu", ...).
// constants: a global (or closed-over) name the function reads -> its number (a Python bool,
// int or float), which the function's code then reads as that constant, as Numba freezes
// globals.
Function convert_function(const pybind11::handle& function_def,
                          std::shared_ptr<const SourceInfo> source,
                          const std::map<std::string, std::string>& aliases,
                          const std::map<std::string, pybind11::object>& constants);

}  // namespace parir::frontend
