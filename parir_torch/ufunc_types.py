"""The type signatures of parir.vectorize and parir.guvectorize, and how a call picks one.

A signature is written as NumbaPro and Numba write them: `'float32(float32, float32)'` for a
vectorized function (result and parameters are scalars), `'void(float32[:], float32[:, :])'` for
a generalized one (arrays with one `:` per core dimension; a scalar type for a `()` input). The
type names are parir's (`float32`, `int64`, `bool`, ...) and Numba's short ones (`f4`, `i8`,
`b1`, ...). A layout is NumPy's: `'(m,n),(n,p)->(m,p)'`.

The dispatch rule (select): the arguments' types are the dtypes of the tensors, arrays and NumPy
scalars among them (0-d tensors too); Python numbers are weak, as in NumPy 2 (NEP 50) and in
parir's typing: a bool fits any parameter, an int an integer or floating parameter, a float a
floating one. The signature chosen is the first, in the order given, whose parameter types
equal the argument types; failing that, the first that every argument converts to safely, as
NumPy's ufunc type resolution does. Safe conversions lose no value (NumPy's 'safe' casting,
with bfloat16 placed as its 8-bit significand allows): bool to anything; an integer to an
integer type that holds all its values; an integer to a float whose significand holds it
(int8 and uint8 to float16 and bfloat16 and wider, 16-bit integers to float32 and wider,
32-bit ones to float64) and, as NumPy allows, int64 and uint64 to float64; float16 and bfloat16
to float32 and float64; float32 to float64.
"""

import re
from typing import NamedTuple

import torch

from .errors import ParirTypeError, ParirValueError

_DTYPES = {
    "bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
    "uint64": torch.uint64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "float64": torch.float64,
}
# Numba's names for the same types.
_ALIASES = {"boolean": "bool", "b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32",
            "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
            "f2": "float16", "f4": "float32", "f8": "float64"}

NAMES = {dtype: name for name, dtype in _DTYPES.items()}  # torch dtype -> parir's name

_BOOL, _INT, _FLOAT = 0, 1, 2
# (kind, bits of value: the integer's width without its sign bit, a float's significand)
_SHAPE = {
    torch.bool: (_BOOL, 1),
    torch.int8: (_INT, 7), torch.int16: (_INT, 15), torch.int32: (_INT, 31),
    torch.int64: (_INT, 63),
    torch.uint8: (_INT, 8), torch.uint16: (_INT, 16), torch.uint32: (_INT, 32),
    torch.uint64: (_INT, 64),
    torch.float16: (_FLOAT, 11), torch.bfloat16: (_FLOAT, 8), torch.float32: (_FLOAT, 24),
    torch.float64: (_FLOAT, 53),
}
_UNSIGNED = {torch.uint8, torch.uint16, torch.uint32, torch.uint64}


def safe_cast(src, dst):
    """Whether every value of dtype `src` converts to dtype `dst` unchanged (see the module's
    docstring for the two exceptions NumPy makes, int64 and uint64 to float64)."""
    if src == dst or src == torch.bool:
        return True
    (src_kind, src_bits), (dst_kind, dst_bits) = _SHAPE[src], _SHAPE[dst]
    if src_kind == _FLOAT:
        return dst_kind == _FLOAT and dst_bits > src_bits and dst.itemsize > src.itemsize
    if dst_kind == _BOOL:
        return False
    if dst_kind == _FLOAT:
        return dst_bits >= src_bits or dst == torch.float64
    if src in _UNSIGNED or dst not in _UNSIGNED:  # signed to unsigned drops negatives
        return dst_bits >= src_bits
    return False


def weak_fits(python_type, dst):
    """Whether a Python number of `python_type` (bool, int, float) may be given for a
    parameter of dtype `dst`: its kind is not above the parameter's."""
    return {bool: _BOOL, int: _INT, float: _FLOAT}[python_type] <= _SHAPE[dst][0]


class Param(NamedTuple):
    """One parameter of a signature: its dtype and its number of dimensions (0 for a scalar;
    `float32[:, :]` has 2)."""

    dtype: torch.dtype
    ndim: int

    def __str__(self):
        name = NAMES[self.dtype]
        return name if self.ndim == 0 else f"{name}[{', '.join([':'] * self.ndim)}]"


class Signature(NamedTuple):
    """A parsed signature: `text` as written, the result (None for void) and the parameters."""

    text: str
    result: object
    params: tuple


