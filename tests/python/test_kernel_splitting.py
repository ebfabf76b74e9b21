"""Kernels cut where their blocks would have to wait for each other: reductions into locals
over several blocks (through a temporary from the caching allocator), block-level writes
before a multi-block loop, and consecutive multi-block loops. Compiled on the CPU; run on the
GPU against torch on random non-zero data, outputs poisoned with NaN. Loops mapped to blocks
(the outer levels of a nest) are cut the same way where other statements sit beside them."""

import math

import pytest
import torch

import parir_torch as parir
from helpers import check_close


def plan_lines(src, start):
    return [l for l in src.splitlines() if l.startswith("//@ " + start)]


@parir.jit
def row_sums_local(x, y, N, M):
    parir.label("row")
    for r in range(N):
        s = 0.0
        parir.label("col")
        for c in range(M):
            s += x[r, c]
        y[r] = s * 2.0


@parir.jit
def zero_then_reduce(x, y, N, M):
    parir.label("row")
    for r in range(N):
        y[r] = 0.0
        parir.label("col")
        for c in range(1, M, 2):
            y[r] += x[r, c]


@parir.jit
def copy_then_reverse(x, y, z, N, M):
    parir.label("row")
    for r in range(N):
        parir.label("col")
        for c in range(M):
            y[r, c] = x[r, c] * 2.0
        parir.label("col")
        for c in range(M):
            z[r, c] = y[r, M - 1 - c]


@parir.jit
def softmax_long_rows(x, y, N, M):
    parir.label("row")
    for r in range(N):
        m = -parir.inf
        parir.label("col")
        for c in range(M):
            m = max(m, x[r, c])
        s = 0.0
        parir.label("col")
        for c in range(M):
            s += parir.exp(x[r, c] - m)
        parir.label("col")
        for c in range(M):
            y[r, c] = parir.exp(x[r, c] - m) / s


@parir.jit
def max_in_gpu_block(x, y, M):
    with parir.gpu:
        s = x[0]
        parir.label("i")
        for i in range(M):
            s = max(s, x[i])
        y[0] = s


@parir.jit
def slice_max_rows(x, y, N, M):
    parir.label("row")
    parir.label("col")
    y[:] = parir.max(x[:, :], axis=1)


@parir.jit
def slice_min_total(x, y, M):
    parir.label("col")
    y[0] = parir.min(x[:])


@parir.jit
def sum_plus_one(x, out, N):
    parir.label("col")
    out[0] = parir.sum(x[:]) + 1.0


@parir.jit
def repeated_row_sums(x, y, T, N, M):
    for t in range(T):
        parir.label("row")
        for r in range(N):
            s = 0.0
            parir.label("col")
            for c in range(M):
                s += x[r, c] * (t + 1)
            y[r] += s


# Loops mapped to blocks (the middle level of three) next to each other in a parallel loop's
# body: the second reads rows that other blocks of the first wrote.
@parir.jit
def flip_rows_after_scale(x, tmp, y, P, N, M):
    parir.label('P')
    for p in range(P):
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(M):
                tmp[p, i, j] = x[p, i, j] * 2.0
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(M):
                y[p, i, j] = tmp[p, N - 1 - i, j]


# A block-level write before a loop mapped to blocks, which all of its blocks update.
@parir.jit
def zero_then_add_planes(x, z, P, N, M):
    parir.label('P')
    for p in range(P):
        z[p] = 0.0
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(M):
                parir.atomic_add(z[p], x[p, i, j])


# The same siblings in a sequential block (`with parir.gpu:`), whose loops map to blocks.
@parir.jit
def flip_rows_in_a_gpu_block(x, tmp, y, N, M):
    with parir.gpu:
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(M):
                tmp[i, j] = x[i, j] * 2.0
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(M):
                y[i, j] = tmp[N - 1 - i, j]


def three_levels(P, N, M):
    return parir.par({'P': parir.threads(P), 'i': parir.threads(N), 'j': parir.threads(M)})


def spec(rows, cols, reduce=True):
    col = parir.threads(cols)
    return parir.par({"row": parir.threads(rows), "col": col.reduce() if reduce else col})


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


# ----- what the compiler produces (no GPU needed) ---------------------------------------------

