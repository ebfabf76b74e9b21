"""Reading a Python function: its source parsed into the compiler's IR, and the names its code
sees (its closure and globals)."""

import ast
import inspect
import math
import sys
import textwrap
import types

from . import _C
from ._C import ParirError
from .builtins import COMPILER_NAMES, MATH_CONSTANTS, MATH_FUNCTIONS


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
    """The names under which `fn` reaches parir: {'parir': 'module', 'label': 'label', ...};
    Python's math module is 'math', and its functions are 'math.exp' and so on."""
    package = sys.modules[__package__]
    by_id = {id(v): k for k, v in COMPILER_NAMES.items()}
    by_id.update({id(getattr(math, name)): f"math.{name}" for name in MATH_FUNCTIONS})
    # A global bound to parir.pi or math.pi (from math import pi) is that constant.
    by_id.update({id(value): f"math.{name}" for name, value in MATH_CONSTANTS.items()})
    out = {}
    own = set(fn.__code__.co_varnames)  # parameters and locals hide globals of their names
    for scope in (fn.__globals__, closure_scope(fn)):
        for name, value in scope.items():
            if name in own:
                continue
            if value is package:
                out[name] = "module"
            elif value is math:
                out[name] = "math"
            elif isinstance(value, types.ModuleType) and value.__name__ == "numpy":
                out[name] = "numpy"
            elif id(value) in by_id:
                out[name] = by_id[id(value)]
    return out


def compiler_constants(fn):
    """{name: number} of the module-level (or closed-over) numbers `fn` reads (and Nones, which
    it may test with `is None`): Python bools,
    ints and floats, NumPy integer scalars as (value, dtype name), which the compiler types as
    that dtype (`PRIME = np.uint32(0x9E3779B1)` is a uint32, as Numba types it), and NumPy's
    other scalars as their Python values (an np.float64 is a Python float). Its code reads them
    as constants, frozen at the time it is captured, as Numba freezes globals."""
    own = set(fn.__code__.co_varnames)
    used = set(fn.__code__.co_names) | set(fn.__code__.co_freevars)
    out = {}
    for scope in (fn.__globals__, closure_scope(fn)):
        for name in used & scope.keys():
            value = scope[name]
            if name in own:
                continue
            if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
                if value.dtype.kind in "iu":
                    out[name] = (value.item(), str(value.dtype))  # np.int32(3)
                    continue
                value = value.item()  # np.float64(0.5), np.bool_(True)
            if value is None or isinstance(value, (bool, int, float)):
                out[name] = value  # None only for `name is None`
    return out


def function_ir(fn):
    """Parses `fn`'s source and converts it to the compiler's IR."""
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
    # Line numbers in the IR are the file's: start where the `def` itself is, after decorators.
    return _C.convert_function(node, filename, first_line,
                               [line.rstrip("\n") for line in lines], compiler_aliases(fn),
                               compiler_constants(fn))
