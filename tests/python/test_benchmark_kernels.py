"""The benchmarks' kernels go through the compiler and NVRTC on every CI run, so that the
benchmarks cannot rot."""

import os
import sys

import torch

import parir_torch as parir
from parir_torch import _C

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import kernels  # noqa: E402


def test_benchmark_kernels_compile():
    n, m = 64, 48
    x, y, yc, flat, one = (torch.ones(n, m), torch.ones(n), torch.ones(m), torch.ones(n * m),
                           torch.ones(1))
    programs = [
        (kernels.sum_rows, [x, y, n, m], {"N": parir.threads(n)}),
        (kernels.add, [y, y, y, n], {"i": parir.threads(n)}),
        (kernels.sum_rows_reduce, [x, y, n, m],
         {"N": parir.threads(n), "M": parir.threads(32).reduce()}),
        (kernels.col_sums, [x, torch.ones(4, m), yc, n, m, 4],
         {"R": parir.threads(4), "M": parir.threads(m)}),
        (kernels.total_sum, [flat, one, n * m], {"i": parir.threads(2048).reduce()}),
        (kernels.row_max, [x, y, n, m], {"N": parir.threads(n), "M": parir.threads(32)}),
        (kernels.softmax_rows, [x, x.clone(), n, m], {"N": parir.threads(n), "M": parir.threads(32)}),
    ]
    for fn, args, spec in programs:
        src = parir.print_compiled(fn, args, parir.par(spec))
        binary, is_cubin, _ = _C.nvrtc_compile(src, "sm_90")
        assert is_cubin and len(binary) > 100, fn.__name__
