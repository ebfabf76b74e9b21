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


@parir.jit
def row_argmax_argmin_par(x, amax, amin, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        amax[i] = parir.argmax(x[i, :])
        parir.label('M')
        amin[i] = parir.argmin(x[i, :])


@parir.jit
def argmax_along_par(x, idx):
    parir.label('N')
    parir.label('M')
    idx[:] = parir.argmax(x[:, :], axis=1)


@parir.jit
def argmin_flat_par_outer(x, idx):
    parir.label('M')
    idx[0] = parir.argmin(x[:, :])


@parir.jit
def argmax_flat_par_inner(x, idx):
    parir.label('rows')  # not in the specifications below: a sequential loop
    parir.label('M')
    idx[0] = parir.argmax(x[:, :])


@parir.jit
def argmax_into_local_par(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        k = parir.argmax(x[i, :])
        out[i] = x[i, k] + k


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


# The reduced dimension in parallel: one block (or one cluster) per row combines (value, index)
# pairs.
PAR_MAPPINGS = {
    "warp": lambda n: parir.par({'N': parir.threads(n), 'M': parir.threads(32).reduce()}),
    "block_256": lambda n: parir.par({'N': parir.threads(n), 'M': parir.threads(256).reduce()}),
    "block_1024": lambda n: parir.par({'N': parir.threads(n), 'M': parir.threads(1024)}),
}


def cluster_opts(n, threads=2048):
    """The reduced dimension over two blocks of 1024 that form one cluster."""
    opts = parir.par({'N': parir.threads(n), 'M': parir.threads(threads).reduce()})
    opts.use_cuda_thread_block_clusters = True
    return opts


@pytest.mark.parametrize("mapping", sorted(PAR_MAPPINGS) + ["cluster"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_parallel_reduction_compiles_for_every_dtype_and_mapping(dtype, mapping):
    n, m = 20, 1000
    x = values(dtype, n, m)
    amax = torch.empty(n, dtype=torch.int64)
    amin = torch.empty(n, dtype=torch.int64)
    opts = cluster_opts(n) if mapping == "cluster" else PAR_MAPPINGS[mapping](n)
    src = parir.print_compiled(row_argmax_argmin_par, [x, amax, amin, n, m], opts)
    assert src.count("parir::block_arg_reduce(") == 2
    assert src.count("parir::cluster_arg_reduce(") == (2 if mapping == "cluster" else 0)
    assert "parir::Max()" in src and "parir::Min()" in src
    _C.nvrtc_compile(src, "sm_90")


def test_parallel_reduction_is_one_pass_per_thread_then_one_combination():
    n, m = 4, 1000
    src = parir.print_compiled(row_argmax_argmin_par,
                               [torch.zeros(n, m), torch.empty(n, dtype=torch.int64),
                                torch.empty(n, dtype=torch.int64), n, m],
                               PAR_MAPPINGS["block_256"](n))
    kernel = src[src.index("__global__"):src.index("//@")]
    # Each thread starts with no element (the largest index) and runs over its strided share.
    assert kernel.count("int64_t acc_index") == 2
    assert "= parir::highest<int64_t>();" in kernel
    assert "+= 256L" in kernel
    # The pairs combine once per row and reduction; the locals take the pair only when it is
    # strictly better than the first element they started from (a tie keeps index 0).
    assert kernel.count("parir::block_arg_reduce(") == 2
    assert "if ((acc0 > best1) || ((acc0 != acc0) && (best1 == best1))) {" in kernel


def test_parallel_axis_flat_and_local_forms_compile():
    x = values(torch.float32, 50, 40)
    idx = torch.empty(50, dtype=torch.int64)
    flat = torch.empty(1, dtype=torch.int64)
    out = torch.empty(50)
    cases = [
        (argmax_along_par, [x, idx], parir.par({'N': parir.threads(50),
                                                'M': parir.threads(64).reduce()})),
        (argmin_flat_par_outer, [x, flat], parir.par({'M': parir.threads(1024).reduce()})),
        (argmax_flat_par_inner, [x, flat], parir.par({'M': parir.threads(32).reduce()})),
        (argmax_into_local_par, [x, out, 50, 40], PAR_MAPPINGS["warp"](50)),
    ]
    for fn, args, opts in cases:
        src = parir.print_compiled(fn, args, opts)
        assert src.count("parir::block_arg_reduce(") == 1, fn.__name__
        _C.nvrtc_compile(src, "sm_90")


def test_seq_of_the_parallel_forms_matches_torch():
    x = values(torch.float32, 6, 11, seed=3)
    amax = torch.full((6,), -7, dtype=torch.int64)
    amin = torch.full((6,), -7, dtype=torch.int64)
    row_argmax_argmin_par(x, amax, amin, 6, 11, seq=True)
    assert torch.equal(amax, torch.argmax(x, 1)) and torch.equal(amin, torch.argmin(x, 1))
    flat = torch.full((1,), -7, dtype=torch.int64)
    argmax_flat_par_inner(x, flat, seq=True)
    assert flat.item() == torch.argmax(x).item()


def test_two_parallel_reduced_dimensions_are_an_error_naming_the_line(tmp_path):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, idx):\n"
                              "    parir.label('A')\n"
                              "    parir.label('B')\n"
                              "    idx[0] = parir.argmax(x[:, :])\n", "two_par_argmax")
    spec = parir.par({'A': parir.threads(4).reduce(), 'B': parir.threads(64).reduce()})
    with pytest.raises(parir.ParirError, match="makes 2 of them parallel") as info:
        parir.print_compiled(m.f, [torch.zeros(4, 64), torch.zeros(1, dtype=torch.int64)], spec)
    assert f"{tmp_path / 'two_par_argmax.py'}:5" in str(info.value)


@pytest.mark.parametrize("spec", [
    {'N': parir.threads(4), 'M': parir.threads(2048).reduce()},
    {'N': parir.threads(4), 'M': parir.threads(256).tpb(64).reduce()},
])
def test_reduced_dimension_over_several_blocks_is_an_error_naming_the_line(tmp_path, spec):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, idx, N):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              "        parir.label('M')\n"
                              "        idx[i] = parir.argmax(x[i, :])\n", "blocks_argmax")
    with pytest.raises(parir.ParirError, match=r"argmax over label 'M' runs on \d+ threads in "
                                               r"\d+ blocks .*cannot combine") as info:
        parir.print_compiled(m.f, [torch.zeros(4, 5000), torch.zeros(4, dtype=torch.int64), 4],
                             parir.par(spec))
    assert f"{tmp_path / 'blocks_argmax.py'}:6" in str(info.value)


