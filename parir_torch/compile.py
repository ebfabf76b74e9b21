"""Compiling without calling: print_compiled, and clearing the caches."""

from . import _C
from .jit_function import _ALL_FUNCTIONS, JitFunction, _convert, compile_source
from .options import CompileOptions, check_supported


def print_compiled(fn, args, opts=None):
    """The CUDA C++ that `fn` compiles to for these arguments and options, with its launch plan
    (the "//@" lines at the end). `fn` may be any Python function, decorated or not. Needs no
    GPU: scalars are inlined and tensor shapes hard-coded, so tensors of the same dtype, shape
    and strides on any device (CPU or meta too) give the same code."""
    if opts is None:
        opts = CompileOptions()
    check_supported(opts)
    fn_ir = fn.ir if isinstance(fn, JitFunction) else _convert(fn)
    return compile_source(fn_ir, list(args), opts, require_cuda=False)


def clear_cache():
    """Empties the in-memory caches of every jit function and the on-disk kernel cache."""
    for f in list(_ALL_FUNCTIONS):
        f.clear_cache()
    _C.clear_disk_cache()
