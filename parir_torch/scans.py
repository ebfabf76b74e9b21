"""parir.cumsum, cumprod, cummin and cummax: inclusive scans of a slice expression along one of
its dimensions, with torch's semantics (torch.cumsum and friends compute them here).

These are the plain-Python (seq=True) meaning of the builtins; a compiled function rejects them
with an error that names the call (csrc/frontend/python_ast.cpp)."""

import torch as _torch

from .errors import ParirTypeError as _ParirTypeError


def axis_argument(name, axis, dim, default=None):
    """The dimension a reduction or scan of a slice works along: axis= (NumPy's and Parir's
    name) or dim= (torch's), not both; `default` when neither is given."""
    if dim is None:
        return default if axis is None else axis
    if axis is not None:
        raise _ParirTypeError(f"parir.{name} takes axis= or dim= (the same dimension), not both")
    return dim


def _dim(e, axis, name):
    if not isinstance(e, _torch.Tensor) or e.dim() == 0:
        raise _ParirTypeError(f"parir.{name} scans a slice expression, as in "
                              f"parir.{name}(x[i, :]); got {type(e).__name__}"
                              + (" of no dimensions" if isinstance(e, _torch.Tensor) else ""))
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise _ParirTypeError(f"parir.{name} takes axis= as an integer, got {axis!r}")
    if not -e.dim() <= axis < e.dim():
        raise _ParirTypeError(f"parir.{name}: axis={axis} is out of range for a slice of "
                              f"{e.dim()} dimension(s)")
    return axis


def _exclusive(inclusive, e, dim, identity):
    # The exclusive scan is the inclusive one shifted one place along `dim`, starting from the
    # operation's identity: element k combines elements 0..k-1.
    first = _torch.full_like(inclusive.narrow(dim, 0, 1), identity)
    rest = inclusive.narrow(dim, 0, inclusive.size(dim) - 1)
    return _torch.cat([first, rest], dim=dim)


def cumsum(e, axis=None, exclusive=False, dim=None):
    """parir.cumsum(e[, axis=k][, exclusive=True]): the running sums of slice expression `e`
    along dimension k (by default its last), as torch.cumsum: integers and bools add up in
    int64. exclusive=True leaves out each element's own value (the first is 0)."""
    dim = _dim(e, axis_argument("cumsum", axis, dim, -1), "cumsum")
    out = _torch.cumsum(e, dim=dim)
    return _exclusive(out, e, dim, 0) if exclusive else out


def cumprod(e, axis=None, exclusive=False, dim=None):
    """parir.cumprod(e[, axis=k][, exclusive=True]): the running products of `e` along
    dimension k, as torch.cumprod: integers and bools multiply in int64. exclusive=True leaves
    out each element's own value (the first is 1)."""
    dim = _dim(e, axis_argument("cumprod", axis, dim, -1), "cumprod")
    out = _torch.cumprod(e, dim=dim)
    return _exclusive(out, e, dim, 1) if exclusive else out


def cummin(e, axis=None, dim=None):
    """parir.cummin(e[, axis=k]): the running minimum of `e` along dimension k, as the values
    of torch.cummin (a NaN stays from where it first appears)."""
    return _torch.cummin(e, dim=_dim(e, axis_argument("cummin", axis, dim, -1), "cummin")).values


def cummax(e, axis=None, dim=None):
    """parir.cummax(e[, axis=k]): the running maximum of `e` along dimension k, as the values
    of torch.cummax (a NaN stays from where it first appears)."""
    return _torch.cummax(e, dim=_dim(e, axis_argument("cummax", axis, dim, -1), "cummax")).values
