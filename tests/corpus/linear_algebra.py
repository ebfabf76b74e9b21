"""Dense linear algebra: products, a transpose, and the factorizations of PolyBench (LU,
Cholesky, Gram-Schmidt) and a triangular solve, each step's independent work in parallel."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison


# ----- Matrix multiply, one thread per output element ------------------------------------------

@parir.jit
def parir_matmul(A, B, C, N, M, K):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]


def case_matmul(rng, device):
    N, K, M = 33, 17, 31
    A = nonzero((N, K), rng, device=device)
    B = nonzero((K, M), rng, device=device)
    C = poison((N, M), device=device)
    spec = {'i': parir.threads(N), 'j': parir.threads(M)}
    return dict(fn=parir_matmul, args=[A, B, C, N, M, K], spec=spec,
                check=[(C, torch.from_numpy(f64(A) @ f64(B)))])


# ----- GEMM (PolyBench gemm) with the dot products as parallel reductions into a local ---------

@parir.jit
def parir_gemm(alpha, beta, C, A, B, NI, NJ, NK):
    parir.label('i')
    for i in range(NI):
        parir.label('j')
        for j in range(NJ):
            acc = 0.0
            parir.label('k')
            for k in range(NK):
                acc += A[i, k] * B[k, j]
            C[i, j] = beta * C[i, j] + alpha * acc


def case_gemm(rng, device):
    NI, NJ, NK = 7, 9, 100
    A = nonzero((NI, NK), rng, dtype=torch.float64, device=device)
    B = nonzero((NK, NJ), rng, dtype=torch.float64, device=device)
    C = nonzero((NI, NJ), rng, dtype=torch.float64, device=device)
    alpha, beta = np.float64(1.5), 1.2
    ref = float(alpha) * f64(A) @ f64(B) + beta * f64(C)
    spec = {'i': parir.threads(NI), 'j': parir.threads(NJ), 'k': parir.threads(64).reduce()}
    return dict(fn=parir_gemm, args=[alpha, beta, C, A, B, NI, NJ, NK], spec=spec,
                check=[(C, torch.from_numpy(ref))])


# ----- Transpose of a transposed (non-contiguous) view, with a small block size ---------------

@parir.jit
def parir_transpose(x, out, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            out[j, i] = x[i, j]


def case_transpose(rng, device):
    N, M = 33, 1000
    base = nonzero((M, N), rng, dtype=torch.float64, device=device)
    x = base.t()                      # (N, M), strides (1, N)
    out = poison((M, N), dtype=torch.float64, device=device)
    spec = {'i': parir.threads(N), 'j': parir.threads(M).tpb(64)}
    return dict(fn=parir_transpose, args=[x, out, N, M], spec=spec,
                check=[(out, torch.from_numpy(f64(x).T.copy()))])


# ----- Matrix-vector product, y = alpha * A x + beta * y, reduction into y[i] -----------------

@parir.jit
def parir_gemv(alpha, A, x, beta, y, N, M):
    parir.label('i')
    for i in range(N):
        y[i] = beta * y[i]
        parir.label('j')
        for j in range(M):
            y[i] += alpha * A[i, j] * x[j]


def case_gemv(rng, device):
    N, M = 31, 1000
    A = nonzero((N, M), rng, device=device)
    x = nonzero(M, rng, device=device)
    y = nonzero(N, rng, device=device)
    alpha, beta = np.float32(0.5), np.float32(-2.0)
    ref = 0.5 * f64(A) @ f64(x) - 2.0 * f64(y)
    spec = {'i': parir.threads(N), 'j': parir.threads(256).reduce()}
    return dict(fn=parir_gemv, args=[alpha, A, x, beta, y, N, M], spec=spec,
                check=[(y, torch.from_numpy(ref))])


# ----- LU decomposition without pivoting (PolyBench lu, right-looking form) --------------------

@parir.jit
def parir_lu(A, N):
    for k in range(N):
        parir.label('i')
        for i in range(k + 1, N):
            A[i, k] = A[i, k] / A[k, k]
        parir.label('i')
        for i in range(k + 1, N):
            parir.label('j')
            for j in range(k + 1, N):
                A[i, j] -= A[i, k] * A[k, j]


def _diag_dominant(n, rng, device):
    A = nonzero((n, n), rng, dtype=torch.float64, device=device)
    A += n * torch.eye(n, dtype=torch.float64, device=device)
    return A


def case_lu(rng, device):
    N = 33
    A = _diag_dominant(N, rng, device)
    a = f64(A)
    L, U = np.eye(N), np.zeros((N, N))
    # Doolittle's row-by-row formulas, independent of the program's loop order.
    for i in range(N):
        for j in range(i, N):
            U[i, j] = a[i, j] - L[i, :i] @ U[:i, j]
        for j in range(i + 1, N):
            L[j, i] = (a[j, i] - L[j, :i] @ U[:i, i]) / U[i, i]
    ref = np.tril(L, -1) + U
    spec = {'i': parir.threads(N), 'j': parir.threads(N)}
    return dict(fn=parir_lu, args=[A, N], spec=spec, check=[(A, torch.from_numpy(ref))])


# ----- Cholesky factorization, column by column, dot products as reductions -------------------

@parir.jit
def parir_cholesky(A, L, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(N):
            L[i, j] = 0.0
    for j in range(N):
        with parir.gpu:
            s = 0.0
            parir.label('k')
            for k in range(j):
                s += L[j, k] * L[j, k]
            L[j, j] = parir.sqrt(A[j, j] - s)
        parir.label('i')
        for i in range(j + 1, N):
            t = 0.0
            parir.label('k')
            for k in range(j):
                t += L[i, k] * L[j, k]
            L[i, j] = (A[i, j] - t) / L[j, j]


def case_cholesky(rng, device):
    N = 33
    R = nonzero((N, N), rng, dtype=torch.float64, device=device)
    A = R @ R.t() + N * torch.eye(N, dtype=torch.float64, device=device)
    L = poison((N, N), dtype=torch.float64, device=device)
    ref = np.linalg.cholesky(f64(A))
    spec = {'i': parir.threads(N), 'j': parir.threads(N), 'k': parir.threads(32).reduce()}
    return dict(fn=parir_cholesky, args=[A, L, N], spec=spec,
                check=[(L, torch.from_numpy(ref))])


# ----- Modified Gram-Schmidt QR (PolyBench gramschmidt) ---------------------------------------

@parir.jit
def parir_gramschmidt(A, Q, R, M, N):
    for k in range(N):
        with parir.gpu:
            nrm = 0.0
            parir.label('i')
            for i in range(M):
                nrm += A[i, k] * A[i, k]
            R[k, k] = parir.sqrt(nrm)
        parir.label('i')
        for i in range(M):
            Q[i, k] = A[i, k] / R[k, k]
        parir.label('j')
        for j in range(k + 1, N):
            R[k, j] = 0.0
            parir.label('i')
            for i in range(M):
                R[k, j] += Q[i, k] * A[i, j]
            parir.label('i')
            for i in range(M):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]


def case_gramschmidt(rng, device):
    M, N = 40, 9
    A = nonzero((M, N), rng, dtype=torch.float64, device=device)
    Q = poison((M, N), dtype=torch.float64, device=device)
    R = torch.zeros((N, N), dtype=torch.float64, device=device)
    q, r = np.linalg.qr(f64(A))
    # Modified Gram-Schmidt gives R with a positive diagonal: fix the signs of NumPy's.
    s = np.sign(np.diag(r))
    q, r = q * s, r * s[:, None]
    spec = {'i': parir.threads(M).reduce(), 'j': parir.threads(N)}
    return dict(fn=parir_gramschmidt, args=[A, Q, R, M, N], spec=spec,
                check=[(Q, torch.from_numpy(q)), (R, torch.from_numpy(r))])


# ----- Forward substitution, L x = b (PolyBench trisolv) ---------------------------------------

@parir.jit
def parir_trisolv(L, x, b, N):
    with parir.gpu:
        for i in range(N):
            s = b[i]
            parir.label('j')
            for j in range(i):
                s -= L[i, j] * x[j]
            x[i] = s / L[i, i]


def case_trisolv(rng, device):
    N = 100
    L = torch.tril(nonzero((N, N), rng, dtype=torch.float64, device=device)) \
        + 2.0 * torch.eye(N, dtype=torch.float64, device=device)
    b = nonzero(N, rng, dtype=torch.float64, device=device)
    x = poison(N, dtype=torch.float64, device=device)
    ref = np.linalg.solve(f64(L), f64(b))
    spec = {'j': parir.threads(128).reduce()}
    return dict(fn=parir_trisolv, args=[L, x, b, N], spec=spec,
                check=[(x, torch.from_numpy(ref))], tol=(1e-8, 1e-9))


# ----- Back substitution, U x = b, rows from the last up (a negative range step) ---------------

@parir.jit
def parir_back_substitution(U, b, x, N):
    with parir.gpu:
        for i in range(N - 1, -1, -1):
            s = 0.0
            parir.label('j')
            for j in range(i + 1, N):
                s += U[i, j] * x[j]
            x[i] = (b[i] - s) / U[i, i]


def case_back_substitution(rng, device):
    N = 33
    U = torch.triu(nonzero((N, N), rng, dtype=torch.float64, device=device)) \
        + 2.0 * torch.eye(N, dtype=torch.float64, device=device)
    b = nonzero(N, rng, dtype=torch.float64, device=device)
    x = poison(N, dtype=torch.float64, device=device)
    ref = np.linalg.solve(f64(U), f64(b))
    spec = {'j': parir.threads(32).reduce()}
    return dict(fn=parir_back_substitution, args=[U, b, x, N], spec=spec,
                check=[(x, torch.from_numpy(ref))], tol=(1e-8, 1e-9))


CASES = {
    "matmul": case_matmul,
    "gemm": case_gemm,
    "transpose": case_transpose,
    "gemv": case_gemv,
    "lu": case_lu,
    "cholesky": case_cholesky,
    "gramschmidt": case_gramschmidt,
    "trisolv": case_trisolv,
    "back_substitution": case_back_substitution,
}
