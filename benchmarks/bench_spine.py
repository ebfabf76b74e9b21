"""First benchmark: compile latency, per-call host overhead, and sum_rows kernel time.

    python benchmarks/bench_spine.py [--out benchmarks/results]

* compile latency of sum_rows: cold (empty disk cache, new process), warm (disk-cache hit in a
  new process) and hot (in-memory cache) — the first call's wall time, including the launch;
* per-call host overhead of a cached call, next to torch.add on the same tensors;
* sum_rows's kernel time next to x.sum(1), with CUDA events.

Timings are medians after warm-up. Writes spine.md and spine.json under --out.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parir_torch as parir  # noqa: E402
from timing import cuda_time_ms  # noqa: E402
from kernels import sum_rows  # noqa: E402


def first_call_ms():
    """Runs in a child process: the wall time of the first call of sum_rows."""
    N, M = 4096, 517
    x = torch.randn(N, M, device="cuda")
    y = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()  # CUDA context and allocator ready before the clock starts
    opts = parir.par({"N": parir.threads(N)})
    t0 = time.perf_counter()
    sum_rows(x, y, N, M, opts=opts)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    hot = []
    for _ in range(20):
        s = time.perf_counter()
        sum_rows(x, y, N, M, opts=opts)
        torch.cuda.synchronize()
        hot.append(time.perf_counter() - s)
    return {"first_ms": (t1 - t0) * 1e3, "hot_ms": statistics.median(hot) * 1e3}


def compile_latency():
    cache = tempfile.mkdtemp(prefix="parir_bench_cache_")
    env = dict(os.environ, PARIR_CACHE_DIR=cache)
    results = {}
    for label in ("cold", "warm"):
        out = subprocess.run([sys.executable, __file__, "--child"], env=env, check=True,
                             capture_output=True, text=True).stdout
        results[label] = json.loads(out.strip().splitlines()[-1])
    return {"cold_ms": results["cold"]["first_ms"], "warm_ms": results["warm"]["first_ms"],
            "hot_ms": results["warm"]["hot_ms"]}


def host_overhead_us(n_calls=20000, reps=7):
    """Wall time per call of back-to-back calls on small tensors: the host's cost per launch."""
    n = 1024
    a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
    opts = parir.par({"i": parir.threads(n)})
    from kernels import add

    def parir_call():
        add(a, b, c, n, opts=opts)

    def torch_call():
        torch.add(a, b, out=c)

    # The C++ launch alone (tensor checks, plan, cuLaunchKernel), without the Python wrapper.
    add(a, b, c, n, opts=opts)
    compiled = next(iter(add._cache.values()))
    args = (a, b, c, n)

    def launch_only():
        compiled.launch(args)

    out = {}
    for name, f in (("parir", parir_call), ("torch.add", torch_call),
                    ("parir launch only", launch_only)):
        for _ in range(1000):
            f()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(n_calls):
                f()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / n_calls * 1e6)
        out[name] = statistics.median(times)
    return out


def sum_rows_kernel():
    rows = []
    for N, M in ((65536, 1024), (1_000_003, 63)):
        x = torch.randn(N, M, device="cuda")
        y = torch.zeros(N, device="cuda")
        opts = parir.par({"N": parir.threads(N)})

        def run_parir():
            y.zero_()
            sum_rows(x, y, N, M, opts=opts)

        run_parir()
        torch.testing.assert_close(y.double(), x.double().sum(1), rtol=1e-4, atol=1e-3)
        zero_ms = cuda_time_ms(lambda: y.zero_())
        parir_ms = cuda_time_ms(run_parir) - zero_ms
        torch_ms = cuda_time_ms(lambda: x.sum(1))
        gbytes = x.numel() * 4 / 1e9
        rows.append({"shape": f"{N}x{M}", "parir_ms": parir_ms, "torch_ms": torch_ms,
                     "parir_GBps": gbytes / (parir_ms / 1e3),
                     "torch_GBps": gbytes / (torch_ms / 1e3)})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(first_call_ms()))
        return
    device = torch.cuda.get_device_name()
    lat = compile_latency()
    over = host_overhead_us()
    kern = sum_rows_kernel()
    report = {"device": device, "torch": torch.__version__, "compile": lat, "overhead_us": over,
              "sum_rows": kern}
    lines = [f"# parir-torch spine benchmark on {device} (torch {torch.__version__})", "",
             "| compile latency of sum_rows (first call, incl. launch) | ms |", "|---|---|",
             f"| cold: empty disk cache, new process | {lat['cold_ms']:.1f} |",
             f"| warm: disk-cache hit, new process | {lat['warm_ms']:.1f} |",
             f"| hot: in-memory cache (call + sync) | {lat['hot_ms']:.3f} |", "",
             "| per-call host overhead (1024 floats, back-to-back) | us/call |", "|---|---|",
             f"| parir cached call (4 args) | {over['parir']:.2f} |",
             f"| of which the C++ launch (checks, plan, cuLaunchKernel) | "
             f"{over['parir launch only']:.2f} |",
             f"| torch.add(a, b, out=c) | {over['torch.add']:.2f} |",
             f"| ratio parir / torch.add | {over['parir'] / over['torch.add']:.2f} |", "",
             "| sum_rows, one thread per row | parir ms | x.sum(1) ms | parir GB/s | torch GB/s |",
             "|---|---|---|---|---|"]
    for r in kern:
        lines.append(f"| {r['shape']} float32 | {r['parir_ms']:.3f} | {r['torch_ms']:.3f} | "
                     f"{r['parir_GBps']:.0f} | {r['torch_GBps']:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "spine.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "spine.json"), "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
