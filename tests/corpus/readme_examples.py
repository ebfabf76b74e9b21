"""The examples of the parir-torch README that the seed documents do not already show: the
scaled add of its TorchScript section, the checked total, the scatter through an index tensor,
and the argument kinds of its table (a shape-(1,) tensor read as a value, a 0-d tensor, a dict
of scalars and tensors)."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison


@parir.jit
def scaled_add(a, x, y, out, N):
    parir.label('N')
    for i in range(N):
        out[i] = a * x[i] + y[i]


def case_scaled_add(rng, device):
    n = 1000
    x = nonzero(n, rng, device=device)
    y = nonzero(n, rng, device=device)
    out = poison(n, device=device)
    return dict(fn=scaled_add, args=[2.0, x, y, out, n], spec={'N': parir.threads(n)},
                check=[(out, torch.from_numpy(2.0 * f64(x) + f64(y)))])


@parir.jit
def total(x, y, N):
    parir.label('i')
    for i in range(N):
        y[0] += x[i]


def case_total(rng, device):
    n = 4097
    x = torch.rand(n, generator=rng).to(device) + 0.1
    y = torch.zeros(1, device=device)
    return dict(fn=total, args=[x, y, n], spec={'i': parir.threads(n).reduce()},
                check=[(y, torch.tensor([f64(x).sum()]))])


@parir.jit
def scatter(x, idx, y, N):
    parir.label('i')
    for i in range(N):
        y[idx[i]] = x[i]


def case_scatter(rng, device):
    # A permutation: no two iterations choose the same element, so the write does not race
    # (the compiler still warns, as it cannot know).
    n = 1000
    x = nonzero(n, rng, device=device)
    idx = torch.randperm(n, generator=rng).to(device)
    y = poison(n, device=device)
    ref = np.empty(n)
    ref[idx.cpu().numpy()] = f64(x)
    return dict(fn=scatter, args=[x, idx, y, n], spec={'i': parir.threads(n)},
                check=[(y, torch.from_numpy(ref))])


# A time step passed as a shape-(1,) tensor, so that a loop of calls compiles once (the Parir
# README's advice), and a decay factor as a 0-d tensor of its own dtype.
@parir.jit
def parir_decay(x, y, t, rate, N):
    parir.label('N')
    for i in range(N):
        y[i] = x[i] * parir.exp(-rate * t)


def _decay_calls(case):
    x, y, t, rate, N = case["args"]
    opts = parir.par(case["spec"])
    for step in range(3):
        t[0] = float(step)
        parir_decay(x, y, t, rate, N, opts=opts)


def case_decay(rng, device):
    n = 31
    x = nonzero(n, rng, device=device)
    y = poison(n, device=device)
    t = torch.tensor([2.0], device=device)
    rate = torch.tensor(0.25, dtype=torch.float32)
    return dict(fn=parir_decay, args=[x, y, t, rate, n], spec={'N': parir.threads(n)},
                run=_decay_calls, check=[(y, torch.from_numpy(f64(x) * np.exp(-0.5)))])


@parir.jit
def parir_affine(p, x, N):
    parir.label('N')
    for i in range(N):
        p['out'][i] = x[i] * p['scale'] + p['shift'][i]


def case_affine_dict(rng, device):
    n = 33
    x = nonzero(n, rng, device=device)
    p = {'out': poison(n, device=device), 'scale': np.float32(-1.25),
         'shift': nonzero(n, rng, device=device)}
    return dict(fn=parir_affine, args=[p, x, n], spec={'N': parir.threads(n)},
                check=[(p['out'], torch.from_numpy(-1.25 * f64(x) + f64(p['shift'])))])


CASES = {
    "scaled_add": case_scaled_add,
    "total": case_total,
    "scatter": case_scatter,
    "decay_tensor_scalars": case_decay,
    "affine_dict": case_affine_dict,
}
