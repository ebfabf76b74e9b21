"""Sparse matrix products on CSR matrices (as in APPy's SpMV example and npbench's spmv): the
loop bounds of a row come from memory."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, randint


def random_csr(n_rows, n_cols, rng, device, dtype=torch.float32, index_dtype=torch.int64,
               max_per_row=12):
    """A CSR matrix with some empty rows; returns (rowptr, cols, vals, dense float64)."""
    counts = randint(n_rows, rng, 0, max_per_row + 1)
    counts[::7] = 0
    rowptr = torch.zeros(n_rows + 1, dtype=torch.int64)
    rowptr[1:] = torch.cumsum(counts, 0)
    nnz = int(rowptr[-1])
    cols = randint(nnz, rng, 0, n_cols)
    vals = nonzero(nnz, rng, dtype=dtype)
    dense = np.zeros((n_rows, n_cols))
    for i in range(n_rows):
        for k in range(int(rowptr[i]), int(rowptr[i + 1])):
            dense[i, int(cols[k])] += float(vals[k])
    return (rowptr.to(index_dtype).to(device), cols.to(index_dtype).to(device),
            vals.to(device), dense)


# ----- SpMV, one thread per row (APPy's loop, parallel over rows) ------------------------------

@parir.jit
def parir_spmv(A_row, A_col, A_val, x, y, N):
    parir.label('row')
    for i in range(N):
        y[i] = 0.0
        for j in range(A_row[i], A_row[i + 1]):
            cols = A_col[j]
            y[i] += A_val[j] * x[cols]


def case_spmv(rng, device):
    N, M = 1000, 33
    rowptr, cols, vals, dense = random_csr(N, M, rng, device, index_dtype=torch.int32)
    x = nonzero(M, rng, device=device)
    y = poison(N, device=device)
    spec = {'row': parir.threads(N)}
    return dict(fn=parir_spmv, args=[rowptr, cols, vals, x, y, N], spec=spec,
                check=[(y, torch.from_numpy(dense @ f64(x)))])


# ----- SpMV with the matrix as a dict and a warp of threads reducing each row -----------------

@parir.jit
def parir_spmv_warp(A, x, y, N):
    parir.label('row')
    for i in range(N):
        s = 0.0
        parir.label('nz')
        for j in range(A['rowptr'][i], A['rowptr'][i + 1]):
            s += A['vals'][j] * x[A['cols'][j]]
        y[i] = s


def case_spmv_warp(rng, device):
    N, M = 100, 4097
    rowptr, cols, vals, dense = random_csr(N, M, rng, device, dtype=torch.float64,
                                           max_per_row=80)
    x = nonzero(M, rng, dtype=torch.float64, device=device)
    y = poison(N, dtype=torch.float64, device=device)
    A = {'rowptr': rowptr, 'cols': cols, 'vals': vals}
    spec = {'row': parir.threads(N), 'nz': parir.threads(32).reduce()}
    return dict(fn=parir_spmv_warp, args=[A, x, y, N], spec=spec,
                check=[(y, torch.from_numpy(dense @ f64(x)))])


# ----- SpMM, a CSR matrix times a dense one: rows on blocks, output columns on threads --------

@parir.jit
def parir_spmm(rowptr, cols, vals, B, C, N, K):
    parir.label('row')
    for i in range(N):
        parir.label('col')
        for k in range(K):
            acc = 0.0
            for j in range(rowptr[i], rowptr[i + 1]):
                acc += vals[j] * B[cols[j], k]
            C[i, k] = acc


def case_spmm(rng, device):
    N, M, K = 33, 50, 31
    rowptr, cols, vals, dense = random_csr(N, M, rng, device)
    B = nonzero((M, K), rng, device=device)
    C = poison((N, K), device=device)
    spec = {'row': parir.threads(N), 'col': parir.threads(K)}
    return dict(fn=parir_spmm, args=[rowptr, cols, vals, B, C, N, K], spec=spec,
                check=[(C, torch.from_numpy(dense @ f64(B)))])


CASES = {
    "spmv": case_spmv,
    "spmv_warp": case_spmv_warp,
    "spmm": case_spmm,
}
