"""parir.vectorize and parir.guvectorize: signatures and dispatch, broadcasting, outputs, the
views the kernels get, the generated kernels through NVRTC, tracing under torch.compile, and
the errors.

Without a GPU the calls run their kernels as plain Python: with seq=True, or through the
`kernels_as_python` fixture, which runs the eager call path as it is (dispatch, allocation,
cached plans, as_strided views) and stands in for the launch with the kernel's plain Python.
The GPU tests (marker `gpu`) run the same checks with the compiled kernels at full sizes; their
logic runs on the CPU here, with that stand-in, at small sizes."""

import inspect
import os
import re

import numpy as np
import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._subclasses.fake_tensor import FakeTensorMode

import parir_torch as parir
from parir_torch import _C, plain_python, ufunc_plans
from parir_torch.jit_function import JitFunction
from parir_torch.ufunc_types import parse_layout, parse_signature, safe_cast, select
from helpers import load_module

FLOATS = ["float32(float32, float32)", "float64(float64, float64)"]


@parir.vectorize(FLOATS)
def square_sum(a, b):
    return (a + b) ** 2


# One signature per dtype the GPU tests cover; the same body for each.
AXPB_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
               torch.int16, torch.int32, torch.int64, torch.uint8]
AXPB_SIGNATURES = [f"{n}({n}, {n})" for n in
                   (str(d).replace("torch.", "") for d in AXPB_DTYPES)]


@parir.vectorize(AXPB_SIGNATURES)
def axpb(a, b):
    return a * 3 + b


def clamp(v, lo, hi):
    return parir.min(parir.max(v, lo), hi)


@parir.vectorize(["float32(float32, float32)", "float64(float64, float64)"])
def clamped_scale(x, s):
    return clamp(x * s, -1.0, 1.0)


@parir.vectorize(["float32(float32)", "float64(float64)"])
def softplus(x):
    return parir.log(1.0 + parir.exp(x)) if x < 20.0 else x


@parir.vectorize(["int32(int32)", "int64(int64)"])
def collatz_steps(n):
    steps = 0
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@parir.guvectorize(["void(float32[:], float32[:], float32[:])",
                    "void(float64[:], float64[:], float64[:])"], "(n),(n)->()")
def dot(x, y, out):
    s = 0.0
    for k in range(len(x)):
        s += x[k] * y[k]
    out[0] = s


@parir.guvectorize(["void(float32[:, :], float32[:, :], float32[:, :])",
                    "void(float64[:, :], float64[:, :], float64[:, :])"],
                   "(m,n),(n,p)->(m,p)")
def matmulcore(A, B, C):
    m, n = A.shape
    n, p = B.shape
    for i in range(m):
        for j in range(p):
            C[i, j] = 0
            for k in range(n):
                C[i, j] += A[i, k] * B[k, j]


@parir.guvectorize(["void(float32[:], float32, float32[:], float32[:])"], "(n),()->(),()")
def scaled_extremes(x, scale, lo, hi):
    lo[0] = x[0] * scale
    hi[0] = x[0] * scale
    for k in range(1, x.shape[0]):
        lo[0] = parir.min(lo[0], x[k] * scale)
        hi[0] = parir.max(hi[0], x[k] * scale)


@parir.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),()->(n)")
def add_first(x, c, out):
    for k in range(x.shape[-1]):
        out[k] = x[k] + c[0]


@parir.vectorize(FLOATS)
def square_sum_plus_one(a, b):
    return square_sum(a, b) + 1.0


@parir.jit
def calls_a_vectorized_function(x, y, out, N):
    parir.label("i")
    for i in range(N):
        out[i] = square_sum(x[i], y[i]) + 1.0


@pytest.fixture
def kernels_as_python(monkeypatch):
    """Eager calls as they are, with the launch of each generated kernel run as its plain
    Python (what seq=True runs) on the same arguments: views over the callers' tensors."""
    launched = []

    def launch(self, *args, opts=None, seq=False, debug=False):
        assert opts.parallelize and not debug
        launched.append(self.__name__)
        plain_python.run(self.fn, args)

    monkeypatch.setattr(JitFunction, "__call__", launch)
    return launched


def generator(seed=0):
    return torch.Generator().manual_seed(seed)


# ----- signatures and the dispatch rule ---------------------------------------------------------

NUMPY_DTYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.float32,
                torch.float64]


@pytest.mark.parametrize("src", NUMPY_DTYPES, ids=str)
def test_safe_conversions_are_numpys(src):
    for dst in NUMPY_DTYPES:
        expected = np.can_cast(torch.empty(0, dtype=src).numpy().dtype,
                               torch.empty(0, dtype=dst).numpy().dtype, "safe")
        assert safe_cast(src, dst) == expected, (src, dst)


def test_bfloat16_converts_as_its_8_bit_significand_allows():
    bf16 = torch.bfloat16
    assert safe_cast(torch.int8, bf16) and safe_cast(torch.uint8, bf16)
    assert not safe_cast(torch.int16, bf16) and not safe_cast(bf16, torch.float16)
    assert not safe_cast(torch.float16, bf16)
    assert safe_cast(bf16, torch.float32) and safe_cast(bf16, torch.float64)


