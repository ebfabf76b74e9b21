"""Differential fuzzing of the parir compiler with the programs of generate.py.

    python tests/fuzz/run.py --mode compile --count 1000 --seed 0 [--names mixed] [--out DIR]
    python tests/fuzz/run.py --mode gpu --count 200 --seed 0 [--names awkward] [--out DIR]
    python tests/fuzz/run.py --mode gpu --count 200 --feature matrix_product

`--feature NAME` runs the first `count` programs from `--seed` on whose `features` include NAME
(a construct such as matrix_product, time_stencil or slice_scan_parallel), to aim the fuzzing
at one part of the compiler.

Mode `compile` needs no GPU: each program goes through `parir.print_compiled`, NVRTC compiles
the source for sm_90, and the launch plan is checked against the source and the arguments
(every launched kernel is defined, with as many parameters as the launch passes; every
`//@ param` line names a tensor argument with its dtype, shape and strides, `inout` exactly
when the program writes it). The program also runs as plain Python (`seq=True`) on the CPU,
which catches programs that are not valid Python to begin with (`--no-seq` skips it).

Mode `gpu` runs each program on CUDA tensors and as plain Python on CPU copies of the same
inputs, and compares every tensor argument: integers and bools exactly, floats within a
tolerance that follows the least precise float type behind each value and the length of the
reductions behind it.

Every program that does not pass is saved under --out as `<outcome>_<names>_<seed>.py`: the
program, a comment with the seed, the specification and the message, and a `__main__` that
reproduces the call. The summary counts programs by outcome:

    ok            everything agreed
    rejected      a ParirError for a program the generator believes valid (a finding)
    compile_error NVRTC rejected the generated CUDA
    plan_error    the launch plan disagrees with the source or the arguments
    mismatch      the GPU and the plain Python differ
    crash         any other exception from parir (an internal error, a Python exception)
    invalid       the plain Python run itself failed: a generator bug, not a compiler one
"""

import argparse
import collections
import importlib.util
import math
import multiprocessing
import os
import re
import sys
import tempfile
import time
import traceback
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import generate as gen  # noqa: E402

OUTCOMES = ("ok", "rejected", "compile_error", "plan_error", "mismatch", "crash", "invalid")

# Tolerance per float precision (rtol; atol is rtol times the tensor's largest magnitude).
BASE_RTOL = {"bfloat16": 6e-2, "float16": 2e-2, "float32": 2e-4, "float64": 1e-9}

_module_dir = None


def module_dir():
    global _module_dir
    if _module_dir is None:
        _module_dir = tempfile.mkdtemp(prefix="parir_fuzz_")
    return _module_dir


def load(program):
    """Writes the program to a real file and imports it, so that parir can read its source."""
    name = f"fuzz_{program.names}_{program.seed}_{os.getpid()}"
    path = os.path.join(module_dir(), name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, program.fn_name)


# ----------------------------------------------------------------------------------------------
# The launch plan against the source and the arguments


# The bounds are the block size, then (for some kernels) the blocks a multiprocessor must fit.
_KERNEL = re.compile(r'extern "C" __global__ void __launch_bounds__\((\d+)(?:, \d+)?\) (\S+?)\((.*?)\) \{')
_PARAM = re.compile(r"^//@ param (\S+) (\w+)\[([^\]]*)\] strides\(([^)]*)\) (in|inout)$")
# A launch line, or a host loop's persistent kernel ("persistent launch", before its loop);
# shared(...) and cluster(...) may follow the block.
_LAUNCH = re.compile(r"^//@\s+(?:persistent )?launch (\S+) grid\(([^)]*)\) block\((\d+)\)"
                     r"(?: shared\(\d+(?: if available)?\))?(?: cluster\(\d+\))? \(([^)]*)\)"
                     r"(?: aligned\((\S+)\))?$")
_FOR = re.compile(r"^//@\s+for (\S+) in range\(")
_HOST_LOCAL = re.compile(r"//@ +(\w+) = ")  # an integer local the host computes
_TEMP = re.compile(r"^//@ temp (\S+) (\w+)\[([^\]]*)\]$")


