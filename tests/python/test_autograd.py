"""Gradients through parir kernels: a torch.autograd.Function whose forward and backward call
jit functions through parir.call, eager and under torch.compile; and the errors that keep
autograd from silently losing gradients."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import parir_torch as parir
from torch_programs import SinMul, scaled_add, sin_mul, sin_mul_backward, threads


def test_parir_call_checks_which_arguments_are_outputs():
    x = torch.empty(10, device="meta")
    with pytest.raises(parir.ParirError, match="writes argument 'grad_w', which is not marked"):
        parir.call(sin_mul_backward, x, x, x, parir.out_like(x), x, 10, opts=threads(10))
    with pytest.raises(parir.ParirError, match="argument 'x' of scaled_add\\(\\) is marked as an "
                                               "output, but the function never writes it"):
        parir.call(scaled_add, 2.0, parir.out_like(x), x, parir.out_like(x), 10)
    with pytest.raises(parir.ParirError, match="has no output"):
        parir.call(sin_mul, x, x, x, 10)
    assert sin_mul_backward.ir.written_params == ["grad_x", "grad_w"]


def test_kernel_refuses_tensors_that_autograd_would_track():
    with FakeTensorMode():
        x = torch.empty(100, device="cuda", requires_grad=True)
        y = torch.empty(100, device="cuda")
        out = torch.empty(100, device="cuda")
        with pytest.raises(RuntimeError, match="argument 'x' requires grad.*not differentiable"):
            scaled_add(2.0, x, y, out, 100, opts=threads(100))
        with torch.no_grad():
            scaled_add(2.0, x, y, out, 100, opts=threads(100))


def test_autograd_function_is_traced_by_dynamo_without_graph_breaks():
    with FakeTensorMode():
        x = torch.empty(100, device="cuda", requires_grad=True)
        w = torch.empty(100, device="cuda", requires_grad=True)
        explanation = torch._dynamo.explain(lambda x, w: SinMul.apply(x, w).sum())(x, w)
    assert explanation.graph_break_count == 0


@pytest.mark.gpu
def test_gradcheck_float64():
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(1000, generator=g, dtype=torch.float64) * 4 - 2).cuda().requires_grad_()
    w = (torch.rand(1000, generator=g, dtype=torch.float64) + 0.5).cuda().requires_grad_()
    assert torch.autograd.gradcheck(SinMul.apply, (x, w), eps=1e-6, atol=1e-8)
    y = SinMul.apply(x, w)
    torch.testing.assert_close(y, torch.sin(x) * w)
    (y * torch.arange(1000, device="cuda")).sum().backward()
    k = torch.arange(1000, device="cuda", dtype=torch.float64)
    torch.testing.assert_close(x.grad, torch.cos(x.detach()) * w.detach() * k)
    torch.testing.assert_close(w.grad, torch.sin(x.detach()) * k)


@pytest.mark.gpu
def test_gradients_under_torch_compile_equal_eager():
    def loss(x, w):
        return (SinMul.apply(x * 2, w) ** 2).sum()

    g = torch.Generator().manual_seed(1)
    x0 = torch.rand(4097, generator=g, dtype=torch.float64).cuda()
    w0 = torch.rand(4097, generator=g, dtype=torch.float64).cuda()
    grads = []
    for fn in (loss, torch.compile(loss, fullgraph=True)):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        value = fn(x, w)
        value.backward()
        grads.append((value.detach(), x.grad, w.grad))
    for eager, compiled in zip(*grads):
        torch.testing.assert_close(compiled, eager)
    ref_x, ref_w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    (torch.sin(ref_x * 2) * ref_w).pow(2).sum().backward()
    torch.testing.assert_close(grads[0][1], ref_x.grad)
    torch.testing.assert_close(grads[0][2], ref_w.grad)


@pytest.mark.gpu
def test_eager_kernel_call_bumps_the_version_of_written_tensors():
    x = torch.rand(100, device="cuda")
    out = torch.empty_like(x)
    before = out._version
    scaled_add(2.0, x, x, out, 100, opts=threads(100))
    assert out._version == before + 1
    # So autograd notices a saved tensor being overwritten.
    w = torch.rand(100, device="cuda", requires_grad=True)
    y = w * out
    scaled_add(3.0, x, x, out, 100, opts=threads(100))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
