"""seq=True runs the program the kernels run: element reads are values, arithmetic and casts are
typed as the compiler types them (README.md, "Types"), slices may have negative steps.

Each program runs as plain Python on CPU tensors against values computed independently here;
on a GPU (marker `gpu`) the kernels run too, and must give the same values. Every program
also compiles through NVRTC without a GPU, so that the GPU tests test the semantics only."""

import inspect
import traceback

import numpy as np
import pytest
import torch

import parir_torch as parir
from parir_torch import _C, plain_python_rewrite

SCALE = 3.0


def wrap(v, bits):
    """v wrapped to a signed integer of `bits` bits, as C converts."""
    v %= 1 << bits
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


# ----- programs ------------------------------------------------------------------------------

@parir.jit
def bump_local(t, out, N):
    parir.label('i')
    for i in range(N):
        s = t[i]
        s += 1.0
        out[i] = s


@parir.jit
def read_then_overwrite(x, out, N):
    parir.label('i')
    for i in range(N):
        a = x[i]
        x[i] = 5.0
        out[i] = a * 2.0


@parir.jit
def int_local_plus_half(x, out, N):
    parir.label('i')
    for i in range(N):
        s = x[i]
        s += 0.5  # an int32 value plus a weak float: a float64 value, not an error
        out[i] = s


def _bump(v):
    v += 1.0
    return v


@parir.jit
def _bump_jit(v):
    v *= 10.0
    return v


@parir.jit
def helpers_get_values(x, out, N):
    parir.label('i')
    for i in range(N):
        s = x[i]
        out[i] = _bump(s) + _bump_jit(s) + s


@parir.jit
def int_tensor_plus_float(x, out, N):
    parir.label('i')
    for i in range(N):
        out[i] += x[i] * 0.5  # a float32 sum, converted to int32 when it is stored


@parir.jit
def typed_arithmetic(xi, xf, b, u, s, out, N):
    parir.label('i')
    for i in range(N):
        out[i, 0] = xi[i] * 1.0           # int32 * weak float: float64
        out[i, 1] = xi[i] / 1             # true division of integers: float64
        out[i, 2] = b[i] + b[i]           # bool arithmetic: int64
        out[i, 3] = (u[i] + s[i]) * 2     # uint8 + int8: int16
        out[i, 4] = xf[i] * 0.1           # float32 * weak float: float32
        out[i, 5] = min(xi[i], 0.1)       # int32 and a weak float: float64
        out[i, 6] = max(xf[i], 0.1)       # float32 and a weak float: float32
        out[i, 7] = int(xf[i]) * s[i]     # Python's int() is int64
        out[i, 8] = float(i) * 3 * xf[i]  # Python's float() is float64


@parir.jit
def unsigned_with_signed(x, s, t, b, out, N):
    parir.label('i')
    for i in range(N):
        out[i, 0] = x[i] >> s[i]          # uint32 >> int32: int64
        out[i, 1] = x[i] < t[i]           # compared as int64
        out[i, 2] = -(x[i] & 1)           # uint32 negation wraps (SobolQRNG's mask)
        out[i, 3] = ~x[i]                 # uint32
        out[i, 4] = -b[i]                 # bool negates as int64
        out[i, 5] = (x[i] ^ t[i]) & 255   # int64


@parir.jit
def unsigned_min_and_max(h, w, out):
    # Parboil histo's saturation of 32-bit bins into bytes; uint64 past 2^63.
    parir.label('i')
    for i in range(3):
        out[i] = min(h[i], 255)
    with parir.gpu:
        w[3] = parir.max(w[0:3])
        w[4] = parir.min(w[0:3])
        w[5] = max(w[0], w[1])


@parir.jit
def int8_of_python_int(out, N):
    parir.label('i')
    for i in range(N):
        out[i] = parir.int8(i + 100) * 2


@parir.jit
def casts_of_python_numbers(out):
    with parir.gpu:
        out[0] = parir.uint8(-1)
        out[1] = parir.int16(70000)
        out[2] = parir.int32(-2.7)
        out[3] = parir.float32(0.1)
        out[4] = parir.float16(100000.0)
        out[5] = parir.float64(1) / 3
        out[6] = parir.bool(2) + parir.bool(3)
        out[7] = parir.int16(30000) + parir.int16(30000)
        out[8] = parir.float32(16777217) + 0


