"""Algorithms whose host loops drive the kernels, written as the textbooks and the CUDA samples
write them: the loop counters are integer locals that the host updates (`d *= 2`, `s >>= 1`,
`e >>= 1`), the kernels' ranges and indices read them, and a host `if` on them decides which
kernels run. Blelloch's work-efficient scan (GPU Gems 3, chapter 39), a tree reduction that
halves its stride, Batcher's odd-even merge sort, Wyllie's list ranking by pointer jumping, the
sieve of Eratosthenes, a matrix power by repeated squaring, and the heat equation with its two
buffers swapped between steps (`u, u_new = u_new, u`)."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- Blelloch's exclusive scan: an up-sweep and a down-sweep, each a host loop over d -------

@parir.jit
def blelloch_scan(data, n):
    # up-sweep (reduce) phase
    d = 1
    while d < n:
        parir.label('i')
        for i in range(n // (2 * d)):
            data[(2 * i + 2) * d - 1] += data[(2 * i + 1) * d - 1]
        d *= 2
    # clear the last element
    with parir.gpu:
        data[n - 1] = 0
    # down-sweep phase
    d = n // 2
    while d >= 1:
        parir.label('i')
        for i in range(n // (2 * d)):
            ai = (2 * i + 1) * d - 1
            bi = (2 * i + 2) * d - 1
            t = data[ai]
            data[ai] = data[bi]
            data[bi] += t
        d //= 2


def case_blelloch_scan(rng, device):
    n = 4096
    data = randint(n, rng, -50, 50, dtype=torch.int32, device=device)
    ref = np.concatenate([[0], np.cumsum(data.cpu().numpy().astype(np.int64))[:-1]])
    return dict(fn=blelloch_scan, args=[data, n],
                spec={'i': parir.threads(n // 2)},
                check=[(data, torch.from_numpy(ref))])


# ----- a tree reduction in place, the stride halving on the host ------------------------------

@parir.jit
def tree_sum(x, n):
    s = n // 2
    while s > 0:
        parir.label('tid')
        for tid in range(s):
            x[tid] += x[tid + s]
        s >>= 1


def case_tree_sum(rng, device):
    n = 1 << 15
    x = nonzero(n, rng, dtype=torch.float64, device=device)
    ref = f64(x).sum()
    # the sum lands in x[0]; the rest of x holds partial sums
    return dict(fn=tree_sum, args=[x, n],
                spec={'tid': parir.threads(n // 2)},
                check=[(x[:1], torch.tensor([ref], dtype=torch.float64))])


# ----- Batcher's odd-even merge sort, one thread per element and stage -----------------------

@parir.jit
def odd_even_merge_sort(keys, n):
    p = 1
    while p < n:
        k = p
        while k >= 1:
            parir.label('x')
            for x in range(n):
                j = k % p
                # x is the lower element of a comparator when it lies in the first half of a
                # run of 2k starting at j, and its partner is in the same block of 2p
                if x >= j and (x - j) % (2 * k) < k and x + k < n:
                    y = x + k
                    if x // (2 * p) == y // (2 * p):
                        if keys[x] > keys[y]:
                            tmp = keys[x]
                            keys[x] = keys[y]
                            keys[y] = tmp
            k //= 2
        p *= 2


def case_odd_even_merge_sort(rng, device):
    n = 2048
    keys = randint(n, rng, -1000, 1000, dtype=torch.int32, device=device)
    ref = np.sort(keys.cpu().numpy())
    return dict(fn=odd_even_merge_sort, args=[keys, n],
                spec={'x': parir.threads(n)},
                check=[(keys, torch.from_numpy(ref))])


# ----- Wyllie's list ranking: pointer jumping, two buffers written in turn -------------------

@parir.jit
def list_rank(succ, rank, succ_b, rank_b, n):
    parir.label('i')
    for i in range(n):
        if succ[i] == i:
            rank[i] = 0
        else:
            rank[i] = 1
    step = 1
    while step < n:
        # a round from (succ, rank) into the second buffers, the next one back
        parir.label('i')
        for i in range(n):
            rank_b[i] = rank[i] + rank[succ[i]]
            succ_b[i] = succ[succ[i]]
        parir.label('i')
        for i in range(n):
            rank[i] = rank_b[i] + rank_b[succ_b[i]]
            succ[i] = succ_b[succ_b[i]]
        step *= 4


def case_list_rank(rng, device):
    n = 3000
    order = torch.randperm(n, generator=rng)  # order[0] is the head, order[-1] the tail
    succ = torch.empty(n, dtype=torch.int64)
    succ[order[:-1]] = order[1:]
    succ[order[-1]] = order[-1]
    ref = torch.empty(n, dtype=torch.int64)
    ref[order] = torch.arange(n - 1, -1, -1)  # the distance to the tail
    succ = succ.to(device)
    rank = poison(n, dtype=torch.int64, device=device)
    return dict(fn=list_rank,
                args=[succ, rank, poison(n, dtype=torch.int64, device=device),
                      poison(n, dtype=torch.int64, device=device), n],
                spec={'i': parir.threads(n)},
                check=[(rank, ref)])


# ----- the sieve of Eratosthenes, the host walking the candidates p ---------------------------

@parir.jit
def sieve(is_prime, n):
    parir.label('i')
    for i in range(n):
        is_prime[i] = i >= 2
    p = 2
    while p * p < n:
        parir.label('i')
        for i in range(n):
            if is_prime[p] and i >= p * p and i % p == 0:
                is_prime[i] = False
        p += 1


def case_sieve(rng, device):
    n = 10007
    is_prime = torch.ones(n, dtype=torch.bool, device=device)
    ref = np.ones(n, dtype=bool)
    ref[:2] = False
    for p in range(2, int(n ** 0.5) + 1):
        if ref[p]:
            ref[p * p::p] = False
    return dict(fn=sieve, args=[is_prime, n],
                spec={'i': parir.threads(n)},
                check=[(is_prime, torch.from_numpy(ref))])


# ----- a Markov chain's n-step transition matrix by repeated squaring -------------------------

def matmul(C, A, B, n):
    # C = A @ B, a thread per element of C
    parir.label('i')
    for i in range(n):
        parir.label('j')
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def copy(dst, src, n):
    parir.label('i')
    for i in range(n):
        parir.label('j')
        for j in range(n):
            dst[i, j] = src[i, j]


@parir.jit
def matrix_power(P, R, B, T, n, power):
    parir.label('i')
    for i in range(n):
        parir.label('j')
        for j in range(n):
            B[i, j] = P[i, j]
            R[i, j] = 1.0 if i == j else 0.0
    e = power
    while e > 0:
        if e & 1:
            matmul(T, R, B, n)
            copy(R, T, n)
        matmul(T, B, B, n)
        copy(B, T, n)
        e >>= 1


def case_matrix_power(rng, device):
    n, power = 70, 37
    P = positive((n, n), rng, dtype=torch.float64)
    P = P / P.sum(dim=1, keepdim=True)  # rows of a transition matrix sum to 1
    ref = np.linalg.matrix_power(P.numpy(), power)
    P = P.to(device)
    R = poison((n, n), dtype=torch.float64, device=device)
    B, T = (poison((n, n), dtype=torch.float64, device=device) for _ in range(2))
    return dict(fn=matrix_power, args=[P, R, B, T, n, power],
                spec={'i': parir.threads(n), 'j': parir.threads(n)},
                check=[(R, torch.from_numpy(ref))])


# ----- the 2-D heat equation as Python tutorials write it: the arguments swapped each step ---

@parir.jit
def heat_equation(u, u_new, alpha, nx, ny, nsteps):
    for step in range(nsteps):
        parir.label('i')
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                u_new[i, j] = u[i, j] + alpha * (u[i + 1, j] + u[i - 1, j] + u[i, j + 1]
                                                 + u[i, j - 1] - 4.0 * u[i, j])
        u, u_new = u_new, u


def case_heat_equation(rng, device):
    nx, ny, nsteps, alpha = 61, 45, 9, 0.2
    u0 = positive((nx, ny), rng, dtype=torch.float64)
    a, b = f64(u0), f64(u0)  # the boundary stays as it starts in both buffers
    for _ in range(nsteps):
        b[1:-1, 1:-1] = a[1:-1, 1:-1] + alpha * (a[2:, 1:-1] + a[:-2, 1:-1] + a[1:-1, 2:]
                                                 + a[1:-1, :-2] - 4.0 * a[1:-1, 1:-1])
        a, b = b, a
    u, u_new = u0.to(device), u0.clone().to(device)
    # after an odd number of steps the last one wrote the caller's u_new
    return dict(fn=heat_equation, args=[u, u_new, alpha, nx, ny, nsteps],
                spec={'i': parir.threads(nx - 2)},
                check=[(u_new, torch.from_numpy(a)), (u, torch.from_numpy(b))])


CASES = {
    "hl_blelloch_scan": case_blelloch_scan,
    "hl_tree_sum": case_tree_sum,
    "hl_odd_even_merge_sort": case_odd_even_merge_sort,
    "hl_list_rank": case_list_rank,
    "hl_sieve": case_sieve,
    "hl_matrix_power": case_matrix_power,
    "hl_heat_equation": case_heat_equation,
}
