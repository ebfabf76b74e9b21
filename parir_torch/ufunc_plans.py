"""How a call of a vectorized function reaches its kernel: the operands as views over common
loop dimensions (Views), and the plan of a call (Plan), which eager calls with arguments of the
same kinds (dtypes, shapes, strides, devices) reuse.

Each operand's loop dimensions are aligned with the loop shape from the right, as broadcasting
aligns them, a dimension it broadcasts getting stride 0. Dimensions of size 1 are dropped; the
others are ordered by the first output's strides, largest first (so that consecutive threads
write consecutive elements, whatever the output's layout), and neighbours are merged where
every operand steps through them as through one dimension: contiguous operands of one shape
become one dimension, and the kernel's index is the element's offset. Operands keep their core
dimensions after the loop dimensions.
"""

import math

import torch

from .options import CompileOptions, as_constants, from_constants, threads
from .ufunc_kernels import LABEL
from .ufunc_types import NAMES


class Views:
    """The merged loop dimensions of a call, and each operand's view over them."""

    def __init__(self, operands, cores, loop_shape, first_output):
        self.loop_shape = loop_shape
        strides = [loop_strides(a, c, loop_shape) for a, c in zip(operands, cores)
                   if c is not None]
        out_strides = loop_strides(operands[first_output], cores[first_output], loop_shape)
        dims = [d for d, n in enumerate(loop_shape) if n != 1]
        self.order = sorted(dims, key=lambda d: -out_strides[d])
        groups = []
        for d in self.order:
            if groups and all(s[groups[-1][-1]] == s[d] * loop_shape[d] for s in strides):
                groups[-1].append(d)
            else:
                groups.append([d])
        self.groups = groups
        self.sizes = tuple(math.prod(loop_shape[d] for d in g) for g in groups) or (1,)

    def shape_and_strides(self, a, core):
        """(shape, strides) of operand `a` (with `core` core dimensions) over the merged loop
        dimensions: what a.as_strided takes."""
        strides = loop_strides(a, core, self.loop_shape)
        loop = [strides[g[-1]] for g in self.groups] or [0]
        return ((*self.sizes, *a.shape[a.dim() - core:]),
                (*loop, *a.stride()[a.dim() - core:]))

    def traced_view(self, a, core):
        """The same view through view operations, which a traced graph records as such (and
        functionalization replays onto the operand)."""
        rank = len(self.loop_shape)
        core_shape = tuple(a.shape[a.dim() - core:])
        if tuple(a.shape) != (*self.loop_shape, *core_shape):
            a = a.expand(*self.loop_shape, *core_shape)
        ones = [d for d in range(rank) if d not in self.order]
        permutation = [*self.order, *ones, *range(rank, rank + core)]
        if permutation != list(range(a.dim())):
            a = a.permute(*permutation)
        shape = (*self.sizes, *core_shape)
        return a if tuple(a.shape) == shape else a.view(shape)


def loop_strides(a, core, loop_shape):
    """The strides of operand `a`'s loop dimensions, aligned with `loop_shape` from the right,
    0 where it broadcasts."""
    rank = len(loop_shape)
    shape, stride = a.shape[:a.dim() - core], a.stride()[:a.dim() - core]
    lead = rank - len(shape)
    return [0 if d < lead or (shape[d - lead] == 1 and loop_shape[d] != 1)
            else stride[d - lead] for d in range(rank)]


def kernel_options(opts, n):
    """`opts` with the parallel specification of a ufunc's kernel: one thread per element of
    its `n`."""
    spec = {LABEL: threads(n)}
    if opts is None:
        return CompileOptions(parallelize=spec)
    out = from_constants(as_constants(opts))
    out.parallelize = spec
    return out


class Operand:
    """How one argument becomes a kernel argument: a number as it is ("scalar"), or a tensor
    (a number made one, "full"), moved to the device and converted to `dtype` where needed,
    viewed with `shape` and `strides` over the loop dimensions."""

    __slots__ = ("how", "move", "dtype", "core", "unsqueeze", "shape", "strides")

    def __init__(self, how, move=False, dtype=None, core=None, unsqueeze=False):
        self.how, self.move, self.dtype, self.core = how, move, dtype, core
        self.unsqueeze = unsqueeze  # a () operand that the function sees as a 1-element array
        self.shape = self.strides = None

    def prepared(self, a, device):
        """The tensor the view is taken of (the kernel's number for a scalar)."""
        if self.how == "scalar":
            return a
        if self.how == "full":
            a = torch.full((), a, dtype=self.dtype, device=device)
        else:
            if self.move:  # a 0-d CPU tensor with CUDA tensors, as torch allows
                a = a.to(device)
            if self.dtype is not None:  # a view cannot be converted element by element
                a = a.to(self.dtype)
        return a.unsqueeze(-1) if self.unsqueeze else a


