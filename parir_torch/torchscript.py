"""parir kernels in TorchScript, and from there in C++ programs without Python.

A scripted module calls a kernel through the operator, with the program text that
parir.print_compiled returns (the code specialized for given shapes, strides and scalars):

    program = parir.print_compiled(axpy, [a, x, y, out, N], opts)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.program = program

        def forward(self, x, y):
            out, = parir.torchscript.launch(self.program, [torch.empty_like(x)], [x, y])
            return out

    scripted = parir.torchscript.script(Model())    # torch.jit.script, checked

The saved module (torch.jit.save) runs wherever the operator is registered: in Python after
`import parir_torch`, in C++ when the program links the parir_torch_ops library
(examples/cpp_deploy).

TorchScript sees the operator write its list of outputs, not the tensors in it, so it deletes a
call whose list is not read afterwards: `torch.ops.parir.launch(p, [y], [x]); return y` is
silently gone from the scripted graph. Read the outputs from the list, as `launch` returns it,
and script with `script`, which raises a ParirError where a kernel call was dropped.
"""

import ast
import inspect
import textwrap
from typing import List

import torch

from ._C import ParirError


def launch(program: str, outs: List[torch.Tensor], ins: List[torch.Tensor]) -> List[torch.Tensor]:
    """Runs a parir program (print_compiled's text) on `outs` (the tensors it writes, in the
    order of its plan) and `ins`; returns `outs`, from which TorchScript code must read the
    results for the call to be kept."""
    torch.ops.parir.launch(program, outs, ins)
    return outs


def script(obj):
    """torch.jit.script(obj) for a module or function that runs parir kernels, checked: a
    ParirError names the method where TorchScript dropped a kernel call (its output list was
    not read afterwards)."""
    scripted = torch.jit.script(obj)
    if isinstance(obj, torch.nn.Module):
        for path, sub in reversed(list(obj.named_modules())):  # innermost first
            ssub = scripted
            for part in path.split(".") if path else []:
                ssub = getattr(ssub, part)
            for name in ssub._c._method_names():
                _check_method(getattr(type(sub), name, None), getattr(ssub, name).graph,
                              f"{type(sub).__name__}.{name}")
    else:
        _check_method(obj, scripted.graph, getattr(obj, "__name__", "function"))
    return scripted


def count_launches(scripted):
    """The number of parir::launch calls in a scripted function or module's forward, with
    everything it calls inlined."""
    graph = (scripted.forward if isinstance(scripted, torch.jit.ScriptModule)
             else scripted).graph.copy()
    torch._C._jit_pass_inline(graph)
    return len(graph.findAllNodes("parir::launch"))


def _check_method(fn, graph, where):
    if inspect.isfunction(fn):
        written = _launch_calls_in_source(fn)
        kept = _launch_sites(graph)
        if kept < written:
            raise ParirError(
                f"{where}: TorchScript dropped {written - kept} of its {written} parir kernel "
                f"call(s), because the list of outputs was not read after the call. Write "
                f"`out, = parir.torchscript.launch(program, [out], [...])` and use `out`")
    inlined = graph.copy()
    torch._C._jit_pass_inline(inlined)
    for node in inlined.findAllNodes("parir::launch"):
        outs = node.inputsAt(1)
        if all(use.user.kind() == "parir::launch" for use in outs.uses()):
            raise ParirError(
                f"{where}: the outputs of a parir kernel call are never read from the list "
                f"passed to it (or returned by parir.torchscript.launch), so TorchScript drops "
                f"the call when it runs; read them from that list")


def _launch_calls_in_source(fn):
    """Calls of something named `launch` in a function's source: torch.ops.parir.launch and
    parir.torchscript.launch."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return 0
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and _name_of(n.func) == "launch")


def _name_of(func):
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _launch_sites(graph):
    """Kernel calls left in a (not inlined) scripted graph: the operator, and calls of
    `launch` above."""
    sites = len(graph.findAllNodes("parir::launch"))
    for node in graph.findAllNodes("prim::CallFunction"):
        callee = node.inputsAt(0).type()
        if str(callee).endswith("parir_torch.torchscript.launch"):
            sites += 1
    return sites
