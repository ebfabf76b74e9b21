"""Element types: parir.ElemSize, and how PyTorch, NumPy and Python types map onto them."""

import ctypes
import enum

import torch

from ._C import ParirError
from .builtins import COMPILER_NAMES
from .errors import ParirTypeError


class ElemSize(enum.Enum):
    """The element type of a tensor or scalar in parir, named by kind and width.

    >>> parir.ElemSize.F32.size(), parir.ElemSize.F32.to_torch()
    (4, torch.float32)
    """

    Bool = "bool"
    I8 = "int8"
    I16 = "int16"
    I32 = "int32"
    I64 = "int64"
    U8 = "uint8"
    U16 = "uint16"
    U32 = "uint32"
    U64 = "uint64"
    F16 = "float16"
    BF16 = "bfloat16"
    F32 = "float32"
    F64 = "float64"

    def size(self):
        """The size of one element in bytes."""
        return _SIZES[self]

    def to_torch(self):
        """The torch.dtype of this type (torch.uint16/32/64 exist, with limited operator
        support in PyTorch itself; parir kernels read and write them fully)."""
        return getattr(torch, self.value)

    def to_numpy(self):
        """The NumPy scalar type of this type. NumPy has no bfloat16: that is an error."""
        import numpy as np

        if self is ElemSize.BF16:
            raise ParirTypeError("NumPy has no bfloat16 type")
        return np.bool_ if self is ElemSize.Bool else getattr(np, self.value)

    def to_ctype(self):
        """The ctypes type of this type. ctypes has no 16-bit floats: F16 and BF16 are
        errors."""
        if self in (ElemSize.F16, ElemSize.BF16):
            raise ParirTypeError(f"ctypes has no type for {self.value}")
        return _CTYPES[self]

    def __repr__(self):
        return f"parir.ElemSize.{self.name}"


_SIZES = {ElemSize.Bool: 1, ElemSize.I8: 1, ElemSize.I16: 2, ElemSize.I32: 4, ElemSize.I64: 8,
          ElemSize.U8: 1, ElemSize.U16: 2, ElemSize.U32: 4, ElemSize.U64: 8, ElemSize.F16: 2,
          ElemSize.BF16: 2, ElemSize.F32: 4, ElemSize.F64: 8}

_CTYPES = {ElemSize.Bool: ctypes.c_bool, ElemSize.I8: ctypes.c_int8, ElemSize.I16: ctypes.c_int16,
           ElemSize.I32: ctypes.c_int32, ElemSize.I64: ctypes.c_int64,
           ElemSize.U8: ctypes.c_uint8, ElemSize.U16: ctypes.c_uint16,
           ElemSize.U32: ctypes.c_uint32, ElemSize.U64: ctypes.c_uint64,
           ElemSize.F32: ctypes.c_float, ElemSize.F64: ctypes.c_double}

# torch dtype -> the compiler's element type name, for every dtype parir supports.
TORCH_DTYPES = {getattr(torch, e.value): e.value for e in ElemSize}
TORCH_DTYPES[torch.bool] = "bool"


def elem_size(t, what):
    """An ElemSize from anything that names a type: an ElemSize, a torch.dtype, a parir cast
    (parir.float32), a name ('float32'), or Python's int, float and bool (int64, float64,
    bool). `what` names the thing being typed, for the error."""
    if isinstance(t, ElemSize):
        return t
    if isinstance(t, torch.dtype) and t in TORCH_DTYPES:
        return ElemSize(TORCH_DTYPES[t])
    if isinstance(t, str):
        try:
            return ElemSize(t)
        except ValueError:
            pass
    for name, fn in COMPILER_NAMES.items():
        if t is fn and name in _BY_VALUE:
            return _BY_VALUE[name]
    python = {int: ElemSize.I64, float: ElemSize.F64, bool: ElemSize.Bool}
    if t in python:
        return python[t]
    raise ParirError(f"{what}: {t!r} is not a type parir knows; use a parir.ElemSize "
                     f"(parir.ElemSize.F32), a torch dtype, or parir.float32 and friends")


_BY_VALUE = {e.value: e for e in ElemSize}
