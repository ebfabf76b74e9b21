"""N-body simulation (after npbench's nbody): leapfrog steps on the host, accelerations and
energies in kernels, through helper functions that take rows of the state as tensor views."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, positive


def add_pair_accel(acc_i, pos_i, pos_j, mass_j, G, softening):
    # The acceleration body j gives body i, added to acc_i (a row of the accelerations).
    dx = pos_j[0] - pos_i[0]
    dy = pos_j[1] - pos_i[1]
    dz = pos_j[2] - pos_i[2]
    inv_r3 = (dx * dx + dy * dy + dz * dz + softening * softening) ** (-1.5)
    acc_i[0] += G * dx * inv_r3 * mass_j
    acc_i[1] += G * dy * inv_r3 * mass_j
    acc_i[2] += G * dz * inv_r3 * mass_j


@parir.jit
def get_acc(pos, mass, acc, G, softening, N):
    parir.label('body')
    for i in range(N):
        acc[i, 0] = 0.0
        acc[i, 1] = 0.0
        acc[i, 2] = 0.0
        for j in range(N):
            if j != i:
                add_pair_accel(acc[i], pos[i], pos[j], mass[j], G, softening)


@parir.jit
def energy(pos, vel, mass, KE, PE, G, N):
    # KE and PE are one-element rows of the per-step energy histories.
    with parir.gpu:
        KE[0] = 0.0
        parir.label('body')
        for i in range(N):
            KE[0] += 0.5 * mass[i] * (vel[i, 0] ** 2 + vel[i, 1] ** 2 + vel[i, 2] ** 2)
        PE[0] = 0.0
        parir.label('body')
        for i in range(N):
            for j in range(i + 1, N):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                PE[0] += -G * mass[i] * mass[j] / parir.sqrt(dx * dx + dy * dy + dz * dz)


@parir.jit
def parir_nbody(pos, vel, mass, acc, KE, PE, G, softening, dt, Nt, N):
    get_acc(pos, mass, acc, G, softening, N)
    energy(pos, vel, mass, KE[0], PE[0], G, N)
    for t in range(Nt):
        parir.label('body')
        for i in range(N):
            for d in range(3):
                vel[i, d] += acc[i, d] * dt / 2.0
                pos[i, d] += vel[i, d] * dt
        get_acc(pos, mass, acc, G, softening, N)
        parir.label('body')
        for i in range(N):
            for d in range(3):
                vel[i, d] += acc[i, d] * dt / 2.0
        energy(pos, vel, mass, KE[t + 1], PE[t + 1], G, N)


def _nbody_reference(pos, vel, mass, G, soft, dt, Nt):
    def acc_of(p):
        d = p[None, :, :] - p[:, None, :]
        inv_r3 = ((d ** 2).sum(2) + soft ** 2) ** (-1.5)
        np.fill_diagonal(inv_r3, 0.0)
        return G * (d * (inv_r3 * mass[None, :])[:, :, None]).sum(1)

    def energies(p, v):
        ke = 0.5 * (mass * (v ** 2).sum(1)).sum()
        d = p[None, :, :] - p[:, None, :]
        r = np.sqrt((d ** 2).sum(2))
        iu = np.triu_indices(len(mass), 1)
        pe = (-G * (mass[:, None] * mass[None, :])[iu] / r[iu]).sum()
        return ke, pe

    KE, PE = np.zeros((Nt + 1, 1)), np.zeros((Nt + 1, 1))
    acc = acc_of(pos)
    KE[0, 0], PE[0, 0] = energies(pos, vel)
    for t in range(Nt):
        vel = vel + acc * dt / 2.0
        pos = pos + vel * dt
        acc = acc_of(pos)
        vel = vel + acc * dt / 2.0
        KE[t + 1, 0], PE[t + 1, 0] = energies(pos, vel)
    return pos, vel, acc, KE, PE


def case_nbody(rng, device):
    N, Nt = 31, 3
    pos = nonzero((N, 3), rng, dtype=torch.float64, device=device, hi=2.0)
    vel = nonzero((N, 3), rng, dtype=torch.float64, device=device)
    mass = positive(N, rng, dtype=torch.float64, device=device, lo=0.5, hi=1.5)
    acc = torch.full((N, 3), float("nan"), dtype=torch.float64, device=device)
    KE = torch.full((Nt + 1, 1), float("nan"), dtype=torch.float64, device=device)
    PE = torch.full((Nt + 1, 1), float("nan"), dtype=torch.float64, device=device)
    G, softening, dt = 1.0, 0.1, np.float64(0.01)
    p, v, a, ke, pe = _nbody_reference(f64(pos), f64(vel), f64(mass), G, softening,
                                       float(dt), Nt)
    spec = {'body': parir.threads(N).reduce()}
    return dict(fn=parir_nbody, args=[pos, vel, mass, acc, KE, PE, G, softening, dt, Nt, N],
                spec=spec,
                check=[(pos, torch.from_numpy(p)), (vel, torch.from_numpy(v)),
                       (acc, torch.from_numpy(a)), (KE, torch.from_numpy(ke)),
                       (PE, torch.from_numpy(pe))])


# ----- Direct forces: three accumulators in one reduction loop ---------------------------------

@parir.jit
def parir_forces(pos, mass, force, eps2, N):
    parir.label('i')
    for i in range(N):
        fx = 0.0
        fy = 0.0
        fz = 0.0
        parir.label('j')
        for j in range(N):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps2
            w = mass[j] / (r2 * parir.sqrt(r2))
            fx += dx * w
            fy += dy * w
            fz += dz * w
        force[i, 0] = mass[i] * fx
        force[i, 1] = mass[i] * fy
        force[i, 2] = mass[i] * fz


def case_forces(rng, device):
    N = 65
    pos = nonzero((N, 3), rng, device=device, hi=4.0)
    mass = positive(N, rng, device=device)
    force = torch.full((N, 3), float("nan"), device=device)
    eps2 = np.float32(0.01)
    p, m = f64(pos), f64(mass)
    d = p[None, :, :] - p[:, None, :]
    r2 = (d ** 2).sum(2) + float(eps2)
    w = m[None, :] / (r2 * np.sqrt(r2))
    ref = m[:, None] * (d * w[:, :, None]).sum(1)
    spec = {'i': parir.threads(N), 'j': parir.threads(128).reduce()}
    return dict(fn=parir_forces, args=[pos, mass, force, eps2, N], spec=spec,
                check=[(force, torch.from_numpy(ref))], tol=(1e-4, 1e-4))


CASES = {
    "nbody": case_nbody,
    "forces": case_forces,
}
