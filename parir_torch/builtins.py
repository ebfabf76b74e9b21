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
from . import plain_python_ops as _ops
from . import scans as _scans
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


pi = _math.pi
e = _math.e
nan = _math.nan


def _on_number(torch_fn, x, dtype=_torch.float64):
    """torch_fn of a Python number, computed as the compiled code computes a weak value (in
    float64): log(0.0) is -inf and exp(1000.0) is inf, where Python's math module raises."""
    return torch_fn(_torch.tensor(x, dtype=dtype)).item()


def _named(fn, name, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _float_unary(name, torch_fn):
    """A math function computed in floating point: of an integer, in float64."""
    def fn(x):
        if isinstance(x, _torch.Tensor):
            return torch_fn(x if x.is_floating_point() else x.double())
        return _on_number(torch_fn, float(x))

    return _named(fn, name, f"parir.{name}(x), as torch.{name}; of an integer, a float64.")


exp = _float_unary("exp", _torch.exp)
exp2 = _float_unary("exp2", _torch.exp2)
expm1 = _float_unary("expm1", _torch.expm1)
log = _float_unary("log", _torch.log)
log2 = _float_unary("log2", _torch.log2)
log10 = _float_unary("log10", _torch.log10)
log1p = _float_unary("log1p", _torch.log1p)
sqrt = _float_unary("sqrt", _torch.sqrt)
rsqrt = _float_unary("rsqrt", _torch.rsqrt)
sin = _float_unary("sin", _torch.sin)
cos = _float_unary("cos", _torch.cos)
tan = _float_unary("tan", _torch.tan)
asin = _float_unary("asin", _torch.asin)
acos = _float_unary("acos", _torch.acos)
atan = _float_unary("atan", _torch.atan)
sinh = _float_unary("sinh", _torch.sinh)
cosh = _float_unary("cosh", _torch.cosh)
tanh = _float_unary("tanh", _torch.tanh)
asinh = _float_unary("asinh", _torch.asinh)
acosh = _float_unary("acosh", _torch.acosh)
atanh = _float_unary("atanh", _torch.atanh)
erf = _float_unary("erf", _torch.erf)
erfc = _float_unary("erfc", _torch.erfc)
sigmoid = _float_unary("sigmoid", _torch.sigmoid)


def _rounding(name, torch_fn):
    """Rounding as torch's: a float stays a float of its type, an integer is itself."""
    def fn(x):
        if isinstance(x, _torch.Tensor):
            if x.dtype == _torch.bool:
                return x.long()
            return torch_fn(x) if x.is_floating_point() else x
        if isinstance(x, float):
            return _on_number(torch_fn, x)
        return _py.int(x)

    return _named(fn, name, f"parir.{name}(x), as torch.{name}: of a float, a float of its "
                            f"type; of an integer, the integer.")


floor = _rounding("floor", _torch.floor)
ceil = _rounding("ceil", _torch.ceil)
round = _rounding("round", _torch.round)  # noqa: A001 - to the nearest even, as torch.round
trunc = _rounding("trunc", _torch.trunc)


def python_round(x, ndigits=None):
    """Python's round(x) in a parir function: the nearest integer, ties to even, as an int64
    (parir.round keeps the float type)."""
    if ndigits is not None:
        raise _ParirTypeError("round() takes one argument here (rounding to digits is not "
                              "supported); parir.round(x) keeps the float type")
    return int64(round(x))


def _test(name, torch_fn):
    def fn(x):
        if isinstance(x, _torch.Tensor):
            return torch_fn(x)
        return _torch.tensor(_on_number(torch_fn, x, _torch.float64 if isinstance(x, float)
                                        else _torch.int64))

    return _named(fn, name, f"parir.{name}(x), as torch.{name}: a bool.")


isnan = _test("isnan", _torch.isnan)
isinf = _test("isinf", _torch.isinf)
isfinite = _test("isfinite", _torch.isfinite)


def sign(x):
    """parir.sign(x), as torch.sign: -1, 0 or 1 of x's type (0 for a NaN); of a bool, itself."""
    if isinstance(x, _torch.Tensor):
        return _torch.sign(x)
    if isinstance(x, bool):
        return x
    s = (0 < x) - (x < 0)
    return float(s) if isinstance(x, float) else s


def abs(x):  # noqa: A001 - parir.abs mirrors Python's abs
    """parir.abs(x). Of a bool, an int64 (as True + True is 2)."""
    if isinstance(x, _torch.Tensor):
        return (x.long() if x.dtype == _torch.bool else x).abs()
    return _py.abs(x)


def _float_binary(name, torch_fn):
    """A math function of two values, computed in their promoted type (float64 for integers)."""
    def fn(a, b):
        dtype, weak = _promote(a, b)
        if not dtype.is_floating_point:
            dtype = _torch.float64
        r = torch_fn(*_as_tensors(a, b, dtype))
        return r.item() if weak else r

    return _named(fn, name, f"parir.{name}(a, b), as torch.{name}, in the promoted type of a "
                            f"and b.")


atan2 = _float_binary("atan2", _torch.atan2)
copysign = _float_binary("copysign", _torch.copysign)
hypot = _float_binary("hypot", _torch.hypot)


def fmod(a, b):
    """parir.fmod(a, b), as torch.fmod: the remainder of division truncated toward zero, whose
    sign is a's (`%` is Python's, whose sign is b's)."""
    dtype, weak = _promote(a, b)
    if dtype == _torch.bool:
        dtype = _torch.int64
    r = _torch.fmod(*_as_tensors(a, b, dtype))
    return r.item() if weak else r


def pow(a, b):  # noqa: A001 - parir.pow mirrors torch.pow
    """parir.pow(a, b): a ** b."""
    return _ops.pow(a, b)


def remainder(a, b):
    """parir.remainder(a, b), as torch.remainder: a % b, whose sign is b's."""
    return _ops.mod(a, b)


def where(condition, a, b):
    """parir.where(c, a, b): a if c else b, in the promoted type of a and b."""
    dtype, weak = _promote(a, b)
    if isinstance(condition, _torch.Tensor) and condition.dim() > 0:
        # Slices (`y[:] = parir.where(x[:] >= 0.0, x[:], 0.0)`): element by element.
        return _torch.where(condition.to(_torch.bool), _torch.as_tensor(a, dtype=dtype),
                            _torch.as_tensor(b, dtype=dtype))
    v = a if condition else b
    if not weak:
        return v.to(dtype) if isinstance(v, _torch.Tensor) else _torch.tensor(v, dtype=dtype)
    if dtype.is_floating_point:
        return float(v)
    return _py.bool(v) if dtype == _torch.bool else _py.int(v)


def clamp(x, min=None, max=None):  # noqa: A002 - torch.clamp's keyword names
    """parir.clamp(x, min, max), as torch.clamp: max(x, min), then min(.., max); a NaN stays
    NaN. Either bound may be left out."""
    if min is None and max is None:
        raise _ParirTypeError("parir.clamp needs at least one of the bounds min and max")
    if min is not None:
        x = globals()["max"](x, min)
    if max is not None:
        x = globals()["min"](x, max)
    return x


def _as_tensors(a, b, dtype):
    """a and b as tensors of `dtype`, a Python number on the device of the tensor beside it
    (on the CPU when both are Python numbers)."""
    device = a.device if isinstance(a, _torch.Tensor) else \
        b.device if isinstance(b, _torch.Tensor) else "cpu"
    return tuple(v.to(dtype) if isinstance(v, _torch.Tensor)
                 else _torch.tensor(v, dtype=dtype, device=device) for v in (a, b))


def _left_to_right(fn, a, b, more, axis):
    """fn(a, b, c, ...) as fn(fn(fn(a, b), c), ...): Python's min and max of several values
    compare left to right."""
    if axis is not None:
        raise _ParirTypeError(f"parir.{fn.__name__} takes values, or one slice expression and "
                              f"axis=")
    acc = fn(a, b)
    for c in more:
        acc = fn(acc, c)
    return acc


def min(a, b=None, *more, axis=None, dim=None):  # noqa: A001
    """parir.min(a, b): the smaller value, in the promoted type of a and b; NaN if either is NaN
    (as torch.minimum). parir.min(e[, axis=k]): the minimum of a slice expression, over all its
    dimensions or over dimension k."""
    axis = _scans.axis_argument("min", axis, dim)
    if more:
        return _left_to_right(min, a, b, more, axis)
    if b is None:
        return _ops.in_unsigned_order(
            lambda t: _torch.amin(t, dim=axis) if axis is not None else _torch.amin(t), a)
    if axis is not None:
        raise _ParirTypeError("parir.min takes two values, or one slice expression and axis=")
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _ops.in_unsigned_order(_torch.minimum, *_as_tensors(a, b, _promote(a, b)[0]))
    if a != a:
        return a
    if b != b:
        return b
    return b if b < a else a


def max(a, b=None, *more, axis=None, dim=None):  # noqa: A001
    """parir.max(a, b): the larger value, in the promoted type of a and b; NaN if either is NaN
    (as torch.maximum). parir.max(e[, axis=k]): the maximum of a slice expression, over all its
    dimensions or over dimension k."""
    axis = _scans.axis_argument("max", axis, dim)
    if more:
        return _left_to_right(max, a, b, more, axis)
    if b is None:
        return _ops.in_unsigned_order(
            lambda t: _torch.amax(t, dim=axis) if axis is not None else _torch.amax(t), a)
    if axis is not None:
        raise _ParirTypeError("parir.max takes two values, or one slice expression and axis=")
    if isinstance(a, _torch.Tensor) or isinstance(b, _torch.Tensor):
        return _ops.in_unsigned_order(_torch.maximum, *_as_tensors(a, b, _promote(a, b)[0]))
    if a != a:
        return a
    if b != b:
        return b
    return b if b > a else a


def sum(e, axis=None, dim=None):  # noqa: A001
    """parir.sum(e[, axis=k]): the sum of a slice expression, over all its dimensions or over
    dimension k (dim=k, as torch names it, works too)."""
    axis = _scans.axis_argument("sum", axis, dim)
    return e.sum() if axis is None else e.sum(dim=axis)


def prod(e, axis=None, dim=None):
    """parir.prod(e[, axis=k]): the product of a slice expression."""
    axis = _scans.axis_argument("prod", axis, dim)
    return e.prod() if axis is None else e.prod(dim=axis)


def _index_reduce(torch_fn, e, axis):
    """torch.argmax/argmin of a slice expression. torch has no argmax of bool (compared here as
    False < True, as the compiled code compares) nor, on the CPU, of uint16/32/64: those
    compare as int64, which holds every uint16 and uint32 value; uint64 with its top bit
    flipped, which keeps its order."""
    if e.dtype == _torch.bool:
        e = e.to(_torch.uint8)
    elif e.dtype in (_torch.uint16, _torch.uint32):
        e = e.to(_torch.int64)
    elif e.dtype == _torch.uint64:
        e = e.view(_torch.int64) ^ (-(1 << 63))
    return torch_fn(e) if axis is None else torch_fn(e, dim=axis)


def argmax(e, axis=None, dim=None):
    """parir.argmax(e[, axis=k]): the int64 index of the largest element of a slice expression,
    over all its dimensions (flattened, as torch.argmax without dim) or along dimension k. Ties
    give the lowest index; a NaN counts as the largest (the first NaN's index), as in torch."""
    return _index_reduce(_torch.argmax, e, _scans.axis_argument("argmax", axis, dim))


def argmin(e, axis=None, dim=None):
    """parir.argmin(e[, axis=k]): as parir.argmax, the index of the smallest element (a NaN
    still counts as the extreme: the first NaN's index, as in torch)."""
    return _index_reduce(_torch.argmin, e, _scans.axis_argument("argmin", axis, dim))


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
    "label": label, "gpu": gpu, "inf": inf, "pi": pi, "e": e, "nan": nan,
    "exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log2": log2, "log10": log10,
    "log1p": log1p, "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan,
    "asin": asin, "acos": acos, "atan": atan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
    "asinh": asinh, "acosh": acosh, "atanh": atanh, "erf": erf, "erfc": erfc,
    "sigmoid": sigmoid, "floor": floor, "ceil": ceil, "round": round, "trunc": trunc,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite, "sign": sign, "abs": abs,
    "atan2": atan2, "copysign": copysign, "hypot": hypot, "fmod": fmod, "pow": pow,
    "remainder": remainder, "where": where, "clamp": clamp, "min": min, "max": max,
    "sum": sum, "prod": prod, "argmax": argmax, "argmin": argmin,
    "cumsum": _scans.cumsum, "cumprod": _scans.cumprod, "cummin": _scans.cummin,
    "cummax": _scans.cummax,
    "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
    "uint16": uint16, "uint32": uint32, "uint64": uint64, "float16": float16,
    "bfloat16": bfloat16, "float32": float32, "float64": float64, "bool": bool_,
    "atomic_add": atomic_add, "atomic_sub": atomic_sub, "atomic_min": atomic_min,
    "atomic_max": atomic_max, "atomic_exchange": atomic_exchange, "atomic_cas": atomic_cas,
    "atomic_and": atomic_and, "atomic_or": atomic_or, "atomic_xor": atomic_xor,
}


