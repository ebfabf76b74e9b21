"""Seeded random parir programs, for differential testing of the compiler.

`generate(seed, names=...)` returns a `Program`: the Python source of a module holding one
`@parir.jit` function (and the helpers it calls), the arguments to call it with, and the
parallel specification. Every program is valid in the language README.md documents, and its
result is defined: the compiled kernels and the same function run as plain Python
(`seq=True`) must agree, exactly for integers and bools, within a dtype-aware tolerance for
floats. The generator guarantees that by construction:

* no races: a statement inside parallel loops writes an element chosen by every enclosing
  parallel loop variable, and a nest reads a tensor it writes only at the element the same
  iteration writes (reduction targets are not read at all in their nest);
* no out-of-bounds accesses: every index is a loop variable whose range lies inside the
  dimension (possibly counted from the end), or a constant;
* no undefined arithmetic: each integer expression carries an interval, and an operation
  whose result could leave its type (or divide by zero, or shift out) is not generated;
* no discontinuities on rounding noise: a float only flows into an integer, a bool, a
  comparison or a condition when it is exact (read from memory, a literal, an integer
  converted), never after arithmetic whose rounding may differ between CPU and GPU.

Programs are built as nests (one top-level statement each: a loop nest, a slice statement,
a `with parir.gpu:` block, a host loop) drawn from the constructs README.md lists. The
`features` of a program name the constructs it uses, so a test can skip the programs that
use a construct whose compilation is known to be wrong.

The `names` mode picks identifiers: `ordinary` (x0, out1, i2), `awkward` (C++ keywords and
CUDA builtins, names starting with `parir_`, non-ASCII, names that collide with what the
compiler generates) or `mixed`.
"""

import dataclasses
import math
import random

import torch

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = FLOATS + INTS + ("bool",)

INT_RANGE = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
             "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "uint8": (0, 255),
             "bool": (0, 1)}
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8}
# Magnitudes floats may reach: far inside float16's range, so no value overflows anywhere.
FLOAT_LIMIT = 1e3
# Float precision, lowest first: the tolerance of an output follows its least precise input.
PRECISION = ("bfloat16", "float16", "float32", "float64")

# Identifiers that are legal Python but mean something in C++ or CUDA, or look like what the
# compiler itself generates. Names of Python builtins the generated code calls are listed in
# SHADOWING: a function using one of them as a local calls parir's version instead.
CPP_NAMES = [
    "int", "auto", "register", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
    "xor", "bitand", "bitor", "compl", "not_eq", "and_eq", "or_eq", "xor_eq", "static_cast",
    "reinterpret_cast", "const_cast", "NULL", "nullptr", "fabs", "size_t", "__half",
    "__nv_bfloat16", "half", "double", "char", "short", "long", "unsigned", "signed", "void",
    "const", "volatile", "extern", "inline", "static", "template", "typename", "namespace",
    "using", "new", "delete", "this", "operator", "union", "struct", "enum", "typedef",
    "sizeof", "goto", "switch", "case", "default", "do", "true", "false", "int8_t",
    "int64_t", "uint8_t", "printf", "expf", "sqrtf", "exp", "log", "sqrt", "sin", "cos",
    "tanh", "pow", "floor", "fmod", "atan2", "main", "std", "INFINITY", "NAN", "__global__",
    "__device__", "__shared__", "__syncthreads", "atomicAdd", "float", "bool", "min", "max",
    "abs", "alignas", "decltype", "noexcept", "thread_local", "concept", "requires",
    "d__k", "blockIdx_", "u03c0",
]
GENERATED_NAMES = ["parir_t", "parir_block", "parir_b0", "parir_result", "parir_x", "acc0",
                   "acc1", "red0", "red1", "r0", "s0", "i_", "int_", "π", "λ", "x__y"]
SHADOWING = {"int", "float", "bool", "min", "max", "abs"}
# C library functions and types (not C++ keywords): a kernel named like one is declared
# `extern "C"` next to the library's declaration.
C_FUNCTIONS = {"fabs", "size_t", "printf", "expf", "sqrtf", "std", "NULL"}
# Classes of awkward identifiers, each a feature of the programs using one (`name_<class>`).
NAME_CLASSES = {
    "cpp_alternative_token": {"xor", "bitand", "bitor", "compl", "not_eq", "and_eq", "or_eq",
                              "xor_eq"},
    "cpp_keyword": {"int", "auto", "register", "double", "char", "short", "long", "unsigned",
                    "signed", "void", "const", "volatile", "extern", "inline", "static",
                    "template", "typename", "namespace", "using", "new", "delete", "this",
                    "operator", "union", "struct", "enum", "typedef", "sizeof", "goto",
                    "switch", "case", "default", "do", "true", "false", "nullptr", "float",
                    "bool", "alignas", "decltype", "noexcept", "concept", "requires"},
    "cpp_cast_keyword": {"static_cast", "reinterpret_cast", "const_cast"},
    "thread_local": {"thread_local"},
    "null_macro": {"NULL"},
    "c_macro": {"INFINITY", "NAN"},
    "cuda_builtin": {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__global__",
                     "__device__", "__shared__", "__syncthreads", "atomicAdd", "__half",
                     "__nv_bfloat16", "half"},
    "c_library": {"fabs", "size_t", "printf", "expf", "sqrtf", "exp", "log", "sqrt", "sin",
                  "cos", "tanh", "pow", "floor", "fmod", "atan2", "main", "std", "int8_t",
                  "int64_t", "uint8_t", "min", "max", "abs"},
    "generated_like": {"parir_t", "parir_block", "parir_b0", "parir_result", "parir_x",
                       "acc0", "acc1", "red0", "red1", "r0", "s0", "i_", "x__y", "d__k",
                       "blockIdx_", "u03c0"},
}
LONG_NAME = "a_rather_long_identifier_" * 9
AWKWARD = CPP_NAMES + GENERATED_NAMES

SIZES = (1, 2, 31, 32, 33, 64, 100)
LONG_SIZES = (4099, 4101, 8192, 8195)
THREADS = (1, 2, 31, 32, 33, 64, 100, 128, 257, 1000, 1024, 2048, 5000)
TPB = (32, 64, 96, 128, 256, 512, 1024)


@dataclasses.dataclass
class Ty:
    """A parir type: a dtype name, and whether it is weak (a literal or a Python scalar)."""
    name: str
    weak: bool = False

    @property
    def kind(self):
        return "b" if self.name == "bool" else "f" if self.name in FLOATS else "i"


def _kind_rank(k):
    return "bif".index(k)


def promote(a, b):
    """The type of a binary arithmetic operation, by README.md's rules 1-3."""
    if a.kind != b.kind:
        hi, lo = (a, b) if _kind_rank(a.kind) > _kind_rank(b.kind) else (b, a)
        if hi.weak and not lo.weak:
            return Ty("float64" if hi.kind == "f" else "int64")
        return hi
    if a.weak and b.weak:
        return a
    if a.weak or b.weak:
        return b if a.weak else a
    return Ty(_wider(a.name, b.name))


def _wider(a, b):
    if a == b:
        return a
    if a in FLOATS:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        order = ("float16", "bfloat16", "float32", "float64")
        return max(a, b, key=order.index)
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if "uint8" in (a, b):
        other = b if a == "uint8" else a
        return "int16" if other == "int8" else other
    return max(a, b, key=lambda t: INT_BITS[t])


@dataclasses.dataclass
class Expr:
    """A generated expression: its code, parir type, value interval [lo, hi], whether its
    value is exact on both sides (no float rounding involved), and its least float
    precision (an index into PRECISION; len(PRECISION) when no float is involved)."""
    code: str
    ty: Ty
    lo: float
    hi: float
    exact: bool = True
    prec: int = len(PRECISION)
    ops: int = 0


@dataclasses.dataclass
class TensorArg:
    """A tensor argument: logical shape, dtype, how the view is made, initial value range."""
    name: str
    dtype: str
    shape: tuple
    view: str = "contiguous"      # contiguous | transpose | strided | offset | bare1 | zerod
    lo: float = -2.0
    hi: float = 2.0
    written: bool = False
    prec: int = len(PRECISION)    # least precision of any value written into it
    ops: int = 0                  # most operations behind a value written into it
    reduced: int = 1              # longest reduction behind a value written into it
    positive: bool = False        # initial values in [lo, hi] (else +-[0.5, 2] for floats)
    init: tuple = None            # (lo, hi) of the initial values, set at creation


@dataclasses.dataclass
class ScalarArg:
    name: str
    value: object


@dataclasses.dataclass
class DictArg:
    name: str
    entries: dict                 # key -> TensorArg | ScalarArg


@dataclasses.dataclass
class Program:
    seed: int
    names: str
    source: str
    fn_name: str
    params: list                  # TensorArg | ScalarArg | DictArg, in parameter order
    spec: dict                    # label -> (threads, True/False/"scan", tpb or None)
    features: set
    gpu_sized: bool = False       # sizes small enough for the plain Python run
    options: dict = dataclasses.field(default_factory=dict)  # CompileOptions fields besides it

    def spec_source(self):
        """The parallel specification as Python source, for a reproducer."""
        items = []
        for label, (n, red, tpb) in self.spec.items():
            s = f"parir.threads({n})" + {True: ".reduce()", "scan": ".scan()"}.get(red, "")
            s += f".tpb({tpb})" if tpb else ""
            items.append(f"{label!r}: {s}")
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return "{" + ", ".join(items) + "}" + extra

    def make_opts(self):
        """The CompileOptions of the call: the specification and the other options."""
        import parir_torch as parir
        return parir.CompileOptions(parallelize=self.make_spec(), **self.options)

    def make_spec(self):
        import parir_torch as parir
        out = {}
        for label, (n, red, tpb) in self.spec.items():
            p = parir.threads(n)
            p = p.scan() if red == "scan" else p.reduce() if red else p
            out[label] = p.tpb(tpb) if tpb else p
        return out

    def make_args(self, device="cpu"):
        """The arguments, the same values for the same program (seeded by the program's
        seed). Tensors of written arguments start with random values too, so both runs
        start alike and an element a kernel should leave alone is checked as well."""
        gen = torch.Generator().manual_seed(self.seed)
        return [_make_arg(p, gen, device) for p in self.params]

    def tensor_params(self):
        """(display name, TensorArg) of every tensor argument, dict entries as d['k']."""
        out = []
        for p in self.params:
            if isinstance(p, TensorArg):
                out.append((p.name, p))
            elif isinstance(p, DictArg):
                out += [(f"{p.name}[{k!r}]", v) for k, v in p.entries.items()
                        if isinstance(v, TensorArg)]
        return out


def _make_arg(p, gen, device):
    if isinstance(p, ScalarArg):
        return p.value
    if isinstance(p, DictArg):
        return {k: _make_arg(v, gen, device) for k, v in p.entries.items()}
    return _make_tensor(p, gen, device)


