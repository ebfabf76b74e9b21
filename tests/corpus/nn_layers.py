"""Small neural-network layers, one row of a batch per block: linear layers, softmax (with
explicit loops and with the slices of the parir README), normalizations, activations, a loss
and one attention head. The linear layer's parameters travel as a dict, as users bundle them;
most layers share one specification."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, randint

# One specification for every layer of the module, as a model would keep it: the batch rows on
# blocks, the features on threads, reductions over features in parallel. Not every layer uses
# every label.
def layer_spec(rows, features):
    return {
        'row': parir.threads(rows),
        'feature': parir.threads(min(features, 1024)).reduce(),
        'out': parir.threads(256),
        'elem': parir.threads(rows * features),
    }


# ----- Linear layer with bias and ReLU, parameters in a dict -----------------------------------

@parir.jit
def parir_linear_relu(x, params, y, N, IN, OUT):
    parir.label('row')
    for i in range(N):
        parir.label('out')
        for o in range(OUT):
            acc = params['bias'][o]
            for k in range(IN):
                acc += x[i, k] * params['weight'][o, k]
            y[i, o] = max(acc, 0.0)


def case_linear_relu(rng, device):
    N, IN, OUT = 9, 20, 100
    x = nonzero((N, IN), rng, device=device)
    params = {'weight': nonzero((OUT, IN), rng, device=device),
              'bias': nonzero(OUT, rng, device=device)}
    y = poison((N, OUT), device=device)
    ref = np.maximum(f64(x) @ f64(params['weight']).T + f64(params['bias']), 0.0)
    return dict(fn=parir_linear_relu, args=[x, params, y, N, IN, OUT], spec=layer_spec(N, OUT),
                check=[(y, torch.from_numpy(ref))])


# ----- Softmax with explicit loops: a max and a sum reduced into locals -----------------------

@parir.jit
def parir_softmax(x, out, N, M):
    parir.label('row')
    for i in range(N):
        m = -parir.inf
        parir.label('feature')
        for j in range(M):
            m = max(m, x[i, j])
        s = 0.0
        parir.label('feature')
        for j in range(M):
            s += parir.exp(x[i, j] - m)
        parir.label('feature')
        for j in range(M):
            out[i, j] = parir.exp(x[i, j] - m) / s


def _softmax(a):
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def case_softmax(rng, device):
    N, M = 5, 1000
    x = nonzero((N, M), rng, device=device, hi=5.0)
    out = poison((N, M), device=device)
    return dict(fn=parir_softmax, args=[x, out, N, M], spec=layer_spec(N, M),
                check=[(out, torch.from_numpy(_softmax(f64(x))))])


# ----- Softmax with slices, as the parir README writes it --------------------------------------

@parir.jit
def softmax(x, out, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        m = parir.max(x[i, :])
        parir.label('j')
        out[i, :] = parir.exp(x[i, :] - m)
        parir.label('j')
        s = parir.sum(out[i, :])
        parir.label('j')
        out[i, :] /= s


def case_softmax_slices(rng, device):
    N, M = 33, 4097
    x = nonzero((N, M), rng, device=device, hi=5.0)
    out = poison((N, M), device=device)
    spec = {'i': parir.threads(N), 'j': parir.threads(1024)}
    return dict(fn=softmax, args=[x, out, N, M], spec=spec,
                check=[(out, torch.from_numpy(_softmax(f64(x))))])


# ----- Layer normalization with an affine transform, eps a NumPy float32 -----------------------

@parir.jit
def parir_layer_norm(x, gamma, beta, y, eps, N, M):
    parir.label('row')
    for i in range(N):
        mean = 0.0
        parir.label('feature')
        for j in range(M):
            mean += x[i, j]
        mean = mean / M
        var = 0.0
        parir.label('feature')
        for j in range(M):
            var += (x[i, j] - mean) * (x[i, j] - mean)
        var = var / M
        rstd = 1.0 / parir.sqrt(var + eps)
        parir.label('feature')
        for j in range(M):
            y[i, j] = (x[i, j] - mean) * rstd * gamma[j] + beta[j]


def case_layer_norm(rng, device):
    N, M = 4, 1000
    x = nonzero((N, M), rng, device=device, hi=3.0) + 0.5
    gamma = nonzero(M, rng, device=device)
    beta = nonzero(M, rng, device=device)
    y = poison((N, M), device=device)
    eps = np.float32(1e-5)
    a = f64(x)
    mu = a.mean(1, keepdims=True)
    var = ((a - mu) ** 2).mean(1, keepdims=True)
    ref = (a - mu) / np.sqrt(var + float(eps)) * f64(gamma) + f64(beta)
    return dict(fn=parir_layer_norm, args=[x, gamma, beta, y, eps, N, M],
                spec=layer_spec(N, M), check=[(y, torch.from_numpy(ref))])


# ----- RMS normalization of half-precision activations -----------------------------------------

@parir.jit
def parir_rms_norm(x, weight, y, eps, N, M):
    parir.label('row')
    for i in range(N):
        ss = 0.0
        parir.label('feature')
        for j in range(M):
            ss += parir.float32(x[i, j]) * parir.float32(x[i, j])
        scale = 1.0 / parir.sqrt(ss / M + eps)
        parir.label('feature')
        for j in range(M):
            y[i, j] = parir.float32(x[i, j]) * scale * parir.float32(weight[j])


def case_rms_norm(rng, device):
    N, M = 3, 4097
    x = nonzero((N, M), rng, dtype=torch.float16, device=device, hi=4.0)
    weight = nonzero(M, rng, dtype=torch.float16, device=device)
    y = poison((N, M), dtype=torch.float16, device=device)
    eps = 1e-6
    a = f64(x)
    ref = a / np.sqrt((a ** 2).mean(1, keepdims=True) + eps) * f64(weight)
    spec = {'row': parir.threads(N), 'feature': parir.threads(1024).reduce()}
    return dict(fn=parir_rms_norm, args=[x, weight, y, eps, N, M], spec=spec,
                check=[(y, torch.from_numpy(ref))])


# ----- GELU, the tanh approximation, elementwise over a flattened tensor -----------------------

def gelu(v, k):
    return 0.5 * v * (1.0 + parir.tanh(k * (v + 0.044715 * v * v * v)))


@parir.jit
def parir_gelu(x, y, k, N):
    parir.label('elem')
    for i in range(N):
        y[i] = gelu(x[i], k)


def case_gelu(rng, device):
    n = 4097
    x = nonzero(n, rng, device=device, hi=4.0)
    y = poison(n, device=device)
    ref = torch.nn.functional.gelu(x.cpu().double(), approximate="tanh")
    return dict(fn=parir_gelu, args=[x, y, math.sqrt(2.0 / math.pi), n],
                spec={'elem': parir.threads(n)}, check=[(y, ref)])


# ----- Cross-entropy loss per row: log-sum-exp minus the target's logit ------------------------

@parir.jit
def parir_cross_entropy(logits, target, loss, N, C):
    parir.label('row')
    for i in range(N):
        m = logits[i, 0]
        parir.label('feature')
        for c in range(C):
            m = parir.max(m, logits[i, c])
        s = 0.0
        parir.label('feature')
        for c in range(C):
            s += parir.exp(logits[i, c] - m)
        loss[i] = m + parir.log(s) - logits[i, target[i]]


def case_cross_entropy(rng, device):
    N, C = 1000, 9
    logits = nonzero((N, C), rng, device=device, hi=6.0)
    target = randint(N, rng, 0, C, device=device)
    loss = poison(N, device=device)
    ref = torch.nn.functional.cross_entropy(logits.cpu().double(), target.cpu(),
                                            reduction="none")
    return dict(fn=parir_cross_entropy, args=[logits, target, loss, N, C],
                spec=layer_spec(N, C), check=[(loss, ref)])


# ----- One attention head: scores, a row softmax, and the weighted sum of values --------------

@parir.jit
def parir_attention(Q, K, V, S, P, O, scale, T, D):
    parir.label('row')
    for i in range(T):
        parir.label('out')
        for j in range(T):
            s = 0.0
            for d in range(D):
                s += Q[i, d] * K[j, d]
            S[i, j] = s * scale
    parir.label('row')
    for i in range(T):
        m = -parir.inf
        parir.label('feature')
        for j in range(T):
            m = max(m, S[i, j])
        total = 0.0
        parir.label('feature')
        for j in range(T):
            P[i, j] = parir.exp(S[i, j] - m)
            total += P[i, j]
        parir.label('feature')
        for j in range(T):
            P[i, j] = P[i, j] / total
    parir.label('row')
    for i in range(T):
        parir.label('out')
        for d in range(D):
            o = 0.0
            for j in range(T):
                o += P[i, j] * V[j, d]
            O[i, d] = o


def case_attention(rng, device):
    T, D = 33, 16
    Q = nonzero((T, D), rng, device=device)
    K = nonzero((T, D), rng, device=device)
    V = nonzero((T, D), rng, device=device)
    S = poison((T, T), device=device)
    P = poison((T, T), device=device)
    O = poison((T, D), device=device)
    scale = np.float32(1.0 / math.sqrt(D))
    scores = f64(Q) @ f64(K).T * float(scale)
    probs = _softmax(scores)
    return dict(fn=parir_attention, args=[Q, K, V, S, P, O, scale, T, D],
                spec=layer_spec(T, T),
                check=[(S, torch.from_numpy(scores)), (P, torch.from_numpy(probs)),
                       (O, torch.from_numpy(probs @ f64(V)))])


# ----- Hard tanh through a helper that returns from both branches of its final if ------------

def clamp(v, lo, hi):
    if v < lo:
        return lo
    elif v > hi:
        return hi
    else:
        return v


@parir.jit
def parir_hardtanh(x, y, N, M):
    parir.label('row')
    for i in range(N):
        parir.label('out')
        for j in range(M):
            y[i, j] = clamp(x[i, j], -1.0, 1.0)


def case_hardtanh(rng, device):
    N, M = 33, 31
    x = nonzero((N, M), rng, device=device, hi=3.0)
    y = poison((N, M), device=device)
    return dict(fn=parir_hardtanh, args=[x, y, N, M], spec=layer_spec(N, M),
                check=[(y, torch.from_numpy(np.clip(f64(x), -1.0, 1.0)))])


CASES = {
    "linear_relu": case_linear_relu,
    "softmax": case_softmax,
    "softmax_slices": case_softmax_slices,
    "layer_norm": case_layer_norm,
    "rms_norm_fp16": case_rms_norm,
    "gelu_tanh": case_gelu,
    "cross_entropy": case_cross_entropy,
    "attention": case_attention,
    "hardtanh_helper": case_hardtanh,
}