@parir.jit
def reverse(x, y):
    with parir.gpu:
        y[:] = x[::-1]


@parir.jit
def negative_steps(x, y, z, w, N):
    with parir.gpu:
        y[0:N - 1] = x[N - 1:0:-1]
        y[N - 1] = parir.sum(x[::-2])
        z[::-2] = x[0:3]
        w[::-1] += x[:]


@parir.jit
def reverse_rows(m, out, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        out[i, ::-1] = m[i, :]


@parir.jit
def step_argument(x, y, S):
    with parir.gpu:
        y[:] = x[::S]


PROGRAMS = {}  # name -> (fn, make_args(device), spec, expected outputs (index into args, list))


def program(name, fn, spec, make_args, expected):
    PROGRAMS[name] = (fn, make_args, spec, expected)


program("bump_local", bump_local, {'i': parir.threads(4)},
        lambda d: [torch.arange(4.0, device=d), torch.zeros(4, device=d), 4],
        [(0, [0.0, 1.0, 2.0, 3.0]), (1, [1.0, 2.0, 3.0, 4.0])])
program("read_then_overwrite", read_then_overwrite, {'i': parir.threads(3)},
        lambda d: [torch.tensor([1.0, 2.0, 3.0], device=d), torch.zeros(3, device=d), 3],
        [(0, [5.0, 5.0, 5.0]), (1, [2.0, 4.0, 6.0])])
program("int_local_plus_half", int_local_plus_half, {'i': parir.threads(3)},
        lambda d: [torch.tensor([1, -2, 7], dtype=torch.int32, device=d),
                   torch.zeros(3, dtype=torch.float64, device=d), 3],
        [(0, [1, -2, 7]), (1, [1.5, -1.5, 7.5])])
program("int_tensor_plus_float", int_tensor_plus_float, {'i': parir.threads(3)},
        lambda d: [torch.tensor([1.0, 3.0, -5.0], device=d),
                   torch.tensor([1, 2, 3], dtype=torch.int32, device=d), 3],
        [(1, [1, 3, 0])])
program("helpers_get_values", helpers_get_values, {'i': parir.threads(2)},
        lambda d: [torch.tensor([1.0, 2.0], device=d), torch.zeros(2, device=d), 2],
        [(0, [1.0, 2.0]), (1, [2.0 + 10.0 + 1.0, 3.0 + 20.0 + 2.0])])

def f32(v):
    """v rounded to float32."""
    return torch.tensor(v, dtype=torch.float32).item()


_F32_TENTH = f32(0.1)
program("typed_arithmetic", typed_arithmetic, {'i': parir.threads(3)},
        lambda d: [torch.tensor([16777217, 3, -5], dtype=torch.int32, device=d),
                   torch.tensor([2.75, 0.1, -3.0], dtype=torch.float32, device=d),
                   torch.tensor([True, False, True], device=d),
                   torch.tensor([200, 255, 0], dtype=torch.uint8, device=d),
                   torch.tensor([100, 127, -128], dtype=torch.int8, device=d),
                   torch.zeros(3, 9, dtype=torch.float64, device=d), 3],
        [(5, [[16777217.0, 16777217.0, 2.0, 600.0, f32(2.75 * _F32_TENTH), 0.1, 2.75, 200.0,
               0.0],
              [3.0, 3.0, 0.0, 764.0, f32(_F32_TENTH * _F32_TENTH), 0.1, _F32_TENTH, 0.0,
               3.0 * _F32_TENTH],
              [-5.0, -5.0, 2.0, -256.0, f32(-3.0 * _F32_TENTH), -5.0, _F32_TENTH, 384.0,
               -18.0]])])
program("unsigned_with_signed", unsigned_with_signed, {'i': parir.threads(3)},
        lambda d: [torch.tensor([8, 7, 4_000_000_000], dtype=torch.uint32, device=d),
                   torch.tensor([1, 2, 31], dtype=torch.int32, device=d),
                   torch.tensor([-1, 9, 5], dtype=torch.int32, device=d),
                   torch.tensor([True, False, True], device=d),
                   torch.zeros(3, 6, dtype=torch.int64, device=d), 3],
        [(4, [[4, 0, 0, 2 ** 32 - 9, -1, 247],
              [1, 1, 2 ** 32 - 1, 2 ** 32 - 8, 0, 14],
              [1, 0, 0, 2 ** 32 - 1 - 4_000_000_000, -1, 5]])])
program("unsigned_min_and_max", unsigned_min_and_max, {'i': parir.threads(3)},
        lambda d: [torch.tensor([3, 300, 4_000_000_000], dtype=torch.uint32, device=d),
                   torch.tensor([2 ** 63 + 5, 3, 2 ** 64 - 1, 0, 0, 0], dtype=torch.uint64,
                                device=d),
                   torch.zeros(3, dtype=torch.uint8, device=d)],
        [(2, [3, 255, 255]),
         (1, [2 ** 63 + 5, 3, 2 ** 64 - 1, 2 ** 64 - 1, 3, 2 ** 63 + 5])])
program("int8_of_python_int", int8_of_python_int, {'i': parir.threads(40)},
        lambda d: [torch.zeros(40, dtype=torch.int64, device=d), 40],
        [(0, [wrap(wrap(i + 100, 8) * 2, 8) for i in range(40)])])
program("casts_of_python_numbers", casts_of_python_numbers, {},
        lambda d: [torch.zeros(9, dtype=torch.float64, device=d)],
        [(0, [255.0, 70000 - 65536, -2.0, _F32_TENTH, float("inf"), 1 / 3, 2.0,
              float(wrap(60000, 16)), 16777216.0])])
program("reverse", reverse, {},
        lambda d: [torch.arange(5.0, device=d), torch.zeros(5, device=d)],
        [(1, [4.0, 3.0, 2.0, 1.0, 0.0])])
_XS = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def _negative_steps_expected():
    y, z, w = [0.0] * 6, [-1.0] * 6, [100.0 * k for k in range(6)]
    y[0:5] = _XS[5:0:-1]
    y[5] = sum(_XS[::-2])
    z[::-2] = _XS[0:3]
    w = [a + b for a, b in zip(w, _XS[::-1])]
    return [(1, y), (2, z), (3, w)]


program("negative_steps", negative_steps, {},
        lambda d: [torch.tensor(_XS, device=d), torch.zeros(6, device=d),
                   torch.full((6,), -1.0, device=d), 100.0 * torch.arange(6.0, device=d), 6],
        _negative_steps_expected())
program("reverse_rows", reverse_rows, {'i': parir.threads(3), 'j': parir.threads(4)},
        lambda d: [torch.arange(12.0, device=d).reshape(3, 4), torch.zeros(3, 4, device=d), 3],
        [(1, [[3.0, 2.0, 1.0, 0.0], [7.0, 6.0, 5.0, 4.0], [11.0, 10.0, 9.0, 8.0]])])
program("step_argument", step_argument, {},
        lambda d: [torch.arange(6.0, device=d), torch.zeros(3, device=d), -2],
        [(1, [5.0, 3.0, 1.0])])


def check_outputs(args, expected, what):
    for index, values in expected:
        got = args[index].cpu()
        want = torch.tensor(values, dtype=torch.float64)
        assert torch.equal(got.double(), want), f"{what}: argument {index} is {got.tolist()}, " \
                                                f"expected {want.tolist()}"


# ----- the plain Python run ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_seq_matches_expected(name):
    fn, make_args, _, expected = PROGRAMS[name]
    args = make_args("cpu")
    fn(*args, seq=True)
    check_outputs(args, expected, f"{name} (seq)")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_compile(name):
    fn, make_args, spec, _ = PROGRAMS[name]
    src = parir.print_compiled(fn, make_args("cpu"), parir.par(spec))
    binary, _, _ = _C.nvrtc_compile(src, "sm_90")
    assert len(binary) > 100


def test_element_values_are_typed_as_their_tensor():
    @parir.jit
    def kinds(x8, x64, f, out):
        with parir.gpu:
            out[0] = (x8[0] + x64[0]) * 1000   # int8 + int64: int64, no wrap
            out[1] = x8[0] * 100               # int8 * weak int: int8, wraps
            out[2] = f[0] * 3.0 == f[1]        # float32 product, compared with float32

    out = torch.zeros(3, dtype=torch.int64)
    f = torch.tensor([0.1, 0.3], dtype=torch.float32)
    kinds(torch.tensor([100], dtype=torch.int8), torch.tensor([1]), f, out, seq=True)
    f32_product = torch.tensor(0.1, dtype=torch.float32) * 3.0 == torch.tensor(
        0.3, dtype=torch.float32)
    assert out.tolist() == [101000, wrap(10000, 8), int(f32_product)]


def test_min_and_max_take_two_or_more_values():
    # As in the compiled code, where Python's max is parir.max: a third value is a value, not
    # an axis, and max(a, b, c) is max(max(a, b), c).
    assert parir.max(1, 2, 3) == 3 and parir.min(4, 2.5, 3) == 2.5
    assert parir.max(1, 2) == 2 and parir.min(2.5, 1) == 1
    with pytest.raises(parir.ParirTypeError, match="takes values, or one slice"):
        parir.max(torch.ones(3), 2, 3, axis=0)


def test_a_zero_dim_tensor_argument_is_a_value():
    @parir.jit
    def add_to_local(k, out):
        with parir.gpu:
            s = k
            s += 1
            out[0] = s

    k, out = torch.tensor(5, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    add_to_local(k, out, seq=True)
    assert k.item() == 5 and out.item() == 6


def test_a_slice_passed_to_a_helper_is_written_through():
    @parir.jit
    def double_rows(x, N, M):
        parir.label('i')
        for i in range(N):
            _scale_row(x[i], M)

    x = torch.arange(6.0).reshape(2, 3)
    double_rows(x, 2, 3, seq=True)
    assert x.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]


def _scale_row(row, M):
    for j in range(M):
        row[j] *= 2.0


def test_a_closure_and_the_module_globals_are_seen_as_they_are_when_it_runs():
    global SCALE
    offset = 1.0

    @parir.jit
    def scaled(x, out, N):
        parir.label('i')
        for i in range(N):
            out[i] = x[i] * SCALE + offset

    x, out = torch.arange(3.0), torch.zeros(3)
    scaled(x, out, 3, seq=True)
    assert out.tolist() == [1.0, 4.0, 7.0]
    offset, old = 2.0, SCALE
    SCALE = 10.0
    try:
        scaled(x, out, 3, seq=True)
    finally:
        SCALE = old
    assert out.tolist() == [2.0, 12.0, 22.0]


def test_the_rewritten_function_is_built_once():
    first = plain_python_rewrite.program(bump_local.fn)
    assert first is not bump_local.fn
    assert plain_python_rewrite.program(bump_local.fn) is first


def test_errors_point_at_the_users_line_and_column():
    @parir.jit
    def reads_past_the_end(x, out, N):
        parir.label('i')
        for i in range(N):
            out[i] = x[i + 1] * 2.0

    with pytest.raises(IndexError) as info:
        reads_past_the_end(torch.zeros(3), torch.zeros(3), 3, seq=True)
    frame = [f for f in traceback.extract_tb(info.value.__traceback__)
             if f.name == "reads_past_the_end"][-1]
    lines, first = inspect.getsourcelines(reads_past_the_end.fn)
    line = next(first + k for k, text in enumerate(lines) if "x[i + 1]" in text)
    assert frame.filename == __file__ and frame.lineno == line
    assert frame.line == "out[i] = x[i + 1] * 2.0"
    assert frame.colno == lines[line - first].index("x[i + 1]")


def test_a_function_without_source_runs_as_it_is():
    ns = {"parir": parir}
    exec("def double(x, N):\n"
         "    for i in range(N):\n"
         "        x[i] = x[i] * 2.0\n", ns)
    x = torch.arange(3.0)
    parir.jit(ns["double"])(x, 3, seq=True)
    assert x.tolist() == [0.0, 2.0, 4.0]


def test_python_numbers_stay_python_numbers():
    @parir.jit
    def index_arithmetic(x, out, N):
        parir.label('i')
        for i in range(N):
            k = (i * 3 + 1) // 2 % N
            out[i] = x[k] + k / 2

    x, out = torch.arange(4.0), torch.zeros(4)
    index_arithmetic(x, out, 4, seq=True)
    assert out.tolist() == [(k := (i * 3 + 1) // 2 % 4) + k / 2 for i in range(4)]


# ----- on the GPU: the kernels against the plain Python run ---------------------------------

# Programs whose kernels differ from what the README's types say: program name -> why.
KNOWN_GPU_FAILURES = {
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GPU_FAILURES[n]))
    if n in KNOWN_GPU_FAILURES else n for n in sorted(PROGRAMS)])
