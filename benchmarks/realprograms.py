"""The real-program suite: each npbench-derived program in parir, torch eager and torch.compile,
in float32 and float64, checked against a float64 reference, then timed.

For each program and dtype: one set of random inputs; the reference is the torch version run on
those inputs upcast to float64. Each implementation first runs once on a fresh copy of the
inputs (outputs it must write poisoned with NaN) and is compared with the reference by
||out - ref|| / ||ref||; only a passing implementation is timed. Timing rotates over enough
input copies to exceed the L2 cache and restores inputs the program mutates after each timed
run, outside the timed region (timing.time_runs).
"""

import math
import time
import traceback

import torch
import torch._dynamo

from npbench import PROGRAMS
from npbench.program import DeviceIndex, Inputs, clone_state, state_bytes, upcast
from timing import copies_to_defeat_l2, relative_error, time_runs

IMPLS = ("parir", "torch eager", "torch.compile")
# Seconds of runs the rotation over input copies may cost before timing (see bench_impl).
ROTATION_S = 0.3
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _configure_dynamo():
    # vadv's step dispatches on five phases, one graph each. Room for more, so that no step
    # silently falls back to eager.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)


def _runner(prog, impl):
    """(prepare(state), run(state)) of one implementation."""
    if impl == "parir":
        def prepare(st):
            st["_parir_calls"] = prog.parir_calls(st)

        def run(st):
            for fn, args, opts in st["_parir_calls"]:
                fn(*args, opts=opts)
        return prepare, run
    if impl == "torch eager":
        return (lambda st: None), (lambda st: prog.torch_run(st, prog.torch_step))
    torch._dynamo.reset()  # a fresh compile for each program and dtype
    step = torch.compile(prog.torch_step, dynamic=prog.dynamic)
    if prog.indexed_loop:
        index = DeviceIndex("cuda")
        return (lambda st: None), (lambda st: prog.torch_run(st, step, index))
    return (lambda st: None), (lambda st: prog.torch_run(st, step))


def _short(e):
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"


def bench_impl(prog, impl, base, reference, dtype, copies, timing):
    prepare, run = _runner(prog, impl)
    st = clone_state(base)
    prepare(st)
    for name in prog.write_only:
        if isinstance(st[name], torch.Tensor):
            st[name].fill_(math.nan)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(st)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    errors = {k: relative_error(st[k], reference[k]) for k in prog.outputs}
    worst = max(errors.values())
    out = {"first_call_s": first_s, "rel_err": worst, "rel_err_by_output": errors}
    if not worst <= prog.tolerance[dtype]:
        out["status"] = f"wrong: rel. error {worst:.2e} > {prog.tolerance[dtype]:.0e}"
        return out

    def restore(s):
        for k in prog.mutated:
            s[k].copy_(base[k])

    restore(st)
    # Rotating over input copies keeps a short run from finding its inputs in the L2 cache left
    # by the previous one; a run that lasts much longer than reading its inputs from memory
    # gains nothing from it. So: as many copies as defeat the L2, but only as many as one more
    # (warm) run says fit in about ROTATION_S, since each copy is run once before timing
    # (compiled paths such as CUDA graphs are set up per set of tensor addresses, and that
    # setup must stay out of the timed runs).
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(st)
    torch.cuda.synchronize()
    warm_s = max(time.perf_counter() - t0, 1e-6)
    restore(st)
    copies = max(1, min(copies, int(ROTATION_S / warm_s)))
    states = [st]
    for _ in range(copies - 1):
        s = clone_state(base)
        prepare(s)
        states.append(s)
    # Each copy runs twice before timing (st has run twice already): compiled paths set up per
    # set of tensor addresses (a host loop's CUDA graph is captured the second time a call
    # passes the same tensors) stay out of the timed runs.
    timing = dict(timing, warmup=2 * len(states) if len(states) > 1 else 0)
    out.update(time_runs(run, states, restore if prog.mutated else None, **timing))
    out.update(status="ok", copies=len(states), warm_run_s=warm_s)
    return out


