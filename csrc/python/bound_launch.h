// The eager call path's launcher: a program with the positions of its tensors among a call's
// arguments, so that a call hands over its argument tuple as it is and Python builds nothing.
#pragma once

#include <torch/extension.h>

#include <memory>
#include <vector>

#include "runtime/program.h"

namespace parir {

// Adds the type BoundLaunch to the module. Its instances are called with the call's argument
// tuple: launcher(args) picks the written tensors (args[outs[i]]) and the read ones
// (args[ins[i]]) and launches the program on them (runtime::launch_eager). It is a plain
// CPython type with a vectorcall entry, not a pybind11 class: it runs on every cached call,
// where pybind11's dispatch costs as much as the rest of the launch. `last_used` is the
// launch counter's value at its latest launch (the specialization cache evicts by it).
void add_bound_launch(pybind11::module& m, PyObject* parir_error);

// A new BoundLaunch.
pybind11::object bind_launch(std::shared_ptr<runtime::Program> program, std::vector<int> outs,
                             std::vector<int> ins);

// Launches a cached call through `launcher`, the launcher of the specialization whose key the
// call's argument tuple `args` matched (so its tensors have the dtypes, shapes and strides the
// program was compiled for): the tensors' data pointers go to the kernels without copying a
// tensor handle or checking again what the key holds (runtime::launch_matched). 1: launched;
// 0: nothing launched, call the launcher (it is not a BoundLaunch, or the call needs the
// checked path); -1: the launch failed and the Python error is set.
int launch_cached_call(PyObject* launcher, PyObject* args);

// Advances the launch counter and returns its new value (for launchers written in Python).
uint64_t next_launch_stamp();

}  // namespace parir