def check_plan(program, args, source):
    """The problems of the plan in `source`, as a list of strings (empty when consistent)."""
    problems = []
    kernels = {m.group(2): (int(m.group(1)), _split(m.group(3)))
               for m in _KERNEL.finditer(source)}
    if not kernels:
        problems.append("no kernel definition in the source")
    plan = [ln.rstrip() for ln in source.splitlines() if ln.startswith("//@")]
    if f"//@ parir.plan {program.fn_name}" not in plan:
        problems.append(f"no '//@ parir.plan {program.fn_name}' line")
    expected = _expected_params(program, args)
    # The plan spells names as C++ identifiers; the runtime's reading of it gives the program's
    # names (d.k for d['k']), in the order of the param lines.
    from parir_torch import ParirError, _C

    try:
        decoded = iter([name for name, _ in _C.Program(source).params])
    except ParirError as e:
        return problems + [f"the runtime cannot read the plan: {e}"]
    seen, host_vars = {}, set()
    for line in plan:
        if m := _FOR.match(line):
            host_vars.add(m.group(1))
        elif m := _HOST_LOCAL.match(line):
            host_vars.add(m.group(1))
        elif line.startswith("//@ temp"):
            m = _TEMP.match(line)
            if not m:
                problems.append(f"unparsable temp line: {line}")
                continue
            if m.group(1) in seen:
                problems.append(f"temp {m.group(1)} has the name of a param")
            seen[m.group(1)] = "temp"
        elif line.startswith("//@ param"):
            m = _PARAM.match(line)
            if not m:
                problems.append(f"unparsable param line: {line}")
                continue
            ident, dtype, shape, strides, mode = m.groups()
            seen[ident] = mode
            name = next(decoded, ident)
            if name not in expected:
                problems.append(f"param {name} is not a tensor argument")
                continue
            t, spec = expected[name]
            want = (spec.dtype, ", ".join(map(str, t.shape)), ", ".join(map(str, t.stride())))
            if (dtype, shape, strides) != want:
                problems.append(f"param {name}: {dtype}[{shape}] strides({strides}), the "
                                f"argument is {want[0]}[{want[1]}] strides({want[2]})")
            if mode == "inout" and not spec.written:
                problems.append(f"param {name} is inout but the program never writes it")
        elif "launch " in line and not line.startswith("//@ parir.plan"):
            m = _LAUNCH.match(line)
            if not m:
                problems.append(f"unparsable launch line: {line}")
                continue
            kname, _, block, largs, aligned = m.groups()
            largs = _split(largs)
            if kname not in kernels:
                problems.append(f"launch of {kname}, which the source does not define")
                continue
            # The copy for aligned tensors takes the same parameters under the same bound.
            if aligned and kernels.get(aligned) != kernels[kname]:
                problems.append(f"launch of {kname} names {aligned} as its aligned copy, "
                                f"which the source does not define alike")
            bound, kparams = kernels[kname]
            if int(block) > bound:
                problems.append(f"launch of {kname} with block({block}) over its "
                                f"__launch_bounds__({bound})")
            if len(largs) != len(kparams):
                problems.append(f"launch of {kname} passes {len(largs)} arguments, the kernel "
                                f"takes {len(kparams)}")
            for a in largs:
                if a not in seen and a not in host_vars:
                    problems.append(f"launch of {kname} passes {a}, neither a param, a host "
                                    f"local nor a host loop variable")
    # A tensor the program writes may still be `in` (or absent) when its writes are dead code
    # once the scalars are specialized: the GPU mode catches writes that are really lost.
    return problems


def _split(s):
    return [a.strip() for a in s.split(",") if a.strip()]


def _expected_params(program, args):
    """Plan name -> (tensor, TensorArg) for every tensor read from memory (not 0-d ones,
    whose value is compiled into the code)."""
    out = {}
    for p, a in zip(program.params, args):
        if isinstance(p, gen.TensorArg) and p.view != "zerod" and a is not None:
            out[p.name] = (a, p)
        elif isinstance(p, gen.DictArg):
            for k, v in p.entries.items():
                if isinstance(v, gen.TensorArg):
                    out[f"{p.name}.{k}"] = (a[k], v)
    return out


# ----------------------------------------------------------------------------------------------
# Running one program


