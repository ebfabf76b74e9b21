"""Programs built on running values and arg-reductions, written as their authors write them
elsewhere: a classifier's predictions and accuracy (`logits.argmax(dim=1)`), a greedy decoding
step over a GPT-2-sized vocabulary, stream compaction by an exclusive prefix sum of the keep
flags (as CUB's DeviceSelect does it), a maximum drawdown with the running peak written as a
loop, and the empirical CDF of histogram rows."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- A classifier's predictions, as `preds = logits.argmax(dim=1)` -------------------------

@parir.jit
def predict_and_score(logits, labels, preds, correct):
    n, num_classes = logits.shape
    parir.label('batch')
    for i in range(n):
        parir.label('classes')
        preds[i] = parir.argmax(logits[i, :])
        correct[i] = 1 if preds[i] == labels[i] else 0


def case_predict_and_score(rng, device):
    n, c = 1000, 10
    logits = nonzero((n, c), rng, device=device)
    labels = randint(n, rng, 0, c, device=device)
    preds, correct = poison(n, torch.int64, device), poison(n, torch.int32, device)
    want = torch.from_numpy(np.argmax(f64(logits), axis=1))
    return dict(fn=predict_and_score, args=[logits, labels, preds, correct],
                spec={'batch': parir.threads(n), 'classes': parir.threads(32).reduce()},
                check=[(preds, want),
                       (correct, (want == labels.cpu()).to(torch.int32))])


# ----- One step of greedy decoding: the next token of each sequence --------------------------

@parir.jit
def greedy_next_token(logits, temperature, tokens, best_logit):
    parir.label('seq')
    for b in range(logits.shape[0]):
        parir.label('vocab')
        k = parir.argmax(logits[b, :])
        tokens[b] = k
        best_logit[b] = logits[b, k] / temperature


def case_greedy_next_token(rng, device):
    batch, vocab = 8, 50257
    logits = nonzero((batch, vocab), rng, device=device, lo=0.01, hi=20.0)
    tokens, best = poison(batch, torch.int64, device), poison(batch, device=device)
    x = f64(logits)
    k = np.argmax(x, axis=1)
    return dict(fn=greedy_next_token, args=[logits, 0.7, tokens, best],
                spec={'seq': parir.threads(batch), 'vocab': parir.threads(1024).reduce()},
                check=[(tokens, torch.from_numpy(k)),
                       (best, torch.from_numpy(x[np.arange(batch), k] / 0.7).float())])


# ----- Stream compaction: keep the positive values, in order (CUB's DeviceSelect::If) ---------

@parir.jit
def select_positive(x, keep, offsets, out, count):
    n = x.shape[0]
    parir.label('i')
    for i in range(n):
        keep[i] = 1 if x[i] > 0.0 else 0
    parir.label('scan')
    offsets[:] = parir.cumsum(keep[:], exclusive=True)
    parir.label('i')
    for i in range(n):
        if keep[i] == 1:
            out[offsets[i]] = x[i]
    with parir.gpu:
        count[0] = offsets[n - 1] + keep[n - 1]


def case_select_positive(rng, device):
    n = 4099
    x = nonzero(n, rng, device=device)
    keep = poison(n, torch.int32, device)
    offsets, out = poison(n, torch.int64, device), poison(n, device=device)
    count = poison(1, torch.int64, device)
    kept = f64(x)[f64(x) > 0]
    want = torch.full((n,), float("nan"), dtype=torch.float64)
    want[:kept.size] = torch.from_numpy(kept)
    return dict(fn=select_positive, args=[x, keep, offsets, out, count],
                spec={'i': parir.threads(n), 'scan': parir.threads(1024).scan()},
                check=[(out, want.float()), (count, torch.tensor([kept.size]))])


# ----- Maximum drawdown of price series, the running peak carried along each row -------------

@parir.jit
def max_drawdown(prices, drawdown, worst):
    series, days = prices.shape
    parir.label('series')
    for s in range(series):
        peak = prices[s, 0]
        parir.label('days')
        for d in range(days):
            peak = max(peak, prices[s, d])
            drawdown[s, d] = (peak - prices[s, d]) / peak
        parir.label('days')
        worst[s] = parir.max(drawdown[s, :])


def case_max_drawdown(rng, device):
    series, days = 37, 2500
    steps = 1.0 + 0.02 * nonzero((series, days), rng, dtype=torch.float64, lo=0.0, hi=1.0)
    prices = (100.0 * torch.cumprod(steps, dim=1)).to(device)
    drawdown, worst = poison((series, days), torch.float64, device), poison(series, torch.float64,
                                                                            device)
    p = f64(prices)
    peak = np.maximum.accumulate(p, axis=1)
    dd = (peak - p) / peak
    return dict(fn=max_drawdown, args=[prices, drawdown, worst],
                spec={'series': parir.threads(series), 'days': parir.threads(256).scan()},
                check=[(drawdown, torch.from_numpy(dd)), (worst, torch.from_numpy(dd.max(1)))])


# ----- Empirical CDF of histogram rows: running counts over the row's total -------------------

@parir.jit
def histogram_cdf(counts, cdf):
    rows, bins = counts.shape
    parir.label('rows')
    for r in range(rows):
        parir.label('bins')
        cdf[r, :] = parir.cumsum(counts[r, :])
        total = cdf[r, bins - 1]
        parir.label('bins')
        cdf[r, :] /= total


def case_histogram_cdf(rng, device):
    rows, bins = 33, 1000
    counts = randint((rows, bins), rng, 0, 50, dtype=torch.int32, device=device)
    cdf = poison((rows, bins), device=device)
    c = np.cumsum(f64(counts), axis=1)
    return dict(fn=histogram_cdf, args=[counts, cdf],
                spec={'rows': parir.threads(rows), 'bins': parir.threads(512).scan()},
                check=[(cdf, torch.from_numpy(c / c[:, -1:]).float())])


CASES = {
    "predict_and_score": case_predict_and_score,
    "greedy_next_token": case_greedy_next_token,
    "select_positive": case_select_positive,
    "max_drawdown": case_max_drawdown,
    "histogram_cdf": case_histogram_cdf,
}
