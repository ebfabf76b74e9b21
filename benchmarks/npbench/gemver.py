"""gemver (npbench polybench/gemver): a rank-2 update and two matrix-vector products.

    A += outer(u1, v1) + outer(u2, v2);  x += beta * y @ A + z;  w += alpha * A @ x
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z, partial, N, R):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        A[i, :] += u1[i] * v1[:] + u2[i] * v2[:]
    # x += beta * (y @ A) + z sums down the columns of A. For parallelism and coalesced reads
    # it runs in two phases: R chunks of rows give R partial sums per column (neighbouring
    # threads read neighbouring columns), then each column adds up its R partial sums.
    parir.label('r')
    for r in range(R):
        parir.label('c')
        for j in range(N):
            s = 0.0
            for i in range(r * N // R, (r + 1) * N // R):
                s += y[i] * A[i, j]
            partial[r, j] = s
    parir.label('c')
    for j in range(N):
        t = 0.0
        for r in range(R):
            t += partial[r, j]
        x[j] += beta * t + z[j]
    parir.label('i')
    for i in range(N):
        parir.label('k')
        w[i] += alpha * parir.sum(A[i, :] * x[:])


def make_inputs(size, dtype, rng):
    N = size["N"]
    st = {k: rng.uniform(N) for k in ("u1", "v1", "u2", "v2", "w", "x", "y", "z")}
    st.update(A=rng.uniform(N, N), alpha=1.5, beta=1.2, N=N, R=size["R"])
    st["partial"] = rng.empty(size["R"], N)
    return st


def parir_calls(st):
    N, R = st["N"], st["R"]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(1024), 'r': parir.threads(R),
                      'c': parir.threads(N).tpb(256), 'k': parir.threads(256)})
    return [(gemver, (st["alpha"], st["beta"], st["A"], st["u1"], st["v1"], st["u2"], st["v2"],
                      st["w"], st["x"], st["y"], st["z"], st["partial"], N, R), opts)]


def torch_step(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += torch.outer(u1, v1) + torch.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def torch_run(st, step):
    step(st["alpha"], st["beta"], st["A"], st["u1"], st["v1"], st["u2"], st["v2"], st["w"],
         st["x"], st["y"], st["z"])


def cost(size, s):
    N = size["N"]
    return {"bytes": 2 * N * N * s + 10 * N * s, "flops": 8 * N * N, "steps": 3}


PROGRAM = Program(
    name="gemver", origin="polybench/gemver", size_note="npbench preset L: N=10000 (recalled)",
    sizes={"L": dict(N=10000, R=64), "quick": dict(N=1000, R=16), "ci": dict(N=9, R=2)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("A", "x", "w"), mutated=("A", "x", "w"), cost=cost)
