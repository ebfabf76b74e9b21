"""The jit kernels behind parir.vectorize and parir.guvectorize: generated Python source, one
parallel loop over the elements of the loop dimensions, calling the user's function.

For `foo(a, b)` with a float32 tensor `a` over two loop dimensions and a Python number `b`,
under the signature 'float32(float32, float32)':

    def foo_vectorized(a, b, out, n0, n1):
        parir.label('parir.elements')
        for i in range(n0 * n1):
            out[i // n1, i % n1] = foo(a[i // n1, i % n1], parir.float32(b))

The operands reach the kernel as views over the loop dimensions (broadcast, ordered and merged
by the caller, ufuncs.py), so one index serves every operand. A generalized function is
called with the operands indexed in their loop dimensions only, `foo(x[i], y[i], out[i])`: the
compiler inlines it, and its `x[k]` reads x[i, k] (csrc/passes/inline_functions.cpp). Sizes are
parameters, which parir specializes on, so one generated kernel serves every shape of its rank.

The source is registered in linecache under a file name of its own, so that parir (which reads
a function's source with inspect) and seq=True's plain Python read it like any file; the user's
function is compiled from its own file, so its errors name the user's lines.

A generalized function may read its arrays' sizes, as NumbaPro's do: `A.shape[k]`,
`m, n = A.shape` and `len(A)` of a parameter are the sizes of the view it receives, constants
of the kernel's specialization (the compiler's shapes of views).
"""

import itertools
import linecache
import sys

from . import plain_python_rewrite
from .jit_function import JitFunction

LABEL = "parir.elements"  # the label of the loop over the elements; the user's are others
_counter = itertools.count(1)


class Names:
    """Fresh names: ones that none of `taken` (the user's parameters and function) is."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base):
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def _index(loop_var, sizes):
    """The index of the loop dimensions for element `loop_var` of a loop of `sizes` (names), in
    row-major order."""
    if len(sizes) == 1:
        return [loop_var]
    out = []
    for d in range(len(sizes)):
        inner = sizes[d + 1:]
        if d == 0:
            inner_product = inner[0] if len(inner) == 1 else f"({' * '.join(inner)})"
            out.append(f"{loop_var} // {inner_product}")
        elif not inner:
            out.append(f"{loop_var} % {sizes[d]}")
        else:
            inner_product = inner[0] if len(inner) == 1 else f"({' * '.join(inner)})"
            out.append(f"{loop_var} // {inner_product} % {sizes[d]}")
    return out


def kernel_source(kind, fn_name, params, operands, rank):
    """(kernel name, source text, name of the parir module, name of the function) for a kernel
    calling the function `fn_name` with parameters `params`.

    kind: "vectorize" (the function's value is stored into an extra output) or "guvectorize"
    (the function writes its output parameters). operands[k] says how parameter k reaches the
    function: ("element", cast) indexed in the loop dimensions, ("scalar", cast) a number;
    cast is a parir type name to convert to, or None. rank: the number of loop dimensions."""
    names = Names([*params, fn_name])
    module = names.fresh("parir")
    callee = names.fresh(fn_name + "_fn") if fn_name in params else fn_name
    kernel = names.fresh(f"{fn_name}_{kind}d")
    out = names.fresh("out") if kind == "vectorize" else None
    sizes = [names.fresh(f"n{d}") for d in range(rank)]
    i = names.fresh("i")
    index = ", ".join(_index(i, sizes))
    args = []
    for p, (how, cast) in zip(params, operands):
        value = f"{p}[{index}]" if how == "element" else p
        args.append(f"{module}.{cast}({value})" if cast else value)
    call = f"{callee}({', '.join(args)})"
    statement = f"{out}[{index}] = {call}" if out else call
    signature = ", ".join([*params, *([out] if out else []), *sizes])
    source = (f"def {kernel}({signature}):\n"
              f"    {module}.label({LABEL!r})\n"
              f"    for {i} in range({' * '.join(sizes)}):\n"
              f"        {statement}\n")
    return kernel, source, module, callee


def make_kernel(kind, fn, callee, params, operands, rank, description):
    """A JitFunction for kernel_source's kernel, calling `callee` (the user's function) under
    the name of `fn`. `description` names the
    generated file (as tracebacks and #line directives show it)."""
    name, source, module, callee_name = kernel_source(kind, fn.__name__, params, operands, rank)
    filename = f"<parir.{kind} {description} #{next(_counter)}>"
    # As dataclasses and attrs do: a file only linecache holds, for inspect to read.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # The kernel's module is the user's: seq=True rewrites only functions outside parir_torch.
    namespace = {"__name__": fn.__module__, module: sys.modules[__package__],
                 callee_name: callee}
    exec(compile(source, filename, "exec"), namespace)
    kernel = namespace[name]
    # Read while linecache surely holds the source: seq=True's rewrite of the kernel, which
    # would otherwise read it at the first plain run (and run the kernel unrewritten if a
    # linecache.clearcache() had dropped it by then). parir's capture reads it here too.
    plain_python_rewrite.program(kernel)
    return JitFunction(kernel)
