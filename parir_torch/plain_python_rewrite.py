"""The program that seq=True runs: a parir function's source, rewritten so that it runs as the
compiled code does (plain_python_ops.py says how the semantics differ, and why).

The function's source is parsed again and rewritten:

    a = x[i, j]             ->  a = read(x, (i, j))      a copy of an element: a value that is
                                                         kept (assigned, returned, passed to a
                                                         function); where an operation uses it
                                                         at once (x[i] * 2, y[i] = x[i]), the
                                                         indexing stays torch's
    x[::-1]        (read)   ->  read_stepped(x, (slice(None, None, -1),))
    x[a:b:s] = v            ->  write_stepped(x, (slice(a, b, s),), v)
    x[i] = v                ->  x[i] = stored(v)         a NumPy scalar as the compiler reads it
    x[i] += v               ->  update(x, i, add, v)     x[i] = x[i] + v, converted when stored
    s += v                  ->  s = add(s, v)            a new value: torch's in-place operators
                                                         refuse s += 0.5 on an integer
    a + b, a / b, ...       ->  add(a, b), truediv(a, b), ...
    int(e), float(e), ...   ->  parir.int64(e), parir.float64(e), ...   as the compiler reads
                                                                        them
    f(args)                 ->  callee(f)(args)          a Python or jit function called runs
                                                         rewritten too
    f(x[i], args)           ->  call_on_element(callee(f), x[i], args)   x[i] a view, which
                                                         parir.atomic_add and the other atomic
                                                         updates write through; read() for
                                                         other functions

The rewritten function keeps the original's globals and closure cells (so it sees helpers and
constants as they are when it runs), its defaults, and its file and line numbers: errors and
tracebacks point at the user's lines. It is built once per code object, and bound once per
function. A function whose source cannot be read runs as it is.
"""

import ast
import inspect
import operator
import types
import weakref

from . import builtins as parir_builtins
from . import plain_python_ops as ops

# The names the rewritten code calls, each a closure cell of the rewritten function. Their
# prefix keeps them apart from the user's names.
_PREFIX = "__parir_"
_HELPERS = {
    "read": ops.read, "read_stepped": ops.read_stepped, "write_stepped": ops.write_stepped,
    "stored": ops.stored,
    "update": ops.update, "update_stepped": ops.update_stepped, "slice": slice,
    "call_on_element": ops.call_on_element,
    "callee": None,  # set below, once callee() is defined
    "add": ops.add, "sub": ops.sub, "mul": ops.mul, "truediv": ops.truediv,
    "floordiv": ops.floordiv, "mod": ops.mod, "pow": ops.pow,
    "lshift": ops.lshift, "rshift": ops.rshift, "or": ops.or_, "xor": ops.xor, "and": ops.and_,
    "matmul": operator.matmul, "index": ops.index, "neg": ops.neg, "invert": ops.invert,
    # Python's own abs/min/max/int/float/bool/round are parir's in a parir function (frontend).
    "abs": parir_builtins.abs, "min": parir_builtins.min, "max": parir_builtins.max,
    "int": parir_builtins.int64, "float": parir_builtins.float64, "bool": parir_builtins.bool_,
    "round": parir_builtins.python_round,
    "divmod": lambda a, b: (ops.floordiv(a, b), ops.mod(a, b)),  # q, r = divmod(a, b)
    **ops.COMPARISONS,
}

# Operators with the compiled code's typing (plain_python_ops); the others are Python's.
_ARITHMETIC = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
               ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow",
               ast.LShift: "lshift", ast.RShift: "rshift", ast.BitOr: "or",
               ast.BitXor: "xor", ast.BitAnd: "and"}
_UNARY = {ast.USub: "neg", ast.Invert: "invert"}
_OTHER_OPERATORS = {ast.MatMult: "matmul"}
# Comparisons of one operator, computed where torch has no kernel for the operands' type.
_COMPARISONS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
                ast.NotEq: "ne"}
_BUILTIN_CALLS = ("abs", "min", "max", "int", "float", "bool", "round", "divmod")


def _helper(name):
    return ast.Name(_PREFIX + name, ast.Load())


def _located(new, old):
    """`new` with every node of it that has no position given `old`'s."""
    for node in ast.walk(new):
        if "lineno" in node._attributes and not hasattr(node, "lineno"):
            ast.copy_location(node, old)
    return new


def _parts(index):
    return index.elts if isinstance(index, ast.Tuple) else [index]


def _has_step(index):
    return any(isinstance(p, ast.Slice) and p.step is not None for p in _parts(index))


