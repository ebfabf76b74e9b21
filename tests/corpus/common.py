"""Inputs and outputs shared by the corpus programs: random non-zero data, and outputs poisoned
so that an element a program forgets to write cannot pass for a right one."""

import torch


def nonzero(shape, rng, dtype=torch.float32, device="cpu", lo=0.1, hi=1.0):
    """Uniform magnitudes in [lo, hi) with random signs: never zero, so a missing term shows."""
    if isinstance(shape, int):
        shape = (shape,)
    mag = lo + (hi - lo) * torch.rand(shape, generator=rng, dtype=torch.float64)
    sign = torch.where(torch.rand(shape, generator=rng) < 0.5, -1.0, 1.0).double()
    return (mag * sign).to(dtype).to(device)


def positive(shape, rng, dtype=torch.float32, device="cpu", lo=0.1, hi=1.0):
    if isinstance(shape, int):
        shape = (shape,)
    mag = lo + (hi - lo) * torch.rand(shape, generator=rng, dtype=torch.float64)
    return mag.to(dtype).to(device)


def randint(shape, rng, lo, hi, dtype=torch.int64, device="cpu"):
    if isinstance(shape, int):
        shape = (shape,)
    return torch.randint(lo, hi, shape, generator=rng, dtype=torch.int64).to(dtype).to(device)


def poison(shape, dtype=torch.float32, device="cpu"):
    """NaN for floats; for integers a value no program here produces."""
    if isinstance(shape, int):
        shape = (shape,)
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=dtype, device=device)
    if dtype in (torch.uint8, torch.int8):
        return torch.full(shape, 97, dtype=dtype, device=device)
    return torch.full(shape, -7777, dtype=dtype, device=device)


def f64(t):
    """A float64 NumPy copy of a tensor, for the references."""
    return t.detach().cpu().double().numpy().copy()  # .double() of a float64 tensor is itself
