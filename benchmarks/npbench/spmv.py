"""spmv (npbench spmv): sparse matrix (CSR) times dense vector.

    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        vals = A_val[A_row[i]:A_row[i + 1]]
        y[i] = vals @ x[cols]

The torch version does the row loop's work in one vectorized step, as a torch user would: the
products vals * x[cols] summed into their rows with index_add_ (the row of each non-zero, the
CSR row pointer expanded, is part of the input).
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def spmv(A_row, A_col, A_val, x, y, M):
    parir.label('i')
    for i in range(M):
        s = 0.0
        for k in range(A_row[i], A_row[i + 1]):
            s += A_val[k] * x[A_col[k]]
        y[i] = s


def make_inputs(size, dtype, rng):
    M, N, nnz = size["M"], size["N"], size["nnz"]
    # Random positions (as scipy.sparse.random gives), sorted by row: CSR with int64 indices.
    flat = torch.sort(rng.integers(0, M * N, nnz)).values
    rows, cols = flat // N, flat % N
    A_row = torch.zeros(M + 1, dtype=torch.int64)
    A_row[1:] = torch.cumsum(torch.bincount(rows, minlength=M), 0)
    dev = rng.device
    return dict(A_row=A_row.to(dev), A_col=cols.to(dev), A_rows_of_nnz=rows.to(dev),
                A_val=rng.uniform(nnz), x=rng.uniform(N), y=rng.empty(M), M=M)


def parir_calls(st):
    M = st["M"]
    opts = parir.par({'i': parir.threads(M).tpb(256)})
    return [(spmv, (st["A_row"], st["A_col"], st["A_val"], st["x"], st["y"], M), opts)]


def torch_step(rows, A_col, A_val, x, M: int):
    y = torch.zeros(M, dtype=A_val.dtype, device=A_val.device)
    return y.index_add_(0, rows, A_val * x[A_col])


def torch_run(st, step):
    st["y"] = step(st["A_rows_of_nnz"], st["A_col"], st["A_val"], st["x"], st["M"])


def cost(size, s):
    M, N, nnz = size["M"], size["N"], size["nnz"]
    return {"bytes": nnz * (s + 8) + (M + 1) * 8 + N * s + M * s, "flops": 2 * nnz, "steps": 1}


PROGRAM = Program(
    name="spmv", origin="spmv",
    size_note="npbench preset L: M=N=131072, nnz=262144 (recalled, not checked)",
    sizes={"L": dict(M=131072, N=131072, nnz=262144), "quick": dict(M=4096, N=4096, nnz=8192),
           "ci": dict(M=11, N=13, nnz=30)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("y",), write_only=("y",), cost=cost)
