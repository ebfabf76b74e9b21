"""The whole benchmark suite in one command, on one GPU:

    python3 benchmarks/run_all.py [--quick] [--only NAME[,NAME...]] [--budget SECONDS] [--out DIR]

Runs the roofline suite (roofline.py), the overheads (overheads.py) and the real programs
(realprograms.py, npbench/), and writes results.md, results.json and PNG plots to --out
(default benchmarks/results). --quick uses small sizes (a smoke run); --only takes suite names
(roofline, overheads, real_programs), kernel or program names, or overhead parts ("host
overhead", "compile latency", "model step"). Each benchmark runs in its own try/except, so a
failure is recorded and the rest still run; a global time budget (default 450 s) skips what
would start after it. Results are written after each suite, so a run cut short keeps what it
measured. Without a CUDA GPU the script generates the code of every kernel (as CI does), says
why it cannot go further, and exits with status 2.
"""

import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import parir_torch as parir  # noqa: E402

SUITES = ("roofline", "overheads", "real_programs")


def log(*args):
    print(*args, flush=True)


def check_without_gpu(size_key):
    """What can be done without a GPU: every real program's kernels through code generation."""
    from npbench import PROGRAMS
    from npbench.program import Inputs

    n = 0
    for prog in PROGRAMS:
        for dtype in (torch.float32, torch.float64):
            st = prog.make_inputs(prog.sizes[size_key], dtype, Inputs(dtype, "meta"))
            for fn, args, opts in prog.parir_calls(st):
                parir.print_compiled(fn, args, opts)
                n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--only", default="", help="comma-separated suites or benchmark names")
    ap.add_argument("--budget", type=float, default=450.0, help="global time budget, seconds")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--dtypes", default="float32,float64", help="real-program dtypes")
    args = ap.parse_args()
    start = time.monotonic()
    deadline = start + args.budget
    size_key = "quick" if args.quick else "L"
    only = {s.strip() for s in args.only.split(",") if s.strip()}

    if not torch.cuda.is_available():
        n = check_without_gpu(size_key)
        log(f"Generated the CUDA code of {n} kernel calls of the real programs ({size_key} sizes).")
        ok, why = parir._C.driver_status()
        log(f"No CUDA GPU (torch.cuda.is_available() is False; CUDA driver: "
            f"{why.splitlines()[0] if why else 'unknown'}): the suite needs one. Run it on a "
            f"machine with an NVIDIA GPU.")
        return 2

    from report import write  # noqa: E402 (imports realprograms and the npbench package)

    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "parir": parir.__version__,
               "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "command": " ".join(["python3", "benchmarks/run_all.py"] + sys.argv[1:]),
               "size_key": size_key}

    def save():
        results["elapsed_s"] = time.monotonic() - start
        write(results, args.out)

    def wanted(suite):
        return not only or suite in only or not (only & set(SUITES))

    names = only - set(SUITES)  # benchmark names within the suites
    from timing import copy_bandwidth_gbps

    results["copy_GBps"] = copy_bandwidth_gbps(2 ** 24 if args.quick else 2 ** 30)
    log(f"{results['device']}: device-to-device copy {results['copy_GBps']:.0f} GB/s")

    if wanted("roofline"):
        import roofline

        log("== roofline")
        results["roofline"] = roofline.run_suite(args.quick, deadline, results["copy_GBps"],
                                                 only=names or None, log=log)
        save()
    if wanted("overheads"):
        import overheads

        log("== overheads")
        results["overheads"] = overheads.run_suite(args.quick, deadline, only=names or None, log=log)
        save()
    if wanted("real_programs"):
        import realprograms

        log("== real programs")
        timing = {"warmup": 1, "min_reps": 3, "max_reps": 50, "target_s": 0.1 if args.quick else 0.3}
        results["real_programs"] = realprograms.run_suite(
            size_key, deadline, only=names or None, dtypes=tuple(args.dtypes.split(",")),
            timing=timing, log=log)
        save()
    save()
    log("")
    log(open(os.path.join(args.out, "results.md")).read())
    log(f"Wrote {args.out}/results.md, results.json and plots in {time.monotonic() - start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
