"""None as an argument: an optional tensor not given, a parameter left at a default of None.
The code is specialized on it, as on a scalar's value: `x is None` is a constant, the branch it
rules out is left out unread, and any other use of x is an error naming it."""

import math

import pytest
import torch

import parir_torch as parir
from helpers import check_close, load_module

BIAS = None  # a module-level None, which `BIAS is None` reads as Numba reads globals


@parir.jit
def linear_rows(x, w, b, out, N, K):
    parir.label('N')
    for i in range(N):
        acc = 0.0
        for k in range(K):
            acc += x[i, k] * w[k]
        if b is not None:
            acc += b[i]
        out[i] = acc


@parir.jit
def scale_shift(x, y, N, scale=None, shift=None):
    if scale is None:
        scale = 1.0 / math.sqrt(N)
    parir.label('N')
    for i in range(N):
        y[i] = x[i] * scale + (shift[i] if shift is not None else 0.5)


def add_if_given(v, extra=None, i=0):
    r = v
    if extra is not None and extra[i] > 0.25:
        r = v + extra[i]
    return r


@parir.jit
def through_helper(x, extra, y, N):
    parir.label('N')
    for i in range(N):
        y[i] = add_if_given(x[i], extra, i) + add_if_given(x[i])


@parir.jit
def with_dict(p, x, y, N):
    parir.label('N')
    for i in range(N):
        if p['bias'] is None or BIAS is not None:
            y[i] = x[i] * p['scale']
        else:
            y[i] = x[i] * p['scale'] + p['bias'][i]


@parir.jit
def residual_add(x, y, N, residual=None):
    # Triton ports hold the test in a local, as their HAS_RESIDUAL constexpr.
    has_residual = residual is not None
    parir.label('N')
    for i in range(N):
        v = x[i]
        if has_residual:
            v += residual[i]
        y[i] = v * 2.0 if not has_residual else v


def spec(n):
    return parir.par({'N': parir.threads(n)})


def source(fn, args, n):
    return parir.print_compiled(fn, args, spec(n))


def code(fn, args, n):
    """The generated code without the plan's comment lines (which name every argument)."""
    return "\n".join(line for line in source(fn, args, n).splitlines()
                     if not line.startswith("//"))


# ----- CPU -----------------------------------------------------------------------------------

def test_the_branch_that_none_rules_out_is_left_out():
    x, w, out = torch.zeros(4, 3), torch.zeros(3), torch.zeros(4)
    without = source(linear_rows, [x, w, None, out, 4, 3], 4)
    with_bias = source(linear_rows, [x, w, torch.zeros(4), out, 4, 3], 4)
    assert "//@ signature linear_rows(x, w, b=None, out, N=4, K=3)" in without
    assert "b[" not in without and "//@ param b " not in without
    assert "b[i]" in with_bias and "//@ param b float32[4]" in with_bias


def test_a_parameter_left_at_none_takes_the_value_the_function_gives_it():
    src = code(scale_shift, [torch.zeros(16), torch.zeros(16), 16], 16)
    assert "(x[i] * 0.25f)" in src and "0.5f" in src and "shift[" not in src
    src = source(scale_shift, [torch.zeros(16), torch.zeros(16), 16, 2.0, torch.zeros(16)], 16)
    assert "(x[i] * 2.0f)" in src and "shift[i]" in src


def test_a_called_function_tests_none_passed_on_or_left_at_its_default():
    x, y = torch.zeros(8), torch.zeros(8)
    without = code(through_helper, [x, None, y, 8], 8)
    assert "extra" not in without
    with_extra = source(through_helper, [x, torch.zeros(8), y, 8], 8)
    assert with_extra.count("extra[") >= 1


def test_dict_entries_and_module_globals_can_be_none():
    src = code(with_dict, [{'bias': None, 'scale': 3.0}, torch.zeros(8), torch.zeros(8), 8], 8)
    assert "(x[i] * 3.0f)" in src and "bias" not in src
    src = source(with_dict, [{'bias': torch.zeros(8), 'scale': 3.0}, torch.zeros(8),
                             torch.zeros(8), 8], 8)
    assert "p__bias[i]" in src


def test_a_local_holding_a_test_of_none_is_that_constant():
    src = code(residual_add, [torch.zeros(8), torch.zeros(8), 8], 8)
    assert "residual[" not in src and "y[i] = (v * 2.0f);" in src
    src = code(residual_add, [torch.zeros(8), torch.zeros(8), 8, torch.zeros(8)], 8)
    assert "residual[i]" in src and "2.0f" not in src


def test_code_printed_for_a_none_argument_compiles_back_from_its_text():
    x, w, out = torch.zeros(4, 3), torch.zeros(3), torch.zeros(4)
    src = source(linear_rows, [x, w, None, out, 4, 3], 4)
    program = parir.compile_string("linear_rows", src, spec(4))
    program.compile("sm_90")


