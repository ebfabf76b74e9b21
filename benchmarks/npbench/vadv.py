"""vadv (npbench weather_stencils/vadv): vertical advection (COSMO weather model), a tridiagonal
solve (Thomas algorithm) down every vertical column.

The NumPy code sweeps k over all I x J columns at once: a forward sweep that builds the ccol
and dcol coefficients, then a backward substitution into utens_stage. The parir version gives
each column its own thread and runs both sweeps in it; ccol and dcol are scratch arrays the
caller provides. The torch version is the NumPy code, the k loops in Python around whole-plane
ATen operations; under torch.compile k is a one-element device tensor (`index`, `take`), so that one compiled
graph serves each kind of step. BET_M = BET_P = 0.5 as in npbench.
"""

import torch

import parir_torch as parir

from .program import Program, put_, take


@parir.jit
def vadv(utens_stage, u_stage, wcon, u_pos, utens, dtr_stage, ccol, dcol, I, J, K):
    parir.label('i')
    for i in range(I):
        parir.label('j')
        for j in range(J):
            # k = 0
            gcv = 0.25 * (wcon[i + 1, j, 1] + wcon[i, j, 1])
            cs = gcv * 0.5
            cc = gcv * 0.5
            bcol = dtr_stage - cc
            correction = -cs * (u_stage[i, j, 1] - u_stage[i, j, 0])
            dd = dtr_stage * u_pos[i, j, 0] + utens[i, j, 0] + utens_stage[i, j, 0] + correction
            divided = 1.0 / bcol
            ccol[i, j, 0] = cc * divided
            dcol[i, j, 0] = dd * divided
            # 0 < k < K - 1
            for k in range(1, K - 1):
                gav = -0.25 * (wcon[i + 1, j, k] + wcon[i, j, k])
                gcv = 0.25 * (wcon[i + 1, j, k + 1] + wcon[i, j, k + 1])
                as_ = gav * 0.5
                cs = gcv * 0.5
                acol = gav * 0.5
                cc = gcv * 0.5
                bcol = dtr_stage - acol - cc
                correction = (-as_ * (u_stage[i, j, k - 1] - u_stage[i, j, k]) -
                              cs * (u_stage[i, j, k + 1] - u_stage[i, j, k]))
                dd = dtr_stage * u_pos[i, j, k] + utens[i, j, k] + utens_stage[i, j, k] + correction
                divided = 1.0 / (bcol - ccol[i, j, k - 1] * acol)
                ccol[i, j, k] = cc * divided
                dcol[i, j, k] = (dd - dcol[i, j, k - 1] * acol) * divided
            # k = K - 1
            gav = -0.25 * (wcon[i + 1, j, K - 1] + wcon[i, j, K - 1])
            as_ = gav * 0.5
            acol = gav * 0.5
            bcol = dtr_stage - acol
            correction = -as_ * (u_stage[i, j, K - 2] - u_stage[i, j, K - 1])
            dd = (dtr_stage * u_pos[i, j, K - 1] + utens[i, j, K - 1] + utens_stage[i, j, K - 1] +
                  correction)
            divided = 1.0 / (bcol - ccol[i, j, K - 2] * acol)
            dcol[i, j, K - 1] = (dd - dcol[i, j, K - 2] * acol) * divided
            # backward substitution
            data = dcol[i, j, K - 1]
            utens_stage[i, j, K - 1] = dtr_stage * (data - u_pos[i, j, K - 1])
            for k in range(K - 2, -1, -1):
                data = dcol[i, j, k] - ccol[i, j, k] * data
                utens_stage[i, j, k] = dtr_stage * (data - u_pos[i, j, k])


def make_inputs(size, dtype, rng):
    I, J, K = size["I"], size["J"], size["K"]
    # wcon small: keeps the tridiagonal systems diagonally dominant (npbench's random wcon in
    # [0, 1) can bring a pivot near zero, where float32 and float64 part ways).
    return dict(utens_stage=rng.uniform(I, J, K), u_stage=rng.uniform(I, J, K),
                wcon=rng.uniform(I + 1, J, K, lo=0.0, hi=0.1), u_pos=rng.uniform(I, J, K),
                utens=rng.uniform(I, J, K), dtr_stage=3.0 / 20.0, ccol=rng.empty(I, J, K),
                dcol=rng.empty(I, J, K), I=I, J=J, K=K)