def test_signatures_and_layouts_parse():
    s = parse_signature("f4(i8, b1)", arrays=False)
    assert (s.result, [p.dtype for p in s.params]) == (torch.float32, [torch.int64, torch.bool])
    s = parse_signature("void(float32[:, ::1], int64, uint8[:])", arrays=True)
    assert [(p.dtype, p.ndim) for p in s.params] == [(torch.float32, 2), (torch.int64, 0),
                                                      (torch.uint8, 1)]
    assert s.result is None
    layout = parse_layout("(m, n),(n,p), () -> (m,p), (3)")
    assert layout.inputs == (("m", "n"), ("n", "p"), ()) and layout.outputs == (("m", "p"), (3,))


def sigs(*texts):
    return [parse_signature(t, arrays=False) for t in texts]


def test_dispatch_takes_an_exact_match_before_the_first_safe_one():
    both = sigs("float64(float64, float64)", "float32(float32, float32)")
    assert select(both, [torch.float32, torch.float32]) == 1
    assert select(both, [torch.float32, torch.float64]) == 0
    assert select(both, [torch.int16, torch.float32]) == 0  # first safe, in the order given


def test_dispatch_takes_the_first_signature_the_inputs_convert_to_safely():
    order = sigs("int32(int32)", "float32(float32)", "float64(float64)")
    assert select(order, [torch.int8]) == 0
    assert select(order, [torch.int64]) == 2  # not safe to int32 or float32; to float64, as NumPy
    assert select(order, [torch.uint16]) == 0
    assert select(order, [torch.uint32]) == 2
    assert select(order, [torch.float16]) == 1
    assert select(sigs("float32(float32)"), [torch.float64]) is None


def test_python_numbers_are_weak_and_numpy_scalars_are_typed():
    order = sigs("int32(int32, int32)", "float32(float32, float32)",
                 "float64(float64, float64)")
    assert select(order, [torch.int32, int]) == 0
    assert select(order, [torch.int32, bool]) == 0
    assert select(order, [torch.float32, float]) == 1
    assert select(order, [torch.int32, float]) == 2  # int32 is not safe in float32
    assert select(order, [float, float]) == 1
    x = torch.ones(3)
    assert square_sum(x, 2.0, seq=True).dtype == torch.float32
    assert square_sum(x, np.float64(2.0), seq=True).dtype == torch.float64
    assert square_sum(x, np.float32(2.0), seq=True).dtype == torch.float32
    assert square_sum(x, torch.tensor(2.0, dtype=torch.float64), seq=True).dtype == torch.float64


def test_an_unlisted_signature_lists_the_available_ones():
    x = torch.ones(3, dtype=torch.complex64)
    with pytest.raises(parir.ParirTypeError, match="dtype torch.complex64"):
        square_sum(x, x, seq=True)
    with pytest.raises(parir.ParirTypeError) as info:
        collatz_steps(torch.ones(3), seq=True)
    assert str(info.value) == (
        "collatz_steps() has no signature for inputs of types (float32); its signatures are: "
        "int32(int32), int64(int64). Inputs convert to a signature's types only where no value "
        "changes (NumPy's 'safe' casting); convert them, or add a signature")
    assert isinstance(info.value, TypeError)  # what Python's conventions lead one to catch


def test_integer_inputs_convert_to_a_float_signature(kernels_as_python):
    x = torch.arange(-4, 5, dtype=torch.int16)
    out = square_sum(x, 0.5)
    assert out.dtype == torch.float32  # int16 fits float32 safely
    torch.testing.assert_close(out, (x.float() + 0.5) ** 2)


# ----- decoration errors --------------------------------------------------------------------

def test_signatures_are_required():
    with pytest.raises(parir.ParirTypeError, match=r"needs the list of signatures.*"
                                                   r"@parir.vectorize\(\['float32"):
        parir.vectorize(lambda a: a)
    with pytest.raises(parir.ParirTypeError, match="needs the list of signatures"):
        parir.vectorize()
    with pytest.raises(parir.ParirTypeError, match="needs the layout"):
        parir.guvectorize(["void(float32[:], float32[:])"])


@pytest.mark.parametrize("signature, message", [
    ("float32(float32", "a signature is written RESULT"),
    ("float32(complex64)", "'complex64' is not a type parir knows"),
    ("float32(float32[:])", "parir.vectorize takes scalar types"),
    ("float32(float32, float32, float32)", "has 3 parameters, the function 2 \\(a, b\\)"),
])
def test_bad_vectorize_signatures_are_explained(signature, message):
    with pytest.raises(parir.ParirError, match=message):
        parir.vectorize([signature])(square_sum.fn)


@pytest.mark.parametrize("signature, layout, message", [
    ("float32(float32[:], float32[:])", "(n)->()", "returns nothing: its signature's result "
                                                   "is void"),
    ("void(float32[:], float32)", "(n)->()", "output 'out' is the scalar float32"),
    ("void(float32[:, :], float32[:])", "(n)->()", "'x' is float32\\[:, :\\].*2 dimensions, "
                                                   "but has 1 core dimension"),
    ("void(float32[:], float32[:])", "(n),(n)->()", "the layout '\\(n\\),\\(n\\)->\\(\\)' has 3 "
                                                    "arguments, the function 2"),
    ("void(float32[:], float32[:])", "(n)->", "a layout lists the core dimensions"),
    ("void(float32[:], float32[:])", "(n-1)->()", "a layout lists the core dimensions"),
])
def test_bad_guvectorize_signatures_are_explained(signature, layout, message):
    def first(x, out):
        out[0] = x[0]

    with pytest.raises(parir.ParirError, match=message):
        parir.guvectorize([signature], layout)(first)


