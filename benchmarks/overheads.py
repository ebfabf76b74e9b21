"""Overheads: per-call host cost, compile latency, and a model step under torch.compile.

* Host overhead per call. Method: many back-to-back calls of a kernel on 1024 floats, wall
  time per call, synchronized once per batch (timing.host_time_us). Such a kernel runs in a
  couple of microseconds, less than any launcher takes to issue it, so the GPU is never the
  bottleneck and the time per call is the host's: argument handling, checks, the launch. The
  same tensors go to parir (cached calls with 1, 4 and 16 tensor arguments, and the same work as
  torch.add), torch.add, a Triton kernel, a numba.cuda kernel and a CuPy RawKernel. A launcher
  that cannot run here is recorded with its error, never given a number.
* Compile latency of a single-kernel function (sum_rows): cold (new process, empty disk cache),
  warm (new process, disk cache filled by the cold run), hot (same process, in-memory cache):
  the wall time of the call, through its synchronization.
* One step of a small model (Linear, GELU, Linear, residual, RMSNorm) under
  torch.compile(mode="reduce-overhead"), with torch's RMSNorm and with the parir rms_norm kernel
  called inside forward, checked against a float64 eager run.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch._dynamo
from torch._dynamo.utils import counters

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import parir_torch as parir  # noqa: E402
from kernels import add, args1, args4, args16, rms_norm, sum_rows  # noqa: E402
from timing import host_time_us, relative_error, time_runs  # noqa: E402

N_SMALL = 1024
CALL_OVERHEAD_TARGET = 1.5   # parir cached call <= 1.5x torch.add
COLD_TARGET_MS, WARM_TARGET_MS = 150.0, 5.0


def _one_line(e):
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def _error_row(name, e):
    return {"name": name, "status": f"failed: {_one_line(e)}"}


def host_overheads(calls, reps, other_launchers=True):
    n = N_SMALL
    t = [torch.rand(n, device="cuda") + 0.5 for _ in range(17)]
    a, b, c = t[0], t[1], t[2]
    opts = parir.par({'i': parir.threads(n)})
    cases = [
        ("parir, 1 tensor argument", lambda: args1(a, n, opts=opts)),
        ("parir, 4 tensor arguments", lambda: args4(a, b, c, t[3], n, opts=opts)),
        ("parir, 16 tensor arguments", lambda: args16(*t[:16], n, opts=opts)),
        ("parir add(a, b, c): torch.add's work", lambda: add(a, b, c, n, opts=opts)),
        ("torch.add(a, b, out=c)", lambda: torch.add(a, b, out=c)),
    ]
    rows = []
    for name, f in cases:
        try:
            rows.append({"name": name, "us_per_call": host_time_us(f, calls, reps), "status": "ok"})
        except Exception as e:
            rows.append(_error_row(name, e))
    # The C++ launch alone (tensor checks, plan, cuLaunchKernel), without the Python wrapper.
    try:
        add(a, b, c, n, opts=opts)
        compiled = next(iter(add._cache.values()))
        args = (a, b, c, n)
        rows.append({"name": "parir add, C++ launch only (no Python wrapper)",
                     "us_per_call": host_time_us(lambda: compiled.launch(args), calls, reps),
                     "status": "ok"})
    except Exception as e:
        rows.append(_error_row("parir add, C++ launch only", e))
    launchers = [("Triton kernel", _triton_add),
                 ("CuPy RawKernel (arrays converted once)", _cupy_add_preconverted),
                 ("CuPy RawKernel (cupy.asarray per call)", _cupy_add_convert_per_call),
                 ("numba.cuda kernel", _numba_add)] if other_launchers else []
    for name, make in launchers:
        try:
            f = make(a, b, c, n)
            c.fill_(float("nan"))  # so that the check below sees this launcher's result
            f()
            torch.cuda.synchronize()
            torch.testing.assert_close(c, a + b)  # the launcher really computed c = a + b
            rows.append({"name": name, "us_per_call": host_time_us(f, calls, reps), "status": "ok"})
        except Exception as e:
            rows.append(_error_row(name, e))
    return rows


def _triton_add(a, b, c, n):
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask),
                 mask=mask)

    grid = (triton.cdiv(n, 1024),)
    return lambda: add_kernel[grid](a, b, c, n, BLOCK=1024)


_NUMBA_PROBE = """
import numpy as np
from numba import cuda

@cuda.jit
def add_kernel(x, y, z):
    i = cuda.grid(1)
    if i < z.size:
        z[i] = x[i] + y[i]

