#pragma once

#include "ir/kernel.h"

namespace parir {

// Wide accesses for rows kept in registers or shared memory. Where keep_rows_on_chip gave each
// thread its elements of a row in groups of W consecutive ones (the kernel's row_groups), a
// group's copies of a statement follow each other: W loads x[o], x[o + 1], ..., x[o + W - 1]
// into registers, W computations that read w[o'], ..., w[o' + W - 1], or W stores out[o], ...,
// out[o + W - 1] (of a tensor, or of a row's array in shared memory).
// Each such set of W accesses of one tensor becomes one WideLoad (before the W statements) or
// one WideStore (after their values), where the first offset lies on a W-element boundary and
// the offsets do not read what the W statements assign. The loads move ahead of the other
// elements' statements of the group and the stores after them: each statement of the W is a
// different iteration of the parallel loop, and those are independent. Whether the tensors'
// data pointers are aligned to the group's bytes is known only at run time, so the loop tests
// it (PointersAligned) and otherwise runs its elements one by one, as before; arrays in shared
// memory are aligned to 16 bytes and need no test.
void widen_row_groups(SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
