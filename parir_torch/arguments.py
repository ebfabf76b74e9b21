"""The arguments of a call: what the compiler specializes on, and how each reaches the kernels.

  * Python int, float and bool: scalars the code is specialized on, weakly typed (README.md,
    "Types"). A 0-d tensor or a NumPy scalar is a scalar of its own dtype, specialized on its
    value (reading a 0-d CUDA tensor's value waits for the GPU; a shape-(1,) tensor passes a
    value that the code reads on the GPU, without specializing on it).
  * CUDA tensors are used in place: their dtype, shape and strides are specialized on.
  * Anything with `__cuda_array_interface__` (CuPy, Numba, ...) or `__dlpack__` on the GPU is
    wrapped as a torch tensor over the same memory, without copying.
  * CPU tensors, NumPy arrays and anything with `__array_interface__` are copied to the GPU for
    the call (memory from PyTorch's caching allocator), and copied back after it when the code
    writes them.
  * A dict with string keys passes each entry as an argument of its own: `d['k']` in the
    function is the entry's value; the compiler names it `d.k`.

The common call (CUDA tensors and Python numbers) takes a short path: `fast_key` builds the
specialization key and the compiled program's C++ launcher picks the tensors out of the
argument tuple. Every other call first converts its arguments (`convert`), once.
"""

import torch

from . import _C
from ._C import ParirError
from .types import TORCH_DTYPES

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class NeedsConversion(Exception):
    """Raised by fast_key for an argument that convert() must turn into a torch tensor."""


def fast_key(a):
    """The specialization key of a CUDA tensor or a Python number; NeedsConversion for any
    other argument. This runs for every argument of every call: keep it short."""
    if isinstance(a, torch.Tensor):
        shape = a.shape
        if shape:
            if a.is_cuda:
                return (a.dtype, shape, a.stride())
            raise NeedsConversion
        return _scalar_key(a)
    t = type(a)
    if t is int or t is float or t is bool:
        return (t, a)
    raise NeedsConversion


def _scalar_key(a):
    # A 0-d tensor: its dtype and value (on any device).
    return (a.dtype, a.item())


def key(a):
    """The specialization key of a converted argument (see convert)."""
    if isinstance(a, dict):
        return ("dict", tuple(sorted((k, key(v)) for k, v in a.items())))
    if isinstance(a, torch.Tensor):
        if not a.shape:
            return _scalar_key(a)
        # CPU tensors are copied to contiguous GPU buffers: their strides do not matter.
        return (a.dtype, a.shape, a.stride()) if a.is_cuda else (a.dtype, a.shape, "host")
    if isinstance(a, _NumpyScalar):
        return ("np", a.dtype, a.value)
    return (type(a), a)


class _NumpyScalar:
    """A NumPy scalar (numpy.float32(1.5)): a value with a dtype of its own."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype, value):
        self.dtype, self.value = dtype, value


def convert(name, a, in_dict=None):
    """The argument as the compiler and the launch see it: torch tensors for every kind of
    array (over the same memory where it is on the GPU), dicts converted entry by entry."""
    where = f"argument '{name}'" if in_dict is None else f"entry {in_dict!r} of argument '{name}'"
    if isinstance(a, torch.Tensor):
        return a
    t = type(a)
    if t is int or t is float or t is bool:
        return a
    if isinstance(a, dict):
        if in_dict is not None:
            raise ParirError(f"{where} is a dict; dict arguments hold scalars and tensors, not "
                             f"other dicts")
        out = {}
        for k, v in a.items():
            if not isinstance(k, str):
                raise ParirError(f"argument '{name}' is a dict with the key {k!r}; parir dict "
                                 f"arguments need string keys")
            out[k] = convert(name, v, in_dict=k)
        return out
    if isinstance(a, (int, float)):  # int and float subclasses (numpy.float64 is one)
        if type(a).__module__ == "numpy":
            return _numpy_scalar(where, a)
        return float(a) if isinstance(a, float) else int(a)
    if hasattr(a, "__cuda_array_interface__"):
        try:
            return torch.as_tensor(a, device="cuda")
        except Exception as e:
            raise ParirError(f"{where} has __cuda_array_interface__ but torch cannot use it: "
                             f"{e}") from None
    if hasattr(a, "__dlpack__") and not _is_numpy(a):
        try:
            return torch.from_dlpack(a)
        except Exception as e:
            raise ParirError(f"{where} has __dlpack__ but torch cannot use it: {e}") from None
    if _is_numpy(a) or hasattr(a, "__array_interface__"):
        import numpy as np

        arr = np.asarray(a)
        if arr.shape == ():
            return _numpy_scalar(where, arr[()])
        try:
            return torch.from_numpy(arr)
        except Exception as e:
            raise ParirError(f"{where} is an array torch cannot use: {e}") from None
    if type(a).__module__ == "numpy":  # numpy.bool_, numpy.int32, ...: NumPy scalars
        return _numpy_scalar(where, a)
    raise ParirError(f"{where} is a {type(a).__module__}.{type(a).__qualname__}; parir "
                     f"functions take tensors (torch, NumPy, CuPy, DLPack), ints, floats, bools "
                     f"and dicts of those")


def _is_numpy(a):
    return type(a).__module__ == "numpy" and type(a).__name__ == "ndarray"


def _numpy_scalar(where, a):
    t = torch.from_numpy(__import__("numpy").asarray(a))
    if t.dtype not in TORCH_DTYPES:
        raise ParirError(f"{where} has NumPy type {type(a).__name__}, which parir does not "
                         f"support")
    return _NumpyScalar(t.dtype, t.item())


def describe(name, a, require_cuda=True):
    """The compiler's view of a converted argument: a _C.ArgValue."""
    if isinstance(a, dict):
        keys = list(a)
        return _C.ArgValue.dict(keys, [describe(f"{name}['{k}']", a[k], require_cuda)
                                       for k in keys])
    if isinstance(a, torch.Tensor):
        if a.dtype not in TORCH_DTYPES:
            raise ParirError(f"argument '{name}' has dtype {a.dtype}, which parir does not "
                             f"support; supported: {', '.join(str(d) for d in TORCH_DTYPES)}")
        if not a.shape:
            return _C.ArgValue.typed_scalar(TORCH_DTYPES[a.dtype], a.item())
        if require_cuda and not a.is_cuda:
            # Copied to a contiguous GPU buffer for the call.
            return _C.ArgValue.tensor(TORCH_DTYPES[a.dtype], list(a.shape),
                                      list(torch.empty(a.shape, device="meta").stride()))
        return _C.ArgValue.tensor(TORCH_DTYPES[a.dtype], list(a.shape), list(a.stride()))
    if isinstance(a, _NumpyScalar):
        return _C.ArgValue.typed_scalar(TORCH_DTYPES[a.dtype], a.value)
    if isinstance(a, bool):
        return _C.ArgValue.bool(a)
    if isinstance(a, int):
        if not _INT64_MIN <= a <= _INT64_MAX:
            raise ParirError(f"argument '{name}' = {a} does not fit in a 64-bit integer")
        return _C.ArgValue.int(a)
    if isinstance(a, float):
        return _C.ArgValue.float(a)
    raise ParirError(f"argument '{name}' is a {type(a).__qualname__}, which parir functions "
                     f"do not take")


