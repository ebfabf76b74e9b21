"""How a call is compiled and parallelized: LoopPar, CompileOptions and their constructors.

Each CompileOptions field is described once, in FIELDS: its default, whether it is part of the
specialization key, and how it reaches the C++ compiler (_C.CompileOptions, whose fields carry
the Python names). The constructor, the key (options_key), the constants a traced graph carries
(as_constants, from_constants) and the C++ view (to_cpp) are derived from that list.
"""

import enum
import operator
import os
import textwrap
from typing import NamedTuple

import torch

from . import _C
from ._C import ParirError
from .errors import ParirTypeError, ParirValueError, options_type_error
from .types import elem_size


class CompileBackend(enum.Enum):
    """The code generator to use. parir-torch generates CUDA, which Auto selects. Metal is the
    original Parir's backend for Apple GPUs: it is named so that programs written for Parir
    import unchanged, and compiling with it is an error (PyTorch's tensors here live on CUDA)."""

    Auto = "auto"
    Cuda = "cuda"
    Metal = "metal"


def _as_int(n, what):
    """n as a Python int: ints and integers of other libraries (np.int64(1000), a 0-d integer
    tensor's .item()), not bools, floats or anything else."""
    if isinstance(n, bool):
        raise ParirTypeError(f"{what}, got {n!r}")
    try:
        return operator.index(n)
    except TypeError:
        raise ParirTypeError(f"{what}, got {n!r}") from None


class LoopPar:
    """How one labelled loop runs in parallel. Immutable: each method returns a new LoopPar.

    >>> parir.threads(256).reduce().tpb(128)
    """

    __slots__ = ("_nthreads", "_reduce", "_tpb", "_scan", "_k")

    def __init__(self):
        self._nthreads = None
        self._reduce = False
        self._tpb = 0
        self._scan = False
        self._k = (None, False, 0, False)

    def _with(self, **changes):
        p = LoopPar()
        p._nthreads, p._reduce, p._tpb, p._scan = self._nthreads, self._reduce, self._tpb, self._scan
        for k, v in changes.items():
            setattr(p, "_" + k, v)
        if p._reduce and p._scan:
            raise ParirValueError("a loop is either a reduction (.reduce()) or a scan (.scan()), "
                                  "not both")
        p._k = (p._nthreads, p._reduce, p._tpb, p._scan)  # the key, as plain values: hashed in C
        return p

    def threads(self, nthreads):
        """A LoopPar requesting `nthreads` parallel threads for the loop."""
        if isinstance(nthreads, torch.SymInt):  # a size while torch.compile or export trace
            nthreads = int(nthreads)  # parir code is specialized on it (a guard)
        nthreads = _as_int(nthreads, "parir.threads needs a non-negative int")
        if nthreads < 0:
            raise ParirValueError(f"parir.threads needs a non-negative int, got {nthreads!r}")
        if nthreads > _MAX_THREADS:
            raise ParirValueError(f"parir.threads({nthreads}) asks for more threads than one "
                                  f"launch can have ({_MAX_THREADS}: CUDA's limit of 2^31 - 1 "
                                  f"blocks of 1,024 threads)")
        return self._with(nthreads=nthreads)

    def reduce(self):
        """A LoopPar that also marks the loop as a parallel reduction."""
        return self._with(reduce=True)

    def scan(self):
        """A LoopPar that also marks the loop as a parallel scan: its body carries a running
        value (s += x[i, j]; out[i, j] = s), which the block's threads compute together, one
        tile of the row at a time (README, "Scans")."""
        return self._with(scan=True)

    def tpb(self, tpb):
        """A LoopPar that runs `tpb` threads per block (default 1024, the compiler's
        LoopPar::kDefaultThreadsPerBlock): a multiple of 32, at most 1024 (CUDA's limit)."""
        what = "threads per block must be a multiple of 32 in [32, 1024]"
        tpb = _as_int(tpb, what)
        if tpb < 32 or tpb > 1024 or tpb % 32:
            raise ParirValueError(f"{what}, got {tpb!r}")
        return self._with(tpb=tpb)

    @property
    def nthreads(self):
        return self._nthreads

    @property
    def is_reduction(self):
        return self._reduce

    @property
    def is_scan(self):
        return self._scan

    @property
    def threads_per_block(self):
        return self._tpb or _C.DEFAULT_THREADS_PER_BLOCK

    def _key(self):
        return self._k

    @staticmethod
    def _from_key(k):
        """The LoopPar whose _key() is `k`."""
        return LoopPar()._with(nthreads=k[0], reduce=k[1], tpb=k[2], scan=k[3])

    def __eq__(self, other):
        return isinstance(other, LoopPar) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        s = f"parir.threads({self._nthreads})" if self._nthreads is not None else "parir.LoopPar()"
        if self._reduce:
            s += ".reduce()"
        if self._scan:
            s += ".scan()"
        if self._tpb:
            s += f".tpb({self._tpb})"
        return s


