"""Reading a Python function: its source parsed into the compiler's IR, and the names its code
sees (its closure and globals)."""

import ast
import inspect
import sys
import textwrap

from . import _C
from ._C import ParirError
from .builtins import COMPILER_NAMES


def closure_scope(fn):
    """{name: value} of the variables `fn` closes over, leaving out those not assigned yet."""
    scope = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell: the enclosing function assigns it later
                pass
    return scope


def compiler_aliases(fn):
    """The names under which `fn` reaches parir: {'parir': 'module', 'label': 'label', ...}."""
    package = sys.modules[__package__]
    by_id = {id(v): k for k, v in COMPILER_NAMES.items()}
    out = {}
    for scope in (fn.__globals__, closure_scope(fn)):
        for name, value in scope.items():
            if value is package:
                out[name] = "module"
            elif id(value) in by_id and by_id[id(value)] != "inf":
                out[name] = by_id[id(value)]
    return out


def function_ir(fn, rewrite=None):
    """Parses `fn`'s source and converts it to the compiler's IR. `rewrite(node, filename,
    first_line)`, if given, may change the parsed `def` first (its line numbers count from
    `first_line` of the file, where the source read begins)."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise ParirError(f"cannot read the source of {getattr(fn, '__name__', fn)!r} ({e}); "
                         f"parir compiles functions defined in source files") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(defs) != 1 or not isinstance(defs[0], ast.FunctionDef):
        raise ParirError(f"{filename}:{first_line}: parir.jit expects a plain function "
                         f"definition")
    node = defs[0]
    if rewrite is not None:
        node = rewrite(node, filename, first_line)
    # Line numbers in the IR are the file's: start where the `def` itself is, after decorators.
    return _C.convert_function(node, filename, first_line,
                               [line.rstrip("\n") for line in lines], compiler_aliases(fn))