def bench_program(prog, dtype_name, size_key, deadline, timing, impls=IMPLS, log=print):
    dtype = DTYPES[dtype_name]
    size = prog.sizes[size_key]
    itemsize = torch.tensor([], dtype=dtype).element_size()
    res = {"program": prog.name, "dtype": dtype_name, "size": size, "size_key": size_key,
           "size_note": prog.size_note, "origin": prog.origin, "cost": prog.cost(size, itemsize),
           "tolerance": prog.tolerance[dtype], "impls": {}}
    base = reference = None
    try:
        base = prog.make_inputs(size, dtype, Inputs(dtype, "cuda", seed=1234))
        ref_state = upcast(base)
        prog.torch_run(ref_state, prog.torch_step)
        reference = {k: ref_state[k] for k in prog.outputs}
        del ref_state
        res["copies"] = copies = copies_to_defeat_l2(state_bytes(base))
    except Exception as e:  # inputs or reference failed: nothing to compare with
        res["error"] = _short(e)
        for impl in impls:
            res["impls"][impl] = {"status": f"failed: reference: {_short(e)}"}
        log(f"  {prog.name} {dtype_name}: reference failed: {_short(e)}")
        return res
    for impl in impls:
        if time.monotonic() > deadline:
            res["impls"][impl] = {"status": "skipped: time budget"}
            continue
        t0 = time.monotonic()
        try:
            r = bench_impl(prog, impl, base, reference, dtype, copies, timing)
        except Exception as e:
            r = {"status": f"failed: {_short(e)}", "traceback": traceback.format_exc()}
        r["wall_s"] = time.monotonic() - t0
        res["impls"][impl] = r
        t = f"{r['median_ms']:.3f} ms" if "median_ms" in r else ""
        log(f"  {prog.name:15s} {dtype_name} {impl:14s} {r['status'][:90]:20s} {t} "
            f"(err {r.get('rel_err', float('nan')):.1e}, {r['wall_s']:.1f} s)")
    del base, reference
    torch.cuda.empty_cache()
    return res


def run_suite(size_key, deadline, only=None, dtypes=("float32", "float64"), timing=None,
              log=print, progress=None):
    """Every program (or those named in `only`) in each dtype. progress(rows, name), when
    given, is called before each program with the rows so far and the program's name, and
    with None at the end."""
    _configure_dynamo()
    timing = timing or {}
    results = []
    for prog in PROGRAMS:
        if only and prog.name not in only:
            continue
        if progress:
            progress(results, prog.name)
        for dt in dtypes:
            if time.monotonic() > deadline:
                results.append({"program": prog.name, "dtype": dt, "size": prog.sizes[size_key],
                                "size_note": prog.size_note, "origin": prog.origin,
                                "impls": {i: {"status": "skipped: time budget"} for i in IMPLS}})
                log(f"  {prog.name} {dt}: skipped (time budget)")
                continue
            results.append(bench_program(prog, dt, size_key, deadline, timing, log=log))
    if progress:
        progress(results, None)
    return results


def geomean(values):
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def speedups(results):
    """Per dtype: geometric means of parir's speed-up over eager and over torch.compile, over
    the programs where both sides passed their check and were timed."""
    out = {}
    for dt in sorted({r["dtype"] for r in results}):
        rows = [r for r in results if r["dtype"] == dt]
        for other in ("torch eager", "torch.compile"):
            ratios = []
            for r in rows:
                p, o = r["impls"].get("parir", {}), r["impls"].get(other, {})
                if "median_ms" in p and "median_ms" in o:
                    ratios.append(o["median_ms"] / p["median_ms"])
            out[(dt, other)] = {"geomean": geomean(ratios), "n": len(ratios), "of": len(rows)}
    return out