def _flat(names, args):
    """{compiler name: (position, dict key or None, value)} for every tensor argument."""
    out = {}
    for i, (name, a) in enumerate(zip(names, args)):
        if isinstance(a, dict):
            for k, v in a.items():
                out[f"{name}.{k}"] = (i, k, v)
        else:
            out[name] = (i, None, a)
    return out


def make_launcher(program, names, args):
    """A function launching `program` on a call's arguments of the kinds of `args` (converted
    arguments, or raw ones when every tensor is a CUDA tensor)."""
    flat = _flat(names, args)
    where = [flat[p] for p, _ in program.params]
    if all(k is None and isinstance(v, torch.Tensor) and v.is_cuda for _, k, v in where):
        # The short path: the C++ launcher picks the tensors out of the argument tuple.
        return program.bind([i for (i, _, _), (_, w) in zip(where, program.params) if w],
                            [i for (i, _, _), (_, w) in zip(where, program.params) if not w])
    access = [(i, k, w) for (i, k, _), (_, w) in zip(where, program.params)]
    return _ConvertedLaunch(program, access)


def tensors_by_role(program, names, args):
    """(outs, ins): the tensors of `args` (converted arguments) that `program` writes and reads,
    in the order of its plan; what torch.ops.parir.launch takes."""
    flat = _flat(names, args)
    outs, ins = [], []
    for p, written in program.params:
        (outs if written else ins).append(flat[p][2])
    return outs, ins


class _ConvertedLaunch:
    """The launcher of calls whose arguments need converting (see _launch_converted). Stamps
    each launch like the C++ launcher, for the specialization cache's eviction order."""

    __slots__ = ("program", "access", "last_used")

    def __init__(self, program, access):
        self.program, self.access, self.last_used = program, access, 0

    def __call__(self, call_args):
        self.last_used = _C.next_launch_stamp()
        _launch_converted(self.program, self.access, call_args)


def _launch_converted(program, access, args):
    """Launches on converted arguments: GPU tensors as they are, CPU tensors through GPU copies
    that are copied back when written."""
    tensors = [args[i] if k is None else args[i][k] for i, k, _ in access]
    device = next((t.device for t in tensors if t.is_cuda), None)
    if device is None:
        if not torch.cuda.is_available():
            raise ParirError(f"{program.function}(): its tensors are on the CPU and parir copies "
                             f"them to a GPU for the call, but PyTorch finds no CUDA GPU here")
        device = torch.device("cuda", torch.cuda.current_device())
    outs, ins, copies = [], [], []
    for t, (_, _, written), (name, _) in zip(tensors, access, program.params):
        if not t.is_cuda and t.device.type != "cpu":
            raise ParirError(f"{program.function}(): argument '{name}' is a tensor on the "
                             f"{t.device.type} device; parir runs on CUDA tensors, and copies "
                             f"CPU tensors to the GPU for the call")
        if not t.is_cuda:
            g = torch.empty(t.shape, dtype=t.dtype, device=device)
            g.copy_(t)
            if written:
                copies.append((t, g))
            t = g
        (outs if written else ins).append(t)
    program.launch(outs, ins)
    for host, gpu in copies:
        host.copy_(gpu)  # waits for the kernels: the caller sees the results on return