def _make_tensor(p, gen, device):
    shape = p.shape
    if p.view == "transpose":
        base_shape = tuple(reversed(shape))
    elif p.view == "strided":
        base_shape = (shape[0] * 2,) + shape[1:]
    elif p.view == "offset":
        base_shape = shape[:-1] + (shape[-1] + 3,)
    else:
        base_shape = shape
    dt = getattr(torch, p.dtype)
    init_lo, init_hi = p.init
    if p.dtype == "bool":
        base = torch.rand(base_shape, generator=gen) < 0.5
    elif p.dtype in FLOATS:
        if p.positive:
            base = (torch.rand(base_shape, generator=gen, dtype=torch.float64) *
                    (init_hi - init_lo) + init_lo)
        else:
            mag = torch.rand(base_shape, generator=gen, dtype=torch.float64) * 1.5 + 0.5
            sign = torch.where(torch.rand(base_shape, generator=gen) < 0.5, -1.0, 1.0)
            base = mag * sign
        base = base.to(dt)
    else:
        lo, hi = int(init_lo), int(init_hi)
        base = torch.randint(lo, hi + 1, base_shape, generator=gen, dtype=torch.int64)
        if lo < 0 < hi:   # non-zero inputs: a zero hides wrong reads of untouched memory
            base = torch.where(base == 0, torch.ones_like(base), base)
        base = base.to(dt)
    if p.view == "transpose":
        t = base.permute(*reversed(range(len(shape))))
    elif p.view == "strided":
        t = base[::2]
    elif p.view == "offset":
        t = base[..., 3:]
    elif p.view == "zerod":
        t = base.reshape(())
    else:
        t = base
    assert tuple(t.shape) == tuple(shape if p.view != "zerod" else ()), (p, t.shape)
    return t.to(device)


# ----------------------------------------------------------------------------------------------
# Names


class Names:
    """Identifier choice. Awkward names are drawn with probability `rate`; every name handed
    out is unique in the module, except the deliberate pairs (`int` with `int_`, a local named
    like its function)."""

    def __init__(self, rng, mode):
        self.rng = rng
        self.rate = {"ordinary": 0.0, "awkward": 0.8, "mixed": 0.3}[mode]
        self.used = {"parir", "range"}
        self.counter = 0
        # Whether names may shadow Python's min/max/abs/int/float/bool: then the program
        # calls parir's versions only (a local shadows a builtin in its whole function).
        self.shadow = rng.random() < 0.5

    def fresh(self, prefix, allow_shadowing=True):
        if self.rng.random() < self.rate:
            pool = [n for n in AWKWARD + [LONG_NAME + prefix, "parir_" + prefix]
                    if n not in self.used and
                    ((allow_shadowing and self.shadow) or n not in SHADOWING)]
            if pool:
                name = self.rng.choice(pool)
                self.used.add(name)
                return name
        while True:
            self.counter += 1
            name = f"{prefix}{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def claim(self, name):
        """Takes a specific name if free (for collision pairs); None when taken."""
        if name in self.used:
            return None
        self.used.add(name)
        return name


# ----------------------------------------------------------------------------------------------
# Code emission


class Code:
    def __init__(self):
        self.lines = []
        self.depth = 1

    def emit(self, line):
        self.lines.append("    " * self.depth + line)

    def indent(self):
        code = self

        class _Indent:
            def __enter__(self):
                code.depth += 1

            def __exit__(self, *exc):
                code.depth -= 1

        return _Indent()


@dataclasses.dataclass
class Loop:
    var: str
    lo: int            # smallest value the variable takes
    hi: int            # largest value
    extent: int        # the dimension size the variable indexes
    size_code: str     # how the extent is written (a literal or a scalar argument)
    parallel: bool
    indexable: bool = True   # host loop variables only count, they index nothing


class Scope:
    """What an expression may refer to at a point of the function body."""

    def __init__(self, loops=(), locals_=None, body_id=0):
        self.loops = list(loops)
        self.locals = dict(locals_ or {})
        self.body_id = body_id

    def child(self, loop=None, body_id=None):
        return Scope(self.loops + ([loop] if loop else []), self.locals,
                     self.body_id if body_id is None else body_id)


class Nest:
    """Reads and writes of one top-level statement, to keep it race-free: a tensor written in
    the nest is read only where the same iteration wrote it (same index, same loop body)."""

    def __init__(self):
        self.reads = {}     # tensor name -> {(body, index code)}
        self.writes = {}
        self.reduced = set()  # targets of reductions: not read in the nest at all

    def can_read(self, t, key):
        if t in self.reduced:
            return False
        return t not in self.writes or self.writes[t] == {key}

    def can_write(self, t, key):
        if t in self.reduced:
            return False
        return (self.reads.get(t, {key}) <= {key}) and self.writes.get(t, {key}) == {key}