def test_cluster_beyond_its_size_is_an_error():
    x = torch.zeros(4, 9000)
    idx = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(parir.ParirError, match="cannot combine"):
        parir.print_compiled(row_argmax_argmin_par, [x, idx, idx, 4, 9000],
                             cluster_opts(4, threads=64 * 1024))


# The loop a user would write: only the exact update of the slice form (with its NaN test, the
# index being the loop variable) becomes a parallel index reduction; the plain `>` update keeps
# each thread's own locals, which cannot be read after the loop.
LOOP_FORM = """import parir_torch as parir
def f(x, idx, N, M):
    parir.label('N')
    for i in range(N):
        best = x[i, 0]
        k = 0
        parir.label('M')
        for j in range(M):
            v = x[i, j]
            if {cond}:
                best = v
                k = {index}
        idx[i] = k
"""


def test_loop_form_with_a_plain_comparison_is_rejected(tmp_path):
    m = load_module(tmp_path, LOOP_FORM.format(cond="v > best", index="j"), "loop_plain")
    spec = parir.par({'N': parir.threads(4), 'M': parir.threads(256).reduce()})
    with pytest.raises(parir.ParirError, match="assigned inside the parallel loop"):
        parir.print_compiled(m.f, [torch.zeros(4, 64), torch.zeros(4, dtype=torch.int64), 4, 64],
                             spec)


def test_loop_form_with_the_nan_test_is_a_parallel_index_reduction(tmp_path):
    m = load_module(tmp_path, LOOP_FORM.format(cond="v > best or (v != v and best == best)",
                                               index="j"), "loop_nan")
    x = values(torch.float32, 4, 64)
    idx = torch.full((4,), -7, dtype=torch.int64)
    spec = parir.par({'N': parir.threads(4), 'M': parir.threads(256).reduce()})
    src = parir.print_compiled(m.f, [x, idx, 4, 64], spec)
    assert src.count("parir::block_arg_reduce(") == 1
    _C.nvrtc_compile(src, "sm_90")
    m.f(x, idx, 4, 64)  # as plain Python
    assert torch.equal(idx, torch.argmax(x, 1))


def test_loop_form_with_another_index_is_an_error(tmp_path):
    m = load_module(tmp_path, LOOP_FORM.format(cond="v > best or (v != v and best == best)",
                                               index="M - 1 - j"), "loop_reversed")
    spec = parir.par({'N': parir.threads(4), 'M': parir.threads(256).reduce()})
    with pytest.raises(parir.ParirError, match="not the row-major position"):
        parir.print_compiled(m.f, [torch.zeros(4, 64), torch.zeros(4, dtype=torch.int64), 4, 64],
                             spec)


