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
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import parir_torch as parir  # noqa: E402
from kernels import axpy, gather, sum_rows_reduce  # noqa: E402
from timing import cuda_time_ms, host_time_us  # noqa: E402


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
        ("row sum (all proved)", sum_rows_reduce, (m, out_rows, rows, cols),
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
            times.append((cuda_time_ms(call), host_time_us(call, calls=200, warmup_calls=10)))
        (gpu0, wall0), (gpu1, wall1) = times
        print(f"{name:40s} {gpu0:8.3f} {gpu1:8.3f} {wall0:9.1f} {wall1:9.1f}")


if __name__ == "__main__":
    main()
