"""Matrix products run in register tiles (CompileOptions.product_tiling): a kernel whose rows i
run over blocks and columns j over threads, accumulating over k loads of row i and of column j,
runs as 128 x 128 (or 64 x 64, 32 x 32) tiles of pairs whose chunks of k go through shared
memory, each thread updating up to 8 x 8 pairs from registers. Each pair still runs its k
iterations in order, so the results must be those of the kernel as written to the bit, of the
plain Python and of torch: for square and triangular column ranges, k ranges that are not a
multiple of the chunks, transposed and strided views, integer and float types, and updates that
are not products."""

import re

import numpy as np
import pytest
import torch

import parir_torch as parir


@parir.jit
def matmul(A, B, C, M, N, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@parir.jit
def int_matmul(A, B, C, M, N, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            acc = 0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@parir.jit
def covariance_upper(data, cov, M, N):
    # The upper triangle, mirrored into the lower one; both stores from one pair.
    parir.label('i')
    for i in range(M):
        parir.label('c')
        for j in range(i, M):
            t = 0.0
            for k in range(N):
                t += data[k, i] * data[k, j]
            cov[i, j] = t / (N - 1.0)
            cov[j, i] = t / (N - 1.0)


@parir.jit
def syrk_lower(alpha, beta, C, A, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(i + 1):
            s = 0.0
            for k in range(M):
                s += A[i, k] * A[j, k]
            C[i, j] = beta * C[i, j] + alpha * s


@parir.jit
def syr2k_lower(alpha, beta, C, A, B, N, M):
    # Four loads per k: two of row i and two of column j.
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(i + 1):
            s = 0.0
            for k in range(M):
                s += A[j, k] * B[i, k] + B[j, k] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * s


@parir.jit
def l1_distances(X, Y, D, n, m, d):
    # Not a product: the sum of absolute differences of every pair of rows.
    parir.label('rows')
    for a in range(n):
        parir.label('cols')
        for b in range(m):
            dist = 0.0
            for f in range(d):
                dist += abs(X[a, f] - Y[b, f])
            D[a, b] = dist


@parir.jit
def max_plus(A, B, C, M, N, K):
    # The tropical product; k runs over part of its range; the result is clipped below zero.
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            best = -1e30
            for k in range(2, K - 1):
                best = max(best, A[i, k] + B[k, j])
            if best > 0:
                C[i, j] = best
            else:
                C[i, j] = 0.0


@parir.jit
def trmm(alpha, A, B, T, M, N):
    # k runs over the part of the row below the diagonal of A; t starts from an element of B.
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(N):
            s = B[i, j]
            for k in range(i + 1, M):
                s += A[k, i] * B[k, j]
            T[i, j] = alpha * s


@parir.jit
def triangle_of_triangles(A, C, M):
    # Both the columns and the k range follow the row: left as written (a tile would copy
    # elements of A that no pair reads).
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(i + 1):
            t = 0.0
            for k in range(i, M):
                t += A[k, i] * A[k, j]
            C[i, j] = t


def _opts(tiling=True, **spec):
    opts = parir.par({name: parir.threads(n) for name, n in spec.items()})
    opts.product_tiling = tiling
    return opts


def _tiled(src):
    return re.search(r"__shared__ \w+ \w+_(rows|cols)\d*\[1024\];", src) is not None


def _meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


# ----- what the compiler does (no GPU) -------------------------------------------------------

def test_a_matrix_product_runs_in_tiles_of_128_by_128_with_8_by_8_pairs_per_thread():
    M, N, K = 2048, 2048, 512
    src = parir.print_compiled(matmul, [_meta(M, K), _meta(K, N), _meta(M, N), M, N, K],
                               _opts(i=M, j=N))
    assert _tiled(src)
    # 16 x 16 tiles of 128 x 128 pairs, 256 threads each; chunks of 8 k.
    assert "//@ launch matmul grid(256) block(256) (A, B, C)" in src
    assert len(re.findall(r"acc_tile\d+ = \(acc_tile\d+ \+", src)) == 64
    assert "k_chunk" in src and "+= 8)" in src
    # Two blocks per SM (at most 128 registers a thread); shared arrays that 16-byte loads read.
    assert "__launch_bounds__(256, 2) matmul(" in src
    assert len(re.findall(r"__align__\(16\) __shared__ float \w+\[1024\];", src)) == 2
    # A thread's 8 columns: 4 consecutive ones, then 4 more 64 further on, so that each group
    # is one 16-byte load; its 8 rows are consecutive.
    cols = re.findall(r"B_cols\d+\[k_in_chunk\d+ \* 128 \+ (.*?)\];", src)
    assert [c.split(" + ")[-1].rstrip(")") for c in cols] == ["0", "1", "2", "3", "64", "65", "66", "67"]
    # The first chunk is loaded into registers before the chunk loop, each next one before the
    # pairs are updated with the current one.
    before, loop = src[:src.index("k_chunk")], src[src.index("k_chunk"):]
    assert re.search(r"A_next\d+ = A\[", before) and re.search(r"B_next\d+ = B\[", before)
    assert re.search(r"A_next\d+ = A\[", loop).start() < loop.index("k_in_chunk")


def test_smaller_products_get_smaller_tiles_so_that_every_sm_has_work():
    # 600 x 600 lower triangle: 128-tiles would give 15 blocks with work, 64-tiles 55, 32-tiles
    # 190.
    src = parir.print_compiled(syrk_lower, [1.5, 1.2, _meta(600, 600), _meta(600, 500), 600, 500],
                               _opts(i=600, j=256))
    assert _tiled(src)
    assert len(re.findall(r"s_tile\d+ = \(s_tile\d+ \+", src)) == 4  # 2 x 2 pairs per thread
    assert "grid(361)" in src  # 19 x 19 tiles of 32


def test_kernels_that_are_not_plain_products_are_left_as_written():
    M = N = K = 256
    args = [_meta(M, K), _meta(K, N), _meta(M, N), M, N, K]
    assert not _tiled(parir.print_compiled(matmul, args, _opts(False, i=M, j=N)))
    # Too few rows for a tile.
    small = [_meta(16, K), _meta(K, N), _meta(16, N), 16, N, K]
    assert not _tiled(parir.print_compiled(matmul, small, _opts(i=16, j=N)))
    # Too few k iterations to pay for the copies.
    short = [_meta(M, 4), _meta(4, N), _meta(M, N), M, N, 4]
    assert not _tiled(parir.print_compiled(matmul, short, _opts(i=M, j=N)))


@parir.jit
def reads_its_own_output(A, C, M, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(M):
            t = 0.0
            for k in range(K):
                t += A[i, k] * C[k, j]  # C is written below: the tiles would read it stale
            C[i, j] = t


@parir.jit
def load_of_both(A, B, C, M, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(M):
            t = 0.0
            for k in range(K):
                t += A[i, k] * B[i + j, k]
            C[i, j] = t


def test_a_load_of_both_i_and_j_or_an_output_read_in_the_k_loop_is_left_as_written():
    M, K = 64, 64
    src = parir.print_compiled(reads_its_own_output, [_meta(M, K), _meta(M, M), M, K],
                               _opts(i=M, j=M))
    assert not _tiled(src)
    src = parir.print_compiled(load_of_both, [_meta(M, K), _meta(2 * M, K), _meta(M, M), M, K],
                               _opts(i=M, j=M))
    assert not _tiled(src)


def test_k_ranges_that_follow_the_row_are_tiled_only_when_the_columns_do_not():
    M, N = 600, 700
    src = parir.print_compiled(trmm, [1.5, _meta(M, M), _meta(M, N), _meta(M, N), M, N],
                               _opts(i=M, j=256))
    assert _tiled(src)
    # The tile's k range runs from its first row's; each row updates its pairs from its own.
    assert "k_first" in src and "if ((k >= (" in src
    src = parir.print_compiled(triangle_of_triangles, [_meta(M, M), _meta(M, M), M],
                               _opts(i=M, j=256))
    assert not _tiled(src)


@parir.jit
def basic_sgemm(m, n, k, alpha, A, B, C):
    # Parboil's basicSgemm (A and B column-major, B transposed): each load named first.
    parir.label('mm')
    for mm in range(m):
        parir.label('nn')
        for nn in range(n):
            c = 0.0
            for i in range(k):
                a = A[i, mm]
                b = B[i, nn]
                c += a * b
            C[nn, mm] = alpha * c


@parir.jit
def guarded_matmul(A, B, C):
    # Numba's matmul example, its threads' guard kept (the ranges make it always true).
    parir.label('i')
    for i in range(C.shape[0]):
        parir.label('j')
        for j in range(C.shape[1]):
            if i < C.shape[0] and j < C.shape[1]:
                tmp = 0.0
                for k in range(A.shape[1]):
                    tmp += A[i, k] * B[k, j]
                C[i, j] = tmp


@parir.jit
def named_value_read_after(A, B, C, D, M, K):
    parir.label('i')
    for i in range(M):
        parir.label('j')
        for j in range(M):
            t = 0.0
            a = 0.0
            for k in range(K):
                a = A[i, k]
                t += a * B[k, j]
            C[i, j] = t
            D[i, j] = a  # the last k's load: the tiles would not assign it


def test_loads_named_before_the_update_and_guards_the_ranges_decide_are_tiled():
    src = parir.print_compiled(basic_sgemm, [256, 256, 64, 1.5, _meta(64, 256), _meta(64, 256),
                                             _meta(256, 256)], _opts(mm=256, nn=256))
    assert _tiled(src)
    src = parir.print_compiled(guarded_matmul, [_meta(256, 64), _meta(64, 256), _meta(256, 256)],
                               _opts(i=256, j=256))
    assert _tiled(src)
    src = parir.print_compiled(named_value_read_after,
                               [_meta(64, 64), _meta(64, 64), _meta(64, 64), _meta(64, 64), 64, 64],
                               _opts(i=64, j=64))
    assert not _tiled(src)


# ----- results on the GPU ---------------------------------------------------------------------

def _bits(t):
    return t.view({4: torch.int32, 8: torch.int64}[t.element_size()])


def _same_as_untiled(fn, make_args, spec, outputs):
    """Runs fn tiled and untiled on the same inputs; returns the tiled outputs after checking
    that they have the bits of the untiled ones."""
    runs = []
    for tiling in (True, False):
        args = make_args()
        fn(*args, opts=_opts(tiling, **spec))
        runs.append([args[o] for o in outputs])
    for tiled, plain in zip(*runs):
        assert torch.equal(_bits(tiled), _bits(plain))
    return runs[0]


def _rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.rand(*shape, generator=g, device="cuda", dtype=dtype) * 2 - 1


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(32, 32, 8), (33, 65, 13), (130, 129, 1001), (1000, 257, 64),
                                   (2048, 1031, 300)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matmul_matches_torch_and_the_untiled_kernel(M, N, K, dtype):
    A, B = _rand(M, K, dtype=dtype, seed=1), _rand(K, N, dtype=dtype, seed=2)

    def make():
        return [A, B, torch.full((M, N), float("nan"), device="cuda", dtype=dtype), M, N, K]

    (C,) = _same_as_untiled(matmul, make, dict(i=M, j=N), [2])
    torch.testing.assert_close(C, A @ B, rtol=1e-5 if dtype == torch.float32 else 1e-12,
                               atol=1e-4 if dtype == torch.float32 else 1e-12)


@pytest.mark.gpu
def test_transposed_and_strided_views_are_read_through_their_strides():
    M, N, K = 200, 300, 77
    At = _rand(K, M, seed=3).t()              # A[i, k] walks k with stride M
    Bs = _rand(K, 2 * N, seed=4)[:, ::2]      # every other column
    def make():
        return [At, Bs, torch.zeros(M, N, device="cuda"), M, N, K]

    (C,) = _same_as_untiled(matmul, make, dict(i=M, j=N), [2])
    torch.testing.assert_close(C, At @ Bs, rtol=1e-5, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (100, 37, 1000)])
def test_integer_products_are_exact(M, N, K):
    g = torch.Generator(device="cuda").manual_seed(5)
    A = torch.randint(-50, 50, (M, K), generator=g, device="cuda", dtype=torch.int32)
    B = torch.randint(-50, 50, (K, N), generator=g, device="cuda", dtype=torch.int32)

    def make():
        return [A, B, torch.zeros(M, N, device="cuda", dtype=torch.int32), M, N, K]

    (C,) = _same_as_untiled(int_matmul, make, dict(i=M, j=N), [2])
    assert torch.equal(C.cpu(), (A.cpu().long() @ B.cpu().long()).int())


@pytest.mark.gpu
@pytest.mark.parametrize("M,N", [(33, 40), (500, 600), (3200, 400)])
def test_covariance_fills_both_triangles(M, N):
    data = _rand(N, M, seed=6)

    def make():
        return [data, torch.full((M, M), float("nan"), device="cuda"), M, N]

    (cov,) = _same_as_untiled(covariance_upper, make, dict(i=M, c=min(M, 256)), [1])
    torch.testing.assert_close(cov, data.T @ data / (N - 1.0), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("N,M", [(70, 50), (600, 500), (1025, 31)])
def test_syrk_and_syr2k_update_the_lower_triangle_only(N, M):
    A, B, C0 = _rand(N, M, seed=7), _rand(N, M, seed=8), _rand(N, N, seed=9)
    lower = torch.tril(torch.ones(N, N, device="cuda", dtype=torch.bool))

    (C,) = _same_as_untiled(syrk_lower, lambda: [1.5, 1.2, C0.clone(), A, N, M],
                            dict(i=N, j=256), [2])
    ref = torch.where(lower, 1.2 * C0 + 1.5 * (A @ A.T), C0)
    torch.testing.assert_close(C, ref, rtol=1e-4, atol=1e-4)

    (C,) = _same_as_untiled(syr2k_lower, lambda: [1.5, 1.2, C0.clone(), A, B, N, M],
                            dict(i=N, j=256), [2])
    ref = torch.where(lower, 1.2 * C0 + 1.5 * (A @ B.T + B @ A.T), C0)
    torch.testing.assert_close(C, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N", [(40, 33), (600, 700), (1000, 2000)])
def test_trmm_with_k_ranges_that_follow_the_row(M, N):
    A, B0 = _rand(M, M, seed=16), _rand(M, N, seed=17)

    def make():
        return [1.5, A, B0, torch.full((M, N), float("nan"), device="cuda"), M, N]

    (T,) = _same_as_untiled(trmm, make, dict(i=M, j=256), [3])
    ref = 1.5 * (B0 + torch.tril(A, -1).T @ B0)
    torch.testing.assert_close(T, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_updates_that_are_not_products():
    n, m, d = 300, 129, 19
    X, Y = _rand(n, d, seed=10), _rand(m, d, seed=11)
    (D,) = _same_as_untiled(l1_distances,
                            lambda: [X, Y, torch.zeros(n, m, device="cuda"), n, m, d],
                            dict(rows=n, cols=m), [2])
    torch.testing.assert_close(D, torch.cdist(X, Y, p=1), rtol=1e-5, atol=1e-5)

    M, N, K = 65, 250, 40
    A, B = _rand(M, K, seed=12), _rand(K, N, seed=13)
    (C,) = _same_as_untiled(max_plus, lambda: [A, B, torch.full((M, N), 7.0, device="cuda"),
                                              M, N, K], dict(i=M, j=N), [2])
    ref = (A[:, 2:K - 1, None] + B[None, 2:K - 1, :]).amax(dim=1).clamp(min=0)
    torch.testing.assert_close(C, ref)


@pytest.mark.gpu
def test_matches_plain_python_with_numpy_scalars():
    M, N, K = 40, 35, 9
    A, B = _rand(M, K, seed=14), _rand(K, N, seed=15)
    C = torch.zeros(M, N, device="cuda")
    matmul(A, B, C, np.int64(M), np.int32(N), K, opts=_opts(i=M, j=N))
    Cs = torch.zeros(M, N)
    matmul(A.cpu(), B.cpu(), Cs, M, N, K, seq=True)
    torch.testing.assert_close(C.cpu(), Cs, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_named_loads_and_guarded_products_match_torch():
    m, n, k = 300, 257, 70
    A, B = _rand(k, m, seed=1), _rand(k, n, seed=2)
    C = torch.full((n, m), float("nan"), device="cuda")
    basic_sgemm(m, n, k, 1.5, A, B, C, opts=_opts(mm=m, nn=n))
    torch.testing.assert_close(C, 1.5 * (B.double().T @ A.double()).float(), rtol=1e-4, atol=1e-4)
    A, B = _rand(300, 70, seed=3), _rand(70, 257, seed=4)
    C = torch.full((300, 257), float("nan"), device="cuda")
    guarded_matmul(A, B, C, opts=_opts(i=300, j=257))
    torch.testing.assert_close(C, (A.double() @ B.double()).float(), rtol=1e-4, atol=1e-4)
