"""syrk (npbench polybench/syrk): symmetric rank-k update of the lower triangle of C.

    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]

No row depends on another, so the torch version is what a PyTorch user writes: one matrix
product for the whole lower triangle (the upper triangle of C is kept).
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def syrk(alpha, beta, C, A, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(i + 1):
            s = 0.0
            for k in range(M):
                s += A[i, k] * A[j, k]
            C[i, j] = beta * C[i, j] + alpha * s


def make_inputs(size, dtype, rng):
    N, M = size["N"], size["M"]
    return dict(alpha=1.5, beta=1.2, C=rng.uniform(N, N), A=rng.uniform(N, M), N=N, M=M)


def parir_calls(st):
    N = st["N"]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(min(N, 256))})
    return [(syrk, (st["alpha"], st["beta"], st["C"], st["A"], N, st["M"]), opts)]


def torch_step(alpha, beta, C, A):
    C.copy_(torch.tril(beta * C + alpha * (A @ A.T)) + torch.triu(C, 1))


def torch_run(st, step):
    step(st["alpha"], st["beta"], st["C"], st["A"])


def cost(size, s):
    N, M = size["N"], size["M"]
    tri = N * (N + 1) // 2
    return {"bytes": N * M * s + 2 * tri * s, "flops": tri * (2 * M + 3), "steps": 1}


PROGRAM = Program(
    name="syrk", origin="polybench/syrk",
    size_note="npbench preset L: M=500, N=600 (recalled, not checked)",
    sizes={"L": dict(M=500, N=600), "quick": dict(M=50, N=70), "ci": dict(M=5, N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("C",), mutated=("C",), cost=cost)
