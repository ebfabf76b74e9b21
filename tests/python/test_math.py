"""The math library of parir functions against torch's: every function of every dtype through
the compiler and NVRTC and as plain Python (CPU), and on the GPU against torch on the same
device, with values across each function's domain, the special values (0, -0, inf, NaN) and
sizes that are not multiples of 32."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import expect_error_in_loop, load_module

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.int8, torch.int32, torch.int64, torch.uint8]
SIZES = [1, 31, 33, 1000, 4097, 1 << 20]

# Each function of one value, with the interval its random inputs come from.
UNARY = {
    "exp": (-10, 10), "exp2": (-10, 10), "expm1": (-10, 10), "log": (0, 10), "log2": (0, 10),
    "log10": (0, 10), "log1p": (-1, 10), "sqrt": (0, 10), "rsqrt": (0, 10), "sin": (-10, 10),
    "cos": (-10, 10), "tan": (-1.5, 1.5), "asin": (-1, 1), "acos": (-1, 1), "atan": (-10, 10),
    "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-10, 10), "asinh": (-10, 10),
    "acosh": (1, 10), "atanh": (-1, 1), "erf": (-4, 4), "erfc": (-4, 4),
    "sigmoid": (-20, 20),
}
# Functions whose result has the argument's type (an integer stays an integer).
ROUNDING = ["floor", "ceil", "round", "trunc", "abs", "sign"]
TESTS = ["isnan", "isinf", "isfinite"]
# Functions of two values: how torch computes each.
BINARY = {
    "atan2": torch.atan2, "copysign": torch.copysign, "hypot": torch.hypot,
    "fmod": torch.fmod, "remainder": torch.remainder, "pow": torch.pow,
    "min": torch.minimum, "max": torch.maximum,
}
SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 0.5, 2.5, -2.5]

# One kernel per function, in a module of its own so that parir can read the source.
_SOURCE = "import parir_torch as parir\n\n" + "".join(
    f"@parir.jit\ndef k_{name}(x, out, N):\n"
    f"    parir.label('N')\n"
    f"    for i in range(N):\n"
    f"        out[i] = parir.{name}(x[i])\n\n"
    for name in [*UNARY, *ROUNDING, *TESTS]) + "".join(
    f"@parir.jit\ndef k_{name}(x, y, out, N):\n"
    f"    parir.label('N')\n"
    f"    for i in range(N):\n"
    f"        out[i] = parir.{name}(x[i], y[i])\n\n"
    for name in BINARY) + """
@parir.jit
def k_clamp(x, lo, hi, out, N):
    parir.label('N')
    for i in range(N):
        out[i] = parir.clamp(x[i], lo[i], hi[i])


@parir.jit
def k_clamp_min(x, out, N):
    parir.label('N')
    for i in range(N):
        out[i] = parir.clamp(x[i], min=0.25)


@parir.jit
def k_where(x, y, out, N):
    parir.label('N')
    for i in range(N):
        out[i] = parir.where(x[i] > y[i], x[i], y[i] * 2)
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("math"), _SOURCE, "math_kernels")


def spec(n):
    return parir.par({"N": parir.threads(n)})


