"""go_fast (npbench go_fast, numba's introductory example): a + sum of tanh of the diagonal.

    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace

The torch version sums tanh of the diagonal in one operation.
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def go_fast(a, out, trace, N):
    with parir.gpu:
        trace[0] = 0.0
        parir.label('d')
        for i in range(N):
            trace[0] += parir.tanh(a[i, i])
    parir.label('i')
    for i in range(N):
        parir.label('j')
        out[i, :] = a[i, :] + trace[0]


def make_inputs(size, dtype, rng):
    N = size["N"]
    return dict(a=rng.uniform(N, N), out=rng.empty(N, N), trace=rng.empty(1), N=N)


def parir_calls(st):
    N = st["N"]
    opts = parir.par({'d': parir.threads(1024).reduce(), 'i': parir.threads(N),
                      'j': parir.threads(min(N, 1024))})
    return [(go_fast, (st["a"], st["out"], st["trace"], N), opts)]


def torch_step(a):
    trace = torch.tanh(torch.diagonal(a)).sum()
    return a + trace


def torch_run(st, step):
    st["out"] = step(st["a"])


def cost(size, s):
    N = size["N"]
    return {"bytes": 2 * N * N * s, "flops": N * N + 2 * N, "steps": 2}


PROGRAM = Program(
    name="go_fast", origin="go_fast",
    size_note="npbench preset L: N=20000 (recalled, not checked)",
    sizes={"L": dict(N=20000), "quick": dict(N=2000), "ci": dict(N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("out",), write_only=("out",), cost=cost)