# ----- Python's math module in a parir function ---------------------------------------------
#
# math.exp(x), math.pi, ... (and the same functions imported with `from math import exp`) are
# parir's functions of the same names, typed as parir types them: math.sqrt of a float32 value
# is a float32. math.floor, math.ceil and math.trunc give integers (int64), as in Python;
# math.fabs is parir.abs, math.pow is `**`.
MATH_CONSTANTS = {"pi": _math.pi, "e": _math.e, "tau": _math.tau, "inf": _math.inf,
                  "nan": _math.nan}
MATH_TO_INTEGER = ("floor", "ceil", "trunc")
MATH_FUNCTIONS = {name: name for name in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
    "copysign", "hypot", "fmod", "isnan", "isinf", "isfinite") if hasattr(_math, name)}
MATH_FUNCTIONS.update({"fabs": "abs", "pow": "pow", "floor": "floor", "ceil": "ceil",
                       "trunc": "trunc"})


def _to_integer(fn):
    return _named(lambda x: int64(fn(x)), fn.__name__,
                  f"math.{fn.__name__}(x) in a parir function: parir.int64(parir.{fn.__name__}(x))")


# NumPy's functions and dtypes that a parir function may call (np.exp(x), np.float32(x)): those
# parir has under the same name (the frontend's numpy_name). NumPy's min and max are not among
# them: their second argument is an axis.
NUMPY_NAMES = {name: name for name in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "sign", "isnan", "isinf", "isfinite",
    "copysign", "hypot", "fmod", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "float32", "float64", "bool")}
