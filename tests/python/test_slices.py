"""Slice statements: each slice dimension becomes a loop; slice reductions become reduction
loops. Compiled without a GPU, checked against torch on one."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import check_close, check_reduction
from slice_programs import (floyd_warshall, jacobi, matrix_extremes, softmax, strided_reverse,
                            sum_cols, sum_rows2, total, total_slices)


def jacobi_ref(A, B, T):
    A, B = A.clone(), B.clone()
    for _ in range(1, T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def floyd_ref(path):
    p = path.clone()
    for k in range(p.shape[0]):
        p = torch.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    return p


def cases(n, m, device, gen):
    """(name, fn, args, spec, [(output, reference)]) for every slice program."""
    x = torch.rand(n, m, generator=gen, dtype=torch.float64).to(device) + 0.5
    xf = x.float()
    A = torch.rand(n, m, generator=gen, dtype=torch.float64).to(device)
    B = A.clone()
    dist = torch.rand(n, n, generator=gen, dtype=torch.float64).to(device) * 10
    nan = float("nan")
    y = torch.full((n,), nan, device=device, dtype=torch.float64)
    yc = torch.full((m,), nan, device=device, dtype=torch.float64)
    soft = torch.full((n, m), nan, device=device)
    tot = torch.full((1,), nan, device=device)
    tot2 = torch.full((1,), nan, device=device, dtype=torch.float64)
    v = torch.rand(2 * m + 1, generator=gen).to(device)
    rev = torch.full((m,), nan, device=device)
    ext = torch.full((3,), nan, device=device, dtype=torch.float64)
    Aref, Bref = jacobi_ref(A, B, 5)
    return [
        ("sum_rows2", sum_rows2, [x, y, n, m],
         {"N": parir.threads(n), "M": parir.threads(min(m, 1024))}, [(y, x.sum(1))]),
        ("sum_cols", sum_cols, [x, yc, n, m],
         {"M": parir.threads(m), "N": parir.threads(min(n, 1024))}, [(yc, x.sum(0))]),
        ("softmax", softmax, [xf, soft, n, m],
         {"i": parir.threads(n), "j": parir.threads(min(m, 1024))},
         [(soft, torch.softmax(xf.double(), 1))]),
        ("jacobi", jacobi, [A, B, 5], {"i": parir.threads(n), "j": parir.threads(m)},
         [(A, Aref), (B, Bref)]),
        ("total", total, [xf[0], tot, m], {"i": parir.threads(min(m, 1024)).reduce()},
         [(tot, xf[0].double().sum().reshape(1))]),
        ("total_slices", total_slices, [x[0], tot2], {"i": parir.threads(m)},
         [(tot2, x[0].sum().reshape(1))]),
        ("floyd_warshall", floyd_warshall, [dist, n], {"i": parir.threads(n), "j": parir.threads(n)},
         [(dist, floyd_ref(dist))]),
        ("strided_reverse", strided_reverse, [v, rev], {"i": parir.threads(m)},
         [(rev, v.double().flip(0)[::2][:m] * 2.0 + v.double()[1::2][:m])]),
        ("matrix_extremes", matrix_extremes, [x, ext], {"i": parir.threads(n), "j": parir.threads(m)},
         [(ext, torch.stack([x.max(), x.min(), x[:2, :2].prod()]))]),
    ]


SHAPES = [(2, 3), (31, 33), (100, 1000), (1000, 31)]


@pytest.mark.parametrize("shape", SHAPES[:2])
def test_slice_programs_compile_without_gpu(shape):
    gen = torch.Generator().manual_seed(0)
    for name, fn, args, spec, _ in cases(*shape, "cpu", gen):
        src = parir.print_compiled(fn, args, parir.par(spec))
        binary, _, _ = _C.nvrtc_compile(src, "sm_90")
        assert len(binary) > 100, name


def test_slice_programs_as_python():
    gen = torch.Generator().manual_seed(0)
    for name, fn, args, spec, checks in cases(5, 7, "cpu", gen):
        if name in ("jacobi", "floyd_warshall"):
            continue  # they update their inputs in place: the references assume one run
        fn(*args, seq=True)
        for out, ref in checks:
            check_close(out, ref, name + " seq")


def test_labels_go_to_the_loops_left_to_right():
    x, y = torch.ones(10, 20), torch.ones(10)
    src = parir.print_compiled(sum_rows2, [x, y, 10, 20],
                               parir.par({"N": parir.threads(10), "M": parir.threads(20)}))
    assert "// label 'N': parallel over 10 blocks" in src
    assert "// label 'M': parallel reduction (sum) over 32 threads" in src  # reduce inferred


def test_jacobi_host_loop_launches_two_kernels():
    A = torch.ones(50, 60)
    src = parir.print_compiled(jacobi, [A, A.clone(), 10],
                               parir.par({"i": parir.threads(48), "j": parir.threads(58)}))
    assert "//@ for t in range(1, 10, 1):" in src
    assert "//@   launch jacobi_0 grid(48) block(64) (A, B)" in src
    assert "//@   launch jacobi_1 grid(48) block(64) (A, B)" in src


@pytest.mark.parametrize("stmt,pattern", [
    ("a = x[0, :]", r"would create a new tensor.*a\[:\] = x\[0, :\]"),
    ("y[:] = x[:, 0] + x[0, :3]", r"shape mismatch"),
    ("y[:] = parir.sum(x[:, :], axis=2)", r"axis=2 is out of range"),
    ("y[:] = x[:, :]", r"has 2 slice dimensions but the statement has 1"),
    ("y[0] = parir.min(x[0, 0:0])", r"min of an empty slice"),
])
def test_slice_errors(tmp_path, stmt, pattern):
    path = tmp_path / "bad_slice.py"
    path.write_text("import parir_torch as parir\n"
                    "def f(x, y):\n"
                    "    parir.label('i')\n"
                    f"    {stmt}\n")
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    with pytest.raises(parir.ParirError, match=pattern) as info:
        parir.print_compiled(ns["f"], [torch.ones(4, 5), torch.ones(4)],
                             parir.par({"i": parir.threads(4)}))
    assert f"{path}:4" in str(info.value)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES)
def test_slice_programs_match_torch(shape, rng):
    for name, fn, args, spec, checks in cases(*shape, "cuda", rng):
        fn(*args, opts=parir.par(spec))
        for i, (out, ref) in enumerate(checks):
            check_close(out, ref, f"{name}{shape} output {i}")


@pytest.mark.gpu
def test_gpu_block_with_a_reduction_over_many_blocks(rng):
    n = 10 ** 6 + 3
    x = torch.rand(n, generator=rng).cuda()
    out = torch.full((1,), float("nan"), device="cuda")
    total(x, out, n, opts=parir.par({"i": parir.threads(n).reduce()}))
    torch.testing.assert_close(out[0].double(), x.double().sum(), rtol=1e-5, atol=1e-2)


@pytest.mark.gpu
def test_full_reduction_over_many_blocks(rng):
    n = 2 ** 20 + 7
    x = torch.rand(n, generator=rng, dtype=torch.float64).cuda()
    out = torch.full((1,), float("nan"), dtype=torch.float64, device="cuda")
    total_slices(x, out, opts=parir.par({"i": parir.threads(n)}))
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-10, atol=1e-8)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 2 ** 20 + 7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_slice_reduction_ops_match_torch(op, dtype, n, rng):
    from slice_programs import slice_max, slice_min, slice_prod, slice_sum
    from test_reductions import data, reference

    fn = {"sum": slice_sum, "prod": slice_prod, "min": slice_min, "max": slice_max}[op]
    x = data(op, n, dtype, "cuda", rng)
    out = torch.full((1,), -77, dtype=dtype, device="cuda")  # poison: the result overwrites it
    fn(x, out, opts=parir.par({"i": parir.threads(n)}))
    identity = {"sum": 0, "prod": 1}.get(op)
    ref = reference(op, x, identity) if identity is not None else (
        x.cpu().min() if op == "min" else x.cpu().max())
    check_reduction(out, ref, n)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 33, 1000])
def test_slice_reductions_inside_a_parallel_loop(m, rng):
    from slice_programs import slice_row_reduce

    n = 129
    x = torch.randn(n, m, generator=rng, dtype=torch.float64).cuda()
    y = torch.full((n,), float("nan"), dtype=torch.float64, device="cuda")
    slice_row_reduce(x, y, n, m, opts=parir.par({"i": parir.threads(n), "j": parir.threads(m)}))
    check_close(y, x.sum(1) - x.max(1).values, "sum - max per row")
