"""Reductions over a whole tensor, written in two passes as users do when one block cannot hold
them: partial results per chunk in parallel, then the partials combined. Also reductions into
one element across many blocks, and a mean and variance."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint

# One specification shared by the programs of this module.
SPEC = {
    'chunk': parir.threads(64),
    'part': parir.threads(64).reduce(),
    'all': parir.threads(4097).reduce(),
}


def spec_for(nchunks):
    return {
        'chunk': parir.threads(nchunks),
        'part': parir.threads(nchunks).reduce(),
        'all': parir.threads(4097).reduce(),
    }


# ----- Sum in two passes -----------------------------------------------------------------------

@parir.jit
def parir_sum_two_pass(x, partial, out, N, CHUNK, NCHUNKS):
    parir.label('chunk')
    for c in range(NCHUNKS):
        s = 0.0
        for k in range(c * CHUNK, min((c + 1) * CHUNK, N)):
            s += x[k]
        partial[c] = s
    with parir.gpu:
        out[0] = 0.0
        parir.label('part')
        for c in range(NCHUNKS):
            out[0] += partial[c]


def case_sum_two_pass(rng, device):
    N, CHUNK = 4097, 100
    NCHUNKS = (N + CHUNK - 1) // CHUNK
    x = nonzero(N, rng, device=device)
    partial = poison(NCHUNKS, device=device)
    out = poison(1, device=device)
    return dict(fn=parir_sum_two_pass, args=[x, partial, out, N, CHUNK, NCHUNKS],
                spec=spec_for(NCHUNKS),
                check=[(out, torch.tensor([f64(x).sum()]))])


# ----- Minimum and maximum together, in two passes ---------------------------------------------

@parir.jit
def parir_min_max(x, pmin, pmax, out, N, CHUNK, NCHUNKS):
    parir.label('chunk')
    for c in range(NCHUNKS):
        lo = parir.inf
        hi = -parir.inf
        for k in range(c * CHUNK, min((c + 1) * CHUNK, N)):
            lo = min(lo, x[k])
            hi = max(hi, x[k])
        pmin[c] = lo
        pmax[c] = hi
    with parir.gpu:
        lo = parir.inf
        hi = -parir.inf
        parir.label('part')
        for c in range(NCHUNKS):
            lo = parir.min(lo, pmin[c])
            hi = parir.max(hi, pmax[c])
        out[0] = lo
        out[1] = hi


def case_min_max(rng, device):
    N, CHUNK = 1000, 31
    NCHUNKS = (N + CHUNK - 1) // CHUNK
    x = nonzero(N, rng, dtype=torch.float64, device=device, hi=100.0)
    pmin = poison(NCHUNKS, dtype=torch.float64, device=device)
    pmax = poison(NCHUNKS, dtype=torch.float64, device=device)
    out = poison(2, dtype=torch.float64, device=device)
    a = f64(x)
    return dict(fn=parir_min_max, args=[x, pmin, pmax, out, N, CHUNK, NCHUNKS],
                spec=spec_for(NCHUNKS), check=[(out, torch.tensor([a.min(), a.max()]))])


# ----- Argmax in two passes: per-chunk winners, then the winner of winners --------------------

@parir.jit
def parir_argmax(x, best_val, best_idx, out, N, CHUNK, NCHUNKS):
    parir.label('chunk')
    for c in range(NCHUNKS):
        bv = x[c * CHUNK]
        bi = c * CHUNK
        for k in range(c * CHUNK + 1, min((c + 1) * CHUNK, N)):
            if x[k] > bv:
                bv = x[k]
                bi = k
        best_val[c] = bv
        best_idx[c] = bi
    with parir.gpu:
        bv = best_val[0]
        bi = best_idx[0]
        for c in range(1, NCHUNKS):
            if best_val[c] > bv:
                bv = best_val[c]
                bi = best_idx[c]
        out[0] = bi


def case_argmax(rng, device):
    N, CHUNK = 4097, 64
    NCHUNKS = (N + CHUNK - 1) // CHUNK
    x = torch.randperm(N, generator=rng).to(torch.float32).to(device) + 0.5
    best_val = poison(NCHUNKS, device=device)
    best_idx = poison(NCHUNKS, dtype=torch.int64, device=device)
    out = poison(1, dtype=torch.int64, device=device)
    return dict(fn=parir_argmax, args=[x, best_val, best_idx, out, N, CHUNK, NCHUNKS],
                spec=spec_for(NCHUNKS), check=[(out, torch.tensor([int(np.argmax(f64(x)))]))])


# ----- Mean and variance on the GPU: each a reduction into a local ----------------------------

@parir.jit
def parir_mean_var(x, out, N):
    with parir.gpu:
        s = 0.0
        parir.label('part')
        for i in range(N):
            s += x[i]
        mean = s / N
        v = 0.0
        parir.label('part')
        for i in range(N):
            v += (x[i] - mean) ** 2
        out[0] = mean
        out[1] = v / (N - 1)


def case_mean_var(rng, device):
    N = 1000
    x = nonzero(N, rng, dtype=torch.float64, device=device) + 3.0
    out = poison(2, dtype=torch.float64, device=device)
    a = f64(x)
    return dict(fn=parir_mean_var, args=[x, out, N], spec=spec_for(N),
                check=[(out, torch.tensor([a.mean(), a.var(ddof=1)]))])


# ----- Dot product over many blocks, straight into out[0] --------------------------------------

@parir.jit
def parir_dot(x, y, out, N):
    with parir.gpu:
        out[0] = 0.0
        parir.label('all')
        for i in range(N):
            out[0] += x[i] * y[i]


def case_dot(rng, device):
    N = 4097
    x = nonzero(N, rng, dtype=torch.float64, device=device)
    y = nonzero(N, rng, dtype=torch.float64, device=device)
    out = poison(1, dtype=torch.float64, device=device)
    return dict(fn=parir_dot, args=[x, y, out, N], spec=SPEC,
                check=[(out, torch.tensor([f64(x) @ f64(y)]))])


# ----- Counting: how many elements are positive, and a histogram of small integers -----------

@parir.jit
def parir_count_positive(x, count, N):
    with parir.gpu:
        count[0] = 0
        parir.label('all')
        for i in range(N):
            count[0] += int(x[i] > 0.0)


def case_count_positive(rng, device):
    N = 4097
    x = nonzero(N, rng, device=device)
    count = poison(1, dtype=torch.int32, device=device)
    return dict(fn=parir_count_positive, args=[x, count, N], spec=SPEC,
                check=[(count, torch.tensor([int((f64(x) > 0).sum())]))])


@parir.jit
def parir_histogram(values, hist, N, BINS):
    # One reduction per bin: each bin's count is a sum over all values.
    parir.label('bin')
    for b in range(BINS):
        parir.label('all')
        for i in range(N):
            hist[b] += 1 if values[i] == b else 0


def case_histogram(rng, device):
    N, BINS = 4097, 10
    values = randint(N, rng, 0, BINS, dtype=torch.int16, device=device)
    hist = torch.zeros(BINS, dtype=torch.int64, device=device)
    ref = torch.bincount(values.cpu().long(), minlength=BINS)
    spec = dict(SPEC, bin=parir.threads(BINS))
    return dict(fn=parir_histogram, args=[values, hist, N, BINS], spec=spec,
                check=[(hist, ref)])


# ----- Column statistics with slice reductions along axis 0 ------------------------------------

@parir.jit
def parir_column_stats(x, colsum, colmax, colprod, N, M):
    parir.label('col')
    parir.label('rows')
    colsum[:] = parir.sum(x[:, :], axis=0)
    parir.label('col')
    parir.label('rows')
    colmax[:] = parir.max(x[:, :], axis=0)
    parir.label('col')
    parir.label('rows')
    colprod[:] = parir.prod(x[:, :], axis=0)


def case_column_stats(rng, device):
    N, M = 31, 1000
    x = positive((N, M), rng, dtype=torch.float64, device=device, lo=0.8, hi=1.25)
    colsum = poison(M, dtype=torch.float64, device=device)
    colmax = poison(M, dtype=torch.float64, device=device)
    colprod = poison(M, dtype=torch.float64, device=device)
    a = f64(x)
    spec = {'col': parir.threads(M), 'rows': parir.threads(32)}
    return dict(fn=parir_column_stats, args=[x, colsum, colmax, colprod, N, M], spec=spec,
                check=[(colsum, torch.from_numpy(a.sum(0))), (colmax, torch.from_numpy(a.max(0))),
                       (colprod, torch.from_numpy(a.prod(0)))])


# ----- Row sums of a bfloat16 matrix into float32 ----------------------------------------------

@parir.jit
def parir_rowsum_bf16(x, out, N, M):
    parir.label('row')
    for i in range(N):
        s = 0.0
        parir.label('part')
        for j in range(M):
            s += parir.float32(x[i, j])
        out[i] = s


def case_rowsum_bf16(rng, device):
    N, M = 33, 1000
    x = nonzero((N, M), rng, dtype=torch.bfloat16, device=device)
    out = poison(N, device=device)
    return dict(fn=parir_rowsum_bf16, args=[x, out, N, M],
                spec={'row': parir.threads(N), 'part': parir.threads(256).reduce()},
                check=[(out, torch.from_numpy(f64(x).sum(1)))], tol=(1e-4, 1e-5))


CASES = {
    "sum_two_pass": case_sum_two_pass,
    "min_max": case_min_max,
    "argmax": case_argmax,
    "mean_var": case_mean_var,
    "dot": case_dot,
    "count_positive": case_count_positive,
    "histogram": case_histogram,
    "column_stats": case_column_stats,
    "rowsum_bf16": case_rowsum_bf16,
}