def parir_calls(st):
    I, J, K = st["I"], st["J"], st["K"]
    opts = parir.par({'i': parir.threads(I), 'j': parir.threads(J)})
    return [(vadv, (st["utens_stage"], st["u_stage"], st["wcon"], st["u_pos"], st["utens"],
                    st["dtr_stage"], st["ccol"], st["dcol"], I, J, K), opts)]


def forward_first(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage: float, ccol, dcol):
    k = 0
    gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
    cs = gcv * 0.5
    ccol[:, :, k] = gcv * 0.5
    bcol = dtr_stage - ccol[:, :, k]
    correction_term = -cs * (u_stage[:, :, k + 1] - u_stage[:, :, k])
    dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] +
                     correction_term)
    divided = 1.0 / bcol
    ccol[:, :, k] = ccol[:, :, k] * divided
    dcol[:, :, k] = dcol[:, :, k] * divided


def forward_step(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage: float, ccol, dcol, k):
    w_k, w_next = take(wcon, 2, k), take(wcon, 2, k + 1)
    gav = -0.25 * (w_k[1:] + w_k[:-1])
    gcv = 0.25 * (w_next[1:] + w_next[:-1])
    as_ = gav * 0.5
    cs = gcv * 0.5
    acol = gav * 0.5
    cc = gcv * 0.5
    bcol = dtr_stage - acol - cc
    u = take(u_stage, 2, k)
    correction_term = (-as_ * (take(u_stage, 2, k - 1) - u) -
                       cs * (take(u_stage, 2, k + 1) - u))
    dd = (dtr_stage * take(u_pos, 2, k) + take(utens, 2, k) + take(utens_stage, 2, k) +
          correction_term)
    divided = 1.0 / (bcol - take(ccol, 2, k - 1) * acol)
    put_(ccol, 2, k, cc * divided)
    put_(dcol, 2, k, (dd - take(dcol, 2, k - 1) * acol) * divided)


def forward_last(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage: float, ccol, dcol):
    k = wcon.shape[2] - 1
    gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
    as_ = gav * 0.5
    acol = gav * 0.5
    bcol = dtr_stage - acol
    correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k])
    dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] +
                     correction_term)
    divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
    dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided


def backward_last(u_pos, utens_stage, dtr_stage: float, dcol, data_col):
    k = utens_stage.shape[2] - 1
    data_col[:] = dcol[:, :, k]
    utens_stage[:, :, k] = dtr_stage * (data_col - u_pos[:, :, k])


def backward_step(u_pos, utens_stage, dtr_stage: float, ccol, dcol, data_col, k):
    data_col.copy_(take(dcol, 2, k) - take(ccol, 2, k) * data_col)
    put_(utens_stage, 2, k, dtr_stage * (data_col - take(u_pos, 2, k)))


def torch_step(phase, *args):
    """The torch version has five kinds of step (first, middle and last forward, last and
    other backward); compiling this dispatcher compiles each kind once."""
    return {"first": forward_first, "mid": forward_step, "last": forward_last,
            "back_last": backward_last, "back": backward_step}[phase](*args)


def torch_run(st, step, index=int):
    us, K = st["utens_stage"], st["K"]
    ccol, dcol = torch.empty_like(us), torch.empty_like(us)
    data_col = torch.empty_like(us[:, :, 0])
    fwd = (st["wcon"], st["u_stage"], st["u_pos"], st["utens"], us, st["dtr_stage"], ccol, dcol)
    step("first", *fwd)
    for k in range(1, K - 1):
        step("mid", *fwd, index(k))
    step("last", *fwd)
    step("back_last", st["u_pos"], us, st["dtr_stage"], dcol, data_col)
    for k in range(K - 2, -1, -1):
        step("back", st["u_pos"], us, st["dtr_stage"], ccol, dcol, data_col, index(k))


def cost(size, s):
    I, J, K = size["I"], size["J"], size["K"]
    return {"bytes": (6 * I * J * K + J * K) * s, "flops": 34 * I * J * K, "steps": 1}


PROGRAM = Program(
    name="vadv", origin="weather_stencils/vadv",
    size_note="npbench preset L: I=180, J=180, K=160 (recalled, not checked)",
    sizes={"L": dict(I=180, J=180, K=160), "quick": dict(I=60, J=60, K=40),
           "ci": dict(I=3, J=4, K=5)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("utens_stage",), mutated=("utens_stage",), cost=cost,
    indexed_loop=True)
