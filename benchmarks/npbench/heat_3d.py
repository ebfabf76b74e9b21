"""heat_3d (npbench polybench/heat_3d): a seven-point 3-D stencil, TSTEPS times back and forth."""

import parir_torch as parir

from .program import Program


@parir.jit
def heat_3d(A, B, TSTEPS):
    for t in range(1, TSTEPS):
        parir.label('i')
        parir.label('j')
        parir.label('k')
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1]) +
            0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1]) +
            0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2]) +
            A[1:-1, 1:-1, 1:-1])
        parir.label('i')
        parir.label('j')
        parir.label('k')
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1]) +
            0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1]) +
            0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2]) +
            B[1:-1, 1:-1, 1:-1])


def make_inputs(size, dtype, rng):
    N = size["N"]
    return dict(A=rng.uniform(N, N, N), B=rng.uniform(N, N, N), TSTEPS=size["TSTEPS"])


def parir_calls(st):
    N = st["A"].shape[0]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(N), 'k': parir.threads(N)})
    return [(heat_3d, (st["A"], st["B"], st["TSTEPS"]), opts)]


def torch_step(A, B):
    B[1:-1, 1:-1, 1:-1] = (
        0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1]) +
        0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1]) +
        0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2]) +
        A[1:-1, 1:-1, 1:-1])
    A[1:-1, 1:-1, 1:-1] = (
        0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1]) +
        0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1]) +
        0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2]) +
        B[1:-1, 1:-1, 1:-1])


def torch_run(st, step):
    for _ in range(1, st["TSTEPS"]):
        step(st["A"], st["B"])


def cost(size, s):
    N, T = size["N"], size["TSTEPS"]
    return {"bytes": 4 * N ** 3 * s, "flops": 2 * (T - 1) * (N - 2) ** 3 * 15, "steps": 2 * (T - 1)}


PROGRAM = Program(
    name="heat_3d", origin="polybench/heat_3d",
    size_note="npbench preset L: TSTEPS=100, N=70 (recalled, not checked)",
    sizes={"L": dict(TSTEPS=100, N=70), "quick": dict(TSTEPS=10, N=25), "ci": dict(TSTEPS=3, N=6)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("A", "B"), mutated=("A", "B"), cost=cost)