def test_reduction_into_a_local_over_several_blocks_goes_through_a_temporary():
    src = parir.print_compiled(row_sums_local, [meta(3, 5000), meta(3), 3, 5000],
                               spec(3, 5000))
    assert plan_lines(src, "temp") == ["//@ temp partial0 float32[3]"]
    launches = plan_lines(src, "launch")
    assert len(launches) == 3, launches
    assert "atomic_combine(parir::Sum(), &partial0[r]" in src


def test_one_block_reduction_into_a_local_stays_one_kernel():
    src = parir.print_compiled(row_sums_local, [meta(3, 1000), meta(3), 3, 1000],
                               spec(3, 1000))
    assert not plan_lines(src, "temp")
    assert len(plan_lines(src, "launch")) == 1


def test_cluster_reduction_into_a_local_stays_one_kernel():
    opts = spec(3, 4096)
    opts.use_cuda_thread_block_clusters = True
    src = parir.print_compiled(row_sums_local, [meta(3, 4096), meta(3), 3, 4096], opts)
    assert not plan_lines(src, "temp")
    assert [l.split(" cluster(")[1][0] for l in plan_lines(src, "launch")] == ["4"]


def test_tpb_of_a_block_level_loop_does_not_limit_the_inner_loop():
    opts = parir.par({"row": parir.threads(3).tpb(32), "col": parir.threads(256).reduce()})
    src = parir.print_compiled(row_sums_local, [meta(3, 255), meta(3), 3, 255], opts)
    assert plan_lines(src, "launch") == ["//@ launch row_sums_local grid(3) block(256) (x, y)"]


def test_block_level_write_before_a_multi_block_loop_runs_in_a_kernel_of_its_own():
    src = parir.print_compiled(zero_then_reduce, [meta(5, 9001), meta(5), 5, 9001],
                               spec(5, 4500))
    launches = plan_lines(src, "launch")
    assert [l.split()[3] for l in launches] == ["grid(1)", "grid(25)"], launches
    assert not plan_lines(src, "temp")


def test_consecutive_multi_block_loops_run_in_kernels_of_their_own():
    src = parir.print_compiled(copy_then_reverse, [meta(3, 8191)] * 3 + [3, 8191],
                               spec(3, 8191, reduce=False))
    assert len(plan_lines(src, "launch")) == 2


def test_sibling_loops_on_blocks_run_in_kernels_of_their_own():
    src = parir.print_compiled(flip_rows_after_scale, [meta(2, 5, 7)] * 3 + [2, 5, 7],
                               three_levels(2, 5, 7))
    assert plan_lines(src, "launch") == [
        "//@ launch flip_rows_after_scale_0 grid(10) block(32) (x, tmp)",
        "//@ launch flip_rows_after_scale_1 grid(10) block(32) (tmp, y)"]
    src = parir.print_compiled(flip_rows_in_a_gpu_block, [meta(5, 7)] * 3 + [5, 7],
                               three_levels(1, 5, 7))
    assert len(plan_lines(src, "launch")) == 2


def test_block_level_write_before_a_loop_on_blocks_runs_in_a_kernel_of_its_own():
    src = parir.print_compiled(zero_then_add_planes, [meta(2, 5, 7), meta(2), 2, 5, 7],
                               three_levels(2, 5, 7))
    launches = plan_lines(src, "launch")
    assert [l.split()[3] for l in launches] == ["grid(1)", "grid(10)"], launches


def test_loops_on_blocks_each_alone_in_their_body_stay_one_kernel():
    @parir.jit
    def scale_planes(x, y, P, N, M):
        parir.label('P')
        for p in range(P):
            parir.label('i')
            for i in range(N):
                parir.label('j')
                for j in range(M):
                    y[p, i, j] = x[p, i, j] * 2.0
                parir.label('j')
                for j in range(M):
                    y[p, i, j] += x[p, i, M - 1 - j]

    src = parir.print_compiled(scale_planes, [meta(2, 5, 7)] * 2 + [2, 5, 7],
                               three_levels(2, 5, 7))
    assert len(plan_lines(src, "launch")) == 1