def threads(nthreads):
    """parir.threads(n): a LoopPar requesting n threads."""
    return LoopPar().threads(nthreads)


def reduce():
    """parir.reduce(): a LoopPar marking a parallel reduction."""
    return LoopPar().reduce()


class Field(NamedTuple):
    """One field of CompileOptions."""

    name: str
    default: object  # lists and dicts are copied for each CompileOptions
    key: bool  # part of the specialization key: a new value compiles the function again
    cpp: object  # the value of the C++ field of the same name, or None for Python-only fields
    doc: str


# How values reach _C.CompileOptions: (value, what) -> the C++ value; `what` names the field in
# errors.

def _flag(value, what):
    return bool(value)


# The most threads a launch can have: CUDA's limit of 2^31 - 1 blocks, of at most 1,024 threads.
_MAX_THREADS = (2 ** 31 - 1) * 1024


def _optional_flag(value, what):
    return None if value is None else bool(value)


def _count(value, what):
    return int(value)


def _type_name(value, what):
    return None if value is None else elem_size(value, what).value


def _loop_pars(spec, what):
    return {label: _C.LoopPar(*p._k) for label, p in spec.items()}


def _absolute_paths(paths, what):
    return [os.path.abspath(p) for p in paths]


def _without_link_flags(flags, what):
    return [f for f in flags if not f.startswith("-l")]


