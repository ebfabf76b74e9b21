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

from . import _C, torch_ops
from .builtins import COMPILER_NAMES
from .options import CompileOptions, check_supported, options_key
from .specializations import SpecializationCache

ParirError = _C.ParirError

# torch dtype -> the compiler's element type name. float16 and bfloat16 are not supported yet.
_DTYPES = {
    torch.bool: "bool",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.uint16: "uint16",
    torch.uint32: "uint32",
    torch.uint64: "uint64",
    torch.float32: "float32",
    torch.float64: "float64",
}

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

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


def _arg_key(name, a):
    """The specialization key of one argument: what the generated code depends on."""
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.shape, a.stride(), a.is_cuda)
    t = type(a)
    if t is int or t is float or t is bool:
        return (t, a)
    return _bad_argument(name, a)


def _bad_argument(name, a):
    if isinstance(a, int) and not isinstance(a, bool):
        return (int, int(a))
    if isinstance(a, float):
        return (float, float(a))
    raise ParirError(
        f"argument '{name}' is a {type(a).__module__}.{type(a).__qualname__}; parir functions "
        f"take CUDA tensors, ints, floats and bools")


def _describe_arg(name, a, require_cuda=True):
    """The compiler's view of an argument, checked for what this version supports."""
    if isinstance(a, torch.Tensor):
        if a.dtype not in _DTYPES:
            raise ParirError(f"argument '{name}' has dtype {a.dtype}, which parir does not "
                             f"support yet; supported: "
                             f"{', '.join(str(d) for d in _DTYPES)}")
        if require_cuda and a.device.type != "cuda":
            raise ParirError(f"argument '{name}' is a tensor on {a.device}; parir kernels run "
                             f"on the GPU and need CUDA tensors: pass {name}.cuda()")
        return ("tensor", _DTYPES[a.dtype], list(a.shape), list(a.stride()))
    if isinstance(a, bool):
        return ("bool", a)
    if isinstance(a, int):
        if not _INT64_MIN <= a <= _INT64_MAX:
            raise ParirError(f"argument '{name}' = {a} does not fit in a 64-bit integer")
        return ("int", int(a))
    if isinstance(a, float):
        return ("float", float(a))
    _bad_argument(name, a)


class _Compiled:
    """A cached specialization: the program and which arguments go to it, written ones first."""

    __slots__ = ("program", "outs", "ins", "launch")

    def __init__(self, program, arg_names):
        self.program = program
        index = {n: i for i, n in enumerate(arg_names)}
        self.outs = [index[n] for n, written in program.params if written]
        self.ins = [index[n] for n, written in program.params if not written]
        # launch(args) runs the program on the call's argument tuple.
        self.launch = program.bind(self.outs, self.ins)


def compile_source(fn_ir, args, opts, debug=False, require_cuda=True):
    """Generates the CUDA source (with launch plan) of `fn_ir` specialized to `args`. Only the
    launch needs CUDA tensors: with require_cuda=False tensors anywhere (CPU, meta) give their
    dtype, shape and strides."""
    names = fn_ir.params
    if len(args) != len(names):
        raise ParirError(f"{fn_ir.name}() takes {len(names)} argument"
                         f"{'' if len(names) == 1 else 's'} ({', '.join(names)}) but "
                         f"{len(args)} were given")
    described = [_describe_arg(n, a, require_cuda) for n, a in zip(names, args)]
    spec = {label: p._key() for label, p in opts.parallelize.items()}
    source, log = _C.compile(fn_ir, described, spec, debug or opts.debug_print,
                             bool(opts.use_cuda_graphs),
                             bool(opts.use_cuda_thread_block_clusters),
                             int(opts.max_thread_blocks_per_cluster))
    if log:
        print(log, file=sys.stdout)
    return source


def load_program(source, opts, name):
    """Wraps CUDA source in a runtime Program (NVRTC compiles it at its first launch)."""
    try:
        return _C.Program(source, list(opts.includes), list(opts.extra_flags))
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
            key = (options_key(opts), *[_arg_key(n, a) for n, a in zip(self._names, args)])
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
        source = compile_source(self.ir, args, opts, debug)
        compiled = _Compiled(load_program(source, opts, self.ir.name), self._names)
        if key is not None:
            self._cache[key] = compiled
        return compiled

    def clear_cache(self):
        self._cache.clear()


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
