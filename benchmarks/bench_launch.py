"""Launch costs: what a cached call costs the host, layer by layer, and what a host loop costs
per kernel, in one run.

    python benchmarks/bench_launch.py [--quick] [--out benchmarks/results]

* Cached call, per call (timing.host_time_us: many back-to-back calls of kernels on 1024
  floats, one synchronization): parir with 1, 4 and 16 tensor arguments and `add(a, b, c, N)`
  beside `torch.add(a, b, out=c)`, a Triton kernel and a CuPy RawKernel on the same tensors.
* The layers of parir's call, innermost first: `cuLaunchKernel` of the same kernel from C++
  alone, parir's C++ launch without Python (Program::launch, launch_on_tensors, launch_eager;
  measured in C++ by `_C.launch_costs`), the launcher called from Python, and the Python call
  path's pieces (options key, argument key).
* Host loops: jacobi_1d (npbench's L size, 8,499 time steps of two kernels on 34,000
  elements) per kernel, launched one by one (`use_cuda_graphs=False`), as a CUDA graph
  (`True`; `None`: a graph from the second call on the same tensors), these with
  `persistent_loops=False` and `time_tiling=False`; as a persistent kernel where each kernel
  fits one thread block cluster (N=16,384 here; else the graph), with `time_tiling=False`;
  and with the default options (tiles of up to 32 time steps per launch), beside torch
  eager; at npbench's L size (N=34,000) and at N=16,384.
"""

import argparse
import json
import os
import statistics
import sys
import timeit

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))
import parir_torch as parir  # noqa: E402
from parir_torch import _C, arguments  # noqa: E402
from parir_torch.options import options_key  # noqa: E402
from kernels import add, args16  # noqa: E402
from npbench.jacobi_1d import jacobi_1d, torch_step  # noqa: E402
from overheads import host_overheads  # noqa: E402
from timing import host_time_us, time_runs, write_report  # noqa: E402


def python_layers(n):
    """Microseconds per call of the Python call path's pieces (no GPU work): the cached call's
    lookup in C++ (key of options and arguments, table), and the slow path's keys."""
    a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
    opts = parir.par({'i': parir.threads(n)})
    args = (a, b, c, n)
    add(*args, opts=opts)
    out = {}
    for name, stmt in [("cached call's lookup (CallTable.find)", lambda: add._calls.find(opts, args)),
                       ("options key of the slow path (options_key)", lambda: options_key(opts)),
                       ("argument key (_C.call_key)", lambda: _C.call_key(args)),
                       ("torch.compiler.is_dynamo_compiling()",
                        torch.compiler.is_dynamo_compiling)]:
        t = timeit.Timer(stmt)
        number = 20000
        out[name] = min(t.repeat(5, number)) / number * 1e6
    return out


def launcher_layers(fn, args, calls):
    """A cached call of fn(*args): the C++ layers of its launch (from _C.launch_costs), its
    launcher called from Python, and the whole call."""
    n = args[-1]
    opts = parir.par({'i': parir.threads(n)})
    fn(*args, opts=opts)
    compiled = next(iter(fn._cache.values()))
    outs, ins = arguments.tensors_by_role(compiled.program, fn.ir.params, args)
    layers = dict(_C.launch_costs(compiled.program, outs, ins, calls))
    layers["BoundLaunch called from Python"] = host_time_us(lambda: compiled.launch(args), calls)
    layers["whole cached call"] = host_time_us(lambda: fn(*args, opts=opts), calls)
    return layers


