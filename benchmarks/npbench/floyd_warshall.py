"""floyd_warshall (npbench polybench/floyd_warshall): all-pairs shortest paths.

    for k in range(N):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))

npbench uses int32 path lengths; here the suite's float32 and float64 (positive values, so row
and column k do not change during step k, and the rows can be updated in parallel in place).
The torch version keeps the k loop; under torch.compile k is a one-element device tensor
(`index`, `take`), so that one compiled graph serves every step.
"""

import torch

import parir_torch as parir

from .program import Program, take


@parir.jit
def floyd_warshall(path, N):
    for k in range(N):
        parir.label('i')
        for i in range(N):
            parir.label('j')
            path[i, :] = parir.min(path[i, :], path[i, k] + path[k, :])


def make_inputs(size, dtype, rng):
    N = size["N"]
    return dict(path=rng.uniform(N, N, lo=1.0, hi=10.0), N=N)


def parir_calls(st):
    N = st["N"]
    opts = parir.par({'i': parir.threads(N), 'j': parir.threads(N)})
    return [(floyd_warshall, (st["path"], N), opts)]


def torch_step(path, k):
    path[:] = torch.minimum(path, take(path, 1, k)[:, None] + take(path, 0, k)[None, :])


def torch_run(st, step, index=int):
    for k in range(st["N"]):
        step(st["path"], index(k))


def cost(size, s):
    N = size["N"]
    return {"bytes": 2 * N * N * s, "flops": 2 * N ** 3, "steps": N}


PROGRAM = Program(
    name="floyd_warshall", origin="polybench/floyd_warshall",
    size_note="npbench preset L: N=850 (recalled, not checked)",
    sizes={"L": dict(N=850), "quick": dict(N=200), "ci": dict(N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("path",), mutated=("path",), cost=cost,
    indexed_loop=True)
