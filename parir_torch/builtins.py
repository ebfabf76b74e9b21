"""The functions a parir function may call, as plain Python.

Inside a compiled function these names are translated by the compiler. When a function runs
as plain Python (`seq=True`, or an undecorated call), these implementations run instead, on
Python numbers and on the 0-d tensors that element reads yield, with the same semantics and
types as the generated code: a cast gives a 0-d tensor of its dtype, also of a Python number.
"""

import builtins as _py
import math as _math

import torch as _torch

from .errors import ParirTypeError as _ParirTypeError
from .plain_python_ops import promote as _promote


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
    """parir.abs(x). Of a bool, an int64 (as True + True is 2)."""
    if isinstance(x, _torch.Tensor):
        return (x.long() if x.dtype == _torch.bool else x).abs()
    return _py.abs(x)


def atan2(y, x):
    """parir.atan2(y, x), computed in the promoted type of y and x (float64 for integers)."""
    if isinstance(y, _torch.Tensor) or isinstance(x, _torch.Tensor):
        dtype, _ = _promote(y, x)
        return _torch.atan2(*_as_tensors(y, x, dtype if dtype.is_floating_point
                                         else _torch.float64))
    return _math.atan2(y, x)


def _as_tensors(a, b, dtype):
    """a and b as tensors of `dtype`, a Python number on the device of the tensor beside it."""
    device = (a if isinstance(a, _torch.Tensor) else b).device
    return tuple(v.to(dtype) if isinstance(v, _torch.Tensor)
                 else _torch.tensor(v, dtype=dtype, device=device) for v in (a, b))


def min(a, b=None, axis=None):  # noqa: A001
    """parir.min(a, b): the smaller value, in the promoted type of a and b; NaN if either is NaN
    (as torch.minimum). parir.min(e[, axis=k]): the minimum of a slice expression, over all its
    dimensions or over dimension k."""
    if b is None:
        return _torch.amin(a, dim=axis) if axis is not None else a.min()
    if axis is not None:
        raise _ParirTypeError("parir.min takes two values, or one slice expression and axis=")
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _torch.minimum(*_as_tensors(a, b, _promote(a, b)[0]))
    if a != a:
        return a
    if b != b:
        return b
    return b if b < a else a


def max(a, b=None, axis=None):  # noqa: A001
    """parir.max(a, b): the larger value, in the promoted type of a and b; NaN if either is NaN
    (as torch.maximum). parir.max(e[, axis=k]): the maximum of a slice expression, over all its
    dimensions or over dimension k."""
    if b is None:
        return _torch.amax(a, dim=axis) if axis is not None else a.max()
    if axis is not None:
        raise _ParirTypeError("parir.max takes two values, or one slice expression and axis=")
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _torch.maximum(*_as_tensors(a, b, _promote(a, b)[0]))
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
#
# A cast gives a value of its dtype, a 0-d tensor, also of a Python number: in the compiled code
# parir.int8(i + 100) is an int8 that wraps to -56 for i = 100, and arithmetic on it is int8
# arithmetic (README.md, "Types").

def _int_cast(bits, signed, torch_dtype):
    def cast(x):
        if isinstance(x, _torch.Tensor):
            return x.to(torch_dtype)
        if isinstance(x, float) and not _math.isfinite(x):
            # Undefined in C; torch's conversion gives something rather than an error.
            return _torch.tensor(x, dtype=_torch.float64).to(torch_dtype)
        # An integer wraps to the width, as C converts it; a float is truncated toward zero
        # first (beyond the type's range C leaves it undefined, and it wraps here too).
        v = _py.int(x) % (1 << bits)
        return _torch.tensor(v - (1 << bits) if signed and v >= 1 << (bits - 1) else v,
                             dtype=torch_dtype)

    return cast


def _float_cast(torch_dtype):
    def cast(x):
        if isinstance(x, _torch.Tensor):
            return x.to(torch_dtype)
        # float('-inf') is Python (the compiler asks for parir.inf): read as Python reads it.
        return _torch.tensor(_py.float(x) if isinstance(x, str) else x, dtype=torch_dtype)

    return cast


int8 = _int_cast(8, True, _torch.int8)
int16 = _int_cast(16, True, _torch.int16)
int32 = _int_cast(32, True, _torch.int32)
int64 = _int_cast(64, True, _torch.int64)
uint8 = _int_cast(8, False, _torch.uint8)
uint16 = _int_cast(16, False, _torch.uint16)
uint32 = _int_cast(32, False, _torch.uint32)
uint64 = _int_cast(64, False, _torch.uint64)
float16 = _float_cast(_torch.float16)
bfloat16 = _float_cast(_torch.bfloat16)
float32 = _float_cast(_torch.float32)
float64 = _float_cast(_torch.float64)


def bool_(x):
    """parir.bool(x): truthiness, as a bool value (a 0-d bool tensor)."""
    return x.bool() if isinstance(x, _torch.Tensor) else _torch.tensor(_py.bool(x))


for _name, _fn in [("int8", int8), ("int16", int16), ("int32", int32), ("int64", int64),
                   ("uint8", uint8), ("uint16", uint16), ("uint32", uint32), ("uint64", uint64),
                   ("float16", float16), ("bfloat16", bfloat16), ("float32", float32),
                   ("float64", float64)]:
    _fn.__name__ = _name
    _fn.__doc__ = f"parir.{_name}(x): converts x to {_name}."


