"""parir.vectorize and parir.guvectorize: elementwise and generalized operators over tensors,
from functions written for one element (NumbaPro's API, on parir.jit kernels).

    @parir.vectorize(['float32(float32, float32)', 'float64(float64, float64)'])
    def foo(a, b):
        return (a + b) ** 2

    foo(x, y)               # a new tensor of the broadcast shape
    foo(x, 2.0, out=z)      # into z

A call (UFunc._call; _prepare is steps 1 and 2, ufunc_plans.make_plan steps 3 and 4):

1. picks a signature by the inputs' types (ufunc_types.select: exact match first, then the
   first signature the inputs convert to safely);
2. broadcasts the inputs' loop dimensions (all of a vectorized function's; those before the
   core dimensions of a generalized one, whose sizes it checks against the layout) and
   allocates the outputs, or checks the ones given;
3. views every operand over the same loop dimensions (ufunc_plans.Views): broadcast dimensions
   get stride 0, the dimensions are ordered as the first output lies in memory and merged where
   every operand allows, so that contiguous tensors of one shape are one dimension and a
   thread's index is its element's;
4. runs the kernel ufunc_kernels.py generated for the signature, the operands' kinds and the
   number of loop dimensions, with one thread per element of the loop dimensions.

Inside torch.compile, Dynamo traces steps 1 and 2 (allocation is part of the graph); steps 3 and
4 are one graph node (the ufunc's graph entry, registered with allow_in_graph as jit functions'
are, torch_ops.py), which records the views and the parir::launch operator when the graph is
traced. With seq=True the kernel runs as plain Python (parir.jit's seq=True), the user's
function with it. An eager call whose arguments are of the kinds of an earlier one (types,
dtypes, shapes, strides, devices: _call_key) reuses that call's Plan, skipping steps 1 to 3.
"""

import functools
import inspect
import math

import torch

from . import arguments, torch_ops, ufunc_kernels, ufunc_plans
from ._C import ParirError
from .arguments import NumpyScalar
from .capture import function_ir
from .errors import ParirTypeError, ParirValueError, options_type_error
from .options import CompileOptions, as_constants
from .types import TORCH_DTYPES
from .ufunc_types import (NAMES, Param, describe_argument_types, parse_layout,
                          parse_signature, select)

_TARGETS = ("cuda", "gpu")


def _where(fn):
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}: " if code else ""


def _function(fn, decorator):
    """The Python function under a decorator (a @parir.jit function's own)."""
    if getattr(fn, "__parir_jit__", False) is True and hasattr(fn, "fn"):
        fn = fn.fn
    if not inspect.isfunction(fn):
        raise ParirTypeError(f"parir.{decorator} decorates Python functions, not "
                             f"{type(fn).__name__}")
    return fn


def _positional_params(fn, decorator):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or
           p.default is not p.empty for p in params):
        raise ParirTypeError(f"{_where(fn)}parir.{decorator} {fn.__name__}: the function takes "
                             f"positional parameters only, without defaults")
    return tuple(p.name for p in params)


def _signature_list(signatures, decorator):
    if isinstance(signatures, str):
        return [signatures]
    if isinstance(signatures, (list, tuple)) and signatures:
        return list(signatures)
    example = ("['float32(float32, float32)']" if decorator == "vectorize"
               else "['void(float32[:], float32[:], float32[:])'], '(n),(n)->()'")
    raise ParirTypeError(f"parir.{decorator} needs the list of signatures it compiles for, as "
                         f"in @parir.{decorator}({example}): the result's type and the "
                         f"outputs' shapes come from them")


def _check_target(target, decorator):
    if target not in _TARGETS:
        raise ParirValueError(f"parir.{decorator}(target={target!r}): parir compiles for CUDA "
                              f"GPUs (target='cuda', or NumbaPro's 'gpu'); to run the function "
                              f"as plain Python, call it with seq=True")


