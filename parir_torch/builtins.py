"""The functions a parir function may call, as plain Python.

Inside a compiled function these names are translated by the compiler. When a function runs
as plain Python (`seq=True`, or an undecorated call), these implementations run instead, on
Python numbers and on the 0-d tensors that indexing a tensor yields, with the same semantics
as the generated code.
"""

import builtins as _py
import math as _math
import struct as _struct

import torch as _torch

from .errors import ParirTypeError as _ParirTypeError


def label(name):
    """parir.label('N'): labels the next statement. A no-op when run as Python."""
    if not isinstance(name, str):
        raise _ParirTypeError(f"parir.label takes a string, got {type(name).__name__}")


class _GpuContext:
    """`with parir.gpu:` runs its body on the GPU when compiled; a no-op as Python."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return "parir.gpu"


gpu = _GpuContext()

inf = _math.inf


def _unary(torch_fn, math_fn):
    def fn(x):
        if isinstance(x, _torch.Tensor):
            return torch_fn(x if x.is_floating_point() else x.double())
        return math_fn(x)

    fn.__name__ = math_fn.__name__
    fn.__doc__ = f"parir.{math_fn.__name__}(x), elementwise on tensors."
    return fn


exp = _unary(_torch.exp, _math.exp)
log = _unary(_torch.log, _math.log)
sqrt = _unary(_torch.sqrt, _math.sqrt)
sin = _unary(_torch.sin, _math.sin)
cos = _unary(_torch.cos, _math.cos)
tanh = _unary(_torch.tanh, _math.tanh)


def abs(x):  # noqa: A001 - parir.abs mirrors Python's abs
    """parir.abs(x)."""
    return x.abs() if isinstance(x, _torch.Tensor) else _py.abs(x)


def atan2(y, x):
    """parir.atan2(y, x)."""
    if isinstance(y, _torch.Tensor) or isinstance(x, _torch.Tensor):
        y, x = _as_tensors(y, x)
        return _torch.atan2(y.double() if not y.is_floating_point() else y,
                            x.double() if not x.is_floating_point() else x)
    return _math.atan2(y, x)


def _as_tensors(a, b):
    ref = a if isinstance(a, _torch.Tensor) else b
    if not isinstance(a, _torch.Tensor):
        a = _torch.as_tensor(a, device=ref.device)
    if not isinstance(b, _torch.Tensor):
        b = _torch.as_tensor(b, device=ref.device)
    return a, b


def min(a, b=None, axis=None):  # noqa: A001
    """parir.min(a, b): the smaller value; NaN if either is NaN (as torch.minimum).
    parir.min(e[, axis=k]): the minimum of a slice expression, over all its dimensions or
    over dimension k."""
    if b is None:
        return _torch.amin(a, dim=axis) if axis is not None else a.min()
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _torch.minimum(*_as_tensors(a, b))
    if a != a:
        return a
    if b != b:
        return b
    return b if b < a else a


def max(a, b=None, axis=None):  # noqa: A001
    """parir.max(a, b): the larger value; NaN if either is NaN (as torch.maximum).
    parir.max(e[, axis=k]): the maximum of a slice expression, over all its dimensions or
    over dimension k."""
    if b is None:
        return _torch.amax(a, dim=axis) if axis is not None else a.max()
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _torch.maximum(*_as_tensors(a, b))
    if a != a:
        return a
    if b != b:
        return b
    return b if b > a else a


def sum(e, axis=None):  # noqa: A001
    """parir.sum(e[, axis=k]): the sum of a slice expression, over all its dimensions or over
    dimension k."""
    return e.sum() if axis is None else e.sum(dim=axis)


def prod(e, axis=None):
    """parir.prod(e[, axis=k]): the product of a slice expression."""
    return e.prod() if axis is None else e.prod(dim=axis)


# ----- casts: parir.float32(x), parir.int64(x), ... -----------------------------------------

def _int_cast(bits, signed, torch_dtype):
    def cast(x):
        if isinstance(x, _torch.Tensor):
            return x.to(torch_dtype) if torch_dtype is not None else x.long()
        v = _py.int(x) % (1 << bits)
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    return cast


def _float_cast(fmt, torch_dtype):
    def cast(x):
        if isinstance(x, _torch.Tensor):
            return x.to(torch_dtype)
        return _struct.unpack(fmt, _struct.pack(fmt, _py.float(x)))[0] if fmt else _py.float(x)

    return cast


int8 = _int_cast(8, True, _torch.int8)
int16 = _int_cast(16, True, _torch.int16)
int32 = _int_cast(32, True, _torch.int32)
int64 = _int_cast(64, True, _torch.int64)
uint8 = _int_cast(8, False, _torch.uint8)
uint16 = _int_cast(16, False, _torch.uint16)
uint32 = _int_cast(32, False, _torch.uint32)
uint64 = _int_cast(64, False, _torch.uint64)
float16 = _float_cast("e", _torch.float16)
bfloat16 = _float_cast(None, _torch.bfloat16)
float32 = _float_cast("f", _torch.float32)
float64 = _float_cast(None, _torch.float64)


def bool_(x):
    """parir.bool(x): truthiness, as a bool."""
    return x.bool() if isinstance(x, _torch.Tensor) else _py.bool(x)


for _name, _fn in [("int8", int8), ("int16", int16), ("int32", int32), ("int64", int64),
                   ("uint8", uint8), ("uint16", uint16), ("uint32", uint32), ("uint64", uint64),
                   ("float16", float16), ("bfloat16", bfloat16), ("float32", float32),
                   ("float64", float64)]:
    _fn.__name__ = _name
    _fn.__doc__ = f"parir.{_name}(x): converts x to {_name}."

# The names the compiler recognizes when a parir function refers to them (besides `parir.X`).
COMPILER_NAMES = {
    "label": label, "gpu": gpu, "inf": inf, "exp": exp, "log": log, "sqrt": sqrt, "sin": sin,
    "cos": cos, "tanh": tanh, "abs": abs, "atan2": atan2, "min": min, "max": max, "sum": sum,
    "prod": prod,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
    "uint16": uint16, "uint32": uint32, "uint64": uint64, "float16": float16,
    "bfloat16": bfloat16, "float32": float32, "float64": float64, "bool": bool_,
}
