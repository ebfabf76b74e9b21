"""Scans (prefix sums): parir.cumsum, cumprod, cummin and cummax of slices as plain Python
(seq=True) against torch, the errors of compiled scans, and the loop form that compiled code
writes instead: one thread per row carrying the running value, compiled through NVRTC here and
run against torch on a GPU (marker `gpu`)."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import load_module

DTYPES = [torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.int8,
          torch.bool]
OPS = {"cumsum": torch.cumsum, "cumprod": torch.cumprod,
       "cummin": lambda t, dim: torch.cummin(t, dim=dim).values,
       "cummax": lambda t, dim: torch.cummax(t, dim=dim).values}


@parir.jit
def row_scans(x, s, p, lo, hi, N):
    parir.label('N')
    for i in range(N):
        s[i, :] = parir.cumsum(x[i, :])
        p[i, :] = parir.cumprod(x[i, :])
        lo[i, :] = parir.cummin(x[i, :])
        hi[i, :] = parir.cummax(x[i, :])


def sample(dtype, n, m, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(n, m, generator=g) < 0.7
    if dtype.is_floating_point:
        # Near 1 so that running products stay finite over long rows.
        return (1.0 + 0.01 * torch.randn(n, m, generator=g, dtype=torch.float64)).to(dtype)
    return torch.randint(-3, 4, (n, m), generator=g).to(dtype)


def outputs(x, dtype=None):
    """The four outputs, of torch's result dtype of each scan unless `dtype` is given."""
    return [torch.full(x.shape, -7, dtype=dtype or OPS[op](x, 1).dtype) for op in OPS]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m", [1, 31, 33, 1000])
def test_seq_scans_equal_torch(dtype, m):
    x = sample(dtype, 3, m)
    outs = outputs(x)
    row_scans(x, *outs, 3, seq=True)
    for out, (name, op) in zip(outs, OPS.items()):
        assert out.dtype == op(x, 1).dtype, name
        assert torch.equal(out, op(x, 1)), name


def test_seq_scan_types_are_torchs():
    # Integers and bools add and multiply in int64, as torch.cumsum does; min and max keep the
    # element type. The store converts to the output's dtype.
    for dtype in (torch.int8, torch.int32, torch.bool, torch.uint8):
        x = torch.ones(2, 5, dtype=dtype)
        assert parir.cumsum(x[0, :]).dtype == torch.int64
        assert parir.cumprod(x[0, :]).dtype == torch.int64
        assert parir.cummax(x[0, :]).dtype == dtype
    x = torch.full((1, 300), 1, dtype=torch.int8)
    out = torch.zeros(1, 300, dtype=torch.int8)
    lo, hi, p = (torch.zeros(1, 300, dtype=torch.int8) for _ in range(3))
    row_scans(x, out, p, lo, hi, 1, seq=True)
    assert torch.equal(out, torch.arange(1, 301).to(torch.int8).unsqueeze(0))  # wraps as C


def test_seq_scan_nan_propagates_as_torch():
    x = torch.tensor([[1.0, float("nan"), 0.5, 3.0], [2.0, 1.0, float("nan"), -1.0]])
    outs = outputs(x)
    row_scans(x, *outs, 2, seq=True)
    for out, (name, op) in zip(outs, OPS.items()):
        torch.testing.assert_close(out, op(x, 1), equal_nan=True, msg=name)
    assert torch.isnan(outs[3][0, 1:]).all() and torch.isnan(outs[2][1, 2:]).all()


def test_seq_scan_axis_and_exclusive():
    x = torch.arange(1.0, 13.0).reshape(3, 4)
    assert torch.equal(parir.cumsum(x), torch.cumsum(x, 1))
    assert torch.equal(parir.cumsum(x, axis=0), torch.cumsum(x, 0))
    assert torch.equal(parir.cummax(x, axis=-2), torch.cummax(x, 0).values)
    ex = parir.cumsum(x[0, :], exclusive=True)
    assert ex.tolist() == [0.0, 1.0, 3.0, 6.0]
    assert parir.cumprod(x[0, :], exclusive=True).tolist() == [1.0, 1.0, 2.0, 6.0]
    assert parir.cumsum(x, axis=0, exclusive=True)[:, 1].tolist() == [0.0, 2.0, 8.0]


