"""Compiling without calling (print_compiled, aot), running edited code (compile_string), and
clearing the caches."""

import math

import torch

from . import _C, arguments
from ._C import ParirError
from .build import compile_source, load_program, with_saved_source
from .capture import function_ir
from .errors import ParirTypeError, ParirValueError
from .jit_function import JitFunction, clear_memory_caches
from .options import CompileOptions, check_supported
from .ufuncs import UFunc


def print_compiled(fn, args, opts=None):
    """The CUDA C++ that `fn` compiles to for these arguments and options, with its launch plan
    (the "//@" lines at the end). `fn` may be any Python function, decorated or not, or a
    vectorized function (the kernel of its call on `args`, its inputs). Needs no
    GPU: scalars are inlined and tensor shapes hard-coded, so tensors of the same dtype, shape
    and strides on any device (CPU or meta too) give the same code."""
    if opts is None:
        opts = CompileOptions()
    check_supported(opts)
    if isinstance(fn, UFunc):  # the kernel of a vectorized function's call with these inputs
        fn, args, opts = fn.compiled(args, opts)
    if isinstance(fn, JitFunction):
        return compile_source(fn.fn, fn.ir, list(args), opts, require_cuda=False)
    return compile_source(fn, function_ir(fn), list(args), opts, require_cuda=False)


def aot(fn, args=None, opts=None, archs=None, ptx=True):
    """Ahead-of-time binaries: print_compiled's text for `fn` and `args` (or the program text
    `fn`, as print_compiled or compile_string take it) with CUBIN compiled for each of `archs`
    ("sm_80", "sm_90", ...; by default those of the GPUs here) and, with `ptx`, PTX for the
    oldest of them. Whatever runs the text (a TorchScript module or exported program holding
    it, torch.ops.parir.launch, the C++ library, compile_string) loads the CUBIN that runs on
    its GPU without NVRTC and without a compile pause; else the PTX, which the driver compiles
    for a newer GPU; else it compiles the source with NVRTC as usual. Needs NVRTC, no GPU."""
    if isinstance(fn, str):
        if args is not None or opts is not None:
            raise ParirTypeError("parir.aot(program_text, archs=...) takes the options from the "
                                 "text; give args and opts only with a function")
        source = fn
    else:
        source = print_compiled(fn, args, opts)
    archs = _architectures(archs)
    try:
        return _C.Program(source).with_binaries(archs, bool(ptx))
    except ParirError as e:
        raise with_saved_source(e, source, opts or CompileOptions(), "aot") from None


def _architectures(archs):
    """The architectures parir.aot compiles for, as a list of "sm_XY" strings."""
    if archs is None:
        if not torch.cuda.is_available():
            raise ParirValueError("parir.aot: there is no GPU here to take the architecture "
                                  "from; name the GPUs' architectures, e.g. archs=['sm_80', "
                                  "'sm_90'] (sm_ and the compute capability's digits)")
        archs = sorted({"sm_{}{}".format(*torch.cuda.get_device_capability(d))
                        for d in range(torch.cuda.device_count())})
    if isinstance(archs, str):
        archs = [archs]
    if not isinstance(archs, (list, tuple)) or not all(isinstance(a, str) for a in archs):
        raise ParirTypeError(f"parir.aot: archs is a list of architectures such as 'sm_90', "
                             f"got {archs!r}")
    return list(archs)


def compile_string(fun_name, code, opts=None):
    """A callable running `code`: CUDA C++ with a launch plan, as print_compiled writes it
    (possibly edited by hand). It takes the same arguments as the function that was printed
    (the plan's `//@ signature` line); scalars must have the values the code was specialized
    for. `fun_name` is the function's name in the plan. opts.includes and opts.extra_flags
    reach NVRTC; with opts.write_output a failing source is saved to a file named in the
    error. With a GPU present the code is compiled now, so errors show here."""
    if opts is None:
        opts = CompileOptions()
    check_supported(opts)
    if not isinstance(code, str):
        raise ParirTypeError(f"compile_string takes the code as a str, got "
                             f"{type(code).__name__}")
    program = load_program(code, opts, fun_name, add_options=True)
    if program.function != fun_name:
        raise ParirError(f"compile_string('{fun_name}', ...): the code's launch plan is for "
                         f"'{program.function}' (its '//@ parir.plan' line)")
    compiled = CompiledString(program, opts)
    if torch.cuda.is_available():
        compiled.compile()
    return compiled


