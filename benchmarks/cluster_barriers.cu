// Barriers between time steps of a persistent kernel on sm_90: what a thread block cluster
// barrier costs with and without memory ordering, and jacobi_1d (two three-point stencils per
// step) as one cluster kernel through global memory with each barrier. benchmarks/NOTES.md
// ("What a barrier between time steps costs") has the H100 figures.
//   nvcc -arch=sm_90a -O3 -std=c++17 -o cluster_barriers cluster_barriers.cu && ./cluster_barriers

#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
__device__ __forceinline__ unsigned rank_() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }

template <int MODE> __device__ __forceinline__ void bar() {
  if (MODE == 0) asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  if (MODE == 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  if (MODE == 2) asm volatile("fence.acq_rel.cluster;\n\tbarrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  if (MODE == 3) __syncthreads();
  if (MODE == 5) { __syncthreads(); if (threadIdx.x == 0) asm volatile("fence.acq_rel.cluster;" ::: "memory"); asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
  if (MODE == 6) { __syncthreads(); if (threadIdx.x < 32) asm volatile("fence.acq_rel.cluster;" ::: "memory"); asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
}
template <int MODE> __global__ void k_bar(int T) { for (int t = 0; t < T; ++t) bar<MODE>(); }

// jacobi in DSMEM with barrier MODE; block r owns [r*S, r*S+S)
// one block, each thread keeps K consecutive elements of A and B in registers; halos via shared

template <typename K, typename... Args>
float launch(K k, int C, int threads, size_t smem, Args... args) {
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(C); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> ts;
  for (int rep = 0; rep < 5; ++rep) { cudaEventRecord(a); CK(cudaLaunchKernelEx(&cfg, k, args...)); cudaEventRecord(b); CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[2];
}

template <int MODE> __global__ void k_g(float* A, float* B, int N, int T) {
  unsigned r = rank_(); int nt = gridDim.x * blockDim.x, tid = r * blockDim.x + threadIdx.x;
  for (int t = 1; t < T; ++t) {
    for (int i = 1 + tid; i < N - 1; i += nt) B[i] = 0.33333f * (A[i-1] + A[i] + A[i+1]);
    bar<MODE>();
    for (int i = 1 + tid; i < N - 1; i += nt) A[i] = 0.33333f * (B[i-1] + B[i] + B[i+1]);
    bar<MODE>();
  }
}
// float4 per thread variant (N multiple of 4 handled by tail loop)
template <int MODE> __global__ void k_g4(float* A, float* B, int N, int T) {
  unsigned r = rank_(); int nt = gridDim.x * blockDim.x, tid = r * blockDim.x + threadIdx.x;
  auto step = [&](const float* X, float* Y) {
    for (int g = tid; g < N / 4; g += nt) {
      float4 v = reinterpret_cast<const float4*>(X)[g];
      float l = g ? X[4 * g - 1] : 0.f, rr = 4 * g + 4 < N ? X[4 * g + 4] : 0.f;
      float o0 = 0.33333f * (l + v.x + v.y), o1 = 0.33333f * (v.x + v.y + v.z), o2 = 0.33333f * (v.y + v.z + v.w), o3 = 0.33333f * (v.z + v.w + rr);
      if (g == 0) o0 = Y[0];
      if (4 * g + 3 == N - 1) o3 = Y[N - 1];
      reinterpret_cast<float4*>(Y)[g] = make_float4(o0, o1, o2, o3);
    }
  };
  for (int t = 1; t < T; ++t) { step(A, B); bar<MODE>(); step(B, A); bar<MODE>(); }
}
template <typename K> float runk(K k, int C, int th, int N, int T, float* A, float* B) { return launch(k, C, th, 0, A, B, N, T); }
int main() {
  setvbuf(stdout, NULL, _IONBF, 0);
  int T = 17000;
  for (int C : {1, 2, 4, 8, 16}) for (int th : {128, 256, 512, 1024}) {
    float m[6] = {launch(k_bar<0>, C, th, 0, T), launch(k_bar<2>, C, th, 0, T), launch(k_bar<5>, C, th, 0, T), launch(k_bar<6>, C, th, 0, T), launch(k_bar<1>, C, th, 0, T), launch(k_bar<3>, C, th, 0, T)};
    printf("C=%2d th=%4d ns/barrier: rel/acq %.0f  fence+relaxed %.0f  one-thread-fence %.0f  one-warp-fence %.0f  relaxed(no order) %.0f  syncthreads %.0f\n", C, th, m[0] * 1e6 / T, m[1] * 1e6 / T, m[2] * 1e6 / T, m[3] * 1e6 / T, m[4] * 1e6 / T, m[5] * 1e6 / T);
  }
  int TS = 8500;
  for (int N : {34000, 16384}) {
    std::vector<float> hA(N), hB(N); for (int i = 0; i < N; ++i) { hA[i] = (i * 37 % 101) / 101.f + 0.5f; hB[i] = (i * 53 % 97) / 97.f; }
    std::vector<float> rA(hA), rB(hB);
    for (int t = 1; t < TS; ++t) { for (int i = 1; i < N - 1; ++i) rB[i] = 0.33333f * (rA[i-1] + rA[i] + rA[i+1]); for (int i = 1; i < N - 1; ++i) rA[i] = 0.33333f * (rB[i-1] + rB[i] + rB[i+1]); }
    float *A, *B; CK(cudaMalloc(&A, N * 4)); CK(cudaMalloc(&B, N * 4));
    auto reset = [&] { CK(cudaMemcpy(A, hA.data(), N * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(B, hB.data(), N * 4, cudaMemcpyHostToDevice)); };
    auto err = [&] { std::vector<float> o(N); CK(cudaMemcpy(o.data(), A, N * 4, cudaMemcpyDeviceToHost)); double e = 0; for (int i = 0; i < N; ++i) e = std::max(e, (double)std::fabs(o[i] - rA[i])); return e; };
    for (int C : {8, 16}) for (int th : {256, 512, 1024}) {
      float a0 = runk(k_g<0>, C, th, N, TS, A, B), a5 = runk(k_g<5>, C, th, N, TS, A, B), b0 = runk(k_g4<0>, C, th, N, TS, A, B), b5 = runk(k_g4<5>, C, th, N, TS, A, B);
      reset(); launch(k_g4<5>, 16, 1024, 0, A, B, N, 1);
      printf("N=%d C=%2d th=%4d ms: scalar rel/acq %.2f, scalar 1-fence %.2f, float4 rel/acq %.2f, float4 1-fence %.2f\n", N, C, th, a0, a5, b0, b5);
    }
    for (int v = 0; v < 2; ++v) { reset(); cudaLaunchConfig_t cfg = {}; cfg.gridDim = 16; cfg.blockDim = 1024;
      cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 16; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1; cfg.attrs = at; cfg.numAttrs = 1;
      if (v == 0) CK(cudaLaunchKernelEx(&cfg, k_g<5>, A, B, N, TS)); else CK(cudaLaunchKernelEx(&cfg, k_g4<5>, A, B, N, TS));
      CK(cudaDeviceSynchronize()); printf("  N=%d %s 1-fence err %.2e\n", N, v ? "float4" : "scalar", err()); }
  }
}
