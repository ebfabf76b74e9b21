"""Programs whose rows are long or whose results must repeat, written as their authors write
them elsewhere: a ledger's running balance over many entries (one long cumsum, as
`torch.cumsum(amounts, 0)`), a reproducible mean squared error for a training loop that
checks its losses bit for bit (`torch.use_deterministic_algorithms`), and an RMS norm layer
whose sum of squares comes from a block-level CUDA routine kept in a header."""

import os

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive

HERE = os.path.dirname(os.path.abspath(__file__))


# ----- A ledger's running balance: `balance = opening + torch.cumsum(amounts, 0)` ------------

@parir.jit
def running_balance(amounts, opening, balance, closing):
    with parir.gpu:
        b = opening[0]
        parir.label('entries')
        for k in range(amounts.shape[0]):
            b += amounts[k]
            balance[k] = b
        closing[0] = b


def case_running_balance(rng, device):
    n = 200_003
    # In cents: whole numbers, which float64 adds exactly in any order.
    amounts = torch.randint(-500000, 500000, (n,), generator=rng).double().to(device)
    opening = torch.tensor([123456.0], dtype=torch.float64, device=device)
    balance, closing = poison(n, torch.float64, device), poison(1, torch.float64, device)
    want = 123456.0 + np.cumsum(f64(amounts))
    return dict(fn=running_balance, args=[amounts, opening, balance, closing],
                spec={'entries': parir.threads(1 << 14).scan()},
                check=[(balance, torch.from_numpy(want)),
                       (closing, torch.from_numpy(want[-1:]))],
                tol=(0.0, 0.0))


# ----- A reproducible mean squared error ----------------------------------------------------

@parir.jit
def mse_loss(pred, target, loss):
    n = pred.shape[0]
    parir.label('i')
    for i in range(n):
        d = pred[i] - target[i]
        loss[0] += d * d / n


def _deterministic(spec):
    return parir.CompileOptions(parallelize=spec, deterministic=True)


def case_mse_loss(rng, device):
    n = 100_003
    pred, target = nonzero(n, rng, device=device), nonzero(n, rng, device=device)
    loss = torch.zeros(1, device=device)
    want = np.mean((f64(pred) - f64(target)) ** 2)
    return dict(fn=mse_loss, args=[pred, target, loss],
                spec={'i': parir.threads(1 << 14).reduce()}, opts=_deterministic,
                check=[(loss, torch.tensor([want], dtype=torch.float32))],
                # seq=True adds the float32 terms one after another.
                tol=(2e-3, 2e-3))


# ----- RMS norm with a block routine from a header ------------------------------------------

@parir.external("block_sum_of_squares", parir.CompileBackend.Cuda, parir.Target.Device,
                header="block_routines.cuh", parallelize=parir.threads(256))
def block_sum_of_squares(x: torch.Tensor, row: int, n: int) -> parir.float32:
    return (x[row, :n] * x[row, :n]).sum()  # what seq=True runs


@parir.jit
def rms_norm(x, weight, out, eps):
    rows, dim = x.shape
    parir.label('row')
    for r in range(rows):
        ms = block_sum_of_squares(x, r, dim) / dim
        scale = 1.0 / parir.sqrt(ms + eps)
        parir.label('col')
        for c in range(dim):
            out[r, c] = x[r, c] * scale * weight[c]


def _with_header(spec):
    opts = parir.par(spec)
    opts.includes = [HERE]
    return opts


def case_rms_norm(rng, device):
    rows, dim = 33, 1000
    x = nonzero((rows, dim), rng, device=device)
    weight = positive(dim, rng, device=device, lo=0.5, hi=1.5)
    out = poison((rows, dim), device=device)
    xs = f64(x)
    want = xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-6) * f64(weight)
    return dict(fn=rms_norm, args=[x, weight, out, 1e-6],
                spec={'row': parir.threads(rows), 'col': parir.threads(256)},
                opts=_with_header, check=[(out, torch.from_numpy(want).float())])


CASES = {
    "running_balance": case_running_balance,
    "mse_loss": case_mse_loss,
    "rms_norm_block_routine": case_rms_norm,
}