x = cuda.to_device(np.arange(1000, dtype=np.float32))
z = cuda.device_array_like(x)
add_kernel[4, 256](x, x, z)
assert (z.copy_to_host() == 2 * np.arange(1000, dtype=np.float32)).all()
"""


def _numba_add(a, b, c, n):
    # numba.cuda is tried in a separate process first: where its CUDA support is broken (a
    # toolkit or driver it does not support), the failure cannot disturb this process.
    probe = subprocess.run([sys.executable, "-c", _NUMBA_PROBE], capture_output=True, text=True,
                           timeout=120)
    if probe.returncode != 0:
        lines = [line for line in probe.stderr.strip().splitlines() if line.strip()]
        raise RuntimeError(f"numba.cuda unavailable: {lines[-1] if lines else probe.returncode}")
    from numba import cuda

    @cuda.jit
    def add_kernel(x, y, z):
        i = cuda.grid(1)
        if i < z.size:
            z[i] = x[i] + y[i]

    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    da, db, dc = cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(c)
    blocks = (n + 255) // 256
    return lambda: add_kernel[blocks, 256, stream](da, db, dc)


_CUPY_SOURCE = r'''
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
'''


def _cupy_kernel():
    import cupy

    return cupy, cupy.RawKernel(_CUPY_SOURCE, "add")


def _cupy_add_preconverted(a, b, c, n):
    cupy, kernel = _cupy_kernel()
    ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.asarray(c)  # views, no copies
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    blocks, nn = ((n + 255) // 256,), cupy.int32(n)

    def f():
        with stream:
            kernel(blocks, (256,), (ca, cb, cc, nn))
    return f


def _cupy_add_convert_per_call(a, b, c, n):
    cupy, kernel = _cupy_kernel()
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    blocks, nn = ((n + 255) // 256,), cupy.int32(n)

    def f():
        with stream:
            kernel(blocks, (256,), (cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), nn))
    return f


# ----- compile latency ----------------------------------------------------------------------

def first_call():
    """In a child process: the wall time of the first call of sum_rows, then of hot calls."""
    N, M = 4096, 517
    x = torch.randn(N, M, device="cuda")
    y = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()  # CUDA context and allocator ready before the clock starts
    opts = parir.par({"N": parir.threads(N)})
    t0 = time.perf_counter()
    sum_rows(x, y, N, M, opts=opts)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    hot = []
    for _ in range(50):
        t0 = time.perf_counter()
        sum_rows(x, y, N, M, opts=opts)
        torch.cuda.synchronize()
        hot.append(time.perf_counter() - t0)
    return {"first_ms": first * 1e3, "hot_ms": statistics.median(hot) * 1e3}


def compile_latency():
    cache = tempfile.mkdtemp(prefix="parir_bench_cache_")
    env = dict(os.environ, PARIR_CACHE_DIR=cache)
    out = {}
    for label in ("cold", "warm"):
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-call"],
                              env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
            raise RuntimeError(f"{label} run failed: {lines[-1] if lines else proc.returncode}")
        out[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"cold_ms": out["cold"]["first_ms"], "warm_ms": out["warm"]["first_ms"],
            "hot_ms": out["warm"]["hot_ms"], "cache_dir": cache}


# ----- a model step under torch.compile(mode="reduce-overhead") -----------------------------

class Block(torch.nn.Module):
    """x + W2 gelu(W1 x), then RMSNorm: by torch ops, or by the parir kernel."""

    def __init__(self, d, use_parir, eps=1e-6):
        super().__init__()
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)
        self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.use_parir, self.eps = use_parir, eps

    def forward(self, x):
        h = x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))
        if not self.use_parir:
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        N, D = h.shape
        out = torch.empty_like(h)
        rms_norm(h, self.weight, out, N, D, self.eps,
                 opts=parir.par({'N': parir.threads(N), 'D': parir.threads(min(D, 1024))}))
        return out


def model_step(tokens=512, d=1024, deadline=math.inf):
    torch.manual_seed(0)
    x = torch.randn(tokens, d, device="cuda")
    reference = Block(d, use_parir=False).cuda()
    with torch.no_grad():
        ref = reference.double()(x.double())
    rows = []
    for name, use_parir, compiled in (("torch eager", False, False),
                                      ("torch.compile reduce-overhead, torch RMSNorm", False, True),
                                      ("parir eager (rms_norm kernel)", True, False),
                                      ("torch.compile reduce-overhead, parir rms_norm", True, True)):
        row = {"name": name, "shape": f"{tokens}x{d} tokens x features"}
        rows.append(row)
        if time.monotonic() > deadline:
            row["status"] = "skipped: time budget"
            continue
        try:
            torch._dynamo.reset()
            counters.clear()
            model = Block(d, use_parir).cuda()
            model.load_state_dict({k: v.float() for k, v in reference.state_dict().items()})
            step = torch.compile(model, mode="reduce-overhead") if compiled else model
            with torch.no_grad():
                for _ in range(3):  # reduce-overhead records its CUDA graph on the early calls
                    out = step(x).clone()
                torch.cuda.synchronize()
                err = relative_error(out, ref)
                row["rel_err"] = err
                row["graph_breaks"] = sum(counters["graph_break"].values())
                if not err <= 1e-3:
                    row["status"] = f"wrong: rel. error {err:.2e}"
                    continue
                t = time_runs(lambda _: step(x), [None], warmup=5, min_reps=50, max_reps=200,
                              target_s=0.2)
            row.update(median_ms=t["median_ms"], timing=t, status="ok")
        except Exception as e:
            row["status"] = f"failed: {_one_line(e)}"
            row["traceback"] = traceback.format_exc()
    return rows


def run_suite(quick, deadline, parts=("host overhead", "compile latency", "model step"),
              log=print):
    """The named parts, each in its own try/except: {part: rows, or {"status": why}}."""
    funcs = {"host overhead": lambda: host_overheads(2000 if quick else 10000, 3 if quick else 5),
             "compile latency": compile_latency,
             "model step": lambda: model_step(*((256, 512) if quick else (512, 1024)), deadline)}
    out = {}
    for name in parts:
        if time.monotonic() > deadline:
            out[name] = {"status": "skipped: time budget"}
            continue
        t0 = time.monotonic()
        try:
            out[name] = funcs[name]()
        except Exception as e:
            out[name] = {"status": f"failed: {_one_line(e)}",
                         "traceback": traceback.format_exc()}
        log(f"  {name}: {time.monotonic() - t0:.1f} s")
        _log_part(name, out[name], log)
    return out


def _log_part(name, res, log):
    if isinstance(res, list):
        for r in res:
            v = r.get("us_per_call", r.get("median_ms"))
            log(f"    {r['name']:50s} {v if v is None else round(v, 3)} {r.get('status', '')[:100]}")
    else:
        log(f"    {res}")


if __name__ == "__main__":
    if "--first-call" in sys.argv:
        print(json.dumps(first_call()))