def values(dtype, n, lo=-10, hi=10, seed=0, device="cpu"):
    """n values of `dtype` in [lo, hi], the special values first (where the type has them)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        x = torch.rand(n, generator=g) < 0.5
    elif dtype.is_floating_point:
        x = (lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64))
        k = min(n, len(SPECIAL))
        x[:k] = torch.tensor(SPECIAL[:k], dtype=torch.float64)
        x = x.to(dtype)
    else:
        lo, hi = (0, 10) if dtype == torch.uint8 else (-5, 5)
        x = torch.randint(lo, hi + 1, (n,), generator=g).to(dtype)
    return x.to(device)


def result_dtype(name, dtype):
    if name in TESTS:
        return torch.bool
    if name in ROUNDING:
        return torch.int64 if dtype == torch.bool and name != "sign" else dtype
    return dtype if dtype.is_floating_point else torch.float64


def reference(name, x):
    """What torch gives: of integers, computed in float64 (parir's type for math of integers)."""
    if name in UNARY:
        return getattr(torch, name)(x if x.is_floating_point() else x.double())
    if name in ("floor", "ceil", "round", "trunc"):
        return getattr(torch, name)(x) if x.is_floating_point() else \
            (x.long() if x.dtype == torch.bool else x)
    if name == "abs":
        return x.long().abs() if x.dtype == torch.bool else x.abs()
    return getattr(torch, name)(x)


def tolerance(dtype):
    return {torch.float16: (1e-2, 1e-3), torch.bfloat16: (2e-2, 1e-2),
            torch.float32: (1e-5, 1e-6)}.get(dtype, (1e-12, 1e-12))


def check(out, ref, dtype):
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    if not out.dtype.is_floating_point:
        assert torch.equal(out, ref), (out, ref)
        return
    rtol, atol = tolerance(dtype if dtype.is_floating_point else torch.float64)
    torch.testing.assert_close(out.double(), ref.double(), rtol=rtol, atol=atol, equal_nan=True)


def run_unary(kernels, name, dtype, n, device, seq=False):
    lo, hi = UNARY.get(name, (-10, 10))
    x = values(dtype, n, lo, hi, device=device)
    out = torch.full((n,), float("nan") if result_dtype(name, dtype).is_floating_point else 7,
                     dtype=result_dtype(name, dtype), device=device)
    getattr(kernels, f"k_{name}")(x, out, n, opts=spec(n), seq=seq)
    return out, reference(name, x)


ALL_DTYPES = FLOATS + INTS + [torch.bool]
UNARY_CASES = [(name, d) for name in [*UNARY, *ROUNDING, *TESTS] for d in ALL_DTYPES]


def binary_inputs(name, dtype, n, device):
    x = values(dtype, n, -10, 10, seed=1, device=device)
    y = values(dtype, n, -10, 10, seed=2, device=device)
    if name in ("fmod", "remainder") and not dtype.is_floating_point:
        y = torch.where(y == 0, torch.ones_like(y), y)  # integer division by zero is undefined
    if name == "pow" and not dtype.is_floating_point:
        y = y.abs() % 4  # a negative integer power of an integer is 0 on the GPU
    return x, y


def binary_reference(name, x, y):
    if name in ("atan2", "copysign", "hypot") and not x.is_floating_point():
        x, y = x.double(), y.double()
    return BINARY[name](x, y)


BINARY_CASES = [(name, d) for name in BINARY for d in FLOATS + INTS]


# ----- CPU: the compiler and NVRTC, and the plain-Python semantics ---------------------------

@pytest.mark.parametrize("name,dtype", UNARY_CASES)
def test_unary_compiles_and_runs_as_python(kernels, name, dtype):
    n = 37
    x = values(dtype, n)
    out = torch.zeros(n, dtype=result_dtype(name, dtype))
    src = parir.print_compiled(getattr(kernels, f"k_{name}"), [x, out, n], spec(n))
    assert f"parir::{name}(" in src or name == "abs"
    _C.nvrtc_compile(src, "sm_90")
    out, ref = run_unary(kernels, name, dtype, n, "cpu", seq=True)
    check(out, ref, dtype)


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary_compiles_and_runs_as_python(kernels, name, dtype):
    n = 37
    x, y = binary_inputs(name, dtype, n, "cpu")
    ref = binary_reference(name, x, y)
    out = torch.full((n,), 7, dtype=ref.dtype)
    fn = getattr(kernels, f"k_{name}")
    _C.nvrtc_compile(parir.print_compiled(fn, [x, y, out, n], spec(n)), "sm_90")
    fn(x, y, out, n, opts=spec(n), seq=True)
    check(out, ref, dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_clamp_and_where_compile_and_run_as_python(kernels, dtype):
    n = 37
    x, lo, hi = (values(dtype, n, seed=s) for s in (3, 4, 5))
    for fn, args, ref in [
        (kernels.k_clamp, [x, lo, hi], torch.clamp(x, lo, hi)),
        (kernels.k_where, [x, lo], torch.where(x > lo, x, lo * 2)),
    ]:
        out = torch.full((n,), 7, dtype=dtype)
        _C.nvrtc_compile(parir.print_compiled(fn, [*args, out, n], spec(n)), "sm_90")
        fn(*args, out, n, opts=spec(n), seq=True)
        check(out, ref, dtype)


def test_clamp_keeps_nan_and_takes_the_upper_bound_when_the_bounds_cross(kernels):
    x = torch.tensor([float("nan"), 3.0, 3.0, -1.0])
    lo = torch.tensor([0.0, 4.0, float("nan"), 0.0])
    hi = torch.tensor([1.0, 2.0, 5.0, 1.0])
    out = torch.zeros(4)
    kernels.k_clamp(x, lo, hi, out, 4, opts=spec(4), seq=True)
    torch.testing.assert_close(out, torch.clamp(x, lo, hi), equal_nan=True)
    out2 = torch.zeros(4)
    kernels.k_clamp_min(x, out2, 4, opts=spec(4), seq=True)
    torch.testing.assert_close(out2, torch.clamp(x, min=0.25), equal_nan=True)


def test_round_is_to_nearest_even_as_torch(kernels):
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 3.7])
    out = torch.zeros(6)
    kernels.k_round(x, out, 6, opts=spec(6), seq=True)
    assert out.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 4.0]


