"""parir-torch: custom GPU kernels for PyTorch, written as plain Python loops.

    import parir_torch as parir

    @parir.jit
    def sum_rows(x, y, N, M):
        parir.label('N')
        for i in range(N):
            for j in range(M):
                y[i] += x[i, j]

    sum_rows(x, y, N, M, opts=parir.par({'N': parir.threads(N)}))

See README.md for the model: labels, parallel specifications, and how loops map to the GPU.

The package's modules, in layers, lowest first: each imports only modules above it in this list
(tests/python/test_layers.py checks it), and _C, the C++ extension, lies below them all.

    errors            ParirError and its TypeError and ValueError kinds, ParirWarning
    logs              the "parir_torch" logger: what is compiled and why (TORCH_LOGS, PARIR_LOGS)
    plain_python_ops  the compiled code's semantics as plain Python: typed arithmetic, values
    scans             parir.cumsum, cumprod, cummin, cummax as Python (torch computes them)
    builtins          the names the compiler translates (parir.label, parir.exp, casts), as Python
    plain_python_rewrite  a function's source rewritten to run with those semantics
    plain_python      running a function as plain Python (seq=True), helpers called in it too
    specializations   the in-memory cache of a function's compiled specializations
    types             ElemSize and how torch, NumPy and Python types map onto it
    options           LoopPar and CompileOptions: the list of option fields and its views
    external          parir.external: device functions from outside parir
    arguments         the kinds of arguments: conversion, key, description, launchers
    capture           a Python function's source as IR, and the names its code sees
    callees           the functions a jit function calls
    build             from a call to CUDA source and a runtime program
    recompiles        why a function compiles again: logged, and a warning past a limit
    torch_ops         calls inside torch.compile and torch.export graphs
    checking          parir.check and opts.check: the kernels against the plain Python
    jit_function      JitFunction and @parir.jit: the call path
    outputs           parir.call and parir.out_like
    ufunc_types       the signatures of vectorize and guvectorize, and how a call picks one
    ufunc_kernels     the jit kernels generated for vectorized functions
    ufunc_plans       a vectorized call's operands as views over its loop, and its cached plan
    ufuncs            parir.vectorize and parir.guvectorize: the decorators and the call path
    compile           print_compiled, compile_string, clear_cache
    torchscript       parir kernels in TorchScript
    __init__          the public names
"""

import glob as _glob
import os as _os

import torch as _torch  # noqa: F401  (loads libc10/libtorch before the extension)

from . import _C


def _library_dirs():
    """Where NVRTC may be: the CUDA wheels PyTorch depends on, then CUDA_HOME."""
    dirs = []
    try:
        import nvidia

        for root in nvidia.__path__:
            dirs += sorted(_glob.glob(_os.path.join(root, "cu*", "lib")), reverse=True)
            dirs.append(_os.path.join(root, "cuda_nvrtc", "lib"))
    except ImportError:
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if _os.environ.get(var):
            dirs.append(_os.path.join(_os.environ[var], "lib64"))
    return [d for d in dirs if _os.path.isdir(d)]


_C.set_library_dirs(_library_dirs())

from .builtins import (  # noqa: E402
    bfloat16, float16, float32, float64, gpu, int8, int16, int32, int64, label, uint8, uint16,
    uint32, uint64)
from .builtins import (  # noqa: E402 - the math library, as in a parir function
    abs, acos, acosh, asin, asinh, atan, atan2, atanh, ceil, clamp, copysign, cos, cosh, e, erf,
    erfc, exp, exp2, expm1, floor, fmod, hypot, inf, isfinite, isinf, isnan, log, log1p, log2,
    log10, max, min, nan, pi, pow, prod, remainder, round, rsqrt, sigmoid, sign, sin, sinh,
    sqrt, sum, tan, tanh, trunc, where)
from .builtins import argmax, argmin  # noqa: E402 - index reductions of slices
from .builtins import (  # noqa: E402 - atomic updates of tensor elements
    atomic_add, atomic_and, atomic_cas, atomic_exchange, atomic_max, atomic_min, atomic_or,
    atomic_sub, atomic_xor)
from .scans import cummax, cummin, cumprod, cumsum  # noqa: E402
from .builtins import bool_ as _bool  # noqa: E402
from ._C import ParirError  # noqa: E402
from .errors import ParirTypeError, ParirValueError, ParirWarning  # noqa: E402
from .build import backend_status  # noqa: E402
from .checking import check  # noqa: E402
from .jit_function import JitFunction, jit  # noqa: E402
from .options import (  # noqa: E402
    CompileBackend, CompileOptions, LoopPar, par, parallelize, reduce, threads)
from .types import ElemSize  # noqa: E402
from .external import Target, external  # noqa: E402
from .compile import aot, clear_cache, compile_string, print_compiled  # noqa: E402
from .outputs import call, out_like  # noqa: E402
from .ufuncs import UFunc, guvectorize, vectorize  # noqa: E402
from . import torchscript  # noqa: E402

globals()["bool"] = _bool  # parir.bool(x); assigned here so this module keeps Python's bool

__version__ = "0.1.0"

__all__ = [
    "jit", "label", "threads", "reduce", "LoopPar", "par", "parallelize", "CompileOptions", "CompileBackend",
    "gpu", "print_compiled", "aot", "compile_string", "clear_cache", "ParirError",
    "ParirTypeError", "ParirValueError", "ParirWarning", "JitFunction", "check",
    "backend_status", "ElemSize", "Target", "external", "call", "out_like", "torchscript",
    "vectorize", "guvectorize", "UFunc",
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "clamp",
    "copysign", "cos", "cosh", "e", "erf", "erfc", "exp", "exp2", "expm1", "floor", "fmod",
    "hypot", "inf", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "max", "min",
    "nan", "pi", "pow", "prod", "remainder", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh",
    "sqrt", "sum", "tan", "tanh", "trunc", "where", "argmax", "argmin",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "bool",
    "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exchange", "atomic_cas",
    "atomic_and", "atomic_or", "atomic_xor",
    "cumsum", "cumprod", "cummin", "cummax",
]
