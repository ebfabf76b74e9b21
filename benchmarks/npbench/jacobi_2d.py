"""jacobi_2d (npbench polybench/jacobi_2d): a five-point stencil, TSTEPS times back and forth.

    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
"""

import parir_torch as parir

from .program import Program


@parir.jit
def jacobi_2d(A, B, TSTEPS):
    for t in range(1, TSTEPS):
        parir.label('i')
        parir.label('j')
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] +
                               A[:-2, 1:-1])
        parir.label('i')
        parir.label('j')
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] +
                               B[:-2, 1:-1])


def make_inputs(size, dtype, rng):
    N = size["N"]
    return dict(A=rng.uniform(N, N), B=rng.uniform(N, N), TSTEPS=size["TSTEPS"])


def parir_calls(st):
    N = st["A"].shape[0]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(N)})
    return [(jacobi_2d, (st["A"], st["B"], st["TSTEPS"]), opts)]


def torch_step(A, B):
    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
    A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def torch_run(st, step):
    for _ in range(1, st["TSTEPS"]):
        step(st["A"], st["B"])


def cost(size, s):
    N, T = size["N"], size["TSTEPS"]
    return {"bytes": 4 * N * N * s, "flops": 2 * (T - 1) * (N - 2) ** 2 * 5, "steps": 2 * (T - 1)}


PROGRAM = Program(
    name="jacobi_2d", origin="polybench/jacobi_2d",
    size_note="npbench preset L: TSTEPS=200, N=700 (recalled, not checked)",
    sizes={"L": dict(TSTEPS=200, N=700), "quick": dict(TSTEPS=20, N=150),
           "ci": dict(TSTEPS=3, N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("A", "B"), mutated=("A", "B"), cost=cost)