def test_empty_slice_is_an_error(tmp_path):
    expect_error_in_loop(tmp_path, "x[i, 0] = parir.argmin(x[i, 0:0])",
                         "argmin of an empty slice", [torch.zeros(2, 4), 2],
                         parir.par({'N': parir.threads(2)}))


def test_keyword_other_than_axis_is_an_error(tmp_path):
    expect_error_in_loop(tmp_path, "x[i, 0] = parir.argmax(x[i, :], keepdim=True)",
                         "only the keyword axis= \\(or torch's dim=\\)", [torch.zeros(2, 4), 2],
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


def poisoned(n):
    return torch.full((n,), -7, dtype=torch.int64, device="cuda")


def special_rows(m):
    """float32 rows of length m with NaNs, infinities and ties where they are hard to get right:
    the last element, several in different warps and blocks, everything equal."""
    nan, inf = float("nan"), float("inf")
    rows = torch.zeros(8, m)
    rows[1, -1] = nan
    rows[2, m // 2:] = nan
    rows[3, :] = -inf
    rows[4, :] = inf
    rows[5, ::3] = 2.0
    rows[6, -1] = -inf
    rows[6, 0] = inf
    rows[7, :] = nan
    return rows


@pytest.mark.gpu
@pytest.mark.parametrize("m", ROW_LENGTHS)
def test_parallel_rows_on_gpu_match_torch(m):
    # float32 at every row length, 256 threads per row: random rows with ties and NaNs, then
    # the special rows.
    n = 8 if m > 10_000 else 300
    x = torch.cat([values(torch.float32, n, m, seed=m), special_rows(m)]).cuda()
    amax, amin = poisoned(len(x)), poisoned(len(x))
    row_argmax_argmin_par(x, amax, amin, len(x), m, opts=PAR_MAPPINGS["block_256"](len(x)))
    assert torch.equal(amax.cpu(), torch.argmax(x.cpu(), 1))
    assert torch.equal(amin.cpu(), torch.argmin(x.cpu(), 1))


@pytest.mark.gpu
def test_parallel_rows_of_every_dtype_on_gpu_match_torch():
    n, m = 64, 4097
    for dtype in DTYPES:
        x = values(dtype, n, m, seed=3, device="cuda")
        amax, amin = poisoned(n), poisoned(n)
        row_argmax_argmin_par(x, amax, amin, n, m, opts=PAR_MAPPINGS["block_1024"](n))
        assert torch.equal(amax.cpu(), reference(x, torch.argmax, 1)), dtype
        assert torch.equal(amin.cpu(), reference(x, torch.argmin, 1)), dtype


@pytest.mark.gpu
def test_parallel_axis_flat_local_and_cluster_forms_on_gpu_match_torch():
    x = values(torch.float32, 1000, 77, seed=5, device="cuda")
    idx = poisoned(1000)
    argmax_along_par(x, idx, opts=parir.par({'N': parir.threads(1000),
                                             'M': parir.threads(64).reduce()}))
    assert torch.equal(idx.cpu(), torch.argmax(x.cpu(), dim=1))
    flat = poisoned(1)
    argmin_flat_par_outer(x, flat, opts=parir.par({'M': parir.threads(1024).reduce()}))
    assert flat.item() == torch.argmin(x.cpu()).item()
    flat = poisoned(1)
    argmax_flat_par_inner(x, flat, opts=parir.par({'M': parir.threads(32).reduce()}))
    assert flat.item() == torch.argmax(x.cpu()).item()
    y = torch.randn(300, 1000, device="cuda")
    out = torch.full((300,), float("nan"), device="cuda")
    argmax_into_local_par(y, out, 300, 1000, opts=PAR_MAPPINGS["warp"](300))
    k = torch.argmax(y, 1)
    assert torch.equal(out, y.max(1).values + k)
    if torch.cuda.get_device_capability() >= (9, 0):
        x = torch.cat([values(torch.float32, 16, 100_003, seed=7), special_rows(100_003)]).cuda()
        amax, amin = poisoned(len(x)), poisoned(len(x))
        row_argmax_argmin_par(x, amax, amin, len(x), 100_003, opts=cluster_opts(len(x)))
        assert torch.equal(amax.cpu(), torch.argmax(x.cpu(), 1))
        assert torch.equal(amin.cpu(), torch.argmin(x.cpu(), 1))
