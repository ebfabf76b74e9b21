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
    abs, atan2, bfloat16, cos, exp, float16, float32, float64, gpu, inf, int8, int16, int32,
    int64, label, log, max, min, prod, sin, sqrt, sum, tanh, uint8, uint16, uint32, uint64)
from .builtins import bool_ as _bool  # noqa: E402
from .jit_function import JitFunction, ParirError, backend_status, jit  # noqa: E402
from .options import (  # noqa: E402
    CompileBackend, CompileOptions, LoopPar, par, reduce, threads)
from .types import ElemSize  # noqa: E402
from .external import Target, external  # noqa: E402
from .compile import clear_cache, compile_string, print_compiled  # noqa: E402

globals()["bool"] = _bool  # parir.bool(x); assigned here so this module keeps Python's bool

__version__ = "0.1.0"

__all__ = [
    "jit", "label", "threads", "reduce", "LoopPar", "par", "CompileOptions", "CompileBackend",
    "gpu", "print_compiled", "compile_string", "clear_cache", "ParirError", "JitFunction", "backend_status",
    "ElemSize", "Target", "external",
    "exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "atan2", "min", "max", "sum", "prod", "inf",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "bool",
]
