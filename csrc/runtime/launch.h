// Launching a Program on PyTorch tensors: the one place where both the eager call path and the
// parir::launch op end.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <vector>

#include "runtime/program.h"

namespace parir::runtime {

// `outs` are the plan's written ("inout") parameters in order, `ins` the others. Each tensor is
// checked against the plan (CUDA, one device for all, dtype, shape, strides) and its data_ptr()
// goes straight to the kernels, on the current CUDA stream of its device.
void launch_on_tensors(const Program& program, at::TensorList outs, at::TensorList ins);

// The launch itself, for tensors already checked: `ptrs` holds the data pointers of the plan's
// parameters in the plan's order, all on `device` (-1: the current device, for a plan without
// tensors); the plan's temporaries are appended to it.
void launch_on_pointers(const Program& program, int device, c10::SmallVectorImpl<void*>& ptrs);

// Compiles and loads `program` for `device` now, checking that the device's current stream is
// not being captured.
void prepare_on_current_stream(const Program& program, int device);

}  // namespace parir::runtime
