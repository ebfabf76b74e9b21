"""The whole benchmark suite in one command, on one GPU:

    python3 benchmarks/run_all.py [--quick] [--only SECTION[,SECTION|NAME...]] [--budget SECONDS]
                                  [--dtypes float32,float64] [--out DIR]

Sections, in the order they run: roofline (roofline.py), overheads (per-call host overhead),
compile (compile latency), model (a model step under torch.compile), real (the npbench-derived
programs, realprograms.py). --only takes section names and/or benchmark names within them
(a roofline kernel such as "axpy", or the start of its name in any case, such as "softmax" or
"rms"; a real program such as "gemver"). --quick uses small sizes
and only float32 for the real programs (a smoke run of a few minutes, most of it
torch.compile compiling).

Each section runs in its own process, so that a failure of any kind in one (an exception, a
crash, a CUDA error that poisons the context, a hang) is recorded in the results and the next
section still runs; inside a section, each benchmark runs in its own try/except, and where a
roofline kernel or real program kills its process or breaks the CUDA context, the section goes
on in a new process with the benchmarks after it. The global time budget (default 420 s, so
that the whole run, with the grace given to a benchmark in progress, stays under 8 minutes)
gives each section a deadline after which it starts nothing new; what it did not start is
listed as skipped, and a section still running well past its deadline is killed. Results are
written after each section, so a run cut short keeps what it measured: results.md (targets
PASS/MISS with the measured numbers, then the tables), results.json and PNG plots when
matplotlib is importable.

Without a CUDA GPU the script generates the code of every real program's kernels (as CI does),
says why it cannot go further, and exits with status 2.
"""

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import parir_torch  # noqa: F401 (installed, or on PYTHONPATH)
except ImportError:  # built in place in this checkout: use it, here and in the child processes
    ROOT = os.path.dirname(HERE)
    sys.path.insert(1, ROOT)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)

# Section name -> (share of the budget it may take at most, in full and quick runs).
# Unused time passes on to the next sections; real, last, takes all that is left. Roofline
# compiles each of its kernels with torch.compile (seconds each, whatever the size), so its
# share is the largest before real's.
SECTIONS = {"roofline": (0.35, 0.35), "overheads": (0.15, 0.2), "compile": (0.15, 0.2),
            "model": (0.25, 0.25), "real": (1.0, 1.0)}
ALIASES = {"real_programs": "real", "host": "overheads", "compile_latency": "compile",
           "model_step": "model"}
# Seconds a section may run past its deadline (the benchmark in progress finishes) before it
# is killed.
GRACE_S = 45


def log(*args):
    print(*args, flush=True)


def check_without_gpu(size_key):
    """What can be done without a GPU: every real program's kernels through code generation."""
    import torch

    import parir_torch as parir
    from npbench import PROGRAMS
    from npbench.program import Inputs

    n = 0
    for prog in PROGRAMS:
        for dtype in (torch.float32, torch.float64):
            st = prog.make_inputs(prog.sizes[size_key], dtype, Inputs(dtype, "meta"))
            for fn, args, opts in prog.parir_calls(st):
                parir.print_compiled(fn, args, opts)
                n += 1
    return n, parir._C.driver_status()


# ----- one section, in a child process ------------------------------------------------------

# Sections whose benchmarks run one after another and can go on in a new process after one
# of them crashed or broke the CUDA context: the results key, and each row's name key.
RESUMABLE = {"roofline": ("roofline", "kernel"), "real": ("real_programs", "program")}
# The exit status of a child that found its CUDA context broken (a sticky error such as an
# illegal address makes every later CUDA call in the process fail).
CONTEXT_LOST = 3


def run_section(section, quick, deadline, names, dtypes, save):
    """Runs one section in this process. save(partial, current) records the results so far
    and the benchmark about to start (resumable sections call it before each benchmark)."""
    size_key = "quick" if quick else "L"
    if section in ("roofline", "real"):
        from timing import copy_bandwidth_gbps

        # The floors of both need the copy bandwidth (the parent keeps roofline's when both run).
        copy = copy_bandwidth_gbps(2 ** 28 if quick else 2 ** 30)
        log(f"  device-to-device copy: {copy:.0f} GB/s")
    if section == "roofline":
        import roofline

        todo = [n for n, _, _ in roofline.cases(quick) if roofline.selected(n, names)]
        rows = roofline.run_suite(
            quick, deadline, copy, only=names, log=log,
            progress=lambda rows, cur: save({"copy_GBps": copy, "todo": todo, "roofline": rows}, cur))
        return {"copy_GBps": copy, "roofline": rows}
    if section in ("overheads", "compile", "model"):
        import overheads

        part = {"overheads": "host overhead", "compile": "compile latency",
                "model": "model step"}[section]
        return {"overheads": overheads.run_suite(quick, deadline, parts=(part,), log=log)}
    if section == "real":
        import realprograms
        from npbench import PROGRAMS

        todo = [p.name for p in PROGRAMS if not names or p.name in names]
        timing = {"warmup": 1, "min_reps": 3, "max_reps": 50,
                  "target_s": 0.1 if quick else 0.25}
        rows = realprograms.run_suite(
            size_key, deadline, only=names, dtypes=dtypes, timing=timing, log=log,
            progress=lambda rows, cur: save({"copy_GBps": copy, "todo": todo,
                                             "real_programs": rows}, cur))
        return {"copy_GBps": copy, "real_programs": rows}
    raise ValueError(f"unknown section {section!r}")


