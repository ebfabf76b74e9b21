"""Programs as users write them: helpers that take a row of a tensor (x[i], KE[0]) and index it,
helpers with statements in conditional expressions, one name reused for unrelated values (an
int index in one branch and a float in another; a loop variable in one loop and a local in
another), NumPy scalars.
Each program runs with seq=True and, on the CPU, through the compiler and NVRTC; on the GPU its
result is compared with the plain-Python run."""

import numpy as np
import pytest
import torch

import parir_torch as parir
from parir_torch import _C


@parir.jit
def add_inplace(x, y, M):
    parir.label("j")
    for j in range(M):
        x[j] += y[j]


@parir.jit
def add_rows(x, y, N, M):
    parir.label("i")
    for i in range(N):
        add_inplace(x[i], y[i], M)


def energy(pos, vel, KE, PE, N):
    # The caller passes rows of 2-D tensors: KE[0] here is an element of a row.
    parir.label("n")
    for n in range(N):
        KE[0] += 0.5 * vel[n] * vel[n]
    parir.label("n")
    for n in range(N):
        PE[0] += pos[n] * pos[n]


@parir.jit
def step_energies(pos, vel, KE, PE, N):
    energy(pos, vel, KE[0], PE[1], N)


@parir.jit
def shift_plane(img, k, N, M):
    parir.label("i")
    for i in range(N):
        scale_row(img[k, i, :], M)


def scale_row(row, M):
    for j in range(M):
        row[j] = row[j] * 2.0 + 1.0


def bump(v):
    w = v * 2.0
    if w > 1.0:
        w = 1.0
    return w + 0.5


@parir.jit
def pick(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = x[i] if x[i] < 0.0 else bump(x[i])


@parir.jit
def pick_logical(x, y, N):
    parir.label("i")
    for i in range(N):
        # bump() runs only where x[i] > 0 (and where it does not, for `or`), as in Python.
        a = x[i] > 0.0 and bump(x[i]) > 1.0
        b = x[i] > 0.0 or bump(x[i]) > 1.0
        y[i] = parir.float32(a) + 2.0 * parir.float32(b)


@parir.jit
def gather_or_zero(G, xyz, out, N):
    parir.label("i")
    for i in range(N):
        if xyz[i] >= 0:
            x = xyz[i] // 4
            out[i] = G[x]
        else:
            x = 0.0
            out[i] = x


@parir.jit
def diagonals(D, N):
    # j is a local in the first loop and a loop variable in the second.
    parir.label("i")
    for i in range(1, N):
        j = N - i
        D[i, j] = D[i - 1, j] + 1.0
    parir.label("i")
    for i in range(N):
        for j in range(1, N):
            D[i, j] = D[i, j] + D[i, j - 1] * 0.5


@parir.jit
def scale_by(x, y, g, N):
    parir.label("i")
    for i in range(N):
        y[i] = g * x[i] + g


@parir.jit
def row_sums(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = parir.sum(x[i, :])


def _cases(device, n=33, m=31):
    g = torch.Generator().manual_seed(5)
    r = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    return {
        "rows": (add_rows, lambda: [r(n, m), r(n, m), n, m], [0],
                 {"i": parir.threads(n), "j": parir.threads(m)}),
        "energies": (step_energies, lambda: [r(n), r(n), torch.zeros(2, 3, device=device),
                                             torch.zeros(2, 3, device=device), n], [2, 3],
                     {"n": parir.threads(n).reduce()}),
        "plane": (shift_plane, lambda: [r(3, n, m), 1, n, m], [0], {"i": parir.threads(n)}),
        "select": (pick, lambda: [r(n), torch.full((n,), float("nan"), device=device), n], [1],
                   {"i": parir.threads(n)}),
        "webs": (gather_or_zero, lambda: [r(4 * n), torch.randint(-20, 4 * n, (n,), generator=g)
                                          .to(device), torch.full((n,), float("nan"),
                                                                  device=device), n], [2],
                 {"i": parir.threads(n)}),
        "loop_var_and_local": (diagonals, lambda: [r(n, n), n], [0], {"i": parir.threads(n)}),
        "numpy_scalar": (scale_by, lambda: [r(n), torch.full((n,), float("nan"), device=device),
                                            np.float32(0.5), n], [1], {"i": parir.threads(n)}),
        # 200 int8 ones add up to 200 in int64 (as torch.sum does), not to -56 in int8.
        "int8_row_sums": (row_sums, lambda: [torch.ones(n, 200, dtype=torch.int8, device=device),
                                             torch.zeros(n, dtype=torch.int32, device=device),
                                             n], [1], {"i": parir.threads(n)}),
        "logical": (pick_logical, lambda: [r(n), torch.full((n,), float("nan"), device=device),
                                           n], [1], {"i": parir.threads(n)}),
    }


@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_compiles_and_runs_as_python(name):
    fn, make, outs, spec = _cases("cpu")[name]
    args = make()
    src = parir.print_compiled(fn, args, parir.par(spec))
    _C.nvrtc_compile(src, "sm_90")
    fn(*args, seq=True)


def test_integer_slice_sums_add_up_in_int64():
    x, y = torch.ones(3, 200, dtype=torch.int8), torch.zeros(3, dtype=torch.int32)
    src = parir.print_compiled(row_sums, [x, y, 3], parir.par({"i": parir.threads(3)}))
    assert "int64_t red1;" in src
    row_sums(x, y, 3, seq=True)
    assert y.tolist() == [200, 200, 200]


def test_a_view_argument_reads_the_callers_element():
    src = parir.print_compiled(add_rows, [torch.zeros(4, 5), torch.zeros(4, 5), 4, 5],
                               parir.par({"i": parir.threads(4), "j": parir.threads(5)}))
    assert "x[i * 5 + j_add_inplace] = (x[i * 5 + j_add_inplace] + y[i * 5 + j_add_inplace]);" in src


def test_a_view_indexed_by_a_slice_in_the_middle_is_explained():
    @parir.jit
    def bad(x, N):
        parir.label("i")
        for i in range(N):
            scale_row(x[:, i], N)

    with pytest.raises(parir.ParirError, match=r"indexed by integers in its leading dimensions"):
        parir.print_compiled(bad, [torch.zeros(4, 4), 4], parir.par({"i": parir.threads(4)}))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_gpu_matches_python(name):
    fn, make, outs, spec = _cases("cuda")[name]
    args = make()
    expected = [a.cpu().clone() if isinstance(a, torch.Tensor) else a for a in args]
    fn(*args, opts=parir.par(spec))
    fn(*expected, seq=True)
    for k in outs:
        torch.testing.assert_close(args[k].cpu(), expected[k], rtol=1e-5, atol=1e-5)