def test_math_of_python_numbers_is_computed_as_the_compiled_code_computes_it():
    # A Python number is a weak float64: no OverflowError or ValueError as Python's math gives.
    assert parir.exp(1000.0) == float("inf")
    assert parir.log(0.0) == float("-inf")
    assert parir.sqrt(-1.0) != parir.sqrt(-1.0)
    assert parir.floor(2.5) == 2.0 and isinstance(parir.floor(2.5), float)
    assert parir.floor(7) == 7 and isinstance(parir.floor(7), int)
    assert parir.sign(-3) == -1 and parir.sign(float("nan")) == 0.0
    assert parir.fmod(-7, 3) == -1 and parir.remainder(-7, 3) == 2
    assert parir.where(True, 1, 2.5) == 1.0 and isinstance(parir.where(True, 1, 2.5), float)
    assert parir.clamp(5, 0, 3) == 3 and parir.clamp(-1.0, min=0) == 0.0
    assert parir.isnan(float("nan")).item() is True
    assert parir.pi == 3.141592653589793 and parir.nan != parir.nan


def test_math_on_integer_elements_is_float64():
    x = torch.arange(5, dtype=torch.int32)
    out = torch.zeros(5, dtype=torch.float64)

    @parir.jit
    def f(x, out, N):
        parir.label('N')
        for i in range(N):
            out[i] = parir.erf(x[i]) + parir.sigmoid(x[i])

    src = parir.print_compiled(f, [x, out, 5], spec(5))
    assert "parir::erf(((double)x[i]))" in src and "parir::sigmoid(((double)x[i]))" in src
    f(x, out, 5, opts=spec(5), seq=True)
    torch.testing.assert_close(out, torch.erf(x.double()) + torch.sigmoid(x.double()))


def test_constants_pi_e_nan_inf():
    @parir.jit
    def f(out):
        with parir.gpu:
            out[0] = parir.pi
            out[1] = parir.e
            out[2] = parir.nan
            out[3] = -parir.inf

    out = torch.zeros(4, dtype=torch.float64)
    src = parir.print_compiled(f, [out])
    assert "3.1415926535897931" in src and "parir::nan<double>()" in src
    _C.nvrtc_compile(src, "sm_90")
    f(out, seq=True)
    assert out[0] == torch.pi and out[1] == torch.e and out[2].isnan() and out[3] == -torch.inf


@pytest.mark.parametrize("call,message", [
    ("parir.clamp(x[i])", "needs at least one of the bounds"),
    ("parir.clamp(x[i], lo=0.0)", "has no keyword argument 'lo'"),
    ("parir.clamp(x[i], 0.0, min=1.0)", "is given min twice"),
    ("parir.where(x[i] > 0, 1.0)", "parir.where takes 3 arguments, got 2"),
    ("parir.pow(x[i])", "parir.pow takes 2 arguments, got 1"),
    ("parir.erf(x[i], 2)", "parir.erf takes 1 argument, got 2"),
    ("parir.erfinv(x[i])", "parir.erfinv cannot be called"),
])
def test_math_errors_name_the_call(tmp_path, call, message):
    expect_error_in_loop(tmp_path, f"x[i] = {call}", message, [torch.zeros(4), 4], spec(4))


# ----- GPU: against torch on the same device ------------------------------------------------
#
# One kernel computes every function, each on a row of inputs from its own domain, so that a
# dtype and size cost one compilation.

FLOAT_FNS = list(UNARY)
SAME_FNS = ["floor", "ceil", "round", "trunc", "abs"]  # bool: int64
FLOAT_BINARY = ["atan2", "copysign", "hypot"]  # integers: float64
SAME_BINARY = ["fmod", "remainder", "pow", "min", "max"]


def _rows(out, names, arg_row, args):
    return "".join(f"        {out}[{k}, i] = parir.{name}({args(arg_row + k)})\n"
                   for k, name in enumerate(names))


