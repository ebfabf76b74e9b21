"""parir.call: calling a jit function that writes fresh outputs, as PyTorch operators return
them. This is what a torch.autograd.Function needs to give a parir function a backward:

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, a):
            ctx.a = a
            return parir.call(scale, x, a, parir.out_like(x), x.numel(), opts=...)

        @staticmethod
        def backward(ctx, grad):
            return parir.call(scale, grad, ctx.a, parir.out_like(grad), grad.numel(), opts=...), None

A jit function writes into tensors it is given; autograd needs functions that return new
tensors and leave their inputs alone (or declare them with ctx.mark_dirty). parir.call
allocates each argument marked with out_like, checks that the function writes exactly the
marked arguments, calls it and returns the new tensors. Under torch.compile the allocations are
part of the graph, and Inductor runs the kernels on them without copies.
"""

import torch

from ._C import ParirError
from .errors import ParirTypeError
from .jit_function import JitFunction


class _Output:
    """An output argument of parir.call: a new tensor like `like`, with `dtype` if given."""

    def __init__(self, like, dtype):
        self.like = like
        self.dtype = dtype

    def __repr__(self):
        return f"parir.out_like(<{tuple(self.like.shape)} tensor>, dtype={self.dtype})"


def out_like(tensor, dtype=None):
    """Marks an output argument of parir.call: it becomes torch.empty_like(tensor, dtype=dtype)
    (same shape, strides, device; the tensor's dtype unless `dtype` is given)."""
    if not isinstance(tensor, torch.Tensor):
        raise ParirTypeError(f"parir.out_like takes a tensor, got {type(tensor).__name__}")
    return _Output(tensor, dtype)


def call(fn, *args, opts=None):
    """Calls jit function `fn` on `args`, where each parir.out_like(...) argument is replaced by
    a new tensor, and returns the new tensors: one tensor, or a tuple when there are several.

    The function must write every output and nothing else: an error names the argument
    otherwise (an autograd.Function forward that wrote an input would corrupt gradients)."""
    if not isinstance(fn, JitFunction):
        raise ParirTypeError(f"parir.call takes a @parir.jit function, got {type(fn).__name__}")
    positions = [i for i, a in enumerate(args) if isinstance(a, _Output)]
    if not positions:
        raise ParirError(f"parir.call({fn.ir.name}, ...) has no output: mark the tensors the "
                         f"function writes with parir.out_like(tensor)")
    if not torch.compiler.is_compiling():  # checked by the eager run of the same code
        _check_outputs(fn, args, positions)
    outs = [torch.empty_like(args[i].like, dtype=args[i].dtype) for i in positions]
    full = list(args)
    for i, out in zip(positions, outs):
        full[i] = out
    fn(*full, opts=opts)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _check_outputs(fn, args, positions):
    names = fn.ir.params
    if len(args) != len(names):
        return  # the call itself reports the wrong argument count
    written = set(fn.ir.written_params)
    for i in positions:
        if names[i] not in written:
            raise ParirError(f"parir.call: argument '{names[i]}' of {fn.ir.name}() is marked as "
                             f"an output, but the function never writes it")
    for i, (name, a) in enumerate(zip(names, args)):
        if name in written and i not in positions and isinstance(a, torch.Tensor):
            raise ParirError(f"parir.call: {fn.ir.name}() writes argument '{name}', which is "
                             f"not marked as an output; pass parir.out_like(...) for it (a "
                             f"function used in autograd must not modify its inputs)")
