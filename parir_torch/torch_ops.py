"""Calls of jit functions inside PyTorch's tracers: torch.compile and torch.export.

A traced call becomes one `torch.ops.parir.launch(program, outs, ins)` node, where `program` is
the generated CUDA source with its launch plan: the compiled artifact runs the operator and
never the Python wrapper, and a process that reloads the artifact from PyTorch's caches rebuilds
the kernels from that text.

How a call gets there:

* Dynamo (torch.compile, strict torch.export). JitFunction.__call__ hands the call to
  call_in_graph, which Dynamo traces: it turns the options into constants, dict arguments into
  their keys (constants) and values, and calls the function's graph entry, registered with
  torch.compiler.allow_in_graph, so Dynamo records it as one node instead of tracing into it.
  The entry runs whenever that graph is traced: by Dynamo on fake tensors, by AOTAutograd on
  functional tensors. Each time it specializes the function on the tensors' dtypes, shapes and
  strides and on the scalar arguments, all made concrete (symbolic sizes of `dynamic=True` are
  specialized with guards, so a new shape recompiles the graph), generates the code, and emits
  the operator.
* Other tracers (non-strict torch.export, make_fx, a FakeTensorMode) call the jit function with
  fake or functional tensors; the eager path compiles from their shapes as usual and its C++
  launcher passes such tensors to the operator through the dispatcher (runtime/op.h).

Outputs: the operator mutates `outs` in place (`Tensor(a!)[]`). Functionalization turns it into
auto_functionalized_v2, and Inductor's reinplacing runs it on the buffers themselves: tensors
allocated inside the compiled region cost no copies.
"""

import torch

from . import _C, arguments
from ._C import ParirError
from .options import as_constants, check_supported, from_constants, options_key


def graph_entry(fn):
    """The graph node of calls of jit function `fn` traced by Dynamo: `entry(options_state,
    debug, dict_keys, *flat_args)`, with only constants and tensors as arguments."""

    def entry(state, debug, dict_keys, *flat_args):
        launch_traced(fn, _unflatten(dict_keys, flat_args), options_from_state(state), debug)

    entry.__name__ = entry.__qualname__ = f"parir_{fn.fn.__name__}"
    return torch.compiler.allow_in_graph(entry)


def call_in_graph(fn, args, opts, debug):
    """A call of `fn` while Dynamo traces (Dynamo traces this function too). Dict arguments
    travel as their keys (constants) and values."""
    dict_keys = tuple([tuple(a) if isinstance(a, dict) else None for a in args])
    flat = [v for a in args for v in (a.values() if isinstance(a, dict) else (a,))]
    fn._graph_entry(options_state(opts), debug, dict_keys, *flat)


def _unflatten(dict_keys, flat_args):
    args, i = [], 0
    for keys in dict_keys:
        if keys is None:
            args.append(flat_args[i])
            i += 1
        else:
            args.append(dict(zip(keys, flat_args[i:i + len(keys)])))
            i += len(keys)
    return tuple(args)


def options_state(opts):
    """The options as nested tuples of constants, which a graph can carry."""
    check_supported(opts)
    return as_constants(opts)


def options_from_state(state):
    return from_constants(_concrete(state))  # a thread count may be a traced size


def launch_traced(fn, args, opts, debug):
    """Specializes `fn` on traced arguments and emits torch.ops.parir.launch on them."""
    if len(args) != len(fn.ir.params):
        fn._compile(args, opts, debug, None)  # raises the error of a wrong argument count
    args = tuple(_traced_argument(n, _concrete(a)) for n, a in zip(fn.ir.params, args))
    # The options just before the arguments, as in the keys of eager calls (recompiles.py).
    key = ("traced", debug, options_key(opts), *[_traced_key(a) for a in args])
    compiled = fn._cache.get(key)
    if compiled is None:
        compiled = fn._compile(args, opts, debug, key)
        _load_before_use(compiled.program.one_line_source, args)
    outs, ins = arguments.tensors_by_role(compiled.program, fn.ir.params, args)
    torch.ops.parir.launch(compiled.program.one_line_source, outs, ins)


def _concrete(a):
    """Symbolic scalars as Python values (in tuples too), and a tensor's symbolic sizes and
    strides specialized, each with a guard: parir code is specialized on them."""
    if isinstance(a, tuple):
        return tuple(_concrete(x) for x in a)
    if isinstance(a, dict):
        return {k: _concrete(v) for k, v in a.items()}
    if isinstance(a, torch.SymInt):
        return int(a)
    if isinstance(a, torch.SymFloat):
        return float(a)
    if isinstance(a, torch.SymBool):
        return bool(a)
    if isinstance(a, torch.Tensor):
        for s in (*a.shape, *a.stride()):
            int(s)
    return a


def _traced_argument(name, a, in_dict=None):
    """A traced argument, checked: tensors must be CUDA tensors with at least one dimension
    (a 0-d tensor is specialized on its value, which a tracer does not know)."""
    if isinstance(a, dict):
        return {k: _traced_argument(name, v, k) for k, v in a.items()}
    if not isinstance(a, torch.Tensor):
        return a
    where = f"argument '{name}'" if in_dict is None else f"entry {in_dict!r} of argument '{name}'"
    if a.dim() == 0:
        raise ParirError(f"{where} is a 0-d tensor, whose value parir specializes on; under "
                         f"torch.compile and torch.export pass a Python number or a shape-(1,) "
                         f"tensor instead")
    if a.device.type != "cuda":
        raise ParirError(f"{where} is a tensor on {a.device}; under torch.compile and "
                         f"torch.export parir kernels take CUDA tensors: pass {name}.cuda()")
    return a


def _traced_key(a):
    if isinstance(a, dict):
        return ("dict", tuple((k, _traced_key(v)) for k, v in a.items()))
    if isinstance(a, torch.Tensor):
        return (a.dtype, tuple(int(s) for s in a.shape), tuple(int(s) for s in a.stride()),
                a.device.type)
    return (type(a), a)


def _load_before_use(source, args):
    """Compiles and loads the kernels while tracing, when the GPU they will run on is here, so
    that the compiled code's first run (which a CUDA graph capture may follow) finds them."""
    values = [v for a in args for v in (a.values() if isinstance(a, dict) else (a,))]
    devices = {v.device for v in values if isinstance(v, torch.Tensor) and v.device.type == "cuda"}
    if len(devices) != 1 or not torch.cuda.is_available():
        return
    index = devices.pop().index
    index = torch.cuda.current_device() if index is None else index
    if index < torch.cuda.device_count() and not torch.cuda.is_current_stream_capturing():
        _C.prepare_source(source, index)

