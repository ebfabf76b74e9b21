"""trmm (npbench polybench/trmm): B = alpha * (B + Lᵀ B), L the strict lower triangle of A.

    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha

Row i reads only rows below it, which the NumPy loop has not changed yet: every element can be
computed in parallel from the original B. The parir version writes the new values to a scratch
matrix T and copies them back; the torch version is what a PyTorch user writes, one matrix
product with the transposed strict lower triangle.
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def trmm(alpha, A, B, T, M, N):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            s = B[i, j]
            for k in range(i + 1, M):
                s += A[k, i] * B[k, j]
            T[i, j] = alpha * s
    parir.label('i')
    parir.label('j')
    B[:, :] = T[:, :]


def make_inputs(size, dtype, rng):
    M, N = size["M"], size["N"]
    return dict(alpha=1.5, A=rng.uniform(M, M), B=rng.uniform(M, N), T=rng.empty(M, N), M=M, N=N)


def parir_calls(st):
    M, N = st["M"], st["N"]
    opts = parir.par({'i': parir.threads(M), 'j': parir.threads(min(N, 256))})
    return [(trmm, (st["alpha"], st["A"], st["B"], st["T"], M, N), opts)]


def torch_step(alpha, A, B):
    B.copy_(alpha * (B + torch.tril(A, -1).T @ B))


def torch_run(st, step):
    step(st["alpha"], st["A"], st["B"])


def cost(size, s):
    M, N = size["M"], size["N"]
    return {"bytes": (M * (M - 1) // 2 + 2 * M * N) * s, "flops": M * (M - 1) * N + M * N,
            "steps": 1}


PROGRAM = Program(
    name="trmm", origin="polybench/trmm",
    size_note="npbench preset L: M=600, N=700 (recalled, not checked)",
    sizes={"L": dict(M=600, N=700), "quick": dict(M=65, N=80), "ci": dict(M=5, N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("B",), mutated=("B",), cost=cost)
