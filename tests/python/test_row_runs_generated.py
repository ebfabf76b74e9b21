"""Generated programs of several loops over one row (reductions, slice assignments and explicit
loops over the same range, as softmax and the norms are written), which the compiler runs with
each thread's elements of the row in registers (or shared memory), in groups of consecutive elements moved by one
access where it can (float32 mostly, float64 and float16 too). Each program runs on the GPU as
compiled by default and with wide_accesses=False (single elements, as before groups existed);
the two must agree, and the small ones must agree with the program run as plain Python."""

import random

import pytest
import torch

import parir_torch as parir
from helpers import load_module

SHAPES = [  # rows, row length, threads asked for
    (3, 64, 32), (5, 100, 32), (7, 256, 64), (4, 448, 64), (6, 448, 1024), (3, 512, 128),
    (5, 1000, 128), (3, 1024, 256), (2, 2048, 512), (3, 4096, 1024), (2, 8192, 1024),
    (4, 4098, 1024), (37, 96, 32),
    # a warp per row
    (8192, 448, 1024), (8192, 128, 256), (8200, 64, 64),
    # more than the registers hold: shared memory, small enough to run as plain Python too
    (1, 4096, 32), (1, 3001, 32), (1, 4000, 32), (1, 2500, 32), (3, 12288, 128),
    (2, 24576, 256), (2, 16384, 128)]
COUNT = 96


def _expression(rng, scalars, depth=0):
    leaves = ["x[i, :]", "out[i, :]", "y[i, :]", "w[:]"] + scalars + ["0.5", "1.25"]
    if depth >= 2 or rng.random() < 0.35:
        return rng.choice(leaves)
    op = rng.choice(["+", "-", "*"])
    return f"({_expression(rng, scalars, depth + 1)} {op} {_expression(rng, scalars, depth + 1)})"


def _row_expression(rng, scalars):
    # One that reads at least one row, so that the statement walks it.
    while True:
        e = _expression(rng, scalars)
        if "[" in e:
            return e


DTYPES = [torch.float32] * 4 + [torch.float64, torch.float16]


def generate(seed):
    """(source, shape, alias, dtype) of program `seed`: a run of 2 to 5 loops over each row."""
    rng = random.Random(seed)
    scalars, body = [], []
    for k in range(rng.randint(2, 5)):
        kind = rng.choice(["sum", "max", "assign", "update", "scale", "loop", "y"])
        if kind in ("sum", "max"):
            # Kept small: the sum of a row of products can reach 1e4; scaled down before use.
            body += ["parir.label('M')",
                     f"t{k} = parir.{kind}({_row_expression(rng, scalars)})",
                     f"a{k} = t{k} * 0.001 + 0.5"]
            scalars.append(f"a{k}")
        elif kind == "assign":
            body += ["parir.label('M')", f"out[i, :] = {_row_expression(rng, scalars)}"]
        elif kind == "update":
            body += ["parir.label('M')", f"out[i, :] += {_row_expression(rng, scalars)}"]
        elif kind == "scale":
            body += ["parir.label('M')", f"out[i, :] *= {rng.choice(scalars or ['0.5'])}"]
        elif kind == "y":
            body += ["parir.label('M')", f"y[i, :] = {_row_expression(rng, scalars)}"]
        else:
            scale = rng.choice(scalars or ["2.0"])
            body += ["parir.label('M')", "for j in range(M):",
                     f"    out[i, j] = x[i, j] * {scale} - w[j]"]
    source = ("import parir_torch as parir\n\n\n@parir.jit\ndef rows(x, w, out, y, N, M):\n"
              "    parir.label('N')\n    for i in range(N):\n" +
              "".join(f"        {line}\n" for line in body))
    return source, rng.choice(SHAPES), rng.random() < 0.2, rng.choice(DTYPES)


def _arguments(shape, alias, dtype, seed, device):
    n, m, _ = shape
    if device == "meta":  # code only
        x = torch.empty(n, m, device=device, dtype=dtype)
        return [x, torch.empty(m, device=device, dtype=dtype), x if alias else torch.empty_like(x),
                torch.empty_like(x), n, m]
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, m, device=device, generator=g).to(dtype)
    w = torch.randn(m, device=device, generator=g).to(dtype)
    out = x if alias else torch.randn(n, m, device=device, generator=g).to(dtype)
    y = torch.randn(n, m, device=device, generator=g).to(dtype)
    return [x, w, out, y, n, m]


def _options(shape, dtype, wide):
    n, _, threads = shape
    opts = parir.par({'N': parir.threads(n), 'M': parir.threads(threads)})
    opts.wide_accesses = wide
    opts.half_in_float32 = dtype == torch.float16  # float16 computed in float32, as torch does
    return opts


def _program(tmp_path, seed):
    source, shape, alias, dtype = generate(seed)
    fn = load_module(tmp_path, source, f"row_run_{seed}").rows
    return fn, source, shape, alias, dtype


def test_the_programs_exercise_groups_of_kept_elements(tmp_path):
    # The generator is only useful if many programs keep rows in registers in groups (others
    # keep nothing: another tensor read after a kept store could be the same memory).
    grouped = in_shared_memory = 0
    for seed in range(COUNT):
        fn, _, shape, alias, dtype = _program(tmp_path, seed)
        args = _arguments(shape, alias, dtype, seed, "meta")
        text = parir.print_compiled(fn, args, opts=_options(shape, dtype, True))
        grouped += "parir::load_wide" in text or "parir::store_wide" in text
        in_shared_memory += "parir_dynamic_shared" in text
    assert grouped >= COUNT // 3, grouped
    assert in_shared_memory >= COUNT // 16, in_shared_memory


def _close(actual, expected, what):
    # float16 results round to 11 bits, whichever order the sums took.
    tol = {torch.float16: 1e-2, torch.float64: 1e-10}.get(expected.dtype, 1e-4)
    scale = max(1.0, expected.double().abs().max().item())
    torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol * scale,
                               msg=what)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(COUNT))
def test_grouped_rows_agree_with_single_elements_and_plain_python(tmp_path, seed):
    fn, source, shape, alias, dtype = _program(tmp_path, seed)
    results = []
    for wide in (True, False):
        args = _arguments(shape, alias, dtype, seed, "cuda")
        fn(*args, opts=_options(shape, dtype, wide))
        results.append((args[2], args[3]))
    what = f"seed {seed}, shape {shape}, alias {alias}, {dtype}:\n{source}"
    for grouped, single, name in zip(results[0], results[1], ("out", "y")):
        assert not torch.isnan(grouped).any(), f"{name} {what}"
        _close(grouped, single, f"{name} {what}")
    if shape[0] * shape[1] <= 4096 and dtype != torch.float16:
        args = [a.cpu() if isinstance(a, torch.Tensor) else a
                for a in _arguments(shape, alias, dtype, seed, "cuda")]
        if alias:
            args[2] = args[0]
        fn(*args, seq=True)
        for grouped, plain, name in zip(results[0], (args[2], args[3]), ("out", "y")):
            _close(grouped.cpu(), plain, f"{name} against plain Python, {what}")