def test_plain_python_runs_the_same_calls():
    x, w = torch.rand(5, 3), torch.rand(3)
    out = torch.full((5,), float('nan'))
    linear_rows(x, w, None, out, 5, 3, seq=True)
    check_close(out, x @ w)
    y = torch.full((9,), float('nan'))
    scale_shift(x[:, 0].repeat(2)[:9].contiguous(), y, 9, seq=True)
    check_close(y, x[:, 0].repeat(2)[:9] / 3.0 + 0.5)


@pytest.mark.parametrize("body,pattern", [
    ("y[i] = x[i] + b[i]",
     r"argument 'b' is None in this call, and f\(\) uses it here; put its uses under "
     r"`if b is not None:`"),
    ("y[i] = x[i] + (1.0 if b is None else 0.0) + b[0]", r"argument 'b' is None in this call"),
    ("y[i] = x[i] if b is x else 0.0", r"`is` and `is not` compare an argument with None"),
    ("t = None\n        y[i] = t", r"None is used as a value here"),
])
def test_other_uses_of_none_are_errors_naming_the_line(tmp_path, body, pattern):
    mod = load_module(tmp_path, "import parir_torch as parir\n\n@parir.jit\n"
                                "def f(x, y, b, N):\n    parir.label('N')\n"
                                "    for i in range(N):\n        " + body + "\n")
    with pytest.raises(parir.ParirError, match=pattern) as e:
        parir.print_compiled(mod.f, [torch.zeros(4), torch.zeros(4), None, 4], spec(4))
    assert "user_program.py:" in str(e.value)


def test_a_none_the_function_assigns_is_tested_only_before_the_assignment(tmp_path):

    mod = load_module(tmp_path, "import parir_torch as parir\n\n@parir.jit\n"
                                "def f(x, y, N, s=None):\n    if s is None:\n        s = 2.0\n"
                                "    if s is None:\n        s = 3.0\n    parir.label('N')\n"
                                "    for i in range(N):\n        y[i] = x[i] * s\n")
    with pytest.raises(parir.ParirError, match=r"user_program.py:7: `s is None` is decided when "
                                                r"f\(\) compiles"):
        parir.print_compiled(mod.f, [torch.zeros(4), torch.zeros(4), 4], spec(4))
    src = parir.print_compiled(mod.f, [torch.zeros(4), torch.zeros(4), 4, 5.0], spec(4))
    assert "(x[i] * 5.0f)" in src


# ----- GPU -----------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 1000])
def test_optional_tensors_match_torch_both_ways(n):
    x, w, b = torch.randn(n, 7, device='cuda'), torch.randn(7, device='cuda'), \
        torch.randn(n, device='cuda')
    for bias in (None, b, None):
        out = torch.full((n,), float('nan'), device='cuda')
        linear_rows(x, w, bias, out, n, 7, opts=spec(n))
        check_close(out, x @ w + (0 if bias is None else bias))
    assert linear_rows.cache_size() >= 2
    y = torch.full((n,), float('nan'), device='cuda')
    scale_shift(x[:, 0].contiguous(), y, n, opts=spec(n))
    check_close(y, x[:, 0] / math.sqrt(n) + 0.5)
    y.fill_(float('nan'))
    through_helper(x[:, 1].contiguous(), b, y, n, opts=spec(n))
    check_close(y, x[:, 1] * 2 + torch.where(b > 0.25, b, 0.0))
    for residual in (None, b):
        y.fill_(float('nan'))
        residual_add(x[:, 2].contiguous(), y, n, residual, opts=spec(n))
        check_close(y, x[:, 2] * 2.0 if residual is None else x[:, 2] + b)


@pytest.mark.gpu
def test_calls_with_none_take_the_cached_path_and_keep_one_specialization():
    n = 4097
    x, w = torch.randn(n, 3, device='cuda'), torch.randn(3, device='cuda')
    out = torch.empty(n, device='cuda')
    linear_rows.clear_cache()
    for _ in range(3):
        out.fill_(float('nan'))
        linear_rows(x, w, None, out, n, 3, opts=spec(n))
        check_close(out, x @ w)
    assert linear_rows.cache_size() == 1


@pytest.mark.gpu
def test_none_arguments_inside_torch_compile():
    n = 1000

    def model(x, w, b):
        out = torch.empty(x.shape[0], device=x.device)
        linear_rows(x, w, b, out, x.shape[0], x.shape[1], opts=spec(n))
        return out.relu()

    compiled = torch.compile(model, fullgraph=True)
    x, w, b = torch.randn(n, 5, device='cuda'), torch.randn(5, device='cuda'), \
        torch.randn(n, device='cuda')
    check_close(compiled(x, w, None), (x @ w).relu())
    check_close(compiled(x, w, b), (x @ w + b).relu())
