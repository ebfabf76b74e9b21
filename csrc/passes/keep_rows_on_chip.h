#pragma once

#include "ir/kernel.h"

namespace parir {

// Single-pass rows. A block whose threads walk one row in several consecutive parallel loops
// (softmax: a max over x, out = exp(x - m), a sum over out, out /= s; layer and RMS norm alike)
// would read each element from memory once per loop. Where those loops run over the same
// constant range on one block, with at most kMaxElementsPerThread elements per thread, each
// thread keeps its own elements of the row in registers from one loop to the next: the loops
// become one iteration per thread that handles the thread's elements one after another
// (iteration t, t + T, t + 2T, ... for T threads, as before), an element is loaded where the
// loops first read it, and a stored element is written to memory only by the last store of
// the run. Nothing else changes: the same threads take the same elements in the same order.
// With `group_elements` (the program's wide accesses), where the row is contiguous in memory
// each thread takes its elements in groups of consecutive ones instead (groups t, t + T, ...),
// each group statement by statement, which widen_row_groups then moves with one 16- or 8-byte
// access a group; the kernel's row_groups names those loops.
//
// Rows the registers cannot hold (see the limits below) are kept in shared memory instead:
// each thread stores its elements in arrays as long as the row (one per kept row at a time;
// a row whose accesses all come before another's first store hands its array on), which only
// that thread reads and writes, so no barrier is needed. Each loop stays a loop over the
// thread's elements (or groups), through locals loaded from the array where a loop first
// reads a value and stored to it where a later loop reads it. The arrays lie in the block's
// dynamic shared memory (the launch's shared(bytes), at most one such run a kernel, and not
// where the block's warps walk rows of their own); past
// kSharedBytesEveryGpuGives the launch asks for it "if available" and the run tests what it
// got (parir::dynamic_shared_bytes()), running as registers alone allow without it.
//
// An element is kept only where that cannot change what the program computes:
// * every access of the tensor's element in the run is an unconditional one, at the top level
//   of one of the loops' statements, at the same indices (which move with the loop variable
//   and otherwise use values that the run does not assign), proved in bounds;
// * a tensor that the run writes is accessed at those indices only, so that each element
//   belongs to one thread;
// * a kept value is not read after the run writes another tensor (which could be the same
//   memory), and no other tensor is read between a kept store and its write to memory.
// The program's tensors are assumed not to overlap in part: two arguments may be the same
// memory (an in-place call), but a view shifted against another by a multiple of the thread
// count, written by one loop and read by a later one through the other view, would read a value
// that is not yet in memory.
void keep_rows_on_chip(SpecializedFunction& prog, Lowered& lowered, bool group_elements);

// The most elements of a row one thread keeps (the loops' iterations per thread), and the most
// values all kept rows of a run may hold per thread (the most accessed rows are kept first):
// registers a thread may spend on them. Measured on an H100 (benchmarks/NOTES.md): at 32
// elements a thread, softmax, layer norm and RMS norm of 8192-wide rows on 256 threads compile
// to 48-54 registers without spills and ran 1.4-2.1x faster than walking each row once per
// loop; at 64, on 128 threads, 78-92 registers, 1.5-2.6x faster; a vocabulary's softmax
// (50,257-wide rows on 1,024 threads) 3.2x faster.
inline constexpr int64_t kMaxElementsPerThread = 64;
inline constexpr int64_t kMaxKeptValuesPerThread = 64;

// Past this many elements a thread, on blocks of more than kMaxThreadsForLongTwoLoopRows
// threads, a row is kept only where three or more loops of the run access it: one that two
// loops access saves a single pass over the row, and with the registers of one block filling
// the multiprocessor it lost more than that (RMS norm of 50,257-wide rows on 1,024 threads:
// 0.898 ms walked twice, 1.032 kept; layer norm, three loops, 1.160 -> 1.103).
inline constexpr int64_t kMaxElementsPerThreadOfTwoLoopRows = 32;
inline constexpr int64_t kMaxThreadsForLongTwoLoopRows = 512;

// Rows that the registers cannot hold (more than kMaxElementsPerThread elements a thread, or
// more kept values than kMaxKeptValuesPerThread) are kept in shared memory instead, up to this
// many bytes a block: what an H100 gives a block (227 KB), less room for the kernel's own.
// Past kSharedBytesEveryGpuGives (what every GPU since Turing can give) the launch asks for it
// "if available", and the kernel runs the rows as registers alone allow where it got none.
// Measured on an H100 (benchmarks/NOTES.md): softmax of 16384 x 12288 on 128 threads 1.62 ->
// 0.58 ms, of 4096 x 50257 on 512 threads 2.62 -> 0.72, layer norm of 8192 x 24576 on 256
// threads 1.09 -> 0.81 (hand-written first).
inline constexpr int64_t kMaxSharedRowBytes = 216 * 1024;
inline constexpr int64_t kSharedBytesEveryGpuGives = 48 * 1024;
// Past this many bytes a block (two blocks a multiprocessor on an H100, one past it), shared
// memory is used only where the registers keep nothing of the run and some kept element is
// accessed by three loops or more. On an H200, for 50,257-wide rows on 1,024 threads, softmax
// with out in registers and x read twice took 0.527 ms, both in 201 KB of shared memory 0.655;
// RMS norm walking its rows twice 0.894, x in shared memory 0.936.
inline constexpr int64_t kMaxSharedRowBytesBesideRegisters = 96 * 1024;

}  // namespace parir
