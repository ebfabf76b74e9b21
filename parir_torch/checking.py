"""parir.check and CompileOptions.check: the compiled kernels against the plain Python function.

A checked call runs a jit function twice on the same inputs:

  1. Before anything runs, every tensor argument (dict entries too, read or written) is copied
     to the CPU. Tensors that share memory get views of one copy, so that a write through one is
     read through the other in the Python run as it is on the GPU.
  2. The kernels run on the caller's arguments, as a normal call does: the caller's tensors end
     with the GPU's results, whether the check passes or not.
  3. The original Python function (what seq=True runs) runs on the CPU copies, element by
     element. On the CPU each element access costs no GPU synchronization, but it is still
     Python: a check is for small sizes (thousands to a few hundred thousand iterations).
  4. Every tensor argument is compared, in parameter order (the Python run may write any of
     them): integers and bools exactly, floats within a tolerance (TOLERANCES). The first
     tensor with a difference raises a ParirError naming it (`y`, `d['k']`), the first element
     that differs (its index), and both values; a NaN or an infinity that only the GPU produced
     is reported as such.

The tolerance for floats, per element: |gpu - python| <= rtol * |python| + atol * m, where m is
the largest finite |value| of the Python run's tensor. atol is scaled by m because the GPU
reorders sums (parallel reductions, float16 and bfloat16 reductions accumulated in float32)
while the Python run adds in sequence, rounding to the tensor's dtype at each step: the
rounding errors grow with the size of the partial sums, not with the element's own value.
"""

import copy
import math
from typing import NamedTuple

import torch

from . import arguments, plain_python
from ._C import ParirError
from .build import with_defaults
from .errors import ParirTypeError, ParirValueError, options_type_error
from .options import CompileOptions

# (rtol, atol) for each floating-point dtype; atol is relative to the tensor's largest value.
TOLERANCES = {
    torch.float64: (1e-9, 1e-9),
    torch.float32: (1e-4, 1e-3),
    torch.float16: (1e-2, 2e-2),
    torch.bfloat16: (5e-2, 1e-1),
}

_HINT = ("A parallel specification whose loops' iterations are not independent gives results "
         "like these: a reduction without .reduce(), iterations that write one element or read "
         "what another writes, a label on the wrong loop.")