def child_main(args):
    import torch

    deadline = time.monotonic() + (args.deadline_epoch - time.time())
    names = set(args.names.split(",")) - {""} or None

    def save(partial, current=None):
        if current is not None:
            try:
                torch.cuda.synchronize()
            except Exception as e:  # broken by the benchmark that just ended
                current = None
                lost = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
                print(f"CUDA context lost after the previous benchmark ({lost}); the section "
                      f"goes on in a new process", file=sys.stderr, flush=True)
                _write_json(args.result_file, dict(partial, in_progress=None))
                os._exit(CONTEXT_LOST)
        _write_json(args.result_file, dict(partial, in_progress=current))

    out = run_section(args.section, args.quick, deadline, names, tuple(args.dtypes.split(",")),
                      save)
    save(out)
    return 0


def _write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, default=str)
    os.replace(path + ".tmp", path)


# ----- the parent: sections in order, results merged and written ----------------------------

def run_child(section, args, deadline_epoch, names):
    """Runs `section` in a new process; returns (its results or None, status, wall seconds)."""
    fd, result_file = tempfile.mkstemp(prefix=f"parir_bench_{section}_", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--section", section,
           "--deadline-epoch", repr(deadline_epoch), "--names", ",".join(sorted(names)),
           "--dtypes", args.dtypes, "--result-file", result_file] + (["--quick"] if args.quick else [])
    t0 = time.monotonic()
    # stdout goes straight to the console (live progress); stderr is echoed and its tail kept
    # for the table, so that a crash is explained where the results are.
    # A session of its own, so that a kill reaches the processes it started too (the compile
    # latency's and numba's).
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True)
    tail = []

    def echo_stderr():
        for line in proc.stderr:
            sys.stderr.write(line)
            tail.append(line.rstrip())
            del tail[:-15]

    reader = threading.Thread(target=echo_stderr, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=max(1.0, deadline_epoch - time.time()) + GRACE_S)
        status = "ok" if rc == 0 else f"failed: process exited with status {rc}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        status = f"failed: killed, still running {GRACE_S} s after its deadline"
    reader.join(timeout=5)
    wall = time.monotonic() - t0
    result = None
    if os.path.getsize(result_file) > 0:
        with open(result_file) as f:
            result = json.load(f)
    for path in (result_file, result_file + ".tmp"):
        if os.path.exists(path):
            os.unlink(path)
    if status != "ok":
        why = next((line for line in reversed(tail) if line.strip()), "")
        status += f" ({why[:300]})" if why else ""
    return result, status, wall


def parse_only(only):
    """--only -> (sections to run, benchmark names within them)."""
    words = {ALIASES.get(w.strip(), w.strip()) for w in only.split(",") if w.strip()}
    sections = [s for s in SECTIONS if s in words]
    names = words - set(SECTIONS)
    if not sections:  # only benchmark names: the sections that can contain them
        sections = ["roofline", "real"] if names else list(SECTIONS)
    return sections, names


