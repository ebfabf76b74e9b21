"""@parir.jit: capture a function once, specialize and compile it per call, launch it."""

import functools
import inspect
import logging
import sys
import time
import weakref

import torch

from . import arguments, checking, plain_python, recompiles, torch_ops
from . import _C
from ._C import ParirError
from .build import (backend_status, compile_source, load_program, with_defaults,
                    with_saved_source)
from .capture import function_ir
from .errors import ParirTypeError, options_type_error
from .logs import log
from .options import CompileOptions, check_supported, options_key
from .specializations import SpecializationCache

# Every JitFunction, so that clear_memory_caches() can empty them.
_ALL_FUNCTIONS = weakref.WeakSet()


class _Compiled:
    """A cached specialization: the program, and its launcher for calls with arguments of the
    kinds it was compiled for."""

    __slots__ = ("program", "launch")

    def __init__(self, program, arg_names, args):
        self.program = program
        self.launch = arguments.make_launcher(program, arg_names, args)


class JitFunction:
    """A function decorated with @parir.jit. Call it like the original, plus the keywords
    opts= (CompileOptions), seq=True (run the original Python) and debug=True (print the IR
    after each compiler pass, and check tensor accesses at run time). With opts.check the call
    runs the kernels and then the original Python, and compares them (parir.check)."""

    # How callees.py tells a jit function (its .fn and .ir) from other callables.
    __parir_jit__ = True

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        # Decorating only captures: a construct parir cannot compile is reported when the
        # function is first compiled (called, or printed), so that one such function does not
        # break the import of the module that defines it, and of the functions beside it.
        try:
            self._ir, self._capture_error = function_ir(fn), None
        except ParirError as e:
            self._ir, self._capture_error = None, e
        self._names = self._ir.params if self._ir is not None else ()
        self._cache = SpecializationCache(name=fn.__name__)
        # The same specializations, found and launched in C++ (csrc/python/call_table.h), for
        # calls whose every argument is a CUDA tensor or a Python number: the cached call's
        # path. Filled from _cache on the first such call of each specialization; emptied
        # whenever _cache drops one.
        self._calls = _new_call_table()
        self._compile_count = 0  # specializations compiled for the cache (recompiles.py)
        self._warned_recompiles = False
        self._graph_entry = torch_ops.graph_entry(self)  # what torch.compile records for a call
        _ALL_FUNCTIONS.add(self)

    @property
    def ir(self):
        """The function's untyped IR; raises the error of a function parir cannot compile."""
        if self._capture_error is not None:
            raise self._capture_error.with_traceback(None)
        return self._ir

    def __call__(self, *args, opts=None, seq=False, debug=False, **unexpected):
        if len(args) < len(self._names):  # parameters left out take their defaults
            args = tuple(with_defaults(self.fn, self._names, args))
        # The hot path: the call's key is built, found and launched in C++. Not while Dynamo
        # traces (it would break the graph at the C++ call; the call becomes a graph node below).
        if not (seq or debug or unexpected or _dynamo_is_tracing()):
            try:
                if self._calls.launch(opts, args):
                    return None
            except RuntimeError as e:
                self._explain_launch_error(e, self._calls.find(opts, args), args, opts)
        if unexpected:
            raise ParirTypeError(f"{self.fn.__name__}() got unexpected keyword argument(s) "
                                 f"{', '.join(map(repr, unexpected))}; parir functions take "
                                 f"positional arguments and the keywords opts=, seq=, debug=")
        if opts is None:
            opts = _DEFAULT_OPTIONS
        try:  # free unless it raises: opts of another type fail here, at their first field
            other = seq or opts.seq or opts.check
        except AttributeError:
            raise options_type_error(opts) from None
        if other:
            if seq or opts.seq:
                return plain_python.run(self.fn, args)
            return checking.check_call(self, args, opts, debug)
        if _dynamo_is_tracing():  # torch.compile: the call becomes a graph node (torch_ops.py)
            return torch_ops.call_in_graph(self, args, opts, debug)
        # The first call of a specialization, or arguments that need converting.
        call_args, short = args, True
        try:
            key = (options_key(opts), *[_KIND_BY_TYPE[type(a)](a) for a in args])
            compiled = self._cache.get(key) if len(args) == len(self._names) else None
        except (KeyError, arguments.NeedsConversion, RuntimeError):
            # Arrays that are not CUDA tensors, dicts, NumPy scalars, 0-d tensors: converted
            # once, here (conversion explains torch's error for a tensor without strides).
            short = False
            if len(args) == len(self._names):
                args = tuple(arguments.convert(n, a) for n, a in zip(self._names, args))
                key = (options_key(opts), *map(arguments.key, args))
                compiled = self._cache.get(key)
            else:  # compiling explains
                key = compiled = None
        except (AttributeError, TypeError):  # malformed options: the slow path explains
            key = compiled = None
            short = False
        if compiled is None or debug:
            if plain_python.active():  # called by a function that runs as plain Python
                return plain_python.call(self.fn, call_args)
            compiled = self._compile(args, opts, debug, key)
        try:
            compiled.launch(args)
        except RuntimeError as e:
            self._explain_launch_error(e, compiled, args, opts)
        # Only a call that launched: the table's calls skip the checks the launch made.
        if short and not debug and key in self._cache:
            self._calls.add(opts, call_args, compiled)

    def _explain_launch_error(self, e, compiled, args, opts):
        """Raises the error of a failed launch, explained."""
        # A sparse tensor keyed like a dense one reaches the launch: say so, not torch.
        if len(args) == len(self._names):
            arguments.check_layouts(self._names, args)
        if isinstance(e, ParirError) and compiled is not None:
            raise with_saved_source(e, compiled.program.source, opts,
                                    self.ir.name) from None
        raise e

    def _compile(self, args, opts, debug, key):
        check_supported(opts)
        if opts.verbose_backend_resolution:
            print(backend_status(), file=sys.stdout)
        cached = key is not None and not debug
        if cached:
            recompiles.note_new_specialization(self, key)
        start = time.perf_counter()
        source = compile_source(self.fn, self.ir, args, opts, debug)
        compiled = _Compiled(load_program(source, opts, self.ir.name), self._names, args)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("compiled %s to CUDA in %.1f ms (NVRTC compiles it at its first launch)",
                      compiled.program.signature or self.ir.name,
                      (time.perf_counter() - start) * 1e3)
        # A debug=True call's code is bounds-checked: it does not stand for later plain calls.
        if cached:
            if key not in self._cache and len(self._cache) >= self._cache.limit:
                self._calls.clear()  # the cache drops a specialization the table may hold
            self._cache[key] = compiled
        return compiled

    def clear_cache(self):
        """Forgets every compiled specialization of this function (the disk cache stays), and
        starts counting its specializations afresh."""
        self._cache.clear()
        self._calls.clear()
        self._compile_count = 0
        self._warned_recompiles = False

    def cache_size(self):
        """How many specializations of this function are compiled and cached in memory."""
        return len(self._cache)


def clear_memory_caches():
    """Forgets the compiled specializations of every jit function."""
    for f in list(_ALL_FUNCTIONS):
        f.clear_cache()


_DEFAULT_OPTIONS = CompileOptions()
_KIND_BY_TYPE = arguments.KIND_BY_TYPE  # a global of this module: the hot path's fastest lookup


def _new_call_table():
    from .options import FIELDS, LoopPar

    return _C.CallTable(_DEFAULT_OPTIONS, [f.name for f in FIELDS if f.key], ["seq", "check"],
                        LoopPar)

# True while Dynamo traces (it evaluates the call to a constant), a cheap call otherwise.
_dynamo_is_tracing = torch.compiler.is_dynamo_compiling


def jit(fn):
    """Decorator: compile `fn` for the GPU. The function is parsed once, here; each call
    specializes it on its arguments (tensor dtypes, shapes and strides, scalar values) and
    on the options, and caches the result."""
    if isinstance(fn, JitFunction):
        return fn
    if not inspect.isfunction(fn):
        raise ParirTypeError(f"parir.jit decorates functions, not {type(fn).__name__}")
    return JitFunction(fn)