class UFunc:
    """A function made an operator over tensors by parir.vectorize or parir.guvectorize. Call it
    with the inputs, plus optionally the outputs (positionally after the inputs, or out=), and
    the keywords opts= (CompileOptions without a parallel specification: the ufunc runs one
    thread per element), seq=True (run as plain Python) and debug=True, as jit functions take.

    Called from another parir function, it is its Python function: `foo(x[i], y[i])` in a jit
    function inlines `foo`'s body for one element."""

    # callees.py and seq=True see a ufunc as the function it wraps (.fn, .ir); parir.check
    # tells it from a jit function.
    __parir_jit__ = True
    __parir_ufunc__ = True

    def __init__(self, kind, fn, signatures, layout):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.kind = kind
        self.params = _positional_params(fn, kind)
        self.signatures = tuple(signatures)
        self.layout = layout
        self.n_in, self.n_out = len(layout.inputs), len(layout.outputs)
        self._kernels = {}  # (signature, rank, operand kinds) -> generated JitFunction
        self._plans = {}  # _call_key of an eager call -> its Plan
        self._ir = None
        self._graph_entry = _graph_entry(self)

    @property
    def ir(self):
        """The IR of the Python function, for the jit functions that call it."""
        if self._ir is None:
            self._ir = function_ir(self.fn)
        return self._ir

    def __repr__(self):
        sigs = ", ".join(repr(s.text) for s in self.signatures)
        layout = f", {self.layout.text!r}" if self.kind == "guvectorize" else ""
        return f"<parir.{self.kind} {self.fn.__qualname__} [{sigs}]{layout}>"

    def param(self, sig, k):
        """Parameter k's Param (a vectorized function's output is its result)."""
        if k < len(sig.params):
            return sig.params[k]
        return Param(sig.result, 0)

    def core(self, k):
        """The core dimensions of operand k (inputs, then outputs)."""
        return (self.layout.inputs[k] if k < self.n_in else
                self.layout.outputs[k - self.n_in])

    def _name(self, k):
        if k < len(self.params):
            return self.params[k]
        return "out" if self.n_out == 1 else f"out[{k - self.n_in}]"

    # ----- step 1: the arguments and the signature ------------------------------------------

    def _split(self, args, out):
        n_in, n_out = self.n_in, self.n_out
        if len(args) == n_in + n_out:
            if out is not None:
                raise ParirTypeError(f"{self.__name__}() got its output{'s' * (n_out > 1)} "
                                     f"both as argument{'s' * (n_out > 1)} and as out=")
            return list(args[:n_in]), list(args[n_in:])
        if len(args) != n_in:
            inputs = ", ".join(self.params[:n_in])
            raise ParirTypeError(f"{self.__name__}() takes {n_in} input"
                                 f"{'' if n_in == 1 else 's'} ({inputs}), optionally followed "
                                 f"by {n_out} output{'' if n_out == 1 else 's'}, but "
                                 f"{len(args)} argument{'' if len(args) == 1 else 's'} were "
                                 f"given")
        if out is None:
            return list(args), None
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != n_out:
            raise ParirTypeError(f"{self.__name__}() has {n_out} output"
                                 f"{'' if n_out == 1 else 's'}, but out= gives {len(outs)}")
        return list(args), outs

    def _check_outputs_are_tensors(self, outs):
        for j, o in enumerate(outs or ()):
            if not isinstance(o, torch.Tensor):
                raise ParirTypeError(f"{self.__name__}(): output '{self._name(self.n_in + j)}' "
                                     f"must be a tensor, got {type(o).__name__}")

    def _input(self, k, a):
        """Input k as a tensor, a Python number or a NumpyScalar."""
        t = type(a)
        if t is int or t is float or t is bool:
            return a
        name = self._name(k)
        if not isinstance(a, torch.Tensor):
            a = arguments.convert(name, a)
            if isinstance(a, dict):
                raise ParirTypeError(f"{self.__name__}(): argument '{name}' is a dict; "
                                     f"vectorized functions take tensors and numbers")
            if not isinstance(a, torch.Tensor):
                return a
        elif a.layout != torch.strided or a.is_nested:
            arguments.convert(name, a)  # raises the error for its layout
        if a.dtype not in TORCH_DTYPES:
            raise ParirTypeError(f"{self.__name__}(): argument '{name}' has dtype {a.dtype}, "
                                 f"which parir does not support")
        return a

    def _select(self, inputs):
        types = [a.dtype if isinstance(a, (torch.Tensor, NumpyScalar)) else type(a)
                 for a in inputs]
        index = select(self.signatures, types)
        if index is None:
            listed = ", ".join(s.text for s in self.signatures)
            raise ParirTypeError(
                f"{self.__name__}() has no signature for inputs of types "
                f"({describe_argument_types(types)}); its signatures are: {listed}. Inputs "
                f"convert to a signature's types only where no value changes (NumPy's 'safe' "
                f"casting); convert them, or add a signature")
        return index

    # ----- step 2: shapes, devices and outputs --------------------------------------------

    def _device(self, inputs, outs):
        tensors = [(k, a) for k, a in enumerate(inputs) if isinstance(a, torch.Tensor)]
        tensors += [(self.n_in + j, o) for j, o in enumerate(outs or ())]
        if not tensors:
            raise ParirTypeError(f"{self.__name__}() needs a tensor among its arguments (it "
                                 f"allocates its output there); for numbers alone, call the "
                                 f"function itself: {self.__name__}.fn(...)")
        # Where torch's operators put their result: with the tensors that have dimensions,
        # else with the 0-d tensors off the CPU.
        first = next(((k, a) for k, a in tensors if a.dim() > 0),
                     next(((k, a) for k, a in tensors if a.device.type != "cpu"), tensors[0]))
        device = first[1].device
        for k, a in tensors:
            if a.device != device and not (a.dim() == 0 and a.device.type == "cpu"
                                            and k < self.n_in):
                raise ParirError(f"{self.__name__}(): argument '{self._name(k)}' is on "
                                 f"{a.device}, but argument '{self._name(first[0])}' is on "
                                 f"{device}")
        return device

    def _core_sizes(self, inputs):
        """{dimension name: size} of the core dimensions, and the loop shape of each input
        (None for a number)."""
        sizes, seen, loops = {}, {}, []
        for k, a in enumerate(inputs):
            core = self.core(k)
            if not isinstance(a, torch.Tensor):
                if core:
                    raise ParirValueError(
                        f"{self.__name__}(): argument '{self._name(k)}' is a number, but the "
                        f"layout {self.layout.text!r} gives it the core dimensions "
                        f"({', '.join(map(str, core))})")
                loops.append(None)
                continue
            if a.dim() < len(core):
                raise ParirValueError(
                    f"{self.__name__}(): argument '{self._name(k)}' has {a.dim()} dimension"
                    f"{'' if a.dim() == 1 else 's'}, fewer than its core dimensions "
                    f"({', '.join(map(str, core))}) in the layout {self.layout.text!r}")
            first = a.dim() - len(core)
            for d, dim in enumerate(core):
                self._bind(sizes, seen, dim, a.shape[first + d], k, first + d)
            loops.append(tuple(a.shape[:first]))
        return sizes, loops

    def _bind(self, sizes, seen, dim, size, k, axis):
        where = f"argument '{self._name(k)}' (its dimension {axis})"
        if isinstance(dim, int):
            if size != dim:
                raise ParirValueError(f"{self.__name__}(): the layout {self.layout.text!r} "
                                      f"fixes a core dimension at {dim}, but {where} is {size}")
            return
        if dim in sizes and sizes[dim] != size:
            raise ParirValueError(
                f"{self.__name__}(): core dimension '{dim}' of the layout "
                f"{self.layout.text!r} is {sizes[dim]} in {seen[dim]} but {size} in {where}")
        sizes[dim], seen[dim] = size, where

    def _loop_shape(self, loops):
        """The broadcast of the inputs' loop shapes, as torch broadcasts."""
        rank = max([0] + [len(s) for s in loops if s is not None])
        shape, source = [1] * rank, [None] * rank
        for k, s in enumerate(loops):
            if s is None:
                continue
            for d, size in enumerate(s):
                d += rank - len(s)
                if size == 1:
                    continue
                if shape[d] != 1 and shape[d] != size:
                    raise ParirValueError(
                        f"{self.__name__}(): the inputs do not broadcast: argument "
                        f"'{self._name(k)}' has loop shape {tuple(s)} and argument "
                        f"'{self._name(source[d])}' has {loops[source[d]]}, which differ in "
                        f"loop dimension {d - rank} ({size} and {shape[d]})")
                shape[d], source[d] = size, k
        return tuple(shape)

    def _output_shape(self, j, sizes, loop_shape):
        core = []
        for dim in self.layout.outputs[j]:
            if isinstance(dim, int):
                core.append(dim)
            elif dim in sizes:
                core.append(sizes[dim])
            else:
                raise ParirValueError(f"{self.__name__}(): core dimension '{dim}' of output "
                                      f"{j} is no input's in the layout {self.layout.text!r}; "
                                      f"parir takes output sizes from the inputs")
        return loop_shape + tuple(core)

    def _outputs(self, sig, inputs, outs, sizes, loop_shape, device):
        """(outputs, how they were allocated): the outputs given, checked (allocated: None),
        or new ones (see ufunc_plans.Plan)."""
        shapes = [self._output_shape(j, sizes, loop_shape) for j in range(self.n_out)]
        dtypes = [self.param(sig, self.n_in + j).dtype for j in range(self.n_out)]
        if outs is None:
            like = None
            if self.kind == "vectorize":  # the layout torch's elementwise operators give
                like = next((k for k, a in enumerate(inputs) if isinstance(a, torch.Tensor)
                             and a.dim() > 0 and tuple(a.shape) == loop_shape), None)
            if like is not None:
                return ([torch.empty_like(inputs[like], dtype=dtypes[0])],
                        [("like", like, dtypes[0])])
            return ([torch.empty(s, dtype=d, device=device) for s, d in zip(shapes, dtypes)],
                    [("new", s, d) for s, d in zip(shapes, dtypes)])
        for j, (o, shape, dtype) in enumerate(zip(outs, shapes, dtypes)):
            name = self._name(self.n_in + j)
            if tuple(o.shape) != shape:
                raise ParirValueError(f"{self.__name__}(): output '{name}' has shape "
                                      f"{tuple(o.shape)}, but the inputs give {shape}")
            if o.dtype != dtype:
                raise ParirTypeError(f"{self.__name__}(): output '{name}' has dtype "
                                     f"{NAMES.get(o.dtype, o.dtype)}, but the signature "
                                     f"{sig.text!r} writes {NAMES[dtype]}")
            if any(st == 0 and n > 1 for st, n in zip(o.stride(), o.shape)):
                raise ParirValueError(f"{self.__name__}(): output '{name}' has several "
                                      f"elements in one place (a stride of 0, as expand "
                                      f"gives); pass a tensor whose elements are distinct")
        return outs, None

    # ----- the call ----------------------------------------------------------------------

    def __call__(self, *args, out=None, opts=None, seq=False, debug=False, **unexpected):
        if unexpected:
            raise ParirTypeError(f"{self.__name__}() got unexpected keyword argument(s) "
                                 f"{', '.join(map(repr, unexpected))}; it takes its inputs, "
                                 f"optionally its outputs, and the keywords out=, opts=, seq=, "
                                 f"debug=")
        key = None
        if opts is None and not seq and not debug and not _dynamo_is_tracing():
            key = _call_key(args, out)
            plan = self._plans.get(key) if key is not None else None
            if plan is not None:  # arguments of kinds seen before: checked then
                return plan.run(args, out)
        return self._call(args, out, opts, seq, debug, key)

    def _check_options(self, opts):
        if opts is None:
            return
        if not isinstance(opts, CompileOptions):
            raise options_type_error(opts)
        if opts.parallelize:
            raise ParirValueError(f"{self.__name__}(): a vectorized function runs one thread "
                                  f"per element; leave opts.parallelize empty")

    def _call(self, args, out, opts, seq, debug, key):
        self._check_options(opts)
        if opts is not None:
            seq = seq or opts.seq
        tracing = _dynamo_is_tracing()
        if tracing and (seq or (opts is not None and opts.check)):
            raise ParirError(f"{self.__name__}(): seq=True and opts.check run eagerly, not "
                             f"inside torch.compile")
        sig_index, inputs, outs, loop_shape, allocate = self._prepare(args, out)
        if tracing:
            if math.prod(loop_shape) != 0:
                state = as_constants(opts if opts is not None else _DEFAULT_OPTIONS)
                self._graph_entry(sig_index, state, debug, self.n_in, *inputs, *outs)
        elif math.prod(loop_shape) == 0:
            if key is not None:
                self._remember(key, ufunc_plans.Plan(None, None, [], (), allocate, self.n_in,
                                                     self.n_out, outs[0].device))
        else:
            plan, kernel_args = ufunc_plans.make_plan(self, sig_index, inputs, outs, loop_shape,
                                                      allocate, opts, traced=False)
            plan.kernel(*kernel_args, opts=plan.opts, seq=seq, debug=debug)
            if key is not None:
                self._remember(key, plan)
        return outs[0] if self.n_out == 1 else tuple(outs)

    def _remember(self, key, plan):
        if len(self._plans) >= _MAX_PLANS:  # many kinds of arguments: start afresh
            self._plans.clear()
        self._plans[key] = plan

    def _prepare(self, args, out):
        """Steps 1 and 2: (signature index, inputs, outputs, loop shape, how the outputs were
        allocated)."""
        inputs, outs = self._split(args, out)
        self._check_outputs_are_tensors(outs)
        inputs = [self._input(k, a) for k, a in enumerate(inputs)]
        sig_index = self._select(inputs)
        sig = self.signatures[sig_index]
        device = self._device(inputs, outs)
        sizes, loops = self._core_sizes(inputs)
        loop_shape = self._loop_shape(loops)
        outs, allocate = self._outputs(sig, inputs, outs, sizes, loop_shape, device)
        # Typed NumPy scalars were needed for the signature only: the kernel converts numbers.
        inputs = [a.value if isinstance(a, NumpyScalar) else a for a in inputs]
        return sig_index, inputs, outs, loop_shape, allocate

    def compiled(self, args, opts=None):
        """(kernel, its arguments, its options) of a call with `args` (inputs, optionally
        followed by outputs), without running it: what print_compiled shows of a vectorized
        function. Tensors may be on any device (meta too)."""
        self._check_options(opts)
        sig_index, inputs, outs, loop_shape, allocate = self._prepare(tuple(args), None)
        plan, kernel_args = ufunc_plans.make_plan(self, sig_index, inputs, outs, loop_shape,
                                                  allocate, opts, traced=False)
        return plan.kernel, kernel_args, plan.opts

    def kernel(self, sig_index, rank, kinds, args):
        """The generated kernel (a JitFunction) for a signature, the kinds of the operands and
        the number of loop dimensions, made on first use."""
        key = (sig_index, rank, tuple(kinds))
        kernel = self._kernels.get(key)
        if kernel is None:
            sig = self.signatures[sig_index]
            kernel = ufunc_kernels.make_kernel(
                self.kind, self.fn, self.fn, self.params, kinds, rank,
                f"{self.fn.__qualname__} {sig.text}")
            self._kernels[key] = kernel
        return kernel

    def clear_cache(self):
        """Forgets the generated kernels, their compiled specializations and the plans of
        calls (the disk cache stays)."""
        for kernel in self._kernels.values():
            kernel.clear_cache()
        self._kernels.clear()
        self._plans.clear()