FIELDS = (
    Field("parallelize", {}, key=True, cpp=_loop_pars,
          doc="{label: LoopPar}, the parallel specification"),
    Field("seq", False, key=False, cpp=None,
          doc="run the original Python function instead of compiling"),
    Field("check", False, key=False, cpp=None,
          doc="run the kernels, then the original Python function on CPU copies of the "
              "inputs, and raise a ParirError naming the first tensor element where they "
              "differ (parir.check; for small sizes: the Python run is slow)"),
    Field("backend", CompileBackend.Auto, key=False, cpp=None, doc="the CompileBackend"),
    Field("debug_print", False, key=False, cpp=_flag,
          doc="print the IR after each compiler pass, with elapsed time"),
    Field("write_output", False, key=False, cpp=None,
          doc="when NVRTC fails, save the CUDA source to a file named in the error"),
    Field("verbose_backend_resolution", False, key=False, cpp=None,
          doc="explain why the CUDA backend is or is not available"),
    Field("bounds_check", False, key=True, cpp=_flag,
          doc="check at run time every tensor access that the compiler could not prove in "
              "bounds; the first one out of bounds is skipped and raises a ParirError after "
              "the launch (debug=True turns this on too)"),
    Field("use_cuda_thread_block_clusters", False, key=True, cpp=_flag,
          doc="reductions over several blocks (at most max_thread_blocks_per_cluster of them) "
              "run those blocks as a thread block cluster and combine through distributed "
              "shared memory instead of global atomics; needs compute capability 9.0"),
    Field("max_thread_blocks_per_cluster", 8, key=True, cpp=_count,
          doc="the largest thread block cluster, a power of two up to 16"),
    Field("deterministic", False, key=True, cpp=_flag,
          doc="reductions whose threads span several blocks combine the blocks' results in a "
              "fixed order (through a temporary, in a kernel after the loop's) instead of "
              "with atomics, so that float results are the same on every run"),
    Field("use_cuda_graphs", None, key=True, cpp=_optional_flag,
          doc="run the host-side launch sequence as one CUDA graph, captured per set of "
              "tensor addresses and replayed on the current stream. None: when it pays, for "
              "launch plans with host loops, captured the second time a call passes the same "
              "tensors; True: always, captured on the first call; False: never"),
    Field("persistent_loops", True, key=True, cpp=_flag,
          doc="a host loop (a sequential loop around parallel ones) whose kernels each run at "
              "most 16 blocks of one size also becomes one persistent kernel: a thread block "
              "cluster runs every iteration, its blocks waiting for each other between "
              "kernels, instead of a launch per kernel per iteration (on GPUs with clusters, "
              "compute capability 9.0; elsewhere the loop runs as before)"),
    Field("time_tiling", True, key=True, cpp=_flag,
          doc="a host loop over time steps whose kernels are one-dimensional stencils (each "
              "element read and written at the loop index plus constants) runs up to 32 time "
              "steps per launch, each block on a tile of the elements in shared memory with a "
              "halo it recomputes, through temporaries as large as the tensors written; False "
              "launches every kernel of every time step"),
    Field("product_tiling", True, key=True, cpp=_flag,
          doc="a kernel that loops over rows i (blocks) and columns j (threads) and, for each "
              "pair, accumulates over k loads of row i and of column j (a matrix product: "
              "t += A[i, k] * B[k, j]) runs in tiles: 256 threads share each chunk of k in "
              "shared memory and each thread updates up to 8 x 8 pairs from registers, with the "
              "same result to the bit; False runs it as written"),
    Field("wide_accesses", True, key=True, cpp=_flag,
          doc="a thread-level loop that walks a tensor's contiguous dimension, and a row kept "
              "in registers or shared memory, move 16 (or 8) bytes per load and store (W "
              "consecutive elements per thread) where the data is aligned; False keeps one "
              "element per access (to compare, or to read the generated code as the loop is "
              "written)"),
    Field("force_int_size", None, key=True, cpp=_type_name,
          doc="the type (a parir.ElemSize, a torch dtype or parir.int32 and friends) of every "
              "integer value that has no type of its own: literals, Python int arguments, "
              "loop variables. None: int64. Tensor elements and 0-d tensors keep their dtypes"),
    Field("force_float_size", None, key=True, cpp=_type_name,
          doc="the same for floating-point values: literals and Python float arguments. "
              "None: float64"),
    Field("half_in_float32", False, key=True, cpp=_flag,
          doc="float16 and bfloat16 elements are read as float32: arithmetic and math on them "
              "compute in float32 and round once, when stored, as PyTorch's elementwise "
              "kernels do (False: each operation rounds to the half type; seq=True computes "
              "that way)"),
    Field("includes", [], key=True, cpp=_absolute_paths,
          doc="include directories for NVRTC (headers of parir.external functions)"),
    # Reaches C++ as link_libraries, with the -lNAME flags of extra_flags (_CPP_DERIVED).
    Field("libs", [], key=True, cpp=None,
          doc="directories searched for -lNAME libraries, or device library files (.a, .o) "
              "to link; the driver's linker links them when the module is loaded"),
    Field("extra_flags", [], key=True, cpp=_without_link_flags,
          doc="flags for NVRTC, except -lNAME, which links the device library libNAME.a "
              "found in one of `libs`"),
)


_FIELD_NAMES = tuple(f.name for f in FIELDS)


