"""The cached call's launch: a call whose key matches a specialization hands the tensors' data
pointers straight to the kernels (runtime::launch_matched). What the key does not record is
still honoured there, as on the first call: version counters, autograd's refusal, dispatch
modes, and tensors that change between calls."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import parir_torch as parir
from torch_programs import scaled_add, threads

pytestmark = pytest.mark.gpu
N = 1031


def _tensors(seed):
    g = torch.Generator().manual_seed(seed)
    x, y = (torch.rand(N, generator=g) - 0.5 for _ in range(2))
    return x.cuda(), y.cuda(), torch.full((N,), float("nan"), device="cuda")


def test_every_cached_call_writes_its_own_tensors_and_bumps_their_versions():
    scaled_add.clear_cache()
    calls = [_tensors(seed) for seed in range(4)]
    for x, y, out in calls:
        before = out._version
        scaled_add(2.0, x, y, out, N, opts=threads(N))
        assert out._version == before + 1
    assert scaled_add.cache_size() == 1 and len(scaled_add._calls) == 1
    for x, y, out in calls:
        torch.testing.assert_close(out, 2.0 * x + y)
    # In place: the output is also an input.
    x, y, _ = calls[0]
    expected = 2.0 * x + y
    scaled_add(2.0, x, y, y, N, opts=threads(N))
    torch.testing.assert_close(y, expected)


def test_a_cached_call_on_a_tensor_that_requires_grad_is_refused_like_the_first():
    scaled_add.clear_cache()
    x, y, out = _tensors(5)
    scaled_add(2.0, x, y, out, N, opts=threads(N))
    w = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="argument 'x' requires grad.*not differentiable"):
        scaled_add(2.0, w, y, out, N, opts=threads(N))
    with torch.no_grad():
        scaled_add(2.0, w, y, out, N, opts=threads(N))
    torch.testing.assert_close(out, 2.0 * x + y)


class _Recording(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_a_cached_call_under_a_dispatch_mode_reaches_the_mode():
    scaled_add.clear_cache()
    x, y, out = _tensors(6)
    scaled_add(2.0, x, y, out, N, opts=threads(N))
    out.fill_(float("nan"))
    with _Recording() as mode:
        scaled_add(2.0, x, y, out, N, opts=threads(N))
    assert mode.ops == ["parir.launch.default"]
    torch.testing.assert_close(out, 2.0 * x + y)


def test_a_cached_call_on_views_and_on_a_side_stream():
    scaled_add.clear_cache()
    x, y, out = _tensors(7)
    scaled_add(2.0, x, y, out, N, opts=threads(N))
    # Views of other storage with the same shape and strides: the same specialization.
    big = torch.rand(3 * N, device="cuda")
    xv, yv = big[N:2 * N], big[2 * N:]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        scaled_add(2.0, xv, yv, out, N, opts=threads(N))
    torch.cuda.current_stream().wait_stream(stream)
    assert scaled_add.cache_size() == 1
    torch.testing.assert_close(out, 2.0 * xv + yv)
