"""Unrolled column walks: a thread's loop that only accumulates one load a row further down per
iteration (a column sum's walk, its share of a slice reduction over the rows) runs with
`#pragma unroll 4`, and no other loop does. Unrolling must not change a result: the same
additions happen in the same order, so the outputs equal the plain code's bit for bit."""

import re

import pytest
import torch

import parir_torch as parir


@parir.jit
def column_sums(x, y, N, M):
    parir.label('M')
    for j in range(M):
        s = 0.0
        for i in range(N):
            s += x[i, j]
        y[j] = s


@parir.jit
def column_sums_slice(x, y, N, M):
    parir.label('M')
    parir.label('N')
    y[:] = parir.sum(x[:, :], axis=0)


@parir.jit
def row_sums_sequential(x, y, N, M):
    parir.label('N')
    for i in range(N):
        s = 0.0
        for j in range(M):
            s += x[i, j]
        y[i] = s


@parir.jit
def matmul(a, b, c, N, K, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += a[i, k] * b[k, j]
            c[i, j] = s


@parir.jit
def column_prefix(x, N, M):
    # Stores in the loop: each element becomes the sum of the column above it.
    parir.label('M')
    for j in range(M):
        for i in range(1, N):
            x[i, j] += x[i - 1, j]


@parir.jit
def column_sums_of_positive(x, y, N, M):
    parir.label('M')
    for j in range(M):
        s = 0.0
        for i in range(N):
            if x[i, j] > 0.0:
                s += x[i, j]
        y[j] = s


def unrolled_loops(fn, args, spec):
    """The loop headers that follow `#pragma unroll 4` in fn's code."""
    code = parir.print_compiled(fn, args, opts=parir.par(spec))
    return re.findall(r"#pragma unroll 4\n\s*(for \(.*)", code)


def meta(*shape):
    return torch.empty(*shape, device="meta")


def test_column_walk_is_unrolled():
    loops = unrolled_loops(column_sums, (meta(1000, 300), meta(300), 1000, 300),
                           {'M': parir.threads(300)})
    assert len(loops) == 1 and "i < 1000L" in loops[0], loops
    # 128 rows are the fewest a walk needs: the CUDA compiler unrolls shorter loops well.
    assert unrolled_loops(column_sums, (meta(127, 300), meta(300), 127, 300),
                          {'M': parir.threads(300)}) == []


def test_slice_reduction_over_rows_is_unrolled():
    # A block takes 32 columns, one per lane, and its 32 threads of each lane split the rows:
    # each walks 8000 / 32 rows of its lane's column.
    loops = unrolled_loops(column_sums_slice, (meta(8000, 320), meta(320), 8000, 320),
                           {'M': parir.threads(320), 'N': parir.threads(256)})
    assert len(loops) == 1, loops


@pytest.mark.parametrize("fn,args,spec", [
    (row_sums_sequential, (meta(1000, 300), meta(1000), 1000, 300), {'N': parir.threads(1000)}),
    (matmul, (meta(64, 500), meta(500, 64), meta(64, 64), 64, 500, 64),
     {'N': parir.threads(64), 'M': parir.threads(64)}),
    (column_prefix, (meta(1000, 300), 1000, 300), {'M': parir.threads(300)}),
    (column_sums_of_positive, (meta(1000, 300), meta(300), 1000, 300), {'M': parir.threads(300)}),
    (column_sums, (meta(40, 300), meta(300), 40, 300), {'M': parir.threads(300)}),
], ids=["row walk", "two loads an iteration", "stores", "branch", "short"])
def test_other_loops_are_left_to_the_cuda_compiler(fn, args, spec):
    assert unrolled_loops(fn, args, spec) == []


@pytest.mark.gpu
@pytest.mark.parametrize("N", [1, 31, 33, 1000, 4097])
@pytest.mark.parametrize("M", [1, 33, 320])
@pytest.mark.parametrize("kernel", ["loop", "slice"])
def test_unrolled_results_equal_plain_code(N, M, kernel):
    fn = column_sums if kernel == "loop" else column_sums_slice
    spec = {'M': parir.threads(M), 'N': parir.threads(256)}
    x = torch.randn(N, M, device="cuda", generator=torch.Generator("cuda").manual_seed(N * M))
    y = torch.full((M,), float("nan"), device="cuda")
    opts = parir.par(spec)
    fn(x, y, N, M, opts=opts)
    # A float32 sum of N terms is within (N - 1) * 2^-24 * sum(|x|) of the exact one.
    bound = N * 2.0 ** -24 * x.double().abs().sum(0) + 1e-6
    assert ((y.double() - x.double().sum(0)).abs() <= bound).all(), f"{kernel} {N}x{M}"
    code = parir.print_compiled(fn, (x, y, N, M), opts=opts)
    plain = re.sub(r"\n\s*#pragma unroll 4", "", code)
    y_plain = torch.full((M,), float("nan"), device="cuda")
    parir.compile_string(fn.__name__, plain, opts)(x, y_plain, N, M)
    assert torch.equal(y, y_plain)