def _default_text(default):
    return default.name if isinstance(default, enum.Enum) else repr(default)


def _fields_doc():
    lines = []
    for f in FIELDS:
        lines += textwrap.wrap(f"{f.name}: {f.doc} [{_default_text(f.default)}]", 92,
                               initial_indent="      ", subsequent_indent="        ")
    return "\n".join(lines)


class CompileOptions:
    __doc__ = f"""Options of one call, passed as `opts=`. Mutable; `parir.par(spec)` builds one.

    Fields (defaults in brackets):
{_fields_doc()}
    """

    def __init__(self, parallelize=None, **fields):
        for f in FIELDS:
            default = f.default
            if isinstance(default, (list, dict)):  # each CompileOptions has its own
                default = type(default)(default)
            setattr(self, f.name, default)
        if parallelize is not None and not isinstance(parallelize, dict):
            raise ParirTypeError(f"CompileOptions(parallelize=...) takes a dict of label -> "
                                 f"LoopPar, got {type(parallelize).__name__}")
        self.parallelize = dict(parallelize or {})
        for k, v in fields.items():
            if k not in _FIELD_NAMES:
                raise ParirTypeError(f"CompileOptions has no field {k!r}; its fields are "
                                     f"{', '.join(_FIELD_NAMES)}")
            setattr(self, k, v)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"CompileOptions({fields})"


def par(spec):
    """parir.par({'N': parir.threads(N)}): default CompileOptions with this parallel spec."""
    if not isinstance(spec, dict):
        raise ParirTypeError(f"parir.par takes a dict of label -> LoopPar, got "
                             f"{type(spec).__name__}")
    return CompileOptions(parallelize=spec)


# The original Parir's name for par (its README calls parir.parallelize(p)).
parallelize = par


# ----- views derived from FIELDS -------------------------------------------------------------

def _form(default):
    """How a field's values become hashable constants: by the type of its default."""
    if isinstance(default, dict):
        return "spec"  # {label: LoopPar}: (label, (threads, reduce, tpb, scan)) pairs
    if isinstance(default, list):
        return "list"
    if isinstance(default, enum.Enum):
        return "enum"
    return "value"


_CONSTANT = {"spec": "tuple([(label, p._k) for label, p in {}.items()])", "list": "tuple({})",
             "enum": "{}.value", "value": "{}"}


def _constants_function(name, fields, doc):
    """A function giving `fields` of a CompileOptions as one tuple of hashable constants. It is
    written out as one tuple expression and compiled, as dataclasses compile __init__: the key
    is built on every call, and so costs what a hand-written tuple costs."""
    items = "".join(_CONSTANT[_form(f.default)].format(f"opts.{f.name}") + ", " for f in fields)
    namespace = {"__name__": __name__}
    exec(f"def {name}(opts):\n    return ({items})\n", namespace)
    fn = namespace[name]
    fn.__doc__ = doc
    return fn


# This runs on every call, so it only collects: the entries are validated when compiling
# (validate_parallel_spec). Insertion order is part of the key; two orders of one spec only cost
# a second cache entry.
options_key = _constants_function(
    "options_key", [f for f in FIELDS if f.key],
    "The part of the options that determines the generated code, as a hashable value.")

as_constants = _constants_function(
    "as_constants", FIELDS,
    "Every field of the options as nested tuples of constants, which a traced graph can "
    "carry; from_constants rebuilds the options.")


def describe_options_change(old, new):
    """What changed between two options_key values, as a phrase for the log of a
    recompilation."""
    fields = [f for f in FIELDS if f.key]
    parts = []
    for f, a, b in zip(fields, old, new):
        if a != b:
            if _form(f.default) == "spec":
                a, b = ({label: LoopPar._from_key(k) for label, k in v} for v in (a, b))
            parts.append(f"opts.{f.name} changed {a!r} → {b!r}")
    return "; ".join(parts)


