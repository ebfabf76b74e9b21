"""More of PolyBench/C 4.2, ported the way its C code (and npbench's loop versions) is written:
PolyBench's names (A, B, C, alpha, beta, tmp, x1, y_1, ...) and loop structure, with the loops
that can run in parallel labelled and those that carry a dependence left sequential (inside a
thread, or on the host around the kernels)."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, randint


# ----- 2mm: D = alpha * A * B * C + beta * D, accumulating into tensor elements ---------------

@parir.jit
def parir_2mm(alpha, beta, tmp, A, B, C, D, NI, NJ, NK, NL):
    parir.label('i')
    for i in range(NI):
        parir.label('j')
        for j in range(NJ):
            tmp[i, j] = 0.0
            for k in range(NK):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    parir.label('i')
    for i in range(NI):
        parir.label('j')
        for j in range(NL):
            D[i, j] *= beta
            for k in range(NJ):
                D[i, j] += tmp[i, k] * C[k, j]


def case_2mm(rng, device):
    NI, NJ, NK, NL = 40, 50, 70, 80
    A = nonzero((NI, NK), rng, device=device)
    B = nonzero((NK, NJ), rng, device=device)
    C = nonzero((NJ, NL), rng, device=device)
    D = nonzero((NI, NL), rng, device=device)
    tmp = poison((NI, NJ), device=device)
    alpha, beta = np.float32(1.5), np.float32(1.2)
    ref_tmp = 1.5 * f64(A) @ f64(B)
    ref_D = 1.2 * f64(D) + ref_tmp @ f64(C)
    spec = {'i': parir.threads(NI), 'j': parir.threads(64)}
    return dict(fn=parir_2mm, args=[alpha, beta, tmp, A, B, C, D, NI, NJ, NK, NL], spec=spec,
                check=[(tmp, torch.from_numpy(ref_tmp)), (D, torch.from_numpy(ref_D))])


# ----- 3mm: G = (A * B) * (C * D), each product a slice sum over a labelled dimension ---------

@parir.jit
def parir_3mm(E, A, B, F, C, D, G, NI, NJ, NK, NL, NM):
    parir.label('i')
    for i in range(NI):
        parir.label('j')
        for j in range(NJ):
            parir.label('k')
            E[i, j] = parir.sum(A[i, :] * B[:, j])
    parir.label('i')
    for i in range(NJ):
        parir.label('j')
        for j in range(NL):
            parir.label('k')
            F[i, j] = parir.sum(C[i, :] * D[:, j])
    parir.label('i')
    for i in range(NI):
        parir.label('j')
        for j in range(NL):
            parir.label('k')
            G[i, j] = parir.sum(E[i, :] * F[:, j])


def case_3mm(rng, device):
    NI, NJ, NK, NL, NM = 37, 41, 43, 45, 47
    A = nonzero((NI, NK), rng, dtype=torch.float64, device=device)
    B = nonzero((NK, NJ), rng, dtype=torch.float64, device=device)
    C = nonzero((NJ, NM), rng, dtype=torch.float64, device=device)
    D = nonzero((NM, NL), rng, dtype=torch.float64, device=device)
    E = poison((NI, NJ), dtype=torch.float64, device=device)
    F = poison((NJ, NL), dtype=torch.float64, device=device)
    G = poison((NI, NL), dtype=torch.float64, device=device)
    e = f64(A) @ f64(B)
    f = f64(C) @ f64(D)
    g = e @ f
    spec = {'i': parir.threads(40), 'j': parir.threads(45), 'k': parir.threads(64).reduce()}
    return dict(fn=parir_3mm, args=[E, A, B, F, C, D, G, NI, NJ, NK, NL, NM], spec=spec,
                check=[(E, torch.from_numpy(e)), (F, torch.from_numpy(f)),
                       (G, torch.from_numpy(g))])


# ----- atax: y = A^T (A x), both products as .reduce() loops into tensor elements -------------

@parir.jit
def parir_atax(A, x, y, tmp, M, N):
    parir.label('i')
    for i in range(M):
        tmp[i] = 0.0
        parir.label('j')
        for j in range(N):
            tmp[i] += A[i, j] * x[j]
    parir.label('col')
    for j in range(N):
        y[j] = 0.0
        parir.label('row')
        for i in range(M):
            y[j] += A[i, j] * tmp[i]


def case_atax(rng, device):
    M, N = 257, 100
    A = nonzero((M, N), rng, device=device)
    x = nonzero(N, rng, device=device)
    y = poison(N, device=device)
    tmp = poison(M, device=device)
    ref_tmp = f64(A) @ f64(x)
    ref_y = f64(A).T @ ref_tmp
    spec = {'i': parir.threads(M), 'j': parir.threads(128).reduce(),
            'col': parir.threads(N), 'row': parir.threads(256).reduce()}
    return dict(fn=parir_atax, args=[A, x, y, tmp, M, N], spec=spec,
                check=[(tmp, torch.from_numpy(ref_tmp)), (y, torch.from_numpy(ref_y))])


# ----- bicg: s = A^T r and q = A p, accumulating into locals (q's over two blocks a row) -------

@parir.jit
def parir_bicg(A, s, q, p, r, M, N):
    parir.label('j')
    for j in range(M):
        acc = 0.0
        for i in range(N):
            acc += r[i] * A[i, j]
        s[j] = acc
    parir.label('i')
    for i in range(N):
        acc = 0.0
        parir.label('jr')
        for j in range(M):
            acc += A[i, j] * p[j]
        q[i] = acc


def case_bicg(rng, device):
    N, M = 124, 115
    A = nonzero((N, M), rng, dtype=torch.float64, device=device)
    p = nonzero(M, rng, dtype=torch.float64, device=device)
    r = nonzero(N, rng, dtype=torch.float64, device=device)
    s = poison(M, dtype=torch.float64, device=device)
    q = poison(N, dtype=torch.float64, device=device)
    ref_s = f64(A).T @ f64(r)
    ref_q = f64(A) @ f64(p)
    spec = {'j': parir.threads(M), 'i': parir.threads(N),
            'jr': parir.threads(128).tpb(64).reduce()}
    return dict(fn=parir_bicg, args=[A, s, q, p, r, M, N], spec=spec,
                check=[(s, torch.from_numpy(ref_s)), (q, torch.from_numpy(ref_q))])


# ----- mvt: x1 += A y_1, x2 += A^T y_2, as `x1[i] = x1[i] + ...` reductions -------------------

@parir.jit
def parir_mvt(x1, x2, y_1, y_2, A, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(N):
            x1[i] = x1[i] + A[i, j] * y_1[j]
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(N):
            x2[i] = x2[i] + A[j, i] * y_2[j]


def case_mvt(rng, device):
    N = 120
    A = nonzero((N, N), rng, device=device)
    x1 = nonzero(N, rng, device=device)
    x2 = nonzero(N, rng, device=device)
    y_1 = nonzero(N, rng, device=device)
    y_2 = nonzero(N, rng, device=device)
    ref_x1 = f64(x1) + f64(A) @ f64(y_1)
    ref_x2 = f64(x2) + f64(A).T @ f64(y_2)
    spec = {'i': parir.threads(N), 'j': parir.threads(64).reduce()}
    return dict(fn=parir_mvt, args=[x1, x2, y_1, y_2, A, N], spec=spec,
                check=[(x1, torch.from_numpy(ref_x1)), (x2, torch.from_numpy(ref_x2))])


# ----- gesummv: y = alpha A x + beta B x, one .reduce() loop accumulating into two elements, ----
# ----- written as PolyBench writes it (the target last), each row over several blocks -----------

@parir.jit
def parir_gesummv(alpha, beta, A, B, tmp, x, y, N):
    parir.label('i')
    for i in range(N):
        tmp[i] = 0.0
        y[i] = 0.0
        parir.label('j')
        for j in range(N):
            tmp[i] = A[i, j] * x[j] + tmp[i]
            y[i] = B[i, j] * x[j] + y[i]
        y[i] = alpha * tmp[i] + beta * y[i]


def case_gesummv(rng, device):
    N = 130
    A = nonzero((N, N), rng, device=device)
    B = nonzero((N, N), rng, device=device)
    x = nonzero(N, rng, device=device)
    tmp = poison(N, device=device)
    y = poison(N, device=device)
    alpha, beta = np.float32(1.5), np.float32(1.2)
    ref_tmp = f64(A) @ f64(x)
    ref_y = 1.5 * ref_tmp + 1.2 * (f64(B) @ f64(x))
    spec = {'i': parir.threads(N), 'j': parir.threads(256).tpb(64).reduce()}
    return dict(fn=parir_gesummv, args=[alpha, beta, A, B, tmp, x, y, N], spec=spec,
                check=[(tmp, torch.from_numpy(ref_tmp)), (y, torch.from_numpy(ref_y))])


# ----- gemver: rank-2 update, A^T y, a vector add and A x, four kernels ------------------------

@parir.jit
def parir_gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(N):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    parir.label('i')
    for i in range(N):
        parir.label('jr')
        for j in range(N):
            x[i] = x[i] + beta * A[j, i] * y[j]
    parir.label('i')
    for i in range(N):
        x[i] = x[i] + z[i]
    parir.label('i')
    for i in range(N):
        parir.label('jr')
        for j in range(N):
            w[i] = w[i] + alpha * A[i, j] * x[j]


def case_gemver(rng, device):
    N = 129
    A = nonzero((N, N), rng, device=device)
    u1, v1, u2, v2, w, x, y, z = (nonzero(N, rng, device=device) for _ in range(8))
    alpha, beta = np.float32(1.5), np.float32(1.2)
    a = f64(A) + np.outer(f64(u1), f64(v1)) + np.outer(f64(u2), f64(v2))
    xr = f64(x) + 1.2 * a.T @ f64(y) + f64(z)
    wr = f64(w) + 1.5 * a @ xr
    spec = {'i': parir.threads(N), 'j': parir.threads(N), 'jr': parir.threads(128).reduce()}
    return dict(fn=parir_gemver, args=[alpha, beta, A, u1, v1, u2, v2, w, x, y, z, N],
                spec=spec,
                check=[(A, torch.from_numpy(a)), (x, torch.from_numpy(xr)),
                       (w, torch.from_numpy(wr))])


# ----- syrk: C = alpha A A^T + beta C on the lower triangle, PolyBench's k-outer loop order ----

@parir.jit
def parir_syrk(alpha, beta, C, A, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(M):
            parir.label('j')
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


def case_syrk(rng, device):
    N, M = 70, 45
    A = nonzero((N, M), rng, dtype=torch.float64, device=device)
    C = nonzero((N, N), rng, dtype=torch.float64, device=device)
    alpha, beta = 1.5, np.float64(1.2)
    ref = f64(C)
    low = np.tril(np.ones((N, N), dtype=bool))
    ref[low] = (1.2 * f64(C) + 1.5 * f64(A) @ f64(A).T)[low]
    spec = {'i': parir.threads(N), 'j': parir.threads(64)}
    return dict(fn=parir_syrk, args=[alpha, beta, C, A, N, M], spec=spec,
                check=[(C, torch.from_numpy(ref))])


# ----- syr2k: C = alpha (A B^T + B A^T) + beta C, lower triangle, dot products in a local ------

@parir.jit
def parir_syr2k(alpha, beta, C, A, B, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(i + 1):
            acc = 0.0
            for k in range(M):
                acc += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]
            C[i, j] = beta * C[i, j] + acc


def case_syr2k(rng, device):
    N, M = 75, 50
    A = nonzero((N, M), rng, device=device)
    B = nonzero((N, M), rng, device=device)
    C = nonzero((N, N), rng, device=device)
    alpha, beta = np.float32(1.5), np.float32(1.2)
    a, b = f64(A), f64(B)
    ref = f64(C)
    low = np.tril(np.ones((N, N), dtype=bool))
    ref[low] = (1.2 * f64(C) + 1.5 * (a @ b.T + b @ a.T))[low]
    spec = {'i': parir.threads(N), 'j': parir.threads(N)}
    return dict(fn=parir_syr2k, args=[alpha, beta, C, A, B, N, M], spec=spec,
                check=[(C, torch.from_numpy(ref))])


# ----- symm: C = alpha A B + beta C with A symmetric (lower triangle stored), host loop over i -

@parir.jit
def parir_symm(alpha, beta, C, A, B, M, N):
    for i in range(M):
        parir.label('j')
        for j in range(N):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


def case_symm(rng, device):
    M, N = 45, 70
    A = nonzero((M, M), rng, dtype=torch.float64, device=device)
    A = torch.tril(A) + torch.triu(torch.full((M, M), -999.0, dtype=torch.float64,
                                              device=device), 1)  # never read, as in PolyBench
    B = nonzero((M, N), rng, dtype=torch.float64, device=device)
    C = nonzero((M, N), rng, dtype=torch.float64, device=device)
    alpha, beta = 1.5, 1.2
    low = np.tril(f64(A))
    sym = low + np.tril(low, -1).T
    ref = 1.5 * sym @ f64(B) + 1.2 * f64(C)
    spec = {'j': parir.threads(N)}
    return dict(fn=parir_symm, args=[alpha, beta, C, A, B, M, N], spec=spec,
                check=[(C, torch.from_numpy(ref))])


# ----- trmm: B = alpha A^T B with A unit lower triangular, in place, one thread per column -----

@parir.jit
def parir_trmm(alpha, A, B, M, N):
    parir.label('j')
    for j in range(N):
        for i in range(M):
            for k in range(i + 1, M):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]


def case_trmm(rng, device):
    M, N = 50, 65
    A = nonzero((M, M), rng, dtype=torch.float64, device=device)
    B = nonzero((M, N), rng, dtype=torch.float64, device=device)
    alpha = 1.5
    L = np.tril(f64(A), -1) + np.eye(M)
    ref = 1.5 * L.T @ f64(B)
    spec = {'j': parir.threads(N)}
    return dict(fn=parir_trmm, args=[alpha, A, B, M, N], spec=spec,
                check=[(B, torch.from_numpy(ref))])


# ----- doitgen: A[r, q, :] = A[r, q, :] C4, two thread-level loops under two block levels ------

@parir.jit
def parir_doitgen(NR, NQ, NP, A, C4, sum):
    parir.label('r')
    for r in range(NR):
        parir.label('q')
        for q in range(NQ):
            parir.label('p')
            for p in range(NP):
                sum[r, q, p] = 0.0
                for s in range(NP):
                    sum[r, q, p] += A[r, q, s] * C4[s, p]
            parir.label('p')
            for p in range(NP):
                A[r, q, p] = sum[r, q, p]


def case_doitgen(rng, device):
    NR, NQ, NP = 9, 11, 35
    A = nonzero((NR, NQ, NP), rng, device=device)
    C4 = nonzero((NP, NP), rng, device=device)
    sum_ = poison((NR, NQ, NP), device=device)
    ref = f64(A) @ f64(C4)
    spec = {'r': parir.threads(NR), 'q': parir.threads(NQ), 'p': parir.threads(NP)}
    return dict(fn=parir_doitgen, args=[NR, NQ, NP, A, C4, sum_], spec=spec,
                check=[(A, torch.from_numpy(ref)), (sum_, torch.from_numpy(ref))])


# ----- durbin: Levinson-Durbin, a host loop with scalars kept on the GPU and one reduce label --

@parir.jit
def parir_durbin(r, y, z, N):
    with parir.gpu:
        y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, N):
        beta = (1.0 - alpha * alpha) * beta
        sum = 0.0
        parir.label('i')
        for i in range(k):
            sum += r[k - i - 1] * y[i]
        alpha = -(r[k] + sum) / beta
        parir.label('i')
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        parir.label('i')
        for i in range(k):
            y[i] = z[i]
        with parir.gpu:
            y[k] = alpha


def case_durbin(rng, device):
    N = 45
    # |r| decays fast enough for the Toeplitz matrix to be diagonally dominant.
    r = nonzero(N, rng, dtype=torch.float64, device=device) \
        * torch.tensor([0.5 ** (i + 1) for i in range(N)], dtype=torch.float64, device=device)
    y = poison(N, dtype=torch.float64, device=device)
    z = poison(N, dtype=torch.float64, device=device)
    rr = f64(r)
    col = np.concatenate([[1.0], rr[:N - 1]])
    T = np.array([[col[abs(i - j)] for j in range(N)] for i in range(N)])
    ref = np.linalg.solve(T, -rr)     # the Yule-Walker system that Durbin's recursion solves
    spec = {'i': parir.threads(64).tpb(32).reduce()}   # two blocks
    return dict(fn=parir_durbin, args=[r, y, z, N], spec=spec,
                check=[(y, torch.from_numpy(ref))], tol=(1e-8, 1e-9))


# ----- ludcmp: LU by rows (host loop), then forward and back substitution on the GPU ----------

@parir.jit
def parir_ludcmp(A, b, x, y, N):
    for i in range(N):
        with parir.gpu:
            for j in range(i):
                w = A[i, j]
                parir.label('k')
                for k in range(j):
                    w -= A[i, k] * A[k, j]
                A[i, j] = w / A[j, j]
        parir.label('j')
        for j in range(i, N):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    with parir.gpu:
        for i in range(N):
            w = b[i]
            parir.label('k')
            for j in range(i):
                w -= A[i, j] * y[j]
            y[i] = w
        for i in range(N - 1, -1, -1):
            w = y[i]
            parir.label('k')
            for j in range(i + 1, N):
                w -= A[i, j] * x[j]
            x[i] = w / A[i, i]


def _doolittle(a):
    n = a.shape[0]
    L, U = np.eye(n), np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            U[i, j] = a[i, j] - L[i, :i] @ U[:i, j]
        for j in range(i + 1, n):
            L[j, i] = (a[j, i] - L[j, :i] @ U[:i, i]) / U[i, i]
    return L, U


def case_ludcmp(rng, device):
    N = 40
    A = nonzero((N, N), rng, dtype=torch.float64, device=device) \
        + N * torch.eye(N, dtype=torch.float64, device=device)
    b = nonzero(N, rng, dtype=torch.float64, device=device)
    x = poison(N, dtype=torch.float64, device=device)
    y = poison(N, dtype=torch.float64, device=device)
    L, U = _doolittle(f64(A))
    ref_x = np.linalg.solve(f64(A), f64(b))
    ref_y = np.linalg.solve(L, f64(b))
    ref_A = np.tril(L, -1) + U
    spec = {'j': parir.threads(N), 'k': parir.threads(32).reduce()}
    return dict(fn=parir_ludcmp, args=[A, b, x, y, N], spec=spec,
                check=[(A, torch.from_numpy(ref_A)), (y, torch.from_numpy(ref_y)),
                       (x, torch.from_numpy(ref_x))], tol=(1e-8, 1e-9))


# ----- adi: alternating direction implicit, a host time loop around two sweeps -----------------

@parir.jit
def parir_adi(TSTEPS, N, u, v, p, q):
    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)

    a = -mul1 / 2.0
    b = 1.0 + mul1
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d

    for t in range(1, TSTEPS + 1):
        # Column sweep
        parir.label('i')
        for i in range(1, N - 1):
            v[0, i] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = v[0, i]
            for j in range(1, N - 1):
                p[i, j] = -c / (a * p[i, j - 1] + b)
                q[i, j] = (-d * u[j, i - 1] + (1.0 + 2.0 * d) * u[j, i] - f * u[j, i + 1]
                           - a * q[i, j - 1]) / (a * p[i, j - 1] + b)
            v[N - 1, i] = 1.0
            for j in range(N - 2, 0, -1):
                v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
        # Row sweep
        parir.label('i')
        for i in range(1, N - 1):
            u[i, 0] = 1.0
            p[i, 0] = 0.0
            q[i, 0] = u[i, 0]
            for j in range(1, N - 1):
                p[i, j] = -f / (d * p[i, j - 1] + e)
                q[i, j] = (-a * v[i - 1, j] + (1.0 + 2.0 * a) * v[i, j] - c * v[i + 1, j]
                           - d * q[i, j - 1]) / (d * p[i, j - 1] + e)
            u[i, N - 1] = 1.0
            for j in range(N - 2, 0, -1):
                u[i, j] = p[i, j] * u[i, j + 1] + q[i, j]


def _adi_reference(T, N, u, v):
    DX, DY, DT = 1.0 / N, 1.0 / N, 1.0 / T
    mul1, mul2 = 2.0 * DT / (DX * DX), 1.0 * DT / (DY * DY)
    a, b, d, e = -mul1 / 2.0, 1.0 + mul1, -mul2 / 2.0, 1.0 + mul2
    c, f = a, d
    rows = slice(1, N - 1)
    for _ in range(T):
        # Column sweep, all columns i at once as vectors.
        P, Q = np.zeros(N - 2), np.ones(N - 2)
        Ps, Qs = [P], [Q]
        for j in range(1, N - 1):
            den = a * P + b
            Q = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1] - f * u[j, 2:N]
                 - a * Q) / den
            P = -c / den
            Ps.append(P)
            Qs.append(Q)
        v[0, rows] = 1.0
        v[N - 1, rows] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, rows] = Ps[j] * v[j + 1, rows] + Qs[j]
        # Row sweep, all rows i at once.
        P, Q = np.zeros(N - 2), np.ones(N - 2)
        Ps, Qs = [P], [Q]
        for j in range(1, N - 1):
            den = d * P + e
            Q = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j] - c * v[2:N, j]
                 - d * Q) / den
            P = -f / den
            Ps.append(P)
            Qs.append(Q)
        u[rows, 0] = 1.0
        u[rows, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[rows, j] = Ps[j] * u[rows, j + 1] + Qs[j]
    return u, v


def case_adi(rng, device):
    N, T = 35, 5
    u = nonzero((N, N), rng, dtype=torch.float64, device=device)
    v = nonzero((N, N), rng, dtype=torch.float64, device=device)
    p = torch.zeros((N, N), dtype=torch.float64, device=device)
    q = torch.zeros((N, N), dtype=torch.float64, device=device)
    ru, rv = _adi_reference(T, N, f64(u), f64(v))
    spec = {'i': parir.threads(N - 2)}
    return dict(fn=parir_adi, args=[T, N, u, v, p, q], spec=spec,
                check=[(u, torch.from_numpy(ru)), (v, torch.from_numpy(rv))])


# ----- seidel-2d: Gauss-Seidel in place, host loops over time and over wavefronts 2i + j = d ---

@parir.jit
def parir_seidel_2d(TSTEPS, N, A):
    for t in range(TSTEPS):
        for d in range(3, 3 * N - 5):
            parir.label('i')
            for i in range(1, N - 1):
                j = d - 2 * i
                if j >= 1 and j <= N - 2:
                    A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                               + A[i, j - 1] + A[i, j] + A[i, j + 1]
                               + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


def case_seidel_2d(rng, device):
    N, T = 35, 3
    A = nonzero((N, N), rng, dtype=torch.float64, device=device)
    a = f64(A)
    for _ in range(T):                   # PolyBench's loop order, row by row
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                a[i, j] = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1]
                           + a[i, j - 1] + a[i, j] + a[i, j + 1]
                           + a[i + 1, j - 1] + a[i + 1, j] + a[i + 1, j + 1]) / 9.0
    spec = {'i': parir.threads(N - 2)}
    return dict(fn=parir_seidel_2d, args=[T, N, A], spec=spec,
                check=[(A, torch.from_numpy(a))], tol=(1e-8, 1e-9))


# ----- nussinov: RNA folding, a host loop over diagonals, helpers, a max reduction over k -----

def match(b1, b2):
    return 1 if b1 + b2 == 3 else 0


def max_score(s1, s2):
    return s1 if s1 >= s2 else s2


@parir.jit
def parir_nussinov(N, seq, table):
    for d in range(1, N):
        parir.label('i')
        for i in range(N - d):
            j = i + d
            if j - 1 >= 0:
                table[i, j] = max_score(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = max_score(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = max_score(table[i, j],
                                            table[i + 1, j - 1] + match(seq[i], seq[j]))
                else:
                    table[i, j] = max_score(table[i, j], table[i + 1, j - 1])
            s = table[i, j]
            parir.label('k')
            for k in range(i + 1, j):
                s = max(s, table[i, k] + table[k + 1, j])
            table[i, j] = s


def case_nussinov(rng, device):
    N = 60
    seq = randint(N, rng, 0, 4, dtype=torch.int32, device=device)
    table = torch.zeros((N, N), dtype=torch.int32, device=device)
    sq = seq.cpu().numpy().astype(np.int64)
    t = np.zeros((N, N), dtype=np.int64)
    for i in range(N - 1, -1, -1):       # PolyBench's loop order
        for j in range(i + 1, N):
            if j - 1 >= 0:
                t[i, j] = max(t[i, j], t[i, j - 1])
            if i + 1 < N:
                t[i, j] = max(t[i, j], t[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    t[i, j] = max(t[i, j], t[i + 1, j - 1] + (1 if sq[i] + sq[j] == 3 else 0))
                else:
                    t[i, j] = max(t[i, j], t[i + 1, j - 1])
            for k in range(i + 1, j):
                t[i, j] = max(t[i, j], t[i, k] + t[k + 1, j])
    spec = {'i': parir.threads(N), 'k': parir.threads(32).reduce()}
    return dict(fn=parir_nussinov, args=[N, seq, table], spec=spec,
                check=[(table, torch.from_numpy(t))])


# ----- deriche: recursive edge filter, rows then columns scanned sequentially in each thread ---

@parir.jit
def parir_deriche(W, H, alpha, imgIn, imgOut, y1, y2):
    k = (1.0 - math.exp(-alpha)) * (1.0 - math.exp(-alpha)) \
        / (1.0 + 2.0 * alpha * math.exp(-alpha) - math.exp(2.0 * alpha))
    a1 = k
    a5 = k
    a2 = k * math.exp(-alpha) * (alpha - 1.0)
    a6 = a2
    a3 = k * math.exp(-alpha) * (alpha + 1.0)
    a7 = a3
    a4 = -k * math.exp(-2.0 * alpha)
    a8 = a4
    b1 = math.pow(2.0, -alpha)
    b2 = -math.exp(-2.0 * alpha)
    c1 = 1.0
    c2 = 1.0

    parir.label('i')
    for i in range(W):
        ym1 = 0.0
        ym2 = 0.0
        xm1 = 0.0
        for j in range(H):
            y1[i, j] = a1 * imgIn[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = imgIn[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    parir.label('i')
    for i in range(W):
        yp1 = 0.0
        yp2 = 0.0
        xp1 = 0.0
        xp2 = 0.0
        for j in range(H - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = imgIn[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    parir.label('i')
    for i in range(W):
        parir.label('j')
        for j in range(H):
            imgOut[i, j] = c1 * (y1[i, j] + y2[i, j])

    parir.label('j')
    for j in range(H):
        tm1 = 0.0
        ym1 = 0.0
        ym2 = 0.0
        for i in range(W):
            y1[i, j] = a5 * imgOut[i, j] + a6 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = imgOut[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    parir.label('j')
    for j in range(H):
        tp1 = 0.0
        tp2 = 0.0
        yp1 = 0.0
        yp2 = 0.0
        for i in range(W - 1, -1, -1):
            y2[i, j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = imgOut[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    parir.label('i')
    for i in range(W):
        parir.label('j')
        for j in range(H):
            imgOut[i, j] = c2 * (y1[i, j] + y2[i, j])


def _deriche_reference(img, alpha):
    ea, e2a = np.exp(-alpha), np.exp(-2.0 * alpha)
    k = (1.0 - ea) ** 2 / (1.0 + 2.0 * alpha * ea - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * ea * (alpha - 1.0)
    a3 = a7 = k * ea * (alpha + 1.0)
    a4 = a8 = -k * e2a
    b1, b2 = 2.0 ** -alpha, -e2a

    def causal(x, g0, g1):          # along axis 1, every row at once
        y = np.zeros_like(x)
        xm1 = ym1 = ym2 = np.zeros(x.shape[0])
        for j in range(x.shape[1]):
            y[:, j] = g0 * x[:, j] + g1 * xm1 + b1 * ym1 + b2 * ym2
            xm1, ym2, ym1 = x[:, j], ym1, y[:, j]
        return y

    def anticausal(x, g0, g1):
        y = np.zeros_like(x)
        xp1 = xp2 = yp1 = yp2 = np.zeros(x.shape[0])
        for j in range(x.shape[1] - 1, -1, -1):
            y[:, j] = g0 * xp1 + g1 * xp2 + b1 * yp1 + b2 * yp2
            xp2, xp1, yp2, yp1 = xp1, x[:, j], yp1, y[:, j]
        return y

    out = causal(img, a1, a2) + anticausal(img, a3, a4)
    out = (causal(out.T, a5, a6) + anticausal(out.T, a7, a8)).T
    return out


def case_deriche(rng, device):
    W, H = 70, 45
    imgIn = nonzero((W, H), rng, device=device)
    imgOut = poison((W, H), device=device)
    y1 = poison((W, H), device=device)
    y2 = poison((W, H), device=device)
    alpha = np.float32(0.25)
    ref = _deriche_reference(f64(imgIn), 0.25)
    spec = {'i': parir.threads(W), 'j': parir.threads(H)}
    return dict(fn=parir_deriche, args=[W, H, alpha, imgIn, imgOut, y1, y2], spec=spec,
                check=[(imgOut, torch.from_numpy(ref))])


# ----- correlation: means as a slice sum, deviations as a reduction, then the products --------

@parir.jit
def parir_correlation(M, N, float_n, data, corr, mean, stddev):
    eps = 0.1

    parir.label('j')
    mean[:] = parir.sum(data[:, :], axis=0)
    parir.label('j')
    mean[:] /= float_n

    parir.label('j')
    for j in range(M):
        stddev[j] = 0.0
        parir.label('r')
        for i in range(N):
            stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
        stddev[j] /= float_n
        stddev[j] = parir.sqrt(stddev[j])
        stddev[j] = 1.0 if stddev[j] <= eps else stddev[j]

    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            data[i, j] -= mean[j]
            data[i, j] /= parir.sqrt(float_n) * stddev[j]

    parir.label('i')
    for i in range(M - 1):
        corr[i, i] = 1.0
        parir.label('j')
        for j in range(i + 1, M):
            corr[i, j] = 0.0
            for k in range(N):
                corr[i, j] += data[k, i] * data[k, j]
            corr[j, i] = corr[i, j]
    with parir.gpu:
        corr[M - 1, M - 1] = 1.0


def case_correlation(rng, device):
    M, N = 33, 100
    data = nonzero((N, M), rng, dtype=torch.float64, device=device)
    corr = poison((M, M), dtype=torch.float64, device=device)
    mean = poison(M, dtype=torch.float64, device=device)
    stddev = poison(M, dtype=torch.float64, device=device)
    d = f64(data)
    ref_corr = np.corrcoef(d, rowvar=False)
    ref_mean = d.mean(axis=0)
    ref_std = d.std(axis=0)
    spec = {'i': parir.threads(N), 'j': parir.threads(M),
            'r': parir.threads(64).tpb(32).reduce()}
    return dict(fn=parir_correlation, args=[M, N, float(N), data, corr, mean, stddev],
                spec=spec,
                check=[(corr, torch.from_numpy(ref_corr)), (mean, torch.from_numpy(ref_mean)),
                       (stddev, torch.from_numpy(ref_std))], tol=(1e-8, 1e-9))


# ----- covariance: three parallel levels, the products as .reduce() into tensor elements, ------
# ----- with deterministic=True -----------------------------------------------------------------

@parir.jit
def parir_covariance(M, N, float_n, data, cov, mean):
    parir.label('j')
    for j in range(M):
        mean[j] = 0.0
        parir.label('i')
        for i in range(N):
            mean[j] += data[i, j]
        mean[j] /= float_n

    parir.label('row')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            data[i, j] -= mean[j]

    parir.label('j')
    for i in range(M):
        parir.label('col')
        for j in range(i, M):
            cov[i, j] = 0.0
            parir.label('k')
            for k in range(N):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= (float_n - 1.0)
            cov[j, i] = cov[i, j]


def _deterministic(spec):
    opts = parir.par(spec)
    opts.deterministic = True
    return opts


def case_covariance(rng, device):
    M, N = 33, 100
    data = nonzero((N, M), rng, dtype=torch.float64, device=device)
    cov = poison((M, M), dtype=torch.float64, device=device)
    mean = poison(M, dtype=torch.float64, device=device)
    d = f64(data)
    ref_cov = np.cov(d, rowvar=False)
    ref_mean = d.mean(axis=0)
    ref_data = d - ref_mean
    spec = {'j': parir.threads(M), 'i': parir.threads(64).reduce(), 'row': parir.threads(N),
            'col': parir.threads(M), 'k': parir.threads(64).reduce()}
    return dict(fn=parir_covariance, args=[M, N, float(N), data, cov, mean], spec=spec,
                check=[(cov, torch.from_numpy(ref_cov)), (mean, torch.from_numpy(ref_mean)),
                       (data, torch.from_numpy(ref_data))], tol=(1e-8, 1e-9),
                opts=_deterministic)


CASES = {
    "poly_2mm": case_2mm,
    "poly_3mm": case_3mm,
    "poly_atax": case_atax,
    "poly_bicg": case_bicg,
    "poly_mvt": case_mvt,
    "poly_gesummv": case_gesummv,
    "poly_gemver": case_gemver,
    "poly_syrk": case_syrk,
    "poly_syr2k": case_syr2k,
    "poly_symm": case_symm,
    "poly_trmm": case_trmm,
    "poly_doitgen": case_doitgen,
    "poly_durbin": case_durbin,
    "poly_ludcmp": case_ludcmp,
    "poly_adi": case_adi,
    "poly_seidel_2d": case_seidel_2d,
    "poly_nussinov": case_nussinov,
    "poly_deriche": case_deriche,
    "poly_correlation": case_correlation,
    "poly_covariance": case_covariance,
}
