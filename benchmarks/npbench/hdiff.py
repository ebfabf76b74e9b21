"""hdiff (npbench weather_stencils/hdiff): horizontal diffusion (COSMO weather model).

    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where((res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :])) > 0, 0, res)
    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where((res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :])) > 0, 0, res)
    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])

The parir version computes each output point in one thread with no intermediate fields: the
five Laplacians around the point (at in_field positions (a, b) = (i+2, j+2) and its four
neighbours), then the four limited fluxes through its faces.
"""

import torch

import parir_torch as parir

from .program import Program


@parir.jit
def hdiff(inf, out, coeff, I, J, K):
    parir.label('i')
    for i in range(I):
        parir.label('j')
        for j in range(J):
            parir.label('k')
            for k in range(K):
                a = i + 2
                b = j + 2
                c = inf[a, b, k]
                lap_c = 4.0 * c - (inf[a + 1, b, k] + inf[a - 1, b, k] + inf[a, b + 1, k] +
                                   inf[a, b - 1, k])
                lap_xm = 4.0 * inf[a - 1, b, k] - (c + inf[a - 2, b, k] + inf[a - 1, b + 1, k] +
                                                   inf[a - 1, b - 1, k])
                lap_xp = 4.0 * inf[a + 1, b, k] - (inf[a + 2, b, k] + c + inf[a + 1, b + 1, k] +
                                                   inf[a + 1, b - 1, k])
                lap_ym = 4.0 * inf[a, b - 1, k] - (inf[a + 1, b - 1, k] + inf[a - 1, b - 1, k] +
                                                   c + inf[a, b - 2, k])
                lap_yp = 4.0 * inf[a, b + 1, k] - (inf[a + 1, b + 1, k] + inf[a - 1, b + 1, k] +
                                                   inf[a, b + 2, k] + c)
                res = lap_c - lap_xm
                flx_m = 0.0 if res * (c - inf[a - 1, b, k]) > 0 else res
                res = lap_xp - lap_c
                flx_p = 0.0 if res * (inf[a + 1, b, k] - c) > 0 else res
                res = lap_c - lap_ym
                fly_m = 0.0 if res * (c - inf[a, b - 1, k]) > 0 else res
                res = lap_yp - lap_c
                fly_p = 0.0 if res * (inf[a, b + 1, k] - c) > 0 else res
                out[i, j, k] = c - coeff[i, j, k] * (flx_p - flx_m + fly_p - fly_m)


def make_inputs(size, dtype, rng):
    I, J, K = size["I"], size["J"], size["K"]
    return dict(in_field=rng.uniform(I + 4, J + 4, K), out_field=rng.empty(I, J, K),
                coeff=rng.uniform(I, J, K), I=I, J=J, K=K)


def parir_calls(st):
    I, J, K = st["I"], st["J"], st["K"]
    opts = parir.par({'i': parir.threads(I), 'j': parir.threads(J), 'k': parir.threads(K)})
    return [(hdiff, (st["in_field"], st["out_field"], st["coeff"], I, J, K), opts)]


def torch_step(in_field, coeff):
    I, J = coeff.shape[0], coeff.shape[1]
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = torch.where(
        (res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :])) > 0, 0, res)
    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = torch.where(
        (res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :])) > 0, 0, res)
    return in_field[2:I + 2, 2:J + 2, :] - coeff * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


def torch_run(st, step):
    st["out_field"] = step(st["in_field"], st["coeff"])


def cost(size, s):
    I, J, K = size["I"], size["J"], size["K"]
    return {"bytes": ((I + 4) * (J + 4) * K + 2 * I * J * K) * s, "flops": 51 * I * J * K,
            "steps": 1}


PROGRAM = Program(
    name="hdiff", origin="weather_stencils/hdiff",
    size_note="npbench preset L: I=384, J=384, K=160 (recalled, not checked)",
    sizes={"L": dict(I=384, J=384, K=160), "quick": dict(I=64, J=64, K=60),
           "ci": dict(I=4, J=5, K=3)},
    make_inputs=make_inputs, parir_calls=parir_calls, torch_step=torch_step,
    torch_run=torch_run, outputs=("out_field",), write_only=("out_field",), cost=cost)
