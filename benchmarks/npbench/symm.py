"""symm (npbench polybench/symm): C = beta * C + alpha * A @ B with A symmetric, stored in its
lower triangle.

    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2

The NumPy loop scatters row i's contributions upward; the parir version gathers them instead,
one thread per element of C: C[i, j] sums A[i, k] B[k, j] over k < i (row i of the triangle)
and A[k, i] B[k, j] over k > i (column i). The torch version is what a PyTorch user writes:
the full symmetric matrix from the lower triangle, then one matrix product.
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def symm(alpha, beta, C, A, B, M, N):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            s = A[i, i] * B[i, j]
            for k in range(i):
                s += A[i, k] * B[k, j]
            for k in range(i + 1, M):
                s += A[k, i] * B[k, j]
            C[i, j] = beta * C[i, j] + alpha * s


def make_inputs(size, dtype, rng):
    M, N = size["M"], size["N"]
    return dict(alpha=1.5, beta=1.2, C=rng.uniform(M, N), A=rng.uniform(M, M),
                B=rng.uniform(M, N), M=M, N=N)


def parir_calls(st):
    M, N = st["M"], st["N"]
    opts = parir.par({'i': parir.threads(M), 'j': parir.threads(min(N, 256))})
    return [(symm, (st["alpha"], st["beta"], st["C"], st["A"], st["B"], M, N), opts)]


def torch_step(alpha, beta, C, A, B):
    symmetric = torch.tril(A) + torch.tril(A, -1).T
    C.copy_(beta * C + alpha * (symmetric @ B))


def torch_run(st, step):
    step(st["alpha"], st["beta"], st["C"], st["A"], st["B"])


def cost(size, s):
    M, N = size["M"], size["N"]
    return {"bytes": (M * (M + 1) // 2 + 3 * M * N) * s, "flops": M * N * (2 * M + 3),
            "steps": 1}


PROGRAM = Program(
    name="symm", origin="polybench/symm",
    size_note="npbench preset L: M=350, N=550 (recalled, not checked)",
    sizes={"L": dict(M=350, N=550), "quick": dict(M=40, N=50), "ci": dict(M=5, N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("C",), mutated=("C",), cost=cost)