def test_gpu_matches_seq(name):
    fn, make_args, spec, expected = PROGRAMS[name]
    args = make_args("cuda")
    fn(*args, opts=parir.par(spec))
    torch.cuda.synchronize()
    check_outputs(args, expected, f"{name} (GPU)")
    plain = make_args("cpu")
    fn(*plain, seq=True)
    for a, p in zip(args, plain):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a.cpu(), p), f"{name}: the GPU gives {a.tolist()}, seq=True " \
                                            f"{p.tolist()}"


@pytest.mark.gpu
def test_check_passes_where_element_reads_were_views():
    t = torch.arange(4.0, device="cuda")
    out = torch.zeros(4, device="cuda")
    parir.check(bump_local, t, out, 4, opts=parir.par({'i': parir.threads(4)}))
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]


# Module constants as a Numba user writes them: NumPy integers keep their dtype, a Python int of
# 2^63 or more is a uint64, as the literal is.
PRIME32 = np.uint32(0x9E3779B1)
FNV64_OFFSET = 0xCBF29CE484222325


@parir.jit
def mix_with_module_constants(b, h32, h64, N):
    parir.label('N')
    for i in range(N):
        h32[i] = b[i] * PRIME32
        h64[i] = FNV64_OFFSET ^ b[i]


def test_numpy_integer_and_uint64_module_constants_are_typed_in_both_runs():
    b = torch.tensor([1, 255, 7], dtype=torch.uint8)
    src = parir.print_compiled(mix_with_module_constants,
                               [b, torch.empty(3, dtype=torch.uint32),
                                torch.empty(3, dtype=torch.uint64), 3],
                               parir.par({'N': parir.threads(3)}))
    assert "2654435761U" in src and "14695981039346656037UL" in src
    h32, h64 = torch.empty(3, dtype=torch.uint32), torch.empty(3, dtype=torch.uint64)
    mix_with_module_constants(b, h32, h64, 3, seq=True)
    assert [int(v) for v in h32] == [(v * 0x9E3779B1) % 2**32 for v in (1, 255, 7)]
    assert [int(v) % 2**64 for v in h64.view(torch.int64)] == [
        0xCBF29CE484222325 ^ v for v in (1, 255, 7)]


