"""parir.external: device functions from outside parir (CUDA intrinsics, user headers).

    @parir.external("__fdividef", parir.CompileBackend.Cuda, parir.Target.Device)
    def fast_divide(a: parir.float32, b: parir.float32) -> parir.float32:
        return a / b          # what seq=True runs

    @parir.external("smoothstep", parir.CompileBackend.Cuda, parir.Target.Device,
                    header="smooth.cuh")   # with opts.includes = ["/path/to/headers"]
    def smoothstep(x: float) -> float: ...

    @parir.external("row_sums", parir.CompileBackend.Cuda, parir.Target.Device,
                    header="rows.cuh", parallelize=parir.threads(256))
    def row_sums(x: torch.Tensor, y: torch.Tensor, n: int) -> None: ...

The decorated function stays a Python function (its body is what `seq=True` runs); a jit
function that calls it calls `ext_name` in the generated CUDA. Parameter and return types come
from the annotations: a parir.ElemSize, a torch dtype, parir.float32 and friends, or Python's
int, float and bool (int64, float64, bool); arguments convert to the parameter types. A
parameter annotated torch.Tensor takes a tensor argument of the jit function as a pointer to
its first element (`T*`, for the tensor's element type T). With `parallelize=`, the
`parallelize.nthreads` threads of one block call it together, each with the same arguments (a
cooperative function, which may synchronize the block); `seq=True` calls the Python function
once.
"""

import enum
import inspect

import torch

from ._C import ExternFunction, ParirError
from .options import CompileBackend, LoopPar
from .types import elem_size


class Target(enum.Enum):
    """Where an external function runs: on the host (CPU) or the device (GPU)."""

    Host = "host"
    Device = "device"


def external(ext_name, backend, target, header=None, parallelize=None):
    """Declares the decorated Python function as the external function `ext_name` of `backend`
    running on `target`. `header` names the header (found through CompileOptions.includes) that
    defines it; intrinsics need none. The function must be a `__device__` function."""
    if not isinstance(ext_name, str) or not ext_name.replace("_", "a").replace("::", "").isalnum():
        raise ParirError(f"parir.external: the external name must be a C++ function name, got "
                         f"{ext_name!r}")
    if backend not in (CompileBackend.Cuda, CompileBackend.Auto):
        raise ParirError(f"parir.external: backend {backend!r} is not available; parir-torch "
                         f"generates CUDA (CompileBackend.Cuda)")
    if target is Target.Host:
        raise ParirError(
            f"parir.external('{ext_name}'): Target.Host is not supported by the CUDA backend: "
            f"all data is allocated on the GPU, so a host function would need implicit copies "
            f"between the CPU and the GPU, which may be costly. Declare a __device__ function "
            f"with Target.Device")
    if target is not Target.Device:
        raise ParirError(f"parir.external: target must be parir.Target.Device, got {target!r}")
    if header is not None and not isinstance(header, str):
        raise ParirError(f"parir.external: header must be a file name, got {header!r}")
    threads = tpb = 0
    if parallelize is not None:
        if not isinstance(parallelize, LoopPar) or parallelize.nthreads is None:
            raise ParirError(f"parir.external('{ext_name}'): parallelize= takes the threads that "
                             f"call it together, as in parallelize=parir.threads(256); got "
                             f"{parallelize!r}")
        if parallelize.is_reduction or parallelize.is_scan:
            raise ParirError(f"parir.external('{ext_name}'): parallelize={parallelize!r}: the "
                             f"threads of a cooperative external call it together; they do not "
                             f"reduce or scan")
        threads, tpb = parallelize.nthreads, parallelize._tpb
        if threads < 32 or threads > parallelize.threads_per_block or threads % 32:
            raise ParirError(f"parir.external('{ext_name}'): parallelize={parallelize!r}: the "
                             f"threads that call a cooperative external are all those of one "
                             f"block, a multiple of 32 from 32 to "
                             f"{parallelize.threads_per_block}")

    def declare(fn):
        where = f"parir.external('{ext_name}') on {fn.__qualname__}"
        try:
            sig = inspect.signature(fn, eval_str=True)
        except (NameError, TypeError, ValueError) as e:
            raise ParirError(f"{where}: cannot read its annotations ({e})") from None
        params, pointers = [], []
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise ParirError(f"{where}: parameter '{p.name}' must be positional")
            if p.annotation is p.empty:
                raise ParirError(f"{where}: parameter '{p.name}' needs a type annotation, as in "
                                 f"{p.name}: parir.float32")
            pointers.append(p.annotation is torch.Tensor)
            params.append("" if pointers[-1] else
                          elem_size(p.annotation, f"{where}, parameter '{p.name}'").value)
        if sig.return_annotation is sig.empty:
            raise ParirError(f"{where}: the return type needs an annotation, as in "
                             f"-> parir.float32 (-> None for a function that returns nothing)")
        result = ("" if sig.return_annotation is None else
                  elem_size(sig.return_annotation, f"{where}, return type").value)
        fn.__parir_external__ = ExternFunction(ext_name, fn.__name__, params, result,
                                               header or "", pointers, threads, tpb)
        return fn

    return declare
