"""parir kernels inside CUDA graphs captured by PyTorch (torch.cuda.graph); compiled models
under mode="reduce-overhead" are in test_torch_compile.py."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from torch_programs import inputs, scaled_add, threads

pytestmark = pytest.mark.gpu


def fresh_scaled_add():
    """A jit function with empty caches of its own."""
    return parir.jit(scaled_add.fn)


def test_operator_call_inside_capture_replays():
    x, y = (t.view(-1) for t in inputs(100, 37))
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    torch.ops.parir.launch(source, [out], [x, y])  # warm-up: compiles and loads
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.ops.parir.launch(source, [out], [x, y])
    out.fill_(float("nan"))
    x.mul_(-1.0)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())


@pytest.mark.parametrize("through", ["jit function", "operator"])
def test_first_call_during_capture_is_a_clear_error(through):
    fn = fresh_scaled_add()
    x, y = (t.view(-1) for t in inputs(100, 41))  # a shape no other test compiles
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(fn, [7.0, x, y, out, n], threads(n))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="captured into a CUDA graph.*warm-up"):
        with torch.cuda.graph(graph):
            if through == "operator":
                torch.ops.parir.launch(source, [out], [x, y])
            else:
                fn(7.0, x, y, out, n, opts=threads(n))
    # Nothing was left half-done: the same call works outside the capture.
    fn(7.0, x, y, out, n, opts=threads(n))
    torch.testing.assert_close(out.double(), 7.0 * x.double() + y.double())


def test_captured_kernels_stay_loaded_after_their_program_is_dropped():
    fn = fresh_scaled_add()
    x, y = (t.view(-1) for t in inputs(10, 97))
    out = torch.empty_like(x)
    n = x.numel()
    fn(5.0, x, y, out, n, opts=threads(n))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(5.0, x, y, out, n, opts=threads(n))
    fn.clear_cache()  # drops the program that was captured
    # Enough other programs come and go for retired modules to be unloaded.
    other = fresh_scaled_add()
    other._cache.limit = 2
    for k in range(40):
        other(float(k), x, y, out, n, opts=threads(n))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), 5.0 * x.double() + y.double())
    assert _C.loaded_module_count() >= 1