def from_constants(constants):
    """The CompileOptions that as_constants gave `constants` for."""
    fields = {}
    for f, value in zip(FIELDS, constants, strict=True):
        form = _form(f.default)
        if form == "spec":
            value = {label: LoopPar._from_key(k) for label, k in value}
        elif form == "list":
            value = list(value)
        elif form == "enum":
            value = type(f.default)(value)
        fields[f.name] = value
    return CompileOptions(**fields)


def validate_parallel_spec(opts):
    if not isinstance(opts.parallelize, dict):
        raise ParirTypeError(f"CompileOptions.parallelize must be a dict of label -> LoopPar, "
                             f"got {type(opts.parallelize).__name__}")
    for label, p in opts.parallelize.items():
        if not isinstance(label, str) or not isinstance(p, LoopPar):
            raise ParirTypeError(
                f"the parallel specification maps label strings to LoopPar objects "
                f"(parir.threads(n)); got {label!r}: {p!r}")
        if p._nthreads is None:
            raise ParirValueError(f"label {label!r} maps to {p!r}, which has no thread count; "
                                  f"use parir.threads(n)")


def include_dirs(opts):
    """opts.includes as absolute paths."""
    return _absolute_paths(opts.includes, "CompileOptions.includes")


def nvrtc_flags(opts):
    """opts.extra_flags without the -lNAME flags, which are for the linker."""
    return _without_link_flags(opts.extra_flags, "CompileOptions.extra_flags")


def link_libraries(opts):
    """The device libraries to link, as absolute paths: the files named in opts.libs, and
    libNAME.a for each -lNAME of opts.extra_flags, found in the directories of opts.libs."""
    out = [os.path.abspath(p) for p in opts.libs if os.path.isfile(p)]
    dirs = [d for d in opts.libs if os.path.isdir(d)]
    for flag in opts.extra_flags:
        if not flag.startswith("-l"):
            continue
        name = flag[2:]
        found = [os.path.join(d, f"lib{name}.a") for d in dirs
                 if os.path.isfile(os.path.join(d, f"lib{name}.a"))]
        if not found:
            raise ParirError(f"CompileOptions.extra_flags has {flag}, but lib{name}.a is in none "
                             f"of the directories of CompileOptions.libs ({opts.libs})")
        out.append(os.path.abspath(found[0]))
    for p in opts.libs:
        if not os.path.exists(p):
            raise ParirError(f"CompileOptions.libs names {p!r}, which does not exist")
    return out


# C++ fields that no Python field carries as it is: derived from several.
_CPP_DERIVED = {"link_libraries": link_libraries}


def to_cpp(opts, debug=False):
    """The options as the C++ compiler takes them: a _C.CompileOptions. `debug` is the call's
    debug=True. The include directories, NVRTC flags and link libraries are recorded in the
    launch plan, so that the source alone builds the same binary."""
    out = _C.CompileOptions()
    for f in FIELDS:
        if f.cpp is not None:
            setattr(out, f.name, f.cpp(getattr(opts, f.name), f"CompileOptions.{f.name}"))
    for name, derive in _CPP_DERIVED.items():
        setattr(out, name, derive(opts))
    if debug:
        out.debug_print = True
        out.bounds_check = True
    return out


def check_supported(opts):
    """Rejects option values that this version does not implement, rather than ignoring them."""
    if not isinstance(opts, CompileOptions):
        raise options_type_error(opts)
    if opts.backend is CompileBackend.Metal:
        raise ParirValueError("CompileBackend.Metal is not available: parir-torch compiles to "
                              "CUDA and runs on PyTorch's CUDA tensors; use CompileBackend.Auto "
                              "or CompileBackend.Cuda")
    if opts.backend not in (CompileBackend.Auto, CompileBackend.Cuda):
        raise ParirValueError(f"unknown backend {opts.backend!r}; CompileBackend.Auto or "
                              f"CompileBackend.Cuda")
    validate_parallel_spec(opts)
