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
  * None (an optional tensor not given, a parameter left at a default of None): the code is
    specialized on it, `x is None` holds, and the code under it that reads x is left out.

`convert` turns every argument into one of the kinds below (torch tensors, Python numbers,
NumpyScalar, dicts of those). Each kind is one function: `kind(a)` is the argument's
specialization key, and `kind(a, name, require_cuda)` is (key, description), the description
being the compiler's view of it (a _C.ArgValue).

The common call (CUDA tensors and Python numbers) takes a short path: KIND_BY_TYPE gives the
kind of each raw argument by its type, and the compiled program's C++ launcher picks the
tensors out of the argument tuple. Every other call first converts its arguments, once.
"""

import torch

from . import _C
from ._C import ParirError
from .errors import ParirTypeError, ParirValueError
from .types import TORCH_DTYPES

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class NeedsConversion(Exception):
    """Raised on the short path for an argument that convert() must see first."""


class NumpyScalar:
    """A NumPy scalar (numpy.float32(1.5)): a value with a dtype of its own."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype, value):
        self.dtype, self.value = dtype, value


# ----- the kinds ---------------------------------------------------------------------------

def _dtype_name(name, a):
    """The compiler's name of the tensor's dtype; an error for dtypes parir does not support."""
    if a.dtype not in TORCH_DTYPES:
        raise ParirTypeError(f"argument '{name}' has dtype {a.dtype}, which parir does not "
                             f"support; supported: {', '.join(str(d) for d in TORCH_DTYPES)}")
    return TORCH_DTYPES[a.dtype]


def _cuda_tensor(a, name=None, require_cuda=True):
    """A CUDA tensor with at least one dimension, used in place: specialized on its dtype,
    shape and strides. The short path looks up every tensor as this kind, so other tensors
    raise NeedsConversion (and are keyed as the kind that _kind_of finds)."""
    shape = a.shape
    if not shape or not a.is_cuda:
        raise NeedsConversion
    key = (a.dtype, shape, a.stride())
    if name is None:
        return key
    return key, _C.ArgValue.tensor(_dtype_name(name, a), list(shape), list(a.stride()))


def _host_tensor(a, name=None, require_cuda=True):
    """A tensor with at least one dimension elsewhere (the CPU; meta when only generating
    code): copied to a contiguous GPU buffer for the call, so its strides do not matter.
    Without require_cuda, code is generated for the strides it has."""
    key = (a.dtype, a.shape, "host")
    if name is None:
        return key
    dtype = _dtype_name(name, a)
    strides = torch.empty(a.shape, device="meta").stride() if require_cuda else a.stride()
    return key, _C.ArgValue.tensor(dtype, list(a.shape), list(strides))


def _zero_dim_tensor(a, name=None, require_cuda=True):
    """A 0-d tensor (on any device): a scalar of its dtype, specialized on its value."""
    if name is None:
        return (a.dtype, a.item())
    dtype = _dtype_name(name, a)
    value = a.item()
    return (a.dtype, value), _C.ArgValue.typed_scalar(dtype, value)


def _python_number(a, name=None, require_cuda=True):
    """A Python int, float or bool: weakly typed, specialized on its value."""
    t = type(a)
    key = (t, a)
    if name is None:
        return key
    if t is bool:
        return key, _C.ArgValue.bool(a)
    if t is int:
        if not _INT64_MIN <= a <= _INT64_MAX:
            raise ParirValueError(f"argument '{name}' = {a} does not fit in a 64-bit integer"
                                  + (f"; pass numpy.uint64({a}) for an unsigned one"
                                     if 0 <= a < 1 << 64 else ""))
        return key, _C.ArgValue.int(a)
    return key, _C.ArgValue.float(a)


def _numpy_scalar(a, name=None, require_cuda=True):
    """A NumpyScalar: a scalar of its dtype, specialized on its value."""
    key = ("np", a.dtype, a.value)
    if name is None:
        return key
    return key, _C.ArgValue.typed_scalar(TORCH_DTYPES[a.dtype], a.value)


_NONE_KEY = ("None",)


def _none(a, name=None, require_cuda=True):
    """None: specialized on (`x is None` is a constant of the code)."""
    if name is None:
        return _NONE_KEY
    return _NONE_KEY, _C.ArgValue.none()


