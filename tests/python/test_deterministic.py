"""deterministic=True: reductions over several blocks combine the blocks' results in a fixed
order, through a temporary, instead of atomically, so that float results repeat bit for bit;
compiled without a GPU, then on the GPU against torch and against themselves over many runs."""

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import check_close, check_reduction, load_module
from reduction_programs import sum_rows, total_max, total_min, total_prod, total_sum
from test_reductions import data, initial, reference

OPS = {"sum": total_sum, "prod": total_prod, "min": total_min, "max": total_max}


def fixed_order(spec):
    return parir.CompileOptions(parallelize=spec, deterministic=True)


@parir.jit
def norms_and_sums(x, sq, s, N, M):
    parir.label('N')
    for i in range(N):
        acc = 0.0
        parir.label('M')
        for j in range(M):
            acc += x[i, j] * x[i, j]      # into a local
        sq[i] = acc
        parir.label('M')
        s[i] = parir.sum(x[i, :])         # a slice reduction


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_fixed_order_reductions_compile_without_atomics(op, dtype):
    x, out = torch.ones(5000, dtype=dtype), torch.ones(1, dtype=dtype)
    spec = {"i": parir.threads(5000).reduce()}
    src = parir.print_compiled(OPS[op], [x, out, 5000], fixed_order(spec))
    assert "atomic" not in src
    assert "//@ temp partial" in src and "partial2[chunk0] = acc0" in src
    _C.nvrtc_compile(src, "sm_90")
    # Without the option the blocks combine atomically.
    assert "atomic_combine" in parir.print_compiled(OPS[op], [x, out, 5000], parir.par(spec))


def test_fixed_order_into_locals_and_rows_compiles():
    x = torch.ones(3, 5000)
    spec = {"N": parir.threads(3), "M": parir.threads(2048).reduce().tpb(512)}
    src = parir.print_compiled(norms_and_sums, [x, torch.empty(3), torch.empty(3), 3, 5000],
                               fixed_order(spec))
    assert "atomic" not in src
    assert src.count("//@ temp partial") == 2 and "float32[3, 4]" in src
    _C.nvrtc_compile(src, "sm_90")
    # One block per row has nothing to combine across blocks: the code is the default's.
    spec = {"N": parir.threads(3), "M": parir.threads(512).reduce()}
    args = [x, torch.empty(3), torch.empty(3), 3, 5000]
    assert parir.print_compiled(norms_and_sums, args, fixed_order(spec)) == \
        parir.print_compiled(norms_and_sums, args, parir.par(spec))


def test_a_reduction_across_parallel_blocks_is_an_error_when_deterministic(tmp_path):
    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, out, N, M):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              "        parir.label('M')\n"
                              "        for j in range(M):\n"
                              "            out[0] += x[i, j]\n", "across")
    args = [torch.ones(4, 64), torch.zeros(1), 4, 64]
    spec = {"N": parir.threads(4).reduce(), "M": parir.threads(64).reduce()}
    parir.print_compiled(m.f, args, parir.par(spec))  # atomically, by default
    with pytest.raises(parir.ParirError, match=r"deterministic=True.*line 4") as info:
        parir.print_compiled(m.f, args, fixed_order(spec))
    assert "across.py:6" in str(info.value)


@parir.jit
def weighted_columns(x, y, N, K, M):
    parir.label('N')
    for i in range(N):
        for k in range(K):
            parir.label('M')
            for j in range(M):
                y[i, k] += x[i, j] * k


def test_a_reduction_that_cannot_be_cut_is_an_error_when_deterministic():
    # Inside a sequential loop of its kernel the reduction stays in the kernel, where its
    # blocks could only combine atomically.
    args = [torch.ones(3, 5000), torch.zeros(3, 4), 3, 4, 5000]
    spec = {"N": parir.threads(3), "M": parir.threads(4096).reduce()}
    assert "atomic_combine" in parir.print_compiled(weighted_columns, args, parir.par(spec))
    with pytest.raises(parir.ParirError, match=r"deterministic=True, this reduction over 4 "
                                               r"blocks would combine atomically"):
        parir.print_compiled(weighted_columns, args, fixed_order(spec))
    spec["M"] = parir.threads(1024).reduce()  # one block: nothing to combine across blocks
    assert "atomic" not in parir.print_compiled(weighted_columns, args, fixed_order(spec))


def test_the_option_is_part_of_the_specialization():
    opts = fixed_order({"i": parir.threads(64).reduce()})
    assert opts.deterministic and not parir.CompileOptions().deterministic
    assert "deterministic" in parir.CompileOptions.__doc__


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 31, 33, 1000, 4097, 2 ** 20 + 7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64],
                         ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_fixed_order_reductions_match_torch(op, dtype, n, rng):
    x = data(op, n, dtype, "cuda", rng)
    init = initial(op, dtype)
    out = torch.full((1,), init, dtype=dtype, device="cuda")
    OPS[op](x, out, n, opts=fixed_order({"i": parir.threads(min(n, 65536)).reduce()}))
    check_reduction(out, reference(op, x, init), n)


@pytest.mark.gpu
def test_fixed_order_float_sums_repeat_bit_for_bit(rng):
    n = 10 ** 7
    x = (torch.rand(n, generator=rng, dtype=torch.float32) * 2 - 1).cuda()
    results = set()
    for _ in range(20):
        out = torch.zeros(1, device="cuda")
        total_sum(x, out, n, opts=fixed_order({"i": parir.threads(1 << 18).reduce()}))
        results.add(out.item())
    assert len(results) == 1
    torch.testing.assert_close(out[0].double(), x.double().sum(), rtol=1e-5, atol=1e-2)
    # Rows over several blocks, into a local and by a slice reduction.
    rows = torch.randn(37, 100_003, generator=rng).cuda()
    spec = {"N": parir.threads(37), "M": parir.threads(8192).reduce()}
    seen = set()
    for _ in range(10):
        sq, s = torch.full((37,), float("nan"), device="cuda"), torch.empty(37, device="cuda")
        norms_and_sums(rows, sq, s, 37, 100_003, opts=fixed_order(spec))
        seen.add((sq.cpu().numpy().tobytes(), s.cpu().numpy().tobytes()))
    assert len(seen) == 1
    check_close(sq, (rows.double() ** 2).sum(1), "squares")
    check_close(s, rows.double().sum(1), "sums")


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 33, 4097])
def test_fixed_order_row_sums_into_tensor_elements(m, rng):
    n = 5
    x = torch.randn(n, m, generator=rng).cuda()
    y = torch.full((n,), 0.5, device="cuda")
    sum_rows(x, y, n, m, opts=fixed_order({"N": parir.threads(n),
                                            "M": parir.threads(2048).reduce().tpb(256)}))
    check_close(y, 0.5 + x.double().sum(1), "sum_rows")
