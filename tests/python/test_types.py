"""Element types: every dtype through the compiler and NVRTC (CPU), and on the GPU against torch:
arithmetic, casts to every type, float16/bfloat16 math, reductions, forced int/float sizes."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import check_close

ALL = list(parir.ElemSize)
INTS = [parir.ElemSize.I8, parir.ElemSize.I16, parir.ElemSize.I32, parir.ElemSize.I64,
        parir.ElemSize.U8, parir.ElemSize.U16, parir.ElemSize.U32, parir.ElemSize.U64]
FLOATS = [parir.ElemSize.F16, parir.ElemSize.BF16, parir.ElemSize.F32, parir.ElemSize.F64]
HALVES = [torch.float16, torch.bfloat16]


def arith(x, y, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = x[i] * y[i] + x[i] + y[i]


def cast_all(x, b, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, N):
    parir.label('i')
    for i in range(N):
        b[i] = parir.bool(x[i])
        i8[i] = parir.int8(x[i])
        i16[i] = parir.int16(x[i])
        i32[i] = parir.int32(x[i])
        i64[i] = parir.int64(x[i])
        u8[i] = parir.uint8(x[i])
        u16[i] = parir.uint16(x[i])
        u32[i] = parir.uint32(x[i])
        u64[i] = parir.uint64(x[i])
        f16[i] = parir.float16(x[i])
        bf16[i] = parir.bfloat16(x[i])
        f32[i] = parir.float32(x[i])
        f64[i] = parir.float64(x[i])


def half_math(x, y, out, N):
    parir.label('i')
    for i in range(N):
        out[0, i] = parir.exp(x[i])
        out[1, i] = parir.log(x[i])
        out[2, i] = parir.sqrt(x[i])
        out[3, i] = parir.sin(x[i])
        out[4, i] = parir.cos(x[i])
        out[5, i] = parir.tanh(x[i])
        out[6, i] = parir.abs(-x[i])
        out[7, i] = parir.atan2(x[i], y[i])
        out[8, i] = parir.min(x[i], y[i])
        out[9, i] = parir.max(x[i], y[i])
        out[10, i] = x[i] ** y[i]
        out[11, i] = x[i] // y[i]
        out[12, i] = x[i] % y[i]
        out[13, i] = x[i] / y[i] - 1.5


def reduce_sum(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] += x[i]


def reduce_max(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] = parir.max(out[0], x[i])


def counting(out, N):
    parir.label('i')
    for i in range(N):
        out[i] = i * 3 + 0.5


def spec(n, reduce=False):
    p = parir.threads(n)
    return parir.par({'i': p.reduce() if reduce else p})


# ----- CPU: code generation and NVRTC for every type ------------------------------------------

def test_elem_size_api():
    assert [e.size() for e in ALL] == [1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8]
    for e in ALL:
        assert e.to_torch() == getattr(torch, e.value)
    np = pytest.importorskip("numpy")
    assert parir.ElemSize.I32.to_numpy() is np.int32
    assert parir.ElemSize.F16.to_numpy() is np.float16
    with pytest.raises(parir.ParirTypeError, match="no bfloat16"):
        parir.ElemSize.BF16.to_numpy()
    import ctypes
    assert parir.ElemSize.U16.to_ctype() is ctypes.c_uint16
    assert parir.ElemSize.F64.to_ctype() is ctypes.c_double
    with pytest.raises(parir.ParirTypeError, match="no type for float16"):
        parir.ElemSize.F16.to_ctype()


@pytest.mark.parametrize("t", ALL, ids=lambda t: t.value)
def test_every_type_compiles(t):
    dt = t.to_torch()
    src = parir.print_compiled(arith, [torch.zeros(37, dtype=dt)] * 3 + [37], spec(37))
    _C.nvrtc_compile(src, "sm_90")
    if t in (parir.ElemSize.F16, parir.ElemSize.BF16):
        assert '#include "parir_half.h"' in src
        _C.nvrtc_compile(src, "sm_80")
    if t is not parir.ElemSize.Bool:
        src = parir.print_compiled(reduce_sum, [torch.zeros(5000, dtype=dt),
                                                torch.zeros(1, dtype=dt), 5000],
                                   spec(5000, reduce=True))
        _C.nvrtc_compile(src, "sm_90")


@pytest.mark.parametrize("t", ALL, ids=lambda t: t.value)
def test_casts_from_every_type_compile(t):
    outs = [torch.zeros(9, dtype=e.to_torch()) for e in ALL]
    src = parir.print_compiled(cast_all, [torch.zeros(9, dtype=t.to_torch()), *outs, 9], spec(9))
    _C.nvrtc_compile(src, "sm_90")


@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_half_math_uses_half_intrinsics(dt):
    x = torch.zeros(7, dtype=dt)
    src = parir.print_compiled(half_math, [x, x, torch.zeros(14, 7, dtype=dt), 7], spec(7))
    _C.nvrtc_compile(src, "sm_90")
    prelude = _C.prelude
    assert "parir::exp(x[i])" in src  # parir_half.h's overload: hexp
    header = _C.half_header
    assert "hexp(a)" in header and "__hmin_nan" in header and "htanh(a)" in header
    assert "hexp" not in prelude


def test_forced_sizes_change_the_default_types():
    opts = spec(9)
    opts.force_int_size = parir.ElemSize.I32
    opts.force_float_size = parir.float32
    src = parir.print_compiled(counting, [torch.zeros(9, dtype=torch.float64), 9], opts)
    assert "for (int32_t i = " in src
    assert "0.5f" in src
    src64 = parir.print_compiled(counting, [torch.zeros(9, dtype=torch.float64), 9], spec(9))
    assert "for (int64_t i = " in src64 and "0.5f" not in src64
    opts.force_float_size = torch.float16
    src = parir.print_compiled(counting, [torch.zeros(9, dtype=torch.float64), 9], opts)
    assert "__double2half(0.5)" in src
    _C.nvrtc_compile(src, "sm_90")


def test_promotion_rules():
    def f(a, b, c, d, out, N):
        parir.label('i')
        for i in range(N):
            out[i] = a[i] + b[i] + c[i] * 2.5 + d[i]

    def typed(*dts):
        ts = [torch.zeros(4, dtype=d) for d in dts]
        return parir.print_compiled(f, ts + [torch.zeros(4), 4], spec(4))

    # float16 + bfloat16 meet in float32; uint8 + int8 widen to int16 (PyTorch's rules).
    src = typed(torch.float16, torch.bfloat16, torch.int32, torch.float16)
    assert "parir::from_half<float>" in src
    src = typed(torch.uint8, torch.int8, torch.int8, torch.int8)
    assert "((int16_t)" in src


# ----- GPU -----------------------------------------------------------------------------------

def _random(dt, n, rng, low=1, high=10):
    if dt == torch.bool:
        return torch.randint(0, 2, (n,), generator=rng).bool().cuda()
    if dt.is_floating_point:
        return (torch.rand(n, generator=rng, dtype=torch.float64) * (high - low) + low).to(dt).cuda()
    return torch.randint(low, high, (n,), generator=rng).to(dt).cuda()


@pytest.mark.gpu
@pytest.mark.parametrize("t", ALL, ids=lambda t: t.value)
def test_every_type_arithmetic(t, rng):
    dt, n = t.to_torch(), 1031
    x, y = _random(dt, n, rng), _random(dt, n, rng)
    out = torch.full((n,), 77, dtype=dt, device="cuda") if not dt.is_floating_point else \
        torch.full((n,), float("nan"), dtype=dt, device="cuda")
    parir.jit(arith)(x, y, out, n, opts=spec(n))
    if dt == torch.bool:
        ref = ((x.long() * y.long() + x.long() + y.long()) != 0).cpu()
    elif dt.is_floating_point:
        xc, yc = x.cpu().double(), y.cpu().double()
        ref = xc * yc + xc + yc
        # Three operations, each rounded to dt: within 4 units of dt's precision of the exact
        # (float64) result.
        torch.testing.assert_close(out.cpu().double(), ref, rtol=4 * torch.finfo(dt).eps, atol=0)
        return
    else:
        ref = (x.cpu().long() * y.cpu().long() + x.cpu().long() + y.cpu().long()).to(dt)
    assert torch.equal(out.cpu(), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("t", [parir.ElemSize.F32, parir.ElemSize.F16, parir.ElemSize.BF16,
                               parir.ElemSize.I32, parir.ElemSize.U8],
                         ids=lambda t: t.value)
def test_casts_to_every_type(t, rng):
    n = 333
    x = _random(t.to_torch(), n, rng, 0, 100)
    outs = [torch.zeros(n, dtype=e.to_torch(), device="cuda") for e in ALL]
    for o in outs:
        if o.dtype.is_floating_point:
            o.fill_(float("nan"))
    parir.jit(cast_all)(x, *outs, n, opts=spec(n))
    xf = x.cpu().double()
    for e, o in zip(ALL, outs):
        ref = (xf != 0) if e is parir.ElemSize.Bool else xf.trunc().to(e.to_torch()) \
            if e in INTS else xf.to(e.to_torch())
        assert torch.equal(o.cpu(), ref), f"{t.value} -> {e.value}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", HALVES, ids=str)
def test_half_math_matches_torch(dt, rng):
    n = 1000
    x, y = _random(dt, n, rng, 0.5, 4), _random(dt, n, rng, 0.5, 4)
    out = torch.full((14, n), float("nan"), dtype=dt, device="cuda")
    parir.jit(half_math)(x, y, out, n, opts=spec(n))
    a, b = x.cpu().float(), y.cpu().float()
    rounded = lambda v: v.to(dt).float()  # noqa: E731
    refs = [a.exp(), a.log(), a.sqrt(), a.sin(), a.cos(), a.tanh(), a.abs(),
            torch.atan2(a, b), torch.minimum(a, b), torch.maximum(a, b), a ** b,
            torch.floor(a / b), torch.remainder(a, b), rounded(a / b) - 1.5]
    tol = 2e-3 if dt == torch.float16 else 1.6e-2
    for k, ref in enumerate(refs):
        torch.testing.assert_close(out[k].cpu().float(), rounded(ref), rtol=tol, atol=tol,
                                   msg=f"{dt} row {k}")


# (dtype, n, values, rtol): sums whose partial sums are exact in the type compare exactly;
# n > 1024 spans several blocks, which combine with 2-byte atomics.
NARROW_SUMS = [
    (torch.float16, 1000, "ints", 0.0),
    (torch.float16, 3001, "ints01", 0.0),
    (torch.bfloat16, 1000, "unit", 1e-2),
    (torch.bfloat16, 5003, "unit", 3e-2),
    (torch.int16, 100_003, "ints", 0.0),
    (torch.uint16, 100_003, "ints", 0.0),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dt,n,values,rtol", NARROW_SUMS, ids=lambda v: str(v))
def test_narrow_reductions_single_and_multi_block(dt, n, values, rtol, rng):
    if values == "unit":
        x = torch.rand(n, generator=rng).to(dt).cuda()
    else:
        x = torch.randint(0, 2 if values == "ints01" else 3, (n,), generator=rng).to(dt).cuda()
    out = torch.zeros(1, dtype=dt, device="cuda")
    parir.jit(reduce_sum)(x, out, n, opts=spec(n, reduce=True))
    ref = x.cpu().double().sum().item()
    if dt.is_floating_point:
        assert abs(out.cpu().double().item() - ref) <= rtol * ref, (out.item(), ref)
    else:
        wrapped = int(ref) % (1 << 16)
        if dt == torch.int16 and wrapped >= 1 << 15:
            wrapped -= 1 << 16
        assert out.cpu().long().item() == wrapped
    m = torch.full((1,), -1e4 if dt.is_floating_point else 0, dtype=dt, device="cuda")
    parir.jit(reduce_max)(x, m, n, opts=spec(n, reduce=True))
    assert m.cpu().double().item() == x.cpu().double().max().item()


@pytest.mark.gpu
def test_forced_sizes_on_the_gpu():
    n = 1000
    out = torch.full((n,), float("nan"), dtype=torch.float64, device="cuda")
    opts = spec(n)
    opts.force_int_size = parir.ElemSize.I32
    opts.force_float_size = parir.ElemSize.F32
    parir.jit(counting)(out, n, opts=opts)
    ref = torch.arange(n, dtype=torch.float64) * 3 + 0.5
    check_close(out, ref, "forced sizes")
    # int8 loop variables wrap around, as the type says.
    opts.force_int_size = parir.ElemSize.I8
    opts.parallelize = {'i': parir.threads(100)}
    out.fill_(float("nan"))
    parir.jit(counting)(out, 100, opts=opts)
    ref8 = ((torch.arange(100) * 3).to(torch.int8)).double() + 0.5
    check_close(out[:100], ref8, "int8 loop variable")


# ----- CompileOptions.half_in_float32 ---------------------------------------------------------

def half_poly(x, y, N):
    parir.label('i')
    for i in range(N):
        t = x[i] * x[i] + 0.5 * x[i]
        y[i] = parir.exp(t) - 1.0


def half_in_float32(n):
    opts = parir.par({'i': parir.threads(n)})
    opts.half_in_float32 = True
    return opts


@pytest.mark.parametrize("dtype", HALVES)
def test_half_in_float32_computes_in_float32_and_rounds_at_the_store(dtype):
    fn = parir.jit(half_poly)
    x, y = torch.rand(37).to(dtype), torch.zeros(37, dtype=dtype)
    src = parir.print_compiled(fn, [x, y, 37], half_in_float32(37))
    body = src[src.index("__global__"):]
    assert "float t;" in body and "parir::from_half<float>(x[i])" in body
    assert "parir::exp(t)" in body and "__double2half" not in body
    _C.nvrtc_compile(src, "sm_90")
    default = parir.print_compiled(fn, [x, y, 37], parir.par({'i': parir.threads(37)}))
    assert default != src  # a key of the specialization: both are cached apart


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 4097, 1 << 20])
@pytest.mark.parametrize("dtype", HALVES)
def test_half_in_float32_on_gpu_rounds_once_as_torch(dtype, n):
    fn = parir.jit(half_poly)
    x = (torch.rand(n, device="cuda") * 2 - 1).to(dtype)
    y = torch.full_like(x, float("nan"))
    fn(x, y, n, opts=half_in_float32(n))
    xf = x.float()
    expected = (torch.exp(xf * xf + 0.5 * xf) - 1.0).to(dtype)
    # One rounding of a float32 result: equal, or one unit in the last place apart where the
    # float32 values differ in their last bits.
    ulp = torch.finfo(dtype).eps * expected.float().abs().clamp(min=torch.finfo(dtype).tiny)
    assert ((y.float() - expected.float()).abs() <= ulp).all()