GOLDEN64 = np.uint64(0x9E3779B97F4A7C15)


@parir.jit
def store_a_uint64_constant(h, N):
    parir.label('N')
    for i in range(N):
        h[i] = GOLDEN64


def test_a_numpy_uint64_of_two_to_the_63_or_more_is_stored_as_it_is():
    h = torch.zeros(3, dtype=torch.uint64)
    store_a_uint64_constant(h, 3, seq=True)
    assert [int(v) % 2**64 for v in h.view(torch.int64)] == [0x9E3779B97F4A7C15] * 3


@parir.jit
def unsigned_quotients(h, rem, quo, N):
    parir.label('N')
    for i in range(N):
        rem[i] = h[i] % 1000
        quo[i] = h[i] // 10


def test_uint64_division_above_two_to_the_63_is_unsigned():
    values = [2**63, 2**64 - 1, 12345]
    h = torch.tensor([v - 2**64 if v >= 2**63 else v for v in values],
                     dtype=torch.int64).view(torch.uint64)
    rem, quo = torch.empty(3, dtype=torch.uint64), torch.empty(3, dtype=torch.uint64)
    unsigned_quotients(h, rem, quo, 3, seq=True)
    assert [int(v) % 2**64 for v in rem.view(torch.int64)] == [v % 1000 for v in values]
    assert [int(v) % 2**64 for v in quo.view(torch.int64)] == [v // 10 for v in values]


@parir.jit
def relu_of_a_slice(x, y, N):
    parir.label('N')
    y[:] = parir.where(x[:] >= 0.0, x[:], 0.0)


def test_where_of_slices_is_element_by_element():
    x = torch.tensor([-1.5, 2.0, 0.0, -0.25, 3.0])
    y = torch.full((5,), float("nan"))
    relu_of_a_slice(x, y, 5, seq=True)
    assert torch.equal(y, x.clamp(min=0.0))
