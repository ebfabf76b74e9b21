"""The benchmarks' kernels on every CI run, without a GPU, so that the benchmarks cannot rot:
code generation and NVRTC compilation of every kernel at the sizes the benchmarks run (meta
tensors give shapes without memory), and each real program's parir kernels run as plain Python
(seq=True) on tiny inputs against the float64 reference."""

import importlib.util
import math
import os
import subprocess
import sys

import pytest
import torch

import parir_torch as parir
from parir_torch import _C

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)
import kernels  # noqa: E402
from npbench import PROGRAMS  # noqa: E402
from npbench.program import Inputs, clone_state, upcast  # noqa: E402
from timing import relative_error  # noqa: E402

DTYPES = [torch.float32, torch.float64]


def compile_to_cubin(fn, args, opts):
    src = parir.print_compiled(fn, args, opts)
    binary, is_cubin, _ = _C.nvrtc_compile(src, "sm_90")
    assert is_cubin and len(binary) > 100, fn.__name__


def test_roofline_and_overhead_kernels_compile():
    n, m = 64, 48
    x, y, yc, flat, one = (torch.ones(n, m), torch.ones(n), torch.ones(m), torch.ones(n * m),
                           torch.ones(1))
    v = [torch.ones(n) for _ in range(16)]
    programs = [
        (kernels.sum_rows, [x, y, n, m], {"N": parir.threads(n)}),
        (kernels.add, [y, y, y, n], {"i": parir.threads(n)}),
        (kernels.axpy, [1.5, y, y, n], {"i": parir.threads(n)}),
        (kernels.gather, [y, torch.zeros(n, dtype=torch.int64), y, n], {"i": parir.threads(n)}),
        (kernels.sum_rows_reduce, [x, y, n, m],
         {"N": parir.threads(n), "M": parir.threads(32).reduce()}),
        (kernels.col_sums, [x, torch.ones(4, m), yc, n, m, 4],
         {"R": parir.threads(4), "M": parir.threads(m)}),
        (kernels.col_sums_slice, [x, yc, n, m], {"M": parir.threads(m), "N": parir.threads(32)}),
        (kernels.row_sums_slice, [x, y, n, m], {"N": parir.threads(n), "M": parir.threads(32)}),
        (kernels.total_sum, [flat, one, n * m], {"i": parir.threads(2048).reduce()}),
        (kernels.row_max, [x, y, n, m], {"N": parir.threads(n), "M": parir.threads(32)}),
        (kernels.softmax_rows, [x, x.clone(), n, m], {"N": parir.threads(n), "M": parir.threads(32)}),
        (kernels.args1, [v[0], n], {"i": parir.threads(n)}),
        (kernels.args4, [*v[:4], n], {"i": parir.threads(n)}),
        (kernels.args16, [*v[:16], n], {"i": parir.threads(n)}),
        (kernels.rms_norm, [x, yc, x.clone(), n, m, 1e-6],
         {"N": parir.threads(n), "D": parir.threads(m)}),
        (kernels.layer_norm, [x, yc, yc, x.clone(), n, m, 1e-5],
         {"N": parir.threads(n), "D": parir.threads(32)}),
        (kernels.stencil_2d, [x, x.clone(), n, m],
         {"i": parir.threads(n - 2), "j": parir.threads(m - 2)}),
    ]
    for fn, args, spec in programs:
        compile_to_cubin(fn, args, parir.par(spec))


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_roofline_kernels_compile_at_benchmark_size(quick):
    """The roofline suite's parir calls exactly as it makes them (sizes and options), on meta
    tensors."""
    import roofline

    tensors = roofline.Tensors("meta")
    names = []
    for name, _, make in roofline.cases(quick):
        case = make(tensors)
        compile_to_cubin(*case["call"])
        assert case["bytes"] > 0, name
        fn, args = case["torch"]
        assert callable(fn) and callable(case["triton"]), name
        names.append(name)
    new = {"layer norm", "RMS norm", "stencil (2-D, 5 points)", "softmax (short rows)",
           "layer norm (768-wide rows)", "softmax (1000-wide rows)"}
    assert new <= set(names)


