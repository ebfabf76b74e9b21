"""Programs that use the math library, tensor shapes and atomic updates the way their authors
write them elsewhere: Numba's histogram example (an atomic add per element, the bin width a
local computed at the top), activations written with Python's math module as in PyTorch's
documentation, a row-wise log-sum-exp and L2 normalization that read their sizes from the
tensors, and a scatter-add."""

import math
from math import erf, sqrt

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- Numba's histogram (numba.pydata.org, "Atomic operations"), ported ----------------------

@parir.jit
def numba_histogram(x, xmin, xmax, histogram_out):
    nbins = histogram_out.shape[0]
    bin_width = (xmax - xmin) / nbins
    parir.label('elements')
    for i in range(x.shape[0]):
        bin_number = parir.int32((x[i] - xmin) / bin_width)
        if bin_number >= 0 and bin_number < nbins:
            parir.atomic_add(histogram_out[bin_number], 1)


def case_numba_histogram(rng, device):
    n, nbins = 4099, 37
    x = positive(n, rng, dtype=torch.float64, device=device, lo=0.0, hi=1.0)
    hist = torch.zeros(nbins, dtype=torch.int32, device=device)
    bins = np.floor((f64(x) - 0.0) / (1.0 / nbins)).astype(np.int64)
    ref = np.bincount(bins[(bins >= 0) & (bins < nbins)], minlength=nbins)
    return dict(fn=numba_histogram, args=[x, 0.0, 1.0, hist],
                spec={'elements': parir.threads(n)},
                check=[(hist, torch.from_numpy(ref).to(torch.int32))])


# ----- Activations as PyTorch's documentation writes them, with the math module ---------------

@parir.jit
def exact_gelu(x, y):
    n, d = x.shape
    parir.label('rows')
    for i in range(n):
        for j in range(d):
            y[i, j] = 0.5 * x[i, j] * (1.0 + erf(x[i, j] / sqrt(2.0)))


@parir.jit
def softplus_mish_silu(x, softplus, mish, silu):
    parir.label('elements')
    for i in range(len(x)):
        # torch.nn.Softplus: x itself above the threshold, where log1p(exp(x)) == x in float.
        sp = x[i] if x[i] * 1.0 > 20.0 else math.log1p(math.exp(x[i]))
        softplus[i] = sp
        mish[i] = x[i] * math.tanh(sp)
        silu[i] = x[i] * parir.sigmoid(x[i])


def case_exact_gelu(rng, device):
    x = nonzero((33, 65), rng, device=device, lo=0.01, hi=4.0)
    y = poison((33, 65), device=device)
    ref = torch.nn.functional.gelu(torch.from_numpy(f64(x)))
    return dict(fn=exact_gelu, args=[x, y], spec={'rows': parir.threads(33)}, check=[(y, ref)])


def case_softplus_mish_silu(rng, device):
    n = 1000
    x = nonzero(n, rng, device=device, lo=0.01, hi=30.0)
    outs = [poison(n, device=device) for _ in range(3)]
    xd = torch.from_numpy(f64(x))
    F = torch.nn.functional
    return dict(fn=softplus_mish_silu, args=[x, *outs], spec={'elements': parir.threads(n)},
                check=list(zip(outs, [F.softplus(xd), F.mish(xd), F.silu(xd)])))


# ----- Row-wise log-sum-exp and L2 normalization, sizes read from the tensors -----------------

@parir.jit
def logsumexp_rows(x, out):
    rows, cols = x.shape
    parir.label('row')
    for i in range(rows):
        m = -math.inf
        parir.label('col')
        for j in range(cols):
            m = max(m, x[i, j])
        s = 0.0
        parir.label('col')
        for j in range(cols):
            s += math.exp(x[i, j] - m)
        out[i] = m + math.log(s)


@parir.jit
def l2_normalize_rows(x, y, eps):
    parir.label('row')
    for i in range(x.size(0)):
        ss = 0.0
        parir.label('sum')
        for j in range(x.size(1)):
            ss += x[i, j] * x[i, j]
        inv = parir.rsqrt(parir.max(ss, eps * eps))
        parir.label('col')
        for j in range(x.size(1)):
            y[i, j] = x[i, j] * inv


def row_spec(rows):
    return {'row': parir.threads(rows), 'col': parir.threads(256).reduce()}


def case_logsumexp_rows(rng, device):
    x = nonzero((31, 1000), rng, device=device, lo=0.1, hi=20.0)
    out = poison(31, device=device)
    ref = torch.logsumexp(torch.from_numpy(f64(x)), dim=1)
    return dict(fn=logsumexp_rows, args=[x, out], spec=row_spec(31), check=[(out, ref)])


def l2_spec(rows):
    return {'row': parir.threads(rows), 'sum': parir.threads(256).reduce(),
            'col': parir.threads(256)}


def case_l2_normalize_rows(rng, device):
    x = nonzero((17, 333), rng, device=device)
    y = poison((17, 333), device=device)
    ref = torch.nn.functional.normalize(torch.from_numpy(f64(x)), dim=1, eps=1e-12)
    return dict(fn=l2_normalize_rows, args=[x, y, 1e-12], spec=l2_spec(17), check=[(y, ref)])


# ----- Scatter-add: out.index_add_(0, index, src), rows colliding ----------------------------

@parir.jit
def scatter_add_rows(src, index, out):
    parir.label('i')
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            parir.atomic_add(out[index[i], j], src[i, j])


def case_scatter_add_rows(rng, device):
    n, d, m = 1000, 7, 13
    src = randint((n, d), rng, -50, 50, dtype=torch.int64, device=device).to(torch.float32)
    index = randint(n, rng, 0, m, device=device)
    out = torch.zeros(m, d, device=device)
    ref = torch.zeros(m, d, dtype=torch.float64).index_add_(
        0, index.cpu(), torch.from_numpy(f64(src)))
    # Integer-valued float sums are exact in any order.
    return dict(fn=scatter_add_rows, args=[src, index, out], spec={'i': parir.threads(n)},
                check=[(out, ref)])


CASES = {
    "numba_histogram": case_numba_histogram,
    "exact_gelu_math": case_exact_gelu,
    "softplus_mish_silu": case_softplus_mish_silu,
    "logsumexp_rows": case_logsumexp_rows,
    "l2_normalize_rows": case_l2_normalize_rows,
    "scatter_add_rows": case_scatter_add_rows,
}
