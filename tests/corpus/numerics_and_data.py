"""Scientific Python and data processing, as NumPy, Numba and SciPy users write their loops:
np.interp with a binary search per query (one table, or one per row), cumulative and plain
trapezoids, np.gradient, rolling windows, a median filter, RK4 and Euler integrators per particle
or trajectory, Monte Carlo with per-thread LCG, splitmix64 and polar-method generators,
brute-force nearest neighbours and pairwise distances, Horner and piecewise-cubic evaluation,
a CSR matrix-vector product on NumPy arrays, segmented reductions, histograms, stream compaction
from an exclusive scan, systematic resampling, a Kalman filter and a GARCH(1,1) likelihood per
series, batched tridiagonal solves, Newton's method for Kepler's
equation, per-row regression, scaling and normalization, and Welford's and Kahan's sums."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- np.interp: one query per thread, a binary search over the sorted sample points --------

@parir.jit
def interp(x, xp, fp, out, N, M):
    parir.label('i')
    for i in range(N):
        xi = x[i]
        if xi <= xp[0]:
            out[i] = fp[0]
        elif xi >= xp[-1]:
            out[i] = fp[-1]
        else:
            # xp[lo] <= xi < xp[hi]
            lo = 0
            hi = M - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if xp[mid] <= xi:
                    lo = mid
                else:
                    hi = mid
            slope = (fp[hi] - fp[lo]) / (xp[hi] - xp[lo])
            out[i] = fp[lo] + slope * (xi - xp[lo])


def case_interp(rng, device):
    N, M = 1000, 33
    xp_np = np.sort(f64(positive(M, rng, dtype=torch.float64, lo=0.0, hi=10.0)))
    xp_np[0], xp_np[-1] = 0.5, 9.5
    queries = positive((N, 2), rng, dtype=torch.float64, device=device, lo=-0.5, hi=10.5)
    x = queries[:, 1]                                           # every other element
    x[:3] = torch.tensor([0.5, 9.5, float(xp_np[7])], dtype=torch.float64)  # on sample points
    xp = torch.from_numpy(xp_np.copy()).to(device)
    fp = nonzero(M, rng, dtype=torch.float64, device=device)
    out = poison(N, dtype=torch.float64, device=device)
    ref = np.interp(f64(x), xp_np, f64(fp))
    return dict(fn=interp, args=[x, xp, fp, out, N, M], spec={'i': parir.threads(N)},
                check=[(out, torch.from_numpy(ref))])


# ----- scipy.integrate.cumulative_trapezoid along each signal, the signals a transposed view --

@parir.jit
def cumtrapz_rows(y, out, dx, nrows, ncols):
    parir.label('row')
    for i in range(nrows):
        total = np.float32(0.0)
        for j in range(1, ncols):
            total += dx * (y[i, j - 1] + y[i, j]) / 2.0
            out[i, j - 1] = total


def case_cumtrapz(rng, device):
    nrows, ncols = 31, 100
    dx = np.float32(0.01)
    samples = nonzero((ncols, nrows), rng, device=device)      # time-major recording
    y = samples.t()                                             # (nrows, ncols), strides (1, 31)
    out = poison((nrows, ncols - 1), device=device)
    Y = f64(y)
    ref = np.cumsum(float(dx) * (Y[:, :-1] + Y[:, 1:]) / 2.0, axis=1)
    return dict(fn=cumtrapz_rows, args=[y, out, dx, nrows, ncols],
                spec={'row': parir.threads(nrows)},
                check=[(out, torch.from_numpy(ref))])


# ----- pandas' rolling(window).mean() and .std(): NaN until the window is full ----------------

@parir.jit
def rolling_mean_std(x, mean, std, nseries, n, window):
    parir.label('series')
    for s in range(nseries):
        parir.label('t')
        for i in range(n):
            if i < window - 1:
                mean[s, i] = np.nan
                std[s, i] = np.nan
            else:
                acc = 0.0
                for k in range(i - window + 1, i + 1):
                    acc += x[s, k]
                m = acc / window
                ss = 0.0
                for k in range(i - window + 1, i + 1):
                    d = x[s, k] - m
                    ss += d * d
                mean[s, i] = m
                std[s, i] = math.sqrt(ss / (window - 1))


def case_rolling(rng, device):
    nseries, n, window = 4, 257, 7
    x = nonzero((nseries, n), rng, dtype=torch.float64, device=device)
    mean = poison((nseries, n), dtype=torch.float64, device=device)
    std = poison((nseries, n), dtype=torch.float64, device=device)
    w = np.lib.stride_tricks.sliding_window_view(f64(x), window, axis=1)
    ref_mean = np.full((nseries, n), np.nan)
    ref_std = np.full((nseries, n), np.nan)
    ref_mean[:, window - 1:] = w.mean(-1)
    ref_std[:, window - 1:] = w.std(-1, ddof=1)
    return dict(fn=rolling_mean_std, args=[x, mean, std, nseries, n, window],
                spec={'series': parir.threads(nseries), 't': parir.threads(n)},
                check=[(mean, torch.from_numpy(ref_mean)), (std, torch.from_numpy(ref_std))])


# ----- classic RK4 per particle for y' = -k y + sin(w t) --------------------------------------

def f(t, y, k, w):
    return -k * y + math.sin(w * t)


@parir.jit
def rk4_particles(y0, k, y_out, traj, w, dt, nsteps, n):
    parir.label('p')
    for p in range(n):
        t = 0.0
        y = y0[p]
        kp = k[p]
        for step in range(nsteps):
            k1 = f(t, y, kp, w)
            k2 = f(t + 0.5 * dt, y + 0.5 * dt * k1, kp, w)
            k3 = f(t + 0.5 * dt, y + 0.5 * dt * k2, kp, w)
            k4 = f(t + dt, y + dt * k3, kp, w)
            y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            t = t + dt
            traj[step, p] = y
        y_out[p] = y


def case_rk4(rng, device):
    n, nsteps, w, dt = 257, 16, 3.0, 0.05
    y0 = nonzero(n, rng, dtype=torch.float64, device=device)
    k = positive(n, rng, dtype=torch.float64, device=device, lo=0.5, hi=2.0)
    y_out = poison(n, dtype=torch.float64, device=device)
    traj = poison((nsteps, n), dtype=torch.float64, device=device)
    Y, K = f64(y0), f64(k)

    def rhs(t, y):
        return -K * y + np.sin(w * t)

    t, ref_traj = 0.0, np.zeros((nsteps, n))
    for step in range(nsteps):
        k1 = rhs(t, Y)
        k2 = rhs(t + 0.5 * dt, Y + 0.5 * dt * k1)
        k3 = rhs(t + 0.5 * dt, Y + 0.5 * dt * k2)
        k4 = rhs(t + dt, Y + dt * k3)
        Y = Y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t = t + dt
        ref_traj[step] = Y
    return dict(fn=rk4_particles, args=[y0, k, y_out, traj, w, dt, nsteps, n],
                spec={'p': parir.threads(n)},
                check=[(y_out, torch.from_numpy(Y)), (traj, torch.from_numpy(ref_traj))])


# ----- Monte Carlo pi, a Numerical Recipes LCG per thread in a uint64 kept to 32 bits ---------

@parir.jit
def mc_pi_lcg(seeds, counts, hits, nthreads, nsamples):
    parir.label('tid')
    for tid in range(nthreads):
        state = seeds[tid]
        inside = 0
        for s in range(nsamples):
            state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
            x = state / 4294967296.0
            state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
            y = state / 4294967296.0
            if x * x + y * y <= 1.0:
                inside += 1
        counts[tid] = inside
        hits[0] += inside


def case_mc_pi_lcg(rng, device):
    nthreads, nsamples = 257, 32
    seeds64 = randint(nthreads, rng, 1, 2 ** 32)
    seeds = seeds64.to(torch.uint64).to(device)
    counts = poison(nthreads, dtype=torch.int32, device=device)
    hits = torch.zeros(1, dtype=torch.int64, device=device)
    state = seeds64.numpy().astype(np.uint64)
    ref = np.zeros(nthreads, dtype=np.int64)
    a, c, mask = np.uint64(1664525), np.uint64(1013904223), np.uint64(0xFFFFFFFF)
    for _ in range(nsamples):
        state = (state * a + c) & mask
        x = state.astype(np.float64) / 4294967296.0
        state = (state * a + c) & mask
        y = state.astype(np.float64) / 4294967296.0
        ref += (x * x + y * y <= 1.0)
    return dict(fn=mc_pi_lcg, args=[seeds, counts, hits, nthreads, nsamples],
                spec={'tid': parir.threads(nthreads).reduce()},
                check=[(counts, torch.from_numpy(ref)),
                       (hits, torch.tensor([int(ref.sum())]))])


# ----- brute-force 3 nearest neighbours, the best three kept in locals ------------------------

@parir.jit
def knn3(queries, points, dist, idx, nq, npts, dim):
    parir.label('q')
    for q in range(nq):
        best1 = np.inf
        best2 = np.inf
        best3 = np.inf
        i1 = -1
        i2 = -1
        i3 = -1
        for p in range(npts):
            d = 0.0
            for k in range(dim):
                diff = queries[q, k] - points[p, k]
                d += diff * diff
            if d < best1:
                best3 = best2
                i3 = i2
                best2 = best1
                i2 = i1
                best1 = d
                i1 = p
            elif d < best2:
                best3 = best2
                i3 = i2
                best2 = d
                i2 = p
            elif d < best3:
                best3 = d
                i3 = p
        dist[q, 0] = math.sqrt(best1)
        dist[q, 1] = math.sqrt(best2)
        dist[q, 2] = math.sqrt(best3)
        idx[q, 0] = i1
        idx[q, 1] = i2
        idx[q, 2] = i3


def case_knn3(rng, device):
    nq, npts, dim = 33, 257, 3
    queries = nonzero((nq, dim), rng, device=device)
    points = nonzero((npts, dim), rng, device=device)
    dist = poison((nq, 3), device=device)
    idx = poison((nq, 3), dtype=torch.int64, device=device)
    Q, P = f64(queries), f64(points)
    d2 = ((Q[:, None, :] - P[None, :, :]) ** 2).sum(-1)
    order = np.argsort(d2, axis=1, kind='stable')[:, :3]
    ref_d = np.sqrt(np.take_along_axis(d2, order, axis=1))
    return dict(fn=knn3, args=[queries, points, dist, idx, nq, npts, dim],
                spec={'q': parir.threads(nq)},
                check=[(dist, torch.from_numpy(ref_d)), (idx, torch.from_numpy(order))])


# ----- scipy.spatial.distance.cdist(X, Y), one (i, j) pair per thread -------------------------

@parir.jit
def pairwise_distances(X, Y, D, M, N, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            d = 0.0
            for k in range(K):
                tmp = X[i, k] - Y[j, k]
                d += tmp * tmp
            D[i, j] = np.sqrt(d)


def case_pairwise(rng, device):
    M, N, K = 33, 65, 16
    X = nonzero((M, K), rng, dtype=torch.float64, device=device)
    Y = nonzero((N, K), rng, dtype=torch.float64, device=device)
    D = poison((M, N), dtype=torch.float64, device=device)
    Xn, Yn = f64(X), f64(Y)
    ref = np.sqrt(((Xn[:, None, :] - Yn[None, :, :]) ** 2).sum(-1))
    return dict(fn=pairwise_distances, args=[X, Y, D, M, N, K],
                spec={'i': parir.threads(M), 'j': parir.threads(N)},
                check=[(D, torch.from_numpy(ref))])


# ----- np.polyval by Horner's rule, the coefficients of each polynomial in a row --------------

@parir.jit
def polyval_rows(coeffs, x, out, npoly, n, ncoef):
    parir.label('poly')
    for p in range(npoly):
        parir.label('x')
        for i in range(n):
            result = coeffs[p, 0]
            for k in range(1, ncoef):
                result = result * x[i] + coeffs[p, k]
            out[p, i] = result


def case_horner(rng, device):
    npoly, n, ncoef = 1, 4097, 6
    coeffs = nonzero((npoly, ncoef), rng, device=device)
    x = nonzero(n, rng, device=device)
    out = poison((npoly, n), device=device)
    C, X = f64(coeffs), f64(x)
    ref = np.stack([np.polyval(C[p], X) for p in range(npoly)])
    return dict(fn=polyval_rows, args=[coeffs, x, out, npoly, n, ncoef],
                spec={'poly': parir.threads(npoly), 'x': parir.threads(n)},
                check=[(out, torch.from_numpy(ref))])


# ----- scipy.interpolate.PPoly evaluation: c[m, i] (xq - x[i])**(3 - m), extrapolating -------

def find_interval(x, nbreaks, xq):
    # np.searchsorted(x, xq, side='right') - 1, clipped to the pieces
    lo = 0
    hi = nbreaks
    while lo < hi:
        mid = (lo + hi) // 2
        if x[mid] <= xq:
            lo = mid + 1
        else:
            hi = mid
    i = lo - 1
    if i < 0:
        i = 0
    elif i > nbreaks - 2:
        i = nbreaks - 2
    return i


@parir.jit
def ppoly_eval(x, c, xq, out, nbreaks, nq):
    parir.label('q')
    for j in range(nq):
        xj = xq[j]
        i = find_interval(x, nbreaks, xj)
        dx = xj - x[i]
        out[j] = ((c[0, i] * dx + c[1, i]) * dx + c[2, i]) * dx + c[3, i]


def case_ppoly(rng, device):
    nbreaks, nq = 33, 1000
    xb = np.sort(f64(positive(nbreaks, rng, dtype=torch.float64, lo=0.0, hi=1.0)))
    x = torch.from_numpy(xb.copy()).to(device)
    c = nonzero((4, nbreaks - 1), rng, dtype=torch.float64, device=device)
    xq = positive(nq, rng, dtype=torch.float64, device=device, lo=-0.1, hi=1.1)
    out = poison(nq, dtype=torch.float64, device=device)
    C, Xq = f64(c), f64(xq)
    piece = np.clip(np.searchsorted(xb, Xq, side='right') - 1, 0, nbreaks - 2)
    dx = Xq - xb[piece]
    ref = sum(C[m, piece] * dx ** (3 - m) for m in range(4))
    return dict(fn=ppoly_eval, args=[x, c, xq, out, nbreaks, nq],
                spec={'q': parir.threads(nq)}, check=[(out, torch.from_numpy(ref))])


# ----- scipy.sparse csr_matvec on the matrix's NumPy arrays: one row per thread -------------

@parir.jit
def csr_matvec(indptr, indices, data, x, y, n_row):
    parir.label('row')
    for i in range(n_row):
        tmp = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            tmp += data[jj] * x[indices[jj]]
        y[i] = tmp


def case_csr(rng, device):
    n_row, n_col = 1000, 31
    nnz_per_row = randint(n_row, rng, 0, 8)
    indptr_np = np.concatenate([[0], np.cumsum(nnz_per_row.numpy())])
    nnz = int(indptr_np[-1])
    indices_np = randint(nnz, rng, 0, n_col).numpy()
    # the arrays of a scipy.sparse.csr_matrix, as NumPy arrays
    indptr = indptr_np.astype(np.int32)
    indices = indices_np.astype(np.int32)
    data = f64(nonzero(nnz, rng, dtype=torch.float64))
    x = f64(nonzero(n_col, rng, dtype=torch.float64))
    y = poison(n_row, dtype=torch.float64, device=device)
    A = np.zeros((n_row, n_col))
    rows = np.repeat(np.arange(n_row), nnz_per_row.numpy())
    np.add.at(A, (rows, indices_np), data)
    return dict(fn=csr_matvec, args=[indptr, indices, data, x, y, n_row],
                spec={'row': parir.threads(n_row)},
                check=[(y, torch.from_numpy(A @ x))])


# ----- segmented sum and max given segment offsets, a block per segment -----------------------

@parir.jit
def segment_sum_max(values, offsets, sums, maxs, nseg):
    parir.label('seg')
    for s in range(nseg):
        total = 0.0
        m = -np.inf
        parir.label('k')
        for k in range(offsets[s], offsets[s + 1]):
            v = values[k]
            total += v
            m = max(m, v)
        sums[s] = total
        maxs[s] = m


def case_segments(rng, device):
    n, nseg = 4097, 33
    cuts = np.sort(randint(nseg - 1, rng, 0, n).numpy())
    cuts[3] = cuts[4]                              # an empty segment
    cuts[10] = min(cuts[9] + 1, cuts[11])          # one of a single element
    offsets_np = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    values = nonzero(n, rng, device=device)
    offsets = torch.from_numpy(offsets_np).to(device)
    sums = poison(nseg, device=device)
    maxs = poison(nseg, device=device)
    V = f64(values)
    ref_sum = np.array([V[offsets_np[s]:offsets_np[s + 1]].sum() for s in range(nseg)])
    ref_max = np.array([V[offsets_np[s]:offsets_np[s + 1]].max()
                        if offsets_np[s + 1] > offsets_np[s] else -np.inf
                        for s in range(nseg)])
    return dict(fn=segment_sum_max, args=[values, offsets, sums, maxs, nseg],
                spec={'seg': parir.threads(nseg), 'k': parir.threads(64).reduce()},
                check=[(sums, torch.from_numpy(ref_sum)), (maxs, torch.from_numpy(ref_max))])


# ----- stream compaction: scatter the kept elements to their exclusive-scan positions ---------

@parir.jit
def compact(x, mask, scan, out, out_idx, count, n):
    parir.label('i')
    for i in range(n):
        if mask[i]:
            out[scan[i]] = x[i]
            out_idx[scan[i]] = i
    with parir.gpu:
        count[0] = scan[n - 1] + mask[n - 1]


def case_compact(rng, device):
    n = 4097
    x = nonzero(n, rng, device=device)
    mask = x > 0.3
    scan = torch.cumsum(mask, 0) - mask.to(torch.int64)        # exclusive scan of the mask
    out = poison(n, device=device)
    out_idx = poison(n, dtype=torch.int64, device=device)
    count = poison(1, dtype=torch.int64, device=device)
    X = f64(x)
    keep = np.nonzero(X > 0.3)[0]
    ref_out = np.full(n, np.nan)
    ref_out[:len(keep)] = X[keep]
    ref_idx = np.full(n, -7777, dtype=np.int64)
    ref_idx[:len(keep)] = keep
    return dict(fn=compact, args=[x, mask, scan, out, out_idx, count, n],
                spec={'i': parir.threads(n)},
                check=[(out, torch.from_numpy(ref_out)), (out_idx, torch.from_numpy(ref_idx)),
                       (count, torch.tensor([len(keep)]))])


# ----- a local-level Kalman filter per series: sequential in time, parallel over series -------

@parir.jit
def kalman_local_level(z, Q, R, x0, P0, xf, Pf, loglik, nseries, T):
    parir.label('s')
    for s in range(nseries):
        x = x0
        P = P0
        ll = 0.0
        for t in range(T):
            # predict
            P = P + Q[s]
            # update
            v = z[t, s] - x
            F = P + R
            K = P / F
            x = x + K * v
            P = (1.0 - K) * P
            ll += -0.5 * (math.log(2.0 * math.pi * F) + v * v / F)
            xf[t, s] = x
        Pf[s] = P
        loglik[s] = ll


def case_kalman(rng, device):
    nseries, T = 257, 31
    R, x0, P0 = np.float64(0.5), 0.0, 1.0
    z = nonzero((T, nseries), rng, dtype=torch.float64, device=device)
    Q = positive(nseries, rng, dtype=torch.float64, device=device, lo=0.01, hi=0.2)
    xf = poison((T, nseries), dtype=torch.float64, device=device)
    Pf = poison(nseries, dtype=torch.float64, device=device)
    loglik = poison(nseries, dtype=torch.float64, device=device)
    Z, Qn = f64(z), f64(Q)
    x, P, ll = np.full(nseries, x0), np.full(nseries, P0), np.zeros(nseries)
    ref_xf = np.zeros((T, nseries))
    for t in range(T):
        P = P + Qn
        v = Z[t] - x
        F = P + float(R)
        K = P / F
        x = x + K * v
        P = (1.0 - K) * P
        ll += -0.5 * (np.log(2.0 * np.pi * F) + v * v / F)
        ref_xf[t] = x
    return dict(fn=kalman_local_level, args=[z, Q, R, x0, P0, xf, Pf, loglik, nseries, T],
                spec={'s': parir.threads(nseries)},
                check=[(xf, torch.from_numpy(ref_xf)), (Pf, torch.from_numpy(P)),
                       (loglik, torch.from_numpy(ll))])


# ----- GARCH(1,1) Gaussian log-likelihood per series, the variance started at the sample's ---

def garch11_loglik(r, omega, alpha, beta, T):
    mean = 0.0
    for t in range(T):
        mean += r[t]
    mean /= T
    var = 0.0
    for t in range(T):
        var += (r[t] - mean) ** 2
    sigma2 = var / T
    ll = 0.0
    for t in range(T):
        if t > 0:
            sigma2 = omega + alpha * r[t - 1] ** 2 + beta * sigma2
        ll += -0.5 * (np.log(2.0 * np.pi) + np.log(sigma2) + r[t] ** 2 / sigma2)
    return ll


@parir.jit
def garch_loglik_batch(returns, params, out, nseries, T):
    parir.label('series')
    for s in range(nseries):
        out[s] = garch11_loglik(returns[s], params[s, 0], params[s, 1], params[s, 2], T)


def case_garch(rng, device):
    nseries, T = 33, 200
    returns = nonzero((nseries, T), rng, dtype=torch.float64, device=device, lo=0.001, hi=0.05)
    omega = positive(nseries, rng, dtype=torch.float64, lo=1e-5, hi=1e-4)
    alpha = positive(nseries, rng, dtype=torch.float64, lo=0.03, hi=0.15)
    beta = positive(nseries, rng, dtype=torch.float64, lo=0.7, hi=0.85)
    params = torch.stack([omega, alpha, beta], 1).to(device)
    out = poison(nseries, dtype=torch.float64, device=device)
    Rn, om, al, be = f64(returns), f64(omega), f64(alpha), f64(beta)
    sigma2 = Rn.var(axis=1)
    ll = np.zeros(nseries)
    for t in range(T):
        if t > 0:
            sigma2 = om + al * Rn[:, t - 1] ** 2 + be * sigma2
        ll += -0.5 * (np.log(2.0 * np.pi) + np.log(sigma2) + Rn[:, t] ** 2 / sigma2)
    return dict(fn=garch_loglik_batch, args=[returns, params, out, nseries, T],
                spec={'series': parir.threads(nseries)},
                check=[(out, torch.from_numpy(ll))])


# ----- Welford's online mean and variance, one column per thread ------------------------------

@parir.jit
def welford_columns(X, mean, var):
    nrows, ncols = X.shape
    parir.label('col')
    for j in range(ncols):
        count = 0
        mu = 0.0
        M2 = 0.0
        for i in range(nrows):
            count += 1
            delta = X[i, j] - mu
            mu += delta / count
            M2 += delta * (X[i, j] - mu)
        mean[j] = mu
        var[j] = M2 / (count - 1)


def case_welford(rng, device):
    nrows, ncols = 500, 33
    X = (3.0 + nonzero((nrows, ncols), rng)).to(device)
    mean = poison(ncols, device=device)
    var = poison(ncols, device=device)
    Xn = f64(X)
    return dict(fn=welford_columns, args=[X, mean, var],
                spec={'col': parir.threads(ncols)},
                check=[(mean, torch.from_numpy(Xn.mean(0))),
                       (var, torch.from_numpy(Xn.var(0, ddof=1)))])


# ----- np.histogram with explicit bin edges: searchsorted per value, atomic increments -------

@parir.jit
def histogram_edges(a, edges, hist, n, nbins):
    parir.label('i')
    for i in range(n):
        v = a[i]
        if v >= edges[0] and v <= edges[nbins]:
            # np.searchsorted(edges, v, side='right') - 1; the last edge closes the last bin
            lo = 0
            hi = nbins + 1
            while lo < hi:
                mid = (lo + hi) // 2
                if edges[mid] <= v:
                    lo = mid + 1
                else:
                    hi = mid
            b = lo - 1
            if b == nbins:
                b = nbins - 1
            parir.atomic_add(hist[b], 1)


def case_histogram(rng, device):
    n, nbins = 4097, 31
    a = nonzero(n, rng, device=device, lo=0.0, hi=1.2)
    edges_np = np.sort(f64(positive(nbins + 1, rng, lo=-1.0, hi=1.0)).astype(np.float32))
    edges_np[-1] = 1.0
    a[:2] = torch.tensor([1.0, float(edges_np[0])])       # both outer edges are inside
    edges = torch.from_numpy(edges_np.copy()).to(device)
    hist = torch.zeros(nbins, dtype=torch.int64, device=device)
    ref, _ = np.histogram(f64(a), edges_np.astype(np.float64))
    return dict(fn=histogram_edges, args=[a, edges, hist, n, nbins],
                spec={'i': parir.threads(n)},
                check=[(hist, torch.from_numpy(ref.astype(np.int64)))])


# ----- Monte Carlo integral of exp(-x^2) on [0, 1), an LCG in uint32 that wraps by itself ----

@parir.jit
def mc_gauss_lcg32(seeds, partial, nthreads, nsamples):
    parir.label('tid')
    for tid in range(nthreads):
        state = seeds[tid]
        acc = np.float32(0.0)
        for s in range(nsamples):
            state = state * np.uint32(1664525) + np.uint32(1013904223)
            u = np.float32(state) * np.float32(2.3283064e-10)
            acc += math.exp(-u * u)
        partial[tid] = acc / nsamples
        seeds[tid] = state


def case_mc_lcg32(rng, device):
    nthreads, nsamples = 33, 64
    seeds64 = randint(nthreads, rng, 0, 2 ** 32)
    seeds = seeds64.to(torch.uint32).to(device)
    partial = poison(nthreads, device=device)
    state = seeds64.numpy().astype(np.uint32)
    acc = np.zeros(nthreads)
    for _ in range(nsamples):
        state = state * np.uint32(1664525) + np.uint32(1013904223)      # wraps modulo 2**32
        u = (state.astype(np.float32) * np.float32(2.3283064e-10)).astype(np.float64)
        acc += np.exp(-u * u)
    return dict(fn=mc_gauss_lcg32, args=[seeds, partial, nthreads, nsamples],
                spec={'tid': parir.threads(nthreads)},
                check=[(partial, torch.from_numpy(acc / nsamples)),
                       (seeds, torch.from_numpy(state.astype(np.int64)))])


# ----- Kepler's equation E - e sin E = M by Newton's method, until the step is below tol -----

@parir.jit
def kepler_solve(M, e, E_out, iters, n, tol, maxiter):
    parir.label('i')
    for i in range(n):
        Mi = M[i]
        ei = e[i]
        E = Mi if ei < 0.8 else np.pi
        dE = 1.0
        it = 0
        while math.fabs(dE) > tol and it < maxiter:
            dE = (E - ei * math.sin(E) - Mi) / (1.0 - ei * math.cos(E))
            E -= dE
            it += 1
        E_out[i] = E
        iters[i] = it


def case_kepler(rng, device):
    n, tol, maxiter = 1000, 1e-10, 50
    M = positive(n, rng, dtype=torch.float64, device=device, lo=0.0, hi=2.0 * math.pi)
    e = positive(n, rng, dtype=torch.float64, device=device, lo=0.0, hi=0.95)
    E_out = poison(n, dtype=torch.float64, device=device)
    iters = poison(n, dtype=torch.int32, device=device)
    Mn, en = f64(M), f64(e)
    # the root by bisection (E - e sin E is increasing), then the Newton steps' count
    lo, hi = np.zeros(n), np.full(n, 2.0 * np.pi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        below = mid - en * np.sin(mid) < Mn
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    ref_E = 0.5 * (lo + hi)
    E = np.where(en < 0.8, Mn, np.pi)
    dE = np.ones(n)
    it = np.zeros(n, dtype=np.int64)
    for _ in range(maxiter):
        active = (np.abs(dE) > tol) & (it < maxiter)
        step = (E - en * np.sin(E) - Mn) / (1.0 - en * np.cos(E))
        dE = np.where(active, step, dE)
        E = np.where(active, E - step, E)
        it += active
    return dict(fn=kepler_solve, args=[M, e, E_out, iters, n, tol, maxiter],
                spec={'i': parir.threads(n)},
                check=[(E_out, torch.from_numpy(ref_E)), (iters, torch.from_numpy(it))])


# ----- uniform_filter1d(x, 2 * half + 1, mode='wrap'): periodic indices by Python's % ---------

@parir.jit
def smooth_periodic(x, y, n, half):
    parir.label('i')
    for i in range(n):
        s = 0.0
        for k in range(-half, half + 1):
            s += x[(i + k) % n]
        y[i] = s / (2 * half + 1)


def case_smooth_periodic(rng, device):
    n, half = 1000, 3
    x = nonzero(n, rng, device=device)
    y = poison(n, device=device)
    X = f64(x)
    ref = sum(np.roll(X, -k) for k in range(-half, half + 1)) / (2 * half + 1)
    return dict(fn=smooth_periodic, args=[x, y, n, half], spec={'i': parir.threads(n)},
                check=[(y, torch.from_numpy(ref))])


# ----- StandardScaler along each row: mean and std by block reductions, then the scaling -----

@parir.jit
def zscore_rows(X, Z, nrows, ncols, eps):
    parir.label('row')
    for i in range(nrows):
        s = 0.0
        parir.label('col')
        for j in range(ncols):
            s += X[i, j]
        mean = s / ncols
        ss = 0.0
        parir.label('col')
        for j in range(ncols):
            ss += (X[i, j] - mean) ** 2
        std = math.sqrt(ss / ncols)
        parir.label('col')
        for j in range(ncols):
            Z[i, j] = (X[i, j] - mean) / (std + eps)


def case_zscore(rng, device):
    nrows, ncols, eps = 31, 1000, 1e-8
    X = (2.0 + nonzero((nrows, ncols), rng)).to(device)
    Z = poison((nrows, ncols), device=device)
    Xn = f64(X)
    mu = Xn.mean(1, keepdims=True)
    sd = Xn.std(1, keepdims=True)
    return dict(fn=zscore_rows, args=[X, Z, nrows, ncols, eps],
                spec={'row': parir.threads(nrows), 'col': parir.threads(128).reduce()},
                check=[(Z, torch.from_numpy((Xn - mu) / (sd + eps)))])


# ----- Kahan's compensated sum of each row, in float32 ----------------------------------------

@parir.jit
def kahan_row_sums(x, out, nrows, ncols):
    parir.label('row')
    for i in range(nrows):
        s = np.float32(0.0)
        c = np.float32(0.0)
        for j in range(ncols):
            y = x[i, j] - c
            t = s + y
            c = (t - s) - y
            s = t
        out[i] = s


def case_kahan(rng, device):
    nrows, ncols = 3, 4097
    x = positive((nrows, ncols), rng, device=device, lo=0.1, hi=1.0)
    x[:, 0] = 4.0e5                    # each later term loses bits against the running sum
    out = poison(nrows, device=device)
    # a float32 sum without the compensation is off by about 1e-6 here
    return dict(fn=kahan_row_sums, args=[x, out, nrows, ncols], spec={'row': parir.threads(nrows)},
                check=[(out, torch.from_numpy(f64(x).sum(1)))], tol=(3e-7, 0.0))


# ----- filterpy's systematic_resample: normalized CDF by a scan, then a search per particle --

@parir.jit
def systematic_resample(weights, cumulative_sum, total, indexes, u0, N):
    with parir.gpu:
        total[0] = 0.0
    parir.label('n')
    for i in range(N):
        total[0] += weights[i]
    parir.label('scan')
    cumulative_sum[:] = parir.cumsum(weights[:])
    parir.label('n')
    for i in range(N):
        if i == N - 1:
            cumulative_sum[i] = 1.0           # avoid round-off error
        else:
            cumulative_sum[i] = cumulative_sum[i] / total[0]
    parir.label('n')
    for i in range(N):
        position = (u0 + i) / N
        # the first j with position < cumulative_sum[j]
        lo = 0
        hi = N - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if position < cumulative_sum[mid]:
                hi = mid
            else:
                lo = mid + 1
        indexes[i] = lo


def case_resample(rng, device):
    N = 1000
    u0 = np.float64(0.37)
    weights = positive(N, rng, dtype=torch.float64, device=device, lo=0.01, hi=1.0)
    weights[::7] *= 20.0                                       # a few heavy particles
    cumulative_sum = poison(N, dtype=torch.float64, device=device)
    total = poison(1, dtype=torch.float64, device=device)
    indexes = poison(N, dtype=torch.int32, device=device)
    W = f64(weights)
    cdf = np.cumsum(W) / W.sum()
    cdf[-1] = 1.0
    positions = (float(u0) + np.arange(N)) / N
    ref_idx = np.searchsorted(cdf, positions, side='right')
    return dict(fn=systematic_resample,
                args=[weights, cumulative_sum, total, indexes, u0, N],
                spec={'n': parir.threads(N).reduce(), 'scan': parir.threads(1024).scan()},
                check=[(indexes, torch.from_numpy(ref_idx)),
                       (cumulative_sum, torch.from_numpy(cdf)),
                       (total, torch.tensor([W.sum()], dtype=torch.float64))])


# ----- np.interp per row, each row with its own table: a function of one query and one row ---

def interp1(xq, xp, fp):
    n = len(xp)
    if xq <= xp[0]:
        return fp[0]
    elif xq >= xp[n - 1]:
        return fp[n - 1]
    else:
        lo = 0
        hi = n - 1
        while lo < hi - 1:
            mid = (lo + hi) // 2
            if xp[mid] <= xq:
                lo = mid
            else:
                hi = mid
        return fp[lo] + (fp[hi] - fp[lo]) * (xq - xp[lo]) / (xp[hi] - xp[lo])


@parir.jit
def interp_rows(x, xp, fp, out):
    nrows, nq = x.shape
    parir.label('row')
    for r in range(nrows):
        parir.label('q')
        for j in range(nq):
            out[r, j] = interp1(x[r, j], xp[r], fp[r])


def case_interp_rows(rng, device):
    nrows, nq, m = 31, 33, 17
    xp_np = np.sort(f64(positive((nrows, m), rng, dtype=torch.float64, lo=0.0, hi=1.0)), axis=1)
    xp = torch.from_numpy(xp_np.copy()).to(torch.float32).to(device)
    fp = nonzero((nrows, m), rng, device=device)
    x = positive((nrows, nq), rng, device=device, lo=-0.05, hi=1.05)
    out = poison((nrows, nq), device=device)
    XP, FP, X = f64(xp), f64(fp), f64(x)
    ref = np.stack([np.interp(X[r], XP[r], FP[r]) for r in range(nrows)])
    return dict(fn=interp_rows, args=[x, xp, fp, out],
                spec={'row': parir.threads(nrows), 'q': parir.threads(nq)},
                check=[(out, torch.from_numpy(ref))])


# ----- Marsaglia's polar method for normal variates, rejection in a while loop, LCG state ----

@parir.jit
def polar_normals(seeds, means, sumsq, nthreads, npairs):
    parir.label('tid')
    for tid in range(nthreads):
        state = seeds[tid]
        acc = 0.0
        acc2 = 0.0
        for k in range(npairs):
            s = 2.0
            u = 0.0
            v = 0.0
            while s >= 1.0 or s == 0.0:
                state = (state * 1103515245 + 12345) % 2147483648
                u = 2.0 * state / 2147483648.0 - 1.0
                state = (state * 1103515245 + 12345) % 2147483648
                v = 2.0 * state / 2147483648.0 - 1.0
                s = u * u + v * v
            factor = math.sqrt(-2.0 * math.log(s) / s)
            z0 = u * factor
            z1 = v * factor
            acc += z0 + z1
            acc2 += z0 * z0 + z1 * z1
        means[tid] = acc / (2 * npairs)
        sumsq[0] += acc2


def case_polar(rng, device):
    nthreads, npairs = 31, 40
    seeds = randint(nthreads, rng, 1, 2 ** 31, device=device)
    means = poison(nthreads, dtype=torch.float64, device=device)
    sumsq = torch.zeros(1, dtype=torch.float64, device=device)
    ref_means = np.zeros(nthreads)
    ref_sumsq = 0.0
    for t, st in enumerate(seeds.cpu().tolist()):
        acc = acc2 = 0.0
        for _ in range(npairs):
            s = 2.0
            while s >= 1.0 or s == 0.0:
                st = (st * 1103515245 + 12345) % 2 ** 31
                u = 2.0 * st / 2 ** 31 - 1.0
                st = (st * 1103515245 + 12345) % 2 ** 31
                v = 2.0 * st / 2 ** 31 - 1.0
                s = u * u + v * v
            factor = math.sqrt(-2.0 * math.log(s) / s)
            acc += u * factor + v * factor
            acc2 += (u * factor) ** 2 + (v * factor) ** 2
        ref_means[t] = acc / (2 * npairs)
        ref_sumsq += acc2
    return dict(fn=polar_normals, args=[seeds, means, sumsq, nthreads, npairs],
                spec={'tid': parir.threads(nthreads).reduce()},
                check=[(means, torch.from_numpy(ref_means)),
                       (sumsq, torch.tensor([ref_sumsq], dtype=torch.float64))])


# ----- np.histogram per series, each with its own edges: np.digitize through searchsorted ----

def searchsorted_right(a, v):
    lo = 0
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def bin_index(edges, v):
    # -1 outside [edges[0], edges[-1]]; the last edge closes the last bin, as in np.histogram
    nbins = len(edges) - 1
    b = searchsorted_right(edges, v) - 1
    if b == nbins and v == edges[nbins]:
        b = nbins - 1
    elif b >= nbins:
        b = -1
    return b


@parir.jit
def histogram_rows(data, edges, hist, nseries, n):
    parir.label('series')
    for s in range(nseries):
        parir.label('i')
        for i in range(n):
            b = bin_index(edges[s], data[s, i])
            if b >= 0:
                parir.atomic_add(hist[s, b], 1)


def case_histogram_rows(rng, device):
    nseries, n, nbins = 4, 1000, 9
    data = nonzero((nseries, n), rng, device=device, lo=0.0, hi=1.0)
    E = np.sort(f64(positive((nseries, nbins + 1), rng, lo=-0.9, hi=0.9)).astype(np.float32), 1)
    edges = torch.from_numpy(E.copy()).to(device)
    hist = torch.zeros((nseries, nbins), dtype=torch.int32, device=device)
    D = f64(data)
    ref = np.stack([np.histogram(D[s], E[s].astype(np.float64))[0] for s in range(nseries)])
    return dict(fn=histogram_rows, args=[data, edges, hist, nseries, n],
                spec={'series': parir.threads(nseries), 'i': parir.threads(256)},
                check=[(hist, torch.from_numpy(ref))])


# ----- the Lorenz system by forward Euler, one trajectory per thread -------------------------

SIGMA = 10.0
RHO = 28.0
BETA = 8.0 / 3.0


@parir.jit
def lorenz_euler(state, dt, nsteps, n):
    parir.label('traj')
    for p in range(n):
        x = state[p, 0]
        y = state[p, 1]
        z = state[p, 2]
        for step in range(nsteps):
            dx = SIGMA * (y - x)
            dy = x * (RHO - z) - y
            dz = x * y - BETA * z
            x += dt * dx
            y += dt * dy
            z += dt * dz
        state[p, 0] = x
        state[p, 1] = y
        state[p, 2] = z


def case_lorenz(rng, device):
    n, nsteps, dt = 33, 50, 0.005
    state = (10.0 * nonzero((n, 3), rng, dtype=torch.float64)).to(device)
    S = f64(state)
    x, y, z = S[:, 0].copy(), S[:, 1].copy(), S[:, 2].copy()
    for _ in range(nsteps):
        dx, dy, dz = SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z
        x, y, z = x + dt * dx, y + dt * dy, z + dt * dz
    return dict(fn=lorenz_euler, args=[state, dt, nsteps, n], spec={'traj': parir.threads(n)},
                check=[(state, torch.from_numpy(np.stack([x, y, z], 1)))])


# ----- scipy.stats.linregress on each row: four sums in one reduction loop -------------------

@parir.jit
def linregress_rows(x, Y, slope, intercept, nrows, n):
    parir.label('row')
    for i in range(nrows):
        sx = 0.0
        sy = 0.0
        sxx = 0.0
        sxy = 0.0
        parir.label('k')
        for k in range(n):
            sx += x[k]
            sy += Y[i, k]
            sxx += x[k] * x[k]
            sxy += x[k] * Y[i, k]
        b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        slope[i] = b
        intercept[i] = (sy - b * sx) / n


def case_linregress(rng, device):
    nrows, n = 33, 1000
    x = torch.linspace(0.0, 1.0, n, dtype=torch.float64).to(device)
    Y = nonzero((nrows, n), rng, dtype=torch.float64, device=device)
    Y += torch.arange(nrows, dtype=torch.float64, device=device)[:, None] * x
    slope = poison(nrows, dtype=torch.float64, device=device)
    intercept = poison(nrows, dtype=torch.float64, device=device)
    X, Yn = f64(x), f64(Y)
    xm, ym = X.mean(), Yn.mean(1)
    b = ((X - xm) * (Yn - ym[:, None])).sum(1) / ((X - xm) ** 2).sum()
    return dict(fn=linregress_rows, args=[x, Y, slope, intercept, nrows, n],
                spec={'row': parir.threads(nrows), 'k': parir.threads(256).reduce()},
                check=[(slope, torch.from_numpy(b)), (intercept, torch.from_numpy(ym - b * xm))],
                tol=(1e-8, 1e-8))


# ----- scipy.signal.medfilt: zero-padded window, insertion sort in a scratch row -------------

@parir.jit
def medfilt(x, y, buf, n, kernel_size):
    half = kernel_size // 2
    parir.label('i')
    for i in range(n):
        for k in range(kernel_size):
            j = i + k - half
            if j < 0 or j >= n:
                buf[i, k] = 0.0
            else:
                buf[i, k] = x[j]
        # insertion sort of the window
        for k in range(1, kernel_size):
            key = buf[i, k]
            m = k - 1
            while m >= 0 and buf[i, m] > key:
                buf[i, m + 1] = buf[i, m]
                m -= 1
            buf[i, m + 1] = key
        y[i] = buf[i, half]


def case_medfilt(rng, device):
    n, kernel_size = 1000, 5
    x = nonzero(n, rng, device=device)
    y = poison(n, device=device)
    buf = poison((n, kernel_size), device=device)
    X = np.concatenate([np.zeros(2), f64(x), np.zeros(2)])
    windows = np.lib.stride_tricks.sliding_window_view(X, kernel_size)
    return dict(fn=medfilt, args=[x, y, buf, n, kernel_size], spec={'i': parir.threads(n)},
                check=[(y, torch.from_numpy(np.median(windows, axis=1))),
                       (buf, torch.from_numpy(np.sort(windows, axis=1)))])


# ----- the Thomas algorithm for many tridiagonal systems, one system per thread ---------------

@parir.jit
def thomas_batched(a, b, c, d, x, cp, dp, nsys, n):
    parir.label('sys')
    for s in range(nsys):
        cp[s, 0] = c[s, 0] / b[s, 0]
        dp[s, 0] = d[s, 0] / b[s, 0]
        for i in range(1, n):
            denom = b[s, i] - a[s, i] * cp[s, i - 1]
            if i < n - 1:
                cp[s, i] = c[s, i] / denom
            dp[s, i] = (d[s, i] - a[s, i] * dp[s, i - 1]) / denom
        x[s, n - 1] = dp[s, n - 1]
        for i in range(n - 2, -1, -1):
            x[s, i] = dp[s, i] - cp[s, i] * x[s, i + 1]


def case_thomas(rng, device):
    nsys, n = 31, 33
    a = nonzero((nsys, n), rng, dtype=torch.float64, device=device)
    c = nonzero((nsys, n), rng, dtype=torch.float64, device=device)
    b = 4.0 + positive((nsys, n), rng, dtype=torch.float64, device=device)  # dominant diagonal
    d = nonzero((nsys, n), rng, dtype=torch.float64, device=device)
    x = poison((nsys, n), dtype=torch.float64, device=device)
    cp = poison((nsys, n), dtype=torch.float64, device=device)
    dp = poison((nsys, n), dtype=torch.float64, device=device)
    A, B, C, Dn = f64(a), f64(b), f64(c), f64(d)
    ref = np.zeros((nsys, n))
    for s in range(nsys):
        T = np.diag(B[s]) + np.diag(A[s, 1:], -1) + np.diag(C[s, :-1], 1)
        ref[s] = np.linalg.solve(T, Dn[s])
    return dict(fn=thomas_batched, args=[a, b, c, d, x, cp, dp, nsys, n],
                spec={'sys': parir.threads(nsys)}, check=[(x, torch.from_numpy(ref))])


# ----- RK4 with a step function, each particle's ODE parameters in a row of a table ----------

def rhs(t, y, params):
    # y' = -k y + A sin(w t), params = (k, A, w)
    return -params[0] * y + params[1] * math.sin(params[2] * t)


def rk4_step(t, y, h, params):
    k1 = rhs(t, y, params)
    k2 = rhs(t + 0.5 * h, y + 0.5 * h * k1, params)
    k3 = rhs(t + 0.5 * h, y + 0.5 * h * k2, params)
    k4 = rhs(t + h, y + h * k3, params)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@parir.jit
def rk4_table(y, params, dt, nsteps, n):
    parir.label('p')
    for p in range(n):
        yp = y[p]
        for step in range(nsteps):
            yp = rk4_step(step * dt, yp, dt, params[p])
        y[p] = yp


def case_rk4_table(rng, device):
    n, nsteps, dt = 33, 20, 0.05
    y = nonzero(n, rng, device=device)
    params = torch.stack([positive(n, rng, lo=0.5, hi=2.0), nonzero(n, rng),
                          positive(n, rng, lo=1.0, hi=5.0)], 1).to(device)
    P, Y = f64(params), f64(y)

    def f(t, Y):
        return -P[:, 0] * Y + P[:, 1] * np.sin(P[:, 2] * t)

    for step in range(nsteps):
        t = step * dt
        k1 = f(t, Y)
        k2 = f(t + 0.5 * dt, Y + 0.5 * dt * k1)
        k3 = f(t + 0.5 * dt, Y + 0.5 * dt * k2)
        k4 = f(t + dt, Y + dt * k3)
        Y = Y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return dict(fn=rk4_table, args=[y, params, dt, nsteps, n], spec={'p': parir.threads(n)},
                check=[(y, torch.from_numpy(Y))])


# ----- splitmix64 streams: uniform doubles from the top 53 bits, state in uint64 -------------

def splitmix64(z):
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    return z ^ (z >> 31)


@parir.jit
def uniform_streams(state, out, nstreams, m):
    parir.label('stream')
    for i in range(nstreams):
        s = state[i]
        for k in range(m):
            s += 0x9E3779B97F4A7C15
            out[i, k] = (splitmix64(s) >> 11) * (1.0 / 9007199254740992.0)
        state[i] = s


def case_splitmix(rng, device):
    nstreams, m = 33, 31
    seeds = randint(nstreams, rng, 0, 2 ** 62)
    state = seeds.to(torch.uint64).to(device)
    out = poison((nstreams, m), dtype=torch.float64, device=device)
    golden = np.uint64(0x9E3779B97F4A7C15)
    s = seeds.numpy().astype(np.uint64)
    ref = np.zeros((nstreams, m))
    with np.errstate(over='ignore'):
        for k in range(m):
            s = s + golden
            z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            ref[:, k] = (z >> np.uint64(11)).astype(np.float64) / 9007199254740992.0
    ref_state = torch.from_numpy(s.view(np.int64).copy()).to(torch.uint64)
    return dict(fn=uniform_streams, args=[state, out, nstreams, m],
                spec={'stream': parir.threads(nstreams)},
                check=[(out, torch.from_numpy(ref)), (state, ref_state)])


# ----- sklearn's normalize(X, norm='l1') on a few long rows, each row over several blocks ----

@parir.jit
def l1_normalize_rows(X, Y, nrows, ncols):
    parir.label('row')
    for i in range(nrows):
        norm = 0.0
        parir.label('col')
        for j in range(ncols):
            norm += math.fabs(X[i, j])
        inv = 1.0 / norm if norm > 0.0 else 0.0
        parir.label('col')
        for j in range(ncols):
            Y[i, j] = X[i, j] * inv


def case_l1_normalize(rng, device):
    nrows, ncols = 3, 4097
    X = nonzero((nrows, ncols), rng, device=device)
    X[1] = 0.0                                                 # an all-zero row stays zero
    Y = poison((nrows, ncols), device=device)
    Xn = f64(X)
    norm = np.abs(Xn).sum(1, keepdims=True)
    ref = np.where(norm > 0, Xn / np.where(norm > 0, norm, 1.0), 0.0)
    return dict(fn=l1_normalize_rows, args=[X, Y, nrows, ncols],
                spec={'row': parir.threads(nrows), 'col': parir.threads(2048).reduce()},
                check=[(Y, torch.from_numpy(ref))])


# ----- a unicycle motion model per particle, the heading kept in [0, 2 pi) by math.fmod ------

@parir.jit
def unicycle(pose, v, omega, dt, nsteps, n):
    parir.label('p')
    for p in range(n):
        x = pose[p, 0]
        y = pose[p, 1]
        theta = pose[p, 2]
        for step in range(nsteps):
            x += v[p] * math.cos(theta) * dt
            y += v[p] * math.sin(theta) * dt
            theta = math.fmod(theta + omega[p] * dt, 2.0 * math.pi)
            if theta < 0.0:
                theta += 2.0 * math.pi
        pose[p, 0] = x
        pose[p, 1] = y
        pose[p, 2] = theta


def case_unicycle(rng, device):
    n, nsteps, dt = 1000, 12, 0.1
    pose = torch.stack([nonzero(n, rng, dtype=torch.float64), nonzero(n, rng, dtype=torch.float64),
                        positive(n, rng, dtype=torch.float64, lo=0.0, hi=6.28)], 1).to(device)
    v = positive(n, rng, dtype=torch.float64, device=device, lo=0.5, hi=2.0)
    omega = nonzero(n, rng, dtype=torch.float64, device=device, lo=1.0, hi=5.0)
    P, V, W = f64(pose), f64(v), f64(omega)
    x, y, th = P[:, 0].copy(), P[:, 1].copy(), P[:, 2].copy()
    for _ in range(nsteps):
        x += V * np.cos(th) * dt
        y += V * np.sin(th) * dt
        th = np.fmod(th + W * dt, 2.0 * np.pi)
        th = np.where(th < 0.0, th + 2.0 * np.pi, th)
    return dict(fn=unicycle, args=[pose, v, omega, dt, nsteps, n], spec={'p': parir.threads(n)},
                check=[(pose, torch.from_numpy(np.stack([x, y, th], 1)))])


# ----- np.trapz(y, x) of each row, written with NumPy's shifted slices -----------------------

@parir.jit
def trapz_rows(y, x, out, nrows):
    parir.label('row')
    for i in range(nrows):
        parir.label('col')
        out[i] = parir.sum((x[1:] - x[:-1]) * (y[i, 1:] + y[i, :-1])) / 2.0


def case_trapz_rows(rng, device):
    nrows, n = 31, 4097
    x = torch.from_numpy(np.sort(f64(positive(n, rng, dtype=torch.float64, lo=0.0, hi=3.0))))
    x = x.to(device)
    y = nonzero((nrows, n), rng, device=device)
    out = poison(nrows, device=device)
    X, Y = f64(x), f64(y)
    ref = (np.diff(X)[None, :] * (Y[:, 1:] + Y[:, :-1])).sum(1) / 2.0
    return dict(fn=trapz_rows, args=[y, x, out, nrows],
                spec={'row': parir.threads(nrows), 'col': parir.threads(256).reduce()},
                check=[(out, torch.from_numpy(ref))])


# ----- np.gradient(f, h): central differences inside, one-sided at the two ends --------------

@parir.jit
def gradient(f, g, n, h):
    parir.label('i')
    g[1:-1] = (f[2:] - f[:-2]) / (2.0 * h)
    with parir.gpu:
        g[0] = (f[1] - f[0]) / h
        g[n - 1] = (f[n - 1] - f[n - 2]) / h


def case_gradient(rng, device):
    n, h = 1000, np.float32(0.25)
    f = nonzero(n, rng, device=device)
    g = poison(n, device=device)
    F = f64(f)
    ref = np.gradient(F, float(h))
    return dict(fn=gradient, args=[f, g, n, h], spec={'i': parir.threads(n)},
                check=[(g, torch.from_numpy(ref))])


CASES = {
    "nd_interp": case_interp,
    "nd_cumtrapz": case_cumtrapz,
    "nd_rolling_mean_std": case_rolling,
    "nd_rk4": case_rk4,
    "nd_mc_pi_lcg": case_mc_pi_lcg,
    "nd_knn3": case_knn3,
    "nd_pairwise_distances": case_pairwise,
    "nd_horner": case_horner,
    "nd_ppoly_eval": case_ppoly,
    "nd_csr_matvec": case_csr,
    "nd_segment_sum_max": case_segments,
    "nd_compact": case_compact,
    "nd_kalman": case_kalman,
    "nd_garch": case_garch,
    "nd_welford": case_welford,
    "nd_histogram": case_histogram,
    "nd_mc_gauss_lcg32": case_mc_lcg32,
    "nd_kepler_newton": case_kepler,
    "nd_smooth_periodic": case_smooth_periodic,
    "nd_zscore_rows": case_zscore,
    "nd_kahan_row_sums": case_kahan,
    "nd_systematic_resample": case_resample,
    "nd_interp_rows": case_interp_rows,
    "nd_polar_normals": case_polar,
    "nd_histogram_rows": case_histogram_rows,
    "nd_lorenz_euler": case_lorenz,
    "nd_linregress_rows": case_linregress,
    "nd_medfilt": case_medfilt,
    "nd_thomas": case_thomas,
    "nd_rk4_table": case_rk4_table,
    "nd_splitmix64": case_splitmix,
    "nd_l1_normalize_rows": case_l1_normalize,
    "nd_unicycle": case_unicycle,
    "nd_trapz_rows": case_trapz_rows,
    "nd_gradient": case_gradient,
}
