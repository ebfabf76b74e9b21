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


def cases(quick):
    """(name, kind, make(tensors)) of each kernel; make returns the case: its parir call, the
    torch version, the bytes it must move and the float64 reference."""
    n = 2 ** 20 if quick else 2 ** 28           # vectors: 1 GiB of float32 each
    N, M = (1024, 1024) if quick else (32768, 8192)  # matrix: 1 GiB of float32
    return [
        ("axpy", "memory", lambda t: _axpy(n, t)),
        ("row sum", "reduction", lambda t: _row_sum(N, M, t)),
        ("row max", "reduction", lambda t: _row_max(N, M, t)),
        ("column sum (two phases)", "reduction", lambda t: _col_sum(N, M, t)),
        ("column sum (slice)", "reduction", lambda t: _col_sum_slice(N, M, t)),
        ("full sum", "reduction", lambda t: _full_sum(N * M, t)),
        ("softmax", "reduction", lambda t: _softmax(N, M, t)),
    ]


class Tensors:
    """Float32 tensors of a case: random non-zero values of both signs on the GPU; on the meta
    device (code generation only, as CI does) shapes without memory, and no reference."""

    def __init__(self, device="cuda", seed=0):
        self.device = torch.device(device)
        self.meta = self.device.type == "meta"
        self.gen = None if self.meta else torch.Generator(device=self.device).manual_seed(seed)

    def rand(self, *shape):
        if self.meta:
            return torch.empty(shape, device=self.device)
        return torch.rand(shape, device=self.device, generator=self.gen) - 0.25

    def empty(self, *shape):
        return torch.empty(shape, device=self.device)

    def reference(self, f):
        return None if self.meta else f()


def _axpy(n, t):
    x, y0 = t.rand(n), t.rand(n)
    y = y0.clone()
    a = 1.5
    return dict(call=(axpy, (a, x, y, n), parir.par({'i': parir.threads(n)})), result=y,
                shape=f"{n}", bytes=3 * n * 4, torch=lambda: y.add_(x, alpha=a),
                reset=lambda: y.copy_(y0), reference=t.reference(lambda: y0.double() + a * x.double()))


def _row_sum(N, M, t):
    x, y = t.rand(N, M), t.empty(N)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024).reduce()})
    # The kernel accumulates into y: zeroed before each run, as a user would.
    return dict(call=(sum_rows_reduce, (x, y, N, M), opts), before=y.zero_, result=y,
                shape=f"{N}x{M}", bytes=(N * M + N) * 4, torch=lambda: x.sum(1),
                reference=t.reference(lambda: x.double().sum(1)))


def _row_max(N, M, t):
    x, y = t.rand(N, M), t.empty(N)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})
    return dict(call=(row_max, (x, y, N, M), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + N) * 4, torch=lambda: torch.amax(x, 1),
                reference=t.reference(lambda: x.double().amax(1)))


def _col_sum(N, M, t):
    x, y = t.rand(N, M), t.empty(M)
    R = 64
    partial = t.empty(R, M)
    opts = parir.par({'R': parir.threads(R), 'M': parir.threads(M)})
    return dict(call=(col_sums, (x, partial, y, N, M, R), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + M) * 4, torch=lambda: x.sum(0),
                reference=t.reference(lambda: x.double().sum(0)))


def _col_sum_slice(N, M, t):
    x, y = t.rand(N, M), t.empty(M)
    opts = parir.par({'M': parir.threads(M), 'N': parir.threads(256)})
    return dict(call=(col_sums_slice, (x, y, N, M), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + M) * 4, torch=lambda: x.sum(0),
                reference=t.reference(lambda: x.double().sum(0)))


def _full_sum(n, t):
    x, out = t.rand(n), t.empty(1)
    opts = parir.par({'i': parir.threads(2 ** 20).reduce()})
    # The kernel accumulates into out: zeroed before each run.
    return dict(call=(total_sum, (x, out, n), opts), before=out.zero_, result=out,
                shape=f"{n}", bytes=n * 4, torch=lambda: x.sum().reshape(1),
                reference=t.reference(lambda: x.double().sum().reshape(1)))


def _softmax(N, M, t):
    x, out = t.rand(N, M), t.empty(N, M)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})
    return dict(call=(softmax_rows, (x, out, N, M), opts), result=out, shape=f"{N}x{M}",
                bytes=2 * N * M * 4, torch=lambda: torch.softmax(x, 1),
                reference=t.reference(lambda: torch.softmax(x.double(), 1)))


def run_parir(case):
    """One parir run of the case (with its zeroing, if any); returns the output."""
    if "before" in case:
        case["before"]()
    fn, args, opts = case["call"]
    fn(*args, opts=opts)
    return case["result"]


def _check(case, which):
    if "reset" in case:
        case["reset"]()
    elif which == "parir" and "before" not in case:
        case["result"].fill_(float("nan"))  # every element must be written
    out = run_parir(case) if which == "parir" else case["torch"]()
    torch.cuda.synchronize()
    return relative_error(out, case["reference"])


def _measure(case, which):
    """Checks one implementation of the case, then times it if it is right."""
    err = _check(case, which)
    out = {f"{which}_rel_err": err}
    if not err <= 1e-4:
        out[f"{which}_status"] = f"wrong: rel. error {err:.2e}"
        return out
    f = (lambda: run_parir(case)) if which == "parir" else case["torch"]
    t = time_runs(lambda _: f(), [None], warmup=3, min_reps=10, max_reps=100, target_s=0.2)
    out.update({f"{which}_ms": t["median_ms"], f"{which}_timing": t, f"{which}_status": "ok",
                f"{which}_GBps": case["bytes"] / 1e9 / (t["median_ms"] / 1e3)})
    return out


def run_suite(quick, deadline, copy_gbps, only=None, log=print, progress=None):
    """Every kernel (or those named in `only`, or starting with a name there). progress(rows,
    name), when given, is called before each kernel with the rows so far and the kernel's
    name, and with None at the end."""
    rows = []
    tensors = Tensors("cuda")
    for name, kind, make in cases(quick):
        if only and name not in only and not any(name.startswith(o) for o in only):
            continue
        if progress:
            progress(rows, name)
        row = {"kernel": name, "kind": kind, "dtype": "float32"}
        rows.append(row)
        if time.monotonic() > deadline:
            row["status"] = "skipped: time budget"
            continue
        try:
            case = make(tensors)
            row["shape"], row["bytes"] = case["shape"], case["bytes"]
            for which in ("parir", "torch"):
                row.update(_measure(case, which))
            row["status"] = "ok"
            del case
        except Exception as e:
            row["status"] = f"failed: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
            row["traceback"] = traceback.format_exc()
        torch.cuda.empty_cache()
        _targets(row, copy_gbps)
        log(f"  {name:26s} parir {row.get('parir_GBps', 0):7.0f} GB/s  torch "
            f"{row.get('torch_GBps', 0):7.0f} GB/s  ({row.get('status')})")
    if progress:
        progress(rows, None)
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