def check(fn, *args, opts=None, rtol=None, atol=None):
    """Runs jit function `fn` on `args` as `fn(*args, opts=opts)` does, then the original Python
    function on CPU copies of the same inputs, and raises a ParirError naming the first tensor
    element where the two differ: the tensor (by parameter name; `d['k']` for a dict entry), the
    element's index and both values. Returns None when they agree. The caller's tensors hold
    the GPU's results afterwards, as after a normal call.

    Integer and bool tensors must agree exactly; floats within TOLERANCES of their dtype,
    unless `rtol` and `atol` (for every float tensor; atol relative to the tensor's largest
    value) are given. The Python run is slow: use small sizes. Needs a GPU."""
    if getattr(fn, "__parir_ufunc__", False):
        raise ParirTypeError(f"parir.check takes a @parir.jit function; to check a vectorized "
                             f"function's kernel, call it with "
                             f"opts=parir.CompileOptions(check=True)")
    if not getattr(fn, "__parir_jit__", False):
        raise ParirTypeError(f"parir.check takes a @parir.jit function, got {type(fn).__name__}")
    if opts is None:
        opts = CompileOptions()
    elif not isinstance(opts, CompileOptions):
        raise options_type_error(opts)
    if opts.seq:
        raise ParirValueError("parir.check compares the kernels with the Python function; with "
                              "opts.seq=True there are no kernels to compare")
    for what, value in (("rtol", rtol), ("atol", atol)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParirTypeError(f"parir.check: {what} must be a number, got {value!r}")
        if not value >= 0:
            raise ParirValueError(f"parir.check: {what} must be >= 0, got {value!r}")
    check_call(fn, args, opts, False, rtol, atol)


def check_call(fn, args, opts, debug=False, rtol=None, atol=None):
    """A call of jit function `fn` with opts.check: see check()."""
    name, names = fn.ir.name, fn.ir.params
    args = tuple(with_defaults(fn.fn, names, args))  # parameters left out take their defaults
    if torch.compiler.is_compiling():
        raise ParirError(f"{name}(): opts.check runs the kernels and the Python function "
                         f"eagerly and compares them; it cannot run inside torch.compile or "
                         f"torch.export. Check the function with an eager call")
    if len(args) != len(names):
        raise ParirTypeError(f"{name}() takes {len(names)} argument"
                             f"{'' if len(names) == 1 else 's'} ({', '.join(names)}) but "
                             f"{len(args)} were given")
    converted = [arguments.convert(n, a) for n, a in zip(names, args)]
    tensors = tensor_arguments(names, converted)
    for what, t in tensors:
        if t.device.type not in ("cuda", "cpu"):
            what = what if "[" in what else f"'{what}'"
            raise ParirError(f"{name}(): argument {what} is a tensor on the {t.device.type} "
                             f"device; parir runs on CUDA tensors and copies CPU tensors")
    if not torch.cuda.is_available():
        raise ParirError(f"{name}(): a checked call (opts.check, parir.check) runs the kernels "
                         f"on a GPU and compares them with the Python function, but PyTorch "
                         f"finds no CUDA GPU here; seq=True runs the Python function alone")
    before = cpu_copies([t for _, t in tensors])
    python_args = _python_arguments(args, converted, iter(before))
    gpu_opts = copy.copy(opts)
    gpu_opts.check = False
    fn(*args, opts=gpu_opts, debug=debug)
    try:
        plain_python.run(fn.fn, python_args)
    except Exception as e:
        raise ParirError(f"{name}(): the kernels ran, but the plain Python run of the check "
                         f"raised {type(e).__name__}: {e}") from e
    compare(name, [(what, t, b) for (what, t), b in zip(tensors, before)], rtol, atol)


def tensor_arguments(names, converted):
    """[(what, tensor)] for every tensor among converted arguments, dict entries in their
    order; `what` names it as the function's code does (`y`, `d['k']`)."""
    out = []
    for name, a in zip(names, converted):
        if isinstance(a, dict):
            out += [(f"{name}['{k}']", v) for k, v in a.items() if isinstance(v, torch.Tensor)]
        elif isinstance(a, torch.Tensor):
            out.append((name, a))
    return out


def _python_arguments(args, converted, copies):
    """The arguments of the Python run: each tensor's CPU copy (taken in the order of
    tensor_arguments), everything else as the caller passed it."""
    out = []
    for a, c in zip(args, converted):
        if isinstance(c, dict):
            out.append({k: next(copies) if isinstance(v, torch.Tensor) else a[k]
                        for k, v in c.items()})
        elif isinstance(c, torch.Tensor):
            out.append(next(copies))
        else:
            out.append(a)
    return out


def cpu_copies(tensors):
    """CPU copies of `tensors` with their shapes and strides. Tensors over one storage become
    views of one copy of the bytes they span, so that aliasing is preserved."""
    spans = {}  # (device, storage address) -> [storage, first byte, end byte]
    for t in tensors:
        if t.numel() == 0:
            continue
        storage = t.untyped_storage()
        size = t.element_size()
        lo = t.storage_offset() * size
        hi = lo + (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * size
        span = spans.setdefault((t.device, storage.data_ptr()), [storage, lo, hi])
        span[1], span[2] = min(span[1], lo), max(span[2], hi)
    copies = {}
    for k, (storage, lo, hi) in spans.items():
        lo -= lo % 16  # a multiple of every element size: views of any dtype start on elements
        raw = torch.empty(0, dtype=torch.uint8, device=k[0]).set_(storage, lo, (hi - lo,), (1,))
        copies[k] = (lo, raw.to("cpu", copy=True).untyped_storage())
    out = []
    for t in tensors:
        if t.numel() == 0:
            out.append(torch.empty(t.shape, dtype=t.dtype))
            continue
        lo, storage = copies[(t.device, t.untyped_storage().data_ptr())]
        offset = (t.storage_offset() * t.element_size() - lo) // t.element_size()
        out.append(torch.empty(0, dtype=t.dtype).set_(storage, offset, t.shape, t.stride()))
    return out


def compare(name, results, rtol=None, atol=None):
    """Compares [(what, GPU result, Python result)] (tensors of one shape and dtype, on any
    device) and raises the ParirError of a failed check for the first pair that differs.
    `rtol` and `atol`, when given, replace TOLERANCES for every float tensor."""
    failures = []
    for what, gpu, python in results:
        found = _first_difference(gpu.detach().cpu(), python.detach().cpu(), rtol, atol)
        if found is not None:
            failures.append((what, gpu.dtype, found))
    if not failures:
        return
    what, dtype, d = failures[0]
    place = f"{what}[{', '.join(map(str, d.index))}]" if d.index else f"{what} (0-d)"
    g, p = _show(d.gpu, dtype), _show(d.python, dtype)
    if _finite(d.python) and not _finite(d.gpu):
        values = f"the GPU gives {g} where the plain Python run gives the finite value {p}"
    elif d.allowed is None:
        values = (f"the GPU gives {g}, the plain Python run gives {p} ({_dtype_name(dtype)}, "
                  f"compared exactly)")
    else:
        values = (f"the GPU gives {g}, the plain Python run gives {p} ({_dtype_name(dtype)}; "
                  f"allowed difference {d.allowed:.3g})")
    summary = (f"{d.count} of {d.numel} element{'' if d.numel == 1 else 's'} of {what} "
               f"differ{'s' if d.count == 1 else ''}")
    if d.nonfinite:
        summary += f", {d.nonfinite} of them NaN or infinite on the GPU only"
    if len(failures) > 1:
        summary += "; other tensors that differ: " + ", ".join(
            f"{w} ({f.count} element{'' if f.count == 1 else 's'})" for w, _, f in failures[1:])
    err = ParirError(f"parir.check: {name}() on the GPU and as plain Python differ at "
                     f"{place}: {values}. {summary}.\n{_HINT}")
    err.argument, err.index, err.gpu_value, err.python_value = what, d.index, d.gpu, d.python
    err.python_results = {w: py.detach().cpu() for w, _, py in results}
    raise err


class _Difference(NamedTuple):
    index: tuple  # of the first element that differs
    gpu: object  # its values, as Python numbers
    python: object
    allowed: object  # the largest difference allowed there; None when compared exactly
    count: int  # elements that differ
    nonfinite: int  # of those, NaN or infinite on the GPU where the Python run is finite
    numel: int


def _first_difference(g, p, rtol, atol):
    """None when CPU tensors g (GPU) and p (Python) agree; else a _Difference."""
    if g.shape != p.shape or g.dtype != p.dtype:
        raise ParirError(f"parir.check: internal error: comparing {g.dtype}{list(g.shape)} "
                         f"with {p.dtype}{list(p.shape)}")
    tolerance = nonfinite = None
    if g.dtype.is_floating_point:
        default_rtol, default_atol = TOLERANCES[g.dtype]
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
        gd, pd = g.double(), p.double()
        g_finite, p_finite = torch.isfinite(gd), torch.isfinite(pd)
        magnitude = pd.abs().masked_fill(~p_finite, 0)
        largest = magnitude.max().item() if pd.numel() else 0.0
        tolerance = rtol * magnitude + atol * largest
        ok = ((gd == pd) | (torch.isnan(gd) & torch.isnan(pd))
              | (g_finite & p_finite & ((gd - pd).abs() <= tolerance)))
        bad = ~ok
        nonfinite = int((bad & ~g_finite & p_finite).sum())
    else:
        bad = g != p
    if not bad.any():
        return None
    index = tuple(bad.nonzero()[0].tolist())
    return _Difference(index, g[index].item(), p[index].item(),
                       None if tolerance is None else tolerance[index].item(),
                       int(bad.sum()), nonfinite or 0, g.numel())


def _finite(v):
    return not isinstance(v, float) or math.isfinite(v)


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _show(v, dtype):
    """A value as short as it can be while still naming the same `dtype` value."""
    if not isinstance(v, float) or not math.isfinite(v) or dtype == torch.float64:
        return repr(v)
    for digits in range(1, 10):
        s = f"{v:.{digits}g}"
        if torch.tensor(float(s), dtype=dtype).item() == v:
            return s
    return repr(v)
