"""The cached-call host overhead of two builds of parir-torch, measured in one run.

    python3 benchmarks/overhead_ab.py OLD_ROOT NEW_ROOT [--rounds 5]

Each root is a checkout with its extension built in place (parir_torch/_C*.so). Rounds
alternate the two (old, new, old, new, ...), each in a fresh process that imports parir_torch
from its root and runs overheads.host_overheads from this checkout's benchmarks, so both builds
are timed by the same code on the same GPU, interleaved, and drift in the machine's state hits
both alike. Prints the median over rounds of each case's microseconds per call, new / old, and
each case over torch.add's time in the same process (which cancels the drift of the host's speed
from one process to the next).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = """
import json, os, sys
if {cpu} >= 0:
    os.sched_setaffinity(0, {{{cpu}}})
sys.path.insert(0, {root!r})
sys.path.insert(1, {bench!r})
import parir_torch
assert parir_torch.__file__.startswith({root!r}), parir_torch.__file__
from overheads import host_overheads
print("ROWS" + json.dumps(host_overheads({calls}, {reps}, other_launchers=False)))
"""


def measure(root, calls, reps, cpu):
    code = _CHILD.format(root=os.path.abspath(root), bench=HERE, calls=calls, reps=reps, cpu=cpu)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.abspath(root))
    for line in out.stdout.splitlines():
        if line.startswith("ROWS"):
            return {r["name"]: r.get("us_per_call") for r in json.loads(line[4:])}
    raise RuntimeError(f"{root}: no result\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=-1, help="pin each process to this CPU core")
    ap.add_argument("--json", help="write the medians here")
    args = ap.parse_args()
    runs = {"old": [], "new": []}
    for _ in range(args.rounds):
        for which in ("old", "new"):
            runs[which].append(measure(getattr(args, which), args.calls, args.reps, args.cpu))
    names = [n for n in runs["new"][0] if runs["new"][0][n] is not None]
    medians = {w: {n: statistics.median(r[n] for r in runs[w] if r.get(n) is not None)
                   for n in names} for w in runs}
    # The host's speed drifts between processes; each case over torch.add in the same process
    # cancels most of it.
    base = next((n for n in names if n.startswith("torch.add")), None)
    relative = {w: {n: statistics.median(r[n] / r[base] for r in runs[w]) for n in names}
                for w in runs} if base else None
    print(f"{'case':50s} {'old us':>7s} {'new us':>7s} {'new/old':>7s}"
          f"{'  old/add  new/add' if base else ''}")
    for n in names:
        o, w = medians["old"][n], medians["new"][n]
        rel = f"  {relative['old'][n]:7.3f}  {relative['new'][n]:7.3f}" if base else ""
        print(f"{n:50s} {o:7.2f} {w:7.2f} {w / o:7.3f}{rel}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"medians": medians, "relative_to_torch_add": relative, "runs": runs}, f,
                      indent=1)


if __name__ == "__main__":
    main()
