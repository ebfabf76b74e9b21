"""How a call is compiled and parallelized: LoopPar, CompileOptions and their constructors."""

import enum
import os

from ._C import ParirError


class CompileBackend(enum.Enum):
    """The code generator to use. CUDA is the only backend; Auto selects it."""

    Auto = "auto"
    Cuda = "cuda"


class LoopPar:
    """How one labelled loop runs in parallel. Immutable: each method returns a new LoopPar.

    >>> parir.threads(256).reduce().tpb(128)
    """

    __slots__ = ("_nthreads", "_reduce", "_tpb", "_k")

    def __init__(self):
        self._nthreads = None
        self._reduce = False
        self._tpb = 0
        self._k = (None, False, 0)

    def _with(self, **changes):
        p = LoopPar()
        p._nthreads, p._reduce, p._tpb = self._nthreads, self._reduce, self._tpb
        for k, v in changes.items():
            setattr(p, "_" + k, v)
        p._k = (p._nthreads, p._reduce, p._tpb)  # the key, as plain values: hashed in C
        return p

    def threads(self, nthreads):
        """A LoopPar requesting `nthreads` parallel threads for the loop."""
        if isinstance(nthreads, bool) or not isinstance(nthreads, int) or nthreads < 0:
            raise ValueError(f"parir.threads needs a non-negative int, got {nthreads!r}")
        return self._with(nthreads=nthreads)

    def reduce(self):
        """A LoopPar that also marks the loop as a parallel reduction."""
        return self._with(reduce=True)

    def tpb(self, tpb):
        """A LoopPar that runs `tpb` threads per block (default 1024): a multiple of 32, at
        most 1024."""
        if isinstance(tpb, bool) or not isinstance(tpb, int) or tpb < 32 or tpb > 1024 or tpb % 32:
            raise ValueError(f"threads per block must be a multiple of 32 in [32, 1024], got {tpb!r}")
        return self._with(tpb=tpb)

    @property
    def nthreads(self):
        return self._nthreads

    @property
    def is_reduction(self):
        return self._reduce

    @property
    def threads_per_block(self):
        return self._tpb or 1024

    def _key(self):
        return self._k

    def __eq__(self, other):
        return isinstance(other, LoopPar) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        s = f"parir.threads({self._nthreads})" if self._nthreads is not None else "parir.LoopPar()"
        if self._reduce:
            s += ".reduce()"
        if self._tpb:
            s += f".tpb({self._tpb})"
        return s


def threads(nthreads):
    """parir.threads(n): a LoopPar requesting n threads."""
    return LoopPar().threads(nthreads)


def reduce():
    """parir.reduce(): a LoopPar marking a parallel reduction."""
    return LoopPar().reduce()


class CompileOptions:
    """Options of one call, passed as `opts=`. Mutable; `parir.par(spec)` builds one.

    Fields (defaults in brackets):
      parallelize: {label: LoopPar}, the parallel specification [{}]
      seq: run the original Python function instead of compiling [False]
      backend: CompileBackend [Auto]
      debug_print: print the IR after each compiler pass, with elapsed time [False]
      write_output: when NVRTC fails, save the CUDA source to a file named in the error [False]
      verbose_backend_resolution: explain why the CUDA backend is or is not available [False]
      includes: include directories for NVRTC (headers of parir.external functions) [[]]
      extra_flags: flags for NVRTC, except -lNAME, which links the device library
        libNAME.a found in one of `libs` [[]]
      libs: directories searched for -lNAME libraries, or device library files (.a, .o) to
        link; the driver's linker links them when the module is loaded [[]]
      use_cuda_graphs: run the host-side launch sequence as one CUDA graph, captured once per
        set of tensor addresses and replayed on the current stream [False]
      use_cuda_thread_block_clusters: reductions over several blocks (at most
        max_thread_blocks_per_cluster of them, a power of two up to 16) run those blocks as a
        thread block cluster and combine through distributed shared memory instead of global
        atomics; needs compute capability 9.0 [False, 8]
      force_int_size [None], force_float_size [None]: the type (a parir.ElemSize, a torch
        dtype or parir.int32 and friends) of every integer / float value that has no type of
        its own: literals, Python int and float arguments, loop variables. None: int64 and
        float64. Tensor elements and 0-d tensors keep their dtypes.
    """

    def __init__(self, parallelize=None, **fields):
        self.parallelize = dict(parallelize or {})
        self.seq = False
        self.backend = CompileBackend.Auto
        self.debug_print = False
        self.write_output = False
        self.verbose_backend_resolution = False
        self.use_cuda_thread_block_clusters = False
        self.max_thread_blocks_per_cluster = 8
        self.use_cuda_graphs = False
        self.force_int_size = None
        self.force_float_size = None
        self.includes = []
        self.libs = []
        self.extra_flags = []
        for k, v in fields.items():
            if not hasattr(self, k):
                raise TypeError(f"CompileOptions has no field {k!r}")
            setattr(self, k, v)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"CompileOptions({fields})"


def par(spec):
    """parir.par({'N': parir.threads(N)}): default CompileOptions with this parallel spec."""
    if not isinstance(spec, dict):
        raise TypeError(f"parir.par takes a dict of label -> LoopPar, got {type(spec).__name__}")
    return CompileOptions(parallelize=spec)


def options_key(opts):
    """The part of the options that determines the generated code, as a hashable value. This
    runs on every call, so it only collects: the entries are validated when compiling
    (validate_parallel_spec). Insertion order is part of the key; two orders of one spec only
    cost a second cache entry."""
    return (tuple([(label, p._k) for label, p in opts.parallelize.items()]),
            tuple(opts.includes), tuple(opts.libs), tuple(opts.extra_flags),
            opts.use_cuda_graphs, opts.use_cuda_thread_block_clusters,
            opts.max_thread_blocks_per_cluster, opts.force_int_size, opts.force_float_size)


def validate_parallel_spec(opts):
    for label, p in opts.parallelize.items():
        if not isinstance(label, str) or not isinstance(p, LoopPar):
            raise TypeError(
                f"the parallel specification maps label strings to LoopPar objects "
                f"(parir.threads(n)); got {label!r}: {p!r}")
        if p._nthreads is None:
            raise ValueError(f"label {label!r} maps to {p!r}, which has no thread count; "
                             f"use parir.threads(n)")


def nvrtc_flags(opts):
    """opts.extra_flags without the -lNAME flags, which are for the linker."""
    return [f for f in opts.extra_flags if not f.startswith("-l")]


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


def check_supported(opts):
    """Rejects option values that this version does not implement, rather than ignoring them."""
    if not isinstance(opts, CompileOptions):
        raise TypeError(f"opts must be a parir.CompileOptions (from parir.par(...)), "
                        f"got {type(opts).__name__}")
    if opts.backend not in (CompileBackend.Auto, CompileBackend.Cuda):
        raise ValueError(f"unknown backend {opts.backend!r}")
    validate_parallel_spec(opts)
