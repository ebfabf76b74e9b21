"""Column reductions with lanes: when the loop over blocks walks the contiguous dimension and
the threads walk down a column, a block takes 32 neighbouring columns, one per lane, so that a
warp reads neighbouring elements. The code must show it where it applies and only there, and
the results must be those of torch."""

import pytest
import torch

import parir_torch as parir
from helpers import check_close


@parir.jit
def column_sums(x, y, N, M):
    parir.label('M')
    parir.label('N')
    y[:] = parir.sum(x[:, :], axis=0)


@parir.jit
def column_stats(x, mean, peak, N, M):
    parir.label('col')
    for j in range(M):
        parir.label('row')
        s = parir.sum(x[:, j])
        mean[j] = s / N
        parir.label('row')
        peak[j] = parir.max(x[:, j])


@parir.jit
def batched_column_sums(x, y, B, N, M):
    parir.label('b')
    for b in range(B):
        parir.label('col')
        for j in range(M):
            acc = 0.0
            parir.label('row')
            for i in range(N):
                acc += x[b, i, j]
            y[b, j] = acc


def col_spec(n, m, threads=256):
    return parir.par({'M': parir.threads(m), 'N': parir.threads(threads)})


def stats_spec(m, threads=256):
    return parir.par({'col': parir.threads(m), 'row': parir.threads(threads)})


def test_a_column_sum_runs_on_lanes():
    x, y = torch.empty(1000, 64), torch.empty(64)
    text = parir.print_compiled(column_sums, (x, y, 1000, 64), opts=col_spec(1000, 64))
    assert "lanes(32)" in text and "lane_reduce<32>" in text
    assert "grid(2) block(1024)" in text


def test_no_lanes_where_they_would_not_help_or_could_not_run():
    # Rows already contiguous to the threads (a transposed view), and a column count that
    # would leave lanes without a column.
    x = torch.empty(64, 1000).t()
    y = torch.empty(64)
    text = parir.print_compiled(column_sums, (x, y, 1000, 64), opts=col_spec(1000, 64))
    assert "lanes(" not in text
    x, y = torch.empty(100, 1000), torch.empty(1000)
    text = parir.print_compiled(column_sums, (x, y, 100, 1000), opts=col_spec(100, 1000))
    assert "lanes(" not in text


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", [(1, 32, 32), (1000, 64, 256), (33, 96, 64),
                                         (4097, 32, 1024), (7, 1000, 256), (32768, 256, 256)])
def test_column_sums(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(n + m)
    x = torch.rand(n, m, device="cuda", generator=g) - 0.25
    y = torch.full((m,), float("nan"), device="cuda")
    column_sums(x, y, n, m, opts=col_spec(n, m, threads))
    check_close(y, x.double().sum(0), f"column sums {n}x{m}")
    # The same columns through a transposed view.
    xt = x.t().contiguous().t()
    y = torch.full((m,), float("nan"), device="cuda")
    column_sums(xt, y, n, m, opts=col_spec(n, m, threads))
    check_close(y, x.double().sum(0), f"column sums of a view {n}x{m}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(1000, 64), (31, 128), (5000, 32), (3, 1000)])
def test_column_stats(n, m):
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(n, m, device="cuda", generator=g)
    mean = torch.full((m,), float("nan"), device="cuda")
    peak = torch.full((m,), float("nan"), device="cuda")
    column_stats(x, mean, peak, n, m, opts=stats_spec(m))
    check_close(mean, x.double().mean(0), "mean")
    check_close(peak, x.double().amax(0), "peak")


@pytest.mark.gpu
def test_batched_column_sums():
    B, n, m = 3, 500, 96
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.rand(B, n, m, device="cuda", generator=g)
    y = torch.full((B, m), float("nan"), device="cuda")
    opts = parir.par({'b': parir.threads(B), 'col': parir.threads(m),
                      'row': parir.threads(128).reduce()})
    assert "lanes(32)" in parir.print_compiled(batched_column_sums, (x, y, B, n, m), opts=opts)
    batched_column_sums(x, y, B, n, m, opts=opts)
    check_close(y, x.double().sum(1), "batched column sums")
