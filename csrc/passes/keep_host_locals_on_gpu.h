#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Locals assigned outside every parallel loop live on the GPU. The host runs loops, ifs,
// launches and the integer arithmetic of its own loops and conditions, and cannot touch GPU
// data; a local such as `total = 0.0` before a `.reduce()` loop that sums into it and a loop
// that divides by it, or `k = k * 2` in a host loop that only kernels read, must be where the
// kernels that use it run. Each such local becomes a one-element
// temporary: its assignments outside the parallel loops run as one-thread kernels (as if the
// user had written `with parir.gpu:`; neighbouring ones share one), and every use inside
// and outside reads or writes the element, so a `.reduce()` loop reduces into it as into
// x[0]. Locals the host itself needs (in a host loop's range or condition, or an if's) stay
// on the host (SpecializedFunction::host_locals): the launch plan computes them, as in
// `k = 2; while k <= n: ...; k <<= 1`, and split_host_device checks that they are integers the
// host can compute. So do those a parallel loop's range reads (the host passes the range's
// bound at each launch); one that GPU code assigns there is an error. A scan loop that the
// host runs and that carries such a local as its running value runs in a `with parir.gpu:`
// block that copies the element into a local of the block before the loop and back after it.
void keep_host_locals_on_gpu(SpecializedFunction& prog);

}  // namespace parir