def test_roofline_builds_its_cases_without_triton():
    """Without Triton (as in CI) the roofline module imports, builds every case on meta tensors
    and reports Triton as unavailable; the timing falls back to CUDA events."""
    script = (
        "import sys; sys.modules['triton'] = None; sys.modules['triton.language'] = None\n"
        "import roofline, triton_kernels\n"
        "assert not triton_kernels.AVAILABLE and 'triton' in triton_kernels.WHY\n"
        "t = roofline.Tensors('meta')\n"
        "cases = [make(t) for _, _, make in roofline.cases(False)]\n"
        "try:\n"
        "    roofline._runner(cases[0], 'triton')\n"
        "except roofline.Unavailable as e:\n"
        "    assert str(e).startswith('unavailable'), e\n"
        "else:\n"
        "    raise AssertionError('Triton runner without Triton')\n"
        "assert roofline.timer()[0].startswith('timing.time_runs')\n"
        "print(len(cases))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(  # parir_torch built in place, too
        [BENCH, os.path.join(BENCH, "..")] + [p for p in (os.environ.get("PYTHONPATH"),) if p]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env, cwd=BENCH)
    assert proc.returncode == 0, proc.stderr
    import roofline

    assert int(proc.stdout.split()[-1]) == len(roofline.cases(False))


def test_roofline_selects_kernels_by_name_or_start():
    import roofline

    assert roofline.selected("softmax (short rows)", None)
    assert roofline.selected("softmax (short rows)", {"softmax"})
    assert roofline.selected("RMS norm", {"rms"})
    assert roofline.selected("layer norm", {"Layer Norm"})
    assert not roofline.selected("row sum", {"softmax", "layer norm"})


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton")
def test_triton_kernels_match_reference_in_interpreter():
    """The Triton versions on small CPU tensors in Triton's interpreter, against float64."""
    script = r"""
import numpy as np
import torch
import torch.nn.functional as F
import triton.runtime.interpreter as ti

# NumPy 2.4 refuses int() of a one-element array, which the interpreter uses for loop bounds
# given at run time: read the element instead.
if hasattr(ti, "_patch_lang_tensor"):
    _patch = ti._patch_lang_tensor

    def _patched(tensor, scope):
        _patch(tensor, scope)
        scope.set_attr(tensor, "__index__",
                       lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))
    ti._patch_lang_tensor = _patched

import triton_kernels as tk
from timing import relative_error

g = torch.Generator().manual_seed(0)
def r(*s):
    return torch.rand(s, generator=g) - 0.25
x, w, b = r(37, 300), r(300), r(300)
xd = x.double()
v, y0, sx = r(5000), r(5000), r(5, 448)
stencil_out = torch.full_like(x, float("nan"))
checks = {
    "axpy": (tk.axpy(1.5, v, y0.clone()), y0.double() + 1.5 * v.double()),
    "row_sum": (tk.row_sum(x), xd.sum(1)),
    "row_max": (tk.row_max(x), xd.amax(1)),
    "col_sum": (tk.col_sum(x), xd.sum(0)),
    "full_sum": (tk.full_sum(x), xd.sum().reshape(1)),
    "softmax": (tk.softmax(sx), torch.softmax(sx.double(), 1)),
    "layer_norm": (tk.layer_norm(x, w, b, 1e-5),
                   F.layer_norm(xd, (300,), w.double(), b.double(), 1e-5)),
    "rms_norm": (tk.rms_norm(x, w, 1e-6),
                 xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()),
    "stencil_2d": (tk.stencil_2d(x, stencil_out), 0.2 * (
        xd[1:-1, 1:-1] + xd[:-2, 1:-1] + xd[2:, 1:-1] + xd[1:-1, :-2] + xd[1:-1, 2:])),
}
for name, (got, want) in checks.items():
    err = relative_error(got, want)
    assert err < 1e-5, (name, err)
assert torch.isnan(stencil_out[0]).all() and torch.isnan(stencil_out[:, -1]).all()
print("ok")
"""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join(
        [BENCH] + [p for p in (os.environ.get("PYTHONPATH"),) if p]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, env=env, cwd=BENCH)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_histogram_kernels_compile_at_benchmark_size(quick):
    """bench_histogram's parir calls as it makes them, for every number of bins."""
    import bench_histogram

    n = 2 ** 20 if quick else 2 ** 26
    x = torch.empty(n, device="meta")
    for bins in bench_histogram.BINS:
        hist = torch.empty(bins, dtype=torch.int32, device="meta")
        partial = torch.empty(bench_histogram.BLOCKS, bins, dtype=torch.int32, device="meta")
        calls = bench_histogram.parir_calls(x, hist, partial, n, bins)
        assert len(calls) == (3 if bench_histogram.uses_rows(n, bins) else 2)
        for _, fn, args, opts in calls:
            compile_to_cubin(fn, args, opts)