_ALL_SOURCE = f"""import parir_torch as parir


@parir.jit
def all_unary(x, of, os, osign, ob, N):
    parir.label('N')
    for i in range(N):
{_rows("of", FLOAT_FNS, 0, lambda r: f"x[{r}, i]")}\
{_rows("os", SAME_FNS, len(FLOAT_FNS), lambda r: f"x[{r}, i]")}\
        osign[i] = parir.sign(x[{len(FLOAT_FNS) + len(SAME_FNS)}, i])
{_rows("ob", TESTS, len(FLOAT_FNS) + len(SAME_FNS) + 1, lambda r: f"x[{r}, i]")}

@parir.jit
def all_binary(x, y, of, os, N):
    parir.label('N')
    for i in range(N):
{_rows("of", FLOAT_BINARY, 0, lambda r: f"x[{r}, i], y[{r}, i]")}\
{_rows("os", SAME_BINARY, len(FLOAT_BINARY), lambda r: f"x[{r}, i], y[{r}, i]")}\
        os[{len(SAME_BINARY)}, i] = parir.clamp(x[0, i], y[0, i], y[1, i])
        os[{len(SAME_BINARY) + 1}, i] = parir.where(x[1, i] > y[1, i], x[1, i], y[2, i] * 2)
"""


@pytest.fixture(scope="module")
def all_kernels(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("math_all"), _ALL_SOURCE, "all_math_kernels")


def _poisoned(shape, dtype):
    return torch.full(shape, float("nan") if dtype.is_floating_point else 7, dtype=dtype,
                      device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unary_functions_on_gpu_match_torch(all_kernels, dtype, n):
    names = FLOAT_FNS + SAME_FNS + ["sign"] + TESTS
    x = torch.stack([values(dtype, n, *UNARY.get(name, (-10, 10)), seed=k, device="cuda")
                     for k, name in enumerate(names)])
    of = _poisoned((len(FLOAT_FNS), n), result_dtype("exp", dtype))
    os = _poisoned((len(SAME_FNS), n), result_dtype("floor", dtype))
    osign = _poisoned((n,), dtype)
    ob = _poisoned((len(TESTS), n), torch.bool)
    all_kernels.all_unary(x, of, os, osign, ob, n, opts=spec(n))
    outputs = [*of, *os, osign, *ob]
    for k, name in enumerate(names):
        try:
            check(outputs[k], reference(name, x[k]), dtype)
        except AssertionError as e:
            raise AssertionError(f"parir.{name} of {dtype}, n={n}: {e}") from None


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 4097, 1 << 20])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_binary_functions_clamp_and_where_on_gpu_match_torch(all_kernels, dtype, n):
    names = FLOAT_BINARY + SAME_BINARY
    pairs = [binary_inputs(name, dtype, n, "cuda") for name in names]
    x = torch.stack([p[0] for p in pairs])
    y = torch.stack([p[1] for p in pairs])
    of = _poisoned((len(FLOAT_BINARY), n), binary_reference("atan2", x[0], y[0]).dtype)
    os = _poisoned((len(SAME_BINARY) + 2, n), dtype)
    all_kernels.all_binary(x, y, of, os, n, opts=spec(n))
    for k, name in enumerate(names):
        out = of[k] if k < len(FLOAT_BINARY) else os[k - len(FLOAT_BINARY)]
        try:
            check(out, binary_reference(name, x[k], y[k]), dtype)
        except AssertionError as e:
            raise AssertionError(f"parir.{name} of {dtype}, n={n}: {e}") from None
    check(os[len(SAME_BINARY)], torch.clamp(x[0], y[0], y[1]), dtype)
    check(os[len(SAME_BINARY) + 1], torch.where(x[1] > y[1], x[1], y[2] * 2), dtype)


def test_the_gpu_kernels_compile_and_match_torch_as_python(all_kernels):
    """The GPU tests' kernels through NVRTC, and their checks run as plain Python on the CPU."""
    n = 45
    for dtype in ALL_DTYPES:
        names = FLOAT_FNS + SAME_FNS + ["sign"] + TESTS
        x = torch.stack([values(dtype, n, *UNARY.get(name, (-10, 10)), seed=k)
                         for k, name in enumerate(names)])
        of = torch.zeros((len(FLOAT_FNS), n), dtype=result_dtype("exp", dtype))
        os = torch.zeros((len(SAME_FNS), n), dtype=result_dtype("floor", dtype))
        osign = torch.zeros((n,), dtype=dtype)
        ob = torch.zeros((len(TESTS), n), dtype=torch.bool)
        args = [x, of, os, osign, ob, n]
        _C.nvrtc_compile(parir.print_compiled(all_kernels.all_unary, args, spec(n)), "sm_90")
        all_kernels.all_unary(*args, opts=spec(n), seq=True)
        for k, name in enumerate(names):
            check([*of, *os, osign, *ob][k], reference(name, x[k]), dtype)
    for dtype in FLOATS + INTS:
        pairs = [binary_inputs(name, dtype, n, "cpu") for name in FLOAT_BINARY + SAME_BINARY]
        x, y = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
        of = torch.zeros((3, n), dtype=binary_reference("atan2", x[0], y[0]).dtype)
        os = torch.zeros((len(SAME_BINARY) + 2, n), dtype=dtype)
        args = [x, y, of, os, n]
        _C.nvrtc_compile(parir.print_compiled(all_kernels.all_binary, args, spec(n)), "sm_90")
        all_kernels.all_binary(*args, opts=spec(n), seq=True)
        check(os[len(SAME_BINARY)], torch.clamp(x[0], y[0], y[1]), dtype)


