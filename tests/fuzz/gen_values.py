"""Types and value intervals of the generated expressions: the dtypes, README.md's type
promotion (`Ty`, `promote`), `Expr` (an expression's code, type, interval of values,
exactness and float precision), and the interval checks that keep integer arithmetic
defined and floats within FLOAT_LIMIT.
"""

import dataclasses
import math

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = FLOATS + INTS + ("bool",)

INT_RANGE = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
             "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "uint8": (0, 255),
             "bool": (0, 1)}
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8}
# Magnitudes floats may reach: far inside float16's range, so no value overflows anywhere.
FLOAT_LIMIT = 1e3
# Float precision, lowest first: the tolerance of an output follows its least precise input.
PRECISION = ("bfloat16", "float16", "float32", "float64")


@dataclasses.dataclass
class Ty:
    """A parir type: a dtype name, and whether it is weak (a literal or a Python scalar)."""
    name: str
    weak: bool = False

    @property
    def kind(self):
        return "b" if self.name == "bool" else "f" if self.name in FLOATS else "i"


def _kind_rank(k):
    return "bif".index(k)


def promote(a, b):
    """The type of a binary arithmetic operation, by README.md's rules 1-3."""
    if a.kind != b.kind:
        hi, lo = (a, b) if _kind_rank(a.kind) > _kind_rank(b.kind) else (b, a)
        if hi.weak and not lo.weak:
            return Ty("float64" if hi.kind == "f" else "int64")
        return hi
    if a.weak and b.weak:
        return a
    if a.weak or b.weak:
        return b if a.weak else a
    return Ty(_wider(a.name, b.name))


def _wider(a, b):
    if a == b:
        return a
    if a in FLOATS:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        order = ("float16", "bfloat16", "float32", "float64")
        return max(a, b, key=order.index)
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if "uint8" in (a, b):
        other = b if a == "uint8" else a
        return "int16" if other == "int8" else other
    return max(a, b, key=lambda t: INT_BITS[t])


@dataclasses.dataclass
class Expr:
    """A generated expression: its code, parir type, value interval [lo, hi], whether its
    value is exact on both sides (no float rounding involved), and its least float
    precision (an index into PRECISION; len(PRECISION) when no float is involved)."""
    code: str
    ty: Ty
    lo: float
    hi: float
    exact: bool = True
    prec: int = len(PRECISION)
    ops: int = 0


def _init_range(dtype):
    if dtype == "bool":
        return 0, 1
    if dtype == "uint8":
        return 1, 9
    if dtype in INTS:
        return -8, 8
    return -2.0, 2.0


def _dtype_kind(dtype):
    return "b" if dtype == "bool" else "f" if dtype in FLOATS else "i"


def _fits_type(e, dtype):
    if dtype not in INT_RANGE:
        return True
    lo, hi = INT_RANGE[dtype]
    if e.ty.kind == "f":
        return lo <= math.trunc(e.lo) and math.trunc(e.hi) <= hi
    return lo <= e.lo and e.hi <= hi


def _fits(e):
    """Whether an expression's interval lies inside its type (and floats inside the limit)."""
    if e.ty.kind == "f":
        return max(abs(e.lo), abs(e.hi)) <= FLOAT_LIMIT
    if e.ty.kind == "b":
        return True
    lo, hi = INT_RANGE[e.ty.name]
    # Weak integers are Python ints in the plain run and int64 on the GPU; keep them small.
    if e.ty.weak:
        lo, hi = -2 ** 31, 2 ** 31
    return lo <= e.lo and e.hi <= hi


def _weak_fits(a, b):
    """A weak integer meeting a typed integer takes its type: it must fit in it (torch
    refuses, or wraps, a Python int out of a tensor's range)."""
    for w, t in ((a, b), (b, a)):
        if w.ty.weak and not t.ty.weak and w.ty.kind == "i" and t.ty.kind in "ib":
            lo, hi = INT_RANGE[t.ty.name]
            if w.lo < lo or w.hi > hi:
                return False
    return True


def _interval(op, a, b):
    """The result interval of `a op b`, or (None, None) when it is undefined (division by an
    interval holding zero)."""
    al, ah, bl, bh = a.lo, a.hi, b.lo, b.hi
    if op == "+":
        return al + bl, ah + bh
    if op == "-":
        return al - bh, ah - bl
    if op in ("*", "min", "max"):
        if op == "min":
            return min(al, bl), min(ah, bh)
        if op == "max":
            return max(al, bl), max(ah, bh)
        c = [al * bl, al * bh, ah * bl, ah * bh]
        return min(c), max(c)
    if op == "**":
        c = [al * al, ah * ah]
        return (0 if al <= 0 <= ah else min(c)), max(c)
    if op in ("/", "//", "%"):
        if bl <= 0 <= bh:
            return None, None
        if op == "%":
            return (0, bh - 1) if bl > 0 else (bl + 1, 0)
        if op == "/":
            c = [al / bl, al / bh, ah / bl, ah / bh]
            return min(c), max(c)
        c = [al // bl, al // bh, ah // bl, ah // bh]
        return min(c), max(c)
    if op in ("&", "|", "^"):
        m = max(abs(al), abs(ah), abs(bl), abs(bh), 1)
        p = 1 << int(m).bit_length()
        if al >= 0 and bl >= 0:
            return 0, p - 1
        return -p, p - 1
    if op == "<<":
        return al * (1 << int(bh)), ah * (1 << int(bh))
    if op == ">>":
        return al >> int(bh), ah >> int(bh)
    raise ValueError(op)