def _dict(a, name=None, require_cuda=True):
    """A dict of converted arguments: each entry an argument of its own."""
    if name is None:
        return ("dict", tuple(sorted((k, key(v)) for k, v in a.items())))
    entries = {}
    for k, v in a.items():
        entry_name = f"{name}['{k}']"
        entries[k] = _kind_of(v, entry_name)(v, entry_name, require_cuda)
    dict_key = ("dict", tuple(sorted((k, e[0]) for k, e in entries.items())))
    return dict_key, _C.ArgValue.dict(list(entries), [e[1] for e in entries.values()])


# The kind of a raw argument by its exact type, on the short path: one dict lookup. Every other
# type raises KeyError, and the call converts its arguments; a tensor subclass (nn.Parameter,
# FakeTensor) joins the table then (convert), so that its next call takes the short path.
KIND_BY_TYPE = {int: _python_number, float: _python_number, bool: _python_number,
                type(None): _none, torch.Tensor: _cuda_tensor}
# The same tensor types in C++, for _C.call_key (the arguments' part of a cached call's key).
_C.register_key_tensor_type(torch.Tensor)

_KIND_OF_CONVERTED = {int: _python_number, float: _python_number, bool: _python_number,
                      NumpyScalar: _numpy_scalar, dict: _dict, type(None): _none}


def _kind_of(a, name=None):
    """The kind of a converted argument (`name` names it in the error for any other value)."""
    if isinstance(a, torch.Tensor):
        if not a.shape:
            return _zero_dim_tensor
        return _cuda_tensor if a.is_cuda else _host_tensor
    kind = _KIND_OF_CONVERTED.get(type(a))
    if kind is None:
        what = "an argument" if name is None else f"argument '{name}'"
        raise ParirTypeError(f"{what} is a {type(a).__qualname__}, which parir functions do "
                             f"not take")
    return kind


def key(a):
    """The specialization key of a converted argument (see convert)."""
    return _kind_of(a)(a)


def describe(name, a, require_cuda=True):
    """The compiler's view of a converted argument: a _C.ArgValue."""
    return _kind_of(a, name)(a, name, require_cuda)[1]


def describe_change(name, old, new):
    """What changed between two keys of argument `name` (of any kind: those above, and the keys
    of traced calls, torch_ops._traced_key), as a phrase for the log of a recompilation."""
    if _is_dict_key(old) and _is_dict_key(new):
        a, b = dict(old[1]), dict(new[1])
        if set(a) != set(b):
            return f"{name}'s keys changed {sorted(a)} → {sorted(b)}"
        return "; ".join(describe_change(f"{name}['{k}']", a[k], b[k]) for k in a if a[k] != b[k])
    old_value, new_value = _scalar_of(old), _scalar_of(new)
    if old_value is not None and new_value is not None:
        return (f"{name} changed {old_value!r} → {new_value!r}; scalar values are compiled into "
                f"the code: pass {name} as a shape-(1,) tensor, which the kernels read from "
                f"memory, to compile once for all values")
    if _is_tensor_key(old) and _is_tensor_key(new):
        parts = [f"{what} {a} → {b}" for what, a, b in
                 zip(("dtype", "shape", "strides", "device"), _tensor_fields(old),
                     _tensor_fields(new)) if a != b]
        return f"{name}'s " + ", ".join(parts)
    return f"{name} changed from {_kind_name(old)} to {_kind_name(new)}"


def _is_dict_key(k):
    return isinstance(k, tuple) and len(k) == 2 and k[0] == "dict"


def _scalar_of(k):
    """The value of a scalar's key, as text; None for other keys. Python numbers are keyed
    (type, value), 0-d tensors (dtype, value), NumPy scalars ("np", dtype, value)."""
    if isinstance(k, tuple) and len(k) == 2 and k[0] in (int, float, bool):
        return k[1]
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], torch.dtype):
        return _TypedValue(k[0], k[1])
    if isinstance(k, tuple) and len(k) == 3 and k[0] == "np":
        return _TypedValue(k[1], k[2])
    return None


class _TypedValue:
    """A scalar with a dtype, as the log shows it: int16(3)."""

    def __init__(self, dtype, value):
        self.dtype, self.value = dtype, value

    def __repr__(self):
        return f"{str(self.dtype).replace('torch.', '')}({self.value!r})"


def _is_tensor_key(k):
    return isinstance(k, tuple) and len(k) >= 3 and isinstance(k[0], torch.dtype)