_MAX_PLANS = 256
_DEFAULT_OPTIONS = CompileOptions()
_dynamo_is_tracing = torch.compiler.is_dynamo_compiling


def _tensor_key(a):
    return (a.dtype, a.shape, a.stride(), a.device)


# The key of an eager call's argument by its exact type; other types (NumPy arrays and scalars,
# tensor subclasses) take the checked path every time.
_KEYS = {int: type, float: type, bool: type, torch.Tensor: _tensor_key}


def _call_key(args, out):
    """What determines an eager call's plan: the arguments' kinds, dtypes, shapes, strides and
    devices (numbers' types, not values, which reach the kernel as arguments); None for calls
    with arguments of other types."""
    try:
        key = [_KEYS[type(a)](a) for a in args]
        if out is not None:
            outs = out if isinstance(out, (tuple, list)) else (out,)
            key.append(tuple([_tensor_key(o) for o in outs]) if all(
                type(o) is torch.Tensor for o in outs) else None)
            if key[-1] is None:
                return None
    except (KeyError, RuntimeError):  # RuntimeError: a tensor without strides (sparse)
        return None
    return tuple(key)


def _graph_entry(ufunc):
    """The graph node of a ufunc's call inside torch.compile: steps 3 and 4 of the call,
    traced into views and the parir::launch operator when the graph is."""

    def entry(sig_index, state, debug, n_in, *flat):
        inputs, outs = list(flat[:n_in]), list(flat[n_in:])
        opts = torch_ops.options_from_state(state)
        _, loops = ufunc._core_sizes(inputs)
        plan, kernel_args = ufunc_plans.make_plan(ufunc, sig_index, inputs, outs,
                                                  ufunc._loop_shape(loops), None, opts,
                                                  traced=True)
        torch_ops.launch_traced(plan.kernel, kernel_args, plan.opts, debug)

    entry.__name__ = entry.__qualname__ = f"parir_{ufunc.fn.__name__}"
    return torch.compiler.allow_in_graph(entry)


