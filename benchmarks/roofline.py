"""The roofline suite: memory-bound kernels at sizes that fill the GPU, each in parir, torch
eager, torch.compile (of the eager version) and Triton (written as Triton's tutorials write
it), next to the device-to-device copy bandwidth measured in the same run.

Achieved bandwidth counts the bytes the computation must move at least once (inputs read,
outputs written) over the median kernel time. Each implementation's output is checked against a
float64 reference before it is timed; a wrong one is reported as wrong and not timed. The
inputs are a gibibyte or more, far larger than the L2 cache, so no rotation is needed.

Timing: triton.testing.do_bench (median, after its warm-up, with the L2 flushed before each
run) for all four implementations when Triton is importable, else timing.time_runs (median of
CUDA-event timings after warm-up); one method for every column of a run, recorded in each row.
"""

import time
import traceback

import torch
import torch._dynamo
import torch.nn.functional as F

import parir_torch as parir
import triton_kernels
from kernels import (axpy, col_sums, col_sums_slice, layer_norm, rms_norm, row_max, row_sums_slice,
                     softmax_rows, stencil_2d, sum_rows_reduce, total_sum)
from timing import relative_error, time_runs

# Every kernel here must reach 90% of the measured copy bandwidth and be at least as fast as
# the faster of Triton and torch.compile; reductions must also match torch eager.
BANDWIDTH_TARGET = 0.90
# The implementations of each case, in the order they run and are reported.
IMPLS = ("parir", "torch", "compile", "triton")
NAMES = {"parir": "parir", "torch": "torch eager", "compile": "torch.compile", "triton": "Triton"}
# Correct when ||out - ref|| / ||ref|| is at most this (float32 against the float64 reference).
TOLERANCE = 1e-4


def cases(quick):
    """(name, kind, make(tensors)) of each kernel; make returns the case: its parir call, the
    torch eager version (a function and its arguments, which torch.compile compiles too), the
    Triton version, the bytes it must move and the float64 reference."""
    n = 2 ** 20 if quick else 2 ** 28           # vectors: 1 GiB of float32 each
    N, M = (1024, 1024) if quick else (32768, 8192)  # matrix: 1 GiB of float32
    S = 1024 if quick else 16384                # stencil grid: 1 GiB of float32
    # Rows of 448, the row length of npbench's softmax program: 1.75 GiB of float32.
    R = 2 ** 14 if quick else 2 ** 20
    # GPT-2's hidden size on 512 sequences of 1,024 tokens (1.5 GiB), and a 1,000-class
    # classifier's logits (1 GiB): rows longer than a warp's but far shorter than 8,192.
    T = 2 ** 12 if quick else 2 ** 19
    C = 2 ** 12 if quick else 2 ** 18
    return [
        ("axpy", "memory", lambda t: _axpy(n, t)),
        ("row sum", "reduction", lambda t: _row_sum(N, M, t)),
        ("row sum (slice)", "reduction",
         lambda t: _per_row(row_sums_slice, torch_row_sum, triton_kernels.row_sum,
                            lambda x: x.sum(1), N, M, t)),
        ("row max", "reduction",
         lambda t: _per_row(row_max, torch_row_max, triton_kernels.row_max,
                            lambda x: x.amax(1), N, M, t)),
        ("column sum (two phases)", "reduction", lambda t: _col_sum(N, M, t)),
        ("column sum (slice)", "reduction", lambda t: _col_sum_slice(N, M, t)),
        ("full sum", "reduction", lambda t: _full_sum(N * M, t)),
        ("softmax", "reduction", lambda t: _softmax(N, M, t)),
        ("softmax (short rows)", "reduction", lambda t: _softmax(R, 448, t)),
        ("layer norm", "reduction", lambda t: _layer_norm(N, M, t)),
        ("RMS norm", "reduction", lambda t: _rms_norm(N, M, t)),
        ("layer norm (768-wide rows)", "reduction", lambda t: _layer_norm(T, 768, t)),
        ("softmax (1000-wide rows)", "reduction", lambda t: _softmax(C, 1000, t)),
        ("stencil (2-D, 5 points)", "memory", lambda t: _stencil(S, S, t)),
    ]


def selected(name, only):
    """Whether the kernel `name` is among `only` (names, or the start of names, in any case)."""
    if not only:
        return True
    name = name.lower()
    return any(name.startswith(o.lower()) for o in only)


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