def _tensor_fields(k):
    """(dtype, shape, strides, where) of a tensor's key: a CUDA tensor's (dtype, shape,
    strides), a host tensor's (dtype, shape, "host"), a traced one's (dtype, shape, strides,
    device type)."""
    dtype, shape = str(k[0]).replace("torch.", ""), tuple(k[1])
    if k[2] == "host":
        return dtype, shape, None, "cpu"
    return dtype, shape, tuple(k[2]), k[3] if len(k) > 3 else "cuda"


def _kind_name(k):
    if k == _NONE_KEY:
        return "None"
    if _is_dict_key(k):
        return "a dict"
    if _is_tensor_key(k):
        return f"a {_tensor_fields(k)[3]} tensor"
    if _scalar_of(k) is not None:
        return "a scalar"
    return "another kind"


# ----- conversion --------------------------------------------------------------------------

def convert(name, a, in_dict=None):
    """The argument as the compiler and the launch see it: torch tensors for every kind of
    array (over the same memory where it is on the GPU), dicts converted entry by entry."""
    where = f"argument '{name}'" if in_dict is None else f"entry {in_dict!r} of argument '{name}'"
    if isinstance(a, torch.Tensor):
        if a.layout != torch.strided or a.is_nested:
            raise _layout_error(where, a)
        if a.is_neg():
            raise ParirTypeError(f"{where} is a negated view (its memory holds the negations of "
                                 f"its values, as z.conj().imag gives); pass "
                                 f"{name}.resolve_neg()")
        if type(a) not in KIND_BY_TYPE:
            KIND_BY_TYPE[type(a)] = _cuda_tensor
            _C.register_key_tensor_type(type(a))
        return a
    t = type(a)
    # A NumpyScalar is converted already.
    if t is int or t is float or t is bool or t is NumpyScalar or a is None:
        return a
    if isinstance(a, dict):
        if in_dict is not None:
            raise ParirTypeError(f"{where} is a dict; dict arguments hold scalars and tensors, "
                                 f"not other dicts")
        out = {}
        for k, v in a.items():
            if not isinstance(k, str):
                raise ParirTypeError(f"argument '{name}' is a dict with the key {k!r}; parir "
                                     f"dict arguments need string keys")
            out[k] = convert(name, v, in_dict=k)
        return out
    if isinstance(a, (int, float)):  # int and float subclasses (numpy.float64 is one)
        if type(a).__module__ == "numpy":
            return _to_numpy_scalar(where, a)
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
            return _to_numpy_scalar(where, arr[()])
        try:
            return torch.from_numpy(arr)
        except Exception as e:
            raise ParirError(f"{where} is an array torch cannot use: {e}") from None
    if type(a).__module__ == "numpy":  # numpy.bool_, numpy.int32, ...: NumPy scalars
        return _to_numpy_scalar(where, a)
    raise ParirTypeError(f"{where} is a {type(a).__module__}.{type(a).__qualname__}; parir "
                         f"functions take tensors (torch, NumPy, CuPy, DLPack), ints, floats, "
                         f"bools, None and dicts of those")


def _layout_error(where, a):
    what = "a nested tensor" if a.is_nested else f"a tensor of layout {a.layout}"
    return ParirTypeError(f"{where} is {what}; parir kernels index dense tensors through their "
                          f"strides: pass a dense one (x.to_dense())")


def check_layouts(names, args):
    """Raises the error of convert() for the first sparse or nested tensor of a call's raw
    arguments; the short path of a call does not look at layouts, and this explains the
    failure of a launch that met one."""
    for name, a in zip(names, args):
        entries = a.items() if isinstance(a, dict) else [(None, a)]
        for k, v in entries:
            if isinstance(v, torch.Tensor) and (v.layout != torch.strided or v.is_nested):
                where = f"argument '{name}'" if k is None else f"entry {k!r} of argument '{name}'"
                raise _layout_error(where, v)


def _is_numpy(a):
    return type(a).__module__ == "numpy" and type(a).__name__ == "ndarray"


def _to_numpy_scalar(where, a):
    try:
        t = torch.from_numpy(__import__("numpy").asarray(a))
    except TypeError:  # np.longdouble, np.datetime64, np.str_: no torch dtype
        t = None
    if t is None or t.dtype not in TORCH_DTYPES:
        raise ParirTypeError(f"{where} has NumPy type {type(a).__name__}, which parir does not "
                             f"support")
    return NumpyScalar(t.dtype, t.item())


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
