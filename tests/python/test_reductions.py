"""Parallel reductions (`.reduce()`): each operation and dtype, single- and multi-block, into
tensor elements and locals, against torch on random non-zero data."""

import re

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import check_close, check_reduction, without_aligned_copies
from reduction_programs import (count_positive, row_max_local, softmax_rows, sum_rows,
                                total_in_gpu_block, total_max, total_min, total_prod, total_sum)

OPS = {"sum": total_sum, "prod": total_prod, "min": total_min, "max": total_max}
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]
SIZES = [1, 31, 32, 33, 1000, 2 ** 20 + 7]


def data(op, n, dtype, device, gen):
    if op == "prod":  # values whose product neither overflows nor vanishes
        if dtype.is_floating_point:
            v = 1 + (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 1e-5
        else:
            v = torch.where(torch.rand(n, generator=gen) < 0.5, 1, -1)
            v[torch.randperm(n, generator=gen)[:min(n, 20)]] *= 2
    elif dtype.is_floating_point:
        v = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
        v = torch.where(v == 0, 0.5, v)
    else:
        v = torch.randint(-1000, 1000, (n,), generator=gen)
        v = torch.where(v == 0, 7, v)
    return v.to(dtype).to(device)


def reference(op, x, init):
    x = x.cpu().double() if x.dtype.is_floating_point else x.cpu().long()
    if op == "sum":
        return init + x.sum()
    if op == "prod":
        return init * x.prod()
    if op == "min":
        return torch.minimum(torch.tensor(init, dtype=x.dtype), x.min())
    return torch.maximum(torch.tensor(init, dtype=x.dtype), x.max())


def initial(op, dtype):
    return {"sum": 3, "prod": 2, "min": 5000, "max": -5000}[op]


@pytest.mark.parametrize("op", sorted(OPS))
def test_reductions_compile_without_gpu(op):
    for dtype in DTYPES:
        for n in (33, 5000):
            x = torch.ones(n, dtype=dtype)
            src = parir.print_compiled(OPS[op], [x, torch.ones(1, dtype=dtype), n],
                                       parir.par({"i": parir.threads(n).reduce()}))
            assert "parir::block_reduce(acc0" in src
            assert ("atomic_combine" in src) == (n > 1024)
            binary, _, _ = _C.nvrtc_compile(src, "sm_90")
            assert len(binary) > 100


def test_reduction_code_is_readable():
    x, y = torch.ones(100, 37), torch.ones(100)
    src = parir.print_compiled(sum_rows, [x, y, 100, 37],
                               parir.par({"N": parir.threads(100), "M": parir.threads(37).reduce()}))
    assert "// label 'M': parallel reduction (sum) over 64 threads" in src
    assert "float acc0 = parir::Sum::identity<float>();" in src
    assert "acc0 = (acc0 + x[i * 37 + j]);" in src
    # The target is loaded before the row (its loop stores nothing), combined after it.
    assert src.index("y_before0 = y[i];") < src.index("float acc0")
    assert "if (threadIdx.x == 0) y[i] = (y_before0 + acc0);" in src



@parir.jit
def row_max_of_slices(x, y, N, M):
    parir.label('N')
    parir.label('M')
    y[:] = parir.max(x[:, :], axis=1)


def kernel_statements(src):
    """Each kernel's statement lines, stripped, without #line directives."""
    kernels, depth = [], 0
    for text in src.splitlines():
        text = text.strip()
        if not text or text.startswith("#line") or text.startswith("//"):
            continue
        if depth == 0 and text.startswith('extern "C" __global__'):
            kernels.append([])
        if kernels and depth > 0:
            kernels[-1].append(text)
        depth += text.count("{") - text.count("}")
    return kernels


# Every thread reads y[i] after the reduction, then one thread overwrites it: the barrier
# between the two is needed (block_reduce's comes before the reads).
@parir.jit
def max_then_read_then_write(x, y, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        m = parir.max(x[i, :])
        v = y[i]
        y[i] = m + v


# Every thread reads y[i] before the reduction and one thread overwrites it after: the
# reduction's block_reduce orders the two, so no other barrier.
@parir.jit
def read_then_max_then_write(x, y, N, M):
    parir.label('N')
    for i in range(N):
        v = y[i]
        parir.label('M')
        m = parir.max(x[i, :])
        y[i] = m + v


# Loops that touch no memory (rows in registers) need no barrier after them; the row that
# one loop writes and the next reads at other threads' indices does.
@parir.jit
def scaled_then_shifted(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        s = parir.sum(x[i, :])
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j] / s
        parir.label('M')
        for j in range(M):
            x[i, j] = out[i, (j + 1) % M]


@pytest.mark.parametrize("prog,args,spec,barriers", [
    # block_reduce's barrier comes after every read of the row: the one thread's store of the
    # row's maximum needs no other.
    (row_max_of_slices, [torch.ones(100, 1000), torch.ones(100), 100, 1000],
     {"N": parir.threads(100), "M": parir.threads(256)}, 0),
    (max_then_read_then_write, [torch.ones(100, 1000), torch.ones(100), 100, 1000],
     {"N": parir.threads(100), "M": parir.threads(256)}, 1),
    (read_then_max_then_write, [torch.ones(100, 1000), torch.ones(100), 100, 1000],
     {"N": parir.threads(100), "M": parir.threads(256)}, 0),
    # After the loop that writes out (read at other threads' indices by the next one).
    (scaled_then_shifted, [torch.ones(100, 1000), torch.ones(100, 1000), 100, 1000],
     {"N": parir.threads(100), "M": parir.threads(256)}, 1),
    # The store ends the kernel: block_reduce's own barriers are all it needs.
    (sum_rows, [torch.ones(100, 37), torch.ones(100), 100, 37],
     {"N": parir.threads(100), "M": parir.threads(37).reduce()}, 0),
])
def test_barriers_are_printed_once_and_not_as_a_kernels_last_statement(prog, args, spec,
                                                                        barriers):
    # A barrier right after another orders nothing more, nor does one that a block runs last
    # (its loop over blocks runs once per block and ends the kernel).
    src = without_aligned_copies(parir.print_compiled(prog, args, parir.par(spec)))
    barrier = "__syncthreads();"
    assert src.count(barrier) == barriers, src
    for lines in kernel_statements(src):
        for a, b in zip(lines, lines[1:]):
            assert not (a == barrier and b == barrier), src
        last = [t for t in lines if t != "}"][-1]
        assert last != barrier, src

@parir.jit
def scale_by_half(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = 0.5 * x[i]


# (program, arguments, spec, whether each thread counts its iterations from zero)
COUNTED_LOOPS = [
    # 2,048 groups of four on 1,024 threads: two each.
    (row_max_of_slices, [(64, 8192), (64,), 64, 8192], {"N": 64, "M": 1024}, True),
    # 250 groups on 256 threads: some threads have none.
    (row_max_of_slices, [(64, 1000), (64,), 64, 1000], {"N": 64, "M": 256}, False),
    # One group each.
    (row_max_of_slices, [(64, 4096), (64,), 64, 4096], {"N": 64, "M": 1024}, False),
    # Over two blocks of 1,024 threads, 16,384 elements in groups of four: two groups each.
    (scale_by_half, [(16384,), (16384,), 16384], {"i": 2048}, True),
]


def _counted_case(prog, shapes, spec, device):
    gen = torch.Generator().manual_seed(len(shapes[0]))
    args = [torch.rand(s, generator=gen, dtype=torch.float32).to(device) - 0.25
            if isinstance(s, tuple) else s for s in shapes]
    return args, parir.par({k: parir.threads(v) for k, v in spec.items()})


@pytest.mark.parametrize("prog,shapes,spec,counted", COUNTED_LOOPS)
def test_iterations_per_thread_counted_from_zero(prog, shapes, spec, counted):
    # A loop whose every thread runs the same iterations says how many: the CUDA compiler then
    # unrolls it and issues the thread's loads together.
    args, opts = _counted_case(prog, shapes, spec, "cpu")
    src = parir.print_compiled(prog, args, opts)
    assert ("for (int parir_k_" in src) == counted, src
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("prog,shapes,spec,counted", COUNTED_LOOPS)
def test_iterations_per_thread_counted_on_the_gpu(prog, shapes, spec, counted):
    args, opts = _counted_case(prog, shapes, spec, "cuda")
    x, y = args[0], args[1]
    want = x.amax(dim=1) if prog is row_max_of_slices else 0.5 * x
    y.fill_(float("nan"))
    prog(*args, opts=opts)
    check_close(y, want)


@pytest.mark.gpu
@pytest.mark.parametrize("prog", [max_then_read_then_write, read_then_max_then_write,
                                  scaled_then_shifted])
@pytest.mark.parametrize("M", [1000, 4097])
def test_barriers_left_out_keep_results(prog, M):
    # The programs above on the GPU against plain Python: reads before a barrier that is left
    # out would see the store (or miss it).
    N = 37
    gen = torch.Generator().manual_seed(M)
    x = torch.rand(N, M, generator=gen, dtype=torch.float64) + 0.5
    y = torch.rand((N, M) if prog is scaled_then_shifted else (N,), generator=gen,
                   dtype=torch.float64) + 0.5
    spec = parir.par({"N": parir.threads(N), "M": parir.threads(256)})
    want_x, want_y = x.clone(), y.clone()
    prog(want_x, want_y, N, M, seq=True)
    got_x, got_y = x.cuda(), y.cuda()
    prog(got_x, got_y, N, M, opts=spec)
    check_close(got_x.cpu(), want_x)
    check_close(got_y.cpu(), want_y)


@pytest.mark.parametrize("prog", [softmax_rows, row_max_local, total_in_gpu_block, count_positive])
def test_other_reduction_programs_compile(prog):
    n, m = 50, 300
    args = {softmax_rows: [torch.ones(n, m), torch.ones(n, m), n, m],
            row_max_local: [torch.ones(n, m), torch.ones(n), n, m],
            total_in_gpu_block: [torch.ones(m), torch.ones(1), m],
            count_positive: [torch.ones(m), torch.ones(1, dtype=torch.int64), m]}[prog]
    spec = {"N": parir.threads(n), "M": parir.threads(m).reduce(), "i": parir.threads(m).reduce()}
    spec = {k: v for k, v in spec.items() if f"parir.label('{k}')" in _source(prog)}
    src = parir.print_compiled(prog, args, parir.par(spec))
    _C.nvrtc_compile(src, "sm_90")


def _source(prog):
    import inspect
    return inspect.getsource(prog.fn)


@pytest.mark.parametrize("body,pattern", [
    ("out[0] += x[i]\n        out[0] *= x[i]", r"combines with prod here but with sum"),
    ("out[0] += x[i]\n        x[i] = out[0]", r"cannot be read inside it"),
    ("k = i // 2\n        out[k] += x[i]", r"changes within the reduction loop"),
])
def test_reduction_errors(tmp_path, body, pattern):
    path = tmp_path / "bad_reduction.py"
    path.write_text("import parir_torch as parir\n"
                    "def f(x, out, N):\n"
                    "    parir.label('i')\n"
                    "    for i in range(N):\n"
                    f"        {body}\n")
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    with pytest.raises(parir.ParirError, match=pattern):
        parir.print_compiled(ns["f"], [torch.ones(10), torch.ones(10), 10],
                             parir.par({"i": parir.threads(10).reduce()}))


def test_a_reduce_labelled_loop_updating_its_own_elements_is_elementwise(tmp_path):
    # One 'i' label shared by a reduction and an update loop (as in Gram-Schmidt): out[i] -= ...
    # updates each iteration's own element, so it is an ordinary parallel loop.
    path = tmp_path / "update_loop.py"
    path.write_text("import parir_torch as parir\n"
                    "def f(x, out, N):\n"
                    "    parir.label('i')\n"
                    "    for i in range(N):\n"
                    "        out[0] += x[i]\n"
                    "    parir.label('i')\n"
                    "    for i in range(N):\n"
                    "        x[i] -= out[0]\n")
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    x, out = torch.arange(1.0, 11.0), torch.zeros(1)
    src = parir.print_compiled(ns["f"], [x, out, 10], parir.par({"i": parir.threads(10).reduce()}))
    _C.nvrtc_compile(src, "sm_90")
    assert "x[i] = (x[i] - out[0]);" in src
    parir.jit(ns["f"])(x, out, 10, seq=True)
    torch.testing.assert_close(x, torch.arange(1.0, 11.0) - 55.0)


def test_reduction_into_a_local_over_several_blocks_is_cut_into_kernels():
    src = parir.print_compiled(row_max_local, [torch.ones(4, 2000), torch.ones(4), 4, 2000],
                               parir.par({"N": parir.threads(4), "M": parir.threads(2000).reduce()}))
    assert "//@ temp partial0 float32[4]" in src
    assert len([l for l in src.splitlines() if l.startswith("//@ launch")]) == 3


@parir.jit
def moments(x, out, N):
    with parir.gpu:
        s = 0.0
        s2 = 0.0
        parir.label("i")
        for i in range(N):
            d = x[i] - 1.0
            s += d
            s2 += d * d
        out[0] = s
        out[1] = s2


def test_a_loop_accumulating_into_two_locals_reduces_each():
    src = parir.print_compiled(moments, [torch.ones(3000), torch.ones(2), 3000],
                               parir.par({"i": parir.threads(256).reduce()}))
    assert src.count("parir::block_reduce(") == 2


def test_a_loop_reading_another_accumulation_is_rejected():
    @parir.jit
    def running(x, out, N):
        with parir.gpu:
            s = 0.0
            t = 0.0
            parir.label("i")
            for i in range(N):
                s += x[i]
                t += s
            out[0] = t

    with pytest.raises(parir.ParirError, match=r"'s' is a result of the reduction loop on line "
                                               r"\d+ and cannot be read inside it"):
        parir.print_compiled(running, [torch.ones(30), torch.ones(1), 30],
                             parir.par({"i": parir.threads(32).reduce()}))


# ----- on the GPU -------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("n, threads", [(1, 32), (1000, 256), (70_000, 70_000)])
def test_two_accumulations_in_one_loop_match_torch(n, threads, rng):
    x = (torch.rand(n, generator=rng, dtype=torch.float64) * 4 - 1).cuda()
    out = torch.full((2,), float("nan"), dtype=torch.float64, device="cuda")
    moments(x, out, n, opts=parir.par({"i": parir.threads(threads).reduce()}))
    d = x - 1.0
    check_close(out, torch.stack([d.sum(), (d * d).sum()]), "moments")


@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_reduction_matches_torch(op, dtype, n, rng):
    x = data(op, n, dtype, "cuda", rng)
    init = initial(op, dtype)
    out = torch.full((1,), init, dtype=dtype, device="cuda")
    OPS[op](x, out, n, opts=parir.par({"i": parir.threads(n).reduce()}))
    ref = reference(op, x, init)
    check_reduction(out, ref, n)


@pytest.mark.gpu
def test_row_of_ten_million(rng):
    n = 10 ** 7
    x = data("sum", n, torch.float64, "cuda", rng)
    out = torch.zeros(1, dtype=torch.float64, device="cuda")
    total_sum(x, out, n, opts=parir.par({"i": parir.threads(n).reduce()}))
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-9, atol=1e-8)
    # Fewer threads than elements: each thread accumulates many before the block reduction.
    out.zero_()
    total_sum(x, out, n, opts=parir.par({"i": parir.threads(4096).reduce()}))
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-9, atol=1e-8)


# A reduction that asks for at least as many threads as the GPU holds at once, each of which
# would walk many iterations, runs on more threads (8 to 16 iterations each): n, the threads
# asked for, and the grid of 1024-thread blocks launched.
SPREAD = [(2 ** 23, 2 ** 19, 1024), (10_000_019, 300_000, 1172)]


def _launch_grid(src):
    return int(re.search(r"//@ launch \w+ grid\((\d+)\)", src).group(1))


@pytest.mark.parametrize("n, threads, grid", SPREAD)
def test_long_flat_reductions_run_on_more_threads(n, threads, grid):
    args = [torch.empty(n, device="meta"), torch.empty(1, device="meta"), n]
    src = parir.print_compiled(total_sum, args, parir.par({"i": parir.threads(threads).reduce()}))
    assert _launch_grid(src) == grid
    # Fewer threads than the GPU holds, or a fixed order of the blocks' results: as requested.
    src = parir.print_compiled(total_sum, args, parir.par({"i": parir.threads(2 ** 18).reduce()}))
    assert _launch_grid(src) == 256
    fixed = parir.CompileOptions(parallelize={"i": parir.threads(threads).reduce()},
                                 deterministic=True)
    assert f"grid({(threads + 1023) // 1024})" in parir.print_compiled(total_sum, args, fixed)


@pytest.mark.gpu
@pytest.mark.parametrize("n, threads, grid", SPREAD)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_long_flat_reductions_on_more_threads_match_torch(op, dtype, n, threads, grid, rng):
    x = data(op, n, dtype, "cuda", rng)
    init = initial(op, dtype)
    out = torch.full((1,), init, dtype=dtype, device="cuda")
    OPS[op](x, out, n, opts=parir.par({"i": parir.threads(threads).reduce()}))
    check_reduction(out, reference(op, x, init), n)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 31, 33, 1000, 1024])
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_reductions(m, dtype, rng):
    n = 257
    x = torch.stack([data("sum", m, dtype, "cuda", rng) for _ in range(n)])
    y = torch.zeros(n, dtype=dtype, device="cuda")
    spec = parir.par({"N": parir.threads(n), "M": parir.threads(m).reduce()})
    sum_rows(x, y, n, m, opts=spec)
    check_close(y, x.double().sum(1) if dtype.is_floating_point else x.sum(1), "sum_rows")
    y = torch.full((n,), -77, dtype=dtype, device="cuda")
    row_max_local(x, y, n, m, opts=spec)
    check_close(y, x.max(1).values, "row_max_local")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (31, 33), (1000, 1000), (64, 4097)])