# The torch eager versions, as a user would write them; torch.compile compiles these same
# functions.

def torch_axpy(a, x, y):
    return y.add_(x, alpha=a)


def torch_row_sum(x):
    return x.sum(1)


def torch_row_max(x):
    return torch.amax(x, 1)


def torch_col_sum(x):
    return x.sum(0)


def torch_full_sum(x):
    return x.sum().reshape(1)


def torch_softmax(x):
    return torch.softmax(x, 1)


def torch_layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def torch_rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def torch_stencil(x, y):
    y[1:-1, 1:-1] = 0.2 * (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    return y[1:-1, 1:-1]


def _axpy(n, t):
    x, y0 = t.rand(n), t.rand(n)
    y = y0.clone()
    a = 1.5
    # Every implementation updates y in place: reset before each check.
    return dict(call=(axpy, (a, x, y, n), parir.par({'i': parir.threads(n)})), result=y,
                shape=f"{n}", bytes=3 * n * 4, torch=(torch_axpy, (a, x, y)),
                triton=lambda: triton_kernels.axpy(a, x, y), reset=lambda: y.copy_(y0),
                reference=t.reference(lambda: y0.double() + a * x.double()))


def _row_sum(N, M, t):
    x, y = t.rand(N, M), t.empty(N)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024).reduce()})
    # The kernel accumulates into y: zeroed before each run, as a user would.
    return dict(call=(sum_rows_reduce, (x, y, N, M), opts), before=y.zero_, result=y,
                shape=f"{N}x{M}", bytes=(N * M + N) * 4, torch=(torch_row_sum, (x,)),
                triton=lambda: triton_kernels.row_sum(x),
                reference=t.reference(lambda: x.double().sum(1)))


def _per_row(kernel, torch_version, triton_version, reference, N, M, t):
    """A kernel that writes one value per row of x into y, a thread level over each row."""
    x, y = t.rand(N, M), t.empty(N)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})
    return dict(call=(kernel, (x, y, N, M), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + N) * 4, torch=(torch_version, (x,)),
                triton=lambda: triton_version(x),
                reference=t.reference(lambda: reference(x.double())))


def _col_sum(N, M, t):
    x, y = t.rand(N, M), t.empty(M)
    R = 64
    partial = t.empty(R, M)
    opts = parir.par({'R': parir.threads(R), 'M': parir.threads(M)})
    return dict(call=(col_sums, (x, partial, y, N, M, R), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + M) * 4, torch=(torch_col_sum, (x,)),
                triton=lambda: triton_kernels.col_sum(x),
                reference=t.reference(lambda: x.double().sum(0)))


def _col_sum_slice(N, M, t):
    x, y = t.rand(N, M), t.empty(M)
    opts = parir.par({'M': parir.threads(M), 'N': parir.threads(256)})
    return dict(call=(col_sums_slice, (x, y, N, M), opts), result=y, shape=f"{N}x{M}",
                bytes=(N * M + M) * 4, torch=(torch_col_sum, (x,)),
                triton=lambda: triton_kernels.col_sum(x),
                reference=t.reference(lambda: x.double().sum(0)))


def _full_sum(n, t):
    x, out = t.rand(n), t.empty(1)
    opts = parir.par({'i': parir.threads(2 ** 20).reduce()})
    # The kernel accumulates into out: zeroed before each run (the Triton version's too).
    return dict(call=(total_sum, (x, out, n), opts), before=out.zero_, result=out,
                shape=f"{n}", bytes=n * 4, torch=(torch_full_sum, (x,)),
                triton=lambda: triton_kernels.full_sum(x),
                reference=t.reference(lambda: x.double().sum().reshape(1)))


def _softmax(N, M, t):
    x, out = t.rand(N, M), t.empty(N, M)
    opts = parir.par({'N': parir.threads(N), 'M': parir.threads(1024)})
    return dict(call=(softmax_rows, (x, out, N, M), opts), result=out, shape=f"{N}x{M}",
                bytes=2 * N * M * 4, torch=(torch_softmax, (x,)),
                triton=lambda: triton_kernels.softmax(x),
                reference=t.reference(lambda: torch.softmax(x.double(), 1)))