class Plan:
    """A call's kernel, its options, and how each argument reaches it. `allocate` says how
    the outputs are made when the call does not give them: ("like", k, dtype) as
    torch.empty_like(input k), ("new", shape, dtype)."""

    def __init__(self, kernel, opts, operands, sizes, allocate, n_in, n_out, device):
        self.kernel, self.opts, self.operands, self.sizes = kernel, opts, operands, sizes
        self.allocate, self.n_in, self.n_out, self.device = allocate, n_in, n_out, device

    def outputs(self, inputs):
        return [torch.empty_like(inputs[a[1]], dtype=a[2]) if a[0] == "like" else
                torch.empty(a[1], dtype=a[2], device=self.device) for a in self.allocate]

    def arguments(self, operands):
        """The kernel's arguments (as_strided views) for an eager call's operands."""
        args = []
        for spec, a in zip(self.operands, operands):
            a = spec.prepared(a, self.device)
            args.append(a if spec.how == "scalar" else a.as_strided(spec.shape, spec.strides))
        return args

    def run(self, args, out):
        """An eager call whose arguments are of the kinds this plan was made for: the fast
        path, without any checks (they passed for these kinds)."""
        n_in = self.n_in
        if len(args) > n_in:
            inputs, outs = args[:n_in], list(args[n_in:])
        else:
            inputs = args
            if out is None:
                outs = self.outputs(inputs)
            else:
                outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if self.kernel is not None:
            self.kernel(*self.arguments([*inputs, *outs]), *self.sizes, opts=self.opts)
        return outs[0] if self.n_out == 1 else tuple(outs)


def make_plan(ufunc, sig_index, inputs, outs, loop_shape, allocate, opts, traced):
    """The Plan of a call (steps 3 and 4 of ufuncs.py), and the kernel's arguments for these
    operands: views through view operations when `traced`, as_strided views otherwise."""
    sig = ufunc.signatures[sig_index]
    device = outs[0].device
    specs, kinds, prepared = [], [], []
    for k, a in enumerate([*inputs, *outs]):
        param = ufunc.param(sig, k)
        core = len(ufunc.core(k))
        unsqueeze = core == 0 and param.ndim == 1
        if not isinstance(a, torch.Tensor):
            if param.ndim == 0:
                spec = Operand("scalar")
                kinds.append(("scalar", NAMES[param.dtype]))
            else:
                spec = Operand("full", dtype=param.dtype, core=1, unsqueeze=True)
                kinds.append(("element", None))
        else:
            convert = a.dtype != param.dtype and param.ndim > 0
            spec = Operand("tensor", move=a.device != device,
                           dtype=param.dtype if convert else None, core=core + unsqueeze,
                           unsqueeze=unsqueeze)
            cast = NAMES[param.dtype] if a.dtype != param.dtype and param.ndim == 0 else None
            kinds.append(("element", cast))
        specs.append(spec)
        prepared.append(spec.prepared(a, device))
    cores = [s.core if s.how != "scalar" else None for s in specs]
    views = Views(prepared, cores, loop_shape, first_output=len(inputs))
    args = []
    for spec, a in zip(specs, prepared):
        if spec.how != "scalar":
            spec.shape, spec.strides = views.shape_and_strides(a, spec.core)
            a = views.traced_view(a, spec.core) if traced else a.as_strided(spec.shape,
                                                                             spec.strides)
        args.append(a)
    if ufunc.kind == "vectorize":
        kinds.pop()  # the output is the kernel's own parameter, which the value is stored in
    kernel = ufunc.kernel(sig_index, len(views.sizes), kinds, args)
    plan = Plan(kernel, kernel_options(opts, math.prod(views.sizes)), specs, views.sizes,
                allocate, ufunc.n_in, ufunc.n_out, device)
    return plan, [*args, *views.sizes]