# ----- atomic updates: parir.atomic_add(t[i], v), ... ---------------------------------------
#
# As plain Python an atomic update is simply the read-modify-write: one thread runs the program,
# so nothing can come between the read and the write. The element arrives as a view of the
# tensor (the rewritten program passes `t[i]` to these functions uncopied), and the update is
# computed as the compiled code computes it: the value converted to the element's dtype as a
# store converts it, integers wrapping at their width, NaN propagating through min and max. The
# old value is returned as a value of the element's dtype.

_CASTS = {_torch.int8: int8, _torch.int16: int16, _torch.int32: int32, _torch.int64: int64,
          _torch.uint8: uint8, _torch.uint16: uint16, _torch.uint32: uint32,
          _torch.uint64: uint64, _torch.float16: float16, _torch.bfloat16: bfloat16,
          _torch.float32: float32, _torch.float64: float64, _torch.bool: bool_}
_BITS = {1: _torch.int8, 2: _torch.int16, 4: _torch.int32, 8: _torch.int64}


def _atomic(name, on_ints, on_floats, bools=False, floats=True):
    """parir.<name>(t[i], *values): t[i] becomes the combination of its old value and the
    values (converted to its dtype); returns the old value. Integers combine as Python ints and
    wrap when stored, which torch's kernels for uint16..uint64 would not do."""

    def update(element, *values):
        if not (isinstance(element, _torch.Tensor) and element.dim() == 0
                and element._base is not None):
            raise _ParirTypeError(f"the first argument of parir.{name} must be one tensor "
                                  f"element with one index per dimension, as in "
                                  f"parir.{name}(hist[b], 1)")
        dtype = element.dtype
        if dtype == _torch.bool and not bools:
            raise _ParirTypeError(f"parir.{name} needs a numeric element, not a bool one")
        if dtype.is_floating_point and not floats:
            raise _ParirTypeError(f"parir.{name} needs an integer or bool element, not {dtype}")
        cast = _CASTS[dtype]
        old = element.clone()
        values = [cast(v) for v in values]
        if dtype.is_floating_point:
            new = on_floats(old, *values)
        else:
            new = cast(on_ints(old.item(), *[v.item() for v in values]))
        element.copy_(new)
        return old

    update.__name__ = update.__qualname__ = name
    update.__parir_atomic__ = True
    return update


def _same_bits(a, b):
    """Whether two 0-d float tensors of one dtype hold the same bits (atomicCAS compares bits)."""
    bits = _BITS[a.element_size()]
    return bool(a.view(bits) == b.view(bits))


atomic_add = _atomic("atomic_add", lambda a, v: a + v, lambda a, v: a + v)
atomic_sub = _atomic("atomic_sub", lambda a, v: a - v, lambda a, v: a - v)
atomic_min = _atomic("atomic_min", _py.min, _torch.minimum)
atomic_max = _atomic("atomic_max", _py.max, _torch.maximum)
atomic_exchange = _atomic("atomic_exchange", lambda a, v: v, lambda a, v: v, bools=True)
atomic_cas = _atomic("atomic_cas", lambda a, e, d: d if a == e else a,
                     lambda a, e, d: d if _same_bits(a, e) else a, bools=True)
atomic_and = _atomic("atomic_and", lambda a, v: a & v, None, bools=True, floats=False)
atomic_or = _atomic("atomic_or", lambda a, v: a | v, None, bools=True, floats=False)
atomic_xor = _atomic("atomic_xor", lambda a, v: a ^ v, None, bools=True, floats=False)
atomic_add.__doc__ = "parir.atomic_add(t[i], v): t[i] += v atomically; returns the old t[i]."
atomic_sub.__doc__ = "parir.atomic_sub(t[i], v): t[i] -= v atomically; returns the old t[i]."
atomic_min.__doc__ = ("parir.atomic_min(t[i], v): t[i] = parir.min(t[i], v) atomically (NaN "
                      "propagates); returns the old t[i].")
atomic_max.__doc__ = ("parir.atomic_max(t[i], v): t[i] = parir.max(t[i], v) atomically (NaN "
                      "propagates); returns the old t[i].")
atomic_exchange.__doc__ = "parir.atomic_exchange(t[i], v): t[i] = v atomically; returns the old t[i]."
atomic_cas.__doc__ = ("parir.atomic_cas(t[i], expected, desired): t[i] = desired if t[i]'s bits "
                      "are those of expected, atomically; returns the old t[i].")
atomic_and.__doc__ = "parir.atomic_and(t[i], v): t[i] &= v atomically; returns the old t[i]."
atomic_or.__doc__ = "parir.atomic_or(t[i], v): t[i] |= v atomically; returns the old t[i]."
atomic_xor.__doc__ = "parir.atomic_xor(t[i], v): t[i] ^= v atomically; returns the old t[i]."

# The names the compiler recognizes when a parir function refers to them (besides `parir.X`).
COMPILER_NAMES = {
    "label": label, "gpu": gpu, "inf": inf, "exp": exp, "log": log, "sqrt": sqrt, "sin": sin,
    "cos": cos, "tanh": tanh, "abs": abs, "atan2": atan2, "min": min, "max": max, "sum": sum,
    "prod": prod,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
    "uint16": uint16, "uint32": uint32, "uint64": uint64, "float16": float16,
    "bfloat16": bfloat16, "float32": float32, "float64": float64, "bool": bool_,
    "atomic_add": atomic_add, "atomic_sub": atomic_sub, "atomic_min": atomic_min,
    "atomic_max": atomic_max, "atomic_exchange": atomic_exchange, "atomic_cas": atomic_cas,
    "atomic_and": atomic_and, "atomic_or": atomic_or, "atomic_xor": atomic_xor,
}
