"""Jit functions and models shared by the PyTorch integration tests (torch.compile, CUDA
graphs, TorchScript, export, autograd, streams, memory)."""

import torch

import parir_torch as parir


@parir.jit
def scaled_add(a, x, y, out, N):
    parir.label("N")
    for i in range(N):
        out[i] = a * x[i] + y[i]


@parir.jit
def sum_rows(x, s, N, M):
    parir.label("N")
    for i in range(N):
        parir.label("M")
        for j in range(M):
            s[i] += x[i, j]


@parir.jit
def sin_mul(x, w, y, N):
    parir.label("N")
    for i in range(N):
        y[i] = parir.sin(x[i]) * w[i]


@parir.jit
def sin_mul_backward(x, w, grad_y, grad_x, grad_w, N):
    parir.label("N")
    for i in range(N):
        grad_x[i] = parir.cos(x[i]) * w[i] * grad_y[i]
        grad_w[i] = parir.sin(x[i]) * grad_y[i]


@parir.jit
def dict_scale(p, out, N):
    parir.label("N")
    for i in range(N):
        out[i] = p["a"] * p["x"][i]


def threads(n):
    return parir.par({"N": parir.threads(n)})


def row_opts(n):
    return parir.par({"N": parir.threads(n), "M": parir.threads(128).reduce()})


class TwoKernels(torch.nn.Module):
    """s[i] = sum_j (2.5 * x[i, j] + y[i, j]) - x[i, 0]: two parir kernels (one a parallel
    reduction) with torch operations around them, every tensor allocated inside."""

    def forward(self, x, y):
        n, m = x.shape
        z = torch.empty_like(x)
        scaled_add(2.5, x.view(-1), y.view(-1), z.view(-1), n * m, opts=threads(n * m))
        s = torch.zeros(n, device=x.device, dtype=x.dtype)
        sum_rows(z, s, n, m, opts=row_opts(n))
        return s - x[:, 0]


def two_kernels_reference(x, y):
    return (2.5 * x.double() + y.double()).sum(1) - x[:, 0].double()


class SinMul(torch.autograd.Function):
    """y = sin(x) * w, with a parir backward."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return parir.call(sin_mul, x, w, parir.out_like(x), x.numel(), opts=threads(x.numel()))

    @staticmethod
    def backward(ctx, grad_y):
        x, w = ctx.saved_tensors
        return parir.call(sin_mul_backward, x, w, grad_y, parir.out_like(x), parir.out_like(w),
                          x.numel(), opts=threads(x.numel()))


def inputs(rows, cols, device="cuda", dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(rows, cols, generator=g, dtype=torch.float64) + 0.5).to(dtype)
    y = (torch.rand(rows, cols, generator=g, dtype=torch.float64) - 0.25).to(dtype)
    return x.to(device), y.to(device)