def host_loop(N, T):
    """jacobi_1d on N elements for T steps: ms per call and us per kernel for each way of
    running it."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    A0 = torch.rand(N, device="cuda", generator=gen) + 0.5
    B0 = torch.rand(N, device="cuda", generator=gen) + 0.5
    kernels = 2 * (T - 1)
    ref_A, ref_B = A0.double().clone(), B0.double().clone()
    for _ in range(1, T):
        torch_step(ref_A, ref_B)
    rows = []
    A, B = A0.clone(), B0.clone()

    def restore(_):
        A.copy_(A0)
        B.copy_(B0)

    def torch_run(_):
        for _ in range(1, T):
            torch_step(A, B)

    ways = [("parir, launched one by one", False, False, False),
            ("parir, CUDA graph", True, False, False),
            ("parir, graph from the 2nd call", None, False, False),
            ("parir, persistent kernel where it fits, else graph", None, True, False),
            ("parir, default options (tiles of time steps)", None, True, True)]
    for name, graphs, persistent, tiling in ways + [("torch eager", "torch", None, None)]:
        if graphs == "torch":
            run = torch_run
        else:
            opts = parir.par({'i': parir.threads(N)})
            opts.use_cuda_graphs = graphs
            opts.persistent_loops = persistent
            opts.time_tiling = tiling
            run = (lambda o: lambda _: jacobi_1d(A, B, T, opts=o))(opts)
        try:
            restore(None)
            run(None)
            torch.cuda.synchronize()
            err = max((A.double() - ref_A).abs().max().item(), (B.double() - ref_B).abs().max().item())
            if not err < 1e-3:
                raise AssertionError(f"wrong: max abs error {err:.2e}")
            restore(None)
            r = time_runs(run, [None], restore=restore, warmup=2, target_s=1.0, min_reps=5,
                          max_reps=50)
            ms = r["median_ms"]
            rows.append({"name": name, "ms": ms, "us_per_kernel": ms * 1e3 / kernels,
                         "status": "ok"})
        except Exception as e:
            rows.append({"name": name, "status": f"failed: {type(e).__name__}: {e}"[:160]})
    return {"N": N, "T": T, "kernels": kernels, "rows": rows}


def cached_call_rounds(calls, rounds):
    """Each parir case over torch.add's time, timed back to back in each of `rounds` rounds:
    the host's speed drifts, so each ratio compares neighbours in time. Median, min, max."""
    per_round = []
    for _ in range(rounds):
        rows = host_overheads(calls, 3, other_launchers=False)
        base = next(r["us_per_call"] for r in rows if r["name"].startswith("torch.add"))
        per_round.append({r["name"]: r["us_per_call"] / base for r in rows
                          if r["status"] == "ok" and not r["name"].startswith("torch.add")})
    ratios = {}
    for name in per_round[0]:
        values = sorted(r[name] for r in per_round)
        ratios[name] = {"median": statistics.median(values), "min": values[0], "max": values[-1]}
    return {"rounds": rounds, "ratios": ratios}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    n, calls = 1024, 2000 if args.quick else 10000
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    results["cached_call"] = host_overheads(calls, 5, other_launchers=True)
    results["cached_call_rounds"] = cached_call_rounds(calls, 3 if args.quick else 7)
    t = [torch.rand(n, device="cuda") + 0.5 for _ in range(16)]
    results["launcher_layers"] = {
        "add(a, b, c, N): 3 tensors": launcher_layers(add, (t[0], t[1], t[2], n), calls),
        "args16: 16 tensors": launcher_layers(args16, (*t, n), calls)}
    results["python_layers"] = python_layers(n)
    results["host_loops"] = [host_loop(*size) for size in
                             ([(3200, 100)] if args.quick else [(34000, 8500), (16384, 8500)])]

    torch_add = next(r["us_per_call"] for r in results["cached_call"]
                     if r["name"].startswith("torch.add"))
    lines = [f"# Launch costs on {results['gpu']} (torch {results['torch']})", "",
             "## Cached call (host microseconds per call; 1024 floats)", "",
             "| launcher | us per call | / torch.add |", "|---|---|---|"]
    for r in results["cached_call"]:
        us = r.get("us_per_call")
        lines.append(f"| {r['name']} | {'' if us is None else f'{us:.2f}'} | "
                     f"{'' if us is None else f'{us / torch_add:.2f}x'} "
                     f"{'' if r['status'] == 'ok' else r['status']} |")
    names = list(results["launcher_layers"])
    lines += ["", "## Layers of parir's call, innermost first (us per call)", "",
              "| layer | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for layer in results["launcher_layers"][names[0]]:
        lines.append(f"| {layer} | " + " | ".join(
            f"{results['launcher_layers'][k][layer]:.2f}" for k in names) + " |")
    for k, v in results["python_layers"].items():
        lines.append(f"| Python: {k} | {v:.2f} |")
    rounds = results["cached_call_rounds"]
    lines += ["", f"## Cached call / torch.add, median over {rounds['rounds']} rounds "
              "(each case and torch.add timed in turn, in one process)", "",
              "| launcher | median ratio | min | max |", "|---|---|---|---|"]
    for name, r in rounds["ratios"].items():
        lines.append(f"| {name} | {r['median']:.2f}x | {r['min']:.2f}x | {r['max']:.2f}x |")
    for h in results["host_loops"]:
        lines += ["", f"## Host loop: jacobi_1d, N={h['N']}, {h['T'] - 1} steps x 2 kernels", "",
                  "| way | ms per call | us per kernel |", "|---|---|---|"]
        for r in h["rows"]:
            if r["status"] == "ok":
                lines.append(f"| {r['name']} | {r['ms']:.2f} | {r['us_per_kernel']:.2f} |")
            else:
                lines.append(f"| {r['name']} | {r['status']} | |")
    write_report(args.out, "launch.md", lines)
    with open(os.path.join(args.out, "launch.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
