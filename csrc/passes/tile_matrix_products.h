#pragma once

#include "ir/kernel.h"

namespace parir {

// Matrix products run in register tiles. A kernel written the way loops over a matrix product
// are written,
//
//     for i in range(...):             # over blocks
//         for j in range(lo(i), hi(i)):  # over threads; lo and hi affine in i
//             t = c
//             for k in range(K0, K1):
//                 t += A[i, k] * B[k, j]   # any expression of t, k and such loads
//             C[i, j] = t                # any statements of t, i and j
//
// reads A[i, k] once per (i, j) pair: a block walks a whole row of B for each of its rows i,
// and the program runs at the speed of the L2 cache, not of the arithmetic (covariance of
// 3,200 variables: 8x slower than cuBLAS's full product). Here each block instead takes a tile
// of T x T pairs (i, j), T = 16 R, and walks k in chunks: its 256 threads copy the chunk's
// elements of each load of i and k (A[i, k]) and of each load of j and k (B[k, j]) into shared
// memory, then each thread updates the R x R pairs it owns (rows R ty .. R ty + R - 1 and
// columns in groups of G consecutive ones, G tx + 16 G g + 0 .. G - 1, G the elements of a
// 16-byte load) from R + R values per load read from there in 16-byte loads, so an element
// loaded from memory serves T pairs and one from shared memory R. Each thread loads its part of
// the next chunk into registers before it updates its pairs with this one, so that the
// arithmetic hides the loads' latency. Every pair still
// runs its k iterations in order, so results are those of the kernel as written, to the bit.
// Afterwards each thread runs the statements after the k loop for each of its pairs that is in
// the original ranges. The tile size is the largest (R = 8, 4 or 2) that still gives the GPU
// enough blocks.
//
// A kernel qualifies when its two levels are exactly these loops (step 1, the i range and the
// coefficients of lo and hi constants, j's range never empty and the ranges of neighbouring
// rows touching, so that every element staged is one the kernel as written loads), the k
// loop's bounds do not depend on i or j and its body is one assignment to t (after assignments
// to locals read nowhere else, `a = A[i, k]; b = B[k, j]`, which stand for their values) whose
// loads (no run-time bounds checks) each depend on i or on j, not both, at least one of each
// kind; the
// statements after it only assign and branch (no loops, external calls or atomic updates) and
// store to no tensor that the k loop reads. CompileOptions.product_tiling turns this off.
void tile_matrix_products(SpecializedFunction& prog, Lowered& lowered);

}  // namespace parir
