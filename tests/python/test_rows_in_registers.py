"""Single-pass rows: threads that walk one row in several loops (softmax, layer norm, L2
normalization) keep their elements in registers between the loops, and a row shorter than the
threads asked for gets only as many threads as it has elements. The code must show it, and the
results must stay those of the plain program: sizes that are not multiples of the thread count,
rows too long to keep, in-place calls, and programs where keeping a value would be wrong."""

import os
import re
import sys

import pytest
import torch

import parir_torch as parir
from helpers import check_close

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from kernels import layer_norm, softmax_rows as softmax  # noqa: E402  (the benchmarks' own)


@parir.jit
def l2_normalize(x, out, N, M):
    # Written with explicit loops, as a CUDA programmer would.
    parir.label('row')
    for row in range(N):
        total = 0.0
        parir.label('acc')
        for col in range(M):
            total += x[row, col] * x[row, col]
        norm = parir.sqrt(total) + 1e-12
        parir.label('scale')
        for col in range(M):
            out[row, col] = x[row, col] / norm


@parir.jit
def scale_then_sum(x, out, s, N, M):
    # Called with out = x too: the sum must then see the scaled values.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        out[i, :] = x[i, :] * 2.0
        parir.label('M')
        s[i] = parir.sum(x[i, :])


@parir.jit
def updated_in_place(x, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        x[i, :] += 1.0
        parir.label('M')
        x[i, :] *= 2.0
        parir.label('M')
        x[i, :] -= 3.0


@parir.jit
def clip_copy(x, out, N, M):
    # A conditional store: the copy's value must reach memory even where the clip skips it.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j]
        parir.label('M')
        for j in range(M):
            if out[i, j] > 0.5:
                out[i, j] = 0.5


@parir.jit
def reverse_after(x, out, N, M):
    # The second loop reads elements that other threads stored.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j] * 3.0
        parir.label('M')
        for j in range(M):
            x[i, j] = out[i, M - 1 - j]


def spec(n, threads):
    return {'N': parir.threads(n), 'M': parir.threads(threads)}


def code(fn, args, opts):
    return parir.print_compiled(fn, args, opts=parir.par(opts))


def kept(tensor, text):
    """Whether the code keeps elements of `tensor` in registers (locals tensor_r0, ...)."""
    return re.search(rf"\b{tensor}_r\d+\b", text) is not None


# ----- the generated code (no GPU) -----------------------------------------------------------

def test_softmax_keeps_its_row_in_registers():
    x, out = torch.empty(4, 8192), torch.empty(4, 8192)
    text = code(softmax, (x, out, 4, 8192), spec(4, 1024))
    assert kept("out", text) and kept("x", text)
    # Each element is read from x once and stored to out once.
    assert text.count("= x[") == 8 + 1  # and the max's first element
    assert text.count("out[") == 8


def test_rows_too_long_to_keep_are_walked_as_before():
    x, out = torch.empty(2, 20000), torch.empty(2, 20000)
    text = code(softmax, (x, out, 2, 20000), spec(2, 1024))
    assert not kept("out", text) and not kept("x", text)


def test_a_conditional_store_is_not_kept():
    x, out = torch.empty(3, 100), torch.empty(3, 100)
    text = code(clip_copy, (x, out, 3, 100), spec(3, 64))
    assert not kept("out", text)


def test_a_short_row_gets_as_many_threads_as_it_has_elements():
    x, out = torch.empty(8, 448), torch.empty(8, 448)
    text = code(softmax, (x, out, 8, 448), spec(8, 1024))
    assert "block(448)" in text
    assert "__launch_bounds__(448)" in text


def test_many_short_rows_run_a_warp_each():
    x, out = torch.empty(16384, 448), torch.empty(16384, 448)
    text = code(softmax, (x, out, 16384, 448), spec(16384, 1024))
    assert "block(256) warps(8)" in text and "parir::warp_reduce" in text
    assert "__syncthreads" not in text
    assert kept("x", text) and kept("out", text)


# ----- results on the GPU --------------------------------------------------------------------

SIZES = [(1, 1, 32), (7, 33, 32), (5, 1000, 256), (3, 4097, 1024), (4, 8192, 1024),
         (6, 448, 1024), (2, 20000, 1024),
         # a warp per row: enough rows, each short
         (16384, 448, 1024), (8192, 100, 256), (8194, 33, 64), (8192, 512, 512),
         # too many rows of an odd count for warps to share blocks evenly
         (9001, 100, 128)]


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", SIZES)
def test_softmax(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(n * m)
    x = torch.randn(n, m, device="cuda", generator=g) * 3
    out = torch.full_like(x, float("nan"))
    softmax(x, out, n, m, opts=parir.par(spec(n, threads)))
    check_close(out, torch.softmax(x.double(), 1), f"softmax {n}x{m}")
    # In place: the same tensor as input and output.
    y = x.clone()
    softmax(y, y, n, m, opts=parir.par(spec(n, threads)))
    check_close(y, torch.softmax(x.double(), 1), f"softmax in place {n}x{m}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,d,threads", SIZES)
def test_layer_norm(n, d, threads):
    g = torch.Generator(device="cuda").manual_seed(d)
    x = torch.randn(n, d, device="cuda", generator=g) + 0.5
    w = torch.rand(d, device="cuda", generator=g) + 0.5
    b = torch.randn(d, device="cuda", generator=g)
    out = torch.full_like(x, float("nan"))
    opts = parir.par({'N': parir.threads(n), 'D': parir.threads(threads)})
    layer_norm(x, w, b, out, n, d, 1e-5, opts=opts)
    ref = torch.nn.functional.layer_norm(x.double(), (d,), w.double(), b.double(), 1e-5)
    check_close(out, ref, f"layer norm {n}x{d}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", SIZES)
def test_l2_normalize(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(m + 1)
    x = torch.randn(n, m, device="cuda", generator=g)
    out = torch.full_like(x, float("nan"))
    opts = parir.par({'row': parir.threads(n), 'acc': parir.threads(threads).reduce(),
                      'scale': parir.threads(threads)})
    l2_normalize(x, out, n, m, opts=opts)
    xd = x.double()
    check_close(out, xd / (xd.norm(dim=1, keepdim=True) + 1e-12), f"l2 normalize {n}x{m}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", [(3, 100, 64), (4, 8192, 1024), (5, 1000, 256)])
def test_values_that_must_not_be_kept(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(n, m, device="cuda", generator=g)
    opts = parir.par(spec(n, threads))

    # Separate output: the sum is over x; in place: over the doubled values.
    out, s = torch.full_like(x, float("nan")), torch.full((n,), float("nan"), device="cuda")
    scale_then_sum(x, out, s, n, m, opts=opts)
    check_close(out, x.double() * 2, "scaled")
    check_close(s, x.double().sum(1), "sum of x")
    y, s = x.clone(), torch.full((n,), float("nan"), device="cuda")
    scale_then_sum(y, y, s, n, m, opts=opts)
    check_close(s, x.double().sum(1) * 2, "sum after scaling in place")

    y = x.clone()
    updated_in_place(y, n, m, opts=opts)
    check_close(y, (x.double() + 1) * 2 - 3, "updated in place")

    out = torch.full_like(x, float("nan"))
    clip_copy(x, out, n, m, opts=opts)
    check_close(out, x.double().clamp(max=0.5), "clipped copy")

    y, out = x.clone(), torch.full_like(x, float("nan"))
    reverse_after(y, out, n, m, opts=opts)
    check_close(out, x.double() * 3, "tripled")
    check_close(y, (x.double() * 3).flip(1), "reversed")