def run_compile(program, seq=True):
    """(outcome, message) of a program in compile mode."""
    import parir_torch as parir
    from parir_torch import _C

    try:
        fn = load(program)
        args = program.make_args("cpu")
    except Exception:
        return "invalid", "loading the program failed:\n" + traceback.format_exc()
    if seq:
        try:
            fn(*program.make_args("cpu"), seq=True)
        except Exception:
            return "invalid", "the plain Python run failed:\n" + traceback.format_exc()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            source = parir.print_compiled(fn, args, program.make_opts())
        except parir.ParirError as e:
            return "rejected", f"{type(e).__name__}: {e}"
        except Exception:
            return "crash", traceback.format_exc()
    try:
        _C.nvrtc_compile(source, "sm_90")
    except parir.ParirError as e:
        return "compile_error", f"{e}\n\n{source}"
    problems = check_plan(program, args, source)
    if problems:
        return "plan_error", "\n".join(problems) + "\n\n" + source
    return "ok", ""


def run_gpu(program):
    """(outcome, message) of a program run on the GPU and as plain Python."""
    import parir_torch as parir

    try:
        fn = load(program)
        gpu_args = program.make_args("cuda")
        cpu_args = program.make_args("cpu")
    except Exception:
        return "invalid", "loading the program failed:\n" + traceback.format_exc()
    try:
        fn(*cpu_args, seq=True)
    except Exception:
        return "invalid", "the plain Python run failed:\n" + traceback.format_exc()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(*gpu_args, opts=program.make_opts())
            torch.cuda.synchronize()
        except parir.ParirError as e:
            msg = str(e)
            kind = "compile_error" if "NVRTC" in msg or "nvrtc" in msg else "rejected"
            return kind, f"{type(e).__name__}: {msg}"
        except Exception:
            return "crash", traceback.format_exc()
    diffs = compare(program, gpu_args, cpu_args)
    if diffs:
        return "mismatch", "\n".join(diffs)
    return "ok", ""


def tolerance(spec):
    """(rtol, atol relative to the largest magnitude) for a float tensor argument."""
    prec = min(spec.prec, gen.PRECISION.index(spec.dtype))
    base = BASE_RTOL[gen.PRECISION[prec]]
    # A sum of n terms rounded one at a time errs by up to n rounding steps when they all go
    # the same way: the Python run's float16 / bfloat16 sum of thousands of small terms stops
    # growing once a term is below half a unit of the sum, while the GPU sums in float32. That
    # worst case, n, for the half types; the usual random-walk growth, sqrt(n), otherwise.
    half = prec < gen.PRECISION.index("float32")
    growth = spec.reduced if half else math.sqrt(spec.reduced)
    rtol = base * (1 + spec.ops / 2) * growth
    return rtol, rtol


def compare(program, gpu_args, cpu_args):
    diffs = []
    for p, g, c in zip(program.params, gpu_args, cpu_args):
        pairs = []
        if isinstance(p, gen.TensorArg) and g is not None:
            pairs.append((p.name, p, g, c))
        elif isinstance(p, gen.DictArg):
            pairs += [(f"{p.name}[{k!r}]", v, g[k], c[k]) for k, v in p.entries.items()
                      if isinstance(v, gen.TensorArg)]
        for name, spec, gt, ct in pairs:
            d = _differs(name, spec, gt.cpu(), ct)
            if d:
                diffs.append(d)
    return diffs


def _differs(name, spec, g, p):
    if g.dtype == torch.bool or not g.dtype.is_floating_point:
        bad = (g.to(torch.int64) != p.to(torch.int64))
        if bad.any():
            idx = tuple(bad.nonzero()[0].tolist())
            return (f"{name} ({spec.dtype}): {int(bad.sum())} of {g.numel()} elements differ, "
                    f"first at {list(idx)}: GPU {g[idx].item()}, Python {p[idx].item()}")
        return None
    gd, pd = g.double(), p.double()
    rtol, atol = tolerance(spec)
    finite = pd[torch.isfinite(pd)]
    m = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    both_nan = torch.isnan(gd) & torch.isnan(pd)
    same_inf = torch.isinf(pd) & (gd == pd)
    ok = ((gd - pd).abs() <= rtol * pd.abs() + atol * m) | both_nan | same_inf
    if not ok.all():
        bad = ~ok
        idx = tuple(bad.nonzero()[0].tolist())
        return (f"{name} ({spec.dtype}, rtol {rtol:.2g}): {int(bad.sum())} of {g.numel()} "
                f"elements differ, first at {list(idx)}: GPU {g[idx].item()}, Python "
                f"{p[idx].item()}")
    return None


# ----------------------------------------------------------------------------------------------
# Driver


