"""Snapshots of the generated code of the whole test and benchmark corpus, to show what a change
to the compiler changed in its output (or that it changed nothing).

    python3 tests/tools/codegen_snapshot.py write DIR [PYTEST ARGS...]
    python3 tests/tools/codegen_snapshot.py compare OLD_DIR NEW_DIR

`write` runs the CPU test suite (tests/python: every test program, the error catalogue, the
benchmark kernels at their benchmark sizes, ...) and saves every CUDA source the compiler
generates, with its launch plan, as DIR/<test id>.<n>.cu, in the order the tests compile them,
and how many of each program's tensor accesses the compiler proved in bounds (DIR/bounds.jsonl).
Temporary directories (pytest's and tempfile's) are replaced by <tmp>, and module names made
unique per process and parir.vectorize's and guvectorize's signature numbers lose that suffix,
so two runs from the same checkout compare equal. `compare` lists the sources that differ, appear or disappear,
with a unified diff of the first few, and exits non-zero if there is any difference.

Taking a snapshot before and after a change, from the same checkout directory (the sources carry
#line directives with absolute paths), shows what the change did to the generated code.
"""

import difflib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# What differs from run to run in a source's paths: pytest's and tempfile's directories, and the
# module names some tests make unique per process (the fuzzer's process id, test_names' hash).
_RUN_SPECIFIC = [
    (re.compile(r"/tmp/pytest-of-[^/\s\"]+/pytest-\d+/"), "<tmp>/"),
    (re.compile(r"/tmp/(?:tmp|parir_fuzz_)[A-Za-z0-9_]+/"), "<tmp>/"),
    (re.compile(r"(fuzz_\w+_\d+)_\d+\.py"), r"\1.py"),
    (re.compile(r"prog_\d+\.py"), "prog.py"),
    # The number parir.vectorize (and guvectorize) gives each signature it compiles, in the order
    # a process meets them.
    (re.compile(r"(<parir\.(?:gu)?vectorize [^>#]*) #\d+>"), r"\1>"),
    # The directory of a pytest-xdist worker in pytest's (also read from older snapshots).
    (re.compile(r"<tmp>/popen-gw\d+/"), "<tmp>/"),
]


def _without_run_specific_paths(source):
    for pattern, replacement in _RUN_SPECIFIC:
        source = pattern.sub(replacement, source)
    return source


# ----- the pytest plugin (loaded with -p codegen_snapshot in the child process) --------------

def pytest_configure(config):
    out_dir = os.environ.get("PARIR_SNAPSHOT_DIR")
    if not out_dir:
        return
    from parir_torch import _C

    original = _C.compile
    counts = {}

    def recording_compile(*args, **kwargs):
        result = original(*args, **kwargs)
        test = os.environ.get("PYTEST_CURRENT_TEST", "outside-tests").rsplit(" (", 1)[0]
        name = re.sub(r"[^A-Za-z0-9_.\-\[\]]+", "_", test)
        counts[name] = counts.get(name, 0) + 1
        with open(os.path.join(out_dir, f"{name}.{counts[name]}.cu"), "w") as f:
            f.write(_without_run_specific_paths(result[0]))
        if len(result) > 2:  # the tensor accesses, and how many were proved in bounds
            with open(os.path.join(out_dir, "bounds.jsonl"), "a") as f:
                f.write(json.dumps({"source": f"{name}.{counts[name]}.cu", **result[2]}) + "\n")
        return result

    _C.compile = recording_compile


# ----- the command line ----------------------------------------------------------------------

def write(out_dir, pytest_args):
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith(".cu") or f == "bounds.jsonl":
            os.remove(os.path.join(out_dir, f))
    env = dict(os.environ, PARIR_SNAPSHOT_DIR=os.path.abspath(out_dir),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "codegen_snapshot", "-p", "no:cacheprovider",
           os.path.join(ROOT, "tests", "python"), *pytest_args]
    rc = subprocess.call(cmd, env=env, cwd=ROOT)
    count = sum(1 for f in os.listdir(out_dir) if f.endswith(".cu"))
    print(f"codegen_snapshot: {count} generated sources in {out_dir} (pytest exit {rc})")
    bounds = os.path.join(out_dir, "bounds.jsonl")
    if os.path.exists(bounds):
        with open(bounds) as f:
            rows = [json.loads(line) for line in f]
        accesses = sum(r["accesses"] for r in rows)
        proved = sum(r["proved_in_bounds"] for r in rows)
        print(f"codegen_snapshot: {proved} of {accesses} tensor accesses proved in bounds "
              f"({100.0 * proved / max(accesses, 1):.1f}%)")
    return 0 if count else 1


def _read(path):
    with open(path, encoding="utf-8") as f:
        return _without_run_specific_paths(f.read())


def compare(old_dir, new_dir, show=5):
    old = {f for f in os.listdir(old_dir) if f.endswith(".cu")}
    new = {f for f in os.listdir(new_dir) if f.endswith(".cu")}
    changed = []
    for f in sorted(old & new):
        if _read(os.path.join(old_dir, f)) != _read(os.path.join(new_dir, f)):
            changed.append(f)
    for f in changed[:show]:
        a = _read(os.path.join(old_dir, f)).splitlines(keepends=True)
        b = _read(os.path.join(new_dir, f)).splitlines(keepends=True)
        sys.stdout.writelines(difflib.unified_diff(a, b, f"{old_dir}/{f}", f"{new_dir}/{f}"))
    for label, names in (("changed", changed), ("only in " + old_dir, sorted(old - new)),
                         ("only in " + new_dir, sorted(new - old))):
        if names:
            print(f"{len(names)} {label}: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
    same = len(old & new) - len(changed)
    print(f"codegen_snapshot: {same} of {len(old | new)} sources byte-identical")
    return 0 if same == len(old | new) else 1


def main(argv):
    if len(argv) >= 2 and argv[0] == "write":
        return write(argv[1], argv[2:])
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
