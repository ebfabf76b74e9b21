"""Scans (prefix sums): parir.cumsum, cumprod, cummin and cummax of slices as plain Python
(seq=True) against torch; compiled scans, sequential per thread and parallel (.scan(): the
block's threads walk the row in tiles), in the slice form and the loop form, compiled through
NVRTC for every dtype here and run against torch on a GPU (marker `gpu`); and their errors."""

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


# ----- compiled scans: the slice form and the parallel loop form -----------------------------

ALL_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
              torch.uint64, torch.bool]
SCAN_OPS = ["cumsum", "cumprod", "cummin", "cummax", "cumsum_ex", "cumprod_ex"]


@parir.jit
def slice_scans(x, s, p, lo, hi, es, ep, N):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        s[i, :] = parir.cumsum(x[i, :])
        parir.label('M')
        p[i, :] = parir.cumprod(x[i, :])
        parir.label('M')
        lo[i, :] = parir.cummin(x[i, :])
        parir.label('M')
        hi[i, :] = parir.cummax(x[i, :])
        parir.label('M')
        es[i, :] = parir.cumsum(x[i, :], exclusive=True)
        parir.label('M')
        ep[i, :] = parir.cumprod(x[i, :], exclusive=True)


@parir.jit
def loop_scans(x, s, p, lo, hi, es, ep, tot, N, M):
    parir.label('N')
    for i in range(N):
        a = x[i, 0] * 0
        parir.label('M')
        for j in range(M):
            a += x[i, j]
            s[i, j] = a
        tot[i] = a
        b = x[i, 0] * 0 + 1
        parir.label('M')
        for j in range(M):
            b *= x[i, j]
            p[i, j] = b
        c = x[i, 0]
        parir.label('M')
        for j in range(M):
            c = parir.min(c, x[i, j])
            lo[i, j] = c
        d = x[i, 0]
        parir.label('M')
        for j in range(M):
            d = parir.max(x[i, j], d)
            hi[i, j] = d
        e = x[i, 0] * 0
        parir.label('M')
        for j in range(M):
            es[i, j] = e
            e += x[i, j]
        f = x[i, 0] * 0 + 1
        parir.label('M')
        for j in range(M):
            ep[i, j] = f
            f *= x[i, j]


def torch_scan(op, x):
    """torch's result for one of SCAN_OPS along dim 1."""
    if op.endswith("_ex"):
        return parir.cumsum(x, exclusive=True) if op == "cumsum_ex" else \
            parir.cumprod(x, exclusive=True)
    return OPS[op](x, 1)