def reproducer(program, outcome, message):
    """The program as a file that reproduces the call when run."""
    call = ("print(parir.print_compiled({fn}, args, opts))" if outcome != "mismatch" and
            outcome != "crash" else "{fn}(*args, opts=opts)")
    lines = [
        f"# parir fuzz program: seed {program.seed}, names {program.names}, outcome {outcome}",
        f"# spec: {program.spec_source()}",
        f"# features: {', '.join(sorted(program.features))}",
        "# message:",
    ] + ["#   " + ln for ln in message.splitlines()[:60]] + [
        program.source,
        "",
        "if __name__ == '__main__':",
        "    import sys",
        f"    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})",
        "    import generate",
        f"    program = generate.generate({program.seed}, {program.names!r}, "
        f"gpu_sized={program.gpu_sized})",
        "    args = program.make_args('cpu')",
        "    opts = program.make_opts()",
        "    " + call.format(fn=program.fn_name),
    ]
    return "\n".join(lines) + "\n"


def one(task):
    mode, seed, names, seq, gpu_sized = task
    try:
        program = gen.generate(seed, names, gpu_sized=gpu_sized)
    except Exception:
        return seed, "invalid", "the generator failed:\n" + traceback.format_exc(), None
    start = time.time()
    outcome, message = (run_compile(program, seq) if mode == "compile" else run_gpu(program))
    return seed, outcome, message, (program, time.time() - start)


def run(mode, seeds, names, out=None, jobs=1, seq=True, verbose=False):
    """Runs the programs of `seeds`; returns {outcome: [(seed, message, program)]}."""
    os.environ.setdefault("PARIR_CACHE_DIR", tempfile.mkdtemp(prefix="parir_fuzz_cache_"))
    gpu_sized = mode == "gpu" or seq
    tasks = [(mode, s, names, seq, gpu_sized) for s in seeds]
    results = collections.defaultdict(list)
    if jobs > 1 and mode == "compile":
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            it = pool.imap_unordered(one, tasks, chunksize=4)
            _collect(it, results, out, verbose)
    else:
        _collect(map(one, tasks), results, out, verbose)
    return results


def _collect(it, results, out, verbose):
    for seed, outcome, message, extra in it:
        program = extra[0] if extra else None
        results[outcome].append((seed, message, program))
        if outcome != "ok" and out:
            os.makedirs(out, exist_ok=True)
            name = f"{outcome}_{program.names if program else 'x'}_{seed}.py"
            with open(os.path.join(out, name), "w", encoding="utf-8") as f:
                if program is not None:
                    f.write(reproducer(program, outcome, message))
                else:
                    f.write("# " + message.replace("\n", "\n# "))
        if verbose and outcome != "ok":
            first = message.strip().splitlines()[0] if message.strip() else ""
            print(f"seed {seed}: {outcome}: {first[:200]}", flush=True)


def seeds_with_feature(feature, first, count, names, gpu_sized, most_tried=20000):
    """The first `count` seeds from `first` whose programs use `feature` (as run() would
    generate them)."""
    seeds = []
    for seed in range(first, first + most_tried):
        if len(seeds) == count:
            return seeds
        if feature in gen.generate(seed, names, gpu_sized=gpu_sized).features:
            seeds.append(seed)
    raise SystemExit(f"only {len(seeds)} of {most_tried} programs from seed {first} use "
                     f"'{feature}' (a name from a program's features list)")


def summary(results):
    total = sum(len(v) for v in results.values())
    parts = [f"{o}: {len(results.get(o, []))}" for o in OUTCOMES]
    return f"{total} programs; " + ", ".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["compile", "gpu"], default="compile")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="the first seed")
    ap.add_argument("--names", choices=["ordinary", "awkward", "mixed"], default="mixed")
    ap.add_argument("--out", default=None, help="folder for the programs that do not pass")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-seq", action="store_true",
                    help="compile mode: skip the plain Python run of each program")
    ap.add_argument("--feature", default=None,
                    help="only programs whose features include this one (see generate.py)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    start = time.time()
    seeds = range(a.seed, a.seed + a.count)
    if a.feature:
        seeds = seeds_with_feature(a.feature, a.seed, a.count, a.names,
                                   gpu_sized=a.mode == "gpu" or not a.no_seq)
    results = run(a.mode, seeds, a.names, a.out, a.jobs, not a.no_seq, a.verbose)
    print(summary(results) + f" ({time.time() - start:.1f} s)")
    return 0 if len(results.get("ok", [])) == a.count else 1


if __name__ == "__main__":
    sys.exit(main())