def test_histogram_kernels_match_bincount():
    """The histogram kernels as plain Python on a small input, against torch.bincount."""
    n, bins, blocks = 64, 5, 4
    x = torch.rand(n, generator=torch.Generator().manual_seed(0))
    want = torch.bincount((x * bins).long().clamp(max=bins - 1), minlength=bins)
    hist = torch.zeros(bins, dtype=torch.int32)
    kernels.histogram(x, hist, n, bins, seq=True)
    assert torch.equal(hist.long(), want)
    partial, hist = torch.zeros(blocks, bins, dtype=torch.int32), torch.full((bins,), -1,
                                                                                 dtype=torch.int32)
    kernels.histogram_blocks(x, partial, hist, n, bins, blocks, seq=True)
    assert torch.equal(hist.long(), want)


def test_layer_norm_matches_torch():
    n, d = 5, 7
    x, w, b = torch.rand(n, d) - 0.25, torch.rand(d) + 0.5, torch.rand(d) - 0.5
    out = torch.full((n, d), math.nan)
    kernels.layer_norm(x, w, b, out, n, d, 1e-5, seq=True)
    ref = torch.nn.functional.layer_norm(x.double(), (d,), w.double(), b.double(), 1e-5)
    assert relative_error(out, ref) < 1e-6


def test_stencil_2d_matches_torch_and_leaves_the_border():
    n, m = 6, 9
    x, y = torch.rand(n, m) - 0.25, torch.full((n, m), math.nan)
    kernels.stencil_2d(x, y, n, m, seq=True)
    xd = x.double()
    ref = 0.2 * (xd[1:-1, 1:-1] + xd[:-2, 1:-1] + xd[2:, 1:-1] + xd[1:-1, :-2] + xd[1:-1, 2:])
    assert relative_error(y[1:-1, 1:-1], ref) < 1e-6
    border = torch.ones(n, m, dtype=torch.bool)
    border[1:-1, 1:-1] = False
    assert torch.isnan(y[border]).all()


def test_rms_norm_matches_torch():
    n, d = 5, 7
    x, w, out = torch.rand(n, d) + 0.5, torch.rand(d) + 0.5, torch.full((n, d), math.nan)
    kernels.rms_norm(x, w, out, n, d, 1e-6, seq=True)
    ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    assert relative_error(out, ref) < 1e-6