def _layer_norm(N, D, t):
    x, w, b, out = t.rand(N, D), t.rand(D), t.rand(D), t.empty(N, D)
    eps = 1e-5
    opts = parir.par({'N': parir.threads(N), 'D': parir.threads(1024)})
    return dict(call=(layer_norm, (x, w, b, out, N, D, eps), opts), result=out,
                shape=f"{N}x{D}", bytes=(2 * N * D + 2 * D) * 4,
                torch=(torch_layer_norm, (x, w, b, eps)),
                triton=lambda: triton_kernels.layer_norm(x, w, b, eps),
                reference=t.reference(lambda: F.layer_norm(x.double(), (D,), w.double(),
                                                           b.double(), eps)))


def _rms_norm(N, D, t):
    x, w, out = t.rand(N, D), t.rand(D), t.empty(N, D)
    eps = 1e-6
    opts = parir.par({'N': parir.threads(N), 'D': parir.threads(1024)})
    return dict(call=(rms_norm, (x, w, out, N, D, eps), opts), result=out, shape=f"{N}x{D}",
                bytes=(2 * N * D + D) * 4, torch=(torch_rms_norm, (x, w, eps)),
                triton=lambda: triton_kernels.rms_norm(x, w, eps),
                reference=t.reference(lambda: torch_rms_norm(x.double(), w.double(), eps)))


def _stencil(N, M, t):
    x, y = t.rand(N, M), t.empty(N, M)
    opts = parir.par({'i': parir.threads(N - 2), 'j': parir.threads(M - 2)})
    # Every implementation writes the interior of y; the interior alone is poisoned before each
    # check and compared (nothing writes the border).
    return dict(call=(stencil_2d, (x, y, N, M), opts), result=y[1:-1, 1:-1], shape=f"{N}x{M}",
                bytes=(N * M + (N - 2) * (M - 2)) * 4, torch=(torch_stencil, (x, y)),
                triton=lambda: triton_kernels.stencil_2d(x, y),
                reference=t.reference(lambda: _stencil_reference(x)))


def _stencil_reference(x):
    x = x.double()
    return 0.2 * (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])


def run_parir(case):
    """One parir run of the case (with its zeroing, if any); returns the output."""
    if "before" in case:
        case["before"]()
    fn, args, opts = case["call"]
    fn(*args, opts=opts)
    return case["result"]


class Unavailable(Exception):
    """An implementation that cannot run here (Triton not installed): reported, not a failure."""


def _runner(case, which):
    """run() of one implementation of the case: returns its output. torch.compile compiles a
    fresh function for each case (its first call, in the check, compiles)."""
    if which == "parir":
        return lambda: run_parir(case)
    if which == "triton":
        if not triton_kernels.AVAILABLE:
            raise Unavailable(f"unavailable: Triton is not importable ({triton_kernels.WHY})")
        return case["triton"]
    fn, args = case["torch"]
    if which == "compile":
        torch._dynamo.reset()
        fn = torch.compile(fn)
    return lambda: fn(*args)


def timer():
    """(description, time(f) -> {'median_ms', 'p25_ms', 'p75_ms', ...}) of this run's method:
    triton.testing.do_bench when Triton is importable, else timing.time_runs."""
    fallback = "timing.time_runs (median of CUDA events)", lambda f: time_runs(
        lambda _: f(), [None], warmup=3, min_reps=10, max_reps=100, target_s=0.2)
    if not triton_kernels.AVAILABLE:
        return fallback

    def bench(f):
        med, p25, p75 = do_bench(f, quantiles=[0.5, 0.25, 0.75])
        return {"median_ms": med, "p25_ms": p25, "p75_ms": p75}
    try:
        from triton.testing import do_bench

        # Once on a trivial kernel: a Triton that imports but cannot time here would otherwise
        # fail every column of every row.
        probe = torch.zeros(1024, device="cuda")
        bench(probe.zero_)
    except Exception as e:
        return (f"{fallback[0]}; triton.testing.do_bench failed: {type(e).__name__}: "
                f"{' '.join(str(e).split())[:200]}"), fallback[1]
    return "triton.testing.do_bench (median; L2 flushed before each run)", bench


def _check(case, run):
    if "reset" in case:
        case["reset"]()
    elif "before" not in case:
        case["result"].fill_(float("nan"))  # every element must be written
    out = run()
    torch.cuda.synchronize()
    return relative_error(out, case["reference"])


