#pragma once

#include "ir/kernel.h"

namespace parir {

// A host loop whose kernels are small becomes, in addition, one persistent kernel that runs
// every iteration: a single thread block cluster whose blocks take the kernels' blocks in turn
// and wait for each other (a cluster barrier) between kernels, instead of one launch per
// kernel per iteration. The loop qualifies when it is a top-level host loop with constant
// bounds whose body is launches only, of kernels with one block size, no clusters, no dynamic
// shared memory, no run-time bounds checks, and at most kMaxFusedGrid blocks each: so that each
// block of the cluster runs one block of each kernel per iteration (measured on an H100: a
// cluster block that runs two or three blocks of a kernel in turn waits for their memory
// accesses one after another, and a CUDA graph of the launches was faster). The loop's
// PlanStep gets the persistent launch (LaunchPlan's PlanStep::persistent); the code generator
// prints the kernels it runs as block functions and the persistent kernel around them, and
// the runtime chooses between it and the loop (it needs a GPU with clusters, sm_90).
// CompileOptions.persistent_loops turns this off.
void fuse_host_loops(Lowered& lowered);

// The largest thread block cluster (a non-portable size on the H100 and H200), and so the
// largest grid of a kernel run inside a persistent loop.
inline constexpr int64_t kMaxPersistentCluster = 16;
inline constexpr int64_t kMaxFusedGrid = kMaxPersistentCluster;

}  // namespace parir
