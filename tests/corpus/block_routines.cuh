// Block-level routines a CUDA programmer keeps in a header: every thread of the block calls
// them with the same arguments, each takes its share by threadIdx.x, and all get the result.
#pragma once

// The sum of squares of row `row` of a row-major [rows, n] float matrix.
__device__ float block_sum_of_squares(const float* x, int64_t row, int64_t n) {
  __shared__ float warp_sums[32];
  __shared__ float result;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = x[row * n + j];
    s += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) result = s;
  }
  __syncthreads();
  return result;
}
