"""gramschmidt (npbench polybench/gramschmidt): QR factorization by modified Gram-Schmidt.

    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]

The k loop is sequential (runs on the host, two kernels a step); the j loop is parallel, one
block per column. The torch version does the j loop as one vector-matrix product and one
rank-1 update. Its steps keep one shape for every k (the columns j > k are selected by a mask,
not a slice), so that under torch.compile, where k is a one-element device tensor (`index`, `take`), one
compiled graph serves every step.
"""

import torch

import parir_torch as parir

from .program import Program, put_, take


@parir.jit
def gramschmidt(A, Q, R, M, N):
    parir.label('r')
    parir.label('c')
    R[:, :] = 0.0
    for k in range(N):
        with parir.gpu:
            parir.label('i')
            nrm = parir.sum(A[:, k] * A[:, k])
            R[k, k] = parir.sqrt(nrm)
            parir.label('i')
            Q[:, k] = A[:, k] / R[k, k]
        parir.label('j')
        for j in range(k + 1, N):
            parir.label('i')
            s = parir.sum(Q[:, k] * A[:, j])
            R[k, j] = s
            parir.label('i')
            A[:, j] -= Q[:, k] * s


def make_inputs(size, dtype, rng):
    M, N = size["M"], size["N"]
    return dict(A=rng.uniform(M, N, lo=-1.0, hi=1.0), Q=rng.empty(M, N), R=rng.empty(N, N),
                M=M, N=N)


def parir_calls(st):
    M, N = st["M"], st["N"]
    opts = parir.par({'r': parir.threads(N), 'c': parir.threads(N), 'i': parir.threads(256),
                      'j': parir.threads(N)})
    return [(gramschmidt, (st["A"], st["Q"], st["R"], M, N), opts)]


def torch_step(A, Q, R, columns, k):
    a = take(A, 1, k)
    r = torch.sqrt(a @ a)
    q = a / r
    put_(Q, 1, k, q)
    row = torch.where(columns > k, q @ A, 0.0)
    put_(R, 0, k, torch.where(columns == k, r, row))
    A -= q[:, None] * row[None, :]


def torch_run(st, step, index=int):
    A = st["A"]
    st["Q"] = Q = torch.zeros_like(A)
    st["R"] = R = torch.zeros(A.shape[1], A.shape[1], dtype=A.dtype, device=A.device)
    columns = torch.arange(A.shape[1], device=A.device)
    for k in range(A.shape[1]):
        step(A, Q, R, columns, index(k))


def cost(size, s):
    M, N = size["M"], size["N"]
    return {"bytes": (3 * M * N + N * N) * s, "flops": 2 * M * N * N + 3 * M * N, "steps": 2 * N}


PROGRAM = Program(
    name="gramschmidt", origin="polybench/gramschmidt",
    size_note="npbench preset L: M=600, N=500 (recalled, not checked)",
    sizes={"L": dict(M=600, N=500), "quick": dict(M=70, N=60), "ci": dict(M=7, N=5)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("Q", "R", "A"), write_only=("Q", "R"), mutated=("A",),
    cost=cost, indexed_loop=True)
