"""azimint_naive (npbench azimint_naive): azimuthal integration, the mean of the data in each of
npt radial bins, by scanning all the data once per bin.

    rmax = radius.max()
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        res[i] = data[mask_r12].mean()

The torch version takes the masked mean as a masked sum over the mask's count (data[mask]
would synchronize with the host on every bin and cannot be compiled without graph breaks). The
parir version keeps the algorithm: one block per bin scans all points (the sum and the count
are two slice reductions, two scans: a reduction loop cannot accumulate into two locals).
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def azimint_naive(data, radius, res, rmax, N, npt):
    parir.label('q')
    rmax[0] = parir.max(radius[:])
    parir.label('b')
    for i in range(npt):
        r1 = rmax[0] * i / npt
        r2 = rmax[0] * (i + 1) / npt
        parir.label('p')
        total = parir.sum(data[:] * ((r1 <= radius[:]) & (radius[:] < r2)))
        parir.label('p')
        count = parir.sum(parir.float32((r1 <= radius[:]) & (radius[:] < r2)))
        res[i] = total / count


def make_inputs(size, dtype, rng):
    N, npt = size["N"], size["npt"]
    return dict(data=rng.uniform(N), radius=rng.uniform(N, lo=0.0, hi=1.0), res=rng.empty(npt),
                rmax=rng.empty(1), N=N, npt=npt)


def parir_calls(st):
    opts = parir.par({'q': parir.threads(min(st["N"], 1 << 18)), 'b': parir.threads(st["npt"]),
                      'p': parir.threads(1024)})
    return [(azimint_naive, (st["data"], st["radius"], st["res"], st["rmax"], st["N"], st["npt"]),
             opts)]


def torch_step(data, radius, rmax, i: int, npt: int):
    r1 = rmax * i / npt
    r2 = rmax * (i + 1) / npt
    mask_r12 = torch.logical_and((r1 <= radius), (radius < r2))
    return (data * mask_r12).sum() / mask_r12.sum()


def torch_run(st, step):
    data, radius, npt = st["data"], st["radius"], st["npt"]
    rmax = radius.max()
    res = torch.empty(npt, dtype=data.dtype, device=data.device)
    for i in range(npt):
        res[i] = step(data, radius, rmax, i, npt)
    st["res"] = res


def cost(size, s):
    N, npt = size["N"], size["npt"]
    return {"bytes": 2 * N * s + npt * s, "flops": 6 * N * npt, "steps": 2}


PROGRAM = Program(
    name="azimint_naive", origin="azimint_naive",
    size_note="npbench preset L: N=40000000, npt=1000 (recalled, not checked)",
    sizes={"L": dict(N=40_000_000, npt=1000), "quick": dict(N=400_000, npt=100),
           "ci": dict(N=64, npt=4)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("res",), write_only=("res",), cost=cost, dynamic=True,
    tolerance={torch.float32: 1e-3, torch.float64: 1e-9},
    tolerance_note="float32: a point within rounding of a bin edge may land in the neighbouring "
                   "bin, which moves that bin's mean by about 1e-4")
