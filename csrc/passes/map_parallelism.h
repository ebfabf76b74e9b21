#pragma once

#include "ir/kernel.h"

namespace parir {

// Decides how each kernel's parallel loops map onto the CUDA grid, as the README's "How loops map
// to the GPU" describes: the innermost parallel level runs on threads (rounded up to a multiple of
// 32, at most `tpb` per block, spreading over several blocks when larger), every outer parallel
// level on blocks. Records the tensors, host loop variables and locals each kernel uses, and
// rejects what the mapping cannot run correctly:
// * parallel loops at one depth that request different numbers of threads (unless they are the
//   innermost level and all fit in one block);
// * different non-default threads-per-block in one kernel;
// * tensor writes outside the innermost parallel loop when that loop spans several blocks
//   (no block could see another's write);
// * a local assigned inside a parallel loop and read after it, or read in a kernel other than
//   the one that assigns it.
// Within those rules it picks the layout that serves memory best (README, "How loops map to the
// GPU"): a one-block thread level gets no more threads than its loops have iterations; threads
// that would walk down a column get lanes (Kernel::lanes); many short rows get a warp each
// (Kernel::warps).
// With opts.use_cuda_thread_block_clusters, a kernel whose innermost level reduces over several
// blocks (at most opts.max_thread_blocks_per_cluster) runs those blocks as a thread block
// cluster, and its reductions combine through distributed shared memory rather than global
// atomics.
void map_parallelism(const SpecializedFunction& prog, Lowered& lowered,
                     const CompileOptions& opts);

}  // namespace parir
