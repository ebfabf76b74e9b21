#pragma once

#include "ir/kernel.h"

namespace parir {

// Splits the function into host code and kernels, following the README's "How loops map to the
// GPU": each outermost parallel loop, and each `with parir.gpu:` block, becomes a kernel;
// sequential loops (and ifs) around them stay on the host and become the launch plan. Any other
// statement outside parallel code is an error that suggests `with parir.gpu:`. Kernel names are the
// function's name, with _0, _1, ... appended when there are several. The grid mapping is left to
// map_parallelism.
Lowered split_host_device(const SpecializedFunction& prog);

}  // namespace parir