# ----- the README's example -------------------------------------------------------------------

@parir.jit
def gelu(x, y):
    parir.label('N')
    for i in range(x.shape[0]):
        y[i] = 0.5 * x[i] * (1.0 + parir.erf(x[i] / parir.sqrt(2.0)))


def test_readme_gelu_as_python_matches_torch():
    x = torch.randn(1000)
    y = torch.full_like(x, float("nan"))
    _C.nvrtc_compile(parir.print_compiled(gelu, [x, y], spec(1000)), "sm_90")
    gelu(x, y, opts=spec(1000), seq=True)
    torch.testing.assert_close(y, torch.nn.functional.gelu(x))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 4097, 1 << 20])
@pytest.mark.parametrize("dtype", FLOATS)
def test_readme_gelu_on_gpu_matches_torch(n, dtype):
    x = torch.randn(n, device="cuda").to(dtype)
    y = torch.full_like(x, float("nan"))
    gelu(x, y, opts=spec(n))
    rtol, atol = tolerance(dtype)
    torch.testing.assert_close(y.double(), torch.nn.functional.gelu(x).double(),
                               rtol=max(rtol, 1e-5), atol=max(atol, 1e-6))


# ----- Python's math module ---------------------------------------------------------------------

_MATH_MODULE_SOURCE = """import math
from math import sqrt, floor, pi
import parir_torch as parir


@parir.jit
def with_math(x, y, idx, N):
    parir.label('N')
    for i in range(N):
        y[i] = math.exp(x[i]) + sqrt(x[i]) * math.pi + math.atan2(x[i], 2.0) + pi
        idx[i] = floor(x[i] * 10.0) + math.trunc(-x[i] * 10.0)
"""


def test_python_math_functions_are_parirs(tmp_path):
    m = load_module(tmp_path, _MATH_MODULE_SOURCE, "uses_math")
    x = torch.rand(37) + 0.1
    y, idx = torch.zeros(37), torch.zeros(37, dtype=torch.int64)
    src = parir.print_compiled(m.with_math, [x, y, idx, 37], spec(37))
    # In float32, as parir types them; floor and trunc give int64, as in Python.
    assert "parir::exp(x[i])" in src and "parir::sqrt(x[i])" in src
    assert "((int64_t)parir::floor((x[i] * 10.0f)))" in src
    _C.nvrtc_compile(src, "sm_90")
    m.with_math(x, y, idx, 37, opts=spec(37), seq=True)
    xd = x.double()
    expected = (torch.exp(x) + torch.sqrt(x) * torch.pi + torch.atan2(x, torch.tensor(2.0))
                + torch.pi)
    torch.testing.assert_close(y, expected.float())
    assert torch.equal(idx, torch.floor(xd * 10).long() + torch.trunc(-xd * 10).long())


@pytest.mark.parametrize("call,message", [
    ("math.gcd(N, 2)", "math.gcd is not supported in parir functions"),
    ("math.factorial(N)", "math.factorial is not supported"),
    ("math.sqrt(x[i], 2)", "math.sqrt takes 1 argument, got 2"),
    ("math.fsum", "math.fsum cannot be used as a value"),
])
def test_python_math_errors(tmp_path, call, message):
    m = load_module(tmp_path, "import math\nimport parir_torch as parir\n"
                              "def f(x, N):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              f"        x[i] = {call}\n", "bad_math_module")
    with pytest.raises(parir.ParirError, match=message) as info:
        parir.print_compiled(m.f, [torch.zeros(4), 4], spec(4))
    assert f"{tmp_path / 'bad_math_module.py'}:6" in str(info.value)
