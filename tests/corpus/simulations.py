"""Scientific and numerical GPU codes, ported the way their authors wrote them (their variable
names, their loops, their helpers): Rodinia's hotspot, srad, pathfinder, kmeans and backprop,
the CUDA samples' Black-Scholes and conjugate gradient, a lattice-Boltzmann D2Q9 step, a
Lennard-Jones force loop with a cutoff, a 2-D wave equation in time levels passed as views, and
Monte Carlo estimates from pre-generated random numbers and from a xorshift generator."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- Rodinia hotspot: single_iteration, called twice per step with the buffers swapped ------

def single_iteration(result, temp, power, row, col, step_div_Cap, Rx_1, Ry_1, Rz_1, amb_temp):
    parir.label('row')
    for r in range(row):
        parir.label('col')
        for c in range(col):
            # The CUDA kernel clamps its neighbours at the chip's edges.
            N = r - 1 if r > 0 else 0
            S = r + 1 if r < row - 1 else row - 1
            W = c - 1 if c > 0 else 0
            E = c + 1 if c < col - 1 else col - 1
            index = r * col + c
            result[index] = temp[index] + step_div_Cap * (
                power[index]
                + (temp[S * col + c] + temp[N * col + c] - 2.0 * temp[index]) * Ry_1
                + (temp[r * col + E] + temp[r * col + W] - 2.0 * temp[index]) * Rx_1
                + (amb_temp - temp[index]) * Rz_1)


@parir.jit
def compute_tran_temp(result, temp, power, num_iterations, row, col, step_div_Cap, Rx_1,
                      Ry_1, Rz_1, amb_temp):
    for i in range(0, num_iterations, 2):
        single_iteration(result, temp, power, row, col, step_div_Cap, Rx_1, Ry_1, Rz_1,
                         amb_temp)
        single_iteration(temp, result, power, row, col, step_div_Cap, Rx_1, Ry_1, Rz_1,
                         amb_temp)


def case_hotspot(rng, device):
    row, col, num_iterations = 33, 31, 4
    # Rodinia's chip constants (hotspot.c)
    MAX_PD, PRECISION, SPEC_HEAT_SI, K_SI, FACTOR_CHIP = 3.0e6, 0.001, 1.75e6, 100, 0.5
    t_chip, chip_height, chip_width, amb_temp = 0.0005, 0.016, 0.016, 80.0
    grid_height, grid_width = chip_height / row, chip_width / col
    Cap = FACTOR_CHIP * SPEC_HEAT_SI * t_chip * grid_width * grid_height
    Rx = grid_width / (2.0 * K_SI * t_chip * grid_height)
    Ry = grid_height / (2.0 * K_SI * t_chip * grid_width)
    Rz = t_chip / (K_SI * grid_height * grid_width)
    max_slope = MAX_PD / (FACTOR_CHIP * t_chip * SPEC_HEAT_SI)
    step = PRECISION / max_slope
    consts = [np.float32(step / Cap), np.float32(1 / Rx), np.float32(1 / Ry), np.float32(1 / Rz)]
    temp = positive(row * col, rng, device=device, lo=320.0, hi=345.0)
    power = positive(row * col, rng, device=device, lo=0.0, hi=0.5)
    result = poison(row * col, device=device)
    t, p = f64(temp).reshape(row, col), f64(power).reshape(row, col)
    sdc, rx1, ry1, rz1 = (float(v) for v in consts)

    def step_ref(src):
        N = np.vstack([src[:1], src[:-1]])
        S = np.vstack([src[1:], src[-1:]])
        W = np.hstack([src[:, :1], src[:, :-1]])
        E = np.hstack([src[:, 1:], src[:, -1:]])
        return src + sdc * (p + (S + N - 2.0 * src) * ry1 + (E + W - 2.0 * src) * rx1
                            + (amb_temp - src) * rz1)

    for _ in range(0, num_iterations, 2):
        r = step_ref(t)
        t = step_ref(r)
    return dict(fn=compute_tran_temp,
                args=[result, temp, power, num_iterations, row, col, *consts, amb_temp],
                spec={'row': parir.threads(row), 'col': parir.threads(col)},
                # temperatures near 330 K change by a few mK a step: compare at float32's grain
                tol=(1e-6, 1e-6),
                check=[(result, torch.from_numpy(r.ravel())), (temp, torch.from_numpy(t.ravel()))])


# ----- Rodinia srad (v1, OpenMP loop order), the ROI statistics on the GPU ---------------------

@parir.jit
def srad(J, c, dN, dS, dW, dE, iN, iS, jW, jE, q0sqr, rows, cols, r1, r2, c1, c2, size_R, λ,
         niter):
    for iter in range(niter):
        with parir.gpu:
            sum = 0.0
            sum2 = 0.0
            parir.label('roi')
            for i in range(r1, r2 + 1):
                for j in range(c1, c2 + 1):
                    tmp = J[i * cols + j]
                    sum += tmp
                    sum2 += tmp * tmp
            meanROI = sum / size_R
            varROI = (sum2 / size_R) - meanROI * meanROI
            q0sqr[0] = varROI / (meanROI * meanROI)

        parir.label('i')
        for i in range(rows):
            parir.label('j')
            for j in range(cols):
                k = i * cols + j
                Jc = J[k]
                # directional derivatives
                dN[k] = J[iN[i] * cols + j] - Jc
                dS[k] = J[iS[i] * cols + j] - Jc
                dW[k] = J[i * cols + jW[j]] - Jc
                dE[k] = J[i * cols + jE[j]] - Jc
                G2 = (dN[k] * dN[k] + dS[k] * dS[k] + dW[k] * dW[k] + dE[k] * dE[k]) / (Jc * Jc)
                L = (dN[k] + dS[k] + dW[k] + dE[k]) / Jc
                num = (0.5 * G2) - ((1.0 / 16.0) * (L * L))
                den = 1 + (.25 * L)
                qsqr = num / (den * den)
                # diffusion coefficient (equ 33)
                den = (qsqr - q0sqr[0]) / (q0sqr[0] * (1 + q0sqr[0]))
                c[k] = 1.0 / (1.0 + den)
                # saturate diffusion coefficient
                if c[k] < 0:
                    c[k] = 0
                elif c[k] > 1:
                    c[k] = 1

        parir.label('i')
        for i in range(rows):
            parir.label('j')
            for j in range(cols):
                k = i * cols + j
                cN = c[k]
                cS = c[iS[i] * cols + j]
                cW = c[k]
                cE = c[i * cols + jE[j]]
                D = cN * dN[k] + cS * dS[k] + cW * dW[k] + cE * dE[k]
                J[k] = J[k] + 0.25 * λ * D


def case_srad(rng, device):
    rows, cols, niter = 31, 33, 2
    r1, r2, c1, c2 = 0, 15, 2, 20
    size_R = (r2 - r1 + 1) * (c2 - c1 + 1)
    λ = np.float32(0.5)
    I = positive(rows * cols, rng, dtype=torch.float64, lo=0.0, hi=1.0)
    J = torch.exp(I).float().to(device)
    iN = torch.tensor([max(i - 1, 0) for i in range(rows)], dtype=torch.int32, device=device)
    iS = torch.tensor([min(i + 1, rows - 1) for i in range(rows)], dtype=torch.int32,
                      device=device)
    jW = torch.tensor([max(j - 1, 0) for j in range(cols)], dtype=torch.int32, device=device)
    jE = torch.tensor([min(j + 1, cols - 1) for j in range(cols)], dtype=torch.int32,
                      device=device)
    c, dN, dS, dW, dE = (poison(rows * cols, device=device) for _ in range(5))
    q0sqr = poison(1, device=device)
    # reference
    Jr = f64(J).reshape(rows, cols)
    iNn, iSn, jWn, jEn = (f64(v).astype(np.int64) for v in (iN, iS, jW, jE))
    for _ in range(niter):
        roi = Jr[r1:r2 + 1, c1:c2 + 1]
        mean = roi.sum() / size_R
        var = (roi * roi).sum() / size_R - mean * mean
        q0 = var / (mean * mean)
        rN, rS = Jr[iNn, :] - Jr, Jr[iSn, :] - Jr
        rW, rE = Jr[:, jWn] - Jr, Jr[:, jEn] - Jr
        G2 = (rN ** 2 + rS ** 2 + rW ** 2 + rE ** 2) / (Jr * Jr)
        L = (rN + rS + rW + rE) / Jr
        num = 0.5 * G2 - (1.0 / 16.0) * L * L
        den = 1 + 0.25 * L
        qsqr = num / (den * den)
        den = (qsqr - q0) / (q0 * (1 + q0))
        cr = np.clip(1.0 / (1.0 + den), 0.0, 1.0)
        D = cr * rN + cr[iSn, :] * rS + cr * rW + cr[:, jEn] * rE
        Jr = Jr + 0.25 * float(λ) * D
    spec = {'roi': parir.threads(256).reduce(), 'i': parir.threads(rows),
            'j': parir.threads(cols)}
    return dict(fn=srad, args=[J, c, dN, dS, dW, dE, iN, iS, jW, jE, q0sqr, rows, cols, r1, r2,
                               c1, c2, size_R, λ, niter],
                spec=spec,
                check=[(J, torch.from_numpy(Jr.ravel())), (c, torch.from_numpy(cr.ravel())),
                       (dE, torch.from_numpy(rE.ravel())),
                       (q0sqr, torch.tensor([q0], dtype=torch.float64))])


# ----- Rodinia pathfinder (OpenMP): the rows of a 2-row buffer alternate by t % 2 -------------

def MIN(a, b):
    return a if a <= b else b


@parir.jit
def dynproc(wall, buf, result, rows, cols):
    parir.label('n')
    for n in range(cols):
        buf[0, n] = wall[0, n]
    for t in range(rows - 1):
        parir.label('n')
        for n in range(cols):
            min = buf[t % 2, n]
            if n > 0:
                min = MIN(min, buf[t % 2, n - 1])
            if n < cols - 1:
                min = MIN(min, buf[t % 2, n + 1])
            buf[1 - t % 2, n] = wall[t + 1, n] + min
    parir.label('n')
    for n in range(cols):
        result[n] = buf[(rows - 1) % 2, n]


def case_pathfinder(rng, device):
    rows, cols = 20, 1000
    wall = randint((rows, cols), rng, 0, 10, dtype=torch.int32, device=device)
    buf = poison((2, cols), dtype=torch.int32, device=device)
    result = poison(cols, dtype=torch.int32, device=device)
    w = f64(wall).astype(np.int64)
    src = w[0].copy()
    for t in range(rows - 1):
        left = np.concatenate([src[:1], src[:-1]])
        right = np.concatenate([src[1:], src[-1:]])
        src = w[t + 1] + np.minimum(np.minimum(left, src), right)
    return dict(fn=dynproc, args=[wall, buf, result, rows, cols],
                spec={'n': parir.threads(cols)},
                check=[(result, torch.from_numpy(src).to(torch.int32))])


# ----- Rodinia kmeans (kmeans_cuda_kernel.cu's kmeansPoint), features as the flipped view -----

@parir.jit
def kmeansPoint(features, nfeatures, npoints, nclusters, membership, clusters, delta,
                new_centers, new_centers_len):
    # A module-level FLT_MAX is "not defined" for parir: the #define becomes a local.
    FLT_MAX = 3.402823466e+38
    parir.label('point_id')
    for point_id in range(npoints):
        index = -1
        min_dist = FLT_MAX
        # find the cluster center id with min distance to pt
        for i in range(nclusters):
            dist = 0.0
            for l in range(nfeatures):
                dist += ((features[l, point_id] - clusters[i, l]) *
                         (features[l, point_id] - clusters[i, l]))
            if dist < min_dist:
                min_dist = dist
                index = i
        if membership[point_id] != index:
            parir.atomic_add(delta[0], 1)
        # assign the membership to object point_id
        membership[point_id] = index
        parir.atomic_add(new_centers_len[index], 1)
        for j in range(nfeatures):
            parir.atomic_add(new_centers[index, j], features[j, point_id])


def case_kmeans(rng, device):
    npoints, nfeatures, nclusters = 1000, 4, 5
    feature = positive((npoints, nfeatures), rng, device=device, lo=0.0, hi=10.0)
    clusters = positive((nclusters, nfeatures), rng, device=device, lo=0.0, hi=10.0)
    membership = randint(npoints, rng, 0, nclusters, dtype=torch.int32, device=device)
    delta = torch.zeros(1, dtype=torch.int32, device=device)
    new_centers = torch.zeros((nclusters, nfeatures), device=device)
    new_centers_len = torch.zeros(nclusters, dtype=torch.int32, device=device)
    f, cl = f64(feature), f64(clusters)
    d2 = ((f[:, None, :] - cl[None, :, :]) ** 2).sum(-1)
    near = d2.argmin(1)
    ref_delta = int((near != f64(membership)).sum())
    ref_len = np.bincount(near, minlength=nclusters)
    ref_centers = np.zeros((nclusters, nfeatures))
    np.add.at(ref_centers, near, f)
    return dict(fn=kmeansPoint,
                args=[feature.t(), nfeatures, npoints, nclusters, membership, clusters, delta,
                      new_centers, new_centers_len],
                spec={'point_id': parir.threads(npoints)},
                check=[(membership, torch.from_numpy(near).to(torch.int32)),
                       (delta, torch.tensor([ref_delta], dtype=torch.int32)),
                       (new_centers_len, torch.from_numpy(ref_len).to(torch.int32)),
                       (new_centers, torch.from_numpy(ref_centers))])


# ----- Rodinia backprop: layerforward and adjust_weights, one spec for both --------------------

ETA = np.float32(0.3)        # eta value
MOMENTUM = np.float32(0.3)   # momentum value
n_in, n_hidden = 1000, 16
bp_spec = {'j': parir.threads(n_hidden), 'k': parir.threads(256).reduce()}


def squash(x):
    return 1.0 / (1.0 + math.exp(-x))


@parir.jit
def bpnn_layerforward(l1, l2, conn, n1, n2):
    # Set up thresholding unit
    with parir.gpu:
        l1[0] = 1.0
    # For each unit in second layer
    parir.label('j')
    for j in range(1, n2 + 1):
        # Compute weighted sum of its inputs
        sum = 0.0
        parir.label('k')
        for k in range(n1 + 1):
            sum += conn[k, j] * l1[k]
        l2[j] = squash(sum)


@parir.jit
def bpnn_adjust_weights(delta, ndelta, ly, nly, w, oldw, ETA, MOMENTUM):
    # Rodinia's #defines ETA and MOMENTUM become arguments: a parir function sees only its
    # arguments, loop variables and locals (a module-level constant is an error naming it).
    with parir.gpu:
        ly[0] = 1.0
    parir.label('j')
    for j in range(1, ndelta + 1):
        parir.label('k')
        for k in range(nly + 1):
            new_dw = ((ETA * delta[j] * ly[k]) + (MOMENTUM * oldw[k, j]))
            w[k, j] += new_dw
            oldw[k, j] = new_dw


def case_backprop_forward(rng, device):
    l1 = positive(n_in + 1, rng, device=device)
    conn = nonzero((n_in + 1, n_hidden + 1), rng, device=device, lo=0.0, hi=0.1)
    l2 = poison(n_hidden + 1, device=device)
    x = f64(l1)
    x[0] = 1.0
    s = x @ f64(conn)
    ref = 1.0 / (1.0 + np.exp(-s[1:]))
    return dict(fn=bpnn_layerforward, args=[l1, l2, conn, n_in, n_hidden], spec=bp_spec,
                check=[(l2[1:], torch.from_numpy(ref)), (l1[:1], torch.ones(1))])


def case_backprop_adjust(rng, device):
    delta = nonzero(n_hidden + 1, rng, device=device)
    ly = positive(n_in + 1, rng, device=device)
    w = nonzero((n_in + 1, n_hidden + 1), rng, device=device)
    oldw = nonzero((n_in + 1, n_hidden + 1), rng, device=device, lo=0.0, hi=0.1)
    d, y, wr, ow = f64(delta), f64(ly), f64(w), f64(oldw)
    y[0] = 1.0
    new_dw = float(ETA) * np.outer(y, d) + float(MOMENTUM) * ow
    wr[:, 1:] += new_dw[:, 1:]
    ow[:, 1:] = new_dw[:, 1:]
    return dict(fn=bpnn_adjust_weights,
                args=[delta, n_hidden, ly, n_in, w, oldw, ETA, MOMENTUM], spec=bp_spec,
                check=[(w, torch.from_numpy(wr)), (oldw, torch.from_numpy(ow))])


# ----- CUDA samples' BlackScholes: the body writes both results, CUDA's fast intrinsics -------

@parir.external("__fdividef", parir.CompileBackend.Cuda, parir.Target.Device)
def __fdividef(a: parir.float32, b: parir.float32) -> parir.float32:
    return a / b


@parir.external("__expf", parir.CompileBackend.Cuda, parir.Target.Device)
def __expf(a: parir.float32) -> parir.float32:
    return parir.exp(a)


@parir.external("__logf", parir.CompileBackend.Cuda, parir.Target.Device)
def __logf(a: parir.float32) -> parir.float32:
    return parir.log(a)


def cndGPU(d):
    # Polynomial approximation of cumulative normal distribution function
    A1 = 0.31938153
    A2 = -0.356563782
    A3 = 1.781477937
    A4 = -1.821255978
    A5 = 1.330274429
    RSQRT2PI = 0.39894228040143267793994605993438
    K = __fdividef(1.0, (1.0 + 0.2316419 * abs(d)))
    cnd = RSQRT2PI * __expf(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    if d > 0:
        cnd = 1.0 - cnd
    return cnd


def BlackScholesBodyGPU(CallResult, PutResult, opt, S, X, T, R, V):
    sqrtT = __fdividef(1.0, parir.rsqrt(T))
    d1 = __fdividef(__logf(S / X) + (R + 0.5 * V * V) * T, V * sqrtT)
    d2 = d1 - V * sqrtT
    CNDD1 = cndGPU(d1)
    CNDD2 = cndGPU(d2)
    # Calculate Call and Put simultaneously
    expRT = __expf(-R * T)
    CallResult[opt] = S * CNDD1 - X * expRT * CNDD2
    PutResult[opt] = X * expRT * (1.0 - CNDD2) - S * (1.0 - CNDD1)


@parir.jit
def BlackScholesGPU(d_CallResult, d_PutResult, d_StockPrice, d_OptionStrike, d_OptionYears,
                    Riskfree, Volatility, optN):
    parir.label('opt')
    for opt in range(optN):
        BlackScholesBodyGPU(d_CallResult, d_PutResult, opt, d_StockPrice[opt],
                            d_OptionStrike[opt], d_OptionYears[opt], Riskfree, Volatility)


def case_black_scholes(rng, device):
    optN = 1000
    RISKFREE, VOLATILITY = np.float32(0.02), np.float32(0.30)
    h_StockPrice = positive(optN, rng, device=device, lo=5.0, hi=30.0)
    h_OptionStrike = positive(optN, rng, device=device, lo=1.0, hi=100.0)
    h_OptionYears = positive(optN, rng, device=device, lo=0.25, hi=10.0)
    call, put = poison(optN, device=device), poison(optN, device=device)
    S, X, T = f64(h_StockPrice), f64(h_OptionStrike), f64(h_OptionYears)
    R, V = float(RISKFREE), float(VOLATILITY)
    cnd = np.vectorize(lambda d: 0.5 * math.erfc(-d / math.sqrt(2.0)))
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    expRT = np.exp(-R * T)
    ref_call = S * cnd(d1) - X * expRT * cnd(d2)
    ref_put = X * expRT * (1.0 - cnd(d2)) - S * (1.0 - cnd(d1))
    # threads stride over the options as the sample's grid-stride loop does
    return dict(fn=BlackScholesGPU,
                args=[call, put, h_StockPrice, h_OptionStrike, h_OptionYears, RISKFREE,
                      VOLATILITY, optN],
                spec={'opt': parir.threads(256)},
                check=[(call, torch.from_numpy(ref_call)), (put, torch.from_numpy(ref_put))])


# ----- Lattice Boltzmann D2Q9: BGK collision, then periodic pull streaming ---------------------

@parir.jit
def lbm_d2q9(f, ftmp, rho, ux, uy, w, ex, ey, ω, NX, NY, nsteps):
    for step in range(nsteps):
        parir.label('y')
        for y in range(NY):
            parir.label('x')
            for x in range(NX):
                ρ = 0.0
                u = 0.0
                v = 0.0
                for i in range(9):
                    ρ += f[i, y, x]
                    u += ex[i] * f[i, y, x]
                    v += ey[i] * f[i, y, x]
                u = u / ρ
                v = v / ρ
                rho[y, x] = ρ
                ux[y, x] = u
                uy[y, x] = v
                usqr = 1.5 * (u * u + v * v)
                for i in range(9):
                    eu = 3.0 * (ex[i] * u + ey[i] * v)
                    feq = w[i] * ρ * (1.0 + eu + 0.5 * eu * eu - usqr)
                    ftmp[i, y, x] = f[i, y, x] - ω * (f[i, y, x] - feq)
        parir.label('y')
        for y in range(NY):
            parir.label('x')
            for x in range(NX):
                for i in range(9):
                    f[i, y, x] = ftmp[i, (y - ey[i]) % NY, (x - ex[i] + NX) % NX]


def case_lbm_d2q9(rng, device):
    NX, NY, nsteps = 33, 6, 2
    τ = 0.8
    ω = np.float64(1.0 / τ)
    wv = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)
    exv = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1])
    eyv = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1])
    f0 = wv[:, None, None] * (1.0 + 0.1 * f64(nonzero((9, NY, NX), rng)))
    f = torch.from_numpy(f0.copy()).to(device)
    ftmp = poison((9, NY, NX), dtype=torch.float64, device=device)
    rho, ux, uy = (poison((NY, NX), dtype=torch.float64, device=device) for _ in range(3))
    w = torch.from_numpy(wv).to(device)
    ex = torch.from_numpy(exv).to(torch.int32).to(device)
    ey = torch.from_numpy(eyv).to(torch.int32).to(device)
    fr = f0.copy()
    for _ in range(nsteps):
        r = fr.sum(0)
        u = (exv[:, None, None] * fr).sum(0) / r
        v = (eyv[:, None, None] * fr).sum(0) / r
        usqr = 1.5 * (u * u + v * v)
        eu = 3.0 * (exv[:, None, None] * u + eyv[:, None, None] * v)
        feq = wv[:, None, None] * r * (1.0 + eu + 0.5 * eu * eu - usqr)
        ft = fr - float(ω) * (fr - feq)
        fr = np.stack([np.roll(np.roll(ft[i], eyv[i], axis=0), exv[i], axis=1)
                       for i in range(9)])
    return dict(fn=lbm_d2q9, args=[f, ftmp, rho, ux, uy, w, ex, ey, ω, NX, NY, nsteps],
                spec={'y': parir.threads(NY), 'x': parir.threads(NX)},
                check=[(f, torch.from_numpy(fr)), (ftmp, torch.from_numpy(ft)),
                       (rho, torch.from_numpy(r)), (ux, torch.from_numpy(u)),
                       (uy, torch.from_numpy(v))])


# ----- CUDA samples' conjugateGradient, its cuBLAS calls as loops, a dense matvec for SpMV -----

@parir.jit
def conjugate_gradient(A, x, r, p, Ax, r0, r1, dot, N, max_iter):
    # r1 = cublasSdot(r, r)
    with parir.gpu:
        r1[0] = 0.0
    parir.label('vec')
    for i in range(N):
        r1[0] += r[i] * r[i]
    for k in range(1, max_iter + 1):
        parir.label('vec')
        for i in range(N):
            if k > 1:
                b = r1[0] / r0[0]
                p[i] = b * p[i] + r[i]   # cublasSscal(p, b); cublasSaxpy(1, r, p)
            else:
                p[i] = r[i]              # cublasScopy(r, p)
        parir.label('row')
        for i in range(N):
            Ax[i] = 0.0
            parir.label('col')
            for j in range(N):
                Ax[i] += A[i, j] * p[j]
        with parir.gpu:
            dot[0] = 0.0
        parir.label('vec')
        for i in range(N):
            dot[0] += p[i] * Ax[i]
        parir.label('vec')
        for i in range(N):
            a = r1[0] / dot[0]
            x[i] += a * p[i]
            na = -a
            r[i] += na * Ax[i]
        with parir.gpu:
            r0[0] = r1[0]
            r1[0] = 0.0
        parir.label('vec')
        for i in range(N):
            r1[0] += r[i] * r[i]


def case_cg(rng, device):
    N, max_iter = 33, np.int64(6)
    M = f64(nonzero((N, N), rng, dtype=torch.float64))
    An = M @ M.T / N + np.eye(N)
    rhs = f64(nonzero(N, rng, dtype=torch.float64))
    A = torch.from_numpy(An).to(device)
    x = torch.zeros(N, dtype=torch.float64, device=device)
    r = torch.from_numpy(rhs.copy()).to(device)
    p, Ax = (poison(N, dtype=torch.float64, device=device) for _ in range(2))
    r0, r1, dot = (poison(1, dtype=torch.float64, device=device) for _ in range(3))
    xr, rr = np.zeros(N), rhs.copy()
    rho1 = rr @ rr
    pr = rr.copy()
    for k in range(1, int(max_iter) + 1):
        pr = (rho1 / rho0) * pr + rr if k > 1 else rr.copy()
        q = An @ pr
        a = rho1 / (pr @ q)
        xr, rr = xr + a * pr, rr - a * q
        rho0, rho1 = rho1, rr @ rr
    return dict(fn=conjugate_gradient, args=[A, x, r, p, Ax, r0, r1, dot, N, max_iter],
                spec={'vec': parir.threads(N).reduce(), 'row': parir.threads(N),
                      'col': parir.threads(32).reduce()},
                check=[(x, torch.from_numpy(xr)), (r, torch.from_numpy(rr)),
                       (r1, torch.tensor([rho1], dtype=torch.float64)), (p, torch.from_numpy(pr))])


# ----- Lennard-Jones forces with a cutoff and the minimum image, positions as a (3, N) view ----

@parir.jit
def lj_forces(pos, force, epot, N, L, rc2, ε, σ):
    parir.label('i')
    for i in range(N):
        fx = 0.0
        fy = 0.0
        fz = 0.0
        e = 0.0
        parir.label('j')
        for j in range(N):
            if j != i:
                dx = pos[0, i] - pos[0, j]
                dy = pos[1, i] - pos[1, j]
                dz = pos[2, i] - pos[2, j]
                # minimum image convention
                dx -= L * parir.round(dx / L)
                dy -= L * parir.round(dy / L)
                dz -= L * parir.round(dz / L)
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < rc2:
                    sr2 = σ * σ / r2
                    sr6 = sr2 * sr2 * sr2
                    ff = 24.0 * ε * sr6 * (2.0 * sr6 - 1.0) / r2
                    fx += ff * dx
                    fy += ff * dy
                    fz += ff * dz
                    e += 4.0 * ε * sr6 * (sr6 - 1.0)
        force[i, 0] = fx
        force[i, 1] = fy
        force[i, 2] = fz
        epot[i] = 0.5 * e


def case_lj(rng, device):
    N, L, rc = 61, 6.0, 2.5
    ε, σ = np.float64(1.0), 1.0
    g = np.array([(a, b, c) for a in range(4) for b in range(4) for c in range(4)], float)
    pick = torch.randperm(64, generator=rng)[:N].numpy()
    jitter = 0.15 * f64(nonzero((N, 3), rng, dtype=torch.float64))
    P = (g[pick] * 1.5 + 0.75 + jitter) % L
    pos = torch.from_numpy(P.copy()).to(device)          # (N, 3): the kernel reads pos.t()
    force = poison((N, 3), dtype=torch.float64, device=device)
    epot = poison(N, device=device)
    d = P[:, None, :] - P[None, :, :]
    d -= L * np.round(d / L)
    r2 = (d * d).sum(-1)
    np.fill_diagonal(r2, np.inf)
    inside = r2 < rc * rc
    sr6 = np.where(inside, (1.0 / r2) ** 3, 0.0)
    ff = np.where(inside, 24.0 * sr6 * (2.0 * sr6 - 1.0) / r2, 0.0)
    ref_force = (ff[:, :, None] * d).sum(1)
    ref_e = 0.5 * (4.0 * sr6 * (sr6 - 1.0)).sum(1)
    return dict(fn=lj_forces, args=[pos.t(), force, epot, N, L, rc * rc, ε, σ],
                spec={'i': parir.threads(N), 'j': parir.threads(32).reduce()},
                check=[(force, torch.from_numpy(ref_force)), (epot, torch.from_numpy(ref_e))])


# ----- 2-D wave equation, leapfrog in three time levels that are views of one tensor ----------

@parir.jit
def wave_2d(u_prev, u, u_next, c, Δt, Δx, nsteps):
    C2 = (c * Δt / Δx) ** 2     # the squared Courant number, once, from the scalars
    for n in range(nsteps):
        parir.label('y')
        parir.label('x')
        u_next[1:-1, 1:-1] = (2.0 * u[1:-1, 1:-1] - u_prev[1:-1, 1:-1]
                              + C2 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                      + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]))
        parir.label('y')
        parir.label('x')
        u_prev[:, :] = u[:, :]
        parir.label('y')
        parir.label('x')
        u[:, :] = u_next[:, :]


def case_wave_2d(rng, device):
    NY, NX, nsteps = 31, 1000, 4
    c, Δt, Δx = np.float32(1.0), np.float32(0.005), np.float32(0.01)
    U = torch.zeros((3, NY, NX), device=device)
    U[0, 1:-1, 1:-1] = nonzero((NY - 2, NX - 2), rng)
    U[1, 1:-1, 1:-1] = U[0, 1:-1, 1:-1] + 0.01 * nonzero((NY - 2, NX - 2), rng).to(device)
    U[2, 1:-1, 1:-1] = float("nan")
    up, uc = f64(U[0]), f64(U[1])
    C2 = (float(c) * float(Δt) / float(Δx)) ** 2
    for _ in range(nsteps):
        un = np.zeros_like(uc)
        un[1:-1, 1:-1] = (2.0 * uc[1:-1, 1:-1] - up[1:-1, 1:-1]
                          + C2 * (uc[2:, 1:-1] + uc[:-2, 1:-1] + uc[1:-1, 2:] + uc[1:-1, :-2]
                                  - 4.0 * uc[1:-1, 1:-1]))
        up, uc = uc, un
    return dict(fn=wave_2d, args=[U[0], U[1], U[2], c, Δt, Δx, nsteps],
                spec={'y': parir.threads(NY), 'x': parir.threads(256)},
                check=[(U[0], torch.from_numpy(up)), (U[1], torch.from_numpy(uc)),
                       (U[2], torch.from_numpy(uc))])


# ----- Monte Carlo π from pre-generated uniform pairs (as after curandGenerateUniform) --------

@parir.jit
def monte_carlo_pi(rand_x, rand_y, hits, π, N):
    with parir.gpu:
        hits[0] = 0
    parir.label('sample')
    for i in range(N):
        if rand_x[i] * rand_x[i] + rand_y[i] * rand_y[i] <= 1.0:
            hits[0] += 1
    with parir.gpu:
        π[0] = 4.0 * hits[0] / N


def case_monte_carlo_pi(rng, device):
    N = 4097
    samples = torch.rand((N, 2), generator=rng).to(device)   # one (x, y) pair per row
    hits = poison(1, dtype=torch.int64, device=device)
    π = poison(1, dtype=torch.float64, device=device)
    s = f64(samples)
    inside = int(((s[:, 0] ** 2 + s[:, 1] ** 2) <= 1.0).sum())
    return dict(fn=monte_carlo_pi, args=[samples[:, 0], samples[:, 1], hits, π, N],
                spec={'sample': parir.threads(N).reduce()},
                check=[(hits, torch.tensor([inside])),
                       (π, torch.tensor([4.0 * inside / N], dtype=torch.float64))])


# ----- Monte Carlo integral of 4 / (1 + x^2) with Marsaglia's xorshift32 per thread ----------

@parir.jit
def mc_xorshift(seeds, partial, nthreads, samples_per_thread):
    parir.label('tid')
    for tid in range(nthreads):
        # the state in int64, kept to 32 bits: with a uint32 state (as written in CUDA) the
        # kernel compiles, but seq=True fails: "lshift_cpu" not implemented for 'UInt32'
        xor = parir.int64(seeds[tid])
        acc = 0.0
        for s in range(samples_per_thread):
            xor ^= (xor << 13) & 0xFFFFFFFF
            xor ^= xor >> 17
            xor ^= (xor << 5) & 0xFFFFFFFF
            x = parir.float32(xor) * 2.3283064365386963e-10   # / 2**32
            acc += 4.0 / (1.0 + x * x)
        partial[tid] = acc / samples_per_thread
        seeds[tid] = xor


def case_mc_xorshift(rng, device):
    nthreads, samples_per_thread = 33, 64
    seeds64 = randint(nthreads, rng, 1, 2 ** 31)
    seeds = seeds64.to(torch.uint32).to(device)
    partial = poison(nthreads, device=device)
    state = f64(seeds64).astype(np.uint64)
    ref = np.zeros(nthreads)
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(samples_per_thread):
        state ^= (state << np.uint64(13)) & mask
        state ^= state >> np.uint64(17)
        state ^= (state << np.uint64(5)) & mask
        x = state.astype(np.float32).astype(np.float64) * 2.0 ** -32
        ref += 4.0 / (1.0 + x * x)
    return dict(fn=mc_xorshift, args=[seeds, partial, nthreads, samples_per_thread],
                spec={'tid': parir.threads(nthreads)},
                check=[(partial, torch.from_numpy(ref / samples_per_thread)),
                       (seeds, torch.from_numpy(state.astype(np.int64)))])


CASES = {
    "sim_hotspot": case_hotspot,
    "sim_srad": case_srad,
    "sim_pathfinder": case_pathfinder,
    "sim_kmeans": case_kmeans,
    "sim_backprop_forward": case_backprop_forward,
    "sim_backprop_adjust": case_backprop_adjust,
    "sim_black_scholes": case_black_scholes,
    "sim_lbm_d2q9": case_lbm_d2q9,
    "sim_cg": case_cg,
    "sim_lj_forces": case_lj,
    "sim_wave_2d": case_wave_2d,
    "sim_monte_carlo_pi": case_monte_carlo_pi,
    "sim_mc_xorshift": case_mc_xorshift,
}
