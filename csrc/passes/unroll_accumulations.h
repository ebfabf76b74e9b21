#pragma once

#include "ir/kernel.h"

namespace parir {

// Unrolled column walks. A thread that walks down a column (`s += x[i, j]` over i, or its
// share of a reduction over the rows) loads from a new row in every iteration and waits for
// each load before its loop comes round to the next one, unless the CUDA compiler unrolls the
// loop; left to choose, it unrolls such loops by 8 or not at all, and the column sums ran 4%
// slower than unrolled by 4 (H100, benchmarks/NOTES.md). So such a loop gets
// `#pragma unroll 4` (For::unroll): an innermost loop, sequential or a thread level's loop,
// whose body only assigns locals (no store, atomic update, external call, branch or wide
// access), with exactly one load that moves with the loop variable, by at least 32 elements
// an iteration (a negative-index wrap `(i < 0) ? i + n : i` read as i), and that runs at least
// 128 iterations per thread or an unknown number. Loops with several such loads (matrix
// products' `a[i, k] * b[k, j]`) already keep several loads in flight and measured slower
// unrolled (syrk, symm, trmm), and so did a 64-iteration walk (gemver's second phase), which
// the CUDA compiler handles well on its own; loops over blocks, scans and chunked reductions
// are left alone.
void unroll_accumulations(Lowered& lowered);

}  // namespace parir
