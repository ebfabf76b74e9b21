#pragma once

#include "ir/kernel.h"

namespace parir {

// Time loops of one-dimensional stencils run in tiles of time steps (overlapped temporal
// blocking). A host loop `for t in range(...)` that launches, each iteration, kernels of one
// parallel loop each (one element per iteration, such as jacobi's `B[1:-1] = ...` and
// `A[1:-1] = ...`) costs one launch per kernel per time step, and one pass over memory each:
// 8,500 time steps of jacobi_1d are 17,000 launches. Where every tensor the loop writes is read
// and written only at `v + c` (v the kernel's loop variable, c a constant), an element after
// a time step depends only on its neighbours within a fixed radius (the largest |c_read -
// c_write| of each kernel, summed over the kernels of a step), so a block can run S time steps
// on its own on a tile of the elements held in shared memory: the tile is its share of the
// elements (kTileCore of them) with a halo of S times that radius on each side, which the
// block computes too (the halo's results go stale from the edges inward, one radius per
// kernel, and are never written back). One launch then runs S time steps of every kernel:
// the loop becomes `for t in range(lo, hi, 2 * S * step)` launching two tiled kernels, the
// first from the tensors into temporaries of the same shape and the second back (a block
// cannot write its tile back into the tensors that its neighbours are still reading their
// halos from), each running up to S time steps and then copying its tile's core.
//
// The loop qualifies when it is a top-level host loop with constant bounds and a positive
// step, running at least kMinSteps iterations, whose body only launches kernels that are one
// thread-level parallel loop each (range with constant bounds and step 1, no reduction, run-
// time bounds checks, external calls, atomic updates, inner loops or while loops), reading no
// host variable but the loop's; the tensors written are contiguous and each kernel reads a
// tensor it writes only where it writes it; the radius per time step is at most kMaxRadius;
// the tiles fit in shared memory. The plan lists each written tensor apart from the loop's
// other tensors (LaunchPlan::apart): the runtime refuses arguments that share memory there,
// which the tiles would read stale. CompileOptions.time_tiling turns this off.
void tile_time_loops(SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
