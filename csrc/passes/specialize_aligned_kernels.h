#pragma once

#include "ir/kernel.h"

namespace parir {

// A second copy of each kernel with wide accesses, for tensors whose data is aligned.
// widen_accesses and widen_row_groups test at run time whether the tensors' data pointers are
// aligned to a group's bytes (PointersAligned) and otherwise run the group's elements one by
// one. The fresh tensors PyTorch's caching allocator hands out always are (to 512 bytes); a view
// that starts a few elements in is not. So each kernel that tests alignment, of 16 bytes or
// less, gets a copy NAME_aligned in which every such test is true and the element-by-element
// path is gone, and each launch of the kernel names it (PlanStep::aligned_kernel): the runtime
// launches the copy when every tensor argument's data pointer is a multiple of 16 bytes, and
// the kernel with its tests otherwise. Without the other path the copy is smaller; on an H200
// softmax and layer norm ran 3-4% and 3% faster with the tests taken out (benchmarks/NOTES.md). Triton
// specializes its kernels on pointers divisible by 16 in the same way. Both copies are in one
// source, compiled and loaded together, so that a CUDA graph capture may meet either.
void specialize_aligned_kernels(Lowered& lowered);

}  // namespace parir
