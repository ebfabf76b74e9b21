"""fdtd_2d (npbench polybench/fdtd_2d): a 2-D finite-difference time-domain field update.

    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
"""

import parir_torch as parir

from .program import Program


@parir.jit
def fdtd_2d(ex, ey, hz, fict, TMAX):
    for t in range(TMAX):
        parir.label('j')
        ey[0, :] = fict[t]
        parir.label('i')
        parir.label('j')
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        parir.label('i')
        parir.label('j')
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        parir.label('i')
        parir.label('j')
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def make_inputs(size, dtype, rng):
    NX, NY, T = size["NX"], size["NY"], size["TMAX"]
    return dict(ex=rng.uniform(NX, NY), ey=rng.uniform(NX, NY), hz=rng.uniform(NX, NY),
                fict=rng.uniform(T), TMAX=T)


def parir_calls(st):
    NX, NY = st["ex"].shape
    opts = parir.par({'i': parir.threads(NX), 'j': parir.threads(NY)})
    return [(fdtd_2d, (st["ex"], st["ey"], st["hz"], st["fict"], st["TMAX"]), opts)]


def torch_step(ex, ey, hz, fict_t):
    ey[0, :] = fict_t
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def torch_run(st, step):
    for t in range(st["TMAX"]):
        # fict[t] as a 0-d tensor view: no device-to-host copy, one compiled graph for all t.
        step(st["ex"], st["ey"], st["hz"], st["fict"][t])


def cost(size, s):
    NX, NY, T = size["NX"], size["NY"], size["TMAX"]
    return {"bytes": 6 * NX * NY * s + T * s, "flops": 11 * T * NX * NY, "steps": 2 * T}


PROGRAM = Program(
    name="fdtd_2d", origin="polybench/fdtd_2d",
    size_note="npbench preset L: TMAX=150, NX=800, NY=900 (recalled, not checked)",
    sizes={"L": dict(TMAX=150, NX=800, NY=900), "quick": dict(TMAX=20, NX=200, NY=220),
           "ci": dict(TMAX=3, NX=5, NY=6)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("ex", "ey", "hz"), mutated=("ex", "ey", "hz"), cost=cost)
