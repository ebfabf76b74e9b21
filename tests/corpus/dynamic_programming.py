"""Dynamic programming: the recurrences run in the order their dependences allow (a host loop
over the stage, or a sequential loop on the GPU), the cells of one stage in parallel."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, positive, randint


# ----- Floyd-Warshall, as the slice statement of the parir README ------------------------------

@parir.jit
def parir_floyd_warshall(path, N):
    for k in range(N):
        parir.label('i')
        for i in range(N):
            parir.label('j')
            path[i, :] = parir.min(path[i, :], path[i, k] + path[k, :])


def _floyd_reference(w):
    d = w.copy()
    for k in range(d.shape[0]):
        d = np.minimum(d, d[:, k:k + 1] + d[k:k + 1, :])
    return d


def case_floyd_warshall(rng, device):
    N = 33
    w = positive((N, N), rng, device=device, lo=1.0, hi=10.0)
    w.fill_diagonal_(0.0)
    ref = torch.from_numpy(_floyd_reference(f64(w)))
    spec = {'i': parir.threads(N), 'j': parir.threads(N)}
    return dict(fn=parir_floyd_warshall, args=[w, N], spec=spec, check=[(w, ref)])


# ----- Floyd-Warshall on integer weights, explicit loops with a test ---------------------------

@parir.jit
def parir_shortest_paths(dist, N):
    for k in range(N):
        parir.label('i')
        for i in range(N):
            parir.label('j')
            for j in range(N):
                through_k = dist[i, k] + dist[k, j]
                if through_k < dist[i, j]:
                    dist[i, j] = through_k


def case_shortest_paths_int(rng, device):
    N = 31
    w = randint((N, N), rng, 1, 100, dtype=torch.int32, device=device)
    w.fill_diagonal_(0)
    ref = torch.from_numpy(_floyd_reference(w.cpu().numpy().astype(np.int64)))
    spec = {'i': parir.threads(N), 'j': parir.threads(N)}
    return dict(fn=parir_shortest_paths, args=[w, N], spec=spec, check=[(w, ref)])


# ----- Edit distance (Levenshtein) by anti-diagonals -------------------------------------------

@parir.jit
def parir_edit_distance(a, b, D, N, M):
    parir.label('i')
    for i in range(N + 1):
        D[i, 0] = i
    parir.label('i')
    for j in range(M + 1):
        D[0, j] = j
    # Cells (i, j) with i + j = d depend only on diagonals d - 1 and d - 2.
    for d in range(2, N + M + 1):
        parir.label('i')
        for i in range(max(1, d - M), min(N, d - 1) + 1):
            j = d - i
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(min(D[i - 1, j] + 1, D[i, j - 1] + 1), D[i - 1, j - 1] + cost)


def _edit_reference(a, b):
    n, m = len(a), len(b)
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1,
                          D[i - 1, j - 1] + (0 if a[i - 1] == b[j - 1] else 1))
    return D


def case_edit_distance(rng, device):
    N, M = 33, 40
    a = randint(N, rng, 0, 4, dtype=torch.int8, device=device)
    b = randint(M, rng, 0, 4, dtype=torch.int8, device=device)
    D = torch.full((N + 1, M + 1), -1, dtype=torch.int32, device=device)
    ref = torch.from_numpy(_edit_reference(a.cpu().tolist(), b.cpu().tolist()))
    spec = {'i': parir.threads(N + 1)}
    return dict(fn=parir_edit_distance, args=[a, b, D, N, M], spec=spec, check=[(D, ref)])


# ----- Needleman-Wunsch alignment scores, anti-diagonals with a guard --------------------------

@parir.jit
def parir_needleman_wunsch(a, b, sub, H, gap, N, M):
    parir.label('i')
    for i in range(N + 1):
        H[i, 0] = gap * i
    parir.label('i')
    for j in range(M + 1):
        H[0, j] = gap * j
    for d in range(2, N + M + 1):
        parir.label('i')
        for i in range(1, N + 1):
            j = d - i
            if 1 <= j <= M:
                match = H[i - 1, j - 1] + sub[a[i - 1], b[j - 1]]
                H[i, j] = max(match, max(H[i - 1, j] + gap, H[i, j - 1] + gap))


def _nw_reference(a, b, sub, gap):
    n, m = len(a), len(b)
    H = np.zeros((n + 1, m + 1))
    H[:, 0] = gap * np.arange(n + 1)
    H[0, :] = gap * np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            H[i, j] = max(H[i - 1, j - 1] + sub[a[i - 1], b[j - 1]],
                          H[i - 1, j] + gap, H[i, j - 1] + gap)
    return H


def case_needleman_wunsch(rng, device):
    N, M = 31, 33
    a = randint(N, rng, 0, 4, device=device)
    b = randint(M, rng, 0, 4, device=device)
    sub = nonzero((4, 4), rng, device=device, lo=0.5, hi=2.0)
    H = torch.full((N + 1, M + 1), float("nan"), device=device)
    gap = -1.25
    ref = torch.from_numpy(_nw_reference(a.cpu().tolist(), b.cpu().tolist(), f64(sub),
                                         gap))
    spec = {'i': parir.threads(N + 1)}
    return dict(fn=parir_needleman_wunsch, args=[a, b, sub, H, gap, N, M], spec=spec,
                check=[(H, ref)])


# ----- Longest increasing subsequence, O(n^2): each step a max-reduction over earlier ones -----

@parir.jit
def parir_lis(a, L, N):
    with parir.gpu:
        for i in range(N):
            best = 0
            parir.label('j')
            for j in range(i):
                if a[j] < a[i]:
                    best = max(best, L[j])
            L[i] = best + 1


def case_lis(rng, device):
    N = 100
    a = randint(N, rng, 0, 1000, dtype=torch.int32, device=device)
    x = a.cpu().tolist()
    L = [0] * N
    for i in range(N):
        L[i] = 1 + max([L[j] for j in range(i) if x[j] < x[i]], default=0)
    out = torch.full((N,), -7, dtype=torch.int32, device=device)
    spec = {'j': parir.threads(256).reduce()}
    return dict(fn=parir_lis, args=[a, out, N], spec=spec, check=[(out, torch.tensor(L))])


# ----- A first-order linear recurrence along each row (an exponential moving average) ----------

@parir.jit
def parir_ema_rows(x, y, alpha, N, M):
    parir.label('row')
    for i in range(N):
        y[i, 0] = x[i, 0]
        for j in range(1, M):
            y[i, j] = alpha * x[i, j] + (1.0 - alpha) * y[i, j - 1]


def case_ema_rows(rng, device):
    N, M = 1000, 9
    x = nonzero((N, M), rng, device=device)
    y = torch.full((N, M), float("nan"), device=device)
    alpha = 0.3
    xs = f64(x)
    r = np.empty_like(xs)
    r[:, 0] = xs[:, 0]
    for j in range(1, M):
        r[:, j] = alpha * xs[:, j] + (1 - alpha) * r[:, j - 1]
    spec = {'row': parir.threads(N)}
    return dict(fn=parir_ema_rows, args=[x, y, alpha, N, M], spec=spec,
                check=[(y, torch.from_numpy(r))])


# ----- Inclusive prefix sum in three passes: chunk sums, a scan of them, chunk scans -----------

@parir.jit
def parir_prefix_sum(x, y, partial, N, CHUNK, NCHUNKS):
    parir.label('chunk')
    for c in range(NCHUNKS):
        s = 0.0
        for k in range(c * CHUNK, min(N, (c + 1) * CHUNK)):
            s += x[k]
        partial[c] = s
    with parir.gpu:
        for c in range(1, NCHUNKS):
            partial[c] += partial[c - 1]
    parir.label('chunk')
    for c in range(NCHUNKS):
        acc = 0.0
        if c > 0:
            acc = partial[c - 1]
        for k in range(c * CHUNK, min(N, (c + 1) * CHUNK)):
            acc += x[k]
            y[k] = acc


def case_prefix_sum(rng, device):
    N, CHUNK = 4097, 64
    NCHUNKS = (N + CHUNK - 1) // CHUNK
    x = nonzero(N, rng, dtype=torch.float64, device=device)
    y = torch.full((N,), float("nan"), dtype=torch.float64, device=device)
    partial = torch.full((NCHUNKS,), float("nan"), dtype=torch.float64, device=device)
    spec = {'chunk': parir.threads(NCHUNKS)}
    return dict(fn=parir_prefix_sum, args=[x, y, partial, N, CHUNK, NCHUNKS], spec=spec,
                check=[(y, torch.from_numpy(np.cumsum(f64(x))))])


# ----- 0/1 knapsack: one host step per item, every capacity in parallel -----------------------

@parir.jit
def parir_knapsack(weight, value, best, NITEMS, W):
    parir.label('w')
    for w in range(W + 1):
        best[0, w] = 0
    for k in range(NITEMS):
        parir.label('w')
        for w in range(W + 1):
            keep = best[k, w]
            if w >= weight[k]:
                take = best[k, w - weight[k]] + value[k]
                best[k + 1, w] = max(keep, take)
            else:
                best[k + 1, w] = keep


def case_knapsack(rng, device):
    n, W = 20, 100
    weight = randint(n, rng, 1, 30, device=device)
    value = randint(n, rng, 1, 50, dtype=torch.int32, device=device)
    best = torch.full((n + 1, W + 1), -1, dtype=torch.int32, device=device)
    wt, val = weight.cpu().tolist(), value.cpu().tolist()
    ref = np.zeros((n + 1, W + 1), dtype=np.int64)
    for k in range(n):
        for w in range(W + 1):
            ref[k + 1, w] = ref[k, w]
            if w >= wt[k]:
                ref[k + 1, w] = max(ref[k, w], ref[k, w - wt[k]] + val[k])
    spec = {'w': parir.threads(W + 1)}
    return dict(fn=parir_knapsack, args=[weight, value, best, n, W], spec=spec,
                check=[(best, torch.from_numpy(ref))])


CASES = {
    "floyd_warshall": case_floyd_warshall,
    "shortest_paths_int": case_shortest_paths_int,
    "edit_distance": case_edit_distance,
    "needleman_wunsch": case_needleman_wunsch,
    "lis": case_lis,
    "ema_rows": case_ema_rows,
    "prefix_sum": case_prefix_sum,
    "knapsack": case_knapsack,
}
