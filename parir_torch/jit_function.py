"""@parir.jit: capture a function once, specialize and compile it per call, launch it."""

import ast
import functools
import inspect
import os
import sys
import tempfile
import textwrap
import weakref

import torch

from . import _C, arguments, callees, torch_ops
from .builtins import COMPILER_NAMES
from .options import (CompileOptions, check_supported, link_libraries, nvrtc_flags,
                      options_key)
from .specializations import SpecializationCache
from .types import elem_size

ParirError = _C.ParirError

# Every JitFunction, so that clear_cache() can empty their memory caches.
_ALL_FUNCTIONS = weakref.WeakSet()


def _aliases(fn):
    """The names under which `fn` reaches parir: {'parir': 'module', 'label': 'label', ...}."""
    import parir_torch

    by_id = {id(v): k for k, v in COMPILER_NAMES.items()}
    scopes = [fn.__globals__]
    if fn.__closure__:
        scopes.append({name: cell.cell_contents
                       for name, cell in zip(fn.__code__.co_freevars, fn.__closure__)
                       if _cell_filled(cell)})
    out = {}
    for scope in scopes:
        for name, value in scope.items():
            if value is parir_torch:
                out[name] = "module"
            elif id(value) in by_id and by_id[id(value)] != "inf":
                out[name] = by_id[id(value)]
    return out