def _element_indices(index):
    """The index of a subscript with each index that is not a constant or a slice passed
    through index(): an element of an integer tensor as an int, which torch would otherwise
    take for a mask (uint8, bool) or a gather."""
    def part(p):
        if isinstance(p, (ast.Slice, ast.Constant)):
            return p
        return _located(ast.Call(_helper("index"), [p], []), p)
    if isinstance(index, ast.Tuple):
        return _located(ast.Tuple([part(p) for p in index.elts], index.ctx), index)
    return part(index)


def _index_value(index):
    """The index of a subscript as an expression: slices become slice(...) calls."""
    def part(p):
        if not isinstance(p, ast.Slice):
            return p
        none = ast.Constant(None)
        return _located(ast.Call(_helper("slice"), [p.lower or none, p.upper or none,
                                                    p.step or none], []), p)
    if isinstance(index, ast.Tuple):
        return _located(ast.Tuple([part(p) for p in index.elts], ast.Load()), index)
    return part(index)


def _used_at_once(*nodes):
    """Marks the reads among `nodes` whose value an operation uses at once to make a new value
    (an operand of arithmetic or of a comparison, a condition, an index, a value stored into a
    tensor): nothing can see them change later, so they need not be copied."""
    for node in nodes:
        if isinstance(node, ast.Subscript):
            node.parir_used_at_once = True


class _Rewriter(ast.NodeTransformer):
    def visit_arguments(self, node):
        return node  # annotations and defaults: the original function's are kept

    def visit_Subscript(self, node):
        parts = _parts(node.slice)
        _used_at_once(node.value, *parts)  # d['k'][i] indexes d['k'] at once
        for part in parts:
            if isinstance(part, ast.Slice):
                _used_at_once(part.lower, part.upper, part.step)
        node = self.generic_visit(node)
        node.slice = _element_indices(node.slice)
        if not isinstance(node.ctx, ast.Load):
            return node
        if _has_step(node.slice):
            fn = "read_stepped"
        elif getattr(node, "parir_used_at_once", False):
            return node  # torch's indexing as it is: the view is used and dropped at once
        else:
            fn = "read"
        return _located(ast.Call(_helper(fn), [node.value, _index_value(node.slice)], []), node)

    def visit_Compare(self, node):
        _used_at_once(node.left, *node.comparators)
        node = self.generic_visit(node)
        name = _COMPARISONS.get(type(node.ops[0])) if len(node.ops) == 1 else None
        if name is None:
            return node
        return _located(ast.Call(_helper(name), [node.left, node.comparators[0]], []), node)

    def visit_UnaryOp(self, node):
        if not isinstance(node.op, ast.UAdd):  # +t is t itself
            _used_at_once(node.operand)
        node = self.generic_visit(node)
        name = _UNARY.get(type(node.op))
        if name is None:
            return node
        return _located(ast.Call(_helper(name), [node.operand], []), node)

    def _test(self, node):
        _used_at_once(node.test)
        return self.generic_visit(node)

    visit_If = visit_While = visit_IfExp = visit_Assert = _test

    def visit_BinOp(self, node):
        _used_at_once(node.left, node.right)
        node = self.generic_visit(node)
        name = _ARITHMETIC.get(type(node.op))
        if name is None:
            return node
        return _located(ast.Call(_helper(name), [node.left, node.right], []), node)

    def visit_Call(self, node):
        first = node.args[0] if node.args else None
        on_element = (isinstance(first, ast.Subscript) and not _has_step(first.slice)
                      and not any(isinstance(p, ast.Slice) for p in _parts(first.slice)))
        if on_element:
            _used_at_once(first)  # passed as the view, which call_on_element copies or not
        node = self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in _BUILTIN_CALLS:
            node.func = _located(_helper(node.func.id), node.func)
        else:
            node.func = _located(ast.Call(_helper("callee"), [node.func], []), node.func)
        if on_element:
            node.args = [node.func] + node.args
            node.func = _located(_helper("call_on_element"), node.func)
        return node

    def visit_Assign(self, node):
        if all(isinstance(t, ast.Subscript) for t in node.targets):
            _used_at_once(node.value)  # stored, a copy
        node = self.generic_visit(node)
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, ast.Subscript) and _has_step(
                target.slice):
            call = ast.Call(_helper("write_stepped"),
                            [target.value, _index_value(target.slice), node.value], [])
            return _located(ast.Expr(call), node)
        if len(node.targets) == 1 and isinstance(target, ast.Subscript):
            node.value = _located(ast.Call(_helper("stored"), [node.value], []), node.value)
        return node

    def visit_AugAssign(self, node):
        _used_at_once(node.value)
        node = self.generic_visit(node)
        name = _ARITHMETIC.get(type(node.op)) or _OTHER_OPERATORS[type(node.op)]
        target = node.target
        if isinstance(target, ast.Name):
            value = ast.Call(_helper(name), [ast.Name(target.id, ast.Load()), node.value], [])
            return _located(ast.Assign([target], value), node)
        if isinstance(target, ast.Subscript):
            fn = "update_stepped" if _has_step(target.slice) else "update"
            call = ast.Call(_helper(fn), [target.value, _index_value(target.slice),
                                          _helper(name), node.value], [])
            return _located(ast.Expr(call), node)
        return node


