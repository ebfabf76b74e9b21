"""Running a parir function as the plain Python it is written in (seq=True, and the Python side
of parir.check).

What runs is the function rewritten to follow the compiled code's semantics where Python's and
torch's differ (plain_python_rewrite.py): element reads are values, arithmetic is typed as the
compiler types it, slices may have negative steps.

A jit function called from inside such a run (a helper decorated with @parir.jit) runs as plain
Python too, as it would in the original Parir: compiling it on its own would ask for a parallel
specification it was never given, and a helper that returns a value has no kernel form. The
state is per thread, so another thread's calls still compile and launch.
"""

import threading

from .plain_python_rewrite import program

_state = threading.local()


def run(fn, args):
    """fn(*args) as plain Python, with jit functions called inside it running as plain Python
    too. NumPy scalars become 0-d tensors of their dtype, as the compiled code treats them:
    torch will not store a numpy.float32 into a tensor element."""
    depth = getattr(_state, "depth", 0)
    _state.depth = depth + 1
    try:
        return program(fn)(*[_numpy_scalar_as_tensor(a) for a in args])
    finally:
        _state.depth = depth


def call(fn, args):
    """fn(*args) for a jit function called inside run() by code that was not rewritten."""
    return program(fn)(*args)


def active():
    """Whether this thread is inside run(): a jit function called now runs as plain Python."""
    return getattr(_state, "depth", 0) > 0


def _numpy_scalar_as_tensor(a):
    if type(a).__module__ != "numpy" or getattr(a, "ndim", None) != 0:
        return a
    import numpy as np
    import torch

    return torch.from_numpy(np.asarray(a))
