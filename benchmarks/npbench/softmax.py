"""softmax (npbench deep_learning/softmax): softmax over the last axis of a 4-D tensor.

    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def softmax(x, out, N, H, SM):
    parir.label('n')
    for n in range(N):
        parir.label('h')
        for h in range(H):
            parir.label('i')
            for i in range(SM):
                parir.label('j')
                m = parir.max(x[n, h, i, :])
                parir.label('j')
                out[n, h, i, :] = parir.exp(x[n, h, i, :] - m)
                parir.label('j')
                s = parir.sum(out[n, h, i, :])
                parir.label('j')
                out[n, h, i, :] /= s


def make_inputs(size, dtype, rng):
    N, H, SM = size["N"], size["H"], size["SM"]
    return dict(x=rng.uniform(N, H, SM, SM, lo=-2.0, hi=2.0), out=rng.empty(N, H, SM, SM),
                N=N, H=H, SM=SM)


def parir_calls(st):
    N, H, SM = st["N"], st["H"], st["SM"]
    opts = parir.par({'n': parir.threads(N), 'h': parir.threads(H), 'i': parir.threads(SM),
                      'j': parir.threads(min(SM, 256))})
    return [(softmax, (st["x"], st["out"], N, H, SM), opts)]


def torch_step(x):
    tmp_max = torch.amax(x, dim=-1, keepdim=True)
    tmp_out = torch.exp(x - tmp_max)
    tmp_sum = torch.sum(tmp_out, dim=-1, keepdim=True)
    return tmp_out / tmp_sum


def torch_run(st, step):
    st["out"] = step(st["x"])


def cost(size, s):
    n = size["N"] * size["H"] * size["SM"] ** 2
    return {"bytes": 2 * n * s, "flops": 5 * n, "steps": 1}


PROGRAM = Program(
    name="softmax", origin="deep_learning/softmax",
    size_note="npbench preset L: N=64, H=16, SM=448 (recalled, not checked)",
    sizes={"L": dict(N=64, H=16, SM=448), "quick": dict(N=8, H=4, SM=128),
           "ci": dict(N=2, H=2, SM=5)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("out",), write_only=("out",), cost=cost)