class Generator:
    """Builds one program. The top-level function draws nests; each nest draws loops, bodies
    and expressions, creating the tensors it reads and writes as it goes."""

    MAX_TENSORS = 9

    def __init__(self, seed, names="ordinary", gpu_sized=False):
        self.seed = seed
        self.rng = random.Random(seed)
        self.names_mode = names
        self.names = Names(self.rng, names)
        self.gpu_sized = gpu_sized
        self.params = []
        self.tensors = {}       # name -> TensorArg (dict entries under "d['k']" code)
        self.tensor_code = {}   # name -> how the body refers to it (x or d['k'])
        self.scalars = {}       # code -> Expr of a scalar argument
        self.spec = {}
        self.options = {}
        self.features = set()
        self.helpers = []       # source of helper functions
        self.code = Code()
        self.nest = Nest()
        self.body_counter = 0
        self.size_args = {}     # size -> scalar argument name
        self.shadowed = set()
        self.pending_pair = None
        self.fn_name = self.names.fresh("kernel", allow_shadowing=False)
        self._note_name(self.fn_name, "function")
        self.int_pair_done = False
        self.in_helper = 0
        self.no_stmt_helper = 0   # inside a conditional expression, and/or
        self.no_bare1 = 0         # inside an augmented assignment (in place in the Python run)
        self.tpb = self.rng.choice(TPB)
        self.bare1 = set()        # shape-(1,) tensors used as bare names
        self.tpb_used = self.rng.random() < 0.3

    # -- features and names -------------------------------------------------------------------

    def feature(self, f):
        self.features.add(f)

    def local_name(self, prefix):
        name = self.names.fresh(prefix)
        self._note_name(name)
        return name

    def _note_name(self, name, role=None):
        if name in SHADOWING:
            self.shadowed.add(name)
        if name in AWKWARD or name.startswith("parir_") or len(name) > 100:
            self.feature("awkward_names")
        for cls, members in NAME_CLASSES.items():
            if name in members:
                self.feature(f"name_{cls}")
        if name.startswith("parir_"):
            self.feature("name_parir_prefix")
        if len(name) > 100:
            self.feature("name_long")
        if not name.isascii():
            self.feature("name_non_ascii")
        if role == "function" and name in C_FUNCTIONS:
            self.feature("function_named_like_c_library")
        if role == "dict" and (name.startswith("__") or name.startswith("parir_")):
            self.feature("dict_name_reserved_prefix")
        if name == "int" and not self.int_pair_done and self.names.claim("int_"):
            # `int` with `int_`: the two must stay apart once `int` is escaped.
            self.int_pair_done = True
            self.pending_pair = "int_"

    def builtin(self, name):
        """Python's min/max/abs/int/float/bool unless names may shadow them: then parir's."""
        if self.names.shadow or self.rng.random() < 0.5:
            return {"int": "parir.int64", "float": "parir.float64", "bool": "parir.bool"}.get(
                name, f"parir.{name}")
        return name

    # -- arguments ----------------------------------------------------------------------------

    def size_code(self, n):
        """A loop bound: a literal, or a Python int argument (specialized into the code)."""
        if self.rng.random() < 0.5:
            return str(n)
        if n not in self.size_args:
            name = self.names.fresh("N", allow_shadowing=False)
            self._note_name(name)
            self.size_args[n] = name
            self.params.append(ScalarArg(name, n))
            self.scalars[name] = Expr(name, Ty("int64", True), n, n)
        return self.size_args[n]

    def new_tensor(self, dtype, shape, written=False, positive=None):
        if len(self.tensors) >= self.MAX_TENSORS and not written:
            return None
        if self.pending_pair:
            name, self.pending_pair = self.pending_pair, None
            self.feature("name_escape_collision")
        else:
            name = self.names.fresh("out" if written else "x", allow_shadowing=True)
        self._note_name(name)
        view = "contiguous"
        r = self.rng.random()
        if r < 0.15 and len(shape) >= 2:
            view = "transpose"
        elif r < 0.25 and shape and shape[0] > 0:
            view = "strided"
        elif r < 0.32 and shape:
            view = "offset"
        if view != "contiguous":
            self.feature("noncontiguous_view")
        lo, hi = _init_range(dtype)
        t = TensorArg(name, dtype, tuple(shape), view, lo, hi)
        if positive:
            t.lo, t.hi, t.positive = positive[0], positive[1], True
        if dtype in FLOATS:
            t.prec = PRECISION.index(dtype)
        t.init = (t.lo, t.hi)
        code = name
        if self.rng.random() < 0.12 and not written:
            # A tensor inside a dict argument: d['k'][i].
            d = next((p for p in self.params if isinstance(p, DictArg)), None)
            if d is None:
                d = DictArg(self.names.fresh("d", allow_shadowing=False), {})
                self._note_name(d.name, "dict")
                self.params.append(d)
            key = self.names.fresh("k")
            self._note_name(key)
            d.entries[key] = t
            code = f"{d.name}[{key!r}]"
            self.feature("dict_argument")
        else:
            self.params.append(t)
        self.tensors[name] = t
        self.tensor_code[name] = code
        self.feature(f"dtype_{dtype}")
        return t

    def scalar_leaf(self, want):
        """A scalar argument: a Python int/float, a 0-d tensor, a shape-(1,) tensor used as a
        bare name, or a dict entry."""
        r = self.rng.random()
        if want == "f":
            value = self.rng.choice([0.5, 1.5, -0.75, 2.0, 0.125])
        else:
            value = self.rng.choice([1, 2, 3, -2, 5])
        if r < 0.45:
            name = self.names.fresh("alpha" if want == "f" else "k")
            self._note_name(name)
            self.params.append(ScalarArg(name, value))
            self.feature("scalar_argument")
            e = Expr(name, Ty("float64" if want == "f" else "int64", True), value, value)
            self.scalars[name] = e
            return e
        if r < 0.6:
            d = next((p for p in self.params if isinstance(p, DictArg)), None)
            if d is None:
                d = DictArg(self.names.fresh("d", allow_shadowing=False), {})
                self._note_name(d.name, "dict")
                self.params.append(d)
            key = self.names.fresh("k")
            self._note_name(key)
            d.entries[key] = ScalarArg(key, value)
            self.feature("dict_argument")
            code = f"{d.name}[{key!r}]"
            e = Expr(code, Ty("float64" if want == "f" else "int64", True), value, value)
            self.scalars[code] = e
            return e
        # A typed scalar in a tensor: 0-d (specialized) or shape (1,) read from memory.
        dtype = self.rng.choice(("float32", "float64", "float16") if want == "f"
                                else ("int32", "int64", "int16"))
        view = "zerod" if r < 0.8 or self.no_bare1 else "bare1"
        name = self.names.fresh("c")
        self._note_name(name)
        t = TensorArg(name, dtype, (1,), view, value, value, positive=True)
        if dtype not in FLOATS:
            t.lo = t.hi = int(value)
        t.init = (t.lo, t.hi)
        self.params.append(t)
        self.feature("zero_dim_tensor" if view == "zerod" else "shape1_tensor_bare")
        if view == "bare1":
            self.bare1.add(name)
        self.feature(f"dtype_{dtype}")
        prec = PRECISION.index(dtype) if dtype in FLOATS else len(PRECISION)
        e = Expr(name, Ty(dtype), value, value, prec=prec)
        self.scalars[name] = e
        return e

    # -- spec ---------------------------------------------------------------------------------

    def label(self, kind, threads=None, fits_block=False, share=None):
        """A label for a loop: parallel ('par'), a reduction ('reduce'), a scan ('scan'), or
        sequential with a label the spec does not list ('seq'). `fits_block` keeps the threads
        within one block (a reduction into a local and an index reduction must fit
        one)."""
        if share is not None and self.rng.random() < 0.5:
            return share
        name = self.names.fresh("L") if self.rng.random() < 0.7 else self.names.fresh("lbl")
        if kind == "seq":
            return name
        n = threads if threads is not None else self.rng.choice(THREADS)
        tpb = None
        if self.tpb_used and self.rng.random() < 0.5:
            # One block size per program: loops of one kernel with different block sizes
            # are rejected (a kernel has one block size).
            tpb = self.tpb
            self.feature("tpb")
        if fits_block:
            limit = self.tpb if self.tpb_used else 1024
            if n > limit:
                n = self.rng.choice([t for t in THREADS if t <= limit])
        self.spec[name] = (n, "scan" if kind == "scan" else kind == "reduce", tpb)
        if n % 32:
            self.feature("threads_not_warp_multiple")
        if n > (tpb or 1024):
            self.feature("multi_block")
        return name

    # -- expressions --------------------------------------------------------------------------

    def expr(self, scope, kind, depth):
        """An expression of kind 'i', 'f' or 'b' (its type may be any of that kind)."""
        for _ in range(8):
            e = self._expr(scope, kind, depth)
            if e is not None and _fits(e):
                return e
        return self.literal(kind)

    def _expr(self, scope, kind, depth):
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(scope, kind)
        if kind == "b":
            return self.cond(scope, depth)
        r = self.rng.random()
        if r < 0.45:
            return self.binop(scope, kind, depth)
        if r < 0.6:
            return self.unary(scope, kind, depth)
        if r < 0.75:
            return self.cast(scope, kind, depth)
        if r < 0.85:
            return self.select(scope, kind, depth)
        if r < 0.95:
            return self.call_helper(scope, kind, depth)
        return self.leaf(scope, kind)

    def literal(self, kind):
        if kind == "f":
            v = self.rng.choice([0.5, 1.5, -2.0, 0.25, 3.0, -0.125])
            return Expr(repr(v), Ty("float64", True), v, v)
        if kind == "b":
            v = self.rng.random() < 0.5
            return Expr(repr(v), Ty("bool", True), int(v), int(v))
        v = self.rng.choice([1, 2, 3, 5, 7, -1, -3])
        return Expr(str(v) if v >= 0 else f"({v})", Ty("int64", True), v, v)

    def leaf(self, scope, kind):
        r = self.rng.random()
        if r < 0.5:
            e = self.tensor_read(scope, kind)
            if e is not None:
                return e
        if r < 0.65 and kind == "i" and scope.loops:
            lp = self.rng.choice(scope.loops)
            return Expr(lp.var, Ty("int64", True), lp.lo, lp.hi)
        if r < 0.8:
            cands = [e for e in scope.locals.values() if e.ty.kind == kind]
            if cands:
                return self.rng.choice(cands)
        if r < 0.9 and kind != "b":
            cands = [e for e in self.scalars.values() if e.ty.kind == kind and
                     not (self.no_bare1 and e.code in self.bare1)]
            if cands and self.rng.random() < 0.6:
                return self.rng.choice(cands)
            if len(self.params) < 14 and not self.in_helper:
                return self.scalar_leaf(kind)
        return self.literal(kind)

    def index_for(self, scope, shape):
        """Index codes for a read of a tensor of `shape`: a loop variable whose range lies in
        the dimension, counted from the start or the end, or a constant. None when some
        dimension cannot be indexed."""
        parts = []
        for d in shape:
            loops = [lp for lp in scope.loops if lp.indexable and lp.lo >= 0 and lp.hi < d]
            if loops and self.rng.random() < 0.9:
                lp = self.rng.choice(loops)
                parts.append(self.index_of(lp, d))
            elif d > 0:
                parts.append(self.rng.choice(["0", "-1", str(d - 1)]))
            else:
                return None
        return ", ".join(parts)

    def index_of(self, lp, d):
        r = self.rng.random()
        if r < 0.75:
            return lp.var
        self.feature("negative_or_reversed_index")
        if r < 0.88:
            return f"{lp.var} - {d}"            # Python negative index: counts from the end
        size = lp.size_code if lp.extent == d else str(d)
        return f"{size} - 1 - {lp.var}"

    def tensor_read(self, scope, kind, create=True):
        want = [t for t in self.tensors.values()
                if _dtype_kind(t.dtype) == kind and t.view not in ("zerod", "bare1")]
        self.rng.shuffle(want)
        for t in want[:4]:
            idx = self.index_for(scope, t.shape)
            if idx is None:
                continue
            key = (scope.body_id, idx)
            if not self.nest.can_read(t.name, key):
                continue
            self.nest.reads.setdefault(t.name, set()).add(key)
            return self._read_expr(t, idx)
        if not create or not scope.loops:
            return None
        dims = [lp for lp in scope.loops if lp.indexable]
        if not dims:
            return None
        k = min(len(dims), self.rng.choice([1, 1, 2]))
        chosen = self.rng.sample(dims, k)
        shape = tuple(lp.extent for lp in chosen)
        dtype = self.rng.choice({"f": FLOATS, "i": INTS, "b": ("bool",)}[kind])
        t = self.new_tensor(dtype, shape)
        if t is None:
            return None
        idx = ", ".join(self.index_of(lp, lp.extent) for lp in chosen)
        self.nest.reads.setdefault(t.name, set()).add((scope.body_id, idx))
        return self._read_expr(t, idx)

    def _read_expr(self, t, idx):
        code = f"{self.tensor_code[t.name]}[{idx}]"
        exact = t.prec == len(PRECISION) or not t.written
        return Expr(code, Ty(t.dtype), t.lo, t.hi, exact=exact,
                    prec=t.prec if t.dtype in FLOATS or t.written else len(PRECISION),
                    ops=t.ops)

    def binop(self, scope, kind, depth):
        a = self.expr(scope, kind, depth - 1)
        ops = ["+", "-", "*"] + (["/"] if kind == "f" else ["//", "%", "&", "|", "^", "<<", ">>"])
        op = self.rng.choice(ops + ["min", "max", "**"])
        if op in ("<<", ">>"):
            b = Expr(str(self.rng.randint(0, 3)), Ty("int64", True), 0, 0)
            b.lo = b.hi = int(b.code)
        elif op in ("/", "//", "%"):
            b = self.divisor(scope, kind, depth)
        elif op == "**":
            b = Expr("2", Ty("int64", True), 2, 2)
        else:
            b = self.expr(scope, kind, depth - 1)
        if self.rng.random() < 0.5 and op in ("+", "*", "min", "max", "&", "|", "^"):
            a, b = b, a
        ty = promote(a.ty, b.ty)
        if op == "/" and a.ty.kind == "i" and b.ty.kind == "i":
            ty = Ty("float64", a.ty.weak and b.ty.weak)
        if not _weak_fits(a, b):
            return None
        lo, hi = _interval(op, a, b)
        if lo is None:
            return None
        if op in ("&", "|", "^", "<<", ">>", "//", "%") and ty.kind != "i":
            return None
        if op == "<<" and a.lo < 0:
            return None   # a negative shifted left is undefined in C++
        if op in ("min", "max"):
            code = f"{self.builtin(op)}({a.code}, {b.code})"
        else:
            code = f"({a.code} {op} {b.code})"
        exact = a.exact and b.exact and ty.kind != "f"
        e = Expr(code, ty, lo, hi, exact, min(a.prec, b.prec), a.ops + b.ops + 1)
        if ty.kind == "f":
            e.exact = a.exact and b.exact and op in ("min", "max")
        return e

    def divisor(self, scope, kind, depth):
        """A divisor that is never zero: a non-zero literal, or |e| + 1."""
        if self.rng.random() < 0.5:
            v = self.rng.choice([2, 3, 5, -3, 7] if kind == "i" else [2.0, 4.0, -0.5, 3.0])
            code = str(v) if v > 0 else f"({v})"
            return Expr(code, Ty("int64" if kind == "i" else "float64", True), v, v)
        e = self.expr(scope, kind, depth - 1)
        if e.ty.name == "uint8" or e.ty.name == "bool":
            return Expr("3", Ty("int64", True), 3, 3)
        one = "1" if kind == "i" else "1.0"
        m = max(abs(e.lo), abs(e.hi))
        if kind == "i" and e.ty.name != "int64" and m + 1 > INT_RANGE[e.ty.name][1]:
            return Expr("3", Ty("int64", True), 3, 3)
        return Expr(f"({self.builtin('abs')}({e.code}) + {one})", e.ty, 1, m + 1, e.exact,
                    e.prec, e.ops + 2)

    def unary(self, scope, kind, depth):
        a = self.expr(scope, kind, depth - 1)
        if kind == "i":
            op = self.rng.choice(["-", "abs", "~"])
            if op == "-":
                e = Expr(f"(-{a.code})", a.ty, -a.hi, -a.lo, a.exact, a.prec, a.ops + 1)
            elif op == "~":
                e = Expr(f"(~{a.code})", a.ty, -a.hi - 1, -a.lo - 1, a.exact, a.prec, a.ops + 1)
            else:
                lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
                e = Expr(f"{self.builtin('abs')}({a.code})", a.ty, lo,
                         max(abs(a.lo), abs(a.hi)), a.exact, a.prec, a.ops + 1)
            return e
        fn = self.rng.choice(["exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "atan2", "neg",
                              "erf", "sigmoid", "atan", "asinh", "expm1", "log1p", "hypot",
                              "clamp", "floor", "round"])
        self.feature(f"math_{fn}")
        m = max(abs(a.lo), abs(a.hi))
        if fn == "neg":
            return Expr(f"(-{a.code})", a.ty, -a.hi, -a.lo, a.exact, a.prec, a.ops + 1)
        # Math of an integer gives a float (float64); of a float, its own type.
        ty = a.ty if a.ty.kind == "f" else Ty("float64")
        prec = min(a.prec, PRECISION.index(ty.name))
        ops = a.ops + 1
        if fn == "exp":
            if a.hi > 4:
                return None
            return Expr(f"parir.exp({a.code})", ty, 0, math.exp(a.hi), False, prec, ops)
        if fn == "log":
            return Expr(f"parir.log(parir.abs({a.code}) + 1.0)", ty, 0, math.log(m + 1), False,
                        prec, ops + 2)
        if fn == "sqrt":
            return Expr(f"parir.sqrt(parir.abs({a.code}))", ty, 0, math.sqrt(m), False, prec,
                        ops + 1)
        if fn in ("sin", "cos", "tanh", "erf"):
            return Expr(f"parir.{fn}({a.code})", ty, -1, 1, False, prec, ops)
        if fn == "sigmoid":
            return Expr(f"parir.sigmoid({a.code})", ty, 0, 1, False, prec, ops)
        if fn in ("atan", "asinh"):
            f = getattr(math, fn)
            return Expr(f"parir.{fn}({a.code})", ty, f(a.lo), f(a.hi), False, prec, ops)
        if fn == "expm1":
            if a.hi > 4:
                return None
            return Expr(f"parir.expm1({a.code})", ty, -1, math.expm1(a.hi), False, prec, ops)
        if fn == "log1p":
            return Expr(f"parir.log1p(parir.abs({a.code}))", ty, 0, math.log1p(m), False, prec,
                        ops + 1)
        if fn == "clamp":
            if a.ty.kind != "f":
                return None
            lo, hi = (min(max(v, -1.0), 1.0) for v in (a.lo, a.hi))
            return Expr(f"parir.clamp({a.code}, -1.0, 1.0)", a.ty, lo, hi, a.exact, a.prec, ops)
        if fn in ("floor", "round"):
            # A rounding of an inexact value may land one apart in the two runs: exact only.
            if not a.exact:
                return None
            return Expr(f"parir.{fn}({a.code})", a.ty, math.floor(a.lo), math.ceil(a.hi), True,
                        a.prec, ops)
        if fn == "abs":
            return Expr(f"{self.builtin('abs')}({a.code})", a.ty, 0, m, a.exact, a.prec, ops)
        # atan2(y, |x| + 1): x stays positive, away from the branch cut.
        b = self.expr(scope, kind, depth - 1)
        t2 = promote(ty, b.ty)
        if t2.kind != "f":
            t2 = Ty("float64")
        if fn == "hypot":
            mb = max(abs(b.lo), abs(b.hi))
            return Expr(f"parir.hypot({a.code}, {b.code})", t2, 0, math.hypot(m, mb), False,
                        min(prec, b.prec), ops + b.ops)
        return Expr(f"parir.atan2({a.code}, parir.abs({b.code}) + 1.0)", t2, -1.6, 1.6, False,
                    min(prec, b.prec), ops + b.ops + 2)

    def cast(self, scope, kind, depth):
        """parir.<dtype>(e), or Python's int()/float()/bool(): converts between kinds. A float
        becomes an integer or bool only when it is exact, and only within range."""
        src_kind = self.rng.choice("ifb")
        a = self.expr(scope, src_kind, depth - 1)
        target = self.rng.choice({"f": FLOATS, "i": INTS, "b": ("bool",)}[kind])
        self.feature("cast")
        if a.ty.kind == "f" and kind != "f" and not a.exact:
            return None
        if kind == "i":
            lo, hi = INT_RANGE[target]
            tlo, thi = math.trunc(a.lo), math.trunc(a.hi)
            if tlo < lo or thi > hi:
                return None
            if a.ty.kind == "f" and target == "uint8" and a.lo <= -1:
                return None
            e = Expr(f"parir.{target}({a.code})", Ty(target), tlo, thi, True, len(PRECISION),
                     a.ops + 1)
            if self.rng.random() < 0.2 and not self.names.shadow:
                # Python's int() is parir.int64, in the kernel and in the plain run.
                e.code = f"int({a.code})"
                e.ty = Ty("int64")
            return e
        if kind == "b":
            fn = self.builtin("bool")
            zero_in = a.lo <= 0 <= a.hi
            return Expr(f"{fn}({a.code})", Ty("bool"), 0 if zero_in else 1,
                        1 if (a.hi != 0 or a.lo != 0) else 0, True, len(PRECISION), a.ops + 1)
        prec = min(a.prec, PRECISION.index(target))
        if self.rng.random() < 0.15 and not self.names.shadow:
            # Python's float() is parir.float64, in the kernel and in the plain run.
            return Expr(f"float({a.code})", Ty("float64"), a.lo, a.hi, a.exact and
                        a.ty.kind != "f", a.prec, a.ops + 1)
        exact = a.ty.kind != "f" and target in ("float32", "float64") and max(
            abs(a.lo), abs(a.hi)) < 2 ** 20
        return Expr(f"parir.{target}({a.code})", Ty(target), a.lo, a.hi, exact, prec, a.ops + 1)

    def select(self, scope, kind, depth):
        # A helper with statements cannot be called inside `a if c else b` (rejected, as its
        # statements would run whatever the condition): only one-expression helpers there.
        self.no_stmt_helper += 1
        try:
            c = self.cond(scope, depth - 1)
            a = self.expr(scope, kind, depth - 1)
            b = self.expr(scope, kind, depth - 1)
        finally:
            self.no_stmt_helper -= 1
        # Python's `a if c else b` converts neither operand: both of one type, so that the
        # value has the same type on both sides.
        if a.ty != b.ty:
            return None
        ty = promote(a.ty, b.ty)
        self.feature("conditional_expression")
        e = Expr(f"({a.code} if {c.code} else {b.code})", ty, min(a.lo, b.lo), max(a.hi, b.hi),
                 a.exact and b.exact, min(a.prec, b.prec), max(a.ops, b.ops) + 1)
        return e

    def cond(self, scope, depth):
        """A deterministic bool: comparisons of integers or of exact floats, bools read from
        memory, and/or/not of those."""
        r = self.rng.random()
        if r < 0.2 or depth <= 0:
            e = self.tensor_read(scope, "b", create=self.rng.random() < 0.5)
            if e is not None:
                return e
        if r < 0.35 and depth > 0:
            self.no_stmt_helper += 1
            try:
                a, b = self.cond(scope, depth - 1), self.cond(scope, depth - 1)
            finally:
                self.no_stmt_helper -= 1
            op = self.rng.choice(["and", "or"])
            return Expr(f"({a.code} {op} {b.code})", Ty("bool"), 0, 1)
        if r < 0.42 and depth > 0:
            a = self.cond(scope, depth - 1)
            if self.rng.random() < 0.5:
                return Expr(f"(not {a.code})", Ty("bool"), 0, 1)
            if a.ty.weak or not a.code.startswith("("):
                return Expr(f"(not {a.code})", Ty("bool"), 0, 1)
        k = self.rng.choice("iif")
        a = self.expr(scope, k, max(0, depth - 1))
        b = self.expr(scope, k, max(0, depth - 1)) if self.rng.random() < 0.6 else \
            self.literal(k)
        if k == "f" and not (a.exact and b.exact):
            a, b = self.leaf(scope, "i"), self.literal("i")
        if not _weak_fits(a, b):
            return Expr("True", Ty("bool", True), 1, 1)
        op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        if self.rng.random() < 0.15 and scope.loops:
            lp = self.rng.choice(scope.loops)
            self.feature("chained_comparison")
            return Expr(f"(0 <= {lp.var} < {lp.size_code})", Ty("bool"), 1, 1)
        return Expr(f"({a.code} {op} {b.code})", Ty("bool"), 0, 1)

    def call_helper(self, scope, kind, depth):
        """A call of another jit function of the module whose body is `return e` (inlined as
        an expression), or of one with statements (inlined with renamed locals)."""
        nargs = self.rng.randint(1, 3)
        args = [self.expr(scope, self.rng.choice("if") if kind != "b" else "i", depth - 1)
                for _ in range(nargs)]
        name = self.names.fresh("helper", allow_shadowing=False)
        self._note_name(name, "helper")
        params = [self.names.fresh("p") for _ in args]
        for p in params:
            self._note_name(p)
        inner_locals = {}
        pscope = Scope()
        for p, a in zip(params, args):
            pscope.locals[p] = dataclasses.replace(a, code=p)
        # A helper's body refers only to its parameters and literals.
        saved = (self.tensors, self.scalars)
        self.tensors, self.scalars = {}, {}
        self.in_helper += 1
        try:
            body = self.expr(pscope, kind, min(depth, 2))
            lines = []
            if self.rng.random() < 0.5 and not self.no_stmt_helper:
                self.feature("helper_statements")
                tmp = self.names.fresh("t")
                self._note_name(tmp)
                inner_locals[tmp] = body
                lines.append(f"    {tmp} = {body.code}")
                if self.rng.random() < 0.5:
                    lines.append(f"    if {self.cond(pscope, 0).code}:")
                    lines.append(f"        {tmp} = {tmp}")
                lines.append(f"    return {tmp}")
            else:
                self.feature("helper_expression")
                lines.append(f"    return {body.code}")
        finally:
            self.tensors, self.scalars = saved
            self.in_helper -= 1
        deco = "@parir.jit\n" if self.rng.random() < 0.7 else ""
        self.helpers.append(f"{deco}def {name}({', '.join(params)}):\n" + "\n".join(lines))
        # The call's value: the body's interval; its type when its arguments are the callers'.
        return Expr(f"{name}({', '.join(a.code for a in args)})", body.ty, body.lo, body.hi,
                    body.exact, min([body.prec] + [a.prec for a in args]),
                    body.ops + max(a.ops for a in args))

    # -- statements ---------------------------------------------------------------------------

    def store(self, scope, t, idx, e):
        """`t[idx] = e`, converting to t's dtype as README.md's rule 6 says; e must be exact
        when t holds integers or bools."""
        code = self.tensor_code[t.name]
        self.code.emit(f"{code}[{idx}] = {e.code}")
        self.record_write(t, scope, idx, e)

    def record_write(self, t, scope, idx, e, reduced=1):
        self.nest.writes.setdefault(t.name, set()).add((scope.body_id, idx))
        t.written = True
        if t.dtype in INTS or t.dtype == "bool":
            lo, hi = INT_RANGE[t.dtype]
            elo, ehi = (math.trunc(e.lo), math.trunc(e.hi)) if e.ty.kind == "f" else (e.lo, e.hi)
            if elo < lo or ehi > hi:
                t.lo, t.hi = lo, hi
            else:
                t.lo, t.hi = min(t.lo, elo), max(t.hi, ehi)
            if t.dtype == "bool":
                t.lo, t.hi = 0, 1
        else:
            t.lo, t.hi = min(t.lo, e.lo), max(t.hi, e.hi)
            t.prec = min(t.prec, e.prec)
            t.ops = max(t.ops, e.ops)
            t.reduced = max(t.reduced, reduced)

    def value_for(self, scope, t):
        """An expression to store into tensor t: exact for integer and bool tensors."""
        kind = _dtype_kind(t.dtype)
        if kind == "f" and self.rng.random() < 0.2:
            kind = "i"
            self.feature("mixed_promotion")
        if kind == "b" and self.rng.random() < 0.5:
            return self.cond(scope, 2)
        depth = self.rng.randint(1, 3)
        for _ in range(6):
            e = self.expr(scope, kind, depth)
            if kind == "f" or e.exact:
                if kind == "i" and t.dtype in INTS and not _fits_type(e, t.dtype):
                    continue
                return e
        return self.literal(kind)

    def assign_stmt(self, scope, allow_new=True):
        """A write of an element chosen by all parallel loop variables."""
        par = [lp for lp in scope.loops if lp.parallel]
        seq = [lp for lp in scope.loops if not lp.parallel and lp.indexable]
        # The target's dimensions: every parallel loop, maybe a sequential one too.
        dims = list(par)
        if seq and self.rng.random() < 0.5:
            dims.insert(self.rng.randint(0, len(dims)), self.rng.choice(seq))
        if not dims and not scope.loops:
            dims = []
        shape = tuple(lp.extent for lp in dims) or (1,)
        # Reuse a tensor of this shape that the nest may write, else a new output.
        cands = [t for t in self.tensors.values()
                 if t.shape == shape and t.view not in ("zerod", "bare1") and
                 self.tensor_code[t.name] == t.name]
        self.rng.shuffle(cands)
        idx = ", ".join(self.index_of(lp, lp.extent) for lp in dims) or "0"
        key = (scope.body_id, idx)
        target = None
        for t in cands[:3]:
            if self.nest.can_write(t.name, key) and t.written:
                target = t
                break
        if target is None:
            target = self.new_tensor(self.rng.choice(DTYPES), shape, written=True)
        e = self.value_for(scope, target)
        if not self.nest.can_write(target.name, key):
            # The value read the target elsewhere: write a fresh tensor instead.
            dtype = self.rng.choice(FLOATS if e.ty.kind == "f" or not e.exact else
                                    INTS if e.ty.kind == "i" else ("bool",))
            target = self.new_tensor(dtype, shape, written=True)
            if dtype in INTS and not _fits_type(e, dtype):
                e = self.literal("i")
        self.store(scope, target, idx, e)

    def local_stmt(self, scope):
        kind = self.rng.choice("iiff")
        e = self.expr(scope, kind, self.rng.randint(1, 3))
        name = self.local_name("v")
        self.code.emit(f"{name} = {e.code}")
        scope.locals[name] = dataclasses.replace(e, code=name)
        return name

    def if_stmt(self, scope, depth):
        c = self.cond(scope, 2)
        self.feature("if_else")
        self.code.emit(f"if {c.code}:")
        with self.code.indent():
            self.body(scope.child(), depth - 1, allow_locals=False)
        if self.rng.random() < 0.6:
            kw = "else:"
            if self.rng.random() < 0.3:
                kw = f"elif {self.cond(scope, 1).code}:"
                self.feature("elif")
            self.code.emit(kw)
            with self.code.indent():
                self.body(scope.child(), depth - 1, allow_locals=False)

    def while_stmt(self, scope):
        """A bounded while loop: a counter that rises by one each iteration, up to a small
        bound; the body updates a local accumulator."""
        self.feature("while_loop")
        w = self.local_name("w")
        acc = self.local_name("acc")
        kind = self.rng.choice("if")
        init = self.expr(scope, kind, 1)
        self.code.emit(f"{w} = 0")
        self.code.emit(f"{acc} = {init.code}")
        bound = self.rng.randint(1, 4)
        extra = ""
        if self.rng.random() < 0.4:
            extra = f" and {self.cond(scope, 1).code}"
        self.code.emit(f"while {w} < {bound}{extra}:")
        inner = scope.child()
        inner.locals[w] = Expr(w, Ty("int64", True), 0, bound)
        with self.code.indent():
            if kind == "f":
                step = self.expr(inner, "f", 1)
                self.code.emit(f"{acc} = {acc} * 0.5 + {step.code}")
                lo = min(init.lo, 0) + 2 * min(step.lo, 0)
                hi = max(init.hi, 0) + 2 * max(step.hi, 0)
                res = Expr(acc, promote(init.ty, step.ty), lo, hi, False,
                           min(init.prec, step.prec), init.ops + 2 * step.ops + 4)
            else:
                step = Expr("1", Ty("int64", True), 1, 1)
                if self.rng.random() < 0.5:
                    step = self.leaf(inner, "i")
                if not _weak_fits(init, step) or step.ty.kind != "i":
                    step = Expr("1", Ty("int64", True), 1, 1)
                lo = init.lo + bound * min(step.lo, 0)
                hi = init.hi + bound * max(step.hi, 0)
                res = Expr(acc, promote(init.ty, step.ty), lo, hi, init.exact and step.exact)
                if not _fits(res):
                    step = Expr("1", Ty("int64", True), 1, 1)
                    res = Expr(acc, promote(init.ty, step.ty), init.lo, init.hi + bound)
                self.code.emit(f"{acc} = {acc} + {step.code}")
            self.code.emit(f"{w} += 1")
        if res.ty.kind == "i" and not _fits(res):
            res.lo, res.hi = INT_RANGE.get(res.ty.name, (res.lo, res.hi))
        scope.locals[acc] = res

    def body(self, scope, depth, allow_locals=True, must_write=False):
        """Statements inside loops: locals, writes, if/else, while loops."""
        n = self.rng.randint(1, 3)
        wrote = False
        for k in range(n):
            r = self.rng.random()
            if allow_locals and r < 0.3:
                self.local_stmt(scope)
            elif allow_locals and r < 0.4:
                self.while_stmt(scope)
            elif r < 0.55 and depth > 0:
                self.if_stmt(scope, depth)
            else:
                self.assign_stmt(scope)
                wrote = True
        if must_write and not wrote:
            self.assign_stmt(scope)

    # -- nests --------------------------------------------------------------------------------

    def new_body_id(self):
        self.body_counter += 1
        return self.body_counter

    def loop_header(self, var, n, parallel_label=None):
        """`for var in range(...)` over [0, n) in one of the forms README.md allows; returns
        the Loop (its variable's range) and the size's code."""
        size = self.size_code(n)
        r = self.rng.random()
        if r < 0.6 or n < 2:
            header, lo, hi = f"range({size})", 0, n - 1
        elif r < 0.75:
            header, lo, hi = f"range(1, {size})", 1, n - 1
        elif r < 0.88:
            header, lo, hi = f"range({size} - 1, -1, -1)", 0, n - 1
            self.feature("negative_step")
        else:
            header, lo, hi = f"range(0, {size}, 2)", 0, n - 1
            self.feature("range_step")
        if parallel_label:
            self.code.emit(f"parir.label({parallel_label!r})")
        self.code.emit(f"for {var} in {header}:")
        return Loop(var, lo, hi, n, size, parallel_label is not None)

    def sizes(self, k):
        pool = SIZES if self.gpu_sized else SIZES + (1000,)
        out = [self.rng.choice(pool) for _ in range(k)]
        # Keep the plain Python run short: it runs element by element.
        limit, keep = 4000, None
        if self.gpu_sized and self.rng.random() < 0.3:
            # Sometimes an innermost loop long enough for 16-byte accesses (a kernel of at
            # least 4,096 iterations), off the 16-byte grid or on it.
            keep = k - 1
            out[keep] = self.rng.choice(LONG_SIZES)
            limit = 2 * out[keep]
            self.feature("long_loop")
        while math.prod(out) > limit:
            others = [i for i in range(k) if i != keep]
            i = max(others, key=lambda i: out[i])
            out[i] = 1 if out[i] <= 2 else self.rng.choice((1, 2))
        return out

    def nest_map(self):
        """A parallel loop nest of depth 1-3 writing elements: outer loops parallel, inner
        ones parallel (threads of blocks) or sequential; statements between levels run once
        per block. An outer sequential loop with only the parallel loop in it runs on the
        host, launching a kernel per iteration."""
        depth = self.rng.choice([1, 1, 2, 2, 3])
        sizes = self.sizes(depth)
        kinds = ["par"] + [self.rng.choice(["par", "seq", "seq_label"]) for _ in sizes[1:]]
        host = self.rng.random() < 0.15
        scope = Scope(body_id=self.new_body_id())
        if host:
            self.feature("host_loop")
            hv = self.local_name("t")
            hn = self.rng.randint(1, 3)
            self.code.emit(f"for {hv} in range({hn}):")
            self.code.depth += 1
            scope = scope.child(Loop(hv, 0, hn - 1, hn, str(hn), False, indexable=False))
        opened = 0
        # Statements between parallel levels write once per block: the loops inside must fit
        # one block, or the other blocks would not see the writes (rejected).
        block_stmts = self.rng.random() < 0.3
        for lvl, (n, kind) in enumerate(zip(sizes, kinds)):
            var = self.local_name("i")
            label = None
            if kind == "par":
                label = self.label("par", fits_block=block_stmts and lvl > 0)
            elif kind == "seq_label":
                label = self.label("seq")
                self.feature("unlisted_label")
            lp = self.loop_header(var, n, label)
            lp.parallel = kind == "par"
            self.code.depth += 1
            opened += 1
            scope = scope.child(lp, body_id=self.new_body_id())
            if lvl + 1 < depth and lp.parallel and any(k == "par" for k in kinds[lvl + 1:]):
                # Between parallel levels: runs once per block.
                if block_stmts:
                    self.feature("block_level_statement")
                    self.body(scope, 0, allow_locals=True)
        self.body(scope, 2, must_write=True)
        self.code.depth -= opened + (1 if host else 0)

    def nest_reduce(self):
        """A reduction over a reduce-labelled loop, into a local (fits one block, then used)
        or into a tensor element (any number of threads; atomics across blocks)."""
        outer = self.rng.random() < 0.75
        (n_out, n_red) = self.sizes(2)
        op = self.rng.choice(["+=", "-=", "+", "*=", "min", "max"])
        self.feature(f"reduce_{op}")
        scope = Scope(body_id=self.new_body_id())
        opened = 0
        gpu_block = False
        to_local = self.rng.random() < 0.5
        if outer:
            i = self.local_name("i")
            lp = self.loop_header(i, n_out, self.label("par"))
            self.code.depth += 1
            opened += 1
            scope = scope.child(lp, body_id=self.new_body_id())
        elif to_local:
            gpu_block = True
            self.feature("gpu_block")
            self.code.emit("with parir.gpu:")
            self.code.depth += 1
            opened += 1
        kind = self.rng.choice("iff")
        dtype = self.rng.choice(FLOATS if kind == "f" else INTS)
        # The element each iteration contributes, bounded so products stay small.
        acc_dtype = dtype
        block_init = outer and not to_local and self.rng.random() < 0.3
        # Any number of threads: a reduction into a local, or one after a block-level
        # statement, over several blocks is cut into kernels.
        red_label = self.label("reduce")
        if to_local or block_init:
            self.feature("reduce_block_statements_any_size")
        j = self.local_name("j")
        if to_local:
            acc = self.local_name("s")
            init = {"+=": "0", "-=": "0", "+": "0", "*=": "1"}.get(op)
            if kind == "f" and init is not None:
                init += ".0"
            if init is None:
                first = self.tensor_read(scope, kind) or self.literal(kind)
                init = first.code
            self.code.emit(f"{acc} = {init}")
            self.feature("reduce_into_local")
        else:
            target = self.new_tensor(acc_dtype, (n_out,) if outer else (1,), written=True)
            tidx = self.index_of(scope.loops[0], n_out) if outer else "0"
            acc = f"{self.tensor_code[target.name]}[{tidx}]"
            self.nest.reduced.add(target.name)
            self.feature("reduce_into_tensor")
            if block_init:
                # Set the target once per block before the reduction.
                self.code.emit(f"{acc} = {'1' if op == '*=' else '0'}")
                self.feature("block_level_statement")
        lp = self.loop_header(j, n_red, red_label)
        self.code.depth += 1
        inner = scope.child(lp, body_id=self.new_body_id())
        inner.loops[-1].parallel = False  # a reduction's iterations share the target
        # A shape-(1,) tensor would make the Python run's `t += e` an in-place broadcast
        # of shape (1,) into a 0-d tensor, which PyTorch refuses.
        self.no_bare1 += 1
        try:
            e = self.expr(inner, kind, self.rng.randint(0, 2))
        finally:
            self.no_bare1 -= 1
        if kind == "i" and not e.exact:
            e = self.tensor_read(inner, "i") or self.literal("i")
        if e.lo == e.hi:
            # The same value each iteration, known once the scalars are specialized.
            self.feature("reduce_constant_term")
            if op == "-=" and e.lo < 0:
                self.feature("reduce_subtract_negative_constant")
        if op == "*=" and (e.lo == e.hi or "&" in e.code):
            self.feature("reduce_multiply_constant")
        if op == "*=":
            # Factors near 1 (floats) or +-1 (integers): products stay in range.
            if kind == "f":
                e = Expr(f"(1.0 + 0.01 * parir.tanh({e.code}))", e.ty, 0.99, 1.01, False,
                         e.prec, e.ops + 3)
            elif e.ty.name == "uint8" and not e.ty.weak:
                # Unsigned: factors 1 and 2, whose products wrap alike on both sides.
                e = Expr(f"(({e.code} & 1) + 1)", e.ty, 1, 2, e.exact, e.prec, e.ops + 2)
            else:
                e = Expr(f"(1 - 2 * ({e.code} & 1))", e.ty, -1, 1, e.exact, e.prec, e.ops + 3)
        if kind == "i" and (abs(e.lo) > 100 or abs(e.hi) > 100):
            e = Expr(f"({e.code} % 7)", e.ty, 0, 6, True, e.prec, e.ops + 1)
        if op in ("min", "max") and not to_local and not _fits_type(e, target.dtype):
            # A min or max compares in the wider type and converts once (README, Reductions);
            # the plain loop converts at each step, which differs only for values the target
            # cannot hold.
            e = Expr(f"({e.code} % 7)", e.ty, 0, 6, e.exact, e.prec, e.ops + 1)
        if self.rng.random() < 0.3 and outer and self.rng.random() < 0.5:
            # The loop may compute other things too: an element per (i, j).
            self.feature("reduce_loop_other_work")
            value = self.expr(inner, "f", 1)
            z = self.new_tensor(self.rng.choice(FLOATS), (n_out, n_red), written=True)
            zidx = f"{self.index_of(scope.loops[0], n_out)}, {j}"
            if self.rng.random() < 0.3:
                # An elementwise update shaped like an accumulation, `z = max(e, z)`, of an
                # element that changes with the loop: not the loop's reduction.
                self.feature("reduce_loop_update_shaped_like_accumulation")
                value = Expr(f"parir.max({value.code}, {z.name}[{zidx}])", value.ty,
                             min(value.lo, -2), max(value.hi, 2), False, value.prec,
                             value.ops + 1)
            self.store(inner, z, zidx, value)
        if op in ("+=", "-=", "*="):
            self.code.emit(f"{acc} {op} {e.code}")
        elif op == "+":
            self.code.emit(f"{acc} = {acc} + {e.code}")
        else:
            fn = self.builtin(op)
            args = [acc, e.code]
            if self.rng.random() < 0.5:
                args.reverse()
            self.code.emit(f"{acc} = {fn}({', '.join(args)})")
        self.code.depth -= 1
        n_terms = n_red
        mag = max(abs(e.lo), abs(e.hi))
        if op in ("min", "max"):
            res = Expr(acc, e.ty, min(e.lo, -2), max(e.hi, 2), e.exact, e.prec, e.ops)
        elif op == "*=":
            res = Expr(acc, e.ty, -2, 2, e.exact, e.prec, e.ops + n_terms)
        else:
            res = Expr(acc, e.ty, -mag * n_terms - 2, mag * n_terms + 2, e.exact, e.prec,
                       e.ops + 1)
        if res.ty.kind == "i" and not _fits(res):
            # Sums and products wrap alike on both sides; the value is anywhere in the type.
            res.lo, res.hi = INT_RANGE[res.ty.name] if not res.ty.weak else (-2**31, 2**31)
        if to_local:
            # Use the result after the loop: every thread holds it.
            scope.locals[acc] = res
            if outer or gpu_block:
                kindw = _dtype_kind(dtype)
                if res.ty.weak and not _fits_type(res, dtype):
                    # A Python int out of the tensor's range: PyTorch refuses to store it.
                    dtype = "int64" if res.ty.kind == "i" else "float64"
                t = self.new_tensor(dtype, (n_out,) if outer else (1,), written=True)
                idx = self.index_of(scope.loops[0], n_out) if outer else "0"
                v = Expr(acc, res.ty, res.lo, res.hi, res.exact, res.prec, res.ops)
                if kindw == "f" and self.rng.random() < 0.5:
                    v = Expr(f"({acc} * 0.5)", res.ty, res.lo, res.hi, False, res.prec,
                             res.ops + 1)
                self.store(scope, t, idx, v)
                t.reduced = max(t.reduced, n_terms)
                if not _fits_type(res, t.dtype) and t.dtype in INTS:
                    t.lo, t.hi = INT_RANGE[t.dtype]
        else:
            self.nest.reduced.add(target.name)
            self.record_write(target, scope, "r", res, reduced=n_terms)
            if target.dtype in INTS:
                target.lo, target.hi = INT_RANGE[target.dtype]
        self.code.depth -= opened

    def nest_slices(self):
        """Slice statements: elementwise (`y[:] = x[:] * 2`), a row of a 2-d tensor inside a
        parallel loop, and slice reductions (`y[i] = parir.sum(x[i, :])`, `axis=k`)."""
        n, m = self.sizes(2)
        form = self.rng.choice(["elementwise", "row", "reduce_row", "reduce_axis", "reduce_all",
                                "arg_row", "scan_row"])
        self.feature(f"slice_{form}")
        kind = self.rng.choice("iff")
        dt_in = self.rng.choice(FLOATS if kind == "f" else INTS)
        dt_out = self.rng.choice(FLOATS if kind == "f" else INTS)
        fn = self.rng.choice(["sum", "prod", "min", "max"])
        if fn == "prod" and kind == "i":
            fn = "max"
        x = self.new_tensor(dt_in, (n, m), positive=(0.995, 1.005) if fn == "prod" else None)
        if x is None:
            return
        if kind == "i" and fn == "sum":
            x.lo, x.hi = (-4, 4) if dt_in != "uint8" else (1, 4)
            x.init = (x.lo, x.hi)
        xc = self.tensor_code[x.name]
        self.nest.reads.setdefault(x.name, set()).add((0, "slice"))
        if (fn == "sum" and dt_in in INTS and form.startswith("reduce") and
                (dt_out not in INTS or INT_BITS[dt_out] > INT_BITS[dt_in])):
            # The Python run sums in int64 (torch.sum), as README.md says reductions of
            # small integers do; only then does the result reach the wider target.
            self.feature("slice_sum_narrow_int_elements")
        if form == "elementwise":
            y = self.new_tensor(dt_out, (n, m), written=True)
            la, lb = self.label("par"), self.label("par")
            self.code.emit(f"parir.label({la!r})")
            self.code.emit(f"parir.label({lb!r})")
            c = self.literal(kind)
            if dt_in == "uint8" and c.lo < 0:
                c = Expr("3", Ty("int64", True), 3, 3)
            op = self.rng.choice(["+", "*", "-"])
            rhs = f"{xc}[:, :] {op} {c.code}"
            if kind == "f" and self.rng.random() < 0.5:
                rhs = f"parir.exp({xc}[:, :] * 0.5) {op} {c.code}"
            elif self.rng.random() < 0.3:
                # Shifted extents: rows 1.. of y from rows ..-1 of x.
                self.code.emit(f"{y.name}[1:, :] = {xc}[:-1, :] {op} {c.code}")
                self.feature("slice_bounds")
                self._slice_written(y, x, c, 2 if op == "*" else 1)
                return
            self.code.emit(f"{y.name}[:, :] = {rhs}")
            self._slice_written(y, x, c, 2)
            return
        if form == "reduce_axis":
            axis = self.rng.choice([0, 1])
            y = self.new_tensor(dt_out, ((m,) if axis == 0 else (n,)), written=True)
            # The first label names the target's dimension, the second the reduced one
            # (a reduction whatever its label says).
            la, lb = self.label("par"), self.label(self.rng.choice(["reduce", "par"]))
            self.code.emit(f"parir.label({la!r})")
            self.code.emit(f"parir.label({lb!r})")
            self.code.emit(f"{y.name}[:] = parir.{fn}({xc}[:, :], axis={axis})")
            self._reduced(y, x, fn, m if axis == 1 else n)
            return
        if form == "reduce_all":
            y = self.new_tensor(dt_out, (1,), written=True)
            self.code.emit("with parir.gpu:")
            with self.code.indent():
                label = self.label("reduce")
                n_threads, _, tpb = self.spec[label]
                if n_threads > (tpb or 1024):
                    self.feature("gpu_block_slice_reduction_multi_block")
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"{y.name}[0] = parir.{fn}({xc}[0, :])")
            self.feature("gpu_block")
            self._reduced(y, x, fn, m)
            return
        if form == "arg_row":
            return self._arg_row(x, n, m, kind)
        if form == "scan_row":
            return self._scan_row(x, n, m, kind, dt_out, fn)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            if form == "row":
                y = self.new_tensor(dt_out, (n, m), written=True)
                self.code.emit(f"parir.label({self.label('par', fits_block=True)!r})")
                idx = self.index_of(lp, n)
                self.code.emit(f"{y.name}[{idx}, :] = parir.max({xc}[{idx}, :], "
                               f"{xc}[{idx}, :] * 2)")
                self._slice_written(y, x, self.literal(kind), 2)
            else:
                y = self.new_tensor(dt_out, (n,), written=True)
                if self.rng.random() < 0.7:
                    self.code.emit(f"parir.label({self.label('reduce', fits_block=True)!r})")
                idx = self.index_of(lp, n)
                self.code.emit(f"{y.name}[{idx}] = parir.{fn}({xc}[{idx}, :])")
                self._reduced(y, x, fn, m)

    def _arg_row(self, x, n, m, kind):
        """`k[i] = parir.argmax(x[i, :])` (or argmin) per row, the row sequential in its thread
        or a parallel reduction of (value, index) pairs when its label is in the spec; the
        index is exact, so the runs must agree on every element."""
        fn = self.rng.choice(["argmax", "argmin"])
        y = self.new_tensor(self.rng.choice(("int64", "int32")), (n,), written=True)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            if self.rng.random() < 0.6:
                self.code.emit(f"parir.label({self.label('reduce', fits_block=True)!r})")
                self.feature("slice_arg_parallel")
            idx = self.index_of(lp, n)
            self.code.emit(f"{y.name}[{idx}] = parir.{fn}({self.tensor_code[x.name]}[{idx}, :])")
        y.written = True
        y.lo, y.hi = 0, m - 1

    def _scan_row(self, x, n, m, kind, dt_out, fn):
        """`out[i, :] = parir.cumsum(x[i, :])` (cumprod, cummin, cummax) per row, sequential in
        its thread or a block-wide parallel scan when its label maps to .scan()."""
        scan = {"sum": "cumsum", "prod": "cumprod", "min": "cummin", "max": "cummax"}[fn]
        if kind == "i" and fn == "sum":
            # Running sums of small integers in int64, stored to a type that holds them.
            dt_out = self.rng.choice(("int32", "int64"))
        y = self.new_tensor(dt_out, (n, m), written=True)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            label = None
            if self.rng.random() < 0.6:
                # Half the time the scan may span several blocks (a chunk per block).
                label = self.label('scan', fits_block=self.rng.random() < 0.5)
                self.code.emit(f"parir.label({label!r})")
                self.feature("slice_scan_parallel")
            idx = self.index_of(lp, n)
            self.code.emit(f"{y.name}[{idx}, :] = parir.{scan}({self.tensor_code[x.name]}[{idx}, :])")
            if label and fn in ("min", "max") and self.rng.random() < 0.5:
                # A reduction of the row just scanned, under the scan's label: it reduces.
                z = self.new_tensor(dt_out, (n,), written=True)
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"{z.name}[{idx}] = parir.{fn}({y.name}[{idx}, :])")
                self.feature("slice_reduce_under_scan_label")
                self._reduced(z, x, fn, m)
        self._reduced(y, x, fn, m)

    def _slice_written(self, y, x, c, factor):
        y.written = True
        y.lo = min(y.lo, x.lo * factor - 8, -8)
        y.hi = max(y.hi, x.hi * factor + 8, 8)
        if y.dtype in INTS:
            y.lo, y.hi = INT_RANGE[y.dtype]
        y.prec = min(y.prec, x.prec)
        y.ops = max(y.ops, 3)

    def _reduced(self, y, x, fn, n):
        self._slice_written(y, x, None, n)
        y.reduced = max(y.reduced, n)
        self.nest.reduced.add(y.name)

    def nest_gpu_block(self):
        """`with parir.gpu:` sequential code on one thread: a running sum (each element
        depends on the previous one), a bounded while loop, an if."""
        self.feature("gpu_block")
        (n,) = self.sizes(1)
        x = self.new_tensor(self.rng.choice(DTYPES), (n,))
        if x is None:
            return
        # A float running sum goes to a float tensor: truncating it to an integer would turn
        # rounding differences into different integers.
        y = self.new_tensor(self.rng.choice(FLOATS + (() if x.dtype in FLOATS else
                                                     ("int32", "int64"))), (n,), written=True)
        self.code.emit("with parir.gpu:")
        with self.code.indent():
            scope = Scope(body_id=self.new_body_id())
            acc = self.local_name("run")
            self.code.emit(f"{acc} = 0")
            i = self.local_name("i")
            lp = self.loop_header(i, n)
            with self.code.indent():
                inner = scope.child(lp, body_id=self.new_body_id())
                xi = f"{self.tensor_code[x.name]}[{i}]"
                if x.dtype in FLOATS:
                    term = xi
                    self.code.emit(f"{acc} = {acc} + {term}")
                else:
                    self.code.emit(f"{acc} = {acc} + ({xi} % 3)" if x.dtype != "bool"
                                   else f"{acc} = {acc} + parir.int32({xi})")
                self.code.emit(f"{self.tensor_code[y.name]}[{i}] = {acc}")
                self.nest.reads.setdefault(x.name, set()).add((inner.body_id, i))
        y.written = True
        if y.dtype in INTS:
            y.lo, y.hi = -3 * n - 8, 3 * n + 8
            if x.dtype in FLOATS:
                y.lo, y.hi = INT_RANGE[y.dtype]
        else:
            y.lo, y.hi = -2 * n - 2, 2 * n + 2
            y.prec = min(y.prec, x.prec if x.dtype in FLOATS else len(PRECISION))
            y.reduced = max(y.reduced, n)

    def nest_softmax(self):
        """README.md's softmax: slice reductions into locals, then slice statements reading
        what the previous ones wrote in the same row."""
        self.feature("softmax")
        n, m = self.sizes(2)
        dt = self.rng.choice(("float32", "float64"))
        x = self.new_tensor(dt, (n, m))
        if x is None:
            return
        out = self.new_tensor(dt, (n, m), written=True)
        i = self.local_name("i")
        lj = self.label("par", fits_block=True)
        self.loop_header(i, n, self.label("par"))
        xc = self.tensor_code[x.name]
        with self.code.indent():
            mx, s = self.local_name("m"), self.local_name("s")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{mx} = parir.max({xc}[{i}, :])")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{out.name}[{i}, :] = parir.exp({xc}[{i}, :] - {mx})")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{s} = parir.sum({out.name}[{i}, :])")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{out.name}[{i}, :] /= {s}")
        out.written = True
        out.lo, out.hi = -2, 2
        out.prec = min(out.prec, PRECISION.index(dt))
        out.reduced = max(out.reduced, m)
        out.ops = 4
        self.nest.reduced.add(out.name)

    def nest_host_repeat(self):
        """A host loop around a parallel loop whose iterations update their own element:
        one kernel launch per host iteration, the host loop variable passed in."""
        self.feature("host_loop")
        (n,) = self.sizes(1)
        t = self.local_name("t")
        reps = self.rng.randint(1, 4)
        y = self.new_tensor(self.rng.choice(("float32", "float64", "int32", "int64")), (n,),
                            written=True)
        x = self.new_tensor(y.dtype, (n,))
        if x is None:
            return
        self.code.emit(f"for {t} in range({reps}):")
        with self.code.indent():
            i = self.local_name("i")
            self.loop_header(i, n, self.label("par"))
            with self.code.indent():
                yc, xc = self.tensor_code[y.name], self.tensor_code[x.name]
                if y.dtype in FLOATS:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] * 0.5 + {xc}[{i}] + {t}")
                else:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] // 2 + {xc}[{i}] * {t}")
        y.written = True
        y.lo, y.hi = y.lo - 40, y.hi + 40
        y.ops = max(y.ops, 3 * reps)

    def nest_time_stencil(self):
        """A host loop over time steps around one to three one-dimensional stencil kernels
        (jacobi's pattern), which the compiler runs in tiles of time steps when there are
        four or more: each kernel writes its own tensor at i from the loop's other tensors at
        i plus offsets up to 3 (and a read-only tensor anywhere near i), so that no kernel
        reads an element another of its threads writes. Floats average their neighbours
        (values stay in range), integers XOR them."""
        self.feature("time_stencil")
        (n,) = self.sizes(1)
        dtype = self.rng.choice(("float32", "float64", "int32", "int64"))
        kernels = self.rng.randint(1, 3)
        written = [self.new_tensor(dtype, (n,), written=True) for _ in range(kernels)]
        coefficient = self.new_tensor(dtype, (n,)) if self.rng.random() < 0.4 else None
        steps = self.rng.choice((2, 4, 5, 9, 33, 40))
        t = self.local_name("t")
        label = None
        self.code.emit(f"for {t} in range({steps}):")
        with self.code.indent():
            for j, target in enumerate(written):
                sources = [w for w in written if w is not target] or [target]
                radius = self.rng.randint(0, 3) if sources[0] is not target else 0
                if 2 * radius >= n:
                    radius = 0
                i = self.local_name("i")
                # Kernels of one step may share a label (one parallel spec for all).
                label = self.label("par", share=label)
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"for {i} in range({radius}, {self.size_code(n)} - {radius}):")
                terms = []
                for _ in range(self.rng.randint(1, 3)):
                    src = self.rng.choice(sources)
                    d = self.rng.randint(-radius, radius)
                    terms.append(f"{self.tensor_code[src.name]}[{i} + {d}]" if d
                                 else f"{self.tensor_code[src.name]}[{i}]")
                if coefficient is not None and self.rng.random() < 0.7:
                    terms.append(f"{self.tensor_code[coefficient.name]}[{i}]")
                tc = self.tensor_code[target.name]
                with self.code.indent():
                    if dtype in FLOATS:
                        source = " + ".join(terms)
                        time = f" + 0.01 * {t}" if self.rng.random() < 0.3 else ""
                        self.code.emit(f"{tc}[{i}] = ({source}) / {len(terms)}{time}")
                    else:
                        time = f" ^ {t}" if self.rng.random() < 0.3 else ""
                        self.code.emit(f"{tc}[{i}] = {' ^ '.join(terms)}{time}")
        for w in written:
            w.written = True
            if dtype in FLOATS:
                w.lo, w.hi = w.lo - 0.5, w.hi + 0.5
                w.ops = max(w.ops, 4 * steps * kernels)
            else:
                w.lo, w.hi = -64, 64  # XORs of values in [-8, 8] and of steps below 64

    def nest_matrix_product(self):
        """A matrix product's loop nest: rows i over blocks, columns j over threads, and per
        pair an accumulation over k of loads of row i (A[i, k]) and of column j (B[k, j] or a
        transposed B[j, k]), then statements that store the result; the compiler runs it in
        register tiles from 32 rows and columns. Columns over all of them or a triangle (j
        from i, or up to i), k ranges that are not a multiple of the tiles' chunks, products,
        differences and maxima; one or two stores of t, or t added to the target."""
        self.feature("matrix_product")
        dtype = self.rng.choice(("float32", "float64", "int32", "int64"))
        m = self.rng.choice((31, 32, 33, 48, 70))
        triangle = self.rng.choice((None, None, "upper", "lower"))
        n = m if triangle else self.rng.choice((32, 40, 65))
        depth = self.rng.choice((5, 8, 13, 33))
        # trmm's and symm's k ranges follow the row: range(i + 1, m) or range(i) over a square A.
        k_range = None
        if not triangle and self.rng.random() < 0.3:
            depth = m
            k_range = self.rng.choice(("range({i} + 1, {n})", "range({i})"))
        a = self.new_tensor(dtype, (m, depth))
        transposed = self.rng.random() < 0.4
        b = self.new_tensor(dtype, (n, depth) if transposed else (depth, n))
        if a is None or b is None:
            return self.nest_map()
        c = self.new_tensor(dtype, (m, n), written=True)
        i, j, k, t = (self.local_name(v) for v in ("i", "j", "k", "t"))
        ac, bc, cc = (self.tensor_code[x.name] for x in (a, b, c))
        row = f"{ac}[{i}, {k}]"
        col = f"{bc}[{j}, {k}]" if transposed else f"{bc}[{k}, {j}]"
        floats = dtype in FLOATS
        updates = [f"{t} += {row} * {col}", f"{t} = {t} + ({row} - {col}) * {row}"]
        if floats:
            updates.append(f"{t} = {self.builtin('max')}({t}, {row} * {col})")
        else:
            updates.append(f"{t} = {t} ^ ({row} + {col})")
        update = self.rng.choice(updates)
        columns = {None: f"range({self.size_code(n)})", "upper": f"range({i}, {self.size_code(m)})",
                   "lower": f"range({i} + 1)"}[triangle]
        self.code.emit(f"parir.label({self.label('par')!r})")
        self.code.emit(f"for {i} in range({self.size_code(m)}):")
        with self.code.indent():
            self.code.emit(f"parir.label({self.label('par')!r})")
            self.code.emit(f"for {j} in {columns}:")
            with self.code.indent():
                init = self.rng.choice(('0', '1', '-2')) if not floats else self.rng.choice(
                    ('0.0', '0.5'))
                if self.rng.random() < 0.25:
                    init = f"{cc}[{i}, {j}]"  # as trmm starts from B[i, j]
                self.code.emit(f"{t} = {init}")
                ks = (k_range.format(i=i, n=self.size_code(depth)) if k_range
                      else f"range({self.size_code(depth)})")
                self.code.emit(f"for {k} in {ks}:")
                with self.code.indent():
                    self.code.emit(update)
                store = self.rng.random()
                if store < 0.5:
                    self.code.emit(f"{cc}[{i}, {j}] = {t}")
                elif store < 0.75 and triangle:
                    self.code.emit(f"{cc}[{i}, {j}] = {t}")
                    self.code.emit(f"{cc}[{j}, {i}] = {t}")
                else:
                    self.code.emit(f"{cc}[{i}, {j}] += {t}")
        c.written = True
        bound = 4.0 * 6 * depth + 2 if floats else 64 * depth + 64
        c.lo, c.hi = (-bound, bound) if floats else (-(1 << 16), 1 << 16)
        c.ops = max(c.ops, 3 * depth + 2)

    def generate(self):
        nests = self.rng.randint(1, 3)
        kinds = ["map"] * 5 + ["reduce"] * 3 + ["slices"] * 2 + ["gpu", "host", "stencil",
                                                                   "product"]
        for _ in range(nests):
            self.nest = Nest()
            kind = self.rng.choice(kinds + (["softmax"] if self.rng.random() < 0.1 else []))
            getattr(self, {"map": "nest_map", "reduce": "nest_reduce", "slices": "nest_slices",
                           "gpu": "nest_gpu_block", "softmax": "nest_softmax",
                           "host": "nest_host_repeat", "stencil": "nest_time_stencil",
                           "product": "nest_matrix_product"}[kind])()
        if not self.spec:
            # Every program launches at least one parallel loop.
            self.nest = Nest()
            self.nest_map()
        if self.rng.random() < 0.1:
            self.spec[self.names.fresh("unused")] = (self.rng.choice(THREADS), False, None)
        if self.rng.random() < 0.15 and self.code.lines:
            # A local named like the function itself.
            self._local_named_like_function()
        if self.rng.random() < 0.2:
            # Reductions over several blocks combine in a fixed order instead of atomically.
            self.options["deterministic"] = True
            self.feature("deterministic")
        return self.finish()

    def _local_named_like_function(self):
        self.feature("local_named_like_function")
        self.code.emit("with parir.gpu:")
        with self.code.indent():
            self.code.emit(f"{self.fn_name} = 1")
            t = self.new_tensor("int32", (1,), written=True)
            self.code.emit(f"{t.name}[0] = {self.fn_name} + 1")
        t.written = True

    def finish(self):
        used = self.names.used
        dict_parts = {f"{p.name}__{k}" for p in self.params if isinstance(p, DictArg)
                      for k in p.entries}
        if any(n + "_" in used for n in used) or dict_parts & used:
            # Names that differ by a trailing underscore, or d__k next to d['k']: apart in
            # Python, alike once a keyword gets its underscore or a dict entry its C name.
            self.feature("name_escape_collision")
        params = ", ".join(p.name for p in self.params)
        header = f"def {self.fn_name}({params}):"
        src = ["import parir_torch as parir", ""]
        for h in self.helpers:
            src += ["", h, ""]
        src += ["", "@parir.jit", header] + self.code.lines + [""]
        written = {t.name for t in self.tensors.values() if t.written}
        for p in self.params:
            if isinstance(p, TensorArg):
                p.written = p.name in written
        return Program(self.seed, self.names_mode, "\n".join(src), self.fn_name, self.params,
                       self.spec, self.features, self.gpu_sized, self.options)


