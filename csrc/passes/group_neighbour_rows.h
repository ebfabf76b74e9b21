#pragma once

#include "ir/kernel.h"

namespace parir {

// Blocks that read their neighbours' rows walk a few consecutive rows each. In a 2-D stencil
// (`y[i, j] = x[i - 1, j] + x[i, j] + x[i + 1, j] + ...` with i over blocks and j over
// threads) each row of x is read by three blocks; one block a row leaves those reads to L2, and
// on an H200 the 16384^2 five-point stencil ran at 83% of the copy bandwidth. A block that takes
// rows i and i + 1 in turn finds the rows it read for the first row in its L1: 92% on an H200,
// 99% on an H100 (benchmarks/NOTES.md). So a kernel whose root is a loop over blocks with one
// block an iteration and a unit step, whose body is one loop over threads (no reduction, lanes,
// warps, cluster or shared arrays), and which reads some tensor it does not write at rows a
// constant apart in that loop's variable, gets its iterations in groups of kRowsPerBlock: the
// loop over blocks runs over the groups and each group's rows run in a sequential loop inside
// it. Its blocks then number a kRowsPerBlock-th as many, so only kernels that keep at least
// kMinGroupedBlocks blocks are grouped: smaller grids would leave multiprocessors idle. The
// iterations of a parallel loop are independent, so running some of them one after another in
// one block changes no result.
void group_neighbour_rows(const SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