def test_decoration_errors_name_the_function_and_other_targets_are_refused():
    with pytest.raises(parir.ParirTypeError) as info:
        parir.vectorize(["float32(float32)"])(square_sum.fn)
    assert re.match(r".*test_vectorize\.py:\d+: parir.vectorize square_sum: signature "
                    r"'float32\(float32\)' has 1 parameter", str(info.value))
    with pytest.raises(parir.ParirValueError, match="target='cuda'.*seq=True"):
        parir.vectorize(FLOATS, target="cpu")
    with pytest.raises(parir.ParirTypeError, match="positional parameters only"):
        parir.vectorize(["float32(float32)"])(lambda a=1.0: a)
    with pytest.raises(parir.ParirTypeError, match="decorates Python functions"):
        parir.vectorize(FLOATS)(len)
    with pytest.raises(parir.ParirTypeError, match="takes no input"):
        parir.vectorize(["float32()"])(lambda: 1.0)


# ----- plain Python: broadcasting, functions, outputs ------------------------------------------

BROADCASTS = [((6,), (6,)), ((4, 5), (5,)), ((4, 1), (1, 5)), ((3, 1, 5), (4, 1)), ((), (7,)),
              ((2, 3), ()), ((1,), (3, 4)), ((), ())]


@pytest.mark.parametrize("a_shape, b_shape", BROADCASTS)
def test_inputs_broadcast_as_torch_broadcasts(a_shape, b_shape):
    a = torch.randn(a_shape, generator=generator(1))
    b = torch.randn(b_shape, generator=generator(2))
    out = square_sum(a, b, seq=True)
    shape = torch.broadcast_shapes(a_shape, b_shape)
    assert out.shape == shape
    torch.testing.assert_close(out, (a + b) ** 2)
    # The function mapped over the broadcast elements, as torch.vmap maps it.
    pairs = [t.reshape(-1) for t in torch.broadcast_tensors(a, b)]
    torch.testing.assert_close(out, torch.vmap(square_sum.fn)(*pairs).reshape(shape))


def test_numbers_broadcast(kernels_as_python):
    x = torch.randn(3, 4, generator=generator())
    torch.testing.assert_close(square_sum(x, 1.5), (x + 1.5) ** 2)
    torch.testing.assert_close(square_sum(2, x), (2 + x) ** 2)
    torch.testing.assert_close(square_sum(np.float32(0.25), x), (x + 0.25) ** 2)
    zero_d = torch.tensor(0.5)
    torch.testing.assert_close(square_sum(zero_d, x), (x + 0.5) ** 2)
    with pytest.raises(parir.ParirTypeError, match="needs a tensor among its arguments"):
        square_sum(1.0, 2.0)


def test_the_functions_language_runs_per_element(kernels_as_python):
    x = torch.linspace(-30, 30, 41)
    torch.testing.assert_close(clamped_scale(x, 0.1), (x * 0.1).clamp(-1, 1))
    torch.testing.assert_close(softplus(x), torch.where(x < 20, torch.log1p(x.exp()), x))
    n = torch.tensor([1, 2, 3, 6, 7, 27], dtype=torch.int32)
    steps = collatz_steps(n)
    assert steps.dtype == torch.int32 and steps.tolist() == [0, 1, 7, 8, 16, 111]


def test_numpy_arrays_give_torch_tensors_on_the_cpu():
    a = np.arange(10, dtype=np.float32)
    out = square_sum(a, np.float32(1.2), seq=True)
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu"
    torch.testing.assert_close(out, (torch.from_numpy(a) + torch.tensor(1.2)) ** 2)


def test_outputs_given_by_keyword_or_position_are_written_and_returned(kernels_as_python):
    x, y = torch.randn(3, 4, generator=generator(1)), torch.randn(4, generator=generator(2))
    out = torch.full((3, 4), float("nan"))
    assert square_sum(x, y, out=out) is out
    torch.testing.assert_close(out, (x + y) ** 2)
    out.fill_(float("nan"))
    assert square_sum(x, y, out) is out
    torch.testing.assert_close(out, (x + y) ** 2)
    expected = (x + y) ** 2
    assert square_sum(x, y, out=x) is x  # in place: each element reads its own inputs first
    torch.testing.assert_close(x, expected)


@pytest.mark.parametrize("out, error, message", [
    (torch.empty(3, 5), parir.ParirValueError, r"output 'out' has shape \(3, 5\), but the "
                                               r"inputs give \(3, 4\)"),
    (torch.empty(3, 4, dtype=torch.float64), parir.ParirTypeError,
     r"output 'out' has dtype float64, but the signature 'float32\(float32, float32\)' writes "
     r"float32"),
    (torch.empty(4).expand(3, 4), parir.ParirValueError, "several elements in one place"),
    (torch.empty(3, 4, device="meta"), parir.ParirError, "argument 'out' is on meta, but "
                                                         "argument 'a' is on cpu"),
    ([1.0], parir.ParirTypeError, "output 'out' must be a tensor"),
])
def test_outputs_are_checked(out, error, message):
    x = torch.randn(3, 4)
    with pytest.raises(error, match=message):
        square_sum(x, 1.0, out=out, seq=True)