@pytest.mark.parametrize("size_key", ["L", "quick"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_real_program_compiles_at_benchmark_size(prog, dtype, size_key):
    state = prog.make_inputs(prog.sizes[size_key], dtype, Inputs(dtype, "meta"))
    for fn, args, opts in prog.parir_calls(state):
        compile_to_cubin(fn, args, opts)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_real_program_matches_reference(prog, dtype):
    """The parir kernels as plain Python on tiny inputs (outputs poisoned with NaN) against the
    torch version run in float64; the torch version in the benchmark dtype too."""
    state = prog.make_inputs(prog.sizes["ci"], dtype, Inputs(dtype, "cpu", seed=7))
    reference = upcast(state)
    prog.torch_run(reference, prog.torch_step)
    eager = clone_state(state)
    prog.torch_run(eager, prog.torch_step)
    for name in prog.write_only:
        state[name].fill_(math.nan)
    for fn, args, _ in prog.parir_calls(state):
        fn(*args, seq=True)
    tol = prog.tolerance[dtype]
    for name in prog.outputs:
        assert relative_error(state[name], reference[name]) <= tol, f"parir {name}"
        assert relative_error(eager[name], reference[name]) <= tol, f"torch {name}"


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_torch_compile_builds_one_graph_per_kind_of_step(prog):
    """Dynamo (with its eager backend, so no code generation) traces each program's torch version
    once per kind of step, however long its loop: an int loop index would be a graph constant
    and recompile at every iteration. The compiled version matches eager."""
    from npbench.program import DeviceIndex

    graphs = []

    def count_graphs(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    state = prog.make_inputs(prog.sizes["ci"], torch.float64, Inputs(torch.float64, "cpu", 7))
    eager = clone_state(state)
    prog.torch_run(eager, prog.torch_step)
    step = torch.compile(prog.torch_step, backend=count_graphs, dynamic=prog.dynamic)
    if prog.indexed_loop:
        prog.torch_run(state, step, DeviceIndex("cpu"))
    else:
        prog.torch_run(state, step)
    kinds_of_step = 5 if prog.name == "vadv" else 1
    assert 1 <= len(graphs) <= kinds_of_step
    for name in prog.outputs:
        assert relative_error(state[name], eager[name]) <= 1e-12, name


def test_reference_check_catches_a_wrong_kernel():
    """The check above can fail: a program whose kernel skips an element is caught."""
    prog = next(p for p in PROGRAMS if p.name == "gesummv")
    state = prog.make_inputs(prog.sizes["ci"], torch.float64, Inputs(torch.float64, "cpu", 7))
    reference = upcast(state)
    prog.torch_run(reference, prog.torch_step)
    state["y"].fill_(math.nan)
    for fn, args, _ in prog.parir_calls(state):
        fn(*args, seq=True)
    state["y"][3] = math.nan
    assert relative_error(state["y"], reference["y"]) == math.inf
    state["y"][3] = 0.0
    assert relative_error(state["y"], reference["y"]) > prog.tolerance[torch.float64]


def test_report_marks_targets():
    import report
    import roofline

    # Rows as run_suite leaves them: softmax with all four timed (Triton the fastest
    # alternative), axpy without Triton and with torch.compile wrong.
    softmax = {"kernel": "softmax", "kind": "reduction", "shape": "8x8", "bytes": 2850e6,
               "timing_method": "triton.testing.do_bench (median)", "status": "ok"}
    for which, ms in (("parir", 1.0), ("torch", 2.0), ("compile", 1.25), ("triton", 0.8)):
        softmax.update({f"{which}_ms": ms, f"{which}_status": "ok",
                        f"{which}_GBps": 2850e6 / 1e9 / (ms / 1e3)})
    axpy = {"kernel": "axpy", "kind": "memory", "shape": "8", "bytes": 96, "status": "ok",
            "parir_ms": 1.0, "parir_GBps": 2600.0, "parir_status": "ok", "torch_ms": 1.0,
            "torch_GBps": 2600.0, "torch_status": "ok",
            "compile_status": "wrong: rel. error 1.00e+00",
            "triton_status": "unavailable: Triton is not importable (ImportError: x)"}
    for row in (softmax, axpy):
        roofline._targets(row, 3000.0)
    assert softmax["best_alt"] == "Triton" and softmax["best_alt_ms"] == 0.8
    assert softmax["vs_best"] == pytest.approx(0.8)
    assert "best_alt" not in axpy and "vs_best" not in axpy
    results = {
        "device": "test", "torch": torch.__version__, "parir": parir.__version__, "date": "-",
        "command": "-", "elapsed_s": 1.0, "copy_GBps": 3000.0,
        "roofline": [softmax, axpy],
        "real_programs": [
            {"program": "p", "dtype": "float32", "size": {"N": 1}, "size_note": "",
             "cost": {"bytes": 3e9, "flops": 0, "steps": 1},
             "impls": {"parir": {"status": "ok", "median_ms": 2.0, "rel_err": 0.0},
                       "torch eager": {"status": "ok", "median_ms": 4.0},
                       "torch.compile": {"status": "wrong: rel. error 1e-1"}}}],
        "overheads": {"compile latency": {"cold_ms": 200.0, "warm_ms": 1.0, "hot_ms": 0.1}},
    }
    results["speedups"] = report.speedups(results["real_programs"])
    got = {d: (m, ok) for d, m, ok in report.targets(results)}
    marks = {d: ok for d, (_, ok) in got.items()}
    assert marks["roofline softmax: >= 90% of copy bandwidth"] is True
    assert marks["roofline softmax: >= torch eager"] is True
    assert got["roofline softmax: >= 1.0x the faster of Triton and torch.compile"] == (
        "1.000 ms vs Triton 0.800 ms = 0.80x", False)
    assert marks["roofline axpy: >= 90% of copy bandwidth"] is False  # 87% of copy
    assert "roofline axpy: >= 1.0x the faster of Triton and torch.compile" not in marks
    assert marks["real programs float32: geomean speed-up vs torch eager >= 1.5x"] is True
    assert marks["real programs float32: geomean speed-up vs torch.compile >= 1.0x"] is False
    assert marks["cold compile <= 150 ms"] is False and marks["warm compile <= 5 ms"] is True
    text = report.markdown(results)
    assert ("| kernel | shape | parir ms | torch ms | torch.compile ms | Triton ms | parir/best "
            "| parir % of copy | targets |") in text
    assert ("| softmax | 8x8 | 1.000 | 2.000 | 1.250 | 0.800 | 0.80x (Triton) | 95% | "
            "PASS >= 90% of copy bandwidth, MISS >= 1.0x the faster of Triton and torch.compile, "
            "PASS >= torch eager |") in text
    assert "| axpy | 8 | 1.000 | 1.000 | wrong | unavailable | - | 87% |" in text
    assert "triton.testing.do_bench (median)" in text
    assert "roofline axpy (torch.compile): wrong: rel. error 1.00e+00" in text
    assert "roofline axpy (Triton)" not in text  # not installed is not a failure
    assert "| p | N=1 | 2.000 | 4.000 | wrong | 2.00x | - | 1.000 (memory) | 2.0x |" in text
    assert "p float32 torch.compile: wrong: rel. error 1e-1" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")
def test_run_all_without_gpu_stops_early_and_clearly():
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run_all.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Generated the CUDA code of" in proc.stdout and "No CUDA GPU" in proc.stdout


def test_run_all_selects_sections_and_names():
    import run_all

    assert run_all.parse_only("") == (list(run_all.SECTIONS), set())
    assert run_all.parse_only("real, roofline") == (["roofline", "real"], set())
    assert run_all.parse_only("real_programs,gemver") == (["real"], {"gemver"})
    assert run_all.parse_only("axpy") == (["roofline", "real"], {"axpy"})


def test_run_all_records_a_failed_section_and_goes_on():
    """A section whose process fails gives a status naming the error, not an exception."""
    import argparse
    import time

    import run_all

    args = argparse.Namespace(quick=True, dtypes="float32")
    result, status, _ = run_all.run_child("no_such_section", args, time.time() + 60, set())
    assert result is None
    assert status.startswith("failed: process exited with status 1")
    assert "unknown section 'no_such_section'" in status


@pytest.mark.skipif(torch.cuda.is_available(), reason="relies on the sections failing without a GPU")
def test_run_all_goes_on_after_failed_sections_and_writes_the_report(tmp_path):
    """Without a GPU each section fails: roofline's process exits with an error, compile's
    records the error of its part; each failure is recorded, the next section still runs, and
    results.md shows the failures as missed targets."""
    import argparse
    import time

    import run_all

    args = argparse.Namespace(quick=True, dtypes="float32", budget=120.0, out=str(tmp_path))
    results = {"device": "none", "torch": torch.__version__, "parir": parir.__version__,
               "date": "-", "command": "-", "sections": {}}
    run_all.run_sections(["roofline", "compile"], set(), args, results, time.monotonic())
    assert list(results["sections"]) == ["roofline", "compile"]
    assert results["sections"]["roofline"]["status"].startswith("failed: process exited")
    assert results["sections"]["compile"]["status"] == "ok"
    assert results["overheads"]["compile latency"]["status"].startswith("failed: RuntimeError")
    text = (tmp_path / "results.md").read_text()
    assert "| section roofline runs to the end | failed: process exited" in text
    assert "| cold compile <= 150 ms, warm <= 5 ms | failed: RuntimeError" in text


def test_run_all_resumes_a_section_whose_process_died(tmp_path, monkeypatch):
    """A real-program section whose process dies in its second program goes on in a new
    process with the programs after it; the one it died in is recorded as failed."""
    import argparse
    import time

    import run_all

    def row(name):
        return {"program": name, "dtype": "float32", "size": {"N": 1}, "size_note": "",
                "impls": {i: {"status": "ok", "median_ms": 1.0, "rel_err": 0.0}
                          for i in ("parir", "torch eager", "torch.compile")}}

    todo = ["a", "b", "c", "d"]
    calls = []

    def fake_child(section, args, deadline_epoch, names):
        calls.append(names)
        if len(calls) == 1:
            return ({"copy_GBps": 1000.0, "todo": todo, "real_programs": [row("a")],
                     "in_progress": "b"}, "failed: process exited with status -11", 1.0)
        return ({"copy_GBps": 999.0, "todo": ["c", "d"], "real_programs": [row("c"), row("d")],
                 "in_progress": None}, "ok", 1.0)

    monkeypatch.setattr(run_all, "run_child", fake_child)
    args = argparse.Namespace(quick=True, dtypes="float32", budget=120.0, out=str(tmp_path))
    results = {"device": "none", "torch": "-", "parir": "-", "date": "-", "command": "-",
               "sections": {}}
    run_all.run_sections(["real"], set(), args, results, time.monotonic())
    assert calls == [set(), {"c", "d"}]
    assert [r["program"] for r in results["real_programs"]] == ["a", "b", "c", "d"]
    died = results["real_programs"][1]["impls"]["parir"]["status"]
    assert died.startswith("failed: its process died while running it") and "-11" in died
    assert results["copy_GBps"] == 1000.0
    assert results["sections"]["real"]["status"] == "ok"
    assert results["sections"]["real"]["restarts"] == ["failed: process exited with status -11"]
    text = (tmp_path / "results.md").read_text()
    assert "b float32 parir: failed: its process died" in text
    assert "went on in a new process 1 time(s)" in text


def test_run_all_lists_benchmarks_left_without_time_as_skipped(tmp_path, monkeypatch):
    import argparse
    import time

    import run_all

    def fake_child(section, args, deadline_epoch, names):
        return ({"copy_GBps": 1000.0, "todo": ["axpy", "row sum", "softmax"], "roofline": [],
                 "in_progress": "axpy"}, "failed: killed, still running 45 s after its deadline",
                1.0)

    monkeypatch.setattr(run_all, "run_child", fake_child)
    args = argparse.Namespace(quick=True, dtypes="float32", budget=1.0, out=str(tmp_path))
    results = {"device": "none", "torch": "-", "parir": "-", "date": "-", "command": "-",
               "sections": {}}
    run_all.run_sections(["roofline"], set(), args, results, time.monotonic())
    statuses = [(r["kernel"], r["status"].split(" (")[0]) for r in results["roofline"]]
    assert statuses == [("axpy", "failed: its process died while running it"),
                        ("row sum", "skipped: time budget"), ("softmax", "skipped: time budget")]
    assert results["sections"]["roofline"]["restarts"] == []


def test_run_all_kills_a_hanging_section_with_the_processes_it_started(tmp_path, monkeypatch):
    import argparse
    import time

    import run_all

    marker = tmp_path / "grandchild_pid"
    hang = tmp_path / "hang.py"
    hang.write_text(
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n")
    monkeypatch.setattr(run_all, "__file__", str(hang))
    monkeypatch.setattr(run_all, "GRACE_S", 1)
    args = argparse.Namespace(quick=True, dtypes="float32")
    t0 = time.monotonic()
    result, status, _ = run_all.run_child("roofline", args, time.time() + 1, set())
    assert time.monotonic() - t0 < 30
    assert result is None and status.startswith("failed: killed")
    pid = int(marker.read_text())

    def running(pid):  # a killed process no one has reaped yet is a zombie: not running
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    for _ in range(50):  # the grandchild was killed with its process group
        if not running(pid):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the section's own child process survived")