def test_a_sequential_loop_around_sibling_loops_on_blocks_warns():
    @parir.jit
    def steps(x, tmp, y, P, N, M):
        parir.label('P')
        for p in range(P):
            for t in range(3):
                parir.label('i')
                for i in range(N):
                    parir.label('j')
                    for j in range(M):
                        tmp[p, i, j] = y[p, i, j] + x[p, i, j]
                parir.label('i')
                for i in range(N):
                    parir.label('j')
                    for j in range(M):
                        y[p, i, j] = tmp[p, N - 1 - i, j]

    with pytest.warns(parir.ParirWarning, match=r"sequential loop runs inside a kernel, where "
                                                r"the parallel loops in its body run on several "
                                                r"thread blocks"):
        parir.print_compiled(steps, [meta(2, 5, 7)] * 3 + [2, 5, 7], three_levels(2, 5, 7))


def test_reduction_under_a_loop_with_changing_bounds_keeps_a_clear_error():
    @parir.jit
    def triangle(x, y, N, M):
        for k in range(N):
            parir.label("row")
            for r in range(k, N):
                s = 0.0
                parir.label("col")
                for c in range(M):
                    s += x[r, c]
                y[r] = s

    with pytest.raises(parir.ParirError, match=r"reduction into local 's' runs on 5 blocks, "
                                               r"which cannot combine their results"):
        parir.print_compiled(triangle, [meta(3, 5000), meta(3), 3, 5000], spec(3, 5000))


def test_a_local_reduction_over_a_loop_on_blocks_is_an_error():
    @parir.jit
    def total(x, y, N, M):
        with parir.gpu:
            s = 0.0
            parir.label("row")
            for r in range(N):
                parir.label("col")
                for c in range(M):
                    s += x[r, c]
            y[0] = s

    with pytest.raises(parir.ParirError, match=r"the reduction into local 's' also reduces over "
                                               r"the loop on line \d+, which runs on thread blocks"):
        parir.print_compiled(total, [meta(31, 33), meta(1), 31, 33],
                             parir.par({"row": parir.threads(31).reduce(),
                                        "col": parir.threads(33).reduce()}))


def test_plan_with_a_temporary_reads_back():
    src = parir.print_compiled(row_sums_local, [meta(3, 5000), meta(3), 3, 5000],
                               spec(3, 5000))
    run = parir.compile_string("row_sums_local", src)
    assert callable(run)


# ----- results on the GPU ---------------------------------------------------------------------

def rand(*shape, dtype=torch.float32, gen=None):
    v = torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1
    return torch.where(v == 0, 0.25, v).to(dtype).cuda()


def poisoned(*shape, dtype=torch.float32):
    if dtype.is_floating_point:
        return torch.full(shape, math.nan, dtype=dtype, device="cuda")
    return torch.full(shape, 77, dtype=dtype, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("n, m", [(1, 1025), (3, 5000), (33, 4097), (2, 100_000)])
def test_row_sums_into_a_local_over_several_blocks(n, m, rng):
    x = rand(n, m, gen=rng)
    y = poisoned(n)
    row_sums_local(x, y, n, m, opts=spec(n, m))
    check_close(y, x.double().sum(1) * 2, "row sums")


@pytest.mark.gpu
def test_block_level_write_before_a_multi_block_reduction(rng):
    n, m = 5, 9001
    x = rand(n, m, gen=rng)
    y = poisoned(n)
    zero_then_reduce(x, y, n, m, opts=spec(n, 4500))
    check_close(y, x.double()[:, 1::2].sum(1), "odd columns")


@pytest.mark.gpu
def test_a_multi_block_loop_sees_all_of_the_loop_before_it(rng):
    n, m = 3, 8191
    x = rand(n, m, gen=rng)
    y, z = poisoned(n, m), poisoned(n, m)
    copy_then_reverse(x, y, z, n, m, opts=spec(n, m, reduce=False))
    check_close(z, (x * 2).flip(1), "reversed")


@pytest.mark.gpu
@pytest.mark.parametrize("p, n, m", [(2, 5, 7), (3, 33, 31), (1, 1000, 65)])
def test_sibling_loops_on_blocks_see_all_of_the_loop_before_them(p, n, m, rng):
    x = rand(p, n, m, gen=rng)
    tmp, y = poisoned(p, n, m), poisoned(p, n, m)
    flip_rows_after_scale(x, tmp, y, p, n, m, opts=three_levels(p, n, m))
    check_close(y, (x * 2).flip(1), "rows flipped across blocks")
    tmp, y = poisoned(n, m), poisoned(n, m)
    flip_rows_in_a_gpu_block(x[0], tmp, y, n, m, opts=three_levels(1, n, m))
    check_close(y, (x[0] * 2).flip(0), "rows flipped across blocks (gpu block)")


@pytest.mark.gpu
@pytest.mark.parametrize("p, n, m", [(2, 5, 7), (3, 200, 33)])
def test_block_level_write_before_a_loop_on_blocks(p, n, m, rng):
    x = rand(p, n, m, dtype=torch.float64, gen=rng)
    z = poisoned(p, dtype=torch.float64)
    zero_then_add_planes(x, z, p, n, m, opts=three_levels(p, n, m))
    check_close(z, x.sum((1, 2)), "plane sums")


@pytest.mark.gpu
@pytest.mark.parametrize("n, m", [(4, 3000), (7, 33_000)])
def test_softmax_of_rows_longer_than_a_block(n, m, rng):
    x = rand(n, m, gen=rng) * 5
    y = poisoned(n, m)
    softmax_long_rows(x, y, n, m, opts=spec(n, m))
    check_close(y, torch.softmax(x.double(), 1), "softmax")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.int8])