def _measure(case, which, time_fn):
    """Checks one implementation of the case, then times it if it is right."""
    try:
        run = _runner(case, which)
        t0 = time.perf_counter()
        err = _check(case, run)
        out = {f"{which}_rel_err": err, f"{which}_first_call_s": time.perf_counter() - t0}
        if not err <= TOLERANCE:
            out[f"{which}_status"] = f"wrong: rel. error {err:.2e}"
            return out
        t = time_fn(run)
    except Unavailable as e:
        return {f"{which}_status": str(e)}
    except Exception as e:
        return {f"{which}_status": f"failed: {type(e).__name__}: {' '.join(str(e).split())[:300]}",
                f"{which}_traceback": traceback.format_exc()}
    out.update({f"{which}_ms": t["median_ms"], f"{which}_timing": t, f"{which}_status": "ok",
                f"{which}_GBps": case["bytes"] / 1e9 / (t["median_ms"] / 1e3)})
    return out


def run_suite(quick, deadline, copy_gbps, only=None, log=print, progress=None):
    """Every kernel (or those named in `only`, or starting with a name there). progress(rows,
    name), when given, is called before each kernel with the rows so far and the kernel's
    name, and with None at the end."""
    rows = []
    tensors = Tensors("cuda")
    method, time_fn = timer()
    log(f"  timing: {method}")
    for name, kind, make in cases(quick):
        if not selected(name, only):
            continue
        if progress:
            progress(rows, name)
        row = {"kernel": name, "kind": kind, "dtype": "float32", "timing_method": method}
        rows.append(row)
        if time.monotonic() > deadline:
            row["status"] = "skipped: time budget"
            continue
        try:
            case = make(tensors)
            row["shape"], row["bytes"] = case["shape"], case["bytes"]
            # Each implementation in its own try: one that fails or is missing leaves the
            # others' numbers.
            for which in IMPLS:
                row.update(_measure(case, which, time_fn))
            row["status"] = "ok"
            del case
        except Exception as e:
            row["status"] = f"failed: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
            row["traceback"] = traceback.format_exc()
        torch._dynamo.reset()  # nothing compiled for this case outlives it
        torch.cuda.empty_cache()
        _targets(row, copy_gbps)
        log(f"  {name:24s} " + " | ".join(f"{w} {cell(row, w)}" for w in IMPLS)
            + f" | parir/best {_vs_best(row)} ({row.get('status')})")
    if progress:
        progress(rows, None)
    return rows


def cell(row, which):
    """An implementation's time (and bandwidth) for the log, or the first word of its status."""
    if f"{which}_ms" in row:
        return f"{row[f'{which}_ms']:.3f} ms {row[f'{which}_GBps']:5.0f} GB/s"
    return row.get(f"{which}_status", "-").split(":")[0]


def _vs_best(row):
    return f"{row['vs_best']:.2f}x vs {row['best_alt']}" if "vs_best" in row else "-"


def best_alternative(row):
    """(name, ms) of the faster of Triton and torch.compile among those timed, or None."""
    timed = [(NAMES[w], row[f"{w}_ms"]) for w in ("triton", "compile") if f"{w}_ms" in row]
    return min(timed, key=lambda a: a[1]) if timed else None


def _targets(row, copy_gbps):
    """PASS/MISS of the row's targets, as (description, passed) pairs; also the row's best
    alternative (best_alt, best_alt_ms) and parir's speed-up over it (vs_best)."""
    t = []
    best = best_alternative(row)
    if best:
        row["best_alt"], row["best_alt_ms"] = best
    if "parir_GBps" in row:
        frac = row["parir_GBps"] / copy_gbps
        row["fraction_of_copy"] = frac
        t.append((f">= {BANDWIDTH_TARGET:.0%} of copy bandwidth", frac >= BANDWIDTH_TARGET))
        if best:
            row["vs_best"] = best[1] / row["parir_ms"]
            t.append((">= 1.0x the faster of Triton and torch.compile",
                      row["parir_ms"] <= best[1]))
        if row["kind"] == "reduction" and "torch_ms" in row:
            t.append((">= torch eager", row["parir_ms"] <= row["torch_ms"]))
    elif row.get("status", "").startswith(("failed", "wrong")) or "parir_status" in row:
        t.append(("runs and is correct", False))
    row["targets"] = t
