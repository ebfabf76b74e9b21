"""Memory safety: accesses checked against the shapes the code is specialized for.

At compile time (no GPU needed) an access that is certainly out of bounds is an error naming the
tensor, the dimension, the index's range and the extent. With CompileOptions.bounds_check (or
debug=True) the accesses the compiler could not prove in bounds are checked at run time: the
first violation is skipped and raised as a ParirError after the launch, and the process's CUDA
context stays usable (GPU tests)."""

import re

import pytest
import torch

import parir_torch as parir
from parir_torch import _C

gpu = pytest.mark.gpu


@parir.jit
def axpy(a, x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = a * x[i] + y[i]


@parir.jit
def row_sums(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i] += x[i, j]


@parir.jit
def gather(x, idx, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = x[idx[i]]


@parir.jit
def scatter(x, idx, out, N):
    parir.label('i')
    for i in range(N):
        out[idx[i]] = x[i]


def spec(**labels):
    return parir.par({k: parir.threads(v) for k, v in labels.items()})


# ----- compile time ---------------------------------------------------------------------------

def test_a_loop_longer_than_its_tensors_is_an_error_naming_the_access():
    x, y = torch.ones(10), torch.ones(10)
    with pytest.raises(parir.ParirError) as info:
        parir.print_compiled(axpy, [2.0, x, y, 1000], spec(i=1000))
    msg = str(info.value)
    assert "test_bounds.py:" in msg
    assert "`y[i]`: i runs over [0, 1000) but y has 10 elements (dimension 0)" in msg


def test_an_output_shorter_than_the_rows_is_an_error():
    x, out = torch.ones(100, 8), torch.zeros(7)
    with pytest.raises(parir.ParirError, match=re.escape(
            "`out[i]`: i runs over [0, 100) but out has 7 elements (dimension 0)")):
        parir.print_compiled(row_sums, [x, out, 100, 8],
                             parir.par({'N': parir.threads(100),
                                        'M': parir.threads(32).reduce()}))


def test_the_call_raises_before_any_launch():
    # The error comes from the compiler, so it needs no GPU: CPU tensors are compiled for before
    # they would be copied.
    with pytest.raises(parir.ParirError, match=r"y has 10 elements"):
        axpy(2.0, torch.ones(10), torch.ones(10), 11, opts=spec(i=11))


def test_far_out_of_bounds_constant_offsets_are_errors():
    @parir.jit
    def far(x, y, N):
        parir.label('i')
        for i in range(N):
            y[i] = x[i + 1000000000]

    with pytest.raises(parir.ParirError, match=r"the index i \+ 1000000000 runs over "
                                               r"\[1000000000, 1000000100\)"):
        parir.print_compiled(far, [torch.ones(100), torch.ones(100), 100], spec(i=100))


@parir.jit
def shift_back(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[i - 1]  # x[-1] is the last element, as in Python


@parir.jit
def shift_back_too_far(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[i - 51]


def test_python_negative_indices_count_from_the_end():
    parir.print_compiled(shift_back, [torch.ones(50), torch.ones(50), 50], spec(i=50))
    with pytest.raises(parir.ParirError, match=r"the index i - 51 runs over \[-51, -1\) but x "
                                               r"has 50 elements \(dimension 0\); negative "
                                               r"indices count from the end, down to -50"):
        parir.print_compiled(shift_back_too_far, [torch.ones(50), torch.ones(50), 50],
                             spec(i=50))


def test_data_dependent_indices_are_left_to_run_time():
    x, idx, out = torch.ones(10), torch.zeros(10, dtype=torch.int64), torch.zeros(10)
    src = parir.print_compiled(gather, [x, idx, out, 10], spec(i=10))
    assert "in_bounds" not in src  # no checks unless asked for
    opts = spec(i=10)
    opts.bounds_check = True
    src = parir.print_compiled(gather, [x, idx, out, 10], opts)
    # Only x's data-dependent index is checked: idx[i] and out[i] are proved in bounds.
    assert src.count("parir::in_bounds(") == 1, src
    assert "parir::checked_load(x," in src
    assert "parir::BoundsError* parir_bounds" in src
    assert re.search(r"//@ check 1 gather x 0 10 \d+ .*test_bounds\.py", src), src
    assert "(idx, out, x, @bounds)" in src or "@bounds)" in src
    for arch in ("sm_90", "compute_90"):
        binary, _, log = _C.nvrtc_compile(src, arch)
        assert len(binary) > 100, log


def test_checked_writes_are_guarded():
    opts = spec(i=10)
    opts.bounds_check = True
    src = parir.print_compiled(scatter, [torch.ones(10), torch.zeros(10, dtype=torch.int64),
                                         torch.zeros(10), 10], opts)
    assert re.search(r"if \(parir::in_bounds\(parir_bounds, 1, idx\[i\], 10\)\) out\[", src), src
    binary, _, log = _C.nvrtc_compile(src, "sm_90")
    assert len(binary) > 100, log


def test_a_plan_with_checks_parses_back():
    opts = spec(i=10)
    opts.bounds_check = True
    src = parir.print_compiled(gather, [torch.ones(10), torch.zeros(10, dtype=torch.int64),
                                        torch.zeros(10), 10], opts)
    program = _C.Program(src)
    assert program.function == "gather"


def test_scatter_into_data_chosen_elements_warns_of_a_race():
    with pytest.warns(parir.ParirWarning, match=r"write to 'out' inside a parallel loop goes to "
                                                r"an element chosen by data"):
        parir.print_compiled(scatter, [torch.ones(12), torch.zeros(12, dtype=torch.int64),
                                       torch.zeros(12), 12], spec(i=12))


# ----- run time -------------------------------------------------------------------------------

@gpu
def test_an_out_of_bounds_read_is_skipped_and_reported_and_the_next_call_works():
    n = 1000
    x = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    idx = torch.randint(0, n, (n,), device="cuda")
    idx[417] = n + 5  # one bad index
    opts = spec(i=n)
    opts.bounds_check = True
    with pytest.raises(parir.ParirError) as info:
        gather(x, idx, out, n, opts=opts)
    msg = str(info.value)
    assert "test_bounds.py:" in msg and f"index {n + 5} of 'x' (dimension 0)" in msg, msg
    assert f"has {n} elements" in msg and "gather" in msg
    # The context is alive: the same call with good indices returns the right answer.
    idx[417] = 3
    gather(x, idx, out, n, opts=opts)
    torch.testing.assert_close(out, x[idx])
    # And plain torch still works on the device.
    assert torch.isfinite((x * 2).sum()).item()


@gpu
def test_an_out_of_bounds_write_is_skipped():
    n = 257
    guard = torch.zeros(4 * n, device="cuda")  # the output is a view inside a larger buffer
    out = guard[n:2 * n]
    x = torch.randn(n, device="cuda")
    idx = torch.arange(n, device="cuda")
    idx[0] = n  # would write guard[2n]
    opts = spec(i=n)
    opts.bounds_check = True
    with pytest.raises(parir.ParirError, match=r"index 257 of 'out'"):
        scatter(x, idx, out, n, opts=opts)
    torch.cuda.synchronize()
    assert guard[2 * n] == 0 and guard[:n].abs().sum() == 0 and guard[2 * n:].abs().sum() == 0
    torch.testing.assert_close(out[1:], x[1:])


@gpu
def test_debug_turns_bounds_checks_on(capsys):
    n = 64
    x = torch.randn(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    idx = torch.full((n,), -n - 1, device="cuda", dtype=torch.int64)
    with pytest.raises(parir.ParirError, match=r"index -65 of 'x'"):
        gather(x, idx, out, n, opts=spec(i=n), debug=True)
    capsys.readouterr()
    # A plain call afterwards is not checked (and not slowed): its code is cached apart.
    idx.fill_(2)
    gather(x, idx, out, n, opts=spec(i=n))
    torch.testing.assert_close(out, x[idx])


@gpu
def test_negative_indices_pass_the_checks():
    n = 100
    x = torch.randn(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    idx = -torch.arange(1, n + 1, device="cuda")
    opts = spec(i=n)
    opts.bounds_check = True
    gather(x, idx, out, n, opts=opts)
    torch.testing.assert_close(out, x[idx])


@parir.jit
def shift_right(x, y, lo, N):
    parir.label('i')
    for i in range(lo, N):
        y[i] = x[i - 1]


def test_an_index_that_cannot_be_negative_is_not_wrapped():
    # From 1, i - 1 never counts from the end; from 0, its first value does (x[-1]).
    x, y = torch.empty(50), torch.empty(50)
    text = parir.print_compiled(shift_right, (x, y, 1, 50), opts=spec(i=49))
    assert "< 0L" not in text
    text = parir.print_compiled(shift_right, (x, y, 0, 50), opts=spec(i=50))
    assert "< 0L" in text


@gpu
def test_an_index_from_the_end_still_wraps():
    x = torch.randn(50, device="cuda")
    for lo in (0, 1):
        y = torch.full((50,), float("nan"), device="cuda")
        shift_right(x, y, lo, 50, opts=spec(i=50 - lo))
        ref = torch.roll(x, 1)
        torch.testing.assert_close(y[lo:], ref[lo:])