def test_softmax(shape, rng):
    n, m = shape
    x = torch.randn(n, m, generator=rng).cuda()
    out = torch.full_like(x, float("nan"))
    softmax_rows(x, out, n, m, opts=parir.par({"N": parir.threads(n),
                                               "M": parir.threads(min(m, 1024)).reduce()}))
    torch.testing.assert_close(out, torch.softmax(x, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_gpu_block_and_conditional_count(rng):
    x = torch.randn(1000, generator=rng).cuda()
    out = torch.full((1,), float("nan"), device="cuda")
    total_in_gpu_block(x, out, 1000, opts=parir.par({"i": parir.threads(1000).reduce()}))
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-5, atol=1e-4)
    cnt = torch.zeros(1, dtype=torch.int64, device="cuda")
    count_positive(x, cnt, 1000, opts=parir.par({"i": parir.threads(1000).reduce()}))
    assert cnt.item() == (x > 0).sum().item()


# ----- thread block clusters ----------------------------------------------------------------


def cluster_opts(spec, max_blocks=8):
    opts = parir.par(spec)
    opts.use_cuda_thread_block_clusters = True
    opts.max_thread_blocks_per_cluster = max_blocks
    return opts


def test_cluster_reductions_compile_for_sm90():
    x, out = torch.ones(5000), torch.ones(1)
    src = parir.print_compiled(total_sum, [x, out, 5000],
                               cluster_opts({"i": parir.threads(5000).reduce()}))
    assert "//@ launch total_sum grid(5) block(1024) cluster(5) (x, out)" in src
    assert "parir::cluster_reduce(acc0, parir::Sum())" in src
    assert "atomic_combine" not in src  # the cluster spans the whole reduction
    _C.nvrtc_compile(src, "sm_90")
    # Beyond max_thread_blocks_per_cluster the reduction falls back to atomics.
    src = parir.print_compiled(total_sum, [torch.ones(20000), out, 20000],
                               cluster_opts({"i": parir.threads(20000).reduce()}))
    assert "cluster(" not in src.split("//@")[1] and "atomic_combine" in src


def test_cluster_size_must_be_a_power_of_two():
    with pytest.raises(parir.ParirError, match="power of two"):
        parir.print_compiled(total_sum, [torch.ones(10), torch.ones(1), 10],
                             cluster_opts({"i": parir.threads(10).reduce()}, max_blocks=6))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1025, 3000, 8192, 16000])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_cluster_reductions_match_torch(op, dtype, n, rng):
    x = data(op, n, dtype, "cuda", rng)
    init = initial(op, dtype)
    out = torch.full((1,), init, dtype=dtype, device="cuda")
    OPS[op](x, out, n, opts=cluster_opts({"i": parir.threads(n).reduce()}, max_blocks=16))
    ref = reference(op, x, init)
    check_reduction(out, ref, n)