# ----- the decorators -----------------------------------------------------------------------

def vectorize(signatures=None, target="cuda"):
    """Decorator: an elementwise operator over tensors from a function of scalars.

        @parir.vectorize(['float32(float32, float32)', 'float64(float64, float64)'])
        def foo(a, b):
            return (a + b) ** 2

    Its inputs (tensors, NumPy arrays, Python and NumPy numbers) broadcast as torch broadcasts;
    the output has the chosen signature's result type, on the inputs' device (or is given:
    `foo(x, y, out=z)`, or `foo(x, y, z)`). See ufunc_types for how a signature is chosen."""
    if inspect.isfunction(signatures) or getattr(signatures, "__parir_jit__", False):
        _signature_list(None, "vectorize")
    _check_target(target, "vectorize")
    parsed = [parse_signature(s, arrays=False) for s in _signature_list(signatures, "vectorize")]

    def decorate(fn):
        fn = _function(fn, "vectorize")
        params = _positional_params(fn, "vectorize")
        if not params:
            raise ParirTypeError(f"{_where(fn)}parir.vectorize {fn.__name__}: the function "
                                 f"takes no input; a vectorized function maps its inputs' "
                                 f"elements")
        for s in parsed:
            if len(s.params) != len(params):
                raise ParirTypeError(f"{_where(fn)}parir.vectorize {fn.__name__}: signature "
                                     f"{s.text!r} has {len(s.params)} parameter"
                                     f"{'' if len(s.params) == 1 else 's'}, the function "
                                     f"{len(params)} ({', '.join(params)})")
        layout = parse_layout(f"{','.join(['()'] * len(params))}->()")
        return UFunc("vectorize", fn, parsed, layout)

    return decorate