def run_sections(sections, names, args, results, start):
    """Runs the sections in order, each in its own process, merging what each returns into
    `results` and writing the results after each. A resumable section whose process died goes
    on in a new process with the benchmarks it had not done, the one it died in recorded as
    failed."""
    from report import write

    end_epoch = time.time() + args.budget
    for i, section in enumerate(sections):
        left = end_epoch - time.time()
        later = sections[i + 1:]
        # A section may take its share of the budget, and no more than leaves each later
        # section a minimum; the last one takes what is left.
        share = SECTIONS[section][1 if args.quick else 0] * args.budget
        reserve = sum(min(20.0, SECTIONS[s][0] * args.budget) for s in later)
        allowed = max(5.0, min(share, left - reserve)) if later else max(5.0, left)
        deadline_epoch = time.time() + allowed
        log(f"== {section} (until {allowed:.0f} s from now)")
        sec = results["sections"][section] = {"wall_s": 0.0, "restarts": []}
        todo, rows = names, []
        while True:
            try:
                part, status, wall = run_child(section, args, deadline_epoch, todo)
            except Exception as e:  # the child could not even be started
                part, status, wall = None, f"failed: {type(e).__name__}: {e}", 0.0
            part = part or {}
            sec["status"], sec["wall_s"] = status, sec["wall_s"] + wall
            log(f"   {section}: {status} in {wall:.0f} s")
            remaining = _merge(section, part, status, rows, results, args)
            if status == "ok" or not remaining:
                break
            if time.time() > deadline_epoch - 10:  # no time to go on: listed as skipped
                rows += _unrun_rows(section, remaining, "skipped: time budget", args)
                break
            sec["restarts"].append(status)
            todo = set(remaining)
            log(f"== {section}, in a new process: {', '.join(remaining)}")
        results["elapsed_s"] = time.monotonic() - start
        write(results, args.out)
    return results


def _merge(section, part, status, rows, results, args):
    """Merges one child's results; for a resumable section returns the benchmarks it left."""
    for key, value in part.items():
        if key in ("todo", "in_progress") or (section in RESUMABLE and key == RESUMABLE[section][0]):
            continue
        if key == "overheads":
            results.setdefault("overheads", {}).update(value)
        elif key == "copy_GBps":  # roofline's, when it ran first
            results.setdefault(key, value)
        else:
            results[key] = value
    if section not in RESUMABLE:
        return []
    key, name_key = RESUMABLE[section]
    rows += part.get(key, [])
    died_in = part.get("in_progress")
    if died_in:
        rows += _unrun_rows(section, [died_in],
                            f"failed: its process died while running it ({status})", args)
    results[key] = rows
    done = {r[name_key] for r in rows}
    return [n for n in part.get("todo", []) if n not in done]


def _unrun_rows(section, names, why, args):
    """Rows for benchmarks of a resumable section that gave no results, with the reason."""
    if section == "roofline":
        return [{"kernel": name, "kind": "", "dtype": "float32", "status": why,
                 "targets": [("runs and is correct", False)] if why.startswith("failed") else []}
                for name in names]
    from realprograms import IMPLS

    return [{"program": name, "dtype": dt, "size": {}, "size_note": "", "origin": "",
             "impls": {impl: {"status": why} for impl in IMPLS}}
            for name in names for dt in args.dtypes.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--only", default="",
                    help=f"comma-separated sections ({', '.join(SECTIONS)}) or benchmark names")
    ap.add_argument("--budget", type=float, default=420.0, help="global time budget, seconds")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="results directory")
    ap.add_argument("--dtypes", default=None,
                    help="real-program dtypes (default float32,float64; with --quick float32)")
    # Internal: run one section in this process (the parent starts one child per section).
    ap.add_argument("--section", help=argparse.SUPPRESS)
    ap.add_argument("--deadline-epoch", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--names", default="", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dtypes is None:
        args.dtypes = "float32" if args.quick else "float32,float64"
    if args.section:
        return child_main(args)

    start = time.monotonic()
    import torch

    import parir_torch as parir

    if not torch.cuda.is_available():
        n, (_, why) = check_without_gpu("quick" if args.quick else "L")
        log(f"Generated the CUDA code of {n} kernel calls of the real programs.")
        log(f"No CUDA GPU (torch.cuda.is_available() is False; CUDA driver: "
            f"{why.splitlines()[0] if why else 'unknown'}): the suite needs one. Run it on a "
            f"machine with an NVIDIA GPU.")
        return 2

    from report import targets, write

    sections, names = parse_only(args.only)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "parir": parir.__version__,
               "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "command": " ".join(["python3", "benchmarks/run_all.py"] + sys.argv[1:]),
               "size_key": "quick" if args.quick else "L", "sections": {}}
    run_sections(sections, names, args, results, start)
    results["elapsed_s"] = time.monotonic() - start
    text = write(results, args.out)
    log("")
    log(text)
    # The targets once more, last, where the end of a long log shows them.
    log(f"\n{results['device']}, {results['elapsed_s']:.0f} s:")
    for desc, measured, ok in targets(results):
        log(f"  {'PASS' if ok else 'MISS'}  {desc}: {measured}")
    plots = ", ".join(results.get("plots", [])) or results.get("plot_note") or "no plots"
    log(f"Wrote {args.out}: results.md, results.json; {plots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
