"""Programs ported from the examples of Taichi, NVIDIA Warp and Numba's CUDA documentation, with
their authors' names, helpers, module-level constants and host loops: Taichi's fractal.py
(complex_sqr, paint(t) for a few frames), mpm88.py (a substep's grid reset, particle-to-grid
scatter with atomic adds, grid update with the boundary conditions and grid-to-particle
gather; E, p_vol, p_mass, dx, inv_dx, dt as module constants), game_of_life.py (get_alive,
get_count, calc_rule over born and survive lists), stable_fluid.py (divergence, the pressure
Jacobi iterations on a swapped pair, subtract_gradient; semi-Lagrangian advection with
bilinear sampling and a third-order Runge-Kutta backtrace, velocity and dye pairs swapped) and
mass_spring_game.py (springs, dashpots, drag and walls, Young's modulus and dampings as 0-d
fields); Warp's example_wave.py (wave_displace and wave_solve with clamped sampling and a
laplacian helper, grids swapped every substep, the time advanced on the host),
example_dem.py (contact_force, ground and particle contacts found through a uniform grid that
a user builds with atomic counts, an exclusive scan and atomic slots in place of wp.HashGrid,
then integrate) and example_raymarch.py (sdf_sphere, sdf_box, sdf_plane, op_subtract and
op_union, finite-difference normals, soft shadows, quat_rotate); Numba's CUDA examples: the
matmul of the documentation, laplace2d's Jacobi relaxation with its convergence check in a
while loop, compute_pi with xoroshiro128p_uniform_float32, the array_sum tree reduction with
@cuda.reduce's sum beside it, and blackscholes_cuda with cnd_cuda."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint
from .finance_and_statistics import RISKFREE, VOLATILITY, black_scholes_cuda


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


# ----- Taichi fractal.py: a Julia set over pixels of (n * 2, n), c turning with t, painted for
# a few frames from the host loop ------------------------------------------------------------

n = 21


def complex_sqr(z0, z1):
    return z0 * z0 - z1 * z1, z1 * z0 * 2


def paint(pixels, t):
    parir.label('i')
    for i in range(n * 2):
        parir.label('j')
        for j in range(n):  # Parallelized over all pixels
            c0, c1 = -0.8, math.cos(t) * 0.2
            z0, z1 = (i / n - 1) * 2, (j / n - 0.5) * 2
            iterations = 0
            while math.sqrt(z0 * z0 + z1 * z1) < 20 and iterations < 50:
                z0, z1 = complex_sqr(z0, z1)
                z0, z1 = z0 + c0, z1 + c1
                iterations += 1
            pixels[i, j] = 1 - iterations * 0.02


@parir.jit
def fractal(pixels, frames):
    for i in range(frames):
        paint(pixels, i * 0.03)


def case_fractal(rng, device):
    frames = 4
    t = (frames - 1) * 0.03
    I, J = np.meshgrid(np.arange(2 * n), np.arange(n), indexing="ij")
    z = ((I / n - 1) * 2) + 1j * ((J / n - 0.5) * 2)
    c = -0.8 + 1j * (math.cos(t) * 0.2)
    its = np.zeros(z.shape, dtype=np.int64)
    running = np.ones(z.shape, dtype=bool)
    for _ in range(50):
        running &= np.abs(z) < 20
        z = np.where(running, z * z + c, z)
        its += running
    assert len(np.unique(its)) > 5
    pixels = poison((2 * n, n), device=device)
    return dict(fn=fractal, args=[pixels, frames],
                spec={'i': parir.threads(2 * n), 'j': parir.threads(n)},
                check=[(pixels, torch.from_numpy(1 - its * 0.02))])


# ----- Taichi mpm88.py: 88-line MLS-MPM, a substep's P2G (atomic adds into the grid), grid
# update and G2P; Taichi's 2-vectors as the last dimension of each field ---------------------

n_particles, n_grid = 257, 33
dx = 1 / n_grid
inv_dx = float(n_grid)
dt = 2e-4

p_rho = 1
p_vol = (dx * 0.5) ** 2
p_mass = p_vol * p_rho
gravity = 9.8
bound = 3
E = 400


def quadratic_weights(fx):
    return 0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2


def pick(k, w0, w1, w2):
    return w0 if k == 0 else (w1 if k == 1 else w2)


def substep(x, v, C, J, grid_v, grid_m):
    parir.label('grid_i')
    for i in range(n_grid):
        parir.label('grid_j')
        for j in range(n_grid):
            grid_v[i, j, 0] = 0.0
            grid_v[i, j, 1] = 0.0
            grid_m[i, j] = 0.0
    parir.label('p')
    for p in range(n_particles):  # Particle state update and scatter to grid (P2G)
        Xp0 = x[p, 0] * inv_dx
        Xp1 = x[p, 1] * inv_dx
        base0 = int(Xp0 - 0.5)
        base1 = int(Xp1 - 0.5)
        fx0 = Xp0 - base0
        fx1 = Xp1 - base1
        wx0, wx1, wx2 = quadratic_weights(fx0)
        wy0, wy1, wy2 = quadratic_weights(fx1)
        stress = -dt * 4 * E * p_vol * (J[p] - 1) * inv_dx * inv_dx
        affine00 = stress + p_mass * C[p, 0, 0]
        affine01 = p_mass * C[p, 0, 1]
        affine10 = p_mass * C[p, 1, 0]
        affine11 = stress + p_mass * C[p, 1, 1]
        for i in range(3):
            for j in range(3):
                dpos0 = (i - fx0) * dx
                dpos1 = (j - fx1) * dx
                weight = pick(i, wx0, wx1, wx2) * pick(j, wy0, wy1, wy2)
                parir.atomic_add(grid_v[base0 + i, base1 + j, 0],
                                 weight * (p_mass * v[p, 0] + affine00 * dpos0 + affine01 * dpos1))
                parir.atomic_add(grid_v[base0 + i, base1 + j, 1],
                                 weight * (p_mass * v[p, 1] + affine10 * dpos0 + affine11 * dpos1))
                parir.atomic_add(grid_m[base0 + i, base1 + j], weight * p_mass)
    parir.label('grid_i')
    for i in range(n_grid):
        parir.label('grid_j')
        for j in range(n_grid):
            if grid_m[i, j] > 0:  # No need for epsilon here
                grid_v[i, j, 0] /= grid_m[i, j]
                grid_v[i, j, 1] /= grid_m[i, j]
            grid_v[i, j, 1] -= dt * gravity
            if i < bound and grid_v[i, j, 0] < 0:
                grid_v[i, j, 0] = 0
            if i > n_grid - bound and grid_v[i, j, 0] > 0:
                grid_v[i, j, 0] = 0
            if j < bound and grid_v[i, j, 1] < 0:
                grid_v[i, j, 1] = 0
            if j > n_grid - bound and grid_v[i, j, 1] > 0:
                grid_v[i, j, 1] = 0
    parir.label('p')
    for p in range(n_particles):  # grid to particle (G2P)
        Xp0 = x[p, 0] * inv_dx
        Xp1 = x[p, 1] * inv_dx
        base0 = int(Xp0 - 0.5)
        base1 = int(Xp1 - 0.5)
        fx0 = Xp0 - base0
        fx1 = Xp1 - base1
        wx0, wx1, wx2 = quadratic_weights(fx0)
        wy0, wy1, wy2 = quadratic_weights(fx1)
        new_v0, new_v1 = 0.0, 0.0
        new_C00, new_C01, new_C10, new_C11 = 0.0, 0.0, 0.0, 0.0
        for i in range(3):
            for j in range(3):
                dpos0 = (i - fx0) * dx
                dpos1 = (j - fx1) * dx
                weight = pick(i, wx0, wx1, wx2) * pick(j, wy0, wy1, wy2)
                g_v0 = grid_v[base0 + i, base1 + j, 0]
                g_v1 = grid_v[base0 + i, base1 + j, 1]
                new_v0 += weight * g_v0
                new_v1 += weight * g_v1
                new_C00 += 4 * weight * g_v0 * dpos0 * inv_dx * inv_dx
                new_C01 += 4 * weight * g_v0 * dpos1 * inv_dx * inv_dx
                new_C10 += 4 * weight * g_v1 * dpos0 * inv_dx * inv_dx
                new_C11 += 4 * weight * g_v1 * dpos1 * inv_dx * inv_dx
        v[p, 0] = new_v0
        v[p, 1] = new_v1
        x[p, 0] += dt * v[p, 0]
        x[p, 1] += dt * v[p, 1]
        J[p] *= 1 + dt * (new_C00 + new_C11)
        C[p, 0, 0] = new_C00
        C[p, 0, 1] = new_C01
        C[p, 1, 0] = new_C10
        C[p, 1, 1] = new_C11


@parir.jit
def mpm88(x, v, C, J, grid_v, grid_m, steps):
    for s in range(steps):
        substep(x, v, C, J, grid_v, grid_m)


def _mpm88_ref(x, v, C, J, steps):
    x, v, C, J = x.copy(), v.copy(), C.copy(), J.copy()
    for _ in range(steps):
        grid_v = np.zeros((n_grid, n_grid, 2))
        grid_m = np.zeros((n_grid, n_grid))
        Xp = x * n_grid
        base = (Xp - 0.5).astype(np.int64)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -dt * 4 * E * p_vol * (J - 1) * n_grid ** 2
        affine = stress[:, None, None] * np.eye(2) + p_mass * C
        for i in range(3):
            for j in range(3):
                dpos = (np.array([i, j]) - fx) * dx
                weight = w[i][:, 0] * w[j][:, 1]
                mom = weight[:, None] * (p_mass * v + np.einsum('pab,pb->pa', affine, dpos))
                np.add.at(grid_v, (base[:, 0] + i, base[:, 1] + j), mom)
                np.add.at(grid_m, (base[:, 0] + i, base[:, 1] + j), weight * p_mass)
        touched = grid_m > 0
        grid_v[touched] /= grid_m[touched][:, None]
        grid_v[:, :, 1] -= dt * gravity
        idx = np.arange(n_grid)
        gx, gy = grid_v[:, :, 0], grid_v[:, :, 1]
        gx[(idx[:, None] < bound) & (gx < 0)] = 0
        gx[(idx[:, None] > n_grid - bound) & (gx > 0)] = 0
        gy[(idx[None, :] < bound) & (gy < 0)] = 0
        gy[(idx[None, :] > n_grid - bound) & (gy > 0)] = 0
        new_v = np.zeros_like(v)
        new_C = np.zeros_like(C)
        for i in range(3):
            for j in range(3):
                dpos = (np.array([i, j]) - fx) * dx
                weight = w[i][:, 0] * w[j][:, 1]
                g_v = grid_v[base[:, 0] + i, base[:, 1] + j]
                new_v += weight[:, None] * g_v
                new_C += (4 * n_grid ** 2 * weight[:, None, None] * g_v[:, :, None]
                          * dpos[:, None, :])
        v = new_v
        x = x + dt * v
        J = J * (1 + dt * (new_C[:, 0, 0] + new_C[:, 1, 1]))
        C = new_C
    return x, v, C, J, grid_v, grid_m


def case_mpm88(rng, device):
    steps = 3
    x = positive((n_particles, 2), rng, lo=0.2, hi=0.6)
    v = nonzero((n_particles, 2), rng, lo=0.5, hi=2.0)
    C = nonzero((n_particles, 2, 2), rng, lo=1.0, hi=5.0)
    J = positive(n_particles, rng, lo=0.9, hi=1.1)
    rx, rv, rC, rJ, rgv, rgm = _mpm88_ref(f64(x), f64(v), f64(C), f64(J), steps)
    x, v, C, J = x.to(device), v.to(device), C.to(device), J.to(device)
    grid_v = poison((n_grid, n_grid, 2), device=device)
    grid_m = poison((n_grid, n_grid), device=device)
    return dict(fn=mpm88, args=[x, v, C, J, grid_v, grid_m, steps],
                spec={'grid_i': parir.threads(n_grid), 'grid_j': parir.threads(n_grid),
                      'p': parir.threads(n_particles)},
                tol=(1e-4, 1e-5),
                check=[(x, torch.from_numpy(rx)), (v, torch.from_numpy(rv)),
                       (C, torch.from_numpy(rC)), (J, torch.from_numpy(rJ)),
                       (grid_v, torch.from_numpy(rgv)), (grid_m, torch.from_numpy(rgm))])


# ----- Taichi game_of_life.py: neighbours counted through get_alive's bounds test, the rule
# from the born and survive lists -------------------------------------------------------------

def get_alive(alive, i, j):
    n = alive.shape[0]
    return alive[i, j] if 0 <= i < n and 0 <= j < n else 0


def get_count(alive, i, j):
    return (get_alive(alive, i - 1, j) + get_alive(alive, i + 1, j)
            + get_alive(alive, i, j - 1) + get_alive(alive, i, j + 1)
            + get_alive(alive, i - 1, j - 1) + get_alive(alive, i + 1, j - 1)
            + get_alive(alive, i - 1, j + 1) + get_alive(alive, i + 1, j + 1))


# See https://www.conwaylife.com/wiki/Cellular_automaton#Rules for more rules
def calc_rule(a, c, born, survive):
    if a == 0:
        for t in range(born.shape[0]):
            if c == born[t]:
                a = 1
    elif a == 1:
        a = 0
        for t in range(survive.shape[0]):
            if c == survive[t]:
                a = 1
    return a


@parir.jit
def game_of_life(alive, count, born, survive, steps):
    for s in range(steps):
        parir.label('i')
        for i in range(alive.shape[0]):
            parir.label('j')
            for j in range(alive.shape[1]):
                count[i, j] = get_count(alive, i, j)
        parir.label('i')
        for i in range(alive.shape[0]):
            parir.label('j')
            for j in range(alive.shape[1]):
                alive[i, j] = calc_rule(alive[i, j], count[i, j], born, survive)


def case_game_of_life(rng, device):
    n, steps = 23, 4
    alive = (torch.rand((n, n), generator=rng) < 0.35).to(torch.int32)
    a = alive.numpy().astype(np.int64)
    for _ in range(steps):
        p = np.pad(a, 1)
        cnt = sum(p[1 + di:n + 1 + di, 1 + dj:n + 1 + dj]
                  for di in (-1, 0, 1) for dj in (-1, 0, 1) if (di, dj) != (0, 0))
        a = np.where(a == 0, cnt == 3, (cnt == 2) | (cnt == 3)).astype(np.int64)
    assert 0 < a.sum() < n * n
    alive = alive.to(device)
    count = poison((n, n), dtype=torch.int32, device=device)
    born = torch.tensor([3], dtype=torch.int32, device=device)
    survive = torch.tensor([2, 3], dtype=torch.int32, device=device)
    return dict(fn=game_of_life, args=[alive, count, born, survive, steps],
                spec={'i': parir.threads(n), 'j': parir.threads(n)},
                check=[(alive, torch.from_numpy(a)), (count, torch.from_numpy(cnt))])



# ----- Taichi stable_fluid.py: divergence of the velocity, pressure_jacobi on the pressures'
# pair swapped after each iteration, subtract_gradient; sample clamps to the grid ------------

def sample(qf, u, v):
    res = qf.shape[0]
    I0 = max(0, min(res - 1, int(u)))
    I1 = max(0, min(res - 1, int(v)))
    return qf[I0, I1]


def sample_vec(vf, u, v):
    res = vf.shape[0]
    I0 = max(0, min(res - 1, int(u)))
    I1 = max(0, min(res - 1, int(v)))
    return vf[I0, I1, 0], vf[I0, I1, 1]


def divergence(vf, velocity_divs):
    res = vf.shape[0]
    parir.label('i')
    for i in range(res):
        parir.label('j')
        for j in range(res):
            vl_x, vl_y = sample_vec(vf, i - 1, j)
            vr_x, vr_y = sample_vec(vf, i + 1, j)
            vb_x, vb_y = sample_vec(vf, i, j - 1)
            vt_x, vt_y = sample_vec(vf, i, j + 1)
            vc_x, vc_y = sample_vec(vf, i, j)
            if i == 0:
                vl_x = -vc_x
            if i == res - 1:
                vr_x = -vc_x
            if j == 0:
                vb_y = -vc_y
            if j == res - 1:
                vt_y = -vc_y
            velocity_divs[i, j] = (vr_x - vl_x + vt_y - vb_y) * 0.5


def pressure_jacobi(pf, new_pf, velocity_divs):
    parir.label('i')
    for i in range(pf.shape[0]):
        parir.label('j')
        for j in range(pf.shape[1]):
            pl = sample(pf, i - 1, j)
            pr = sample(pf, i + 1, j)
            pb = sample(pf, i, j - 1)
            pt = sample(pf, i, j + 1)
            div = velocity_divs[i, j]
            new_pf[i, j] = (pl + pr + pb + pt - div) * 0.25


def subtract_gradient(vf, pf):
    parir.label('i')
    for i in range(vf.shape[0]):
        parir.label('j')
        for j in range(vf.shape[1]):
            pl = sample(pf, i - 1, j)
            pr = sample(pf, i + 1, j)
            pb = sample(pf, i, j - 1)
            pt = sample(pf, i, j + 1)
            vf[i, j, 0] -= 0.5 * (pr - pl)
            vf[i, j, 1] -= 0.5 * (pt - pb)


@parir.jit
def solve_pressure(velocities, velocity_divs, pressures, new_pressures, p_jacobi_iters):
    divergence(velocities, velocity_divs)
    cur, nxt = pressures, new_pressures
    for _ in range(p_jacobi_iters):
        pressure_jacobi(cur, nxt, velocity_divs)
        cur, nxt = nxt, cur
    subtract_gradient(velocities, cur)


def _clamped(f):
    return np.pad(f, [(1, 1), (1, 1)] + [(0, 0)] * (f.ndim - 2), mode="edge")


def case_stable_fluid_pressure(rng, device):
    res, p_jacobi_iters = 19, 7
    velocities = nonzero((res, res, 2), rng, lo=0.5, hi=3.0)
    pressures = nonzero((res, res), rng)
    vel, p = f64(velocities), f64(pressures)
    e = _clamped(vel)
    vl, vr = e[:-2, 1:-1, 0].copy(), e[2:, 1:-1, 0].copy()
    vb, vt = e[1:-1, :-2, 1].copy(), e[1:-1, 2:, 1].copy()
    vl[0, :], vr[-1, :] = -vel[0, :, 0], -vel[-1, :, 0]
    vb[:, 0], vt[:, -1] = -vel[:, 0, 1], -vel[:, -1, 1]
    divs = (vr - vl + vt - vb) * 0.5
    states = [p]
    for _ in range(p_jacobi_iters):
        e = _clamped(states[-1])
        states.append((e[:-2, 1:-1] + e[2:, 1:-1] + e[1:-1, :-2] + e[1:-1, 2:] - divs) * 0.25)
    e = _clamped(states[-1])
    new_vel = vel.copy()
    new_vel[:, :, 0] -= 0.5 * (e[2:, 1:-1] - e[:-2, 1:-1])
    new_vel[:, :, 1] -= 0.5 * (e[1:-1, 2:] - e[1:-1, :-2])
    velocities = velocities.to(device)
    pressures = pressures.to(device)
    velocity_divs = poison((res, res), device=device)
    new_pressures = poison((res, res), device=device)
    return dict(fn=solve_pressure,
                args=[velocities, velocity_divs, pressures, new_pressures, p_jacobi_iters],
                spec={'i': parir.threads(res), 'j': parir.threads(res)},
                check=[(velocity_divs, torch.from_numpy(divs)),
                       (new_pressures, torch.from_numpy(states[-1])),
                       (pressures, torch.from_numpy(states[-2])),
                       (velocities, torch.from_numpy(new_vel))])


# ----- Taichi stable_fluid.py: advect with bilerp and a third-order Runge-Kutta backtrace, the
# velocity advected by itself and the dye by the velocity, both pairs swapped --------------

def sample_k(qf, u, v, k):
    res = qf.shape[0]
    I0 = max(0, min(res - 1, int(u)))
    I1 = max(0, min(res - 1, int(v)))
    return qf[I0, I1, k]


def lerp(vl, vr, frac):
    # frac: [0.0, 1.0]
    return vl + frac * (vr - vl)


def bilerp(vf, u, v, k):
    s, t = u - 0.5, v - 0.5
    # floor
    iu, iv = parir.floor(s), parir.floor(t)
    # fract
    fu, fv = s - iu, t - iv
    a = sample_k(vf, iu, iv, k)
    b = sample_k(vf, iu + 1, iv, k)
    c = sample_k(vf, iu, iv + 1, k)
    d = sample_k(vf, iu + 1, iv + 1, k)
    return lerp(lerp(a, b, fu), lerp(c, d, fu), fv)


# 3rd order Runge-Kutta
def backtrace(vf, p_x, p_y, dt_):
    v1_x, v1_y = bilerp(vf, p_x, p_y, 0), bilerp(vf, p_x, p_y, 1)
    p1_x, p1_y = p_x - 0.5 * dt_ * v1_x, p_y - 0.5 * dt_ * v1_y
    v2_x, v2_y = bilerp(vf, p1_x, p1_y, 0), bilerp(vf, p1_x, p1_y, 1)
    p2_x, p2_y = p_x - 0.75 * dt_ * v2_x, p_y - 0.75 * dt_ * v2_y
    v3_x, v3_y = bilerp(vf, p2_x, p2_y, 0), bilerp(vf, p2_x, p2_y, 1)
    p_x -= dt_ * ((2 / 9) * v1_x + (1 / 3) * v2_x + (4 / 9) * v3_x)
    p_y -= dt_ * ((2 / 9) * v1_y + (1 / 3) * v2_y + (4 / 9) * v3_y)
    return p_x, p_y


def advect(vf, qf, new_qf, dt):
    parir.label('i')
    for i in range(vf.shape[0]):
        parir.label('j')
        for j in range(vf.shape[1]):
            p_x, p_y = i + 0.5, j + 0.5
            p_x, p_y = backtrace(vf, p_x, p_y, dt)
            for k in range(qf.shape[2]):
                new_qf[i, j, k] = bilerp(qf, p_x, p_y, k)


@parir.jit
def advect_fluid(velocities, new_velocities, dyes, new_dyes, dt, steps):
    vel_cur, vel_nxt = velocities, new_velocities
    dyes_cur, dyes_nxt = dyes, new_dyes
    for s in range(steps):
        advect(vel_cur, vel_cur, vel_nxt, dt)
        advect(vel_cur, dyes_cur, dyes_nxt, dt)
        vel_cur, vel_nxt = vel_nxt, vel_cur
        dyes_cur, dyes_nxt = dyes_nxt, dyes_cur


def _bilerp_ref(q, px, py):
    res = q.shape[0]
    s, t = px - 0.5, py - 0.5
    iu, iv = np.floor(s), np.floor(t)
    fu, fv = (s - iu)[..., None], (t - iv)[..., None]

    def at(a, b):
        return q[np.clip(a.astype(np.int64), 0, res - 1), np.clip(b.astype(np.int64), 0, res - 1)]

    a, b, c, d = at(iu, iv), at(iu + 1, iv), at(iu, iv + 1), at(iu + 1, iv + 1)
    lo, hi = a + fu * (b - a), c + fu * (d - c)
    return lo + fv * (hi - lo)


def _advect_ref(vel, q, dt):
    res = vel.shape[0]
    I, J = np.meshgrid(np.arange(res), np.arange(res), indexing="ij")
    p = np.stack([I + 0.5, J + 0.5], -1)
    v1 = _bilerp_ref(vel, p[..., 0], p[..., 1])
    p1 = p - 0.5 * dt * v1
    v2 = _bilerp_ref(vel, p1[..., 0], p1[..., 1])
    p2 = p - 0.75 * dt * v2
    v3 = _bilerp_ref(vel, p2[..., 0], p2[..., 1])
    p = p - dt * ((2 / 9) * v1 + (1 / 3) * v2 + (4 / 9) * v3)
    return _bilerp_ref(q, p[..., 0], p[..., 1])


def case_stable_fluid_advect(rng, device):
    res, steps, dt = 11, 3, 0.03
    velocities = nonzero((res, res, 2), rng, lo=5.0, hi=30.0)
    dyes = positive((res, res, 3), rng)
    vel, dye = [f64(velocities)], [f64(dyes)]
    for _ in range(steps):
        v = vel[-1]
        vel.append(_advect_ref(v, v, dt))
        dye.append(_advect_ref(v, dye[-1], dt))
    velocities, dyes = velocities.to(device), dyes.to(device)
    new_velocities = poison((res, res, 2), device=device)
    new_dyes = poison((res, res, 3), device=device)
    return dict(fn=advect_fluid, args=[velocities, new_velocities, dyes, new_dyes, dt, steps],
                spec={'i': parir.threads(res), 'j': parir.threads(res)},
                check=[(new_velocities, torch.from_numpy(vel[3])),
                       (velocities, torch.from_numpy(vel[2])),
                       (new_dyes, torch.from_numpy(dye[3])),
                       (dyes, torch.from_numpy(dye[2]))])


# ----- Taichi mass_spring_game.py: substep's forces (gravity, springs, dashpots), semi-implicit
# Euler with drag, fixed particles and the four walls; spring_Y and the dampings as 0-d fields

particle_mass = 1.0


def mass_spring_substep(x, v, f, fixed, rest_length, spring_Y, dashpot_damping, drag_damping,
                        num_particles, dt):
    n = num_particles
    # Compute force
    parir.label('i')
    for i in range(n):
        # Gravity
        f[i, 0] = 0.0 * particle_mass
        f[i, 1] = -9.8 * particle_mass
        for j in range(n):
            if rest_length[i, j] != 0:
                x_ij_x = x[i, 0] - x[j, 0]
                x_ij_y = x[i, 1] - x[j, 1]
                x_ij_norm = math.sqrt(x_ij_x * x_ij_x + x_ij_y * x_ij_y)
                d_x = x_ij_x / x_ij_norm
                d_y = x_ij_y / x_ij_norm
                # Spring force
                f[i, 0] += -spring_Y * (x_ij_norm / rest_length[i, j] - 1) * d_x
                f[i, 1] += -spring_Y * (x_ij_norm / rest_length[i, j] - 1) * d_y
                # Dashpot damping
                v_rel = (v[i, 0] - v[j, 0]) * d_x + (v[i, 1] - v[j, 1]) * d_y
                f[i, 0] += -dashpot_damping * v_rel * d_x
                f[i, 1] += -dashpot_damping * v_rel * d_y
    # We use a semi-implicit Euler (aka symplectic Euler) time integrator
    parir.label('i')
    for i in range(n):
        if not fixed[i]:
            v[i, 0] += dt * f[i, 0] / particle_mass
            v[i, 1] += dt * f[i, 1] / particle_mass
            v[i, 0] *= math.exp(-dt * drag_damping)  # Drag damping
            v[i, 1] *= math.exp(-dt * drag_damping)
            x[i, 0] += v[i, 0] * dt
            x[i, 1] += v[i, 1] * dt
        else:
            v[i, 0] = 0
            v[i, 1] = 0
        # Collide with four walls
        for d in range(2):
            # d = 0: treating X (horizontal) component
            # d = 1: treating Y (vertical) component
            if x[i, d] < 0:  # Bottom and left
                x[i, d] = 0  # move particle inside
                v[i, d] = 0  # stop it from moving further
            if x[i, d] > 1:  # Top and right
                x[i, d] = 1  # move particle inside
                v[i, d] = 0  # stop it from moving further


@parir.jit
def mass_spring(x, v, f, fixed, rest_length, spring_Y, dashpot_damping, drag_damping,
                num_particles, dt, substeps):
    for step in range(substeps):
        mass_spring_substep(x, v, f, fixed, rest_length, spring_Y, dashpot_damping,
                            drag_damping, num_particles, dt)


def case_mass_spring(rng, device):
    num_particles, substeps, dt = 45, 10, 1e-3
    connection_radius = 0.15
    x = positive((num_particles, 2), rng, lo=0.05, hi=0.95)
    v = nonzero((num_particles, 2), rng, lo=0.1, hi=1.0)
    x[0], v[0] = torch.tensor([0.002, 0.5]), torch.tensor([-3.0, 0.2])   # into the left wall
    x[1], v[1] = torch.tensor([0.5, 0.998]), torch.tensor([0.1, 3.0])    # into the top
    fixed = (torch.arange(num_particles) % 11 == 5).to(torch.int32)
    X = f64(x)
    dist = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    rest = np.where((dist < connection_radius) & (dist > 0), dist, 0.0)
    assert (rest > 0).sum() > 2 * num_particles
    rest_length = torch.from_numpy(rest).float()
    spring_Y = torch.tensor([1000.0])
    dashpot_damping = torch.tensor([100.0])
    drag_damping = torch.tensor([1.0])
    R, xs, vs, fx = f64(rest_length), X.copy(), f64(v), f64(fixed).astype(bool)
    walls = 0
    for _ in range(substeps):
        xij = xs[:, None, :] - xs[None, :, :]
        norm = np.sqrt((xij ** 2).sum(-1))
        spring = R != 0
        safe = np.where(spring, norm, 1.0)
        d = xij / safe[..., None]
        coef = np.where(spring, -1000.0 * (safe / np.where(spring, R, 1.0) - 1), 0.0)
        vrel = ((vs[:, None, :] - vs[None, :, :]) * d).sum(-1)
        coef = coef + np.where(spring, -100.0 * vrel, 0.0)
        f = (coef[..., None] * d).sum(1) + np.array([0.0, -9.8]) * particle_mass
        vs = np.where(fx[:, None], 0.0, (vs + dt * f / particle_mass) * np.exp(-dt * 1.0))
        xs = np.where(fx[:, None], xs, xs + vs * dt)
        out = (xs < 0) | (xs > 1)
        xs, vs = np.clip(xs, 0, 1), np.where(out, 0.0, vs)
        walls += out.sum()
    assert walls >= 2
    f_out = poison((num_particles, 2), device=device)
    x, v = x.to(device), v.to(device)
    return dict(fn=mass_spring,
                args=[x, v, f_out, fixed.to(device), rest_length.to(device), spring_Y.to(device),
                      dashpot_damping.to(device), drag_damping.to(device), num_particles, dt,
                      substeps],
                spec={'i': parir.threads(num_particles)},
                check=[(x, torch.from_numpy(xs)), (v, torch.from_numpy(vs)),
                       (f_out, torch.from_numpy(f))])



# ----- Warp example_wave.py: wave_displace around a point that circles with sim_time, then
# wave_solve's leapfrog step with a clamped laplacian, the grids swapped each substep --------

def wave_sample(f, x, y, width, height):
    # clamp texture coords
    x = parir.clamp(x, 0, width - 1)
    y = parir.clamp(y, 0, height - 1)
    s = f[y * width + x]
    return s


def laplacian(f, x, y, width, height):
    ddx = (wave_sample(f, x + 1, y, width, height) - 2.0 * wave_sample(f, x, y, width, height)
           + wave_sample(f, x - 1, y, width, height))
    ddy = (wave_sample(f, x, y + 1, width, height) - 2.0 * wave_sample(f, x, y, width, height)
           + wave_sample(f, x, y - 1, width, height))
    return ddx + ddy


def wave_displace(hcurrent, hprevious, width, height, center_x, center_y, r, mag, t):
    parir.label('tid')
    for tid in range(width * height):
        x = tid % width
        y = tid // width
        dx = float(x) - center_x
        dy = float(y) - center_y
        dist_sq = float(dx * dx + dy * dy)
        if dist_sq < r * r:
            h = mag * math.sin(t)
            hcurrent[tid] = h
            hprevious[tid] = h


def wave_solve(hprevious, hcurrent, width, height, inv_cell, k_speed, k_damp, dt):
    parir.label('tid')
    for tid in range(width * height):
        x = tid % width
        y = tid // width
        l = laplacian(hcurrent, x, y, width, height) * inv_cell * inv_cell
        # integrate
        h1 = hcurrent[tid]
        h0 = hprevious[tid]
        h = 2.0 * h1 - h0 + dt * dt * (k_speed * l - k_damp * (h1 - h0))
        # buffers get swapped each iteration
        hprevious[tid] = h


@parir.jit
def wave_step(sim_grid0, sim_grid1, sim_width, sim_height, sim_substeps, sim_dt, grid_size,
              grid_displace, k_speed, k_damp):
    sim_time = 0.0
    for _s in range(sim_substeps):
        # create surface displacement around a point
        cx = sim_width / 2 + math.sin(sim_time) * sim_width / 3
        cy = sim_height / 2 + math.cos(sim_time) * sim_height / 3
        wave_displace(sim_grid0, sim_grid1, sim_width, sim_height, cx, cy, 5.0, grid_displace,
                      -math.pi * 0.5)
        # integrate wave equation
        wave_solve(sim_grid0, sim_grid1, sim_width, sim_height, 1.0 / grid_size, k_speed, k_damp,
                   sim_dt)
        # swap grids
        (sim_grid0, sim_grid1) = (sim_grid1, sim_grid0)
        sim_time += sim_dt


def case_warp_wave(rng, device):
    sim_width, sim_height, sim_substeps = 37, 29, 6
    sim_dt = (1.0 / 60.0) / sim_substeps * 20.0
    grid_size, grid_displace, k_speed, k_damp = 0.1, 0.5, 1.0, 0.3
    g0 = nonzero(sim_width * sim_height, rng, lo=0.01, hi=0.1)
    g1 = nonzero(sim_width * sim_height, rng, lo=0.01, hi=0.1)
    a, b = f64(g0).reshape(sim_height, sim_width), f64(g1).reshape(sim_height, sim_width)
    Y, X = np.meshgrid(np.arange(sim_height), np.arange(sim_width), indexing="ij")
    sim_time = 0.0
    for _ in range(sim_substeps):
        cx = sim_width / 2 + math.sin(sim_time) * sim_width / 3
        cy = sim_height / 2 + math.cos(sim_time) * sim_height / 3
        inside = (X - cx) ** 2 + (Y - cy) ** 2 < 25.0
        a[inside] = b[inside] = grid_displace * math.sin(-math.pi * 0.5)
        e = np.pad(b, 1, mode="edge")
        lap = (e[1:-1, 2:] + e[1:-1, :-2] + e[2:, 1:-1] + e[:-2, 1:-1] - 4.0 * b) / grid_size ** 2
        a = 2.0 * b - a + sim_dt * sim_dt * (k_speed * lap - k_damp * (b - a))
        a, b = b, a
        sim_time += sim_dt
    sim_grid0, sim_grid1 = g0.to(device), g1.to(device)
    return dict(fn=wave_step,
                args=[sim_grid0, sim_grid1, sim_width, sim_height, sim_substeps, sim_dt,
                      grid_size, grid_displace, k_speed, k_damp],
                spec={'tid': parir.threads(sim_width * sim_height)},
                check=[(sim_grid0, torch.from_numpy(a.ravel())),
                       (sim_grid1, torch.from_numpy(b.ravel()))])


# ----- Warp example_dem.py: contact_force against the ground and between particles, the
# neighbours found through a uniform grid built each substep (atomic counts, an exclusive scan
# of them, atomic slots) where Warp queries a wp.HashGrid, then integrate ---------------------

def contact_force(n_x, n_y, n_z, v_x, v_y, v_z, c, k_n, k_d, k_f, k_mu):
    vn = n_x * v_x + n_y * v_y + n_z * v_z
    jn = c * k_n
    jd = min(vn, 0.0) * k_d
    # contact force
    fn = jn + jd
    # friction force
    vt_x, vt_y, vt_z = v_x - n_x * vn, v_y - n_y * vn, v_z - n_z * vn
    vs = math.sqrt(vt_x * vt_x + vt_y * vt_y + vt_z * vt_z)
    if vs > 0.0:
        vt_x, vt_y, vt_z = vt_x / vs, vt_y / vs, vt_z / vs
    # Coulomb condition
    ft = min(vs * k_f, k_mu * abs(fn))
    # total force
    return -n_x * fn - vt_x * ft, -n_y * fn - vt_y * ft, -n_z * fn - vt_z * ft


def cell_of(p, cell_inv, dim):
    return min(max(math.floor(p * cell_inv), 0), dim - 1)


def build_grid(particle_x, particle_cell, cell_count, cell_start, cell_fill, sorted_ids,
               cell_inv, dim_x, dim_y, dim_z, num_particles):
    parir.label('cell')
    for c in range(dim_x * dim_y * dim_z):
        cell_count[c] = 0
        cell_fill[c] = 0
    parir.label('tid')
    for tid in range(num_particles):
        cx = cell_of(particle_x[tid, 0], cell_inv, dim_x)
        cy = cell_of(particle_x[tid, 1], cell_inv, dim_y)
        cz = cell_of(particle_x[tid, 2], cell_inv, dim_z)
        c = (cx * dim_y + cy) * dim_z + cz
        particle_cell[tid] = c
        parir.atomic_add(cell_count[c], 1)
    parir.label('scan')
    cell_start[:] = parir.cumsum(cell_count[:], exclusive=True)
    parir.label('tid')
    for tid in range(num_particles):
        c = particle_cell[tid]
        slot = parir.atomic_add(cell_fill[c], 1)
        sorted_ids[cell_start[c] + slot] = tid


def apply_forces(particle_x, particle_v, particle_f, cell_count, cell_start, sorted_ids, radius,
                 k_contact, k_damp, k_friction, k_mu, cell_inv, dim_x, dim_y, dim_z,
                 num_particles):
    parir.label('tid')
    for tid in range(num_particles):
        i = tid
        x_x, x_y, x_z = particle_x[i, 0], particle_x[i, 1], particle_x[i, 2]
        v_x, v_y, v_z = particle_v[i, 0], particle_v[i, 1], particle_v[i, 2]
        f_x, f_y, f_z = 0.0, 0.0, 0.0
        # ground contact
        c = x_y
        cohesion_ground = 0.02
        cohesion_particle = 0.0075
        if c < cohesion_ground:
            g_x, g_y, g_z = contact_force(0.0, 1.0, 0.0, v_x, v_y, v_z, c, k_contact, k_damp,
                                          100.0, 0.5)
            f_x, f_y, f_z = f_x + g_x, f_y + g_y, f_z + g_z
        # particle contact
        cx = cell_of(x_x, cell_inv, dim_x)
        cy = cell_of(x_y, cell_inv, dim_y)
        cz = cell_of(x_z, cell_inv, dim_z)
        for gx in range(max(cx - 1, 0), min(cx + 2, dim_x)):
            for gy in range(max(cy - 1, 0), min(cy + 2, dim_y)):
                for gz in range(max(cz - 1, 0), min(cz + 2, dim_z)):
                    cell = (gx * dim_y + gy) * dim_z + gz
                    for k in range(cell_start[cell], cell_start[cell] + cell_count[cell]):
                        index = sorted_ids[k]
                        if index != i:
                            # compute distance to point
                            n_x = x_x - particle_x[index, 0]
                            n_y = x_y - particle_x[index, 1]
                            n_z = x_z - particle_x[index, 2]
                            d = math.sqrt(n_x * n_x + n_y * n_y + n_z * n_z)
                            err = d - radius * 2.0
                            if err <= cohesion_particle:
                                n_x, n_y, n_z = n_x / d, n_y / d, n_z / d
                                vrel_x = v_x - particle_v[index, 0]
                                vrel_y = v_y - particle_v[index, 1]
                                vrel_z = v_z - particle_v[index, 2]
                                g_x, g_y, g_z = contact_force(n_x, n_y, n_z, vrel_x, vrel_y,
                                                              vrel_z, err, k_contact, k_damp,
                                                              k_friction, k_mu)
                                f_x, f_y, f_z = f_x + g_x, f_y + g_y, f_z + g_z
        particle_f[i, 0] = f_x
        particle_f[i, 1] = f_y
        particle_f[i, 2] = f_z


def integrate(x, v, f, gravity, dt, inv_mass, num_particles):
    parir.label('tid')
    for tid in range(num_particles):
        for k in range(3):
            v_new = v[tid, k] + f[tid, k] * inv_mass * dt + gravity[k] * dt
            x_new = x[tid, k] + v_new * dt
            v[tid, k] = v_new
            x[tid, k] = x_new


@parir.jit
def dem_simulate(particle_x, particle_v, particle_f, particle_cell, cell_count, cell_start,
                 cell_fill, sorted_ids, gravity, point_radius, k_contact, k_damp, k_friction,
                 k_mu, inv_mass, cell_inv, dim_x, dim_y, dim_z, sim_dt, sim_substeps):
    num_particles = particle_x.shape[0]
    for _s in range(sim_substeps):
        build_grid(particle_x, particle_cell, cell_count, cell_start, cell_fill, sorted_ids,
                   cell_inv, dim_x, dim_y, dim_z, num_particles)
        apply_forces(particle_x, particle_v, particle_f, cell_count, cell_start, sorted_ids,
                     point_radius, k_contact, k_damp, k_friction, k_mu, cell_inv, dim_x, dim_y,
                     dim_z, num_particles)
        integrate(particle_x, particle_v, particle_f, gravity, sim_dt, inv_mass, num_particles)


def _contact_force_ref(n, v, c, k_n, k_d, k_f, k_mu):
    vn = (n * v).sum(-1)
    fn = c * k_n + np.minimum(vn, 0.0) * k_d
    vt = v - n * vn[..., None]
    vs = np.sqrt((vt * vt).sum(-1))
    vt = np.where(vs[..., None] > 0.0, vt / np.where(vs > 0.0, vs, 1.0)[..., None], vt)
    ft = np.minimum(vs * k_f, k_mu * np.abs(fn))
    return -n * fn[..., None] - vt * ft[..., None]


def case_warp_dem(rng, device):
    point_radius, k_contact, k_damp, k_friction, k_mu = 0.1, 8000.0, 2.0, 1.0, 100000.0
    inv_mass, sim_substeps = 64.0, 3
    sim_dt = (1.0 / 60.0) / 64
    cell_inv, dim_x, dim_y, dim_z = 4.0, 6, 6, 6
    g = np.stack(np.meshgrid(np.arange(5), np.arange(4), np.arange(5), indexing="ij"), -1)
    lattice = torch.from_numpy(g.reshape(-1, 3) * 0.2 + np.array([0.3, 0.01, 0.3]))
    particle_x = (lattice + nonzero((100, 3), rng, lo=0.0, hi=0.006, dtype=torch.float64)).float()
    particle_v = nonzero((100, 3), rng, lo=0.0, hi=0.5)
    gravity = torch.tensor([0.0, -9.8, 0.0])
    x, v, grav = f64(particle_x), f64(particle_v), f64(gravity)
    num_contacts = 0
    for _ in range(sim_substeps):
        last_x = x.copy()
        f = np.zeros_like(x)
        ground = x[:, 1] < 0.02
        gf = _contact_force_ref(np.array([0.0, 1.0, 0.0]), v, x[:, 1], k_contact, k_damp, 100.0,
                                0.5)
        f += np.where(ground[:, None], gf, 0.0)
        nv = x[:, None, :] - x[None, :, :]
        d = np.sqrt((nv * nv).sum(-1))
        err = d - point_radius * 2.0
        touch = (err <= 0.0075) & ~np.eye(len(x), dtype=bool)
        num_contacts += touch.sum()
        safe = np.where(touch, d, 1.0)
        pf = _contact_force_ref(nv / safe[..., None], v[:, None, :] - v[None, :, :], err,
                                k_contact, k_damp, k_friction, k_mu)
        f += np.where(touch[..., None], pf, 0.0).sum(1)
        v = v + f * inv_mass * sim_dt + grav * sim_dt
        x = x + v * sim_dt
    assert num_contacts > 50 and ground.sum() > 5
    cells = np.clip(np.floor(last_x * cell_inv), 0, [dim_x - 1, dim_y - 1, dim_z - 1]).astype(int)
    cell_ids = (cells[:, 0] * dim_y + cells[:, 1]) * dim_z + cells[:, 2]
    counts = np.bincount(cell_ids, minlength=dim_x * dim_y * dim_z)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ncells = dim_x * dim_y * dim_z
    particle_x, particle_v = particle_x.to(device), particle_v.to(device)
    particle_f = poison((100, 3), device=device)
    particle_cell = poison(100, dtype=torch.int32, device=device)
    cell_count = poison(ncells, dtype=torch.int32, device=device)
    cell_start = poison(ncells, dtype=torch.int32, device=device)
    cell_fill = poison(ncells, dtype=torch.int32, device=device)
    sorted_ids = poison(100, dtype=torch.int32, device=device)
    return dict(fn=dem_simulate,
                args=[particle_x, particle_v, particle_f, particle_cell, cell_count, cell_start,
                      cell_fill, sorted_ids, gravity.to(device), point_radius, k_contact, k_damp,
                      k_friction, k_mu, inv_mass, cell_inv, dim_x, dim_y, dim_z, sim_dt,
                      sim_substeps],
                spec={'cell': parir.threads(ncells), 'tid': parir.threads(100),
                      'scan': parir.threads(256).scan()},
                check=[(particle_x, torch.from_numpy(x)), (particle_v, torch.from_numpy(v)),
                       (particle_f, torch.from_numpy(f)),
                       (particle_cell, torch.from_numpy(cell_ids)),
                       (cell_count, torch.from_numpy(counts)),
                       (cell_fill, torch.from_numpy(counts)),
                       (cell_start, torch.from_numpy(starts))])



# ----- Warp example_raymarch.py: a sphere carved out of a box over a ground plane, sphere
# tracing for a fixed number of steps, finite-difference normals, a soft shadow; Warp's vec3
# and quat as scalars, the view ray turned by quat_rotate ----------------------------------

def sdf_sphere(p_x, p_y, p_z, r):
    return math.sqrt(p_x * p_x + p_y * p_y + p_z * p_z) - r


def sdf_box(upper_x, upper_y, upper_z, p_x, p_y, p_z):
    qx = abs(p_x) - upper_x
    qy = abs(p_y) - upper_y
    qz = abs(p_z) - upper_z
    e_x, e_y, e_z = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
    return math.sqrt(e_x * e_x + e_y * e_y + e_z * e_z) + min(max(qx, max(qy, qz)), 0.0)


def sdf_plane(p_x, p_y, p_z, plane_0, plane_1, plane_2, plane_3):
    return plane_0 * p_x + plane_1 * p_y + plane_2 * p_z + plane_3


def op_union(d1, d2):
    return min(d1, d2)


def op_subtract(d1, d2):
    return max(-d1, d2)


# simple scene
def sdf(p_x, p_y, p_z):
    d = op_subtract(sdf_sphere(p_x - 0.0, p_y - 0.75, p_z - 0.0, 0.75),
                    sdf_box(1.0, 0.5, 0.5, p_x, p_y, p_z))
    # ground plane
    d = op_union(d, sdf_plane(p_x, p_y, p_z, 0.0, 1.0, 0.0, 1.0))
    return d


def normalize(v_x, v_y, v_z):
    inv = 1.0 / math.sqrt(v_x * v_x + v_y * v_y + v_z * v_z)
    return v_x * inv, v_y * inv, v_z * inv


def normal(p_x, p_y, p_z):
    eps = 1.0e-5
    # compute gradient of the SDF using finite differences
    dx = sdf(p_x + eps, p_y, p_z) - sdf(p_x - eps, p_y, p_z)
    dy = sdf(p_x, p_y + eps, p_z) - sdf(p_x, p_y - eps, p_z)
    dz = sdf(p_x, p_y, p_z + eps) - sdf(p_x, p_y, p_z - eps)
    return normalize(dx, dy, dz)


def shadow(ro_x, ro_y, ro_z, rd_x, rd_y, rd_z):
    t = float(0.0)
    s = float(1.0)
    escaped = False
    for _ in range(64):
        if not escaped:
            d = sdf(ro_x + t * rd_x, ro_y + t * rd_y, ro_z + t * rd_z)
            t = t + parir.clamp(d, 0.0001, 2.0)
            h = parir.clamp(4.0 * d / t, 0.0, 1.0)
            s = min(s, h * h * (3.0 - 2.0 * h))
            if t > 8.0:
                escaped = True
    return 1.0 if escaped else s


def quat_rotate(q_x, q_y, q_z, q_w, x_0, x_1, x_2):
    c = 2.0 * q_w * q_w - 1.0
    d = 2.0 * (q_x * x_0 + q_y * x_1 + q_z * x_2)
    return (x_0 * c + q_x * d + (q_y * x_2 - q_z * x_1) * q_w * 2.0,
            x_1 * c + q_y * d + (q_z * x_0 - q_x * x_2) * q_w * 2.0,
            x_2 * c + q_z * d + (q_x * x_1 - q_y * x_0) * q_w * 2.0)


@parir.jit
def draw(cam_pos_x, cam_pos_y, cam_pos_z, cam_rot_x, cam_rot_y, cam_rot_z, cam_rot_w, width,
         height, pixels):
    parir.label('tid')
    for tid in range(width * height):
        x = tid % width
        y = tid // width
        # compute pixel coordinates
        sx = (2.0 * float(x) - float(width)) / float(height)
        sy = (2.0 * float(y) - float(height)) / float(height)
        # compute view ray
        ro_x, ro_y, ro_z = cam_pos_x, cam_pos_y, cam_pos_z
        n_x, n_y, n_z = normalize(sx, sy, -2.0)
        rd_x, rd_y, rd_z = quat_rotate(cam_rot_x, cam_rot_y, cam_rot_z, cam_rot_w, n_x, n_y, n_z)
        t = float(0.0)
        d = float(0.0)
        # ray march
        for _ in range(64):
            d = sdf(ro_x + rd_x * t, ro_y + rd_y * t, ro_z + rd_z * t)
            t = t + d
        if d < 0.01:
            p_x, p_y, p_z = ro_x + rd_x * t, ro_y + rd_y * t, ro_z + rd_z * t
            n_x, n_y, n_z = normal(p_x, p_y, p_z)
            l_x, l_y, l_z = normalize(0.6, 0.4, 0.5)
            # half-vector
            h_x, h_y, h_z = normalize(l_x - rd_x, l_y - rd_y, l_z - rd_z)
            diffuse = n_x * l_x + n_y * l_y + n_z * l_z
            specular = parir.clamp(n_x * h_x + n_y * h_y + n_z * h_z, 0.0, 1.0) ** 80.0
            fresnel = 0.04 + 0.96 * parir.clamp(1.0 - (h_x * l_x + h_y * l_y + h_z * l_z),
                                                0.0, 1.0) ** 5.0
            intensity = 2.0
            light = (diffuse * (1.0 - fresnel) * intensity * shadow(p_x, p_y, p_z, l_x, l_y, l_z)
                     + specular * fresnel * intensity)
            pixels[tid, 0] = 0.85 * light
            pixels[tid, 1] = 0.9 * light
            pixels[tid, 2] = 0.95 * light
        else:
            pixels[tid, 0] = 0.4 * 1.5
            pixels[tid, 1] = 0.45 * 1.5
            pixels[tid, 2] = 0.5 * 1.5


def _sdf_ref(p):
    q = np.abs(p) - np.array([1.0, 0.5, 0.5])
    box = np.sqrt((np.maximum(q, 0.0) ** 2).sum(-1)) + np.minimum(q.max(-1), 0.0)
    sphere = np.sqrt(((p - np.array([0.0, 0.75, 0.0])) ** 2).sum(-1)) - 0.75
    return np.minimum(np.maximum(-sphere, box), p[..., 1] + 1.0)


def _unit(v):
    return v / np.sqrt((v * v).sum(-1, keepdims=True))


def case_warp_raymarch(rng, device):
    width, height = 11, 7
    cam_pos = (0.0, 1.0, 2.0)
    angle = -0.25   # quat_from_axis_angle((1, 0, 0), angle)
    cam_rot = (math.sin(angle / 2), 0.0, 0.0, math.cos(angle / 2))
    tid = np.arange(width * height)
    x, y = tid % width, tid // width
    s = np.stack([(2.0 * x - width) / height, (2.0 * y - height) / height,
                  np.full(len(tid), -2.0)], -1)
    s = _unit(s)
    q, w = np.array(cam_rot[:3]), cam_rot[3]
    rd = s * (2 * w * w - 1) + q * (2 * s @ q)[:, None] + np.cross(q, s) * w * 2
    ro = np.array(cam_pos)
    t = np.zeros(len(tid))
    for _ in range(64):
        d = _sdf_ref(ro + rd * t[:, None])
        t = t + d
    hit = d < 0.01
    p = ro + rd * t[:, None]
    eps = 1.0e-5
    grad = np.stack([_sdf_ref(p + eps * e) - _sdf_ref(p - eps * e) for e in np.eye(3)], -1)
    n = _unit(grad)
    l = _unit(np.array([0.6, 0.4, 0.5]))
    h = _unit(l - rd)
    diffuse = n @ l
    specular = np.clip((n * h).sum(-1), 0.0, 1.0) ** 80.0
    fresnel = 0.04 + 0.96 * np.clip(1.0 - h @ l, 0.0, 1.0) ** 5.0
    ts, sh, escaped = np.zeros(len(tid)), np.ones(len(tid)), np.zeros(len(tid), dtype=bool)
    for _ in range(64):
        dd = _sdf_ref(p + ts[:, None] * l)
        ts_new = ts + np.clip(dd, 0.0001, 2.0)
        hh = np.clip(4.0 * dd / ts_new, 0.0, 1.0)
        sh_new = np.minimum(sh, hh * hh * (3.0 - 2.0 * hh))
        ts, sh = np.where(escaped, ts, ts_new), np.where(escaped, sh, sh_new)
        escaped |= ts > 8.0
    sh = np.where(escaped, 1.0, sh)
    light = diffuse * (1.0 - fresnel) * 2.0 * sh + specular * fresnel * 2.0
    ref = np.where(hit[:, None], light[:, None] * np.array([0.85, 0.9, 0.95]),
                   np.array([0.4, 0.45, 0.5]) * 1.5)
    assert 0.2 < hit.mean() < 0.9 and 0 < escaped[hit].mean() < 1
    pixels = poison((width * height, 3), device=device)
    return dict(fn=draw, args=[*cam_pos, *cam_rot, width, height, pixels],
                spec={'tid': parir.threads(width * height)},
                check=[(pixels, torch.from_numpy(ref))])



# ----- Numba's CUDA documentation: the matmul without shared memory, one thread an element
# of C, guarded by C's shape as the grid may overhang it -------------------------------------

@parir.jit
def matmul(A, B, C):
    """Perform square matrix multiplication of C = A * B."""
    parir.label('i')
    for i in range(C.shape[0]):
        parir.label('j')
        for j in range(C.shape[1]):
            if i < C.shape[0] and j < C.shape[1]:
                tmp = 0.
                for k in range(A.shape[1]):
                    tmp += A[i, k] * B[k, j]
                C[i, j] = tmp


def case_numba_matmul(rng, device):
    A = nonzero((37, 19), rng, dtype=torch.float64)
    B = nonzero((19, 35), rng, dtype=torch.float64)
    ref = f64(A) @ f64(B)
    C = poison((37, 35), dtype=torch.float64, device=device)
    return dict(fn=matmul, args=[A.to(device), B.to(device), C],
                spec={'i': parir.threads(37), 'j': parir.threads(35)},
                check=[(C, torch.from_numpy(ref))])


# ----- Numba's laplace2d example: jacobi_core returns the largest change, the main loop runs
# while error > tol and iter < iter_max and swaps A and Anew --------------------------------

def jacobi_core(A, Anew):
    error = 0.0
    n = A.shape[0]
    m = A.shape[1]
    parir.label('j')
    for j in range(1, n - 1):
        for i in range(1, m - 1):
            Anew[j, i] = 0.25 * (A[j, i + 1] + A[j, i - 1] + A[j - 1, i] + A[j + 1, i])
            error = max(error, abs(Anew[j, i] - A[j, i]))
    return error


@parir.jit
def laplace2d(A, Anew, tol, iter_max, final_error, final_iter):
    with parir.gpu:
        error = 1.0
        iter = 0
        while error > tol and iter < iter_max:
            error = jacobi_core(A, Anew)
            iter += 1
            # swap A and Anew: the next iteration with the arguments the other way round
            if error > tol and iter < iter_max:
                error = jacobi_core(Anew, A)
                iter += 1
        final_error[0] = error
        final_iter[0] = iter


def case_numba_laplace(rng, device):
    n, m, tol, iter_max = 13, 17, 1.0e-3, 1000
    A = positive((n, m), rng, dtype=torch.float64, lo=0.0, hi=0.5)
    A[:, 0] = 1.0
    Anew = A.clone()
    a, b = f64(A), f64(Anew)
    error, it = 1.0, 0
    while error > tol and it < iter_max:
        b[1:-1, 1:-1] = 0.25 * (a[1:-1, 2:] + a[1:-1, :-2] + a[:-2, 1:-1] + a[2:, 1:-1])
        error = np.abs(b[1:-1, 1:-1] - a[1:-1, 1:-1]).max()
        a, b = b, a
        it += 1
    assert 10 < it < iter_max
    A, Anew = A.to(device), Anew.to(device)
    final_error = poison(1, dtype=torch.float64, device=device)
    final_iter = poison(1, dtype=torch.int64, device=device)
    # after an odd number of swaps the latest iterate is in Anew
    latest, other = (A, Anew) if it % 2 == 0 else (Anew, A)
    return dict(fn=laplace2d, args=[A, Anew, tol, iter_max, final_error, final_iter],
                spec={'j': parir.threads(n - 2).reduce()},
                check=[(latest, torch.from_numpy(a)), (other, torch.from_numpy(b)),
                       (final_error, torch.tensor([error])), (final_iter, torch.tensor([it]))])


# ----- Numba's compute_pi: xoroshiro128p_uniform_float32 (numba.cuda.random's xoroshiro128+
# on uint64 states, as written there) drawn twice per sample by each thread -----------------

def rotl(x, k):
    """Left rotate x by k bits."""
    x = parir.uint64(x)
    k = parir.uint32(k)
    return (x << k) | (x >> parir.uint32(64 - k))


def xoroshiro128p_next(states, index):
    """Return the next random uint64 and advance the RNG in states[index]."""
    index = parir.int64(index)
    s0 = states[index, 0]
    s1 = states[index, 1]
    result = s0 + s1

    s1 ^= s0
    states[index, 0] = parir.uint64(rotl(s0, parir.uint32(55))) ^ s1 ^ (s1 << parir.uint32(14))
    states[index, 1] = parir.uint64(rotl(s1, parir.uint32(36)))

    return result


def uint64_to_unit_float64(x):
    """Convert uint64 to float64 value in the range [0.0, 1.0)"""
    x = parir.uint64(x)
    return (x >> parir.uint32(11)) * (parir.float64(1) / (parir.uint64(1) << parir.uint32(53)))


def uint64_to_unit_float32(x):
    """Convert uint64 to float32 value in the range [0.0, 1.0)"""
    x = parir.uint64(x)
    return parir.float32(uint64_to_unit_float64(x))


def xoroshiro128p_uniform_float32(states, index):
    """Return a float32 in range [0.0, 1.0) and advance ``states[index]``."""
    index = parir.int64(index)
    return uint64_to_unit_float32(xoroshiro128p_next(states, index))


@parir.jit
def compute_pi(rng_states, iterations, out):
    parir.label('thread_id')
    for thread_id in range(out.shape[0]):
        # Compute pi by drawing random (x, y) points and finding what
        # fraction lie inside a unit circle
        inside = 0
        for i in range(iterations):
            x = xoroshiro128p_uniform_float32(rng_states, thread_id)
            y = xoroshiro128p_uniform_float32(rng_states, thread_id)
            if x ** 2 + y ** 2 <= 1.0:
                inside += 1

        out[thread_id] = 4.0 * inside / iterations


_M64 = (1 << 64) - 1


def _splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def case_numba_mc_pi(rng, device):
    threads, iterations = 37, 25
    seed = int(torch.randint(0, 2**31, (1,), generator=rng))
    init = []
    for t in range(threads):
        s0 = _splitmix64(seed + 2 * t)
        init.append([s0, _splitmix64(s0)])
    ref, final = [], []
    for s0, s1 in init:
        inside = 0
        draws = []
        for _ in range(2 * iterations):
            result = (s0 + s1) & _M64
            s1 ^= s0
            s0 = (((s0 << 55) | (s0 >> 9)) & _M64) ^ s1 ^ ((s1 << 14) & _M64)
            s1 = ((s1 << 36) | (s1 >> 28)) & _M64
            draws.append(np.float32((result >> 11) * (1.0 / (1 << 53))))
        for x, y in zip(draws[0::2], draws[1::2]):
            inside += (x * x + y * y) <= np.float32(1.0)
        ref.append(4.0 * inside / iterations)
        final.append([s0, s1])
    assert 2.8 < np.mean(ref) < 3.5
    rng_states = torch.tensor(init, dtype=torch.uint64).to(device)
    out = poison(threads, dtype=torch.float64, device=device)
    return dict(fn=compute_pi, args=[rng_states, iterations, out],
                spec={'thread_id': parir.threads(threads)},
                check=[(out, torch.tensor(ref, dtype=torch.float64)),
                       (rng_states, torch.tensor(final, dtype=torch.uint64))])


# ----- Numba's "sum reduction" examples: array_sum's interleaved tree (s doubling while it is
# below the size, tid % (2 * s) == 0 adding its partner), and @cuda.reduce's sum_reduce ------

def sum_reduce(a, b):
    return a + b


@parir.jit
def array_sum(data, shr, A, got, size, nelem):
    parir.label('tid')
    for tid in range(size):
        shr[tid] = data[tid]
    s = 1
    while s < size:
        parir.label('tid')
        for tid in range(size):
            if tid % (2 * s) == 0 and tid + s < size:
                # Stride by `s` and add
                shr[tid] += shr[tid + s]
        s *= 2
    with parir.gpu:
        # After the loop, the zeroth element contains the sum
        data[0] = shr[0]
    total = 0.0
    parir.label('elem')
    for i in range(nelem):
        total = sum_reduce(total, A[i])
    with parir.gpu:
        got[0] = total


def case_numba_sum_reduce(rng, device):
    size, nelem = 777, 1234
    data = randint(size, rng, 1, 1000, dtype=torch.int32)
    A = torch.arange(nelem, dtype=torch.float64) + 1 + nonzero(nelem, rng, dtype=torch.float64)
    ref_data = data.clone()
    ref_data[0] = int(data.long().sum())
    expect = f64(A).sum()
    shr = poison(size, dtype=torch.int32, device=device)
    data, got = data.to(device), poison(1, dtype=torch.float64, device=device)
    return dict(fn=array_sum, args=[data, shr, A.to(device), got, size, nelem],
                spec={'tid': parir.threads(size), 'elem': parir.threads(1024).reduce()},
                check=[(data, ref_data), (got, torch.tensor([expect]))])


# ----- Numba's blackscholes_cuda (the kernel as finance_and_statistics ports it: cnd_cuda's
# polynomial, one thread an option), launched for a number of iterations as the benchmark does

@parir.jit
def black_scholes(d_callResult, d_putResult, d_stockPrice, d_optionStrike, d_optionYears,
                  iterations):
    for i in range(iterations):
        black_scholes_cuda(d_callResult, d_putResult, d_stockPrice, d_optionStrike,
                           d_optionYears, RISKFREE, VOLATILITY)


def _randfloat(rand_var, low, high):
    return (1.0 - rand_var) * low + rand_var * high


def case_numba_black_scholes(rng, device):
    OPT_N, iterations = 1000, 2
    np_rng = _np_rng(rng)
    stockPrice = _randfloat(np_rng.random(OPT_N), 5.0, 30.0)
    optionStrike = _randfloat(np_rng.random(OPT_N), 1.0, 100.0)
    optionYears = _randfloat(np_rng.random(OPT_N), 0.25, 10.0)
    S, X, T, R, V = stockPrice, optionStrike, optionYears, RISKFREE, VOLATILITY
    erf = np.vectorize(math.erf)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * np.sqrt(T))
    d2 = d1 - V * np.sqrt(T)
    N1, N2 = 0.5 * (1 + erf(d1 / math.sqrt(2))), 0.5 * (1 + erf(d2 / math.sqrt(2)))
    call = S * N1 - X * np.exp(-R * T) * N2
    put = X * np.exp(-R * T) * (1 - N2) - S * (1 - N1)
    d_callResult = poison(OPT_N, dtype=torch.float64, device=device)
    d_putResult = poison(OPT_N, dtype=torch.float64, device=device)
    return dict(fn=black_scholes,
                args=[d_callResult, d_putResult, torch.from_numpy(S).to(device),
                      torch.from_numpy(X).to(device), torch.from_numpy(T).to(device),
                      iterations],
                spec={'i': parir.threads(OPT_N)},
                # the polynomial approximates the normal CDF to 7.5e-8
                tol=(1e-6, 1e-6),
                check=[(d_callResult, torch.from_numpy(call)),
                       (d_putResult, torch.from_numpy(put))])


CASES = {
    "tw_fractal": case_fractal,
    "tw_mpm88": case_mpm88,
    "tw_game_of_life": case_game_of_life,
    "tw_stable_fluid_pressure": case_stable_fluid_pressure,
    "tw_stable_fluid_advect": case_stable_fluid_advect,
    "tw_mass_spring": case_mass_spring,
    "tw_warp_wave": case_warp_wave,
    "tw_warp_dem": case_warp_dem,
    "tw_warp_raymarch": case_warp_raymarch,
    "tw_numba_matmul": case_numba_matmul,
    "tw_numba_laplace": case_numba_laplace,
    "tw_numba_mc_pi": case_numba_mc_pi,
    "tw_numba_sum_reduce": case_numba_sum_reduce,
    "tw_numba_black_scholes": case_numba_black_scholes,
}