@pytest.mark.gpu
def test_cluster_reduction_into_a_local_and_per_row(rng):
    n, m = 37, 4000  # 4 blocks per row, one cluster per row
    x = torch.randn(n, m, generator=rng).cuda()
    y = torch.full((n,), float("nan"), device="cuda")
    spec = {"N": parir.threads(n), "M": parir.threads(m).reduce()}
    row_max_local(x, y, n, m, opts=cluster_opts(spec))
    check_close(y, x.max(1).values, "row max through clusters")
    y.zero_()
    sum_rows(x, y, n, m, opts=cluster_opts(spec))
    torch.testing.assert_close(y, x.sum(1), rtol=1e-4, atol=1e-3)


@parir.jit
def _min_into_first(x, out, lo, N):
    parir.label('i')
    for i in range(lo, N):
        out[0] = min(out[0], x[i])


@parir.jit
def _max_into_first(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] = max(out[0], x[i])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8, torch.float16])
def test_a_reduction_over_nothing_leaves_a_narrow_target_unchanged(dtype):
    # The accumulator of a narrow type is wider (int64, float32): its identity (INT64_MAX for
    # min) must not reach the target truncated (as -1), as Python leaves out[0] alone here.
    x = torch.arange(1, 11, device="cuda").to(dtype)
    out = torch.full((1,), 7, device="cuda").to(dtype)
    _min_into_first(x, out, 1, 1, opts=parir.par({'i': parir.threads(32).reduce()}))
    assert out.item() == 7


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8, torch.uint16,
                                   torch.float16, torch.bfloat16])
