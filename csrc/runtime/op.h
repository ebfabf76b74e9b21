// The parir::launch operator and the eager call path's way into it.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "runtime/program.h"

namespace parir::runtime {

// The eager call path (a jit function called from Python). Plain CUDA tensors are checked
// (launch.h) and the kernels launched directly, with what the operator's autograd kernel does
// around them: an error when autograd would have to track the call, and the written tensors'
// version counters bumped so that autograd notices them being overwritten. Any other call goes
// through the dispatcher as parir::launch, so that the tensors' subclass or the active mode
// sees it: fake and functional tensors while torch.compile or torch.export trace, functorch
// transforms, TorchDispatchModes.
void launch_eager(const Program& program, at::TensorList outs, at::TensorList ins);

// launch_eager for a cached call, whose tensors are known to have the dtypes, shapes and strides
// the program was compiled for (the call's key recorded them): `tensors[k]` is the plan's k-th
// parameter. Only what the key does not record is checked: one device for all, and what would
// send the call through the dispatcher or make it an autograd error. False, launching nothing,
// when any of that fails: the call then takes launch_eager's path, which explains or dispatches.
bool launch_matched(const Program& program, c10::ArrayRef<const at::Tensor*> tensors);

}  // namespace parir::runtime
