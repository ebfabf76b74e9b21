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

An input that only expressions read may be optional (`optional_tensor`: each read is
`x[i] if x is not None else <a value of its dtype>`), and the call passes None for it half the
time.

Sizes stay small, so that the plain Python run is quick, except where the compiler chooses
its layout by size: now and then an innermost loop of thousands of iterations (`long_loop`,
16-byte accesses) and, rarely, a nest over 8,192 or 8,195 rows of at most 64 elements whose
outer label may ask for a thread a row (`many_rows`: a warp a row, fewer threads a row).

The `names` mode picks identifiers: `ordinary` (x0, out1, i2), `awkward` (C++ keywords and
CUDA builtins, names starting with `parir_`, non-ASCII, names that collide with what the
compiler generates) or `mixed`.

The generator is split by responsibility, each module building on the ones listed before
it: gen_values.py (dtypes, type promotion, expressions and their intervals), gen_program.py
(the `Program` and its arguments), gen_identifiers.py (names), gen_base.py (the state of a
program being built, its arguments and parallel specification), gen_expressions.py,
gen_statements.py and gen_nests.py (what each draws). This module puts them together as `Generator`
and keeps exposing the names run.py and the tests use.
"""

from gen_base import LONG_SIZES, SIZES, THREADS, TPB, Code, Loop, Nest, Scope
from gen_identifiers import (AWKWARD, C_FUNCTIONS, CPP_NAMES, GENERATED_NAMES, LONG_NAME,
                             NAME_CLASSES, SHADOWING, Names)
from gen_nests import NestGenerator
from gen_program import DictArg, Program, ScalarArg, TensorArg
from gen_values import (DTYPES, FLOAT_LIMIT, FLOATS, INT_BITS, INT_RANGE, INTS, PRECISION, Expr,
                        Ty, promote)

# The names other code uses through this module, wherever they are defined.
__all__ = [
    "FLOATS", "INTS", "DTYPES", "INT_RANGE", "INT_BITS", "FLOAT_LIMIT", "PRECISION",
    "CPP_NAMES", "GENERATED_NAMES", "SHADOWING", "C_FUNCTIONS", "NAME_CLASSES", "LONG_NAME",
    "AWKWARD", "SIZES", "LONG_SIZES", "THREADS", "TPB", "Ty", "promote", "Expr", "TensorArg",
    "ScalarArg", "DictArg", "Program", "Names", "Code", "Loop", "Scope", "Nest", "Generator",
    "generate",
]


class Generator(NestGenerator):
    """Builds one program. The top-level function draws nests; each nest draws loops, bodies
    and expressions, creating the tensors it reads and writes as it goes."""

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


def generate(seed, names="ordinary", gpu_sized=False):
    """The program for `seed`: the same seed and names mode give the same program."""
    return Generator(seed, names, gpu_sized).generate()


if __name__ == "__main__":
    import sys
    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        p = generate(s, sys.argv[2] if len(sys.argv) > 2 else "mixed")
        print(f"# seed {s} spec {p.spec_source()} features {sorted(p.features)}")
        print(p.source)