def _init_range(dtype):
    if dtype == "bool":
        return 0, 1
    if dtype == "uint8":
        return 1, 9
    if dtype in INTS:
        return -8, 8
    return -2.0, 2.0


def _dtype_kind(dtype):
    return "b" if dtype == "bool" else "f" if dtype in FLOATS else "i"


def _fits_type(e, dtype):
    if dtype not in INT_RANGE:
        return True
    lo, hi = INT_RANGE[dtype]
    if e.ty.kind == "f":
        return lo <= math.trunc(e.lo) and math.trunc(e.hi) <= hi
    return lo <= e.lo and e.hi <= hi


def _fits(e):
    """Whether an expression's interval lies inside its type (and floats inside the limit)."""
    if e.ty.kind == "f":
        return max(abs(e.lo), abs(e.hi)) <= FLOAT_LIMIT
    if e.ty.kind == "b":
        return True
    lo, hi = INT_RANGE[e.ty.name]
    # Weak integers are Python ints in the plain run and int64 on the GPU; keep them small.
    if e.ty.weak:
        lo, hi = -2 ** 31, 2 ** 31
    return lo <= e.lo and e.hi <= hi


def _weak_fits(a, b):
    """A weak integer meeting a typed integer takes its type: it must fit in it (torch
    refuses, or wraps, a Python int out of a tensor's range)."""
    for w, t in ((a, b), (b, a)):
        if w.ty.weak and not t.ty.weak and w.ty.kind == "i" and t.ty.kind in "ib":
            lo, hi = INT_RANGE[t.ty.name]
            if w.lo < lo or w.hi > hi:
                return False
    return True


