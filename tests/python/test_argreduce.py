"""parir.argmax and parir.argmin of slices: the int64 index of the extreme element, the first
one on ties, the first NaN where there is one (as torch.argmax/argmin), through the compiler
and NVRTC for every dtype and mapping of the rows, as plain Python against torch, and on the GPU
against torch's reference."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import expect_error_in_loop, load_module

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
        torch.uint32, torch.uint64]
DTYPES = FLOATS + INTS + [torch.bool]
ROW_LENGTHS = [1, 31, 33, 1000, 4097, 1_000_003]


@parir.jit
def row_argmax_argmin(x, amax, amin, N, M):
    parir.label('N')
    for i in range(N):
        amax[i] = parir.argmax(x[i, :])
        amin[i] = parir.argmin(x[i, :])


@parir.jit
def argmax_along(x, idx):
    parir.label('N')
    idx[:] = parir.argmax(x[:, :], axis=1)


@parir.jit
def argmin_flat(x, idx):
    idx[0] = parir.argmin(x[:, :])


@parir.jit
def argmax_into_local(x, out, N, M):
    parir.label('N')
    for i in range(N):
        k = parir.argmax(x[i, :])
        out[i] = x[i, k]


def values(dtype, n, m, seed=0, device="cpu"):
    """An n x m tensor with many ties (a small range of values) and, in floats, NaNs and
    infinities in some rows."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        x = torch.randint(0, 2, (n, m), generator=g).bool()
    elif dtype.is_floating_point:
        x = torch.randint(-3, 4, (n, m), generator=g).to(dtype)
        nan = torch.rand(n, m, generator=g) < 0.02
        nan[::2] = False  # half the rows without NaN
        x[nan] = float("nan")
        x[1::3, 0] = float("inf")
        x[2::3, -1] = -float("inf")
    else:
        lo = -3 if dtype.is_signed else 0
        x = torch.randint(lo, lo + 7, (n, m), generator=g).to(dtype)
    return x.to(device)


def reference(x, fn, dim=None):
    """torch's argmax/argmin, computed on the CPU where torch has them: bool as uint8 and the
    wide unsigned types as int64 (which holds the test values)."""
    x = x.cpu()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    elif x.dtype in (torch.uint16, torch.uint32, torch.uint64):
        x = x.to(torch.int64)
    return fn(x) if dim is None else fn(x, dim=dim)


# ----- plain Python (seq=True) against torch -----------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_seq_matches_torch_with_ties_and_nans(dtype):
    x = values(dtype, 7, 33, seed=1)
    amax = torch.full((7,), -1, dtype=torch.int64)
    amin = torch.full((7,), -1, dtype=torch.int64)
    row_argmax_argmin(x, amax, amin, 7, 33, seq=True)
    assert torch.equal(amax, reference(x, torch.argmax, 1))
    assert torch.equal(amin, reference(x, torch.argmin, 1))


def test_seq_nan_is_the_extreme_first_nan_wins():
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 5.0, nan], [2.0, 2.0, 1.0, 1.0]])
    amax = torch.full((2,), -1, dtype=torch.int64)
    amin = torch.full((2,), -1, dtype=torch.int64)
    row_argmax_argmin(x, amax, amin, 2, 4, seq=True)
    assert amax.tolist() == [1, 0]
    assert amin.tolist() == [1, 2]
    assert torch.equal(amax, torch.argmax(x, 1)) and torch.equal(amin, torch.argmin(x, 1))


def test_seq_axis_flat_and_local():
    x = values(torch.float32, 5, 9, seed=2)
    idx = torch.full((5,), -1, dtype=torch.int64)
    argmax_along(x, idx, seq=True)
    assert torch.equal(idx, torch.argmax(x, dim=1))
    flat = torch.full((1,), -1, dtype=torch.int64)
    argmin_flat(x, flat, seq=True)
    assert flat.item() == torch.argmin(x).item()
    out = torch.zeros(5)
    y = torch.randn(5, 9)
    argmax_into_local(y, out, 5, 9, seq=True)
    assert torch.equal(out, y.max(1).values)


def test_seq_wide_unsigned_and_bool_keep_their_order():
    big = torch.tensor([[1, 2 ** 64 - 1, 2 ** 63, 2 ** 64 - 1]], dtype=torch.uint64)
    amax = torch.full((1,), -1, dtype=torch.int64)
    amin = torch.full((1,), -1, dtype=torch.int64)
    row_argmax_argmin(big, amax, amin, 1, 4, seq=True)
    assert (amax.item(), amin.item()) == (1, 0)
    b = torch.tensor([[False, True, True]])
    row_argmax_argmin(b, amax, amin, 1, 3, seq=True)
    assert (amax.item(), amin.item()) == (1, 0)