def test_argument_errors():
    x = torch.randn(3, 4)
    with pytest.raises(parir.ParirTypeError, match=r"takes 2 inputs \(a, b\), optionally "
                                                   r"followed by 1 output, but 1 argument"):
        square_sum(x)
    with pytest.raises(parir.ParirTypeError, match="both as argument and as out="):
        square_sum(x, x, x, out=x)
    with pytest.raises(parir.ParirValueError, match=r"do not broadcast: argument 'b' has loop "
                                                    r"shape \(5,\) and argument 'a' has \(3, 4\)"):
        square_sum(x, torch.randn(5), seq=True)
    with pytest.raises(parir.ParirError, match="argument 'b' is on meta, but argument 'a'"):
        square_sum(x, torch.randn(3, 4, device="meta"), seq=True)
    with pytest.raises(parir.ParirTypeError, match="argument 'b' is a dict"):
        square_sum(x, {"k": 1.0})
    with pytest.raises(parir.ParirTypeError, match="unexpected keyword argument"):
        square_sum(x, x, where=True)
    with pytest.raises(parir.ParirValueError, match="leave opts.parallelize empty"):
        square_sum(x, x, opts=parir.par({"i": parir.threads(4)}))
    with pytest.raises(parir.ParirTypeError, match="opts must be a parir.CompileOptions"):
        square_sum(x, x, opts={"i": 3})
    with pytest.raises(parir.ParirTypeError, match="CompileOptions\\(check=True\\)"):
        parir.check(square_sum, x, x)


def test_empty_inputs_give_empty_outputs_without_a_kernel(kernels_as_python):
    for _ in range(2):  # the checked call, then its plan
        assert square_sum(torch.empty(0, 3), torch.empty(3)).shape == (0, 3)
    assert dot(torch.empty(0, 5), torch.empty(5)).shape == (0,)
    assert kernels_as_python == []
    assert dot(torch.empty(2, 0), torch.empty(0)).tolist() == [0.0, 0.0]  # an empty sum
    assert kernels_as_python == ["dot_guvectorized"]


# ----- generalized functions -----------------------------------------------------------------

def test_dot_loops_over_the_broadcast_loop_dimensions(kernels_as_python):
    x = torch.randn(3, 4, 6, generator=generator(1))
    y = torch.randn(4, 1, 6, generator=generator(2))[:, 0]  # (4, 6), broadcast over 3
    out = dot(x, y)
    assert out.shape == (3, 4)
    torch.testing.assert_close(out, (x * y).sum(-1))
    torch.testing.assert_close(dot(x.double(), y.double(), seq=True), (x * y).sum(-1).double())


def test_matmulcore_is_numbaPros_example(kernels_as_python):
    A = torch.arange(10 * 2 * 4, dtype=torch.float32).reshape(10, 2, 4)
    B = torch.arange(10 * 4 * 5, dtype=torch.float32).reshape(10, 4, 5)
    C = matmulcore(A, B)
    assert C.shape == (10, 2, 5)
    torch.testing.assert_close(C, A @ B)
    # Another size compiles the function for it: A.shape is read as the call's sizes.
    A2 = torch.randn(3, 3, 2, generator=generator())
    torch.testing.assert_close(matmulcore(A2, A2.transpose(1, 2)), A2 @ A2.transpose(1, 2))


def test_several_outputs_and_a_scalar_input(kernels_as_python):
    x = torch.randn(5, 7, generator=generator())
    lo, hi = scaled_extremes(x, 2.0)
    torch.testing.assert_close(lo, (x * 2).amin(-1))
    torch.testing.assert_close(hi, (x * 2).amax(-1))
    scale = torch.tensor([1.0, -1.0, 0.5, 2.0, 3.0])
    lo2, hi2 = torch.empty(5), torch.empty(5)
    assert scaled_extremes(x, scale, out=(lo2, hi2)) == (lo2, hi2)
    torch.testing.assert_close(lo2, (x * scale[:, None]).amin(-1))


def test_inputs_without_loop_dimensions_give_a_0d_result(kernels_as_python):
    x = torch.randn(5, generator=generator())
    out = dot(x, x)
    assert out.shape == () and torch.allclose(out, x @ x)
    assert square_sum(torch.tensor(1.0), 2.0).shape == ()


def test_a_unit_input_declared_as_an_array(kernels_as_python):
    x = torch.randn(4, 6, generator=generator())
    torch.testing.assert_close(add_first(x, torch.arange(4.0)), x + torch.arange(4.0)[:, None])
    torch.testing.assert_close(add_first(x, 3.0), x + 3.0)  # a number made a 1-element array


def test_core_dimensions_are_checked():
    x = torch.randn(3, 6)
    with pytest.raises(parir.ParirValueError) as info:
        dot(x, torch.randn(3, 5), seq=True)
    assert str(info.value) == ("dot(): core dimension 'n' of the layout '(n),(n)->()' is 6 in "
                               "argument 'x' (its dimension 1) but 5 in argument 'y' (its "
                               "dimension 1)")
    with pytest.raises(parir.ParirValueError, match="argument 'B' has 1 dimension, fewer than "
                                                    "its core dimensions \\(n, p\\)"):
        matmulcore(torch.randn(2, 3), torch.randn(3), seq=True)
    with pytest.raises(parir.ParirValueError, match="argument 'x' is a number, but the layout"):
        dot(1.0, x, seq=True)

    @parir.guvectorize(["void(float32[:], float32[:])"], "(n)->(m)")
    def unknown(x, out):
        out[0] = x[0]

    with pytest.raises(parir.ParirValueError, match="core dimension 'm' of output 0 is no "
                                                    "input's"):
        unknown(x, seq=True)

    @parir.guvectorize(["void(float32[:], float32[:])"], "(3)->()")
    def fixed(x, out):
        out[0] = x[0] + x[1] + x[2]

    torch.testing.assert_close(fixed(torch.ones(2, 3), seq=True), torch.full((2,), 3.0))
    with pytest.raises(parir.ParirValueError, match="fixes a core dimension at 3, but argument "
                                                    "'x' \\(its dimension 1\\) is 6"):
        fixed(x, seq=True)


