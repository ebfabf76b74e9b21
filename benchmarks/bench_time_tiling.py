"""Time loops in tiles of time steps (CompileOptions.time_tiling) against the same loop launched
step by step (as a CUDA graph from the second call), on jacobi_1d at several sizes.

    python benchmarks/bench_time_tiling.py

Each call runs the whole loop; CUDA events around one call, 8 calls from the same starting
values (restored before each), the first two dropped (compilation, the graph's capture);
median and minimum in ms, and the largest difference from a float64 torch run where that is
affordable."""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))
import parir_torch as parir  # noqa: E402
from npbench.jacobi_1d import jacobi_1d, torch_step  # noqa: E402


def bench(N, T, tiling):
    gen = torch.Generator(device="cuda").manual_seed(0)
    A0 = torch.rand(N, device="cuda", generator=gen)
    B0 = torch.rand(N, device="cuda", generator=gen)
    A, B = A0.clone(), B0.clone()
    opts = parir.par({'i': parir.threads(N)})
    opts.time_tiling = tiling
    times = []
    for _ in range(8):
        A.copy_(A0)
        B.copy_(B0)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        jacobi_1d(A, B, T, opts=opts)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    err = float("nan")
    if N * T < 5e8:
        ref_A, ref_B = A0.double().clone(), B0.double().clone()
        for _ in range(1, T):
            torch_step(ref_A, ref_B)
        err = max((A.double() - ref_A).abs().max().item(), (B.double() - ref_B).abs().max().item())
    times = sorted(times[2:])
    return times[len(times) // 2], times[0], err


def main():
    print("| N | steps | step by step (ms) | tiles (ms) | speed-up | max error (tiles) |")
    print("|---|---|---|---|---|---|")
    for N, T in [(34000, 8500), (16384, 8500), (3200, 100), (1_000_000, 1000),
                 (10_000_000, 100)]:
        plain, _, _ = bench(N, T, False)
        tiled, _, err = bench(N, T, True)
        print(f"| {N:,} | {T - 1:,} | {plain:.3f} | {tiled:.3f} | {plain / tiled:.1f}x | "
              f"{err:.1e} |", flush=True)


if __name__ == "__main__":
    main()
