// Benchmark support: the host cost of each layer of a launch, measured in C++.
#pragma once

#include <torch/extension.h>

namespace parir {

// Adds launch_costs(program, outs, ins, calls=10000) -> {layer: microseconds per call}.
void add_launch_costs(pybind11::module& m);

}  // namespace parir