def test_sizes_read_in_a_way_parir_cannot_compile_name_the_line(tmp_path):
    module = load_module(tmp_path, "import parir_torch as parir\n\n"
                                   "@parir.guvectorize(['void(float32[:], float32[:])'], "
                                   "'(n)->()')\n"
                                   "def first(x, out):\n"
                                   "    s = x.shape\n"
                                   "    out[0] = x[0]\n")
    with pytest.raises(parir.ParirError, match=r"user_program\.py:5: x\.shape is a tuple, "
                                               r"which parir functions do not have"):
        parir.print_compiled(module.first, [torch.ones(3, 4)])


# ----- the views the kernels get ----------------------------------------------------------------

VIEW_CASES = [
    ((8, 5), [(8, 5), (5,)], None),
    ((8, 5), [(8, 5), (8, 5)], None),
    ((2, 3, 4), [(2, 3, 4), (3, 1)], None),
    ((2, 3, 4), [(2, 3, 4), (2, 3, 4)], (2, 1, 0)),
    ((1, 3, 1, 4), [(1, 3, 1, 4), (4,)], None),
    ((5, 1), [(5, 1), ()], None),
    ((), [(), ()], None),
]


@pytest.mark.parametrize("loop_shape, shapes, permute", VIEW_CASES)
def test_eager_and_traced_views_agree(loop_shape, shapes, permute):
    operands = [torch.randn(s, generator=generator(k)) for k, s in enumerate(shapes)]
    if permute is not None:  # the first operand, and the output, laid out in another order
        operands[0] = operands[0].permute(permute).contiguous().permute(
            [permute.index(d) for d in range(len(permute))])
    # Filled: torch.equal of uninitialized memory fails where it happens to hold a NaN.
    out = torch.empty_like(operands[0]).fill_(0.5)
    operands.append(out)
    cores = [0] * len(operands)
    views = ufunc_plans.Views(operands, cores, loop_shape, first_output=len(operands) - 1)
    for a in operands:
        shape, strides = views.shape_and_strides(a, 0)
        eager = a.as_strided(shape, strides)
        traced = views.traced_view(a, 0)
        assert traced.shape == eager.shape
        assert [st for st, n in zip(traced.stride(), traced.shape) if n > 1] == \
            [st for st, n in zip(eager.stride(), eager.shape) if n > 1]
        assert traced.data_ptr() == a.data_ptr() and torch.equal(traced, eager)
        # Every element of the loop, in the output's order, is the element broadcasting gives.
        full = a.expand(loop_shape) if a.dim() or loop_shape else a
        if len(views.sizes) == 1:
            assert torch.equal(eager.reshape(-1).sort().values,
                               full.permute(views.order + [d for d in range(len(loop_shape))
                                                           if d not in views.order])
                               .reshape(-1).sort().values)


def test_contiguous_operands_of_one_shape_are_one_dimension():
    x = torch.randn(4, 5, 6)
    views = ufunc_plans.Views([x, x, torch.empty_like(x)], [0, 0, 0], (4, 5, 6), 2)
    assert views.sizes == (120,)
    t = x.transpose(0, 2)  # an output laid out as t is: one dimension again
    views = ufunc_plans.Views([t, torch.empty_like(t)], [0, 0], tuple(t.shape), 1)
    assert views.sizes == (120,) and views.order == [2, 1, 0]
    row = torch.randn(6)
    views = ufunc_plans.Views([x, row, torch.empty_like(x)], [0, 0, 0], (4, 5, 6), 2)
    assert views.sizes == (20, 6)  # the broadcast row keeps its dimension apart


def test_output_follows_the_inputs_layout_and_plans_are_reused(kernels_as_python):
    x = torch.randn(6, 4, generator=generator()).t()  # (4, 6), transposed
    out = square_sum(x, 1.0)
    assert out.stride() == x.stride()  # as torch's elementwise operators lay it out
    torch.testing.assert_close(out, (x + 1.0) ** 2)
    plans = len(square_sum._plans)
    out2 = square_sum(x, 2.0)  # same kinds of arguments: the cached plan, the new value
    assert len(square_sum._plans) == plans
    torch.testing.assert_close(out2, (x + 2.0) ** 2)
    y = torch.randn(4, 12, generator=generator(3))[:, ::2]  # strided: another plan
    torch.testing.assert_close(square_sum(y, x), (y + x) ** 2)
    assert len(square_sum._plans) == plans + 1