def _interval(op, a, b):
    """The result interval of `a op b`, or (None, None) when it is undefined (division by an
    interval holding zero)."""
    al, ah, bl, bh = a.lo, a.hi, b.lo, b.hi
    if op == "+":
        return al + bl, ah + bh
    if op == "-":
        return al - bh, ah - bl
    if op in ("*", "min", "max"):
        if op == "min":
            return min(al, bl), min(ah, bh)
        if op == "max":
            return max(al, bl), max(ah, bh)
        c = [al * bl, al * bh, ah * bl, ah * bh]
        return min(c), max(c)
    if op == "**":
        c = [al * al, ah * ah]
        return (0 if al <= 0 <= ah else min(c)), max(c)
    if op in ("/", "//", "%"):
        if bl <= 0 <= bh:
            return None, None
        if op == "%":
            return (0, bh - 1) if bl > 0 else (bl + 1, 0)
        if op == "/":
            c = [al / bl, al / bh, ah / bl, ah / bh]
            return min(c), max(c)
        c = [al // bl, al // bh, ah // bl, ah // bh]
        return min(c), max(c)
    if op in ("&", "|", "^"):
        m = max(abs(al), abs(ah), abs(bl), abs(bh), 1)
        p = 1 << int(m).bit_length()
        if al >= 0 and bl >= 0:
            return 0, p - 1
        return -p, p - 1
    if op == "<<":
        return al * (1 << int(bh)), ah * (1 << int(bh))
    if op == ">>":
        return al >> int(bh), ah >> int(bh)
    raise ValueError(op)


def generate(seed, names="ordinary", gpu_sized=False):
    """The program for `seed`: the same seed and names mode give the same program."""
    return Generator(seed, names, gpu_sized).generate()


if __name__ == "__main__":
    import sys
    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        p = generate(s, sys.argv[2] if len(sys.argv) > 2 else "mixed")
        print(f"# seed {s} spec {p.spec_source()} features {sorted(p.features)}")
        print(p.source)
