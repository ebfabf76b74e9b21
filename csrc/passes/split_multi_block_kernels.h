#pragma once

#include "ir/specialized_function.h"

namespace parir {

// Cuts a kernel whose thread-level loops span several thread blocks wherever its sequential
// meaning needs every block to finish before the next statement starts, since blocks cannot
// wait for each other inside one kernel (thread block clusters aside: a kernel that
// map_parallelism will run as a cluster is left alone). Each cut runs as a kernel of its own,
// in a copy of the enclosing parallel loops:
// * each thread-level loop (so a loop reading what the loop before it wrote sees all of it);
// * each run of block-level statements that write tensors (`y[i] = 0.0` before a reduction
//   into y[i]), run once per iteration of the enclosing loops;
// * a reduction into a local (`s += x[i, j]` over 4096 threads): the blocks combine their
//   results atomically into an element of a temporary tensor (SpecializedFunction::temporaries,
//   which the runtime allocates from PyTorch's caching allocator for each call), set to the
//   operation's identity by a cut of its own before, and the statements after the loop start
//   with `s = s + partial[i]`;
// * a scan loop (detect_scans): as two kernels, one storing the total of each block's chunk of
//   the iterations in a temporary, one scanning each chunk from the totals before it (see
//   ScanPass in ir/ir.h); the cuts after it read the final running value from a temporary.
// The bodies one level up are cut the same way, whatever the thread level's size, where they
// hold a loop that maps to blocks (a parallel loop with parallel loops inside) next to other
// statements: its iterations run on different blocks, which the statements beside it must wait
// for. A body that one block runs (the thread level and the statements around it) stays whole.
// Inside a sequential loop or an if no cut is possible: such a body with a parallel loop over
// several blocks beside other work gets a warning (its blocks see only their own writes).
// Block-level statements that only compute locals are repeated at the start of every later
// cut, so the locals they define are there; they may read what earlier cuts wrote, which is
// complete by then (a statement that reads a tensor that a later statement writes is not
// repeated: the error about its local then comes from map_parallelism). The indices of
// a temporary are the iteration numbers of the enclosing parallel loops, whose bounds must be
// constants; otherwise the loop is left as it is. Requires detect_reductions; runs after
// split_parallel_nests and before split_host_device.
void split_multi_block_kernels(SpecializedFunction& prog, const CompileOptions& opts);

}  // namespace parir