# ----- building the rewritten function -------------------------------------------------------

def _function_def(fn):
    """(FunctionDef node with the file's line numbers, file name), or None."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        return None
    source = "".join(lines)
    indented = source[:1].isspace()
    try:
        # An indented definition (a method, a function in a function) parses inside an `if`,
        # which keeps its columns as they are in the file.
        tree = ast.parse("if True:\n" + source if indented else source)
    except SyntaxError:
        return None
    body = tree.body[0].body if indented else tree.body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef):
        return None
    node = body[0]
    if node.name != fn.__name__:
        return None
    ast.increment_lineno(node, first_line - (2 if indented else 1))
    return node, filename


def _rewrite_code(fn):
    """The code object of fn rewritten, or None where fn's source cannot be read."""
    found = _function_def(fn)
    if found is None:
        return None
    node, filename = found
    node.decorator_list = []
    node = _Rewriter().visit(node)
    # Inside a factory whose parameters are the original's free variables and the helpers, so
    # that the compiler makes them all closure cells: the function is then built with the
    # original's cells, not copies of their values.
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id.startswith(_PREFIX)}
    params = list(fn.__code__.co_freevars) + sorted(used)
    module = ast.parse(f"def {_PREFIX}factory({', '.join(params)}):\n"
                       f"    return {node.name}\n")
    factory = module.body[0]
    factory.body.insert(0, node)
    ast.fix_missing_locations(module)
    try:
        code = compile(module, filename, "exec", dont_inherit=True)
    except SyntaxError:
        return None
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    # The source on disk must still be the function's: same parameters, same free variables.
    original = fn.__code__
    n_params = original.co_argcount + original.co_kwonlyargcount
    if (inner.co_varnames[:n_params] != original.co_varnames[:n_params]
            or inner.co_argcount != original.co_argcount
            or not set(inner.co_freevars) - used <= set(original.co_freevars)):
        return None
    if hasattr(original, "co_qualname"):
        inner = inner.replace(co_qualname=original.co_qualname)
    return inner


_CODE = weakref.WeakKeyDictionary()      # code object -> its rewritten code, or None
_PROGRAMS = weakref.WeakKeyDictionary()  # function -> its rewritten function, or None
_HELPER_CELLS = {}                       # helper name -> its cell, shared by all functions


def _rewrite(fn):
    if fn.__module__ is not None and fn.__module__.split(".")[0] == __package__:
        return None  # parir's own functions (parir.exp, ...) run as they are
    if getattr(fn, "__parir_external__", None) is not None or getattr(
            fn, "__parir_plain__", False):
        return None  # an external's Python stands for a CUDA function; already rewritten
    code = fn.__code__
    if code not in _CODE:
        _CODE[code] = _rewrite_code(fn)
    new = _CODE[code]
    if new is None:
        return None
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else _HELPER_CELLS[n] for n in new.co_freevars)
    out = types.FunctionType(new, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__qualname__ = fn.__qualname__
    out.__parir_plain__ = True
    return out


def program(fn):
    """The function seq=True runs for Python function `fn`: fn rewritten, or fn itself where
    its source cannot be read."""
    try:
        out = _PROGRAMS[fn]
    except KeyError:
        out = _PROGRAMS[fn] = _rewrite(fn)
    return fn if out is None else out


def callee(f):
    """What a call of `f` runs inside a rewritten function: a Python function or a jit
    function rewritten as well; Python's math functions as parir's (builtins.py says why);
    anything else (builtins, parir's functions) as it is."""
    if type(f) is types.FunctionType:
        return program(f)
    if getattr(f, "__parir_jit__", False) is True:
        return program(f.fn)
    as_parir = parir_builtins.plain_math(f)
    return f if as_parir is None else as_parir


_HELPERS["callee"] = callee
_HELPER_CELLS.update({_PREFIX + k: types.CellType(v) for k, v in _HELPERS.items()})