# The names NumPy's ufuncs carry for the ones spelled differently (np.abs is np.absolute).
NUMPY_NAMES.update({"absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
                    "arctan2": "atan2", "rint": "round", "where": "where",
                    "remainder": "remainder"})


def _numpy_name(f):
    """The name of NumPy function or dtype `f` (np.exp, np.float32), or None."""
    if type(f).__module__ == "numpy" and type(f).__name__ == "ufunc":
        return f.__name__
    if isinstance(f, type) and f.__module__ == "numpy":
        return f.__name__
    if getattr(f, "__module__", None) == "numpy" and getattr(f, "__name__", None) == "where":
        return "where"  # a function, not a ufunc
    return None


def plain_math(f):
    """What a call of Python's math function `f`, or of one of NumPy's that parir has (np.exp,
    np.float32), runs in a parir function run as plain Python: parir's function of that name;
    None for anything else."""
    numpy_name = _numpy_name(f)
    if numpy_name in NUMPY_NAMES:
        return COMPILER_NAMES[NUMPY_NAMES[numpy_name]]
    if getattr(f, "__module__", None) != "math" and getattr(_math, getattr(f, "__name__", ""),
                                                            None) is not f:
        return None
    name = MATH_FUNCTIONS.get(f.__name__)
    if name is None:
        return None
    fn = globals()[name]
    return _to_integer(fn) if f.__name__ in MATH_TO_INTEGER else fn