def test_seq_result_is_int64():
    r = parir.argmax(torch.tensor([1.0, 3.0, 2.0]))
    assert r.dtype == torch.int64 and r.dim() == 0 and r.item() == 1


# ----- through the compiler and NVRTC --------------------------------------------------------

MAPPINGS = {
    "one_thread": lambda n: parir.par({'N': parir.threads(1)}),
    "one_block": lambda n: parir.par({'N': parir.threads(n)}),
    "several_blocks": lambda n: parir.par({'N': parir.threads(n).tpb(64)}),
}


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_compiles_for_every_dtype_and_mapping(dtype, mapping):
    n, m = 200, 33
    x = values(dtype, n, m)
    amax = torch.empty(n, dtype=torch.int64)
    amin = torch.empty(n, dtype=torch.int64)
    src = parir.print_compiled(row_argmax_argmin, [x, amax, amin, n, m], MAPPINGS[mapping](n))
    _C.nvrtc_compile(src, "sm_90")


def test_axis_flat_and_local_forms_compile():
    x = values(torch.float32, 50, 40)
    idx = torch.empty(50, dtype=torch.int64)
    _C.nvrtc_compile(parir.print_compiled(argmax_along, [x, idx],
                                          parir.par({'N': parir.threads(50)})), "sm_90")
    flat = torch.empty(1, dtype=torch.int64)
    _C.nvrtc_compile(parir.print_compiled(argmin_flat, [x, flat], parir.par({})), "sm_90")
    out = torch.empty(50)
    _C.nvrtc_compile(parir.print_compiled(argmax_into_local, [x, out, 50, 40],
                                          parir.par({'N': parir.threads(50)})), "sm_90")


def test_parallel_reduced_dimension_is_an_error_naming_the_line(tmp_path):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, idx, N):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              "        parir.label('M')\n"
                              "        idx[i] = parir.argmax(x[i, :])\n", "par_argmax")
    x = torch.zeros(4, 64)
    idx = torch.zeros(4, dtype=torch.int64)
    spec = parir.par({'N': parir.threads(4), 'M': parir.threads(64).reduce()})
    with pytest.raises(parir.ParirError, match="argmax runs sequentially") as info:
        parir.print_compiled(m.f, [x, idx, 4], spec)
    assert f"{tmp_path / 'par_argmax.py'}:6" in str(info.value)


def test_empty_slice_is_an_error(tmp_path):
    expect_error_in_loop(tmp_path, "x[i, 0] = parir.argmin(x[i, 0:0])",
                         "argmin of an empty slice", [torch.zeros(2, 4), 2],
                         parir.par({'N': parir.threads(2)}))


def test_keyword_other_than_axis_is_an_error(tmp_path):
    expect_error_in_loop(tmp_path, "x[i, 0] = parir.argmax(x[i, :], dim=0)",
                         "only the keyword axis=", [torch.zeros(2, 4), 2],
                         parir.par({'N': parir.threads(2)}))


# ----- on the GPU, against torch -------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("m", ROW_LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_on_gpu_match_torch(dtype, m):
    # One compile per dtype and row length: rows with and without NaNs, and many ties.
    n = 8 if m > 10_000 else 300
    x = values(dtype, n, m, seed=m, device="cuda")
    amax = torch.full((n,), -7, dtype=torch.int64, device="cuda")  # poisoned
    amin = torch.full((n,), -7, dtype=torch.int64, device="cuda")
    row_argmax_argmin(x, amax, amin, n, m, opts=parir.par({'N': parir.threads(n)}))
    torch.cuda.synchronize()
    assert torch.equal(amax.cpu(), reference(x, torch.argmax, 1))
    assert torch.equal(amin.cpu(), reference(x, torch.argmin, 1))


@pytest.mark.gpu
def test_axis_and_flat_forms_on_gpu_match_torch():
    x = values(torch.float32, 1000, 77, seed=5, device="cuda")
    idx = torch.full((1000,), -7, dtype=torch.int64, device="cuda")
    argmax_along(x, idx, opts=parir.par({'N': parir.threads(1000)}))
    assert torch.equal(idx.cpu(), torch.argmax(x.cpu(), dim=1))
    flat = torch.full((1,), -7, dtype=torch.int64, device="cuda")
    argmin_flat(x, flat, opts=parir.par({}))
    assert flat.item() == torch.argmin(x.cpu()).item()