def guvectorize(signatures=None, layout=None, target="cuda"):
    """Decorator: a generalized operator over tensors, from a function of arrays that writes
    its outputs (NumbaPro's guvectorize).

        @parir.guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()')
        def dot(x, y, out):
            s = 0.0
            for k in range(len(x)):
                s += x[k] * y[k]
            out[0] = s

    `dot(x, y)` with x and y of shape (..., n) runs `dot` on each pair of rows, in parallel over
    the broadcast leading (loop) dimensions, and returns the outputs, shape (...): a `()` output
    is a 1-element array the function writes at [0]."""
    if inspect.isfunction(signatures) or getattr(signatures, "__parir_jit__", False):
        _signature_list(None, "guvectorize")
    _check_target(target, "guvectorize")
    parsed = [parse_signature(s, arrays=True) for s in _signature_list(signatures, "guvectorize")]
    if layout is None:
        raise ParirTypeError("parir.guvectorize needs the layout of its arguments' core "
                             "dimensions after the signatures, as in '(n),(n)->()'")
    parsed_layout = parse_layout(layout)

    def decorate(fn):
        fn = _function(fn, "guvectorize")
        params = _positional_params(fn, "guvectorize")
        cores = parsed_layout.inputs + parsed_layout.outputs
        where = f"{_where(fn)}parir.guvectorize {fn.__name__}"
        if len(cores) != len(params):
            raise ParirTypeError(f"{where}: the layout {layout!r} has {len(cores)} arguments, "
                                 f"the function {len(params)} ({', '.join(params)})")
        for s in parsed:
            if len(s.params) != len(params):
                raise ParirTypeError(f"{where}: signature {s.text!r} has {len(s.params)} "
                                     f"parameters, the function {len(params)}")
            for k, (p, core, name) in enumerate(zip(s.params, cores, params)):
                _check_param(where, s, p, core, name, k >= len(parsed_layout.inputs))
        return UFunc("guvectorize", fn, parsed, parsed_layout)

    return decorate


def _check_param(where, sig, param, core, name, output):
    """A parameter's type against its core dimensions: one ':' per dimension; a `()` input may
    be a scalar or a 1-element array, a `()` output is a 1-element array."""
    if output and param.ndim == 0:
        raise ParirTypeError(f"{where}: output '{name}' is the scalar {param} in {sig.text!r}; "
                             f"an output is an array: a () output is a 1-element array the "
                             f"function writes at [0] ({param}[:])")
    if param.ndim == len(core) or (core == () and param.ndim == 1):
        return
    raise ParirTypeError(f"{where}: '{name}' is {param} in {sig.text!r}, with {param.ndim} "
                         f"dimension{'' if param.ndim == 1 else 's'}, but has "
                         f"{len(core)} core dimension{'' if len(core) == 1 else 's'} "
                         f"({', '.join(map(str, core))}) in the layout")
