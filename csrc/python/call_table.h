// A jit function's cached calls, found and launched in C++: the hot path of an eager call.
#pragma once

#include <torch/extension.h>

namespace parir {

// Adds the type CallTable to the module:
//
//   CallTable(default_options, key_fields, off_fields, loop_par_type)
//     A table from (options, arguments) to compiled specializations. The options' part of the
//     key is the values of `key_fields` (the CompileOptions fields that select the code,
//     options.options_key's fields) read from the instance's __dict__; None stands for
//     `default_options`. A call whose options have a true value in one of `off_fields` (seq,
//     check: calls that do not launch) is never found. The arguments' part is call_key's.
//   table.launch(opts, args) -> bool
//     Finds the specialization of a call and calls its `launch` attribute with `args`: True
//     when it launched, False when the call is not in the table (or its options or arguments
//     are of kinds the key does not encode): the caller then takes the path that compiles.
//   table.add(opts, args, compiled) -> bool
//     Records `compiled` for calls like this one; False when they cannot have a key.
//   table.find(opts, args) -> compiled | None;  table.clear();  len(table)
//
// Options are encoded by value and type (an int option and a bool one differ), so that equal
// encodings mean equal options_key values; two spellings of one key only cost two entries.
void add_call_table(pybind11::module& m);

}  // namespace parir