def scan_sample(dtype, n, m, device="cpu", seed=0):
    """Fresh random non-zero data; floats near 1 so that running products stay finite."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        x = torch.rand(n, m, generator=g) < 0.9
    elif dtype.is_floating_point:
        sign = torch.where(torch.rand(n, m, generator=g) < 0.5, -1.0, 1.0)
        x = sign * (1.0 + 1e-3 * torch.randn(n, m, generator=g, dtype=torch.float64))
        x = x.to(dtype)
    else:
        lo = 0 if not dtype.is_signed else -3
        x = torch.randint(lo, 4, (n, m), generator=g)
        x = torch.where(x == 0, 1, x).to(dtype)
    return x.to(device)


def scan_outputs(x, slice_form):
    """The outputs poisoned with NaN (-7 for integers): of torch's dtype for the slice form, of
    x's dtype for the loop form (whose running values have x's type)."""
    outs = []
    for op in SCAN_OPS:
        dtype = x.dtype
        if slice_form and ("sum" in op or "prod" in op) and not x.dtype.is_floating_point:
            dtype = torch.int64  # as torch.cumsum and torch.cumprod give
        poison = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else -7)
        outs.append(torch.full(x.shape, poison, dtype=dtype, device=x.device))
    return outs


def spec(n, tpb=256, scan=True):
    m = parir.threads(tpb).scan() if scan else parir.threads(tpb)
    return parir.par({'N': parir.threads(n), 'M': m})


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_slice_scans_compile_for_every_dtype(dtype):
    x = scan_sample(dtype, 3, 40)
    outs = scan_outputs(x, True)
    for opts in (spec(3), parir.par({'N': parir.threads(3)})):  # parallel, one thread per row
        src = parir.print_compiled(slice_scans, [x, *outs, 3], opts)
        _C.nvrtc_compile(src, "sm_90")
    assert "parir::block_scan" in parir.print_compiled(slice_scans, [x, *outs, 3], spec(3))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_loop_scans_compile_for_every_dtype(dtype):
    x = scan_sample(dtype, 3, 40)
    outs = scan_outputs(x, False)
    tot = torch.zeros(3, dtype=dtype)
    src = parir.print_compiled(loop_scans, [x, *outs, tot, 3, 40], spec(3))
    assert src.count("parir::block_scan") == len(SCAN_OPS)
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16], ids=str)
def test_slice_scans_seq_equal_torch(dtype):
    x = scan_sample(dtype, 3, 50)
    outs = scan_outputs(x, True)
    slice_scans(x, *outs, 3, seq=True)
    for op, out in zip(SCAN_OPS, outs):
        assert torch.equal(out, torch_scan(op, x)), op


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32], ids=str)
def test_loop_scans_seq_equal_torch(dtype):
    x = scan_sample(dtype, 3, 50)
    outs = scan_outputs(x, False)
    tot = torch.zeros(3, dtype=dtype)
    loop_scans(x, *outs, tot, 3, 50, seq=True)
    for op, out in zip(SCAN_OPS, outs):
        assert torch.equal(out, torch_scan(op, x).to(dtype)), op
    torch.testing.assert_close(tot, torch.sum(x, 1).to(dtype))


def check_scans(x, outs, slice_form):
    x = x.cpu()
    m = x.shape[1]
    for op, out in zip(SCAN_OPS, outs):
        got = out.cpu()
        if x.dtype.is_floating_point:
            ref = torch_scan(op, x.double())
            # Another summation order: errors grow with the row, relative to the terms' sizes
            # (products near 1 in magnitude, sums of terms of magnitude 1).
            eps = {torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float32: 1e-6,
                   torch.float64: 1e-14}[x.dtype]
            if not slice_form and x.dtype in (torch.float16, torch.bfloat16):
                continue  # the loop form's running value rounds to x's type at the store only
            tol = eps * 4 * max(1.0, m ** 0.5) * (1 if op.startswith("cummin") or
                                                   op.startswith("cummax") else 8)
            scale = 1.0 if "prod" in op else max(1.0, m ** 0.5)
            torch.testing.assert_close(got.double(), ref, rtol=tol, atol=tol * scale, msg=op)
        else:
            assert torch.equal(got, torch_scan(op, x).to(got.dtype)), op


@pytest.mark.gpu
@pytest.mark.parametrize("form", ["slice", "loop"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.float16],
                         ids=str)
@pytest.mark.parametrize("n, m", [(5, 1), (7, 31), (7, 33), (7, 1000), (3, 4097),
                                  (2, 1_000_003)])
def test_parallel_scans_on_gpu_equal_torch(form, dtype, n, m):
    x = scan_sample(dtype, n, m, "cuda", seed=m)
    outs = scan_outputs(x, form == "slice")
    tpb = 1024 if m > 4000 else 128
    if form == "slice":
        slice_scans(x, *outs, n, opts=spec(n, tpb))
    else:
        tot = torch.full((n,), -7, dtype=dtype, device="cuda")
        loop_scans(x, *outs, tot, n, m, opts=spec(n, tpb))
        if not dtype.is_floating_point:
            assert torch.equal(tot.cpu(), torch.sum(x.cpu(), 1).to(dtype))
    check_scans(x, outs, form == "slice")


@pytest.mark.gpu
def test_parallel_scans_on_gpu_propagate_nan_and_cast_as_torch():
    x = scan_sample(torch.float32, 4, 3000, "cuda")
    x[1, 5] = float("nan")
    x[2, 2999] = float("nan")
    outs = scan_outputs(x, True)
    slice_scans(x, *outs, 4, opts=spec(4, 512))
    for op, out in zip(SCAN_OPS[:4], outs):
        torch.testing.assert_close(out.cpu(), torch_scan(op, x.cpu()), equal_nan=True,
                                   rtol=1e-4, atol=1e-3, msg=op)
    # Small integers and bools add up in int64, as torch's do.
    for dtype in (torch.int8, torch.bool, torch.uint8):
        x = torch.full((2, 5000), 1, dtype=dtype, device="cuda")
        outs = scan_outputs(x, True)
        slice_scans(x, *outs, 2, opts=spec(2, 1024))
        assert torch.equal(outs[0].cpu(), torch.cumsum(x.cpu(), 1))
        assert outs[0][0, -1].item() == 5000


def test_scan_along_columns_seq_and_compiled():
    x = scan_sample(torch.float32, 6, 7)
    out = torch.empty_like(x)

    @parir.jit
    def columns(x, out):
        parir.label('R')
        parir.label('C')
        out[:, :] = parir.cummax(x[:, :], axis=0)

    columns(x, out, seq=True)
    assert torch.equal(out, torch.cummax(x, 0).values)
    for opts in (parir.par({'C': parir.threads(7)}), parir.par({'R': parir.threads(64).scan()}),
                 parir.par({'C': parir.threads(7), 'R': parir.threads(32)})):
        _C.nvrtc_compile(parir.print_compiled(columns, [x, out], opts), "sm_90")


def scan_error(tmp_path, body, name, opts, args=None):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, out, N, M):\n" + body, name)
    x = torch.ones(4, 64)
    with pytest.raises(parir.ParirError) as info:
        parir.print_compiled(m.f, args or [x, torch.empty_like(x), 4, 64], opts)
    return str(info.value)


LOOP_HEAD = ("    parir.label('N')\n"
             "    for i in range(N):\n"
             "        s = 0.0\n"
             "        t = 0.0\n"
             "        parir.label('M')\n"
             "        for j in range(M):\n")


def test_parallel_scan_errors_name_the_line(tmp_path):
    opts = spec(4)
    msg = scan_error(tmp_path, LOOP_HEAD + "            s += x[i, j]\n"
                                           "            t += x[i, j]\n"
                                           "            out[i, j] = s + t\n", "two", opts)
    assert "two running values" in msg and "two.py:10" in msg
    msg = scan_error(tmp_path, LOOP_HEAD + "            u = s * 2\n"
                                           "            s += x[i, j]\n"
                                           "            out[i, j] = u\n", "before", opts)
    assert "only stores to tensor elements" in msg and "before.py:9" in msg
    msg = scan_error(tmp_path, LOOP_HEAD + "            s += x[i, j] * s\n"
                                           "            out[i, j] = s\n", "self", opts)
    assert "reads 's' itself" in msg
    msg = scan_error(tmp_path, LOOP_HEAD + "            s += x[i, j]\n"
                                           "            out[i, j] = s\n"
                                           "            s *= 2.0\n", "twice", opts)
    assert "'s'" in msg and "running value" in msg and "twice.py:" in msg
    msg = scan_error(tmp_path, LOOP_HEAD + "            s += x[i, j]\n"
                                           "            out[i, j] = t\n"
                                           "            t = s\n", "carried", opts)
    assert "carries 't'" in msg
    # Over several blocks the element is computed twice: updating what it reads would not be.
    msg = scan_error(tmp_path, LOOP_HEAD + "            x[i, j] += 1.0\n"
                                           "            s += x[i, j]\n"
                                           "            out[i, j] = s\n", "blocks",
                     parir.par({'N': parir.threads(4), 'M': parir.threads(4096).scan()}))
    assert "runs on 4 blocks" in msg and "twice" in msg and "blocks.py:9" in msg
    msg = scan_error(tmp_path, "    parir.label('N')\n"
                               "    for i in range(N):\n"
                               "        out[i, 0] = parir.cumsum(x[i, :])\n", "scalar",
                     spec(4))
    assert "parir.cumsum" in msg and "scalar.py:5" in msg


def test_scan_spec_flags():
    assert parir.threads(256).scan().is_scan
    assert repr(parir.threads(256).scan().tpb(128)) == "parir.threads(256).scan().tpb(128)"
    with pytest.raises(parir.ParirValueError, match="either a reduction"):
        parir.threads(256).reduce().scan()


def test_parallel_loop_scan_reads_the_running_value_after_the_loop():
    @parir.jit
    def total_and_scale(x, out, tot, N, M):
        parir.label('N')
        for i in range(N):
            s = 0.0
            parir.label('M')
            for j in range(M):
                v = x[i, j] * 2.0
                out[i, j] = s          # exclusive: before this element
                s += v
                out[i, j] += s * 0.0   # inclusive, read after the accumulation
            tot[i] = s

    x = scan_sample(torch.float64, 3, 70)
    out, tot = torch.zeros_like(x), torch.zeros(3, dtype=torch.float64)
    total_and_scale(x, out, tot, 3, 70, seq=True)
    torch.testing.assert_close(tot, 2 * x.sum(1))
    src = parir.print_compiled(total_and_scale, [x, out, tot, 3, 70], spec(3, 64))
    assert "parir::block_scan" in src
    _C.nvrtc_compile(src, "sm_90")


@parir.jit
def running_peak_and_worst(prices, drawdown, worst):
    series, days = prices.shape
    parir.label('series')
    for s in range(series):
        peak = prices[s, 0]
        parir.label('days')
        for d in range(days):
            peak = max(peak, prices[s, d])
            drawdown[s, d] = (peak - prices[s, d]) / peak
        parir.label('days')
        worst[s] = parir.max(drawdown[s, :])


def test_slice_reduction_sharing_a_scan_label_stays_a_reduction():
    # The row's label maps to .scan(); the slice reduction under the same label reduces (it
    # used to become a scan whose accumulator the kernel took as an undefined parameter).
    prices = torch.rand(37, 300, dtype=torch.float64) + 1.0
    drawdown, worst = torch.empty_like(prices), torch.empty(37, dtype=torch.float64)
    opts = parir.par({'series': parir.threads(37), 'days': parir.threads(256).scan()})
    source = parir.print_compiled(running_peak_and_worst, [prices, drawdown, worst], opts)
    assert "//@ launch running_peak_and_worst grid(37) block(256) (prices, drawdown, worst)" \
        in source
    assert "parir::block_scan" in source and "parir::block_reduce" in source
    parir.compile_string("running_peak_and_worst", source, opts).compile("sm_90")
    running_peak_and_worst(prices, drawdown, worst, seq=True)
    peak = torch.cummax(prices, dim=1).values
    torch.testing.assert_close(drawdown, (peak - prices) / peak)
    torch.testing.assert_close(worst, drawdown.max(dim=1).values)


@parir.jit
def along_dim(x, idx, s, c):
    parir.label('N')
    for i in range(x.shape[0]):
        idx[i] = parir.argmax(x[i, :], dim=0)
        s[i] = parir.sum(x[i, :], dim=-1)
        c[i, :] = parir.cumsum(x[i, :], dim=0)


@parir.jit
def axis_and_dim(x, y):
    parir.label('N')
    y[:] = parir.max(x[:, :], dim=1, axis=1)


def test_torchs_dim_keyword_is_axis():
    x = torch.rand(5, 100, dtype=torch.float64)
    idx, s = torch.empty(5, dtype=torch.int64), torch.empty(5, dtype=torch.float64)
    c = torch.empty_like(x)
    opts = parir.par({'N': parir.threads(5)})
    source = parir.print_compiled(along_dim, [x, idx, s, c], opts)
    parir.compile_string("along_dim", source, opts).compile("sm_90")
    along_dim(x, idx, s, c, seq=True)
    assert torch.equal(idx, x.argmax(1))
    torch.testing.assert_close(s, x.sum(1))
    torch.testing.assert_close(c, x.cumsum(1))
    for run in (lambda: parir.print_compiled(axis_and_dim, [x, s], opts),
                lambda: axis_and_dim(x, s, seq=True)):
        with pytest.raises(parir.ParirError, match="axis= or dim= .* not both"):
            run()


# ----- scans over several blocks: a chunk per block, in two kernels --------------------------

def several_blocks(n, threads, tpb):
    return parir.par({'N': parir.threads(n), 'M': parir.threads(threads).scan().tpb(tpb)})


@pytest.mark.parametrize("form", ["slice", "loop"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.float16, torch.uint64],
                         ids=str)
def test_scans_over_several_blocks_compile_to_two_kernels_each(form, dtype):
    x = scan_sample(dtype, 3, 5000)
    outs = scan_outputs(x, form == "slice")
    opts = several_blocks(3, 4096, 512)
    if form == "slice":
        src = parir.print_compiled(slice_scans, [x, *outs, 3], opts)
    else:
        src = parir.print_compiled(loop_scans, [x, *outs, torch.zeros(3, dtype=dtype), 3, 5000],
                                   opts)
    assert src.count("a chunk each: the chunks' totals") == len(SCAN_OPS)
    assert src.count("a chunk each: each chunk from the totals") == len(SCAN_OPS)
    assert "grid(24) block(512)" in src  # 3 rows of 8 blocks
    _C.nvrtc_compile(src, "sm_90")


@parir.jit
def vector_cumsum(x, y):
    parir.label('N')
    y[:] = parir.cumsum(x[:])


@parir.jit
def cumsum_in_place_and_total(x, total):
    with parir.gpu:
        s = 0.0
        parir.label('N')
        for i in range(x.shape[0]):
            s += x[i]
            x[i] = s
        total[0] = s


def test_a_scan_over_several_blocks_in_a_sequential_loop_is_an_error(tmp_path):
    msg = scan_error(tmp_path, "    parir.label('N')\n"
                               "    for i in range(N):\n"
                               "        for k in range(2):\n"
                               "            s = 0.0\n"
                               "            parir.label('M')\n"
                               "            for j in range(M):\n"
                               "                s += x[i, j]\n"
                               "                out[i, j] = s\n", "nested",
                     parir.par({'N': parir.threads(4), 'M': parir.threads(4096).scan()}))
    assert "runs on 4 blocks inside a sequential loop" in msg and "nested.py:8" in msg


def test_scan_of_a_whole_tensor_over_several_blocks_compiles():
    x = torch.rand(100_000)
    src = parir.print_compiled(vector_cumsum, [x, torch.empty_like(x)],
                               parir.par({'N': parir.threads(1 << 16).scan()}))
    assert "//@ temp partial1 float32[64]" in src
    _C.nvrtc_compile(src, "sm_90")
    src = parir.print_compiled(cumsum_in_place_and_total, [x, torch.empty(1)],
                               parir.par({'N': parir.threads(1 << 16).scan()}))
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("form", ["slice", "loop"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.float16],
                         ids=str)
@pytest.mark.parametrize("n, m, threads, tpb", [(3, 1, 2048, 1024), (3, 33, 4096, 256),
                                                (5, 4097, 2048, 512), (7, 1000, 1056, 32),
                                                (2, 1_000_003, 65536, 1024)])
def test_scans_over_several_blocks_on_gpu_equal_torch(form, dtype, n, m, threads, tpb):
    x = scan_sample(dtype, n, m, "cuda", seed=m + 1)
    outs = scan_outputs(x, form == "slice")
    opts = several_blocks(n, threads, tpb)
    if form == "slice":
        slice_scans(x, *outs, n, opts=opts)
    else:
        tot = torch.full((n,), -7, dtype=dtype, device="cuda")
        loop_scans(x, *outs, tot, n, m, opts=opts)
        if not dtype.is_floating_point:
            assert torch.equal(tot.cpu(), torch.sum(x.cpu(), 1).to(dtype))
        else:
            torch.testing.assert_close(tot.cpu().double(), x.cpu().double().sum(1),
                                       rtol=1e-2, atol=1e-2 * m ** 0.5)
    check_scans(x, outs, form == "slice")


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 31, 33, 1000, 4097, 65536 * 3 + 5, 5_000_011])
def test_scan_of_a_whole_tensor_over_several_blocks_on_gpu(m):
    x = torch.randint(-3, 4, (m,), device="cuda").double()
    y = torch.full_like(x, float("nan"))
    vector_cumsum(x, y, opts=parir.par({'N': parir.threads(1 << 16).scan()}))
    assert torch.equal(y, torch.cumsum(x, 0))  # small integers: exact in any order
    total = torch.full((1,), float("nan"), dtype=torch.float64, device="cuda")
    ref = torch.cumsum(x, 0)
    cumsum_in_place_and_total(x, total, opts=parir.par({'N': parir.threads(1 << 14).scan()}))
    assert torch.equal(x, ref) and total.item() == ref[-1].item()



@parir.jit
def total_and_running_max(x, total, peak, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('R')
        for j in range(M):
            total[i] += x[i, j]
        m = x[i, 0]
        parir.label('S')
        for j in range(M):
            m = parir.max(m, x[i, j])
            peak[i, j] = m


def test_a_scan_over_several_blocks_is_cut_beside_a_cluster_reduction():
    x = torch.rand(3, 5000)
    opts = parir.par({'N': parir.threads(3), 'R': parir.threads(4096).reduce(),
                      'S': parir.threads(4096).scan()})
    opts.use_cuda_thread_block_clusters = True
    src = parir.print_compiled(total_and_running_max,
                               [x, torch.zeros(3), torch.empty_like(x), 3, 5000], opts)
    launches = [l for l in src.splitlines() if l.startswith("//@ launch")]
    assert len(launches) == 3 and "cluster(4)" in launches[0], launches
    assert "a chunk each: the chunks' totals" in src
    _C.nvrtc_compile(src, "sm_90")


@parir.jit
def running_min_and_row_min(x, out1, out4):
    parir.label('L2')
    for i in range(1, 31):
        parir.label('L3')
        out1[i, :] = parir.cummin(x[i, :])
        parir.label('L3')
        out4[i] = parir.min(out1[i, :])


def test_a_reduction_after_a_scan_over_several_blocks_reads_what_the_scan_wrote():
    # The reduction's first value reads the scan's output: a statement the cuts after the
    # scan's kernels repeat (it was a kernel of its own, whose local the others lacked).
    x = torch.rand(31, 40)
    args = [x, torch.empty_like(x), torch.empty(31)]
    src = parir.print_compiled(running_min_and_row_min, args,
                               parir.par({'L2': parir.threads(64),
                                          'L3': parir.threads(2048).scan()}))
    _C.nvrtc_compile(src, "sm_90")
    running_min_and_row_min(*args, seq=True)
    assert torch.equal(args[1][1:], torch.cummin(x[1:], 1).values)
    assert torch.equal(args[2][1:], x[1:].min(1).values)


@parir.jit
def cumsum_at_the_top(x, out, total, n):
    # The plainest cumulative sum: the running value a local of the function.
    s = 0.0
    parir.label('i')
    for i in range(n):
        s += x[i]
        out[i] = s
    with parir.gpu:
        total[0] = s


@pytest.mark.parametrize("threads", [1024, 1 << 16])
def test_a_scan_whose_running_value_the_function_assigns_compiles(threads):
    x = torch.rand(100_000)
    src = parir.print_compiled(cumsum_at_the_top, [x, torch.empty_like(x), torch.empty(1), 100_000],
                               parir.par({'i': parir.threads(threads).scan()}))
    assert "parir::block_scan" in src
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("n,threads", [(1, 32), (1000, 1024), (100_003, 1 << 16)])
def test_a_scan_whose_running_value_the_function_assigns_on_gpu(n, threads):
    x = torch.rand(n, dtype=torch.float64, device="cuda")
    out = torch.full_like(x, float("nan"))
    total = torch.full((1,), float("nan"), dtype=torch.float64, device="cuda")
    cumsum_at_the_top(x, out, total, n, opts=parir.par({'i': parir.threads(threads).scan()}))
    torch.testing.assert_close(out, x.cumsum(0))
    torch.testing.assert_close(total, x.sum().reshape(1))
