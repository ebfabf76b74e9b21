"""Quantitative finance and statistics, written the way GPU quants and data scientists write
them (Numba and CuPy kernels, the CUDA samples' option pricers, QuantLib's formulas, pandas',
statsmodels' and arch's definitions): Monte Carlo European and Asian options with antithetic
variates, Cox-Ross-Rubinstein and the CUDA samples' binomial trees, implied volatility and
yields to maturity by Newton's method, historical VaR, pandas' ewm and rolling z-scores, a
correlation matrix, Welch's t-test, a bootstrap, quantiles and the Hill estimator by counting, a
logistic credit score, portfolio returns and drawdowns, an order book aggregated with atomics,
Numba's Black-Scholes example, Black-76 caplets, inverse-volatility weights, a GARCH(1,1)
filter and geometric Brownian motion stepped from the host."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, poison, positive, randint


# ----- functions shared by the pricers ---------------------------------------------------------

def norm_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def norm_pdf(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def payoff(S, K):
    return max(S - K, 0.0)


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


_ncdf = np.vectorize(lambda d: 0.5 * (1.0 + math.erf(d / math.sqrt(2.0))))


# ----- Monte Carlo European call, antithetic pairs, price and standard error -------------------

@parir.jit
def mc_european_call(Z, price, std_err, S0, K, r, sigma, T, n_paths):
    disc = math.exp(-r * T)
    drift = (r - 0.5 * sigma ** 2) * T
    vol = sigma * math.sqrt(T)
    with parir.gpu:
        price[0] = 0.0
        std_err[0] = 0.0
    parir.label('path')
    for i in range(n_paths):
        ST1 = S0 * math.exp(drift + vol * Z[i])
        ST2 = S0 * math.exp(drift - vol * Z[i])
        pv = disc * 0.5 * (payoff(ST1, K) + payoff(ST2, K))
        price[0] += pv
        std_err[0] += pv * pv
    with parir.gpu:
        mean = price[0] / n_paths
        var = std_err[0] / n_paths - mean * mean
        price[0] = mean
        std_err[0] = math.sqrt(var / (n_paths - 1))


def case_mc_european(rng, device):
    n_paths = 4097
    S0, K, r, sigma, T = 100.0, np.float64(105.0), np.float64(0.05), 0.2, 1.0
    Z = torch.randn(n_paths, generator=rng).to(device)        # float32, as from curand
    price = poison(1, dtype=torch.float64, device=device)
    std_err = poison(1, dtype=torch.float64, device=device)
    z = f64(Z)
    drift = (float(r) - 0.5 * sigma ** 2) * T
    vol = sigma * math.sqrt(T)
    disc = math.exp(-float(r) * T)
    pv = disc * 0.5 * (np.maximum(S0 * np.exp(drift + vol * z) - float(K), 0.0)
                       + np.maximum(S0 * np.exp(drift - vol * z) - float(K), 0.0))
    mean = pv.mean()
    se = math.sqrt(((pv * pv).mean() - mean * mean) / (n_paths - 1))
    return dict(fn=mc_european_call,
                args=[Z, price, std_err, S0, K, r, sigma, T, n_paths],
                spec={'path': parir.threads(n_paths).reduce()},
                # vol * Z[i] is a float32 product (vol is weak): float32's grain in the exponent
                tol=(1e-6, 1e-6),
                check=[(price, torch.tensor([mean], dtype=torch.float64)),
                       (std_err, torch.tensor([se], dtype=torch.float64))])


# ----- Monte Carlo arithmetic Asian call, normals laid out (n_steps, n_paths) for coalescing ---

@parir.jit
def mc_asian_call(Z, payoffs, S0, K, r, sigma, T, n_paths, n_steps):
    dt = T / n_steps
    disc = math.exp(-r * T)
    nudt = (r - 0.5 * sigma * sigma) * dt
    sidt = sigma * math.sqrt(dt)
    parir.label('path')
    for p in range(n_paths):
        S_up = S0
        S_dn = S0
        sum_up = 0.0
        sum_dn = 0.0
        for t in range(n_steps):
            z = Z[t, p]
            S_up = S_up * math.exp(nudt + sidt * z)
            S_dn = S_dn * math.exp(nudt - sidt * z)
            sum_up += S_up
            sum_dn += S_dn
        avg_up = sum_up / n_steps
        avg_dn = sum_dn / n_steps
        payoffs[p] = disc * 0.5 * (payoff(avg_up, K) + payoff(avg_dn, K))


def case_mc_asian(rng, device):
    n_paths, n_steps = 1000, 33
    S0, K, r = np.float32(100.0), np.float32(100.0), np.float32(0.03)
    sigma, T = np.float32(0.25), np.float32(0.5)
    Z = torch.randn((n_steps, n_paths), generator=rng).to(device)
    payoffs = poison(n_paths, device=device)
    z = f64(Z)
    dt = float(T) / n_steps
    nudt = (float(r) - 0.5 * float(sigma) ** 2) * dt
    sidt = float(sigma) * math.sqrt(dt)
    S_up = float(S0) * np.exp(np.cumsum(nudt + sidt * z, axis=0))
    S_dn = float(S0) * np.exp(np.cumsum(nudt - sidt * z, axis=0))
    disc = math.exp(-float(r) * float(T))
    ref = disc * 0.5 * (np.maximum(S_up.mean(0) - float(K), 0.0)
                        + np.maximum(S_dn.mean(0) - float(K), 0.0))
    return dict(fn=mc_asian_call,
                args=[Z, payoffs, S0, K, r, sigma, T, n_paths, n_steps],
                spec={'path': parir.threads(n_paths)},
                check=[(payoffs, torch.from_numpy(ref))])


# ----- Cox-Ross-Rubinstein American put, one thread per option, a scratch row per option -------

@parir.jit
def crr_american_put(S, K, T, sigma, r, V, price, n_opts, n_steps):
    parir.label('opt')
    for o in range(n_opts):
        dt = T[o] / n_steps
        u = math.exp(sigma[o] * math.sqrt(dt))
        d = 1.0 / u
        p = (math.exp(r * dt) - d) / (u - d)
        disc = math.exp(-r * dt)
        # option values at expiry
        for j in range(n_steps + 1):
            ST = S[o] * u ** j * d ** (n_steps - j)
            V[o, j] = max(K[o] - ST, 0.0)
        # backward induction with early exercise
        for i in range(n_steps - 1, -1, -1):
            for j in range(i + 1):
                cont = disc * (p * V[o, j + 1] + (1.0 - p) * V[o, j])
                exercise = K[o] - S[o] * u ** j * d ** (i - j)
                V[o, j] = max(cont, exercise)
        price[o] = V[o, 0]


def case_crr_american_put(rng, device):
    n_opts, n_steps = 31, 40
    r = 0.03
    S = positive(n_opts, rng, dtype=torch.float64, device=device, lo=80.0, hi=120.0)
    K = positive(n_opts, rng, dtype=torch.float64, device=device, lo=90.0, hi=110.0)
    T = positive(n_opts, rng, dtype=torch.float64, device=device, lo=0.25, hi=2.0)
    sigma = positive(n_opts, rng, dtype=torch.float64, device=device, lo=0.1, hi=0.5)
    V = poison((n_opts, n_steps + 1), dtype=torch.float64, device=device)
    price = poison(n_opts, dtype=torch.float64, device=device)
    ref = np.zeros(n_opts)
    Sn, Kn, Tn, sn = f64(S), f64(K), f64(T), f64(sigma)
    for o in range(n_opts):
        dt = Tn[o] / n_steps
        u = math.exp(sn[o] * math.sqrt(dt))
        d = 1.0 / u
        p = (math.exp(r * dt) - d) / (u - d)
        disc = math.exp(-r * dt)
        j = np.arange(n_steps + 1)
        v = np.maximum(Kn[o] - Sn[o] * u ** j * d ** (n_steps - j), 0.0)
        for i in range(n_steps - 1, -1, -1):
            j = np.arange(i + 1)
            v = np.maximum(disc * (p * v[1:i + 2] + (1.0 - p) * v[:i + 1]),
                           Kn[o] - Sn[o] * u ** j * d ** (i - j))
        ref[o] = v[0]
    return dict(fn=crr_american_put, args=[S, K, T, sigma, r, V, price, n_opts, n_steps],
                spec={'opt': parir.threads(n_opts)},
                check=[(price, torch.from_numpy(ref)), (V[:, 0], torch.from_numpy(ref))])


# ----- CUDA samples' binomialOptions: a block per option, two buffers of the tree's nodes -----

@parir.jit
def binomialOptionsKernel(d_S, d_X, d_T, R, V, d_CallValue, d_Buf, optN, NUM_STEPS):
    parir.label('opt')
    for opt in range(optN):
        dt = d_T[opt] / NUM_STEPS
        vDt = V * math.sqrt(dt)
        rDt = R * dt
        If = math.exp(rDt)
        Df = math.exp(-rDt)
        u = math.exp(vDt)
        d = math.exp(-vDt)
        pu = (If - d) / (u - d)
        pd = 1.0 - pu
        puByDf = pu * Df
        pdByDf = pd * Df
        parir.label('node')
        for i in range(NUM_STEPS + 1):
            price = d_S[opt] * math.exp(vDt * (2.0 * i - NUM_STEPS))
            d_Buf[opt, 0, i] = max(price - d_X[opt], 0.0)
        for t in range(NUM_STEPS, 0, -1):
            src = (NUM_STEPS - t) % 2
            dst = 1 - src
            parir.label('node')
            for i in range(t):
                d_Buf[opt, dst, i] = puByDf * d_Buf[opt, src, i + 1] + pdByDf * d_Buf[opt, src, i]
        d_CallValue[opt] = d_Buf[opt, NUM_STEPS % 2, 0]


def case_binomial_options(rng, device):
    optN, NUM_STEPS = 33, 48
    R, V = np.float32(0.06), np.float32(0.10)
    d_S = positive(optN, rng, device=device, lo=5.0, hi=30.0)
    d_X = positive(optN, rng, device=device, lo=1.0, hi=100.0)
    d_T = positive(optN, rng, device=device, lo=0.25, hi=10.0)
    d_CallValue = poison(optN, device=device)
    d_Buf = poison((optN, 2, NUM_STEPS + 1), device=device)
    S, X, T = f64(d_S), f64(d_X), f64(d_T)
    ref = np.zeros(optN)
    for o in range(optN):
        dt = T[o] / NUM_STEPS
        vDt = float(V) * math.sqrt(dt)
        rDt = float(R) * dt
        If, Df = math.exp(rDt), math.exp(-rDt)
        u, d = math.exp(vDt), math.exp(-vDt)
        pu = (If - d) / (u - d)
        pd = 1.0 - pu
        i = np.arange(NUM_STEPS + 1)
        call = np.maximum(S[o] * np.exp(vDt * (2.0 * i - NUM_STEPS)) - X[o], 0.0)
        for t in range(NUM_STEPS, 0, -1):
            call = pu * Df * call[1:t + 1] + pd * Df * call[:t]
        ref[o] = call[0]
    return dict(fn=binomialOptionsKernel,
                args=[d_S, d_X, d_T, R, V, d_CallValue, d_Buf, optN, NUM_STEPS],
                spec={'opt': parir.threads(optN), 'node': parir.threads(64)},
                check=[(d_CallValue, torch.from_numpy(ref))])


# ----- implied volatility by Newton's method, a tolerance and an iteration cap -----------------

def bs_price_vega(S, K, r, sigma, T):
    sqrtT = math.sqrt(T)
    d1 = (math.log(S / K) + (r + 0.5 * sigma * sigma) * T) / (sigma * sqrtT)
    d2 = d1 - sigma * sqrtT
    price = S * norm_cdf(d1) - K * math.exp(-r * T) * norm_cdf(d2)
    vega = S * norm_pdf(d1) * sqrtT
    return price, vega


@parir.jit
def implied_vol_newton(market_price, S, K, T, r, iv, n_iter, n_opts, tol, max_iter):
    parir.label('opt')
    for i in range(n_opts):
        sigma = 0.3
        diff = 1.0
        it = 0
        while abs(diff) > tol and it < max_iter:
            price, vega = bs_price_vega(S[i], K[i], r, sigma, T[i])
            diff = price - market_price[i]
            sigma = sigma - diff / vega
            it += 1
        iv[i] = sigma
        n_iter[i] = it


def case_implied_vol(rng, device):
    n_opts, tol, max_iter = 257, 1e-10, 50
    r = np.float64(0.02)
    S = positive(n_opts, rng, dtype=torch.float64, lo=90.0, hi=110.0)
    K = positive(n_opts, rng, dtype=torch.float64, lo=85.0, hi=115.0)
    T = positive(n_opts, rng, dtype=torch.float64, lo=0.25, hi=2.0)
    true_vol = f64(positive(n_opts, rng, dtype=torch.float64, lo=0.1, hi=0.6))
    Sn, Kn, Tn, rr = f64(S), f64(K), f64(T), float(r)

    def price_vega(sig):
        d1 = (np.log(Sn / Kn) + (rr + 0.5 * sig * sig) * Tn) / (sig * np.sqrt(Tn))
        d2 = d1 - sig * np.sqrt(Tn)
        price = Sn * _ncdf(d1) - Kn * np.exp(-rr * Tn) * _ncdf(d2)
        vega = Sn * np.exp(-0.5 * d1 * d1) / math.sqrt(2.0 * math.pi) * np.sqrt(Tn)
        return price, vega

    market = price_vega(true_vol)[0]
    sig = np.full(n_opts, 0.3)
    diff = np.ones(n_opts)
    its = np.zeros(n_opts, dtype=np.int64)
    while True:
        active = (np.abs(diff) > tol) & (its < max_iter)
        if not active.any():
            break
        price, vega = price_vega(sig)
        d = price - market
        diff = np.where(active, d, diff)
        sig = np.where(active, sig - d / vega, sig)
        its += active
    iv = poison(n_opts, dtype=torch.float64, device=device)
    n_iter = poison(n_opts, dtype=torch.int32, device=device)
    return dict(fn=implied_vol_newton,
                args=[torch.from_numpy(market).to(device), S.to(device), K.to(device),
                      T.to(device), r, iv, n_iter, n_opts, tol, max_iter],
                spec={'opt': parir.threads(n_opts)},
                check=[(iv, torch.from_numpy(sig)), (n_iter, torch.from_numpy(its).int())])


# ----- historical VaR: losses above each threshold counted, per portfolio ----------------------

@parir.jit
def historical_var(pnl, thresholds, exceed, var_out, n_days, n_port, n_thr, alpha):
    parir.label('port')
    for p in range(n_port):
        parir.label('thr')
        for k in range(n_thr):
            cnt = 0
            for d in range(n_days):
                cnt += -pnl[d, p] > thresholds[k]      # (losses > threshold).sum()
            exceed[p, k] = cnt
    parir.label('port')
    for p in range(n_port):
        # thresholds ascend: the first whose exceedances fit the tail is the VaR
        k = 0
        while k < n_thr - 1 and exceed[p, k] > (1.0 - alpha) * n_days:
            k += 1
        var_out[p] = thresholds[k]


def case_historical_var(rng, device):
    n_port, n_days, n_thr, alpha = 3, 250, 33, 0.95
    # one row of daily P&L per book; the kernel reads it by (day, book)
    pnl_by_book = (0.02 * torch.randn((n_port, n_days), generator=rng)).to(device)
    thresholds = torch.linspace(0.0, 0.064, n_thr, dtype=torch.float64).to(device)
    exceed = poison((n_port, n_thr), dtype=torch.int32, device=device)
    var_out = poison(n_port, dtype=torch.float64, device=device)
    loss = -f64(pnl_by_book)
    th = f64(thresholds)
    cnt = (loss[:, None, :] > th[None, :, None]).sum(-1)
    ok = cnt <= (1.0 - alpha) * n_days
    first = np.where(ok.any(1), ok.argmax(1), n_thr - 1)
    return dict(fn=historical_var,
                args=[pnl_by_book.t(), thresholds, exceed, var_out, n_days, n_port, n_thr,
                      alpha],
                spec={'port': parir.threads(n_port), 'thr': parir.threads(n_thr)},
                check=[(exceed, torch.from_numpy(cnt).int()),
                       (var_out, torch.from_numpy(th[first]))])


# ----- pandas ewm(alpha=..., adjust=False).mean() per column; a date column left out ----------

@parir.jit
def ewma(prices, out, alpha, n_obs, n_series):
    parir.label('series')
    for s in range(n_series):
        out[0, s] = prices[0, s]
        for t in range(1, n_obs):
            out[t, s] = alpha * prices[t, s] + (1.0 - alpha) * out[t - 1, s]


def case_ewma(rng, device):
    n_obs, n_series = 250, 33
    alpha = np.float32(0.1)
    frame = torch.empty((n_obs, n_series + 1))
    frame[:, 0] = torch.arange(n_obs, dtype=torch.float32)             # day number
    frame[:, 1:] = 100.0 + torch.cumsum(torch.randn((n_obs, n_series), generator=rng), 0)
    frame = frame.to(device)
    out = poison((n_obs, n_series), device=device)
    x = f64(frame[:, 1:])
    a = float(alpha)
    ref = np.empty_like(x)
    ref[0] = x[0]
    for t in range(1, n_obs):
        ref[t] = a * x[t] + (1.0 - a) * ref[t - 1]
    return dict(fn=ewma, args=[frame[:, 1:], out, alpha, n_obs, n_series],
                spec={'series': parir.threads(n_series)},
                check=[(out, torch.from_numpy(ref))])


# ----- rolling z-score, window of `window` observations, NaN until the window fills -----------

@parir.jit
def rolling_zscore(x, z, window, n_obs, n_series):
    parir.label('series')
    for s in range(n_series):
        parir.label('obs')
        for t in range(n_obs):
            if t < window - 1:
                z[s, t] = float('nan')
            else:
                m = 0.0
                for k in range(t - window + 1, t + 1):
                    m += x[s, k]
                m = m / window
                v = 0.0
                for k in range(t - window + 1, t + 1):
                    v += (x[s, k] - m) ** 2
                sd = math.sqrt(v / (window - 1))
                z[s, t] = (x[s, t] - m) / sd


def case_rolling_zscore(rng, device):
    n_series, n_obs, window = 7, 200, 20
    x = torch.cumsum(torch.randn((n_series, n_obs), generator=rng, dtype=torch.float64), 1)
    x = x.to(device)
    z = poison((n_series, n_obs), dtype=torch.float64, device=device)
    xn = f64(x)
    win = np.lib.stride_tricks.sliding_window_view(xn, window, axis=1)
    ref = np.full((n_series, n_obs), np.nan)
    ref[:, window - 1:] = (xn[:, window - 1:] - win.mean(-1)) / win.std(-1, ddof=1)
    return dict(fn=rolling_zscore, args=[x, z, window, n_obs, n_series],
                spec={'series': parir.threads(n_series), 'obs': parir.threads(n_obs)},
                check=[(z, torch.from_numpy(ref))])


# ----- Pearson correlation matrix of returns: column means and stds first, then the pairs ------

@parir.jit
def corr_matrix(returns, mu, sd, corr, n_obs, n_assets):
    parir.label('col')
    for j in range(n_assets):
        s = 0.0
        parir.label('obs')
        for t in range(n_obs):
            s += returns[t, j]
        mu[j] = s / n_obs
        ss = 0.0
        parir.label('obs')
        for t in range(n_obs):
            ss += (returns[t, j] - mu[j]) ** 2
        sd[j] = math.sqrt(ss / (n_obs - 1))
    parir.label('i')
    for i in range(n_assets):
        parir.label('j')
        for j in range(i, n_assets):
            c = 0.0
            for t in range(n_obs):
                c += (returns[t, i] - mu[i]) * (returns[t, j] - mu[j])
            rho = c / ((n_obs - 1) * sd[i] * sd[j])
            corr[i, j] = rho
            corr[j, i] = rho


def case_corr_matrix(rng, device):
    n_obs, n_assets = 64, 33
    factor = torch.randn((n_obs, 1), generator=rng, dtype=torch.float64)
    returns = 0.01 * (0.5 * factor + torch.randn((n_obs, n_assets), generator=rng,
                                                 dtype=torch.float64))
    returns = returns.to(device)
    mu, sd = (poison(n_assets, dtype=torch.float64, device=device) for _ in range(2))
    corr = poison((n_assets, n_assets), dtype=torch.float64, device=device)
    R = f64(returns)
    return dict(fn=corr_matrix, args=[returns, mu, sd, corr, n_obs, n_assets],
                spec={'col': parir.threads(n_assets), 'obs': parir.threads(64).reduce(),
                      'i': parir.threads(n_assets), 'j': parir.threads(n_assets)},
                check=[(mu, torch.from_numpy(R.mean(0))),
                       (sd, torch.from_numpy(R.std(0, ddof=1))),
                       (corr, torch.from_numpy(np.corrcoef(R, rowvar=False)))])


# ----- Welch's t statistic and degrees of freedom per feature, two groups by label -------------

@parir.jit
def welch_ttest(X, grp, t_stat, dof, n_samples, n_features):
    parir.label('feature')
    for f in range(n_features):
        n1 = 0
        n2 = 0
        s1 = 0.0
        s2 = 0.0
        parir.label('sample')
        for i in range(n_samples):
            if grp[i] == 1:
                n1 += 1
                s1 += X[i, f]
            else:
                n2 += 1
                s2 += X[i, f]
        m1 = s1 / n1
        m2 = s2 / n2
        ss1 = 0.0
        ss2 = 0.0
        parir.label('sample')
        for i in range(n_samples):
            if grp[i] == 1:
                ss1 += (X[i, f] - m1) ** 2
            else:
                ss2 += (X[i, f] - m2) ** 2
        v1 = ss1 / (n1 - 1)
        v2 = ss2 / (n2 - 1)
        se1 = v1 / n1
        se2 = v2 / n2
        t_stat[f] = (m1 - m2) / math.sqrt(se1 + se2)
        dof[f] = (se1 + se2) ** 2 / (se1 ** 2 / (n1 - 1) + se2 ** 2 / (n2 - 1))


def case_welch_ttest(rng, device):
    n_samples, n_features = 200, 33
    grp = randint(n_samples, rng, 0, 2, device=device)
    X = torch.randn((n_samples, n_features), generator=rng)
    X += 0.3 * grp.cpu().float()[:, None] * torch.linspace(-1.0, 1.0, n_features)[None, :]
    X = X.to(device)
    t_stat = poison(n_features, device=device)
    dof = poison(n_features, device=device)
    x, g = f64(X), f64(grp).astype(np.int64)
    a, b = x[g == 1], x[g == 0]
    va, vb = a.var(0, ddof=1) / len(a), b.var(0, ddof=1) / len(b)
    ref_t = (a.mean(0) - b.mean(0)) / np.sqrt(va + vb)
    ref_dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return dict(fn=welch_ttest, args=[X, grp, t_stat, dof, n_samples, n_features],
                spec={'feature': parir.threads(n_features),
                      'sample': parir.threads(128).reduce()},
                check=[(t_stat, torch.from_numpy(ref_t)), (dof, torch.from_numpy(ref_dof))])


# ----- bootstrap of the mean from precomputed resampling indices, and its standard error -------

@parir.jit
def bootstrap_mean(x, idx, boot_means, se, n, n_boot):
    parir.label('boot')
    for b in range(n_boot):
        acc = 0.0
        parir.label('draw')
        for i in range(n):
            acc += x[idx[b, i]]
        boot_means[b] = acc / n
    with parir.gpu:
        m = 0.0
        parir.label('agg')
        for b in range(n_boot):
            m += boot_means[b]
        m = m / n_boot
        v = 0.0
        parir.label('agg')
        for b in range(n_boot):
            v += (boot_means[b] - m) ** 2
        se[0] = math.sqrt(v / (n_boot - 1))


def case_bootstrap_mean(rng, device):
    n, n_boot = 61, 200
    x = positive(n, rng, dtype=torch.float64, device=device, lo=-1.0, hi=3.0)
    idx = randint((n_boot, n), rng, 0, n, device=device)
    boot_means = poison(n_boot, dtype=torch.float64, device=device)
    se = poison(1, dtype=torch.float64, device=device)
    bm = f64(x)[f64(idx).astype(np.int64)].mean(1)
    return dict(fn=bootstrap_mean, args=[x, idx, boot_means, se, n, n_boot],
                spec={'boot': parir.threads(n_boot), 'draw': parir.threads(64).reduce(),
                      'agg': parir.threads(256).reduce()},
                check=[(boot_means, torch.from_numpy(bm)),
                       (se, torch.tensor([bm.std(ddof=1)], dtype=torch.float64))])


# ----- quantiles by counting: the smallest value whose empirical CDF reaches each level --------

@parir.jit
def quantiles_by_counting(x, probs, q, n, n_q):
    parir.label('q')
    for k in range(n_q):
        need = math.ceil(probs[k] * n)
        best = float('inf')
        parir.label('j')
        for j in range(n):
            cnt = 0
            for i in range(n):
                if x[i] <= x[j]:
                    cnt += 1
            if cnt >= need:
                best = min(best, x[j])
        q[k] = best


def case_quantiles(rng, device):
    n = 101
    probs = torch.tensor([0.01, 0.05, 0.5, 0.95, 0.99], dtype=torch.float64)
    x = torch.randn(n, generator=rng).to(device)
    q = poison(len(probs), device=device)
    xs = np.sort(f64(x))
    ref = np.array([xs[math.ceil(p * n) - 1] for p in probs.tolist()])
    assert np.array_equal(ref, np.quantile(f64(x), probs.numpy(), method='inverted_cdf'))
    return dict(fn=quantiles_by_counting, args=[x, probs.to(device), q, n, len(probs)],
                spec={'q': parir.threads(len(probs)), 'j': parir.threads(128).reduce()},
                check=[(q, torch.from_numpy(ref))])


# ----- Hill estimator of the tail index from the k largest losses, for several k --------------

@parir.jit
def hill_estimator(losses_sorted, ks, hill_alpha, n_series, n_k):
    parir.label('series')
    for s in range(n_series):
        parir.label('k')
        for j in range(n_k):
            k = ks[j]
            log_thresh = math.log(losses_sorted[s, -k - 1])
            h = 0.0
            for i in range(k):
                h += math.log(losses_sorted[s, -i - 1]) - log_thresh
            hill_alpha[s, j] = k / h


def case_hill(rng, device):
    n_series, n = 1, 500
    u = torch.rand((n_series, n), generator=rng, dtype=torch.float64)
    losses = (1.0 - u) ** (-1.0 / 3.0)                 # Pareto, tail index 3
    losses_sorted = torch.sort(losses, dim=1).values.to(device)
    ks = torch.tensor([10, 25, 50, 100, 199], dtype=torch.int32, device=device)
    hill_alpha = poison((n_series, len(ks)), dtype=torch.float64, device=device)
    xs = f64(losses_sorted)
    ref = np.stack([[k / (np.log(xs[s, -k:]) - np.log(xs[s, -k - 1])).sum()
                     for k in ks.tolist()] for s in range(n_series)])
    return dict(fn=hill_estimator, args=[losses_sorted, ks, hill_alpha, n_series, len(ks)],
                spec={'series': parir.threads(n_series), 'k': parir.threads(len(ks))},
                check=[(hill_alpha, torch.from_numpy(ref))])


# ----- logistic credit score per applicant, then a rating grade --------------------------------

@parir.jit
def credit_score(X, w, b, pd, grade, n_rows, n_feat):
    parir.label('row')
    for i in range(n_rows):
        z = b
        parir.label('feat')
        for j in range(n_feat):
            z += X[i, j] * w[j]
        p = sigmoid(z)
        pd[i] = p
        if p < 0.02:
            grade[i] = 0
        elif p < 0.1:
            grade[i] = 1
        elif p < 0.3:
            grade[i] = 2
        else:
            grade[i] = 3


def case_credit_score(rng, device):
    n_rows, n_feat = 1000, 31
    X = torch.randn((n_rows, n_feat), generator=rng).to(device)
    w = (0.3 * torch.randn(n_feat, generator=rng)).to(device)
    b = np.float32(-2.5)
    pd = poison(n_rows, device=device)
    grade = poison(n_rows, dtype=torch.int32, device=device)
    z = float(b) + f64(X) @ f64(w)
    p = 1.0 / (1.0 + np.exp(-z))
    ref_grade = np.select([p < 0.02, p < 0.1, p < 0.3], [0, 1, 2], 3)
    return dict(fn=credit_score, args=[X, w, b, pd, grade, n_rows, n_feat],
                spec={'row': parir.threads(n_rows), 'feat': parir.threads(32).reduce()},
                check=[(pd, torch.from_numpy(p)), (grade, torch.from_numpy(ref_grade).int())])


# ----- portfolio returns and drawdowns: one specification for both functions -------------------

n_port, n_days, n_assets = 7, 120, 31
port_spec = {'port': parir.threads(n_port), 'day': parir.threads(n_days),
             'asset': parir.threads(32).reduce()}


@parir.jit
def portfolio_returns(weights, returns, port_ret, n_port, n_days, n_assets):
    parir.label('port')
    for p in range(n_port):
        parir.label('day')
        for t in range(n_days):
            parir.label('asset')
            for a in range(n_assets):
                port_ret[p, t] += weights[p, a] * returns[t, a]


@parir.jit
def drawdown(port_ret, wealth, dd, max_dd, n_port, n_days):
    parir.label('port')
    for p in range(n_port):
        w = 1.0
        peak = 1.0
        mdd = 0.0
        for t in range(n_days):
            w = w * (1.0 + port_ret[p, t])
            peak = max(peak, w)
            d = w / peak - 1.0
            mdd = min(mdd, d)
            wealth[p, t] = w
            dd[p, t] = d
        max_dd[p] = mdd


def case_portfolio_returns(rng, device):
    # daily asset returns with the benchmark in the last column, which the book leaves out
    returns_all = (0.01 * torch.randn((n_days, n_assets + 1), generator=rng)).to(device)
    weights = torch.rand((n_port, n_assets), generator=rng, dtype=torch.float64)
    weights = (weights / weights.sum(1, keepdim=True)).to(device)
    port_ret = torch.zeros((n_port, n_days), dtype=torch.float64, device=device)
    ref = f64(weights) @ f64(returns_all[:, :n_assets]).T
    return dict(fn=portfolio_returns,
                args=[weights, returns_all[:, :n_assets], port_ret, n_port, n_days, n_assets],
                spec=port_spec, check=[(port_ret, torch.from_numpy(ref))])


def case_drawdown(rng, device):
    port_ret = (0.0003 + 0.012 * torch.randn((n_port, n_days), generator=rng,
                                             dtype=torch.float64)).to(device)
    wealth, dd = (poison((n_port, n_days), dtype=torch.float64, device=device)
                  for _ in range(2))
    max_dd = poison(n_port, dtype=torch.float64, device=device)
    r = f64(port_ret)
    w = np.cumprod(1.0 + r, axis=1)
    peak = np.maximum(np.maximum.accumulate(w, axis=1), 1.0)
    ref_dd = w / peak - 1.0
    return dict(fn=drawdown, args=[port_ret, wealth, dd, max_dd, n_port, n_days],
                spec=port_spec,
                check=[(wealth, torch.from_numpy(w)), (dd, torch.from_numpy(ref_dd)),
                       (max_dd, torch.from_numpy(np.minimum(ref_dd.min(1), 0.0)))])


# ----- order book: resting orders aggregated by price level with atomic updates ----------------

@parir.jit
def aggregate_book(price, qty, side, bid_qty, ask_qty, n_at_level, notional, best_bid,
                   best_ask, p_min, tick, n_orders):
    parir.label('order')
    for i in range(n_orders):
        lvl = int(round((price[i] - p_min) / tick))
        if side[i] == 1:            # buy
            parir.atomic_add(bid_qty[lvl], qty[i])
            parir.atomic_max(best_bid[0], lvl)
        else:                       # sell
            parir.atomic_add(ask_qty[lvl], qty[i])
            parir.atomic_min(best_ask[0], lvl)
        parir.atomic_add(n_at_level[lvl], 1)
        parir.atomic_add(notional[lvl], price[i] * qty[i])


def case_orderbook(rng, device):
    n_orders, n_levels = 4097, 61
    p_min, tick = 99.5, 0.01
    level = randint(n_orders, rng, 0, n_levels)
    side = randint(n_orders, rng, 0, 2, dtype=torch.int8)
    # bids below the mid, asks above, a few crossing
    level = torch.where(side == 1, level // 2 + 5, n_levels - 1 - level // 2)
    price = (p_min + tick * level.double()).to(device)
    qty = randint(n_orders, rng, 1, 500, dtype=torch.int32, device=device)
    bid_qty = torch.zeros(n_levels, dtype=torch.int32, device=device)
    ask_qty = torch.zeros(n_levels, dtype=torch.int32, device=device)
    n_at_level = torch.zeros(n_levels, dtype=torch.int64, device=device)
    notional = torch.zeros(n_levels, dtype=torch.float64, device=device)
    best_bid = torch.tensor([-1], dtype=torch.int32, device=device)
    best_ask = torch.tensor([n_levels], dtype=torch.int32, device=device)
    lv, sd, qn, pn = (f64(v) for v in (level, side, qty, price))
    lv = lv.astype(np.int64)
    buy = sd == 1
    ref_bid = np.bincount(lv[buy], weights=qn[buy], minlength=n_levels)
    ref_ask = np.bincount(lv[~buy], weights=qn[~buy], minlength=n_levels)
    ref_n = np.bincount(lv, minlength=n_levels)
    ref_notional = np.bincount(lv, weights=pn * qn, minlength=n_levels)
    return dict(fn=aggregate_book,
                args=[price, qty, side.to(device), bid_qty, ask_qty, n_at_level, notional,
                      best_bid, best_ask, p_min, tick, n_orders],
                spec={'order': parir.threads(n_orders)},
                check=[(bid_qty, torch.from_numpy(ref_bid).int()),
                       (ask_qty, torch.from_numpy(ref_ask).int()),
                       (n_at_level, torch.from_numpy(ref_n)),
                       (notional, torch.from_numpy(ref_notional)),
                       (best_bid, torch.tensor([lv[buy].max()], dtype=torch.int32)),
                       (best_ask, torch.tensor([lv[~buy].min()], dtype=torch.int32))])

# ----- Numba's Black-Scholes example: the constants at module level, as the example has them --

RISKFREE = 0.02
VOLATILITY = 0.30

A1 = 0.31938153
A2 = -0.356563782
A3 = 1.781477937
A4 = -1.821255978
A5 = 1.330274429
RSQRT2PI = 0.39894228040143267793994605993438


def cnd_cuda(d):
    K = 1.0 / (1.0 + 0.2316419 * math.fabs(d))
    ret_val = (RSQRT2PI * math.exp(-0.5 * d * d) *
               (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5))))))
    if d > 0:
        ret_val = 1.0 - ret_val
    return ret_val


@parir.jit
def black_scholes_cuda(callResult, putResult, S, X, T, R, V):
    parir.label('i')
    for i in range(S.shape[0]):
        sqrtT = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT)
        d2 = d1 - V * sqrtT
        cndd1 = cnd_cuda(d1)
        cndd2 = cnd_cuda(d2)
        expRT = math.exp((-1. * R) * T[i])
        callResult[i] = (S[i] * cndd1 - X[i] * expRT * cndd2)
        putResult[i] = (X[i] * expRT * (1.0 - cndd2) - S[i] * (1.0 - cndd1))


def case_black_scholes_numba(rng, device):
    OPT_N = 4097
    stockPrice = positive(OPT_N, rng, dtype=torch.float64, device=device, lo=5.0, hi=30.0)
    optionStrike = positive(OPT_N, rng, dtype=torch.float64, device=device, lo=1.0, hi=100.0)
    optionYears = positive(OPT_N, rng, dtype=torch.float64, device=device, lo=0.25, hi=10.0)
    callResult = poison(OPT_N, dtype=torch.float64, device=device)
    putResult = poison(OPT_N, dtype=torch.float64, device=device)
    S, X, T = f64(stockPrice), f64(optionStrike), f64(optionYears)
    R, V = RISKFREE, VOLATILITY

    def cnd(d):
        K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        poly = K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5))))
        val = RSQRT2PI * np.exp(-0.5 * d * d) * poly
        return np.where(d > 0, 1.0 - val, val)

    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    expRT = np.exp(-R * T)
    ref_call = S * cnd(d1) - X * expRT * cnd(d2)
    ref_put = X * expRT * (1.0 - cnd(d2)) - S * (1.0 - cnd(d1))
    return dict(fn=black_scholes_cuda,
                args=[callResult, putResult, stockPrice, optionStrike, optionYears, RISKFREE,
                      VOLATILITY],
                spec={'i': parir.threads(OPT_N)},
                check=[(callResult, torch.from_numpy(ref_call)),
                       (putResult, torch.from_numpy(ref_put))])


# ----- Black-76 caplets and floorlets off a discount curve, QuantLib's blackFormula ------------

def black_formula(F, K, stdev, discount=1.0, omega=1.0):
    # omega = 1 for a call (caplet), -1 for a put (floorlet)
    d1 = math.log(F / K) / stdev + 0.5 * stdev
    d2 = d1 - stdev
    return discount * omega * (F * norm_cdf(omega * d1) - K * norm_cdf(omega * d2))


@parir.jit
def caplet_prices(P, t, vol, caplets, floorlets, K, notional, n_caplets):
    parir.label('caplet')
    for i in range(n_caplets):
        tau = t[i + 1] - t[i]
        F = (P[i] / P[i + 1] - 1.0) / tau
        stdev = vol[i] * math.sqrt(t[i])
        caplets[i] = notional * tau * black_formula(F, K, stdev, P[i + 1])
        floorlets[i] = notional * tau * black_formula(F, K, stdev, P[i + 1], -1.0)


def case_caplets(rng, device):
    n_caplets = 31
    K, notional = 0.03, np.float64(1e6)
    t = 0.25 * torch.arange(1, n_caplets + 2, dtype=torch.float64)       # quarterly dates
    zero = 0.02 + 0.01 * (1.0 - torch.exp(-t / 3.0))                     # an upward zero curve
    P = torch.exp(-zero * t)
    vol = positive(n_caplets, rng, dtype=torch.float64, lo=0.15, hi=0.35)
    caplets = poison(n_caplets, dtype=torch.float64, device=device)
    floorlets = poison(n_caplets, dtype=torch.float64, device=device)
    Pn, tn, vn = f64(P), f64(t), f64(vol)
    tau = tn[1:] - tn[:-1]
    F = (Pn[:-1] / Pn[1:] - 1.0) / tau
    sd = vn * np.sqrt(tn[:-1])
    d1 = np.log(F / K) / sd + 0.5 * sd
    d2 = d1 - sd
    ref_cap = float(notional) * tau * Pn[1:] * (F * _ncdf(d1) - K * _ncdf(d2))
    ref_floor = float(notional) * tau * Pn[1:] * (K * _ncdf(-d2) - F * _ncdf(-d1))
    return dict(fn=caplet_prices,
                args=[P.to(device), t.to(device), vol.to(device), caplets, floorlets, K,
                      notional, n_caplets],
                spec={'caplet': parir.threads(n_caplets)},
                check=[(caplets, torch.from_numpy(ref_cap)),
                       (floorlets, torch.from_numpy(ref_floor))])


# ----- inverse-volatility (naive risk parity) weights ------------------------------------------

@parir.jit
def inverse_vol_weights(returns, vol, weights, n_obs, n_assets):
    parir.label('asset')
    for a in range(n_assets):
        m = 0.0
        for t in range(n_obs):
            m += returns[t, a]
        m = m / n_obs
        ss = 0.0
        for t in range(n_obs):
            ss += (returns[t, a] - m) ** 2
        vol[a] = math.sqrt(ss / (n_obs - 1)) * math.sqrt(252.0)
    total = 0.0
    parir.label('asset_sum')
    for a in range(n_assets):
        total += 1.0 / vol[a]
    parir.label('asset')
    for a in range(n_assets):
        weights[a] = 1.0 / vol[a] / total


def case_inverse_vol(rng, device):
    n_obs, n_assets = 120, 33
    scale = torch.linspace(0.005, 0.03, n_assets, dtype=torch.float64)
    returns = (scale * torch.randn((n_obs, n_assets), generator=rng,
                                   dtype=torch.float64)).to(device)
    vol = poison(n_assets, dtype=torch.float64, device=device)
    weights = poison(n_assets, dtype=torch.float64, device=device)
    v = f64(returns).std(0, ddof=1) * math.sqrt(252.0)
    return dict(fn=inverse_vol_weights, args=[returns, vol, weights, n_obs, n_assets],
                spec={'asset': parir.threads(n_assets),
                      'asset_sum': parir.threads(n_assets).reduce()},
                check=[(vol, torch.from_numpy(v)),
                       (weights, torch.from_numpy((1.0 / v) / (1.0 / v).sum()))])


# ----- yield to maturity by Newton's method, the derivative by central differences -------------

def bond_price(y, coupon, face, n, freq):
    pv = 0.0
    for k in range(1, n + 1):
        pv += coupon / freq / (1.0 + y / freq) ** k
    pv += face / (1.0 + y / freq) ** n
    return pv


@parir.jit
def yield_to_maturity(price, coupon_rate, n_periods, ytm, face, freq, n_bonds, tol, max_iter):
    parir.label('bond')
    for b in range(n_bonds):
        y = coupon_rate[b]
        h = 1e-6
        err = 1.0
        it = 0
        while abs(err) > tol and it < max_iter:
            p = bond_price(y, coupon_rate[b] * face, face, n_periods[b], freq)
            p_up = bond_price(y + h, coupon_rate[b] * face, face, n_periods[b], freq)
            p_dn = bond_price(y - h, coupon_rate[b] * face, face, n_periods[b], freq)
            err = p - price[b]
            y -= err / ((p_up - p_dn) / (2.0 * h))
            it += 1
        ytm[b] = y


def case_bond_ytm(rng, device):
    n_bonds, face, freq = 33, 100.0, 2
    coupon_rate = positive(n_bonds, rng, dtype=torch.float64, lo=0.01, hi=0.07)
    n_periods = randint(n_bonds, rng, 1, 41, dtype=torch.int32)          # up to 20 years
    true_y = f64(positive(n_bonds, rng, dtype=torch.float64, lo=0.005, hi=0.08))
    c, n = f64(coupon_rate), f64(n_periods).astype(np.int64)
    price = np.array([sum(c[b] * face / freq / (1.0 + true_y[b] / freq) ** k
                          for k in range(1, n[b] + 1))
                      + face / (1.0 + true_y[b] / freq) ** n[b] for b in range(n_bonds)])
    ytm = poison(n_bonds, dtype=torch.float64, device=device)
    return dict(fn=yield_to_maturity,
                args=[torch.from_numpy(price).to(device), coupon_rate.to(device),
                      n_periods.to(device), ytm, face, freq, n_bonds, 1e-10, 50],
                spec={'bond': parir.threads(n_bonds)},
                tol=(1e-8, 1e-8),
                check=[(ytm, torch.from_numpy(true_y))])


# ----- GARCH(1,1) variance filter and Gaussian log-likelihood per series (arch's recursion) ----

@parir.jit
def garch11_filter(resids, params, sigma2, llf, n_series, n_obs):
    parir.label('series')
    for s in range(n_series):
        omega, alpha, beta = params[s, 0], params[s, 1], params[s, 2]
        backcast = 0.0
        for t in range(n_obs):
            backcast += resids[s, t] ** 2
        backcast = backcast / n_obs
        sigma2[s, 0] = omega + (alpha + beta) * backcast
        ll = 0.0
        for t in range(n_obs):
            if t > 0:
                sigma2[s, t] = omega + alpha * resids[s, t - 1] ** 2 + beta * sigma2[s, t - 1]
            ll += -0.5 * (math.log(2.0 * math.pi) + math.log(sigma2[s, t])
                          + resids[s, t] ** 2 / sigma2[s, t])
        llf[s] = ll


def case_garch(rng, device):
    n_series, n_obs = 7, 250
    resids = (0.01 * torch.randn((n_series, n_obs), generator=rng,
                                 dtype=torch.float64)).to(device)
    params = torch.stack([positive(n_series, rng, dtype=torch.float64, lo=1e-6, hi=5e-6),
                          positive(n_series, rng, dtype=torch.float64, lo=0.03, hi=0.15),
                          positive(n_series, rng, dtype=torch.float64, lo=0.75, hi=0.84)],
                         1).to(device)
    sigma2 = poison((n_series, n_obs), dtype=torch.float64, device=device)
    llf = poison(n_series, dtype=torch.float64, device=device)
    e, pr = f64(resids), f64(params)
    s2 = np.empty_like(e)
    s2[:, 0] = pr[:, 0] + (pr[:, 1] + pr[:, 2]) * (e * e).mean(1)
    for t in range(1, n_obs):
        s2[:, t] = pr[:, 0] + pr[:, 1] * e[:, t - 1] ** 2 + pr[:, 2] * s2[:, t - 1]
    ll = -0.5 * (np.log(2.0 * np.pi) + np.log(s2) + e * e / s2).sum(1)
    return dict(fn=garch11_filter, args=[resids, params, sigma2, llf, n_series, n_obs],
                spec={'series': parir.threads(n_series)},
                check=[(sigma2, torch.from_numpy(s2)), (llf, torch.from_numpy(ll))])


# ----- geometric Brownian motion stepped from the host, one launch per time step (CuPy style) --

@parir.jit
def simulate_gbm(Z, S, running_sum, S0, mu, sigma, dt, n_paths, n_steps):
    drift = (mu - 0.5 * sigma * sigma) * dt
    diffusion = sigma * math.sqrt(dt)
    parir.label('path')
    for p in range(n_paths):
        S[p] = S0
        running_sum[p] = 0.0
    for t in range(n_steps):
        parir.label('path')
        for p in range(n_paths):
            S[p] = S[p] * math.exp(drift + diffusion * Z[t, p])
            running_sum[p] += S[p]


def case_gbm_host_loop(rng, device):
    n_paths, n_steps = 4097, 8
    S0, mu, sigma, dt = np.float32(50.0), np.float32(0.07), np.float32(0.3), np.float32(1 / 52)
    Z = torch.randn((n_steps, n_paths), generator=rng).to(device)
    S = poison(n_paths, device=device)
    running_sum = poison(n_paths, device=device)
    z = f64(Z)
    drift = (float(mu) - 0.5 * float(sigma) ** 2) * float(dt)
    diffusion = float(sigma) * math.sqrt(float(dt))
    paths = float(S0) * np.exp(np.cumsum(drift + diffusion * z, axis=0))
    return dict(fn=simulate_gbm,
                args=[Z, S, running_sum, S0, mu, sigma, dt, n_paths, n_steps],
                spec={'path': parir.threads(n_paths)},
                check=[(S, torch.from_numpy(paths[-1])),
                       (running_sum, torch.from_numpy(paths.sum(0)))])


CASES = {
    "fs_mc_european": case_mc_european,
    "fs_mc_asian": case_mc_asian,
    "fs_crr_american_put": case_crr_american_put,
    "fs_binomial_options": case_binomial_options,
    "fs_implied_vol": case_implied_vol,
    "fs_historical_var": case_historical_var,
    "fs_ewma": case_ewma,
    "fs_rolling_zscore": case_rolling_zscore,
    "fs_corr_matrix": case_corr_matrix,
    "fs_welch_ttest": case_welch_ttest,
    "fs_bootstrap_mean": case_bootstrap_mean,
    "fs_quantiles": case_quantiles,
    "fs_hill_estimator": case_hill,
    "fs_credit_score": case_credit_score,
    "fs_portfolio_returns": case_portfolio_returns,
    "fs_drawdown": case_drawdown,
    "fs_orderbook": case_orderbook,
    "fs_black_scholes_numba": case_black_scholes_numba,
    "fs_caplets": case_caplets,
    "fs_inverse_vol": case_inverse_vol,
    "fs_bond_ytm": case_bond_ytm,
    "fs_garch": case_garch,
    "fs_gbm_host_loop": case_gbm_host_loop,
}
