"""Shapes inside parir functions: x.shape[d], x.size(d), len(x), x.numel(), x.ndim, x.dim()
of tensor arguments are compile-time constants, also of dict entries and of the views a called
function receives; misuse is a ParirError at the user's line."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import expect_error_in_loop


@parir.jit
def row_sums(x, out):
    parir.label('N')
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.size(1)):
            s += x[i, j]
        out[i] = s


@parir.jit
def sizes(x, d, out):
    with parir.gpu:
        out[0] = len(x)
        out[1] = x.shape[-1]
        out[2] = x.numel()
        out[3] = x.ndim
        out[4] = x.dim()
        out[5] = d['y'].shape[0]
        out[6] = x.size(-2)


def total(r):
    # r is a row x[i] of the caller's tensor: its shape is the rest of x's.
    s = 0.0
    for j in range(r.shape[0]):
        s += r[j] * r.numel() / len(r)
    return s


@parir.jit
def row_sums_by_helper(x, out):
    parir.label('N')
    for i in range(x.shape[0]):
        out[i] = total(x[i])


@parir.jit
def matmul(A, B, C):
    m, n = A.shape
    n_, p = B.size()
    parir.label('M')
    for i in range(m):
        for j in range(p):
            s = 0.0
            for k in range(n):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def spec(n):
    return parir.par({"N": parir.threads(n)})


def test_shape_queries_are_constants_in_the_generated_code():
    x, out = torch.rand(37, 5), torch.zeros(37)
    src = parir.print_compiled(row_sums, [x, out], spec(37))
    assert "i < 37L" in src and "j < 5L" in src
    _C.nvrtc_compile(src, "sm_90")
    row_sums(x, out, opts=spec(37), seq=True)
    torch.testing.assert_close(out, x.sum(1))


def test_every_shape_query_as_python_and_compiled():
    x, y, out = torch.rand(3, 4, 5), torch.rand(9), torch.zeros(7, dtype=torch.int64)
    src = parir.print_compiled(sizes, [x, {"y": y}, out])
    _C.nvrtc_compile(src, "sm_90")
    for value in ["out[0] = 3", "out[1] = 5", "out[2] = 60", "out[3] = 3", "out[4] = 3",
                  "out[5] = 9", "out[6] = 4"]:
        assert value in src.replace("L;", ";"), value
    sizes(x, {"y": y}, out, seq=True)
    assert out.tolist() == [3, 5, 60, 3, 3, 9, 4]


def test_a_called_function_sees_the_shape_of_its_view():
    x, out = torch.rand(6, 11), torch.zeros(6)
    src = parir.print_compiled(row_sums_by_helper, [x, out], spec(6))
    assert "< 11L" in src
    row_sums_by_helper(x, out, opts=spec(6), seq=True)
    torch.testing.assert_close(out, x.sum(1))


def test_a_shape_unpacks_into_names():
    A, B, C = torch.rand(7, 5), torch.rand(5, 3), torch.zeros(7, 3)
    opts = parir.par({"M": parir.threads(7)})
    src = parir.print_compiled(matmul, [A, B, C], opts)
    assert "i < 7L" in src and "j < 3L" in src and "k < 5L" in src
    _C.nvrtc_compile(src, "sm_90")
    matmul(A, B, C, opts=opts, seq=True)
    torch.testing.assert_close(C, A @ B)


def test_a_new_shape_is_a_new_specialization():
    a = parir.print_compiled(row_sums, [torch.rand(4, 3), torch.zeros(4)], spec(4))
    b = parir.print_compiled(row_sums, [torch.rand(4, 8), torch.zeros(4)], spec(4))
    assert "j < 3L" in a and "j < 8L" in b


@pytest.mark.parametrize("expr,message", [
    ("x.shape[2]", r"dimension 2 is out of range for 'x', which has 1 dimension \(float32\[4\]\)"),
    ("x.size(-2)", "dimension -2 is out of range"),
    ("x.shape", r"x.shape is a tuple, which parir functions do not have; use one dimension at "
                r"a time, as in x.shape\[0\]"),
    ("x.size()", r"x.size\(\) is a tuple"),
    ("x.shape[i]", r"the dimension in x.shape\[d\] must be an integer literal"),
    ("len(N)", "'N' is not a tensor argument of f; only tensors have a shape"),
    ("x.numel(1)", r"x.numel\(\) takes no arguments"),
    ("a, b = x.shape", r"'x' has 1 dimension \(float32\[4\]\), unpacked into 2 names"),
    ("a, x[0] = x.shape", "can only be unpacked into names"),
])
def test_shape_errors_name_the_line(tmp_path, expr, message):
    statement = expr if "=" in expr else f"x[i] = {expr}"
    expect_error_in_loop(tmp_path, statement, message, [torch.zeros(4), 4], spec(4))


@pytest.mark.gpu
@pytest.mark.parametrize("rows,cols", [(1, 1), (31, 33), (1000, 7), (4097, 3)])
def test_shapes_on_gpu(rows, cols):
    x = torch.rand(rows, cols, device="cuda")
    out = torch.full((rows,), float("nan"), device="cuda")
    row_sums(x, out, opts=spec(rows))
    torch.testing.assert_close(out, x.sum(1))
    out.fill_(float("nan"))
    row_sums_by_helper(x, out, opts=spec(rows))
    torch.testing.assert_close(out, x.sum(1))
    o = torch.zeros(7, dtype=torch.int64, device="cuda")
    sizes(x.view(1, rows, cols), {"y": x[0]}, o)
    assert o.tolist() == [1, cols, rows * cols, 3, 3, cols, rows]
