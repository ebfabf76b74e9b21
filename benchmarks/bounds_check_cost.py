"""What CompileOptions.bounds_check costs, per call, against the same call without it.

    python3 benchmarks/bounds_check_cost.py [--n 16777216]

A bounds-checked call checks, in the kernels, each access the compiler could not prove in
bounds, and after the launch copies the 16-byte error record back, which waits for the kernels:
the host cannot run ahead of the GPU. So two numbers per kernel: the wall time per call of many
back-to-back calls (what a training loop sees), and the GPU time of one call by CUDA events
(what the checks themselves cost). Kernels: axpy, whose accesses are all proved in bounds (no
checks in the code: only the error record's round trip), a gather x[idx[i]] (one checked read
per element) and a row sum over a matrix (proved).
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import parir_torch as parir  # noqa: E402
from timing import cuda_time_ms  # noqa: E402


@parir.jit
def axpy(a, x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = a * x[i] + y[i]


@parir.jit
def gather(x, idx, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = x[idx[i]]


@parir.jit
def row_sums(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i] += x[i, j]


def wall_us(f, calls=200, reps=5):
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(per_call)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1 << 24)
    args = ap.parse_args()
    n = args.n
    rows, cols = n // 4096, 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    idx = torch.randint(0, n, (n,), device="cuda")
    m, out_rows = torch.randn(rows, cols, device="cuda"), torch.zeros(rows, device="cuda")
    cases = [
        ("axpy (all accesses proved)", axpy, (2.0, x, y, n), {'i': parir.threads(n)}),
        ("gather x[idx[i]] (one checked read)", gather, (x, idx, y, n), {'i': parir.threads(n)}),
        ("row sum (all proved)", row_sums, (m, out_rows, rows, cols),
         {'N': parir.threads(rows), 'M': parir.threads(256).reduce()}),
    ]
    print(f"{'kernel':40s} {'GPU ms':>8s} {'checked':>8s} {'wall us':>9s} {'checked':>9s}")
    for name, fn, call_args, spec in cases:
        plain = parir.par(spec)
        checked = parir.par(spec)
        checked.bounds_check = True
        times = []
        for opts in (plain, checked):
            def call(opts=opts):
                fn(*call_args, opts=opts)
            times.append((cuda_time_ms(call), wall_us(call)))
        (gpu0, wall0), (gpu1, wall1) = times
        print(f"{name:40s} {gpu0:8.3f} {gpu1:8.3f} {wall0:9.1f} {wall1:9.1f}")


if __name__ == "__main__":
    main()
