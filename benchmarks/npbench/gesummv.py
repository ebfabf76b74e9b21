"""gesummv (npbench polybench/gesummv): the sum of two scaled matrix-vector products.

    y = alpha * A @ x + beta * B @ x
"""

import parir_torch as parir

from .program import Program


@parir.jit
def gesummv(alpha, beta, A, B, x, y, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        y[i] = parir.sum(alpha * A[i, :] * x[:] + beta * B[i, :] * x[:])


def make_inputs(size, dtype, rng):
    N = size["N"]
    return dict(alpha=1.5, beta=1.2, A=rng.uniform(N, N), B=rng.uniform(N, N), x=rng.uniform(N),
                y=rng.empty(N), N=N)


def parir_calls(st):
    N = st["N"]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(256)})
    return [(gesummv, (st["alpha"], st["beta"], st["A"], st["B"], st["x"], st["y"], N), opts)]


def torch_step(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def torch_run(st, step):
    st["y"] = step(st["alpha"], st["beta"], st["A"], st["B"], st["x"])


def cost(size, s):
    N = size["N"]
    return {"bytes": 2 * N * N * s + 2 * N * s, "flops": 4 * N * N, "steps": 1}


PROGRAM = Program(
    name="gesummv", origin="polybench/gesummv", size_note="npbench preset L: N=14000 (recalled)",
    sizes={"L": dict(N=14000), "quick": dict(N=1000), "ci": dict(N=9)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("y",), write_only=("y",), cost=cost)
