"""Time loops of one-dimensional stencils run in tiles of time steps (CompileOptions.time_tiling):
each block runs up to 32 time steps on its share of the elements in shared memory, with a halo
that it recomputes, and the loop launches two kernels per 64 time steps instead of every kernel
of every step. The results must be those of the loop launched step by step (the same arithmetic
on every element, so the same bits), of the plain Python, and of torch, at sizes around the
tiles' edges and for every number of time steps that a launch may end a loop with."""

import re

import pytest
import torch

import parir_torch as parir
from programs import repeated_scale  # radius 0: x[i] = x[i] * 0.5 + t


@parir.jit
def jacobi_1d(A, B, T):
    for t in range(1, T):
        parir.label('i')
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        parir.label('i')
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@parir.jit
def wave_with_source(u, u_prev, u_next, c, T, N):
    # Three kernels per step; a read-only coefficient per element and a source that follows
    # the time step; a radius-2 stencil.
    for t in range(T):
        parir.label('i')
        for i in range(2, N - 2):
            lap = -u[i - 2] + 16.0 * u[i - 1] - 30.0 * u[i] + 16.0 * u[i + 1] - u[i + 2]
            u_next[i] = 2.0 * u[i] - u_prev[i] + c[i] * lap / 12.0
            if i == N // 3:
                u_next[i] += 0.001 * t
        parir.label('i')
        for i in range(N):
            u_prev[i] = u[i]
        parir.label('i')
        for i in range(N):
            u[i] = u_next[i]


@parir.jit
def rule_90(cells, next_cells, T, N):
    # An integer automaton: every cell becomes the XOR of its neighbours (the edges stay).
    for t in range(T):
        parir.label('i')
        for i in range(1, N - 1):
            next_cells[i] = cells[i - 1] ^ cells[i + 1]
        parir.label('i')
        for i in range(1, N - 1):
            cells[i] = next_cells[i]


def _opts(n, tiling=True):
    opts = parir.par({'i': parir.threads(max(n, 1))})
    opts.time_tiling = tiling
    return opts


def _source(fn, args, n, tiling=True):
    return parir.print_compiled(fn, args, _opts(n, tiling))


# ----- what the compiler does (no GPU) -------------------------------------------------------

def test_jacobi_runs_32_steps_per_launch_on_tiles_of_256_elements_with_halos():
    n = 34000
    A, B = torch.empty(n, device="meta"), torch.empty(n, device="meta")
    src = _source(jacobi_1d, [A, B, 8500], n)
    assert "//@ for t in range(1, 8500, 64):" in src
    assert "//@ temp A_alt0 float32[34000]" in src and "//@ temp B_alt1 float32[34000]" in src
    launches = re.findall(r"//@   launch (\w+) grid\((\d+)\) block\((\d+)\) \(([^)]*)\)", src)
    assert [(g, b) for _, g, b, _ in launches] == [("133", "384")] * 2
    assert launches[0][3] == launches[1][3] == "A, B, A_alt0, B_alt1, t"
    # The runtime refuses arguments that share memory (the tiles read B while A changes).
    assert "//@ apart A from B\n//@ apart B from A\n" in src
    # A halo of 64 (2 kernels of radius 1, 32 steps) on each side of a core of 256.
    assert src.count("__shared__ float A_tile") == 2 and "[384];" in src
    assert "parir::min(8500L, (t + 32L))" in src and "parir::min(8500L, (t + 64L))" in src
    # The step-by-step kernels are gone.
    assert [name for name, _, _, _ in launches] == ["jacobi_1d_2", "jacobi_1d_3"]
    assert "jacobi_1d_0(" not in src and "jacobi_1d_1(" not in src
    untiled = _source(jacobi_1d, [A, B, 8500], n, tiling=False)
    assert "__shared__" not in untiled and "//@ for t in range(1, 8500, 1):" in untiled


def test_a_small_problem_is_one_tile_that_runs_every_step_in_one_launch():
    n = 3200
    A, B = torch.empty(n, device="meta"), torch.empty(n, device="meta")
    src = _source(jacobi_1d, [A, B, 100], n)
    assert "//@ for t in range(1, 100, 198):" in src
    assert "grid(1) block(1024)" in src and "__shared__ float A_tile2[3200];" in src


def test_programs_that_do_not_qualify_stay_step_by_step():
    n = 34000
    x = torch.empty(n, device="meta")

    @parir.jit
    def racy(x, T, N):
        for t in range(T):
            parir.label('i')
            for i in range(1, N - 1):
                x[i] = (x[i - 1] + x[i + 1]) * 0.5  # neighbours another thread writes

    @parir.jit
    def wide(x, y, T, N):
        for t in range(T):
            parir.label('i')
            for i in range(20, N - 20):
                y[i] = x[i - 20] + x[i + 20]  # radius 20: halos too wide to pay
            parir.label('i')
            for i in range(N):
                x[i] = y[i]

    @parir.jit
    def smooth_2d(a, b, T, N):
        for t in range(T):
            parir.label('i')
            for i in range(1, N - 1):
                for j in range(1, N - 1):  # an inner loop: a 2-D stencil is not a 1-D one
                    b[i, j] = (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) * 0.25
            parir.label('i')
            for i in range(N):
                for j in range(N):
                    a[i, j] = b[i, j]

    assert "__shared__" not in _source(racy, [x, 100, n], n)
    assert "__shared__" not in _source(wide, [x, torch.empty(n, device="meta"), 100, n], n)
    square = [torch.empty(300, 300, device="meta") for _ in range(2)]
    assert "__shared__" not in _source(smooth_2d, square + [100, 300], 300)
    # Written tensors must be contiguous; three time steps are too few to tile.
    view = torch.empty(2 * n, device="meta")[::2]
    assert "__shared__" not in _source(repeated_scale, [view, 100, n], n)
    assert "__shared__" not in _source(repeated_scale, [x, 3, n], n)
    assert "__shared__" in _source(repeated_scale, [x, 4, n], n)