@pytest.mark.parametrize("threads", [32, 4096])
def test_narrow_min_and_max_with_idle_threads_and_blocks(dtype, threads):
    # 100 iterations over up to 4096 threads: most threads, and with 4096 three of the four
    # blocks, reduce nothing and combine their identities; the result must be the data's.
    gen = torch.Generator().manual_seed(threads)
    x = torch.randint(5, 100, (100,), generator=gen).to(dtype).cuda()
    lo = torch.full((1,), 101, device="cuda").to(dtype)
    _min_into_first(x, lo, 0, 100, opts=parir.par({'i': parir.threads(threads).reduce()}))
    assert lo.item() == x.cpu().double().min().item()  # (torch has no CUDA min for uint16)
    hi = torch.full((1,), 1, device="cuda").to(dtype)
    _max_into_first(x, hi, 100, opts=parir.par({'i': parir.threads(threads).reduce()}))
    assert hi.item() == x.cpu().double().max().item()


@parir.jit
def _weighted_count(x, out, N):
    parir.label('i')
    for i in range(N):
        c = 0  # a per-iteration temporary, accumulated into but not the reduction
        k = 0
        while k < 3:
            k += 1
            c += k
        out[0] += x[i] * c


def test_per_iteration_temporaries_are_not_the_reduction():
    src = parir.print_compiled(_weighted_count, [torch.ones(50), torch.zeros(1), 50],
                               parir.par({'i': parir.threads(64).reduce()}))
    assert "parir::block_reduce(" in src and "out[0] = (out[0] + " in src, src


@pytest.mark.gpu
def test_per_iteration_temporaries_on_the_gpu():
    x = torch.randn(1000, device="cuda", dtype=torch.float64)
    out = torch.zeros(1, device="cuda", dtype=torch.float64)
    _weighted_count(x, out, 1000, opts=parir.par({'i': parir.threads(256).reduce()}))
    torch.testing.assert_close(out, 6.0 * x.sum().reshape(1))