class CompiledString:
    """The callable compile_string returns."""

    def __init__(self, program, opts):
        self.program = program
        self._opts = opts
        self.__name__ = program.function
        if program.signature:
            self._params = _parse_signature(program.signature)
        else:  # a plan written without one: the tensors, in the plan's order
            self._params = {name: _TENSOR for name, _ in program.params}
        self._names = list(self._params)
        self._launchers = {}

    def compile(self, arch=None):
        """Compiles the code now, for `arch` ("sm_90", ...; by default the current GPU's) and,
        with a GPU, loads it there. Needs no GPU when `arch` is given."""
        try:
            if arch is None:
                self.program.prepare(torch.cuda.current_device())
            else:
                self.program.compile(arch)
        except ParirError as e:
            raise with_saved_source(e, self.program.source, self._opts, self.__name__) from None

    def __repr__(self):
        sig = self.program.signature or f"{self.__name__}({', '.join(self._names)})"
        return f"<parir compiled code {sig}>"

    def __call__(self, *args):
        name = self.__name__
        if len(args) != len(self._names):
            raise ParirTypeError(f"{name}() takes {len(self._names)} argument"
                                 f"{'' if len(self._names) == 1 else 's'} "
                                 f"({', '.join(self._names)}) but {len(args)} were given")
        args = tuple(arguments.convert(n, a) for n, a in zip(self._names, args))
        for pname, a in zip(self._names, args):
            _check_argument(name, pname, self._params[pname], a)
        key = tuple(map(arguments.key, args))
        launch = self._launchers.get(key)
        if launch is None:
            launch = self._launchers[key] = arguments.make_launcher(self.program, self._names,
                                                                    args)
        try:
            launch(args)
        except ParirError as e:
            raise with_saved_source(e, self.program.source, self._opts, name) from None


_TENSOR = "tensor"


def _split_top_level(text):
    items, depth, cur = [], 0, ""
    for c in text:
        depth += c in "([" and 1 or c in ")]" and -1 or 0
        if c == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        items.append(cur.strip())
    return items


def _parse_value(text, where):
    """A scalar of the signature line: (value, dtype name or None)."""
    dtype = None
    if text.endswith(")") and "(" in text:
        dtype, text = text[:-1].split("(", 1)
    words = {"True": True, "False": False, "None": None, "inf": math.inf, "-inf": -math.inf,
             "nan": math.nan}
    if text in words:
        return words[text], dtype
    try:
        return (float(text) if any(c in text for c in ".en") else int(text)), dtype
    except ValueError:
        raise ParirError(f"the '//@ signature' line: cannot read the value {text!r} of "
                         f"{where}") from None


def _parse_signature(sig):
    """{parameter: _TENSOR | (value, dtype) | {key: _TENSOR | (value, dtype)}} from a
    signature line such as "f(x, N=1000, d['k']=2.5)"."""
    inner = sig[sig.index("(") + 1:sig.rindex(")")] if "(" in sig else ""
    params = {}
    for item in _split_top_level(inner):
        lhs, _, rhs = item.partition("=")
        lhs = lhs.strip()
        what = _parse_value(rhs.strip(), lhs) if rhs else _TENSOR
        if "[" in lhs:
            name, key = lhs[:-1].split("[", 1)
            params.setdefault(name, {})[key.strip("'\"")] = what
        else:
            params[lhs] = what
    return params


def _check_argument(fn, name, expected, a):
    """The argument must be of the kind, and a scalar of the value, the code was compiled for."""
    if isinstance(expected, dict):
        if not isinstance(a, dict) or set(a) != set(expected):
            raise ParirError(f"{fn}(): argument '{name}' must be a dict with the keys "
                             f"{sorted(expected)}, as the code was compiled for")
        for k, v in expected.items():
            _check_argument(fn, f"{name}['{k}']", v, a[k])
        return
    is_tensor = hasattr(a, "shape") and len(a.shape) > 0
    if expected == _TENSOR:
        if not is_tensor:
            raise ParirError(f"{fn}(): argument '{name}' must be a tensor")
        return
    value, _ = expected
    got = a.item() if hasattr(a, "item") and not isinstance(a, (int, float)) else (
        a.value if isinstance(a, arguments.NumpyScalar) else a)
    same = got == value or (got != got and value != value)
    if is_tensor or not same:
        raise ParirError(f"{fn}(): the code was compiled for {name}={value!r}, but {name}="
                         f"{got!r} was passed; scalars are compiled into the code, so "
                         f"print_compiled it again for the new value")


def clear_cache():
    """Empties the in-memory caches of every jit function and the on-disk kernel cache."""
    clear_memory_caches()
    _C.clear_disk_cache()
