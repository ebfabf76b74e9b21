"""Blocks that read their neighbours' rows walk a few consecutive rows each (the compiler's
group_neighbour_rows): a 2-D stencil with its rows over blocks runs each block over two rows
in turn, so that the rows read for one row are found in L1 for the next. Only large grids that
read some tensor at rows a constant apart are grouped; the results must be torch's whatever the
number of rows (even or odd), for aligned and misaligned views."""

import os
import re
import sys

import pytest
import torch

import parir_torch as parir
from helpers import check_close

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from kernels import stencil_2d  # noqa: E402  (the roofline's kernel)


@parir.jit
def vertical_5(x, y, N, M):
    parir.label('i')
    for i in range(2, N - 2):
        parir.label('j')
        for j in range(M):
            y[i, j] = x[i - 2, j] + x[i - 1, j] - x[i, j] + x[i + 1, j] * 0.5 + x[i + 2, j]


@parir.jit
def scaled(x, y, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            y[i, j] = 2.0 * x[i, j]


@parir.jit
def smooth_in_place(x, N, M):
    # Reads and writes x: not grouped (a race the user owns, but nothing to reuse safely).
    parir.label('i')
    for i in range(1, N - 1):
        parir.label('j')
        for j in range(M):
            x[i, j] = 0.5 * (x[i - 1, j] + x[i + 1, j])


def stencil_spec(n, m):
    return parir.par({'i': parir.threads(n - 2), 'j': parir.threads(m - 2)})


def rows_spec(n, m):
    return parir.par({'i': parir.threads(n), 'j': parir.threads(m)})


def code(fn, args, opts):
    return parir.print_compiled(fn, list(args), opts)


def meta(*shape):
    return torch.empty(*shape, device="meta")


def launch_grid(text):
    return int(re.search(r"//@ launch \w+ grid\((\d+)\)", text).group(1))


def test_a_large_stencil_walks_two_rows_a_block():
    n = m = 16384
    text = code(stencil_2d, (meta(n, m), meta(n, m), n, m), stencil_spec(n, m))
    # 16382 rows in groups of two: 8191 groups, each row 16 blocks of 256 threads.
    assert launch_grid(text) == 8191 * 16
    assert "for (int64_t row_group0 = parir_b0; row_group0 < 8191L;" in text
    assert "parir::min(((1L + (row_group0 * 2L)) + 2L), 16383L)" in text
    assert "for (int64_t i = (1L + (row_group0 * 2L)); i < parir_stop_i; i += 1)" in text
    # The aligned copy is grouped the same way.
    assert text.count("row_group0 < 8191L") == 2


def test_rows_two_apart_count_as_neighbours():
    n, m = 12290, 4096
    text = code(vertical_5, (meta(n, m), meta(n, m), n, m), rows_spec(n - 4, m))
    assert "row_group0" in text
    assert launch_grid(text) == -(-(n - 4) // 2) * 4


def test_small_grids_and_kernels_without_neighbour_rows_keep_one_row_a_block():
    # 698 rows: grouped, its 349 blocks would leave multiprocessors idle.
    n = m = 700
    text = code(stencil_2d, (meta(n, m), meta(n, m), n, m), stencil_spec(n, m))
    assert "row_group" not in text and launch_grid(text) == 698 * 1
    # No row read by two iterations: nothing to reuse.
    n = m = 16384
    text = code(scaled, (meta(n, m), meta(n, m), n, m), rows_spec(n, m))
    assert "row_group" not in text
    # The tensor read at neighbouring rows is also written.
    text = code(smooth_in_place, (meta(n, m), n, m), rows_spec(n - 2, m))
    assert "row_group" not in text


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(6145, 2050), (6146, 2050)])
def test_grouped_stencils_match_torch(n, m):
    """6143 and 6144 rows: groups of two with one row over, and none."""
    text = code(stencil_2d, (meta(n, m), meta(n, m), n, m), stencil_spec(n, m))
    assert "row_group0" in text
    x = torch.randn(n, m, device="cuda")
    y = torch.full((n, m), float("nan"), device="cuda")
    stencil_2d(x, y, n, m, opts=stencil_spec(n, m))
    expected = 0.2 * (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    check_close(y[1:-1, 1:-1], expected, f"stencil {n}x{m}")
    assert torch.isnan(y[0]).all() and torch.isnan(y[-1]).all()
    assert torch.isnan(y[:, 0]).all() and torch.isnan(y[:, -1]).all()


@pytest.mark.gpu
def test_grouped_stencil_on_misaligned_views_matches_torch():
    n, m = 6145, 2050
    base_x = torch.randn(n, m + 1, device="cuda")
    x = base_x[:, 1:]  # rows 4 bytes off the 16-byte grid: the kernel with alignment tests
    y = torch.full((n, m + 1), float("nan"), device="cuda")[:, 1:]
    stencil_2d(x, y, n, m, opts=stencil_spec(n, m))
    expected = 0.2 * (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    check_close(y[1:-1, 1:-1], expected, "misaligned stencil")


@pytest.mark.gpu
def test_rows_two_apart_match_torch():
    n, m = 12290, 4096
    x = torch.randn(n, m, device="cuda")
    y = torch.full((n, m), float("nan"), device="cuda")
    vertical_5(x, y, n, m, opts=rows_spec(n - 4, m))
    expected = x[:-4] + x[1:-3] - x[2:-2] + x[3:-1] * 0.5 + x[4:]
    check_close(y[2:-2], expected, "rows two apart")
    assert torch.isnan(y[:2]).all() and torch.isnan(y[-2:]).all()