def test_kernels_are_one_loop_over_the_elements():
    x, y = torch.randn(8, 5), torch.randn(5)
    kernel, args, opts = square_sum.compiled([x, y])
    assert [tuple(a.shape) for a in args[:3]] == [(8, 5)] * 3 and args[3:] == [8, 5]
    assert [a.stride() for a in args[:3]] == [(5, 1), (0, 1), (5, 1)]
    assert opts.parallelize == {"parir.elements": parir.threads(40)}
    assert inspect.getsource(kernel.fn) == (
        "def square_sum_vectorized(a, b, out, n0, n1):\n"
        "    parir.label('parir.elements')\n"
        "    for i in range(n0 * n1):\n"
        "        out[i // n1, i % n1] = square_sum(a[i // n1, i % n1], b[i // n1, i % n1])\n")
    kernel, args, _ = square_sum.compiled([x, 2.0])
    assert "out[i] = square_sum(a[i], parir.float32(b))" in inspect.getsource(kernel.fn)


def test_generated_names_avoid_the_functions_names():
    @parir.vectorize(["float32(float32, float32, float32)"])
    def parir_(out, i, n0):
        return out + i + n0

    kernel, _, _ = parir_.compiled([torch.ones(3), 1.0, 2.0])
    source = inspect.getsource(kernel.fn)
    assert source.startswith("def parir__vectorized(out, i, n0, out_1, n0_1):")
    assert "for i_1 in range(n0_1):" in source


# ----- generated code through NVRTC ------------------------------------------------------------

@pytest.mark.parametrize("dtype", AXPB_DTYPES, ids=str)
def test_every_signature_compiles_with_nvrtc(dtype):
    x = torch.zeros(1000, 3, dtype=dtype)
    source = parir.print_compiled(axpb, [x, torch.zeros(3, dtype=dtype)])
    assert "extern \"C\" __global__" in source and "//@ parir.plan axpb_vectorized" in source
    binary, is_cubin, log = _C.nvrtc_compile(source, "sm_90")
    assert len(binary) > 100 and is_cubin