def _type(text, where, arrays):
    """A Param from `float32` or, with `arrays`, `float32[:, :]`."""
    m = re.fullmatch(r"\s*(\w+)\s*(?:\[([^\]]*)\])?\s*", text)
    if m is None:
        raise ParirValueError(f"{where}: cannot read the type {text.strip()!r}")
    name, dims = m.group(1), m.group(2)
    name = _ALIASES.get(name, name)
    if name not in _DTYPES:
        raise ParirValueError(f"{where}: {m.group(1)!r} is not a type parir knows; the types are "
                              f"{', '.join(_DTYPES)} (or Numba's short names: "
                              f"{', '.join(_ALIASES)})")
    if dims is None:
        return Param(_DTYPES[name], 0)
    if not arrays:
        raise ParirValueError(f"{where}: parir.vectorize takes scalar types, not the array "
                              f"{text.strip()!r}; arrays are for parir.guvectorize")
    parts = [p.strip() for p in dims.split(",")]
    if not all(p in (":", "::1") for p in parts):
        raise ParirValueError(f"{where}: an array type has one ':' per dimension, as in "
                              f"float32[:, :]; got {text.strip()!r}")
    return Param(_DTYPES[name], len(parts))


def parse_signature(text, arrays):
    """A Signature from 'float32(float32, float32)' (arrays=False, vectorize) or
    'void(float32[:], float32[:])' (arrays=True, guvectorize)."""
    if not isinstance(text, str):
        raise ParirTypeError(f"a signature is a string such as 'float32(float32, float32)', got "
                             f"{text!r}")
    where = f"signature {text!r}"
    m = re.fullmatch(r"\s*(\w+)\s*\((.*)\)\s*", text, re.S)
    if m is None:
        example = "'void(float32[:], float32[:])'" if arrays else "'float32(float32, float32)'"
        raise ParirValueError(f"{where}: a signature is written RESULT(PARAM, ...), as in "
                              f"{example}")
    params = tuple(_type(p, where, arrays) for p in _split(m.group(2)))
    if arrays:
        if m.group(1) != "void":
            raise ParirValueError(f"{where}: a parir.guvectorize function writes its outputs and "
                                  f"returns nothing: its signature's result is void")
        return Signature(text, None, params)
    return Signature(text, _type(m.group(1), where, False).dtype, params)


def _split(params):
    """The parameters of 'float32[:, :], int64' split at the commas outside brackets."""
    if not params.strip():
        return []
    out, depth, start = [], 0, 0
    for i, c in enumerate(params):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            out.append(params[start:i])
            start = i + 1
    return out + [params[start:]]


class Layout(NamedTuple):
    """A parsed layout '(m,n),(n,p)->(m,p)': the core dimensions of each input and output, as
    tuples of names (or ints, for a fixed size)."""

    text: str
    inputs: tuple
    outputs: tuple


_DIMS = r"\(\s*(?:\w+\s*(?:,\s*\w+\s*)*)?\)"


def parse_layout(text):
    """A Layout from NumPy's generalized ufunc signature, '(n),(n)->()'."""
    if not isinstance(text, str):
        raise ParirTypeError(f"parir.guvectorize takes the layout as a string such as "
                             f"'(n),(n)->()', got {text!r}")
    side = rf"\s*{_DIMS}\s*(?:,\s*{_DIMS}\s*)*"
    if re.fullmatch(rf"{side}->{side}", text) is None:
        raise ParirValueError(f"layout {text!r}: a layout lists the core dimensions of the inputs "
                              f"and of the outputs, as in '(m,n),(n,p)->(m,p)' or '(n),()->()'")
    ins, outs = text.split("->")

    def groups(s):
        return tuple(tuple(int(d) if d.isdigit() else d for d in re.findall(r"\w+", g))
                     for g in re.findall(_DIMS, s))

    return Layout(text, groups(ins), groups(outs))


def describe_argument_types(types):
    """'float32, int (a Python number)' for the error that lists what a call passed."""
    return ", ".join(NAMES.get(t, t) if isinstance(t, torch.dtype) else
                     f"a Python {t.__name__}" for t in types)


def select(signatures, types):
    """The index of the signature a call with argument `types` (dtypes, or Python's bool, int,
    float for weak numbers; None where the parameter's type does not matter) runs, or None.
    The dispatch rule is in the module's docstring."""
    def fits(sig, exact):
        for t, p in zip(types, sig.params):
            if t is None:
                continue
            if isinstance(t, torch.dtype):
                if not (t == p.dtype if exact else safe_cast(t, p.dtype)):
                    return False
            elif not weak_fits(t, p.dtype):
                return False
        return True

    for exact in (True, False):
        for i, sig in enumerate(signatures):
            if fits(sig, exact):
                return i
    return None
