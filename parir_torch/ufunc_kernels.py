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
`m, n = A.shape` and `len(A)` of a parameter. parir's language has no `.shape`; such a function
is compiled with those expressions replaced by the sizes of the call (core_size_ir), and its
kernels are specialized on them.
"""

import ast
import inspect
import itertools
import linecache
import sys
import textwrap

from . import capture, plain_python_rewrite
from ._C import ParirError
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
    """A JitFunction for kernel_source's kernel, calling `callee` (the user's function, or what
    stands for it: see SizedFunction) under the name of `fn`. `description` names the
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


# ----- sizes of a generalized function's arrays ---------------------------------------------

def _shape_target(node, params):
    """The parameter whose `.shape` `node` is, or None."""
    if (isinstance(node, ast.Attribute) and node.attr == "shape"
            and isinstance(node.value, ast.Name) and node.value.id in params):
        return node.value.id
    return None


def _len_target(node, params):
    """The parameter `node` takes the len() of, or None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Name) and node.args[0].id in params):
        return node.args[0].id
    return None


class _Sizes(ast.NodeTransformer):
    """Replaces `P.shape[k]`, `len(P)` and `a, b = P.shape` with the sizes of parameter P."""

    def __init__(self, shapes, filename, first_line):
        self.shapes, self.filename, self.first_line = shapes, filename, first_line

    def _error(self, node, message):
        return ParirError(f"{self.filename}:{self.first_line + node.lineno - 1}: {message}")

    def _size(self, param, k, node):
        shape = self.shapes[param]
        if not -len(shape) <= k < len(shape):
            raise self._error(node, f"{param}.shape[{k}]: {param} has {len(shape)} "
                                    f"dimension{'' if len(shape) == 1 else 's'} here")
        return ast.copy_location(ast.Constant(shape[k]), node)

    def visit_Assign(self, node):
        param = _shape_target(node.value, self.shapes)
        target = node.targets[0]
        if param is None or len(node.targets) != 1 or not isinstance(target, (ast.Tuple,
                                                                               ast.List)):
            return self.generic_visit(node)
        shape = self.shapes[param]
        if len(target.elts) != len(shape):
            raise self._error(node, f"{param}.shape has {len(shape)} size"
                                    f"{'' if len(shape) == 1 else 's'} here, unpacked into "
                                    f"{len(target.elts)} names")
        return [ast.copy_location(ast.Assign([t], ast.Constant(s)), node)
                for t, s in zip(target.elts, shape)]

    def visit_Subscript(self, node):
        param = _shape_target(node.value, self.shapes)
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = index.operand
            sign = -1
        else:
            sign = 1
        if (param is not None and isinstance(index, ast.Constant)
                and type(index.value) is int):
            return self._size(param, sign * index.value, node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        param = _len_target(node, self.shapes)
        if param is not None:
            return self._size(param, 0, node)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        param = _shape_target(node, self.shapes)
        if param is not None:
            raise self._error(node, f"{param}.shape is read here in a way parir cannot "
                                    f"compile; use {param}.shape[k], `m, n = {param}.shape` "
                                    f"or len({param})")
        return self.generic_visit(node)


def core_size_ir(fn, shapes):
    """The IR of `fn` with the sizes of its array parameters, {param: shape}, in place of the
    expressions that read them."""
    def rewrite(node, filename, first_line):
        node = _Sizes(shapes, filename, first_line).visit(node)
        return ast.fix_missing_locations(node)

    return capture.function_ir(fn, rewrite)


class SizedFunction:
    """What a kernel calls in place of a generalized function that reads its arrays' sizes:
    the function compiled for given sizes. It presents itself as jit functions do (callees.py
    takes its `.ir`; seq=True runs `.fn`, where `.shape` is the tensors' own)."""

    __parir_jit__ = True

    def __init__(self, fn, shapes):
        self.fn = fn
        self.ir = core_size_ir(fn, shapes)


def reads_sizes(fn, params):
    """Whether `fn`'s source reads `.shape` or `len()` of one of `params` (False when the source
    cannot be read: capturing it reports that)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    params = set(params)
    return any(_shape_target(n, params) or _len_target(n, params) for n in ast.walk(tree))
