"""What a real-program benchmark consists of, and the helpers its modules share.

Each module in this package defines one program derived from npbench (the NumPy benchmark
collection): the parir kernel(s) with their parallel specification, the torch version (the
NumPy code translated to ATen ops), input generation, and the minimum bytes and flops the
computation needs. The torch version doubles as the float64 reference (run on the same inputs
upcast to float64) and, compiled with torch.compile, as the Inductor competitor.
"""

from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

import torch


@dataclass
class Program:
    name: str
    # npbench's source file the program follows, and where the "L" size comes from.
    origin: str
    size_note: str
    # sizes["L"] is the benchmark size, sizes["quick"] a small GPU smoke size, sizes["ci"] a
    # tiny size for running the kernels as plain Python on the CPU.
    sizes: Dict[str, dict]
    # make_inputs(size, dtype, rng) -> state: dict of tensors and scalars for one run.
    make_inputs: Callable
    # parir_calls(state) -> [(jit function, args, CompileOptions)], run in order.
    parir_calls: Callable
    # torch_step is what torch.compile compiles; torch_run(state, step) drives it (a loop of the
    # NumPy code that carries a dependence stays in Python around it) and leaves the results in
    # the state under the names in `outputs`.
    torch_step: Callable
    torch_run: Callable
    outputs: Tuple[str, ...]
    # Tensors the program overwrites completely without reading them first: poisoned with NaN
    # before the checked run, so an element the program forgets to write is caught.
    write_only: Tuple[str, ...] = ()
    # Tensors the program reads and modifies (in place, as the NumPy code does): restored from
    # a pristine copy after each timed run.
    mutated: Tuple[str, ...] = ()
    # cost(size, itemsize) -> {"bytes": minimum bytes through device memory (each input read
    # once, each output written once), "flops": floating-point operations (each + - * / min max
    # comparison exp tanh sqrt counts one), "steps": launches that must follow one another}.
    cost: Callable = None
    # torch.compile(dynamic=...): True where a loop index reaches the step as a Python number.
    dynamic: bool = False
    # True where torch_run takes a third argument, index(k) -> what the step receives as loop
    # index k: k itself in eager mode, a DeviceIndex's under torch.compile (see `take`).
    indexed_loop: bool = False
    tolerance: Dict[torch.dtype, float] = field(
        default_factory=lambda: {torch.float32: 1e-4, torch.float64: 1e-9})
    tolerance_note: str = ""


class Inputs:
    """Deterministic random inputs on one device. On the meta device (code generation only)
    tensors are allocated but not filled."""

    def __init__(self, dtype, device, seed=0):
        self.dtype, self.device = dtype, torch.device(device)
        self.gen = None
        if self.device.type != "meta":
            self.gen = torch.Generator(device=self.device).manual_seed(seed)

    def uniform(self, *shape, lo=0.5, hi=1.5, dtype=None):
        """Uniform in [lo, hi): non-zero by default, so that unwritten outputs and wrong
        indexing show."""
        dtype = dtype or self.dtype
        if self.gen is None:
            return torch.empty(shape, dtype=dtype, device=self.device)
        return torch.rand(shape, dtype=dtype, device=self.device, generator=self.gen) * (hi - lo) + lo

    def empty(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or self.dtype, device=self.device)

    def zeros(self, *shape, dtype=None):
        return torch.zeros(shape, dtype=dtype or self.dtype, device=self.device)

    def integers(self, low, high, n):
        """n int64 values in [low, high), generated on the CPU (identical on every device)."""
        gen = torch.Generator().manual_seed(int(self.gen.initial_seed()) if self.gen else 0)
        return torch.randint(low, high, (n,), generator=gen, dtype=torch.int64)


class DeviceIndex:
    """Loop indices as one-element int64 views of one arange on the device. Dynamo makes a
    Python int (or a 0-d tensor) that indexes a tensor a constant of the graph, and so recompiles
    for every value of a loop index; a one-element index tensor used through index_select and
    index_copy_ (`take`, `put_`) is an input of the graph, and one graph serves the whole loop.
    The views cost no launch."""

    def __init__(self, device):
        self.device = device
        self.values = torch.arange(0, device=device)

    def __call__(self, k):
        if k >= self.values.numel():
            self.values = torch.arange(max(1024, 2 * k + 1), device=self.device)
        return self.values[k:k + 1]


def take(x, dim, k):
    """x at index k of dimension dim: a view for a Python int k (eager mode), index_select for a
    DeviceIndex (under torch.compile)."""
    if isinstance(k, int):
        return x.select(dim, k)
    return x.index_select(dim, k).squeeze(dim)


def put_(x, dim, k, value):
    """x at index k of dimension dim = value, for the two kinds of k that `take` accepts."""
    if isinstance(k, int):
        x.select(dim, k).copy_(value)
    else:
        x.index_copy_(dim, k, value.unsqueeze(dim))


def state_bytes(state):
    return sum(v.numel() * v.element_size() for v in state.values() if isinstance(v, torch.Tensor))


def upcast(state):
    """The state with floating tensors converted to float64 (the reference's inputs)."""
    return {k: (v.to(torch.float64, copy=True) if isinstance(v, torch.Tensor) and v.is_floating_point()
                else v.clone() if isinstance(v, torch.Tensor) else v) for k, v in state.items()}


def clone_state(state):
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in state.items()}