@pytest.mark.parametrize("fn, args", [
    (dot, [torch.zeros(100, 7), torch.zeros(7)]),
    (matmulcore, [torch.zeros(10, 2, 4), torch.zeros(4, 5)]),
    (scaled_extremes, [torch.zeros(9, 3), 2.0]),
    (add_first, [torch.zeros(9, 3), torch.zeros(9)]),
    (softplus, [torch.zeros(33, dtype=torch.float64)]),
    (collatz_steps, [torch.zeros(33, dtype=torch.int32)]),
    (clamped_scale, [torch.zeros(4, 33).t(), 0.5]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_generated_kernels_compile_and_name_the_users_lines(fn, args):
    source = parir.print_compiled(fn, args)
    # #line directives of the user's function's statements (one that is a single `return e`
    # becomes an expression in the kernel's statement).
    assert ('test_vectorize.py"' in source) == (fn not in (softplus, clamped_scale))
    binary, is_cubin, log = _C.nvrtc_compile(source, "sm_90")
    assert len(binary) > 100 and is_cubin


def test_a_jit_function_inlines_a_vectorized_function():
    x = torch.randn(10)
    source = parir.print_compiled(calls_a_vectorized_function, [x, x, torch.empty(10), 10],
                                  parir.par({"i": parir.threads(10)}))
    assert "out[i] = (parir::pow((x[i] + y[i]), 2.0f) + 1.0f);" in source
    out = torch.empty(10)
    calls_a_vectorized_function(x, x, out, 10, seq=True)
    torch.testing.assert_close(out, (2 * x) ** 2 + 1)
    source = parir.print_compiled(square_sum_plus_one, [x, 0.5])
    assert "out[i] = (parir::pow((a[i] + 0.5f), 2.0f) + 1.0f);" in source
    torch.testing.assert_close(square_sum_plus_one(x, 0.5, seq=True), (x + 0.5) ** 2 + 1)


def test_errors_in_the_users_function_name_its_file_and_line(tmp_path):
    module = load_module(tmp_path, "import parir_torch as parir\n\n\n"
                                   "@parir.vectorize(['float32(float32)'])\n"
                                   "def pair(a):\n"
                                   "    return [a, a]\n")
    with pytest.raises(parir.ParirError) as info:
        parir.print_compiled(module.pair, [torch.ones(3)])
    assert str(info.value).startswith(f"{tmp_path / 'user_program.py'}:6: List expressions are "
                                      f"not supported")


# ----- torch.compile, traced with fake CUDA tensors ---------------------------------------------

def model(x, y):
    return dot(square_sum(x, y), y) + 1


def traced_graphs(fn, *shapes, dynamic=False, **kwargs):
    """The graphs AOTAutograd makes of `fn` compiled with fullgraph=True, on fake CUDA tensors
    of `shapes`."""
    graphs = []

    def forward(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=aot_autograd(fw_compiler=forward), fullgraph=True,
                             dynamic=dynamic)
    with FakeTensorMode():
        result = compiled(*[torch.empty(s, device="cuda") for s in shapes], **kwargs)
    return graphs, result


def launches(gm):
    return [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.auto_functionalized_v2
            and n.args[0] is torch.ops.parir.launch.default]


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_records_one_launch_per_call_without_graph_breaks(dynamic):
    graphs, result = traced_graphs(model, (8, 5), (5,), dynamic=dynamic)
    assert result.shape == (8,)
    (gm,) = graphs
    nodes = launches(gm)
    assert len(nodes) == 2
    programs = [n.kwargs["program"] for n in nodes]
    assert "//@ parir.plan square_sum_vectorized" in programs[0]
    assert "//@ param b float32[8, 5] strides(0, 1) in" in programs[0]
    assert "//@ parir.plan dot_guvectorized" in programs[1]
    with FakeTensorMode():
        explanation = torch._dynamo.explain(model)(torch.empty(8, 5, device="cuda"),
                                                   torch.empty(5, device="cuda"))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_torch_compile_writes_outputs_given_and_takes_numbers():
    def f(x, y, out):
        square_sum(x, 2.5, out=out)
        return axpb(out, y)

    graphs, result = traced_graphs(f, (4, 6), (6,), (4, 6))
    (gm,) = graphs
    programs = [n.kwargs["program"] for n in launches(gm)]
    assert len(programs) == 2 and "signature square_sum_vectorized(a, b=2.5, out, n0=24)" in \
        programs[0]
    assert "//@ parir.plan axpb_vectorized" in programs[1]


def test_torch_compile_converts_and_makes_arrays_in_the_graph():
    def f(x, y):
        lo, hi = scaled_extremes(x, 2.0)             # a number for a scalar parameter
        shifted = add_first(x, 3.0)                  # a number made a 1-element array
        return dot(x.half(), y.half()) + lo + hi + shifted.sum(-1)  # float16 made float32

    graphs, result = traced_graphs(f, (4, 6), (6,))
    assert result.shape == (4,) and result.dtype == torch.float32
    (gm,) = graphs
    programs = [n.kwargs["program"] for n in launches(gm)]
    assert [re.search(r"//@ parir.plan (\w+)", p).group(1) for p in programs] == [
        "scaled_extremes_guvectorized", "add_first_guvectorized", "dot_guvectorized"]
    assert "//@ param c float32[4, 1] strides(0, 1) in" in programs[1]
    assert "//@ param x float32[4, 6] strides(6, 1) in" in programs[2]
    targets = [n.target for n in gm.graph.nodes]
    assert torch.ops.aten.full.default in targets


@pytest.mark.parametrize("strict", [False, True])
def test_export_records_the_launch(strict):
    class Model(torch.nn.Module):
        def forward(self, x, y):
            return square_sum(x, y) * 2

    with FakeTensorMode():
        x, y = torch.empty(8, 5, device="cuda"), torch.empty(5, device="cuda")
        ep = torch.export.export(Model(), (x, y), strict=strict)
        decomposed = ep.run_decompositions()
    nodes = [n for n in ep.graph_module.graph.nodes if n.target is torch.ops.parir.launch.default]
    assert len(nodes) == 1 and "//@ parir.plan square_sum_vectorized" in nodes[0].args[0]
    assert len(launches(decomposed.graph_module)) == 1


def test_seq_inside_torch_compile_is_an_error():
    def f(x):
        return softplus(x, seq=True)

    with pytest.raises(Exception, match="run eagerly, not inside torch.compile"):
        traced_graphs(f, (4,))


# ----- the GPU: compiled kernels against torch (their logic runs on the CPU too) ----------------

SIZES = [1, 31, 33, 1000, 4097, 1 << 20]
CPU_SIZES = [1, 33, 100]

# float16 and bfloat16 round after each operation (README, "Types"): an error of half a unit in
# the last place of the largest intermediate value (|3a| < 32 for the sizes here), on top of
# the reference's one rounding.
TOLERANCES = {torch.float16: (2e-3, 1e-2), torch.bfloat16: (1.6e-2, 8e-2),
              torch.float32: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12)}


def random(shape, dtype, device, seed):
    g = generator(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).to(device)
    low = 0 if dtype == torch.uint8 else -50
    return torch.randint(low, 80, shape, generator=g, dtype=torch.int64).to(dtype).to(device)


def assert_matches(out, expected, dtype, atol=None):
    """`out` against a reference computed in float64 (or int64) from the same inputs; `atol`
    for sums, whose float32 rounding grows with the terms."""
    assert out.dtype == dtype and out.shape == expected.shape
    if dtype.is_floating_point:
        rtol, default_atol = TOLERANCES[dtype]
        atol = default_atol if atol is None else atol
        torch.testing.assert_close(out.cpu().double(), expected.cpu().double().to(dtype).double(),
                                   rtol=rtol, atol=atol)
    else:  # wrapped as C wraps the narrow type's arithmetic
        assert torch.equal(out.cpu(), expected.cpu().to(dtype))


def check_each_dtype(dtype, size, device):
    a, b = random((size,), dtype, device, 1), random((size,), dtype, device, 2)
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    out = axpb(a, b)
    assert out.device == a.device
    assert_matches(out, a.to(wide) * 3 + b.to(wide), dtype)
    # Into a poisoned output, so that an element the kernel skips shows.
    poisoned = torch.full_like(a, float("nan") if dtype.is_floating_point else 77)
    assert axpb(a, b, out=poisoned) is poisoned
    assert_matches(poisoned, a.to(wide) * 3 + b.to(wide), dtype)


def check_broadcasts(size, device):
    rows = max(1, size // 64)
    x = random((rows, 64), torch.float32, device, 1)
    column = random((rows, 1), torch.float32, device, 2)
    row = random((64,), torch.float32, device, 3)
    ref = (x.double() + row.double()) ** 2
    assert_matches(square_sum(x, row), ref, torch.float32)
    assert_matches(square_sum(column, row), (column.double() + row.double()) ** 2,
                   torch.float32)
    assert_matches(square_sum(x, 0.5), (x.double() + 0.5) ** 2, torch.float32)
    assert_matches(square_sum(np.float32(0.5), column), (column.double() + 0.5) ** 2,
                   torch.float32)
    zero_d = torch.tensor(0.25, dtype=torch.float64)  # on the CPU, with tensors on the device
    assert_matches(square_sum(x, zero_d), (x.double() + 0.25) ** 2, torch.float64)


def check_non_contiguous_inputs_and_outputs(size, device):
    base = random((size, 6), torch.float64, device, 1)
    x = base[:, ::3]                                     # (size, 2), strided
    y = random((2, size), torch.float64, device, 2).t()  # (size, 2), transposed
    assert_matches(square_sum(x, y), (x + y) ** 2, torch.float64)
    out = torch.full((2, size), float("nan"), dtype=torch.float64, device=device).t()
    assert square_sum(x, y, out=out) is out
    assert_matches(out, (x + y) ** 2, torch.float64)
    expected = (x + y) ** 2
    square_sum(x, y, out=x)  # in place, into a strided view
    assert_matches(x, expected, torch.float64)


def check_guvectorize(size, device):
    x = random((size, 9), torch.float32, device, 1)
    y = random((9,), torch.float32, device, 2)
    out = torch.full((size,), float("nan"), device=device)
    assert dot(x, y, out=out) is out
    assert_matches(out, x.double() @ y.double(), torch.float32, atol=1e-4)
    rows = max(1, size // 16)
    A = random((rows, 2, 3), torch.float64, device, 3)
    B = random((3, 4), torch.float64, device, 4)
    assert_matches(matmulcore(A, B), A @ B, torch.float64)
    lo, hi = scaled_extremes(x, 2.0)
    assert_matches(lo, (x.double() * 2).amin(-1), torch.float32)
    assert_matches(hi, (x.double() * 2).amax(-1), torch.float32)


CHECKS = [check_broadcasts, check_non_contiguous_inputs_and_outputs, check_guvectorize]


@pytest.mark.parametrize("size", CPU_SIZES)
@pytest.mark.parametrize("dtype", AXPB_DTYPES, ids=str)
def test_each_dtype_on_the_cpu(dtype, size, kernels_as_python):
    check_each_dtype(dtype, size, "cpu")


@pytest.mark.parametrize("size", CPU_SIZES)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_gpu_checks_on_the_cpu(check, size, kernels_as_python):
    check(size, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", AXPB_DTYPES, ids=str)
def test_each_dtype_on_the_gpu(dtype, size):
    check_each_dtype(dtype, size, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_on_the_gpu(check, size):
    check(size, "cuda")


@pytest.mark.gpu
def test_cpu_inputs_run_on_the_gpu_and_come_back():
    x = torch.randn(1000, 3)
    out = square_sum(x, 1.0)
    assert out.device.type == "cpu"
    assert_matches(out, (x.double() + 1.0) ** 2, torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("size", [33, 4097, 1 << 20])
def test_torch_compile_fullgraph_on_the_gpu(size):
    x = random((size, 5), torch.float32, "cuda", 1)
    y = random((5,), torch.float32, "cuda", 2)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    expected = ((x.double() + y.double()) ** 2) @ y.double() + 1
    assert_matches(compiled(x, y), expected, torch.float32, atol=1e-3)
    assert_matches(model(x, y), expected, torch.float32, atol=1e-3)
    out = torch.empty_like(x)

    def with_out(x, y, out):
        square_sum(x, y, out=out)
        return out * 2

    compiled = torch.compile(with_out, fullgraph=True)
    assert_matches(compiled(x, y, out), 2 * (x.double() + y.double()) ** 2, torch.float32)
    assert_matches(out, (x.double() + y.double()) ** 2, torch.float32)


@pytest.mark.gpu
def test_opts_check_compares_the_kernel_with_its_python():
    x = torch.randn(200, device="cuda")
    opts = parir.CompileOptions(check=True)
    assert_matches(square_sum(x, 0.5, opts=opts), (x.double() + 0.5) ** 2, torch.float32)


# ----- the README's examples -----------------------------------------------------------------

def readme_section():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    start = text.index("\n## Vectorized functions")
    return text[start:text.index("\n## ", start + 1)]


def test_the_readme_examples_run_and_its_errors_are_what_parir_says(tmp_path,
                                                                    kernels_as_python):
    section = readme_section()
    code = "\n".join(text for lang, text in re.findall(r"```(\w*)\n(.*?)```", section, re.S)
                     if lang == "python")
    # Small sizes on the CPU: each kernel's launch runs as plain Python here.
    code = code.replace("x = torch.randn(1000, 517, device='cuda')",
                        "x = torch.randn(6, 5)\nx0 = x.clone()")
    module = load_module(tmp_path, "import torch\nimport parir_torch as parir\n"
                                   "A, B = torch.randn(3, 2, 4), torch.randn(3, 4, 5)\n" + code)
    x0, x = module.x0, module.x
    torch.testing.assert_close(module.y, (x0 + x0[0]) ** 2)
    torch.testing.assert_close(x, (x0 + 1.2) ** 2)
    torch.testing.assert_close(module.d, x @ x[0])
    torch.testing.assert_close(module.C, module.A @ module.B)
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    errors = [text for lang, text in blocks if not lang]
    with pytest.raises(parir.ParirTypeError) as info:
        collatz_steps(torch.ones(3))
    assert str(info.value) == errors[0].strip()
    with pytest.raises(parir.ParirValueError) as info:
        module.dot(torch.ones(1000, 517), torch.ones(3))
    assert str(info.value) == errors[1].strip()
