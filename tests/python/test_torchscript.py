"""parir kernels from TorchScript and torch.export artifacts: the scripted graph keeps the
operator, the guard against TorchScript dropping it, save/load round trips, and (GPU) runs
in a fresh process that never calls the Python front end."""

import os
import subprocess
import sys
import textwrap
from typing import List

import pytest
import torch

import parir_torch as parir
from parir_torch.torchscript import launch
from torch_programs import TwoKernels, inputs, row_opts, scaled_add, sum_rows, threads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROWS, COLS = 100, 37


def programs():
    like = torch.empty(ROWS * COLS, device="meta")
    add = parir.print_compiled(scaled_add, [2.5, like, like, like, ROWS * COLS],
                               threads(ROWS * COLS))
    rows = parir.print_compiled(sum_rows, [like.view(ROWS, COLS), torch.empty(ROWS, device="meta"),
                                           ROWS, COLS], row_opts(ROWS))
    return add, rows


class Scripted(torch.nn.Module):
    """TwoKernels, written for TorchScript: the programs are attributes."""

    def __init__(self):
        super().__init__()
        self.add, self.rows = programs()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z, = launch(self.add, [torch.empty_like(x).view(-1)], [x.view(-1), y.view(-1)])
        s, = launch(self.rows, [torch.zeros([x.shape[0]], device=x.device, dtype=x.dtype)],
                    [z.view(x.shape[0], x.shape[1])])
        return s - x[:, 0]


class DroppedInline(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.add = programs()[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        torch.ops.parir.launch(self.add, [out], [x, x])
        return out


class DroppedUnreadResult(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.add = programs()[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        launch(self.add, [out], [x, x])
        return out


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = DroppedUnreadResult()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) * 2


def test_scripted_graph_contains_the_operator():
    scripted = parir.torchscript.script(Scripted())
    assert parir.torchscript.count_launches(scripted) == 2
    graph = scripted.forward.graph.copy()
    torch._C._jit_pass_inline(graph)
    programs_in_graph = [n.inputsAt(0).toIValue() for n in graph.findAllNodes("parir::launch")]
    assert all(p is None or "//@ parir.plan" in p for p in programs_in_graph)


@pytest.mark.parametrize("module", [DroppedInline, DroppedUnreadResult, Nested])
def test_script_refuses_a_dropped_kernel_call(module):
    with pytest.raises(parir.ParirError, match="TorchScript"):
        parir.torchscript.script(module())


@pytest.fixture
def cpu_launch_counter():
    """A CPU kernel for parir::launch that counts calls and fills the outputs with 1: shows
    which calls a TorchScript module makes when it runs, without a GPU."""
    calls = []
    lib = torch.library.Library("parir", "IMPL")

    def count(program, outs, ins):
        calls.append(program)
        for o in outs:
            o.fill_(1.0)

    lib.impl("launch", count, "CPU")
    yield calls
    lib._destroy()


def test_scripted_module_runs_the_operator_after_save_and_load(cpu_launch_counter, tmp_path):
    scripted = parir.torchscript.script(Scripted())
    torch.jit.save(scripted, tmp_path / "model.pt")
    loaded = torch.jit.load(tmp_path / "model.pt")
    x, y = inputs(ROWS, COLS, device="cpu")
    for _ in range(4):  # the profiling executor optimizes the graph after the first runs
        out = loaded(x, y)
    assert len(cpu_launch_counter) == 8
    torch.testing.assert_close(out, 1.0 - x[:, 0])


def test_unchecked_script_would_silently_skip_the_kernel(cpu_launch_counter):
    """Why parir.torchscript.script checks: plain torch.jit.script drops the call."""
    scripted = torch.jit.script(DroppedUnreadResult())
    for _ in range(3):
        scripted(torch.zeros(ROWS * COLS))
    assert cpu_launch_counter == []


@pytest.mark.gpu
def test_scripted_model_matches_eager_on_the_gpu(tmp_path):
    x, y = inputs(ROWS, COLS)
    eager = TwoKernels()(x, y)
    scripted = parir.torchscript.script(Scripted())
    torch.jit.save(scripted, tmp_path / "model.pt")
    loaded = torch.jit.load(tmp_path / "model.pt")
    for _ in range(3):
        assert torch.equal(loaded(x, y), eager)


FRESH_PROCESS = textwrap.dedent("""
    import sys
    import torch
    import parir_torch  # registers the operator; its front end is never called
    kind, path = sys.argv[1], sys.argv[2]
    data = torch.load(path + ".data")
    x, y = data["x"].cuda(), data["y"].cuda()
    if kind == "export":
        out = torch.export.load(path).module()(x, y)
    else:
        out = torch.jit.load(path)(x, y)
    assert torch.equal(out.cpu(), data["expected"]), (out.cpu() - data["expected"]).abs().max()
    print("same")
""")


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["export", "torchscript"])
def test_saved_model_runs_in_a_fresh_process(kind, tmp_path):
    x, y = inputs(ROWS, COLS)
    expected = TwoKernels()(x, y)
    path = str(tmp_path / "model.pt2")
    if kind == "export":
        ep = torch.export.export(TwoKernels(), (x, y))
        torch.testing.assert_close(ep.module()(x, y), expected, rtol=0, atol=0)
        torch.export.save(ep, path)
    else:
        torch.jit.save(parir.torchscript.script(Scripted()), path)
    torch.save({"x": x.cpu(), "y": y.cpu(), "expected": expected.cpu()}, path + ".data")
    script = tmp_path / "run.py"
    script.write_text(FRESH_PROCESS)
    env = dict(os.environ, PARIR_CACHE_DIR=str(tmp_path / "kernels"),  # compiled afresh
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script), kind, path], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "same" in proc.stdout, proc.stderr
