"""Calls in profiler traces: each call of a jit function is a range named "function
(file.py:line)" (a record_function range, an NVTX range under emit_nvtx), and its kernels are
named after the function; eager calls, torch.compile graphs and TorchScript alike."""

import inspect
import json
import os

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from parir_torch.torchscript import launch


@parir.jit
def scale_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i, j] = 2 * x[i, j]


DEF_LINE = inspect.getsourcelines(scale_rows.fn)[1] + 1  # after the decorator
RANGE = f"scale_rows (test_profiler.py:{DEF_LINE})"
N, M = 300, 17


def opts():
    return parir.par({'N': parir.threads(N)})


def test_the_plan_says_where_the_function_is_defined():
    x = torch.empty(N, M, device="meta")
    text = parir.print_compiled(scale_rows, [x, x, N, M], opts())
    assert f"//@ location {os.path.abspath(__file__)}:{DEF_LINE}\n" in text
    assert _C.Program(text).profile_name == RANGE
    # A plan written without the line (by hand, or by an older version) names the function.
    lines = [line for line in text.splitlines() if not line.startswith("//@ location")]
    assert _C.Program("\n".join(lines)).profile_name == "scale_rows"


def trace_events(tmp_path, run):
    """The events of a chrome trace of run(), read from the file the profiler writes."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        run()
        torch.cuda.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())["traceEvents"]


class Scripted(torch.nn.Module):
    def __init__(self, program):
        super().__init__()
        self.program = program

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, = launch(self.program, [torch.empty_like(x)], [x])
        return y


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["eager", "torch.compile", "torchscript"])
def test_profiler_trace_names_the_function_and_its_kernel(how, tmp_path):
    x = torch.rand(N, M, device="cuda")
    y = torch.empty_like(x)
    if how == "eager":
        scale_rows(x, y, N, M, opts=opts())  # compiled and loaded before the trace
        run = lambda: scale_rows(x, y, N, M, opts=opts())  # noqa: E731
    elif how == "torch.compile":
        def model(x):
            out = torch.empty_like(x)
            scale_rows(x, out, N, M, opts=opts())
            return out

        compiled = torch.compile(model, fullgraph=True)
        compiled(x)
        run = lambda: y.copy_(compiled(x))  # noqa: E731
    else:
        scripted = parir.torchscript.script(
            Scripted(parir.print_compiled(scale_rows, [x, y, N, M], opts())))
        scripted(x)
        run = lambda: y.copy_(scripted(x))  # noqa: E731
    events = trace_events(tmp_path, run)
    torch.testing.assert_close(y, 2 * x)
    ranges = [e for e in events if e.get("name") == RANGE]
    assert ranges, sorted({e.get("name") for e in events})
    assert any(e.get("cat") == "user_annotation" for e in ranges), ranges
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernels if "scale_rows" in k["name"]] == ["scale_rows"], \
        [k["name"] for k in kernels]
