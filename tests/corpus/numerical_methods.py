"""Numerical methods as scientists port them from Fortran, C and NumPy: Newton and Brent, RKF45,
Gauss-Legendre, Clenshaw, Lentz's continued fractions, Lanczos gamma, erf, complex pairs, an FFT,
Jacobi 3x3 eigensolves, cyclic tridiagonal and pivoted LU solves, splines, a multigrid V-cycle."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ----- Lambert W by Newton's method, one element a thread, a data-dependent trip count ------

NEWTON_TOL, MAX_NEWTON = np.float64(1e-12), 50


@parir.jit
def lambert_w_newton(y, w, iters, n):
    parir.label('i')
    for i in range(n):
        yi = float(y[i])                    # float32 data, float64 iteration
        x, delta, it = math.log1p(yi), 1.0, 0
        while abs(delta) > NEWTON_TOL * (1.0 + abs(x)) and it < MAX_NEWTON:
            ex = math.exp(x)
            delta = (x * ex - yi) / (ex * (x + 1.0))
            x = x - delta
            it += 1
        w[i], iters[i] = x, it


def _lambert_newton(yv, tol):
    x, delta, it = math.log1p(yv), 1.0, 0
    while abs(delta) > tol * (1.0 + abs(x)) and it < MAX_NEWTON:
        ex = math.exp(x)
        delta = (x * ex - yv) / (ex * (x + 1.0))
        x, it = x - delta, it + 1
    return x, it


def case_lambert_w(rng, device):
    n = 1000
    y = positive(n, rng, device=device, lo=0.0, hi=20.0)
    y[0] = 0.0
    w, iters = poison(n, torch.float64, device), poison(n, torch.int32, device)
    ref_w, ref_it = np.zeros(n), np.zeros(n, dtype=np.int32)
    for i in range(n):
        while len({_lambert_newton(float(y[i]), f * NEWTON_TOL)[1] for f in (1.0, 1.01, 0.99)}) > 1:
            y[i] *= 0.5                                 # no trip count on a rounding edge
        ref_w[i], ref_it[i] = _lambert_newton(float(y[i]), NEWTON_TOL)
        assert abs(ref_w[i] * math.exp(ref_w[i]) - float(y[i])) < 1e-13 * (1.0 + float(y[i]))
    return dict(fn=lambert_w_newton, args=[y, w, iters, n], spec={'i': parir.threads(n)},
                check=[(w, _t(ref_w)), (iters, _t(ref_it))])


# The residual, a helper, tested in the `while` condition (other trip counts: only W checked)

def lambert_residual(x, y):
    ex = math.exp(x)
    return x * ex - y


@parir.jit
def lambert_w_residual(y, w, iters, n):
    parir.label('i')
    for i in range(n):
        yi = float(y[i])
        x, it = math.log1p(yi), 0
        while abs(lambert_residual(x, yi)) > NEWTON_TOL * (1.0 + yi) and it < MAX_NEWTON:
            x -= lambert_residual(x, yi) / (math.exp(x) * (x + 1.0))
            it += 1
        w[i], iters[i] = x, it


def case_lambert_w_residual(rng, device):
    case = case_lambert_w(rng, device)
    return dict(case, fn=lambert_w_residual, check=case['check'][:1])


# ----- bisection and Brent's method (Numerical Recipes' zbrent) for x^3 + p x = q ----------

BRENT_EPS, BRENT_ITMAX = 2.220446049250313e-16, 100


def cubic(x, p, q):
    return (x * x + p) * x - q


@parir.jit
def bisect(a, b, p, q, tol):
    fa, fb = cubic(a, p, q), cubic(b, p, q)
    if fa == 0.0:
        return a
    elif fb == 0.0:
        return b
    elif fa * fb > 0.0:
        return math.nan
    else:
        while b - a > tol:
            m = 0.5 * (a + b)
            fm = cubic(m, p, q)
            if fa * fm <= 0.0:
                b = m
            else:
                a, fa = m, fm
        return 0.5 * (a + b)


@parir.jit
def brent(x1, x2, p, q, tol):
    a, b, c = x1, x2, x2
    fa, fb = cubic(a, p, q), cubic(b, p, q)
    if (fa > 0.0 and fb > 0.0) or (fa < 0.0 and fb < 0.0):
        return math.nan
    else:
        fc, d, e = fb, 0.0, 0.0
        it, done = 0, False
        while not done and it < BRENT_ITMAX:
            if (fb > 0.0 and fc > 0.0) or (fb < 0.0 and fc < 0.0):
                c, fc, d, e = a, fa, b - a, b - a
            if abs(fc) < abs(fb):
                a, b, c = b, c, b
                fa, fb, fc = fb, fc, fb
            tol1 = 2.0 * BRENT_EPS * abs(b) + 0.5 * tol
            xm = 0.5 * (c - b)
            if abs(xm) <= tol1 or fb == 0.0:
                done = True
            else:
                if abs(e) >= tol1 and abs(fa) > abs(fb):
                    s = fb / fa
                    if a == c:
                        pp, qq = 2.0 * xm * s, 1.0 - s
                    else:
                        qq, r = fa / fc, fb / fc
                        pp = s * (2.0 * xm * qq * (qq - r) - (b - a) * (r - 1.0))
                        qq = (qq - 1.0) * (r - 1.0) * (s - 1.0)
                    if pp > 0.0:
                        qq = -qq
                    pp = abs(pp)
                    if 2.0 * pp < min(3.0 * xm * qq - abs(tol1 * qq), abs(e * qq)):
                        e, d = d, pp / qq
                    else:
                        d, e = xm, xm
                else:
                    d, e = xm, xm
                a, fa = b, fb
                b += d if abs(d) > tol1 else math.copysign(tol1, xm)
                fb = cubic(b, p, q)
                it += 1
        return b


@parir.jit
def cubic_roots(lo, hi, p, q, x_bisect, x_brent, tol, n):
    parir.label('i')
    for i in range(n):
        x_bisect[i] = bisect(lo[i], hi[i], p[i], q[i], tol)
        x_brent[i] = brent(lo[i], hi[i], p[i], q[i], tol)


def case_cubic_roots(rng, device):
    n = 31
    p = positive(n, rng, dtype=torch.float64, lo=0.1, hi=3.0)
    q = nonzero(n, rng, dtype=torch.float64, lo=0.1, hi=5.0)
    lo = torch.full((n,), -3.0, dtype=torch.float64)
    hi = positive(n, rng, dtype=torch.float64, lo=2.0, hi=4.0)
    q[0], lo[0] = 0.0, 0.0                              # the root at an end of the bracket
    lo[1], hi[1] = 5.0, 6.0                             # no root in the bracket
    P, Q = f64(p), f64(q)                               # Cardano:
    s = np.sqrt(Q * Q / 4.0 + P ** 3 / 27.0)
    ref = np.cbrt(Q / 2.0 + s) + np.cbrt(Q / 2.0 - s)
    ref[0], ref[1] = 0.0, np.nan
    x_bisect, x_brent = poison(n, torch.float64, device), poison(n, torch.float64, device)
    args = [lo.to(device), hi.to(device), p.to(device), q.to(device), x_bisect, x_brent,
            np.float64(1e-13), n]
    return dict(fn=cubic_roots, args=args, spec={'i': parir.threads(n)},
                check=[(x_bisect, _t(ref)), (x_brent, _t(ref))])


# ----- adaptive Runge-Kutta-Fehlberg 4(5) per trajectory, rejected steps shrink h ----------

RK_SAFETY, RK_MIN_SHRINK, RK_MAX_GROW = 0.9, 0.2, 5.0


def logistic(y, r, K):
    return r * y * (1.0 - y / K)


@parir.jit
def rkf45_step(y, h, r, K):
    k1 = h * logistic(y, r, K)
    k2 = h * logistic(y + k1 / 4.0, r, K)
    k3 = h * logistic(y + 3.0 / 32.0 * k1 + 9.0 / 32.0 * k2, r, K)
    k4 = h * logistic(y + 1932.0 / 2197.0 * k1 - 7200.0 / 2197.0 * k2 + 7296.0 / 2197.0 * k3,
                      r, K)
    k5 = h * logistic(y + 439.0 / 216.0 * k1 - 8.0 * k2 + 3680.0 / 513.0 * k3
                      - 845.0 / 4104.0 * k4, r, K)
    k6 = h * logistic(y - 8.0 / 27.0 * k1 + 2.0 * k2 - 3544.0 / 2565.0 * k3
                      + 1859.0 / 4104.0 * k4 - 11.0 / 40.0 * k5, r, K)
    y5 = (y + 16.0 / 135.0 * k1 + 6656.0 / 12825.0 * k3 + 28561.0 / 56430.0 * k4
          - 9.0 / 50.0 * k5 + 2.0 / 55.0 * k6)
    y4 = y + 25.0 / 216.0 * k1 + 1408.0 / 2565.0 * k3 + 2197.0 / 4104.0 * k4 - 0.2 * k5
    return y5, abs(y5 - y4)


@parir.jit
def rkf45_logistic(y0, rate, cap, t_end, y_out, naccept, nreject, h0, tol, n):
    parir.label('traj')
    for i in range(n):
        t, T, y, h, r, K = 0.0, t_end[i], float(y0[i]), h0, rate[i], cap[i]
        acc, rej = 0, 0
        while t < T:
            h = min(h, T - t)
            y5, err = rkf45_step(y, h, r, K)
            scale = tol * (1.0 + abs(y))
            if err <= scale:
                t, y, acc = t + h, y5, acc + 1
            else:
                rej += 1
            if err == 0.0:
                h = h * RK_MAX_GROW
            else:
                h = h * min(RK_MAX_GROW, max(RK_MIN_SHRINK, RK_SAFETY * (scale / err) ** 0.2))
        y_out[i], naccept[i], nreject[i] = y, acc, rej


def case_rkf45(rng, device):
    n = 33
    y0 = positive(n, rng, device=device, lo=0.05, hi=2.0)
    rate = positive(n, rng, dtype=torch.float64, device=device, lo=0.5, hi=3.0)
    cap = positive(n, rng, device=device, lo=1.0, hi=5.0)
    t_end = positive(n, rng, dtype=torch.float64, device=device, lo=1.0, hi=6.0)
    Y0, R, K, T = f64(y0), f64(rate), f64(cap), f64(t_end)
    ref = K * Y0 / (K * np.exp(-R * T) + Y0 * (1.0 - np.exp(-R * T)))
    y_out = poison(n, dtype=torch.float64, device=device)
    naccept, nreject = poison(n, torch.int32, device), poison(n, torch.int32, device)
    return dict(fn=rkf45_logistic,
                args=[y0, rate, cap, t_end, y_out, naccept, nreject, 1.0, np.float64(1e-10), n],
                spec={'traj': parir.threads(n)}, tol=(1e-7, 1e-8),
                check=[(y_out, _t(ref))])


# ----- composite Gauss-Legendre quadrature, the nodes and weights passed as tensors -------

@parir.jit
def gauss_legendre(lo, hi, alpha, beta, nodes, weights, out, nint, npts, nrows):
    parir.label('row')
    for r in range(nrows):
        a = float(lo[r])
        h = (float(hi[r]) - a) / nint
        total = 0.0
        parir.label('k')
        for k in range(nint):
            mid = a + (k + 0.5) * h
            for j in range(npts):
                x = mid + 0.5 * h * nodes[j]
                total += weights[j] * math.exp(-alpha[r] * x * x) * math.cos(beta[r] * x)
        out[r] = 0.5 * h * total


def case_gauss_legendre(rng, device):
    nrows, nint, npts = 1, 100, 5
    lo, hi, alpha, beta = (torch.tensor([v], device=device) for v in (-2.25, 1.75, 0.75, 3.5))
    xg, wg = np.polynomial.legendre.leggauss(npts)
    X, W = np.polynomial.legendre.leggauss(64)
    x = -0.25 + 2.0 * X                                 # [-2.25, 1.75]
    ref = np.array([2.0 * np.sum(W * np.exp(-0.75 * x * x) * np.cos(3.5 * x))])
    out = poison(nrows, device=device)
    return dict(fn=gauss_legendre,
                args=[lo, hi, alpha, beta, _t(xg).to(device), _t(wg).to(device), out, nint,
                      npts, nrows],
                spec={'row': parir.threads(nrows), 'k': parir.threads(64).reduce()},
                check=[(out, _t(ref))])


# ----- Chebyshev series by Clenshaw's recurrence, one series a block, one point a thread ----

@parir.jit
def chebyshev_clenshaw(coef, lo, hi, x, out, nseries, npts):
    parir.label('s')
    for s in range(nseries):
        parir.label('p')
        for p in range(npts):
            u = (2.0 * x[p] - lo[s] - hi[s]) / (hi[s] - lo[s])
            b1, b2 = 0.0, 0.0
            for k in range(coef.shape[1] - 1, 0, -1):
                b1, b2 = 2.0 * u * b1 - b2 + coef[s, k], b1
            out[s, p] = u * b1 - b2 + coef[s, 0]


def case_clenshaw(rng, device):
    nseries, npts, deg = 31, 33, 13
    coef = nonzero((nseries, deg), rng, device=device)
    lo = positive(nseries, rng, dtype=torch.float64, device=device, lo=-2.0, hi=-1.0)
    hi = positive(nseries, rng, dtype=torch.float64, device=device, lo=1.0, hi=2.0)
    x = positive(npts, rng, device=device, lo=-1.0, hi=1.0)
    C, L, H, X = f64(coef), f64(lo), f64(hi), f64(x)
    ref = np.stack([np.polynomial.chebyshev.chebval((2 * X - L[s] - H[s]) / (H[s] - L[s]), C[s])
                    for s in range(nseries)])
    out = poison((nseries, npts), dtype=torch.float64, device=device)
    return dict(fn=chebyshev_clenshaw, args=[coef, lo, hi, x, out, nseries, npts],
                spec={'s': parir.threads(nseries), 'p': parir.threads(npts)},
                check=[(out, _t(ref))])


# ----- the Lanczos gamma (g = 7, nine terms) with the reflection formula ---------------------

LANCZOS_G, SQRT_2PI = 7.0, 2.5066282746310002
LP0, LP1, LP2 = 0.99999999999980993, 676.5203681218851, -1259.1392167224028
LP3, LP4, LP5 = 771.32342877765313, -176.61502916214059, 12.507343278686905
LP6, LP7, LP8 = -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7


def lanczos_sum(z):
    return (LP0 + LP1 / (z + 1.0) + LP2 / (z + 2.0) + LP3 / (z + 3.0) + LP4 / (z + 4.0)
            + LP5 / (z + 5.0) + LP6 / (z + 6.0) + LP7 / (z + 7.0) + LP8 / (z + 8.0))


def lgamma_shifted(zz):
    # log Gamma(zz + 1) for zz >= -0.5
    t = zz + LANCZOS_G + 0.5
    return 0.5 * math.log(2.0 * math.pi) + (zz + 0.5) * math.log(t) - t + math.log(lanczos_sum(zz))


def gamma_shifted(zz):
    t = zz + LANCZOS_G + 0.5
    return SQRT_2PI * t ** (zz + 0.5) * math.exp(-t) * lanczos_sum(zz)


@parir.jit
def lanczos_lgamma(z):
    # log|Gamma(z)|, by reflection below 1/2
    if z < 0.5:
        return math.log(math.pi / abs(math.sin(math.pi * z))) - lgamma_shifted(-z)
    else:
        return lgamma_shifted(z - 1.0)


@parir.jit
def lanczos_gamma(z):
    if z < 0.5:
        return math.pi / (math.sin(math.pi * z) * gamma_shifted(-z))
    else:
        return gamma_shifted(z - 1.0)


# ----- the regularized incomplete gamma P(a, x): series, or Lentz's continued fraction ------

CF_EPS, FPMIN, CF_ITMAX = np.float64(1e-15), 1e-300, 200


def not_tiny(v):
    return FPMIN if abs(v) < FPMIN else v


@parir.jit
def gammp(a, x):
    gln = lanczos_lgamma(a)
    if x <= 0.0:
        return 0.0
    elif x < a + 1.0:
        ap, dl, total, it = a, 1.0 / a, 1.0 / a, 0
        while abs(dl) > abs(total) * CF_EPS and it < CF_ITMAX:
            ap += 1.0
            dl *= x / ap
            total += dl
            it += 1
        return total * math.exp(-x + a * math.log(x) - gln)
    else:
        b, c, dl, i = x + 1.0 - a, 1.0 / FPMIN, 2.0, 1
        d, h = 1.0 / b, 1.0 / b
        while abs(dl - 1.0) > CF_EPS and i < CF_ITMAX:
            an = -i * (i - a)
            b += 2.0
            d = 1.0 / not_tiny(an * d + b)
            c = not_tiny(b + an / c)
            dl = d * c
            h *= dl
            i += 1
        return 1.0 - math.exp(-x + a * math.log(x) - gln) * h


def _gammainc_ref(a, x):
    if a == round(a):                                   # 1 - e^-x sum x^k / k!
        return 1.0 - math.exp(-x) * sum(x ** k / math.factorial(k) for k in range(int(a)))
    # P(b + 1, x) = P(b, x) - x^b e^-x / G(b + 1) up from P(1/2, x) = erf(sqrt(x))
    return math.erf(math.sqrt(x)) - sum(x ** (b + 0.5) * math.exp(-x) / math.gamma(b + 1.5)
                                        for b in range(int(a)))


# ----- the regularized incomplete beta I_x(a, b), Numerical Recipes' betacf and betai -------

@parir.jit
def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, m, done = 1.0, 1, False
    d = 1.0 / not_tiny(1.0 - qab * x / qap)
    h = d
    while not done and m <= CF_ITMAX:
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / not_tiny(1.0 + aa * d)
        c = not_tiny(1.0 + aa / c)
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / not_tiny(1.0 + aa * d)
        c = not_tiny(1.0 + aa / c)
        dl = d * c
        h *= dl
        done = abs(dl - 1.0) < CF_EPS
        m += 1
    return h


@parir.jit
def betai(a, b, x):
    if x <= 0.0:
        return 0.0
    elif x >= 1.0:
        return 1.0
    else:
        bt = math.exp(lanczos_lgamma(a + b) - lanczos_lgamma(a) - lanczos_lgamma(b)
                      + a * math.log(x) + b * math.log(1.0 - x))
        if x < (a + 1.0) / (a + b + 2.0):
            return bt * betacf(a, b, x) / a
        else:
            return 1.0 - bt * betacf(b, a, 1.0 - x) / b


@parir.jit
def special_functions(z, gam, lgam, a, xg, pgam, ab, bb, xb, ibeta, n):
    parir.label('i')
    for i in range(n):
        gam[i] = lanczos_gamma(z[i])
        lgam[i] = lanczos_lgamma(z[i])
        pgam[i] = gammp(a[i], float(xg[i]))          # float32 x, float64 a
        ibeta[i] = betai(float(ab[i]), bb[i], xb[i])  # float32 a widened, float64 b


def case_special(rng, device):
    n = 33
    z = positive(n, rng, dtype=torch.float64, lo=-4.5, hi=12.0)
    z = torch.where((z < 0.5) & ((z - z.round()).abs() < 0.05), z - 0.1, z)
    a = torch.randint(1, 17, (n,), generator=rng).double() * 0.5
    xg = positive(n, rng, lo=0.01, hi=20.0)
    ab = torch.randint(1, 12, (n,), generator=rng).float()
    bb = torch.randint(1, 12, (n,), generator=rng).double()
    xb = positive(n, rng, dtype=torch.float64, lo=0.0, hi=1.0)
    xg[0], xb[0], xb[1] = 0.0, 0.0, 1.0
    ref = [[math.gamma(v) for v in f64(z)], [math.lgamma(v) for v in f64(z)],
           [_gammainc_ref(av, xv) for av, xv in zip(f64(a), f64(xg))], []]
    for av, bv, xv in zip(f64(ab).astype(int), f64(bb).astype(int), f64(xb)):
        m = av + bv - 1                                 # binomial tail for integer a, b
        ref[3].append(sum(math.comb(m, j) * xv ** j * (1 - xv) ** (m - j)
                          for j in range(av, m + 1)))
    outs = [poison(n, dtype=torch.float64, device=device) for _ in range(4)]
    args = [z.to(device), outs[0], outs[1], a.to(device), xg.to(device), outs[2], ab.to(device),
            bb.to(device), xb.to(device), outs[3], n]
    return dict(fn=special_functions, args=args, spec={'i': parir.threads(n)}, tol=(1e-10, 1e-12),
                check=[(o, _t(np.array(r))) for o, r in zip(outs, ref)])


# ----- erf and erfc: Numerical Recipes' erfcc, Abramowitz & Stegun 7.1.26, the library ----

AS_P, AS_A1, AS_A2, AS_A3 = 0.3275911, 0.254829592, -0.284496736, 1.421413741
AS_A4, AS_A5 = -1.453152027, 1.061405429


@parir.jit
def erf_approximations(x, erfc_nr, erf_as, erf_lib, erfc_lib, n):
    parir.label('i')
    for i in range(n):
        xi = x[i]
        z = abs(float(xi))
        t = 1.0 / (1.0 + 0.5 * z)
        ans = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
            0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
                1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
        erfc_nr[i] = ans if xi >= 0.0 else 2.0 - ans
        tt = 1.0 / (1.0 + AS_P * z)
        poly = ((((AS_A5 * tt + AS_A4) * tt + AS_A3) * tt + AS_A2) * tt + AS_A1) * tt
        erf_as[i] = math.copysign(1.0 - poly * math.exp(-z * z), xi)
        erf_lib[i], erfc_lib[i] = math.erf(xi), math.erfc(float(xi))


def case_erf(rng, device):
    n = 1000
    x = nonzero(n, rng, device=device, lo=0.0, hi=4.0)
    erf_ref, erfc_ref = (np.array([e(v) for v in f64(x)]) for e in (math.erf, math.erfc))
    outs = [poison(n, device=device), poison(n, dtype=torch.float64, device=device),
            poison(n, device=device), poison(n, dtype=torch.float64, device=device)]
    return dict(fn=erf_approximations, args=[x] + outs + [n], spec={'i': parir.threads(n)},
                tol=(1e-6, 3e-7),
                check=[(outs[0], _t(erfc_ref)), (outs[1], _t(erf_ref)), (outs[2], _t(erf_ref)),
                       (outs[3], _t(erfc_ref))])


# ----- Mandelbrot distance estimate: z and dz/dc carried as (re, im) pairs -----------------

ESCAPE2 = 1.0e6


@parir.jit
def mandelbrot_distance(cre, cim, dist, iters, h, w, maxit):
    parir.label('row')
    for r in range(h):
        parir.label('col')
        for c in range(w):
            cr, ci = cre[c], float(cim[r])      # float32 row coordinates, float64 orbit
            zr, zi, dr, di = 0.0, 0.0, 0.0, 0.0
            it = 0
            while zr * zr + zi * zi <= ESCAPE2 and it < maxit:
                dr, di = 2.0 * (zr * dr - zi * di) + 1.0, 2.0 * (zr * di + zi * dr)
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                it += 1
            if it == maxit:
                dist[r, c] = 0.0
            else:
                mz = math.sqrt(zr * zr + zi * zi)
                dist[r, c] = mz * math.log(mz) / math.hypot(dr, di)
            iters[r, c] = it


def _mandel_de_ref(cr, ci, maxit):
    d, its = np.zeros(cr.shape), np.zeros(cr.shape, dtype=np.int32)
    for idx in np.ndindex(cr.shape):
        zr, zi, dr, di, it = 0.0, 0.0, 0.0, 0.0, 0
        while zr * zr + zi * zi <= ESCAPE2 and it < maxit:
            dr, di = 2.0 * (zr * dr - zi * di) + 1.0, 2.0 * (zr * di + zi * dr)
            zr, zi, it = zr * zr - zi * zi + cr[idx], 2.0 * zr * zi + ci[idx], it + 1
        mz = math.sqrt(zr * zr + zi * zi)
        d[idx], its[idx] = 0.0 if it == maxit else mz * math.log(mz) / math.hypot(dr, di), it
    return d, its


def case_mandelbrot_distance(rng, device):
    h, w, maxit = 31, 33, 40
    cre = torch.linspace(-2.1, 0.7, w, dtype=torch.float64)
    cim = torch.linspace(-1.2, 1.2, h, dtype=torch.float32)
    cr, ci = np.meshgrid(f64(cre), f64(cim))
    d, it = _mandel_de_ref(cr, ci, maxit)
    for eps in (1e-9, -1e-9):                            # no escape count on a rounding edge
        assert np.array_equal(it, _mandel_de_ref(cr + eps, ci + eps, maxit)[1])
    dist, iters = poison((h, w), torch.float64, device), poison((h, w), torch.int32, device)
    return dict(fn=mandelbrot_distance,
                args=[cre.to(device), cim.to(device), dist, iters, h, w, maxit],
                spec={'row': parir.threads(h), 'col': parir.threads(w)}, tol=(1e-6, 1e-9),
                check=[(dist, _t(d)), (iters, _t(it))])


# ----- radix-2 FFT: bit reversal, then one butterfly kernel per stage from a host loop ------

@parir.jit
def fft_radix2(xr, xi, re, im, nbatch, n, logn):
    parir.label('b')
    for b in range(nbatch):
        parir.label('i')
        for i in range(n):
            rev, v = 0, i
            for _ in range(logn):
                rev = (rev << 1) | (v & 1)
                v >>= 1
            re[b, rev] = xr[b, i]
            im[b, rev] = xi[b, i]
    half = 1
    while half < n:
        parir.label('b')
        for b in range(nbatch):
            parir.label('k')
            for k in range(n // 2):
                j = k % half
                p = (k // half) * 2 * half + j
                q = p + half
                ang = -math.pi * j / half
                wr, wi = math.cos(ang), math.sin(ang)
                tr = wr * re[b, q] - wi * im[b, q]
                ti = wr * im[b, q] + wi * re[b, q]
                re[b, q] = re[b, p] - tr
                im[b, q] = im[b, p] - ti
                re[b, p] = re[b, p] + tr
                im[b, p] = im[b, p] + ti
        half *= 2


def case_fft(rng, device):
    nbatch, logn, n = 33, 6, 64
    xr, xi = nonzero((nbatch, n), rng, device=device), nonzero((nbatch, n), rng, device=device)
    ref = np.fft.fft(f64(xr) + 1j * f64(xi), axis=1)
    re, im = (poison((nbatch, n), dtype=torch.float64, device=device) for _ in range(2))
    return dict(fn=fft_radix2, args=[xr, xi, re, im, nbatch, n, logn],
                spec={'b': parir.threads(nbatch), 'i': parir.threads(n),
                      'k': parir.threads(n // 2)},
                check=[(re, _t(ref.real)), (im, _t(ref.imag))])


# ----- cyclic Jacobi sweeps of many symmetric 3x3 matrices, one matrix a thread -------------

JACOBI_TOL, MAX_SWEEPS = 1e-14, 30


@parir.jit
def jacobi_eig3(A, V, evals, nmat):
    parir.label('m')
    for m in range(nmat):
        for p in range(3):
            for q in range(3):
                V[m, p, q] = 1.0 if p == q else 0.0
        sweep, off = 0, abs(A[m, 0, 1]) + abs(A[m, 0, 2]) + abs(A[m, 1, 2])
        while sweep < MAX_SWEEPS and off > JACOBI_TOL:
            for p in range(2):
                for q in range(p + 1, 3):
                    apq = A[m, p, q]
                    if apq != 0.0:
                        h = A[m, q, q] - A[m, p, p]
                        if abs(h) + 100.0 * abs(apq) == abs(h):
                            t = apq / h
                        else:
                            theta = 0.5 * h / apq
                            t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                            if theta < 0.0:
                                t = -t
                        c = 1.0 / math.sqrt(1.0 + t * t)
                        s, tau = t * c, t * c / (1.0 + c)
                        A[m, p, p] -= t * apq
                        A[m, q, q] += t * apq
                        A[m, p, q], A[m, q, p] = 0.0, 0.0
                        for r in range(3):
                            if r != p and r != q:
                                g, hh = A[m, r, p], A[m, r, q]
                                A[m, r, p] = g - s * (hh + g * tau)
                                A[m, p, r] = A[m, r, p]
                                A[m, r, q] = hh + s * (g - hh * tau)
                                A[m, q, r] = A[m, r, q]
                        for r in range(3):
                            g, hh = V[m, r, p], V[m, r, q]
                            V[m, r, p] = g - s * (hh + g * tau)
                            V[m, r, q] = hh + s * (g - hh * tau)
            off = abs(A[m, 0, 1]) + abs(A[m, 0, 2]) + abs(A[m, 1, 2])
            sweep += 1
        for p in range(3):                  # ascending, the vectors' columns with them
            k = p
            for q in range(p + 1, 3):
                if A[m, q, q] < A[m, k, k]:
                    k = q
            if k != p:
                A[m, p, p], A[m, k, k] = A[m, k, k], A[m, p, p]
                for r in range(3):
                    V[m, r, p], V[m, r, k] = V[m, r, k], V[m, r, p]
            evals[m, p] = A[m, p, p]
            big = 0
            for r in range(1, 3):           # the largest component of each vector positive
                if abs(V[m, r, p]) > abs(V[m, big, p]):
                    big = r
            if V[m, big, p] < 0.0:
                for r in range(3):
                    V[m, r, p] = -V[m, r, p]


def case_jacobi_eig3(rng, device):
    nmat = 33
    B = nonzero((nmat, 3, 3), rng, dtype=torch.float64)
    A = B + B.transpose(1, 2)
    w, v = np.linalg.eigh(f64(A))
    v = v * np.sign(np.take_along_axis(v, np.abs(v).argmax(axis=1)[:, None, :], axis=1))
    V, evals = poison((nmat, 3, 3), torch.float64, device), poison((nmat, 3), torch.float64, device)
    return dict(fn=jacobi_eig3, args=[A.to(device), V, evals, nmat],
                spec={'m': parir.threads(nmat)},
                check=[(evals, _t(w)), (V, _t(v))])


# ----- cyclic tridiagonal systems (Sherman-Morrison), a Thomas helper called twice ---------

@parir.jit
def thomas(a, b, c, r, x, cp, n):
    bet = b[0]
    x[0] = r[0] / bet
    for j in range(1, n):
        cp[j] = c[j - 1] / bet
        bet = b[j] - a[j] * cp[j]
        x[j] = (r[j] - a[j] * x[j - 1]) / bet
    for j in range(n - 2, -1, -1):
        x[j] -= cp[j + 1] * x[j + 1]


@parir.jit
def cyclic_tridiag(a, b, c, r, alpha, beta, x, bb, u, z, cp, nsys, n):
    parir.label('sys')
    for s in range(nsys):
        gamma = -b[s, 0]
        for i in range(n):
            bb[s, i] = b[s, i]
            u[s, i] = 0.0
        bb[s, 0] = b[s, 0] - gamma
        bb[s, n - 1] = b[s, n - 1] - alpha[s] * beta[s] / gamma
        thomas(a[s], bb[s], c[s], r[s], x[s], cp[s], n)
        u[s, 0], u[s, n - 1] = gamma, alpha[s]
        thomas(a[s], bb[s], c[s], u[s], z[s], cp[s], n)
        fact = ((x[s, 0] + beta[s] * x[s, n - 1] / gamma)
                / (1.0 + z[s, 0] + beta[s] * z[s, n - 1] / gamma))
        for i in range(n):
            x[s, i] -= fact * z[s, i]


def case_cyclic_tridiag(rng, device):
    nsys, n = 31, 33
    a, c = nonzero((nsys, n), rng), nonzero((nsys, n), rng)
    b = positive((nsys, n), rng, lo=3.0, hi=4.0)
    r = nonzero((nsys, n), rng, dtype=torch.float64)
    alpha, beta = nonzero(nsys, rng, dtype=torch.float64), nonzero(nsys, rng, dtype=torch.float64)
    ref = np.zeros((nsys, n))
    for s in range(nsys):
        M = np.diag(f64(b[s])) + np.diag(f64(a[s])[1:], -1) + np.diag(f64(c[s])[:-1], 1)
        M[n - 1, 0], M[0, n - 1] = float(alpha[s]), float(beta[s])
        ref[s] = np.linalg.solve(M, f64(r[s]))
    x = poison((nsys, n), dtype=torch.float64, device=device)
    scratch = [poison((nsys, n), dtype=torch.float64, device=device) for _ in range(4)]
    args = [t.to(device) for t in (a, b, c, r, alpha, beta)] + [x] + scratch + [nsys, n]
    return dict(fn=cyclic_tridiag, args=args, spec={'sys': parir.threads(nsys)},
                check=[(x, _t(ref))])


# ----- LU with partial pivoting of many small matrices, then the solve and determinant ----

@parir.jit
def lu_solve_batched(A, rhs, x, det, perm, nmat, n):
    parir.label('m')
    for m in range(nmat):
        for i in range(n):
            perm[m, i] = i
        sign = 1.0
        for k in range(n - 1):
            piv, big = k, abs(A[m, k, k])
            for i in range(k + 1, n):
                if abs(A[m, i, k]) > big:
                    big, piv = abs(A[m, i, k]), i
            if piv != k:
                for j in range(n):
                    A[m, k, j], A[m, piv, j] = A[m, piv, j], A[m, k, j]
                perm[m, k], perm[m, piv] = perm[m, piv], perm[m, k]
                rhs[m, k], rhs[m, piv] = rhs[m, piv], rhs[m, k]
                sign = -sign
            for i in range(k + 1, n):
                f = A[m, i, k] / A[m, k, k]
                A[m, i, k] = f
                for j in range(k + 1, n):
                    A[m, i, j] -= f * A[m, k, j]
        d = sign
        for i in range(n):
            d *= A[m, i, i]
        det[m] = d
        for i in range(n):
            s = rhs[m, i]
            for j in range(i):
                s -= A[m, i, j] * x[m, j]
            x[m, i] = s
        for i in range(n - 1, -1, -1):
            s = x[m, i]
            for j in range(i + 1, n):
                s -= A[m, i, j] * x[m, j]
            x[m, i] = s / A[m, i, i]


def case_lu(rng, device):
    nmat, n = 33, 5
    A = nonzero((nmat, n, n), rng, dtype=torch.float64)
    rhs = nonzero((nmat, n), rng)
    Anp = f64(A)
    ref_x = np.linalg.solve(Anp, f64(rhs)[..., None])[..., 0]
    ref_perm = np.zeros((nmat, n), dtype=np.int32)
    for m in range(nmat):                               # the pivot order alone
        U, pm = Anp[m].copy(), list(range(n))
        for k in range(n - 1):
            p = k + int(np.argmax(np.abs(U[k:, k])))
            U[[k, p]], pm[k], pm[p] = U[[p, k]], pm[p], pm[k]
            U[k + 1:] -= np.outer(U[k + 1:, k] / U[k, k], U[k])
        ref_perm[m] = pm
    x, det = poison((nmat, n), torch.float64, device), poison(nmat, torch.float64, device)
    perm = poison((nmat, n), dtype=torch.int32, device=device)
    return dict(fn=lu_solve_batched, args=[A.to(device), rhs.to(device), x, det, perm, nmat, n],
                spec={'m': parir.threads(nmat)}, tol=(1e-6, 1e-7),
                check=[(x, _t(ref_x)), (det, _t(np.linalg.det(Anp))), (perm, _t(ref_perm))])


# ----- natural cubic splines per series: second derivatives, then a bisection per query ----

@parir.jit
def cubic_spline(xk, yk, y2, u, xq, yq, nseries, nk, nq):
    parir.label('s')
    for s in range(nseries):
        y2[s, 0], u[s, 0], y2[s, nk - 1] = 0.0, 0.0, 0.0
        for i in range(1, nk - 1):
            sig = (xk[s, i] - xk[s, i - 1]) / (xk[s, i + 1] - xk[s, i - 1])
            p = sig * y2[s, i - 1] + 2.0
            y2[s, i] = (sig - 1.0) / p
            d = ((yk[s, i + 1] - yk[s, i]) / (xk[s, i + 1] - xk[s, i])
                 - (yk[s, i] - yk[s, i - 1]) / (xk[s, i] - xk[s, i - 1]))
            u[s, i] = (6.0 * d / (xk[s, i + 1] - xk[s, i - 1]) - sig * u[s, i - 1]) / p
        for k in range(nk - 2, -1, -1):
            y2[s, k] = y2[s, k] * y2[s, k + 1] + u[s, k]
    parir.label('s')
    for s in range(nseries):
        parir.label('q')
        for j in range(nq):
            x = xq[s, j]
            klo, khi = 0, nk - 1
            while khi - klo > 1:
                k = (khi + klo) >> 1
                if xk[s, k] > x:
                    khi = k
                else:
                    klo = k
            h = xk[s, khi] - xk[s, klo]
            a, b = (xk[s, khi] - x) / h, (x - xk[s, klo]) / h
            yq[s, j] = a * yk[s, klo] + b * yk[s, khi] + (
                (a * a * a - a) * y2[s, klo] + (b * b * b - b) * y2[s, khi]) * h * h / 6.0


def case_spline(rng, device):
    nseries, nk, nq = 33, 31, 64
    xk = torch.cumsum(positive((nseries, nk), rng, dtype=torch.float64, lo=0.2, hi=1.0), 1)
    yk = nonzero((nseries, nk), rng)
    X, Y = f64(xk), f64(yk)
    xq = torch.from_numpy(X[:, :1] + (X[:, -1:] - X[:, :1]) * f64(positive((nseries, nq), rng)))
    XQ = f64(xq)
    ref = np.zeros((nseries, nq))
    for s in range(nseries):                        # the moments from the dense system
        hs = np.diff(X[s])
        M = (np.diag(np.r_[1.0, (hs[:-1] + hs[1:]) / 3, 1.0]) + np.diag(np.r_[0.0, hs[1:] / 6], 1)
             + np.diag(np.r_[hs[:-1] / 6, 0.0], -1))
        Mom = np.linalg.solve(M, np.r_[0.0, np.diff(np.diff(Y[s]) / hs), 0.0])
        k = np.clip(np.searchsorted(X[s], XQ[s]) - 1, 0, nk - 2)
        t0, t1, hk = X[s, k + 1] - XQ[s], XQ[s] - X[s, k], hs[k]
        ref[s] = ((Mom[k] * t0 ** 3 + Mom[k + 1] * t1 ** 3) / (6 * hk) + (Y[s, k] / hk
                  - Mom[k] * hk / 6) * t0 + (Y[s, k + 1] / hk - Mom[k + 1] * hk / 6) * t1)
    y2, u = (poison((nseries, nk), dtype=torch.float64, device=device) for _ in range(2))
    yq = poison((nseries, nq), device=device)
    return dict(fn=cubic_spline, args=[xk.to(device), yk.to(device), y2, u, xq.to(device), yq,
                                       nseries, nk, nq],
                spec={'s': parir.threads(nseries), 'q': parir.threads(nq)},
                check=[(yq, _t(ref))])


# ----- a multigrid V-cycle for -lap u = f on three grids, each piece a kernel from host loops

MG_OMEGA = 0.8


def mg_smooth(u, unew, f, n):
    h2 = 1.0 / ((n - 1) * (n - 1))
    parir.label('i')
    for i in range(1, n - 1):
        parir.label('j')
        for j in range(1, n - 1):
            unew[i, j] = (1.0 - MG_OMEGA) * u[i, j] + MG_OMEGA * 0.25 * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] + h2 * f[i, j])


def mg_residual_restrict(u, f, r, fc, n, nc):
    parir.label('i')
    for i in range(1, n - 1):
        parir.label('j')
        for j in range(1, n - 1):
            r[i, j] = f[i, j] - (n - 1) * (n - 1) * (
                4.0 * u[i, j] - u[i - 1, j] - u[i + 1, j] - u[i, j - 1] - u[i, j + 1])
    parir.label('i')
    for ic in range(1, nc - 1):
        parir.label('j')
        for jc in range(1, nc - 1):
            i, j = 2 * ic, 2 * jc
            fc[ic, jc] = (4.0 * r[i, j] + 2.0 * (r[i - 1, j] + r[i + 1, j] + r[i, j - 1]
                                                 + r[i, j + 1]) + r[i - 1, j - 1] + r[i - 1, j + 1]
                          + r[i + 1, j - 1] + r[i + 1, j + 1]) / 16.0


def mg_smooth_pairs(u, t, f, n, k):
    for s in range(k):
        mg_smooth(u, t, f, n)
        mg_smooth(t, u, f, n)


def mg_zero(e, n):
    parir.label('i')
    for i in range(1, n - 1):
        parir.label('j')
        for j in range(1, n - 1):
            e[i, j] = 0.0


def mg_prolong_add(ec, u, n):
    parir.label('i')
    for i in range(1, n - 1):
        parir.label('j')
        for j in range(1, n - 1):
            ic, jc = i // 2, j // 2
            if i % 2 == 0 and j % 2 == 0:
                e = ec[ic, jc]
            elif i % 2 == 1 and j % 2 == 0:
                e = 0.5 * (ec[ic, jc] + ec[ic + 1, jc])
            elif i % 2 == 0:
                e = 0.5 * (ec[ic, jc] + ec[ic, jc + 1])
            else:
                e = 0.25 * (ec[ic, jc] + ec[ic + 1, jc] + ec[ic, jc + 1] + ec[ic + 1, jc + 1])
            u[i, j] += e


@parir.jit
def multigrid_vcycle(u1, t1, f1, r1, u2, t2, f2, r2, u3, t3, f3, ncycles, nsmooth, ncoarse):
    n1, n2, n3 = u1.shape[0], u2.shape[0], u3.shape[0]
    for cycle in range(ncycles):
        mg_smooth_pairs(u1, t1, f1, n1, nsmooth)
        mg_residual_restrict(u1, f1, r1, f2, n1, n2)
        mg_zero(u2, n2)
        mg_smooth_pairs(u2, t2, f2, n2, nsmooth)
        mg_residual_restrict(u2, f2, r2, f3, n2, n3)
        mg_zero(u3, n3)
        mg_smooth_pairs(u3, t3, f3, n3, ncoarse)
        mg_prolong_add(u3, u2, n2)
        mg_smooth_pairs(u2, t2, f2, n2, nsmooth)
        mg_prolong_add(u2, u1, n1)
        mg_smooth_pairs(u1, t1, f1, n1, nsmooth)


def _mg_ref(f1, ncycles, nsmooth, ncoarse):
    def smooth(u, f, k):
        h2, w = 1.0 / (u.shape[0] - 1) ** 2, MG_OMEGA
        for _ in range(2 * k):
            v = u.copy()
            v[1:-1, 1:-1] = (1 - w) * u[1:-1, 1:-1] + w * 0.25 * (
                u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + h2 * f[1:-1, 1:-1])
            u = v
        return u

    def restrict(u, f):
        n, r = u.shape[0], np.zeros_like(u)
        r[1:-1, 1:-1] = f[1:-1, 1:-1] - (n - 1) ** 2 * (
            4 * u[1:-1, 1:-1] - u[:-2, 1:-1] - u[2:, 1:-1] - u[1:-1, :-2] - u[1:-1, 2:])
        fc, c = np.zeros(((n + 1) // 2,) * 2), r[1:-1, 1:-1]
        fc[1:-1, 1:-1] = (4 * c[1:-1:2, 1:-1:2] + 2 * (c[:-2:2, 1:-1:2] + c[2::2, 1:-1:2]
                          + c[1:-1:2, :-2:2] + c[1:-1:2, 2::2]) + c[:-2:2, :-2:2]
                          + c[:-2:2, 2::2] + c[2::2, :-2:2] + c[2::2, 2::2]) / 16
        return fc

    def prolong(e, u):
        ef = np.zeros_like(u)
        ef[::2, ::2] = e
        ef[1::2, ::2] = 0.5 * (e[:-1] + e[1:])
        ef[::2, 1::2] = 0.5 * (e[:, :-1] + e[:, 1:])
        ef[1::2, 1::2] = 0.25 * (e[:-1, :-1] + e[1:, :-1] + e[:-1, 1:] + e[1:, 1:])
        return u + ef

    u1 = np.zeros_like(f1)
    for _ in range(ncycles):
        u1 = smooth(u1, f1, nsmooth)
        f2 = restrict(u1, f1)
        u2 = smooth(np.zeros_like(f2), f2, nsmooth)
        f3 = restrict(u2, f2)
        u3 = smooth(np.zeros_like(f3), f3, ncoarse)
        u2 = smooth(prolong(u3, u2), f2, nsmooth)
        u1 = smooth(prolong(u2, u1), f1, nsmooth)
    return u1


def case_multigrid(rng, device):
    n1, n2, n3, ncycles, nsmooth, ncoarse = 33, 17, 9, 2, 2, 10
    f1 = torch.nn.functional.pad(nonzero((n1 - 2, n1 - 2), rng, lo=0.5, hi=10.0), (1, 1, 1, 1))
    ref = _mg_ref(f64(f1), ncycles, nsmooth, ncoarse)
    grids = []
    for n in (n1, n2, n3):                  # u and its partner zero on the boundary
        grids += [torch.zeros(n, n, dtype=torch.float64, device=device) for _ in range(2)]
        grids += [poison((n, n), dtype=torch.float64, device=device) for _ in range(2)]
    grids[2], grids[6][:], grids[10][:] = f1.to(device), 0.0, 0.0   # f1; f2, f3 boundaries
    return dict(fn=multigrid_vcycle, args=grids[:11] + [ncycles, nsmooth, ncoarse],
                spec={'i': parir.threads(31), 'j': parir.threads(32)},
                check=[(grids[0], _t(ref))])


CASES = {
    "nm_lambert_w_newton": case_lambert_w,
    "nm_lambert_w_residual_cond": case_lambert_w_residual,
    "nm_cubic_roots_bisect_brent": case_cubic_roots,
    "nm_rkf45_logistic": case_rkf45,
    "nm_gauss_legendre": case_gauss_legendre,
    "nm_chebyshev_clenshaw": case_clenshaw,
    "nm_special_functions": case_special,
    "nm_erf_approximations": case_erf,
    "nm_mandelbrot_distance": case_mandelbrot_distance,
    "nm_fft_radix2": case_fft,
    "nm_jacobi_eig3": case_jacobi_eig3,
    "nm_cyclic_tridiag": case_cyclic_tridiag,
    "nm_lu_pivot": case_lu,
    "nm_cubic_spline": case_spline,
    "nm_multigrid_vcycle": case_multigrid,
}
