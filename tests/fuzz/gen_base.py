"""The state the generators of generate.py share while they build one program: the code
emitted so far, the loops and locals in scope, the reads and writes of the current nest
(which keep it race-free), and `GeneratorBase`, which picks names, creates the arguments
and labels loops in the parallel specification.
"""

import dataclasses
import random

from gen_identifiers import AWKWARD, C_FUNCTIONS, NAME_CLASSES, SHADOWING, Names
from gen_program import DictArg, ScalarArg, TensorArg
from gen_values import FLOATS, PRECISION, Expr, Ty, _init_range

SIZES = (1, 2, 31, 32, 33, 64, 100)
LONG_SIZES = (4099, 4101, 8192, 8195)
# Row counts that make the compiler lay short rows out for many rows (a warp per row from 8,192
# rows, fewer threads a row where rows x threads fill the GPU): the plain Python run of such a
# nest is slow, so its rows stay short.
MANY_ROWS = (8192, 8195)
THREADS = (1, 2, 31, 32, 33, 64, 100, 128, 257, 1000, 1024, 2048, 5000)
TPB = (32, 64, 96, 128, 256, 512, 1024)


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


class GeneratorBase:
    """The state of one program as it is built: its names, its arguments and its parallel
    specification. The expression, statement and nest generators build on it."""

    MAX_TENSORS = 9

    def __init__(self, seed, names="ordinary", gpu_sized=False):
        self.seed = seed
        self.rng = random.Random(seed)
        # Draws for rarely taken shapes, apart from `rng`, so that adding one changes only the
        # programs that take it.
        self.rare_rng = random.Random(f"rare {seed}")
        self.many_rows = 0      # the row count of a nest over many short rows, until labelled
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
            d = self._dict_argument()
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

    def _dict_argument(self):
        """The program's dict argument, added to its parameters the first time it is needed."""
        d = next((p for p in self.params if isinstance(p, DictArg)), None)
        if d is None:
            d = DictArg(self.names.fresh("d", allow_shadowing=False), {})
            self._note_name(d.name, "dict")
            self.params.append(d)
        return d

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
            d = self._dict_argument()
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
        if threads is None and self.many_rows and kind == "par" and not fits_block:
            # The first such label after the rows were drawn, the outer loop's in every nest
            # that draws them: mostly a thread a row, as parir.threads(N) over N rows asks.
            if self.rare_rng.random() < 0.8:
                n = self.many_rows
            self.many_rows = 0
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
