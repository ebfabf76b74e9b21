#pragma once

#include "ir/kernel.h"

namespace parir {

// Wide accesses. A thread that moves one 4-byte element per load or store keeps too few bytes
// in flight for the memory system to reach its bandwidth on a streaming kernel; one 16-byte
// access moves four. Where a thread-level loop runs over a constant range with step 1, a
// multiple of W iterations long, and walks the contiguous dimension of some tensor (its offset
// grows by one with the loop variable, from an element on a W-element boundary), each thread
// takes W consecutive iterations at a time (W = 16 bytes / the element's size) and moves those
// elements with one WideLoad or WideStore. Whether the tensors' data pointers are 16-byte
// aligned is known only at run time (a view may start anywhere), so the loop tests it
// (PointersAligned, the same for every thread) and otherwise runs the W iterations element by
// element. A kernel whose only thread-level loop is widened launches W times fewer threads
// where it had one per iteration.
//
// The W iterations run statement by statement (each statement for the W elements, then the
// next), which reorders iterations only: those of a parallel loop are independent. Within one
// iteration every read still sees the stores before it: an element is loaded where the first
// statement that reads it runs, and any store drops the loaded values but the stored ones.
// Locals that an iteration assigns get a name per element. A loop is left alone when its body
// holds anything but assignments (branches, loops, calls of externals, atomics, run-time bounds
// checks), reads a local of its own before assigning it, shares one with code outside the loop,
// is a scan or an index reduction, or the kernel runs lanes, warps or clusters.
void widen_accesses(SpecializedFunction& prog, Lowered& lowered);

// The bytes one wide access moves.
inline constexpr int64_t kWideAccessBytes = 16;

}  // namespace parir
