"""Stencils with a host time loop, as in PolyBench and npbench: each time step launches the
kernels of its loop body, the time step's variable reaching them as an argument."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero


# ----- Jacobi 1-D (PolyBench jacobi-1d), with the weight a NumPy float32 ----------------------

@parir.jit
def parir_jacobi_1d(A, B, c, TSTEPS, N):
    for t in range(TSTEPS):
        parir.label('i')
        for i in range(1, N - 1):
            B[i] = c * (A[i - 1] + A[i] + A[i + 1])
        parir.label('i')
        for i in range(1, N - 1):
            A[i] = c * (B[i - 1] + B[i] + B[i + 1])


def case_jacobi_1d(rng, device):
    N, T = 1000, 5
    A = nonzero(N, rng, device=device)
    B = nonzero(N, rng, device=device)
    a, b = f64(A), f64(B)
    c = np.float32(1.0 / 3.0)
    for _ in range(T):
        b[1:-1] = float(c) * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = float(c) * (b[:-2] + b[1:-1] + b[2:])
    spec = {'i': parir.threads(N - 2)}
    return dict(fn=parir_jacobi_1d, args=[A, B, c, T, N], spec=spec,
                check=[(A, torch.from_numpy(a)), (B, torch.from_numpy(b))])


# ----- Jacobi 2-D (npbench jacobi_2d), written with slices ------------------------------------

@parir.jit
def parir_jacobi_2d(A, B, TSTEPS):
    for t in range(1, TSTEPS):
        parir.label('i')
        parir.label('j')
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] +
                               A[2:, 1:-1] + A[:-2, 1:-1])
        parir.label('i')
        parir.label('j')
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] +
                               B[2:, 1:-1] + B[:-2, 1:-1])


def case_jacobi_2d(rng, device):
    N, T = 33, 4
    A = nonzero((N, N), rng, dtype=torch.float64, device=device)
    B = nonzero((N, N), rng, dtype=torch.float64, device=device)
    a, b = f64(A), f64(B)
    for _ in range(1, T):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] +
                               a[:-2, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] +
                               b[:-2, 1:-1])
    spec = {'i': parir.threads(N - 2), 'j': parir.threads(N - 2)}
    return dict(fn=parir_jacobi_2d, args=[A, B, T], spec=spec,
                check=[(A, torch.from_numpy(a)), (B, torch.from_numpy(b))])


# ----- Heat equation 3-D (PolyBench heat-3d), explicit loops over three parallel levels -------

@parir.jit
def parir_heat_3d(A, B, TSTEPS, N):
    for t in range(1, TSTEPS):
        parir.label('i')
        for i in range(1, N - 1):
            parir.label('j')
            for j in range(1, N - 1):
                parir.label('k')
                for k in range(1, N - 1):
                    B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                  + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                                  + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                                  + A[i, j, k])
        parir.label('i')
        for i in range(1, N - 1):
            parir.label('j')
            for j in range(1, N - 1):
                parir.label('k')
                for k in range(1, N - 1):
                    A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                  + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                                  + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                                  + B[i, j, k])


def _heat_step(src, dst):
    c = src[1:-1, 1:-1, 1:-1]
    dst[1:-1, 1:-1, 1:-1] = (0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
                             + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
                             + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
                             + c)


def case_heat_3d(rng, device):
    N, T = 12, 3
    A = nonzero((N, N, N), rng, device=device)
    B = nonzero((N, N, N), rng, device=device)
    a, b = f64(A), f64(B)
    for _ in range(1, T):
        _heat_step(a, b)
        _heat_step(b, a)
    spec = {'i': parir.threads(N - 2), 'j': parir.threads(N - 2), 'k': parir.threads(N - 2)}
    return dict(fn=parir_heat_3d, args=[A, B, T, N], spec=spec,
                check=[(A, torch.from_numpy(a)), (B, torch.from_numpy(b))])


# ----- FDTD 2-D (PolyBench fdtd-2d): the source row read from fict[t] in the kernel -----------

@parir.jit
def parir_fdtd_2d(ex, ey, hz, fict, TMAX, NX, NY):
    for t in range(TMAX):
        parir.label('j')
        for j in range(NY):
            ey[0, j] = fict[t]
        parir.label('i')
        for i in range(1, NX):
            parir.label('j')
            for j in range(NY):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        parir.label('i')
        for i in range(NX):
            parir.label('j')
            for j in range(1, NY):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        parir.label('i')
        for i in range(NX - 1):
            parir.label('j')
            for j in range(NY - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


def case_fdtd_2d(rng, device):
    NX, NY, T = 31, 33, 4
    ex = nonzero((NX, NY), rng, dtype=torch.float64, device=device)
    ey = nonzero((NX, NY), rng, dtype=torch.float64, device=device)
    hz = nonzero((NX, NY), rng, dtype=torch.float64, device=device)
    fict = nonzero(T, rng, dtype=torch.float64, device=device)
    e_x, e_y, h_z, f = f64(ex), f64(ey), f64(hz), f64(fict)
    for t in range(T):
        e_y[0, :] = f[t]
        e_y[1:, :] -= 0.5 * (h_z[1:, :] - h_z[:-1, :])
        e_x[:, 1:] -= 0.5 * (h_z[:, 1:] - h_z[:, :-1])
        h_z[:-1, :-1] -= 0.7 * (e_x[:-1, 1:] - e_x[:-1, :-1] + e_y[1:, :-1] - e_y[:-1, :-1])
    spec = {'i': parir.threads(NX), 'j': parir.threads(NY)}
    return dict(fn=parir_fdtd_2d, args=[ex, ey, hz, fict, T, NX, NY], spec=spec,
                check=[(ex, torch.from_numpy(e_x)), (ey, torch.from_numpy(e_y)),
                       (hz, torch.from_numpy(h_z))])


CASES = {
    "jacobi_1d": case_jacobi_1d,
    "jacobi_2d": case_jacobi_2d,
    "heat_3d": case_heat_3d,
    "fdtd_2d": case_fdtd_2d,
}
