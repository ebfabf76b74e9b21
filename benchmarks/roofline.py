"""The roofline suite: memory-bound kernels at sizes that fill the GPU, next to torch eager and
to the device-to-device copy bandwidth measured in the same run.

Achieved bandwidth counts the bytes the computation must move at least once (inputs read,
outputs written) over the median kernel time. Each kernel's output (parir and torch) is checked
against a float64 reference before it is timed. The inputs are a gibibyte or more, far larger
than the L2 cache, so no rotation is needed.
"""

import time
import traceback

import torch

import parir_torch as parir
from kernels import axpy, col_sums, col_sums_slice, row_max, softmax_rows, sum_rows_reduce, total_sum
from timing import relative_error, time_runs

# Reductions and softmax must also match torch eager; every kernel here must reach 85% of the
# measured copy bandwidth.
BANDWIDTH_TARGET = 0.85


def _cases(quick):
    n = 2 ** 20 if quick else 2 ** 28           # vectors: 1 GiB of float32 each
    N, M = (1024, 1024) if quick else (32768, 8192)  # matrix: 1 GiB of float32
    return [
        ("axpy", "memory", lambda g: _axpy(n, g)),
        ("row sum", "reduction", lambda g: _row_sum(N, M, g)),
        ("row max", "reduction", lambda g: _row_max(N, M, g)),
        ("column sum (two phases)", "reduction", lambda g: _col_sum(N, M, g)),
        ("column sum (slice)", "reduction", lambda g: _col_sum_slice(N, M, g)),
        ("full sum", "reduction", lambda g: _full_sum(N * M, g)),
        ("softmax", "reduction", lambda g: _softmax(N, M, g)),
    ]


def _rand(gen, *shape):
    return torch.rand(shape, device="cuda", generator=gen) - 0.25  # non-zero, both signs


def _axpy(n, gen):
    x, y0 = _rand(gen, n), _rand(gen, n)
    y = y0.clone()
    a = 1.5
    opts = parir.par({'i': parir.threads(n)})

    def run_parir():
        axpy(a, x, y, n, opts=opts)
        return y

    def run_torch():
        return y.add_(x, alpha=a)

    return dict(shape=f"{n}", bytes=3 * n * 4, parir=run_parir, torch=run_torch,
                reset=lambda: y.copy_(y0), reference=y0.double() + a * x.double())


def _row_sum(N, M, gen):
    x, y = _rand(gen, N, M), torch.empty(N, device="cuda")
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024).reduce()})

    def run_parir():
        y.zero_()  # the kernel accumulates into y
        sum_rows_reduce(x, y, N, M, opts=opts)
        return y

    return dict(shape=f"{N}x{M}", bytes=(N * M + N) * 4, parir=run_parir,
                torch=lambda: x.sum(1), reference=x.double().sum(1))


def _row_max(N, M, gen):
    x, y = _rand(gen, N, M), torch.empty(N, device="cuda")
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})

    def run_parir():
        row_max(x, y, N, M, opts=opts)
        return y

    return dict(shape=f"{N}x{M}", bytes=(N * M + N) * 4, parir=run_parir,
                torch=lambda: torch.amax(x, 1), reference=x.double().amax(1))


def _col_sum(N, M, gen):
    x, y = _rand(gen, N, M), torch.empty(M, device="cuda")
    R = 64
    partial = torch.empty(R, M, device="cuda")
    opts = parir.par({'R': parir.threads(R), 'M': parir.threads(M)})

    def run_parir():
        col_sums(x, partial, y, N, M, R, opts=opts)
        return y

    return dict(shape=f"{N}x{M}", bytes=(N * M + M) * 4, parir=run_parir,
                torch=lambda: x.sum(0), reference=x.double().sum(0))


def _col_sum_slice(N, M, gen):
    x, y = _rand(gen, N, M), torch.empty(M, device="cuda")
    opts = parir.par({'M': parir.threads(M), 'N': parir.threads(256)})

    def run_parir():
        col_sums_slice(x, y, N, M, opts=opts)
        return y

    return dict(shape=f"{N}x{M}", bytes=(N * M + M) * 4, parir=run_parir,
                torch=lambda: x.sum(0), reference=x.double().sum(0))


def _full_sum(n, gen):
    x, out = _rand(gen, n), torch.empty(1, device="cuda")
    opts = parir.par({'i': parir.threads(2 ** 20).reduce()})

    def run_parir():
        out.zero_()  # the kernel accumulates into out
        total_sum(x, out, n, opts=opts)
        return out

    return dict(shape=f"{n}", bytes=n * 4, parir=run_parir, torch=lambda: x.sum().reshape(1),
                reference=x.double().sum().reshape(1))


def _softmax(N, M, gen):
    x, out = _rand(gen, N, M), torch.empty(N, M, device="cuda")
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})

    def run_parir():
        softmax_rows(x, out, N, M, opts=opts)
        return out

    return dict(shape=f"{N}x{M}", bytes=2 * N * M * 4, parir=run_parir,
                torch=lambda: torch.softmax(x, 1), reference=torch.softmax(x.double(), 1))


def _check(case, which):
    if "reset" in case:
        case["reset"]()
    out = case[which]()
    torch.cuda.synchronize()
    return relative_error(out, case["reference"])


def run_suite(quick, deadline, copy_gbps, only=None, log=print):
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name, kind, make in _cases(quick):
        if only and name not in only and not any(name.startswith(o) for o in only):
            continue
        row = {"kernel": name, "kind": kind, "dtype": "float32"}
        rows.append(row)
        if time.monotonic() > deadline:
            row["status"] = "skipped: time budget"
            continue
        try:
            case = make(gen)
            row["shape"], row["bytes"] = case["shape"], case["bytes"]
            for which in ("parir", "torch"):
                err = _check(case, which)
                row[f"{which}_rel_err"] = err
                if not err <= 1e-4:
                    row[f"{which}_status"] = f"wrong: rel. error {err:.2e}"
                    continue
                t = time_runs(lambda _: case[which](), [None], warmup=3, min_reps=10,
                              max_reps=100, target_s=0.2)
                row[f"{which}_ms"] = t["median_ms"]
                row[f"{which}_timing"] = t
                row[f"{which}_GBps"] = case["bytes"] / 1e9 / (t["median_ms"] / 1e3)
                row[f"{which}_status"] = "ok"
            row["status"] = "ok"
            del case
        except Exception as e:
            row["status"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            row["traceback"] = traceback.format_exc()
        torch.cuda.empty_cache()
        _targets(row, copy_gbps)
        log(f"  {name:26s} parir {row.get('parir_GBps', 0):7.0f} GB/s  torch "
            f"{row.get('torch_GBps', 0):7.0f} GB/s  ({row.get('status')})")
    return rows


def _targets(row, copy_gbps):
    """PASS/MISS of the row's targets, as (description, passed) pairs."""
    t = []
    if "parir_GBps" in row:
        frac = row["parir_GBps"] / copy_gbps
        row["fraction_of_copy"] = frac
        t.append((f">= {BANDWIDTH_TARGET:.0%} of copy bandwidth", frac >= BANDWIDTH_TARGET))
        if row["kind"] == "reduction" and "torch_ms" in row:
            t.append((">= torch eager", row["parir_ms"] <= row["torch_ms"]))
    elif row.get("status", "").startswith(("failed", "wrong")) or "parir_status" in row:
        t.append(("runs and is correct", False))
    row["targets"] = t
