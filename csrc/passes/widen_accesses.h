#pragma once

#include "ir/kernel.h"

namespace parir {

// Wide accesses. A thread that moves one 4-byte element per load or store keeps too few bytes
// in flight for the memory system to reach its bandwidth on a streaming kernel; one 16-byte
// access moves four. Where a thread-level loop runs over a constant range with step 1 and walks
// the contiguous dimension of some tensor (its offset grows by one with the loop variable),
// each thread takes W consecutive iterations at a time (W = 16 bytes / the element's size; 8
// bytes where a loop that is not a reduction streams several tensors, see group_width) and
// moves those elements with one WideLoad or WideStore. The groups of W iterations start where
// most of the contiguous accesses fall on a W-element boundary (their shift from the range's
// start); those accesses are wide, the others are read element by element, and a read a few
// elements beside a wide read of a tensor the loop does not store to (a stencil's x[j - 1]
// beside x[j]) takes the wide read's elements where they are in the group. A range that
// starts or ends off the groups' grid runs its first and last group element by element, each
// element only where it is an iteration of the loop. Whether the tensors' data pointers are
// aligned to the group's bytes is known only at run time (a view may start anywhere), so the
// loop tests it (PointersAligned, the same for every thread) and otherwise runs every group
// element by element. A kernel whose only thread-level loop is widened keeps its blocks, of W
// times fewer threads where it had one per iteration. Loops of fewer than 4,096 iterations over
// the whole kernel keep their plain code: they move too few bytes for the width to matter.
//
// The W iterations run statement by statement: each statement computes its W values, then
// stores them, so that the loads of all W are in flight together. That reorders iterations
// only: those of a parallel loop are independent. Within one iteration every read still sees
// the stores before it: an element is loaded where the first statement that reads it runs,
// and any store drops the loaded values but the stored ones. Locals that an iteration assigns
// get a name per element. A loop is left alone when its body holds anything but assignments
// (branches, loops, calls of externals, atomics, run-time bounds checks), reads a local of its
// own before assigning it, shares one with code outside the loop, is a scan or an index
// reduction, or the kernel runs lanes, warps or clusters. `memory_bandwidth_gbps` is the GPU's
// peak DRAM bandwidth (CompileOptions; 0 when unknown), which sets the bytes a streaming
// loop's group moves (group_width).
void widen_accesses(SpecializedFunction& prog, Lowered& lowered, int64_t memory_bandwidth_gbps);

// The bytes one wide access moves: 16, or 8 in a loop that streams several tensors on a GPU
// whose memory is slower than kFastMemoryGbps.
inline constexpr int64_t kWideAccessBytes = 16;
inline constexpr int64_t kNarrowWideAccessBytes = 8;
inline constexpr int64_t kFastMemoryGbps = 4000;

}  // namespace parir
