"""covariance (npbench polybench/covariance): the covariance matrix of N samples of M variables.

    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)

The rows of cov are independent, so the torch version is what a PyTorch user writes: one
matrix product of the centred data with itself.
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def covariance(data, mean, cov, M, N, float_n):
    parir.label('j')
    for j in range(M):
        s = 0.0
        for k in range(N):
            s += data[k, j]
        mean[j] = s / float_n
    parir.label('k')
    for k in range(N):
        parir.label('j')
        data[k, :] -= mean[:]
    parir.label('i')
    for i in range(M):
        parir.label('c')
        for j in range(i, M):
            t = 0.0
            for k in range(N):
                t += data[k, i] * data[k, j]
            cov[i, j] = t / (float_n - 1.0)
            cov[j, i] = t / (float_n - 1.0)


def make_inputs(size, dtype, rng):
    M, N = size["M"], size["N"]
    return dict(data=rng.uniform(N, M), mean=rng.empty(M), cov=rng.empty(M, M), M=M, N=N,
                float_n=float(N))


def parir_calls(st):
    M, N = st["M"], st["N"]
    opts = parir.par({'j': parir.threads(M).tpb(128), 'k': parir.threads(N),
                      'i': parir.threads(M), 'c': parir.threads(min(M, 256))})
    return [(covariance, (st["data"], st["mean"], st["cov"], M, N, st["float_n"]), opts)]


def torch_step(data, float_n: float):
    data -= torch.mean(data, dim=0)
    return data.T @ data / (float_n - 1.0)


def torch_run(st, step):
    st["cov"] = step(st["data"], st["float_n"])


def cost(size, s):
    M, N = size["M"], size["N"]
    return {"bytes": (2 * N * M + M * M) * s, "flops": M * (M + 1) * N + 2 * N * M, "steps": 3}


PROGRAM = Program(
    name="covariance", origin="polybench/covariance",
    size_note="npbench preset L: M=3200, N=4000 (recalled, not checked)",
    sizes={"L": dict(M=3200, N=4000), "quick": dict(M=500, N=600), "ci": dict(M=6, N=7)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("cov", "data"), write_only=("cov",), mutated=("data",),
    cost=cost)
