"""The functions a jit function calls, found by name where the caller's code sees them.

A call `f(x)` in a jit function names a Python function (decorated with @parir.jit or not) or a
`parir.external`. Names are looked up when compiling, in the caller's closure and globals, so a
helper may be defined after the function that calls it. Each Python function is converted to
the compiler's IR once; the compiler inlines the calls (csrc/passes/inline_functions.cpp) and
reports the names it cannot call at the line that calls them.
"""

import builtins
import inspect
import weakref

from .capture import closure_scope, function_ir

_IR = weakref.WeakKeyDictionary()  # undecorated Python function -> its IR


def _lookup(fn, dotted):
    """The object `dotted` ("f" or "module.f") names inside `fn`, or None."""
    first, *rest = dotted.split(".")
    scope = closure_scope(fn)
    if first in scope:
        obj = scope[first]
    elif first in fn.__globals__:
        obj = fn.__globals__[first]
    else:
        return None
    for attr in rest:
        obj = getattr(obj, attr, None)
    return obj


def resolve(fn, fn_ir):
    """[(function IR, {name: IR or ExternFunction})] for `fn` and every function it calls,
    directly or not."""
    table, seen, work = [], set(), [(fn, fn_ir)]
    while work:
        f, ir = work.pop()
        if id(ir) in seen:
            continue
        seen.add(id(ir))
        entries = {}
        for name in ir.called_names:
            obj = _lookup(f, name)
            if obj is None or obj is getattr(builtins, name, None):
                continue
            external = getattr(obj, "__parir_external__", None)
            if external is not None:
                entries[name] = external
            elif getattr(obj, "__parir_jit__", False) is True:  # a JitFunction: .fn and .ir
                entries[name] = obj.ir
                work.append((obj.fn, obj.ir))
            elif inspect.isfunction(obj):
                if obj not in _IR:
                    _IR[obj] = function_ir(obj)
                entries[name] = _IR[obj]
                work.append((obj, _IR[obj]))
        table.append((ir, entries))
    return table