def test_seq_scan_errors():
    x = torch.ones(3, 4)
    with pytest.raises(parir.ParirTypeError, match="axis=2 is out of range"):
        parir.cumsum(x, axis=2)
    with pytest.raises(parir.ParirTypeError, match="scans a slice expression"):
        parir.cummax(1.0)
    with pytest.raises(parir.ParirTypeError, match="takes axis= as an integer"):
        parir.cumprod(x, axis=1.0)


@pytest.mark.parametrize("op", list(OPS))
def test_compiled_scan_is_an_error_naming_the_line(tmp_path, op):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, out, N):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              f"        out[i, :] = parir.{op}(x[i, :])\n", f"scan_{op}")
    x = torch.ones(4, 8)
    with pytest.raises(parir.ParirError, match=f"parir.{op}") as info:
        parir.print_compiled(m.f, [x, torch.empty_like(x), 4], parir.par({'N': parir.threads(4)}))
    assert f"{tmp_path / f'scan_{op}.py'}:5" in str(info.value)


def test_scan_spec_is_an_error():
    with pytest.raises(parir.ParirValueError, match=r"\.scan\(\) is not supported"):
        parir.threads(256).scan()


# ----- the loop form: one thread per row carries the running values --------------------------

@parir.jit
def row_scans_loop(x, s, p, lo, hi, N, M):
    parir.label('N')
    for i in range(N):
        a = x[i, 0]
        b = x[i, 0]
        c = x[i, 0]
        d = x[i, 0]
        s[i, 0] = a
        p[i, 0] = b
        lo[i, 0] = c
        hi[i, 0] = d
        for j in range(1, M):
            v = x[i, j]
            a += v
            b *= v
            c = parir.min(c, v)
            d = parir.max(d, v)
            s[i, j] = a
            p[i, j] = b
            lo[i, j] = c
            hi[i, j] = d


LOOP_DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]


def loop_args(dtype, n, m, device="cpu"):
    x = sample(dtype, n, m).to(device)
    poison = float("nan") if dtype.is_floating_point else -7
    return x, [torch.full((n, m), poison, dtype=dtype, device=device) for _ in OPS]


def check_loop(x, outs, m):
    for out, (name, op) in zip(outs, OPS.items()):
        ref = op(x.cpu().double() if x.dtype.is_floating_point else x.cpu(), 1)
        got = out.cpu()
        if x.dtype.is_floating_point:
            tol = (1e-5 if x.dtype == torch.float32 else 1e-12) * max(1.0, m ** 0.5)
            torch.testing.assert_close(got.double(), ref, rtol=tol, atol=tol, msg=name)
        else:
            assert torch.equal(got, ref.to(x.dtype)), name


@pytest.mark.parametrize("dtype", LOOP_DTYPES, ids=str)
def test_loop_form_seq_equals_torch(dtype):
    for m in (1, 31, 33, 1000):
        x, outs = loop_args(dtype, 5, m)
        row_scans_loop(x, *outs, 5, m, seq=True)
        check_loop(x, outs, m)


@pytest.mark.parametrize("dtype", LOOP_DTYPES, ids=str)
def test_loop_form_compiles(dtype):
    x, outs = loop_args(dtype, 5, 33)
    src = parir.print_compiled(row_scans_loop, [x, *outs, 5, 33],
                               parir.par({'N': parir.threads(5)}))
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", LOOP_DTYPES, ids=str)
@pytest.mark.parametrize("n, m", [(5, 1), (37, 31), (37, 33), (37, 1000), (3, 4097),
                                  (2, 1 << 20)])
def test_loop_form_on_gpu_equals_torch(dtype, n, m):
    x, outs = loop_args(dtype, n, m, "cuda")
    row_scans_loop(x, *outs, n, m, opts=parir.par({'N': parir.threads(n)}))
    check_loop(x, outs, m)


def test_benchmark_kernel_compiles_and_matches_torch():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import bench_scans

    for n, m in bench_scans.SHAPES:
        x = torch.empty(n, m, device="meta")
        args, opts = bench_scans.parir_call(x, torch.empty_like(x))
        _C.nvrtc_compile(parir.print_compiled(bench_scans.row_cumsum, args, opts), "sm_90")
    x = torch.rand(3, 50, dtype=torch.float64)
    out = torch.empty_like(x)
    args, _ = bench_scans.parir_call(x, out)
    bench_scans.row_cumsum(*args, seq=True)
    torch.testing.assert_close(out, torch.cumsum(x, 1))