def test_max_into_a_local_in_a_gpu_block_over_several_blocks(dtype, rng):
    m = 6000
    x = (rand(m, gen=rng) * 100).to(dtype)
    y = poisoned(1, dtype=dtype)
    max_in_gpu_block(x, y, m, opts=parir.par({"i": parir.threads(m).reduce()}))
    check_close(y, x.max().reshape(1), "max")


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [40, 3000])
def test_slice_max_into_a_narrower_integer_converts_the_result_once(cols, rng):
    # Every value is negative: the maximum wraps into uint8 once, as torch stores it.
    x = torch.randint(-1000, -1, (5, cols), generator=rng).cuda()
    y = poisoned(5, dtype=torch.uint8)
    slice_max_rows(x, y, 5, cols, opts=spec(5, min(cols, 1024)))
    check_close(y, x.max(1).values.to(torch.uint8), "max rows")
    z = poisoned(1, dtype=torch.int8)
    slice_min_total(x[0].contiguous() * -1, z, cols,
                    opts=parir.par({"col": parir.threads(cols).reduce()}))
    check_close(z, (x[0] * -1).min().to(torch.int8).reshape(1), "min")


@pytest.mark.gpu
@pytest.mark.parametrize("n, threads", [(1, 32), (4097, 64), (4097, 4097), (1_000_003, 8192)])
def test_slice_sum_in_a_larger_expression_outside_parallel_code(n, threads, rng):
    x = rand(n, gen=rng)
    out = poisoned(1)
    sum_plus_one(x, out, n, opts=parir.par({"col": parir.threads(threads)}))
    torch.testing.assert_close(out.double().cpu(), (x.double().sum() + 1).reshape(1).cpu(),
                               rtol=1e-4, atol=1e-4 * max(1.0, n ** 0.5))


@pytest.mark.gpu
def test_temporaries_start_again_in_each_host_loop_iteration(rng):
    t, n, m = 4, 3, 5000
    x = rand(n, m, gen=rng)
    y = torch.zeros(n, device="cuda")
    repeated_row_sums(x, y, t, n, m, opts=spec(n, m))
    check_close(y, x.double().sum(1) * sum(range(1, t + 1)), "repeated sums")


@pytest.mark.gpu
@pytest.mark.usefixtures("no_garbage")
def test_split_kernels_replay_in_a_cuda_graph(rng):
    n, m = 3, 5000
    x = rand(n, m, gen=rng)
    y = poisoned(n)
    opts = spec(n, m)
    row_sums_local(x, y, n, m, opts=opts)  # compiled and loaded before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        row_sums_local(x, y, n, m, opts=opts)
    x.copy_(rand(n, m, gen=rng))
    y.fill_(math.nan)
    graph.replay()
    torch.cuda.synchronize()
    check_close(y, x.double().sum(1) * 2, "graph replay")