def _cell_filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _convert(fn):
    """Parses `fn`'s source and converts it to the compiler's IR."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise ParirError(f"cannot read the source of {getattr(fn, '__name__', fn)!r} ({e}); "
                         f"parir compiles functions defined in source files") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(defs) != 1 or not isinstance(defs[0], ast.FunctionDef):
        raise ParirError(f"{filename}:{first_line}: parir.jit expects a plain function "
                         f"definition")
    node = defs[0]
    # Line numbers in the IR are the file's: start where the `def` itself is, after decorators.
    return _C.convert_function(node, filename, first_line,
                               [line.rstrip("\n") for line in lines], _aliases(fn))


class _Compiled:
    """A cached specialization: the program, and its launcher for calls with arguments of the
    kinds it was compiled for."""

    __slots__ = ("program", "launch")

    def __init__(self, program, arg_names, args):
        self.program = program
        self.launch = arguments.make_launcher(program, arg_names, args)


def compile_source(fn, fn_ir, args, opts, debug=False, require_cuda=True):
    """Generates the CUDA source (with launch plan) of the Python function `fn`, whose IR is
    `fn_ir`, specialized to `args`. Only the launch needs CUDA tensors: with require_cuda=False
    tensors anywhere (CPU, meta) give their dtype, shape and strides."""
    names = fn_ir.params
    if len(args) != len(names):
        raise ParirError(f"{fn_ir.name}() takes {len(names)} argument"
                         f"{'' if len(names) == 1 else 's'} ({', '.join(names)}) but "
                         f"{len(args)} were given")
    args = [arguments.convert(n, a) for n, a in zip(names, args)]
    described = [arguments.describe(n, a, require_cuda) for n, a in zip(names, args)]
    source, log, _ = _C.compile(fn_ir, described, compiler_options(opts, debug),
                                callees.resolve(fn, fn_ir, _convert))
    if log:
        print(log, file=sys.stdout)
    return source


def compiler_options(opts, debug=False):
    """The options that reach the C++ compiler: a _C.CompileOptions."""
    out = _C.CompileOptions()
    out.parallelize = {label: _C.LoopPar(*p._key()) for label, p in opts.parallelize.items()}
    out.debug_print = bool(debug or opts.debug_print)
    out.use_cuda_graphs = bool(opts.use_cuda_graphs)
    out.use_cuda_thread_block_clusters = bool(opts.use_cuda_thread_block_clusters)
    out.max_thread_blocks_per_cluster = int(opts.max_thread_blocks_per_cluster)
    for field in ("force_int_size", "force_float_size"):
        if getattr(opts, field) is not None:
            setattr(out, field,
                    elem_size(getattr(opts, field), f"CompileOptions.{field}").value)
    # Recorded in the launch plan, so that the source alone builds the same binary.
    out.includes = [os.path.abspath(d) for d in opts.includes]
    out.extra_flags = nvrtc_flags(opts)
    out.link_libraries = link_libraries(opts)
    return out


def load_program(source, opts, name):
    """Wraps CUDA source in a runtime Program (NVRTC compiles it at its first launch)."""
    try:
        return _C.Program(source, [os.path.abspath(d) for d in opts.includes], nvrtc_flags(opts),
                          link_libraries(opts))
    except ParirError as e:
        raise _with_saved_source(e, source, opts, name) from None


def _with_saved_source(err, source, opts, name):
    if not opts.write_output:
        return err
    fd, path = tempfile.mkstemp(prefix=f"parir_{name}_", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return ParirError(f"{err}\n(the CUDA source was saved to {path})")


class JitFunction:
    """A function decorated with @parir.jit. Call it like the original, plus the keywords
    opts= (CompileOptions), seq=True (run the original Python) and debug=True (print the IR
    after each compiler pass)."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.ir = _convert(fn)
        self._names = self.ir.params
        self._cache = SpecializationCache()
        self._graph_entry = torch_ops.graph_entry(self)  # what torch.compile records for a call
        _ALL_FUNCTIONS.add(self)

    def __call__(self, *args, opts=None, seq=False, debug=False, **unexpected):
        if unexpected:
            raise TypeError(f"{self.ir.name}() got unexpected keyword argument(s) "
                            f"{', '.join(map(repr, unexpected))}; parir functions take "
                            f"positional arguments and the keywords opts=, seq=, debug=")
        if opts is None:
            opts = _DEFAULT_OPTIONS
        if seq or opts.seq:
            return self.fn(*args)
        if _dynamo_is_tracing():  # torch.compile: the call becomes a graph node (torch_ops.py)
            return torch_ops.call_in_graph(self, args, opts, debug)
        # The hot path: build the key, find the compiled program, launch.
        try:
            key = (options_key(opts), *map(arguments.fast_key, args))
            compiled = self._cache.get(key) if len(args) == len(self._names) else None
        except arguments.NeedsConversion:
            # Arrays that are not CUDA tensors, dicts, NumPy scalars: converted once, here.
            args = tuple(arguments.convert(n, a) for n, a in zip(self._names, args))
            key = (options_key(opts), *map(arguments.key, args))
            compiled = self._cache.get(key) if len(args) == len(self._names) else None
        except (AttributeError, TypeError):  # malformed options: the slow path explains
            key = compiled = None
        if compiled is None or debug:
            compiled = self._compile(args, opts, debug, key)
        try:
            compiled.launch(args)
        except ParirError as e:
            raise _with_saved_source(e, compiled.program.source, opts, self.ir.name) from None

    def _compile(self, args, opts, debug, key):
        check_supported(opts)
        if opts.verbose_backend_resolution:
            print(backend_status(), file=sys.stdout)
        source = compile_source(self.fn, self.ir, args, opts, debug)
        compiled = _Compiled(load_program(source, opts, self.ir.name), self._names, args)
        if key is not None:
            self._cache[key] = compiled
        return compiled

    def clear_cache(self):
        """Forgets every compiled specialization of this function (the disk cache stays)."""
        self._cache.clear()

    def cache_size(self):
        """How many specializations of this function are compiled and cached in memory."""
        return len(self._cache)


_DEFAULT_OPTIONS = CompileOptions()

# True while Dynamo traces (it evaluates the call to a constant), a cheap call otherwise.
_dynamo_is_tracing = torch.compiler.is_dynamo_compiling


def jit(fn):
    """Decorator: compile `fn` for the GPU. The function is parsed once, here; each call
    specializes it on its arguments (tensor dtypes, shapes and strides, scalar values) and
    on the options, and caches the result."""
    if isinstance(fn, JitFunction):
        return fn
    if not inspect.isfunction(fn):
        raise TypeError(f"parir.jit decorates functions, not {type(fn).__name__}")
    return JitFunction(fn)


def backend_status():
    """Why the CUDA backend can or cannot run here: NVRTC and the driver."""
    ok, why = _C.driver_status()
    lines = ["parir CUDA backend:",
             f"  NVRTC: {_C.nvrtc_status()}",
             f"  driver: {'available' if ok else 'unavailable'} ({why})"]
    return "\n".join(lines)