# ----- results (GPU) -------------------------------------------------------------------------

def _jacobi_reference(A, B, T):
    A, B = A.double().clone(), B.double().clone()
    for _ in range(1, T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


@pytest.mark.gpu
@pytest.mark.parametrize("n", [3, 31, 33, 257, 1000, 4096, 4097, 34000, 100_003])
@pytest.mark.parametrize("T", [5, 33, 34, 65, 66, 100])
def test_jacobi_tiled_equals_step_by_step(n, T, rng):
    A0, B0 = torch.rand(n, generator=rng).cuda(), torch.rand(n, generator=rng).cuda()
    got = []
    for tiling in (False, True):
        A, B = A0.clone(), B0.clone()
        jacobi_1d(A, B, T, opts=_opts(n, tiling))
        got.append((A, B))
    torch.cuda.synchronize()
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1])
    ref_A, ref_B = _jacobi_reference(A0, B0, T)
    torch.testing.assert_close(got[1][0].double(), ref_A, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[1][1].double(), ref_B, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_jacobi_tiled_repeated_calls_through_the_graph_path(rng):
    # The default captures the plan (with its temporaries) on the second call with the same
    # tensors and replays it from then on.
    n, T = 34000, 200
    A0, B0 = torch.rand(n, generator=rng).cuda(), torch.rand(n, generator=rng).cuda()
    ref_A, ref_B = _jacobi_reference(A0, B0, T)
    A, B = A0.clone(), B0.clone()
    for _ in range(4):
        A.copy_(A0)
        B.copy_(B0)
        jacobi_1d(A, B, T, opts=_opts(n))
        torch.cuda.synchronize()
        torch.testing.assert_close(A.double(), ref_A, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(B.double(), ref_B, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [5, 100, 4097, 20_000])
@pytest.mark.parametrize("T", [4, 31, 70])
def test_wave_with_source_tiled_equals_step_by_step_and_python(n, T, rng):
    u0 = torch.rand(n, generator=rng, dtype=torch.float64)
    c = 0.1 + 0.1 * torch.rand(n, generator=rng, dtype=torch.float64)
    got = []
    for tiling in (False, True):
        u, prev, nxt = u0.cuda(), u0.cuda(), torch.zeros(n, dtype=torch.float64).cuda()
        wave_with_source(u, prev, nxt, c.cuda(), T, n, opts=_opts(n, tiling))
        got.append((u, prev, nxt))
    torch.cuda.synchronize()
    for a, b in zip(*got):
        assert torch.equal(a, b)
    u, prev, nxt = u0.clone(), u0.clone(), torch.zeros(n, dtype=torch.float64)
    wave_with_source(u, prev, nxt, c, T, n, seq=True)
    for a, b in zip(got[1], (u, prev, nxt)):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-9, atol=1e-9)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [3, 64, 1001, 70_000])
def test_rule_90_integer_automaton(n, rng):
    cells0 = torch.randint(0, 2, (n,), generator=rng, dtype=torch.int32)
    T = 77
    expected = cells0.clone()
    for _ in range(T):
        nxt = expected.clone()
        nxt[1:-1] = expected[:-2] ^ expected[2:]
        expected = nxt
    cells, scratch = cells0.cuda(), torch.zeros(n, dtype=torch.int32).cuda()
    rule_90(cells, scratch, T, n, opts=_opts(n))
    torch.cuda.synchronize()
    assert torch.equal(cells.cpu(), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 300_001])
def test_pointwise_loop_tiled(n, rng):
    x0 = torch.rand(n, generator=rng).cuda()
    x = x0.clone()
    repeated_scale(x, 45, n, opts=_opts(n))
    expected = x0.double()
    for t in range(45):
        expected = expected * 0.5 + t
    torch.cuda.synchronize()
    torch.testing.assert_close(x.double(), expected, rtol=1e-5, atol=1e-3)


@pytest.mark.gpu
def test_arguments_that_share_memory_are_an_error_not_a_wrong_answer(rng):
    # The coefficient is the field itself: the tiles would read it for 32 steps while it
    # changes; launched step by step it is well defined.
    n, T = 5000, 12
    u0 = 0.2 * torch.rand(n, generator=rng, dtype=torch.float64).cuda()  # stable as c
    u, prev, nxt = u0.clone(), u0.clone(), torch.zeros_like(u0)
    with pytest.raises(parir.ParirError, match=r"arguments 'u' and 'c' share memory.*"
                                               r"time_tiling = False"):
        wave_with_source(u, prev, nxt, u, T, n, opts=_opts(n))
    # A call that failed to launch is not a cached call: the same call fails again.
    assert wave_with_source._calls.find(_opts(n), (u, prev, nxt, u, T, n)) is None
    with pytest.raises(parir.ParirError, match=r"arguments 'u' and 'c' share memory"):
        wave_with_source(u, prev, nxt, u, T, n, opts=_opts(n))
    # Nothing ran; step by step, the call is well defined and gives the plain Python's answer.
    wave_with_source(u, prev, nxt, u, T, n, opts=_opts(n, tiling=False))
    cu, cprev, cnxt = u0.cpu(), u0.cpu(), torch.zeros(n, dtype=torch.float64)
    wave_with_source(cu, cprev, cnxt, cu, T, n, seq=True)
    for a, b in zip((u, prev, nxt), (cu, cprev, cnxt)):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-9, atol=1e-9)
