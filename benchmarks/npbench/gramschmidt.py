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
rank-1 update.
"""

import torch

import parir_torch as parir

from .program import Program


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
    opts.use_cuda_graphs = True
    return [(gramschmidt, (st["A"], st["Q"], st["R"], M, N), opts)]


def torch_step(A, Q, R, k: int):
    nrm = A[:, k] @ A[:, k]
    R[k, k] = torch.sqrt(nrm)
    Q[:, k] = A[:, k] / R[k, k]
    R[k, k + 1:] = Q[:, k] @ A[:, k + 1:]
    A[:, k + 1:] -= Q[:, k, None] * R[None, k, k + 1:]


def torch_run(st, step):
    A = st["A"]
    st["Q"] = Q = torch.zeros_like(A)
    st["R"] = R = torch.zeros(A.shape[1], A.shape[1], dtype=A.dtype, device=A.device)
    for k in range(A.shape[1]):
        step(A, Q, R, k)


def cost(size, s):
    M, N = size["M"], size["N"]
    return {"bytes": (3 * M * N + N * N) * s, "flops": 2 * M * N * N + 3 * M * N, "steps": 2 * N}


PROGRAM = Program(
    name="gramschmidt", origin="polybench/gramschmidt",
    size_note="npbench preset L: M=600, N=500 (recalled, not checked)",
    sizes={"L": dict(M=600, N=500), "quick": dict(M=70, N=60), "ci": dict(M=7, N=5)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("Q", "R", "A"), write_only=("Q", "R"), mutated=("A",),
    cost=cost, dynamic=True)
