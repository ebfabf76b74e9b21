"""parir.check and CompileOptions.check: the kernels against the plain Python function.

Without a GPU: the option, argument validation, the error without a GPU, the comparison and the
CPU copies, and the whole check with a stand-in for the kernels (a Python function playing the
GPU's part). With a GPU (marker `gpu`): correct programs pass; a wrong parallel specification
(a reduction run without .reduce(), so its threads race) and a NaN only the GPU produces are
reported with the tensor, an index and both values."""

import math
import re
import types

import pytest
import torch

import parir_torch as parir
from parir_torch import checking
from parir_torch.options import FIELDS, as_constants, from_constants, options_key
from conftest import HAS_GPU


# ----- programs --------------------------------------------------------------------------------

from reduction_programs import sum_rows  # noqa: E402  (y[i] += x[i, j], rows over 'N')


@parir.jit
def total(x, y, N):
    parir.label('i')
    for i in range(N):
        y[0] += x[i]


@parir.jit
def axpy_dict(d, a, N):
    parir.label('i')
    for i in range(N):
        d['out'][i] = a * d['x'][i] + d['y'][i]


@parir.jit
def double_in_place(x, N):
    parir.label('i')
    for i in range(N):
        x[i] = x[i] * 2.0


@parir.jit
def count_above(x, c, N):
    parir.label('i')
    for i in range(N):
        if x[i] > 0.5:
            c[0] += 1


@parir.external("__fsqrt_rn", parir.CompileBackend.Cuda, parir.Target.Device)
def root(v: parir.float32) -> parir.float32:
    return abs(v) ** 0.5  # unlike the GPU's square root, finite for negative v


@parir.jit
def roots(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = root(x[i])


def spec(**labels):
    return parir.par({k: parir.threads(v) for k, v in labels.items()})


# ----- the option ------------------------------------------------------------------------------

def test_check_is_an_option_outside_the_specialization_key():
    field = next(f for f in FIELDS if f.name == "check")
    assert field.default is False and not field.key and field.cpp is None
    opts = spec(i=10)
    key = options_key(opts)
    opts.check = True
    assert options_key(opts) == key
    assert from_constants(as_constants(opts)).check is True
    assert parir.CompileOptions(check=True).check is True
    assert "check" in parir.CompileOptions.__doc__


def test_the_gpu_tests_programs_compile_without_a_gpu():
    """What the GPU tests below run, through NVRTC: the racy loops are plain loads and stores,
    and the external is the GPU's square root."""
    n = 100_000
    x = torch.zeros(n)
    for fn, args, opts in [
            (total, [x, torch.zeros(1), n], spec(i=n)),
            (total, [x, torch.zeros(1), n], parir.par({'i': parir.threads(n).reduce()})),
            (count_above, [x, torch.zeros(1, dtype=torch.int32), n], spec(i=n)),
            (count_above, [x, torch.zeros(1, dtype=torch.int32), n],
             parir.par({'i': parir.threads(n).reduce()})),
            (roots, [x, x, n], spec(i=n))]:
        src = parir.print_compiled(fn, args, opts)
        binary, _, _ = parir._C.nvrtc_compile(src, "sm_90")
        assert len(binary) > 100
        if not opts.parallelize['i'].is_reduction:
            assert "parir::atomic" not in src and "block_reduce" not in src
    assert "__fsqrt_rn(x[i])" in parir.print_compiled(roots, [x, x, n], spec(i=n))


# ----- validation, without a GPU ---------------------------------------------------------------

def test_check_takes_a_jit_function():
    def plain(x, N):
        pass

    with pytest.raises(parir.ParirTypeError, match="parir.check takes a @parir.jit function"):
        parir.check(plain, torch.zeros(3), 3)


def test_check_validates_its_options_and_tolerances():
    x, y = torch.zeros(10), torch.zeros(1)
    with pytest.raises(parir.ParirTypeError, match=r"got a dict.*parir\.par"):
        parir.check(total, x, y, 10, opts={'i': 10})
    opts = spec(i=10)
    opts.seq = True
    with pytest.raises(parir.ParirValueError, match="opts.seq=True there are no kernels"):
        parir.check(total, x, y, 10, opts=opts)
    with pytest.raises(parir.ParirValueError, match="rtol must be >= 0"):
        parir.check(total, x, y, 10, opts=spec(i=10), rtol=-1.0)
    with pytest.raises(parir.ParirValueError, match="atol must be >= 0"):
        parir.check(total, x, y, 10, opts=spec(i=10), atol=math.nan)
    with pytest.raises(parir.ParirTypeError, match="atol must be a number"):
        parir.check(total, x, y, 10, opts=spec(i=10), atol="1e-3")


def test_check_validates_the_arguments_before_running():
    x, y = torch.zeros(10), torch.zeros(1)
    with pytest.raises(parir.ParirTypeError, match=r"takes 3 arguments \(x, y, N\) but 2"):
        parir.check(total, x, y, opts=spec(i=10))
    with pytest.raises(parir.ParirTypeError, match="argument 'N' is a builtins.str"):
        parir.check(total, x, y, "10", opts=spec(i=10))
    with pytest.raises(parir.ParirTypeError, match="argument 'x' is a tensor of layout"):
        parir.check(total, x.to_sparse(), y, 10, opts=spec(i=10))
    with pytest.raises(parir.ParirError, match="argument 'x' is a tensor on the meta device"):
        parir.check(total, x.to("meta"), y, 10, opts=spec(i=10))


@pytest.mark.skipif(HAS_GPU, reason="checks the error without a GPU")
def test_check_without_a_gpu_says_so_and_leaves_the_tensors_alone():
    x, y = torch.ones(10), torch.full((1,), 7.0)
    with pytest.raises(parir.ParirError, match="finds no CUDA GPU here; seq=True runs"):
        parir.check(total, x, y, 10, opts=spec(i=10))
    opts = spec(i=10)
    opts.check = True
    with pytest.raises(parir.ParirError, match="finds no CUDA GPU here"):
        total(x, y, 10, opts=opts)
    assert y.item() == 7.0


def test_seq_wins_over_check():
    x, y = torch.ones(10), torch.zeros(1)
    opts = spec(i=10)
    opts.check = opts.seq = True
    total(x, y, 10, opts=opts)  # runs the Python alone: no GPU needed
    assert y.item() == 10.0


# ----- the whole check, with a stand-in for the kernels ------------------------------------------

class FakeJit:
    """Plays a jit function for checking.check_call: `gpu` stands in for its kernels."""

    __parir_jit__ = True

    def __init__(self, fn, gpu):
        self.fn = fn.fn
        self.ir = types.SimpleNamespace(name=fn.ir.name, params=fn.ir.params)
        self.gpu = gpu
        self.calls = []

    def __call__(self, *args, opts=None, debug=False):
        assert not opts.check
        self.calls.append(opts)
        self.gpu(*args)


@pytest.fixture
def gpu_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def racy_total(x, y, n):
    y[0] += x[n - 1]  # what the race leaves: one thread's update


def test_a_race_is_reported_with_tensor_index_and_values(gpu_present):
    n = 50
    x = torch.arange(n, dtype=torch.float32)
    y = torch.zeros(1)
    fake = FakeJit(total, racy_total)
    with pytest.raises(parir.ParirError) as info:
        parir.check(fake, x, y, n, opts=spec(i=n))
    msg = str(info.value)
    assert re.search(r"total\(\) on the GPU and as plain Python differ at y\[0\]: the GPU "
                     r"gives 49, the plain Python run gives 1225 \(float32; allowed difference",
                     msg), msg
    assert "1 of 1 element of y differs" in msg and ".reduce()" in msg
    e = info.value
    assert (e.argument, e.index, e.gpu_value, e.python_value) == ("y", (0,), 49.0, 1225.0)
    assert e.python_results["y"].item() == 1225.0 and e.python_results["x"].equal(x)
    assert y.item() == 49.0  # the caller's tensors hold the GPU's results
    assert x.equal(torch.arange(n, dtype=torch.float32))


def test_a_correct_program_passes_and_leaves_the_gpu_results(gpu_present):
    def gpu(x, y, n):
        y[0] += x.sum()

    x = torch.rand(1000, generator=torch.Generator().manual_seed(0))
    y = torch.full((1,), 2.0)
    fake = FakeJit(total, gpu)
    parir.check(fake, x, y, 1000, opts=spec(i=1000))
    assert y.item() == pytest.approx(2.0 + x.double().sum().item(), rel=1e-6)
    assert len(fake.calls) == 1 and fake.calls[0].parallelize == spec(i=1000).parallelize


@parir.jit
def weighted_copy(x, y, N, w=None):
    parir.label('i')
    for i in range(N):
        y[i] = x[i] * (w[i] if w is not None else 2.0)


def test_parameters_left_out_take_their_defaults_in_both_runs(gpu_present):
    def gpu(x, y, n, w):
        assert w is None  # the default, passed to the kernels too
        y[:] = x * 2.0

    x, y = torch.rand(33, generator=torch.Generator().manual_seed(1)), torch.zeros(33)
    fake = FakeJit(weighted_copy, gpu)
    parir.check(fake, x, y, 33, opts=spec(i=33))
    torch.testing.assert_close(y, x * 2.0)


def test_the_python_run_starts_from_the_inputs_before_the_launch(gpu_present):
    def gpu(x, n):
        x.mul_(2.0)

    x = torch.arange(5, dtype=torch.float32)
    parir.check(FakeJit(double_in_place, gpu), x, 5, opts=spec(i=5))
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]  # doubled once


def test_dict_entries_are_named_as_in_the_code(gpu_present):
    def gpu(d, a, n):
        d['out'][:] = a * d['x'] + d['y']
        d['out'][3] = 0.0

    d = {'x': torch.arange(6.0), 'y': torch.ones(6), 'out': torch.zeros(6)}
    with pytest.raises(parir.ParirError,
                       match=r"differ at d\['out'\]\[3\]: the GPU gives 0, the plain Python run "
                             r"gives 7 .*1 of 6 elements of d\['out'\] differs"):
        parir.check(FakeJit(axpy_dict, gpu), d, 2.0, 6, opts=spec(i=6))
    assert d['out'][3].item() == 0.0


def test_nan_from_the_gpu_alone_is_reported(gpu_present):
    def gpu(x, y, n):
        y.copy_(x.sqrt())

    x = torch.tensor([4.0, 1.0, -9.0, 16.0, -1.0])
    y = torch.zeros(5)
    with pytest.raises(parir.ParirError,
                       match=r"differ at y\[2\]: the GPU gives nan where the plain Python run "
                             r"gives the finite value 3\. 2 of 5 elements of y differ, 2 of them "
                             r"NaN or infinite on the GPU only"):
        parir.check(FakeJit(roots, gpu), x, y, 5, opts=spec(i=5))


def test_an_error_of_the_python_run_is_reported(gpu_present):
    @parir.jit
    def shifted(x, y, N):
        parir.label('i')
        for i in range(N):
            y[i] = x[i + 1]

    x, y = torch.ones(4), torch.zeros(4)
    fake = FakeJit(shifted, lambda x, y, n: None)
    with pytest.raises(parir.ParirError, match="the plain Python run of the check raised "
                                               "IndexError") as info:
        parir.check(fake, x, y, 4, opts=spec(i=4))
    assert isinstance(info.value.__cause__, IndexError)


def test_scalars_and_numpy_arrays_reach_the_python_run_as_given(gpu_present):
    np = pytest.importorskip("numpy")

    def gpu(d, a, n):
        d['out'][:] = (float(a) * torch.from_numpy(d['x']) + d['y']).numpy()

    d = {'x': np.arange(4, dtype=np.float32), 'y': torch.ones(4), 'out': np.zeros(4, np.float32)}
    parir.check(FakeJit(axpy_dict, gpu), d, np.float32(3.0), 4, opts=spec(i=4))
    assert d['out'].tolist() == [1.0, 4.0, 7.0, 10.0]  # the GPU's results, in the caller's array


# ----- comparison ------------------------------------------------------------------------------

def differ(gpu, python, **tol):
    """The message of compare() for one tensor `t`, or None when it passes."""
    try:
        checking.compare("f", [("t", gpu, python)], **tol)
    except parir.ParirError as e:
        return str(e)
    return None


def test_integers_and_bools_compare_exactly():
    for dtype in (torch.int8, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32):
        a = torch.tensor([1, 2, 3], dtype=dtype)
        assert differ(a, a.clone()) is None
        msg = differ(a, torch.tensor([1, 2, 4], dtype=dtype))
        assert f"t[2]: the GPU gives 3, the plain Python run gives 4 ({str(dtype)[6:]}, " \
               f"compared exactly)" in msg, msg
    big = torch.tensor([2 ** 64 - 1, 5], dtype=torch.uint64)
    assert differ(big, big.clone()) is None
    assert "t[0]: the GPU gives 18446744073709551615, the plain Python run gives 1" in differ(
        big, torch.tensor([1, 5], dtype=torch.uint64))
    assert "the GPU gives True, the plain Python run gives False" in differ(
        torch.tensor([True]), torch.tensor([False]))


def test_float_tolerances_follow_the_dtype():
    for dtype, (rtol, atol) in checking.TOLERANCES.items():
        p = torch.tensor([1.0, 100.0], dtype=dtype)
        inside = p.double() + torch.tensor([0.0, 0.5 * rtol * 100.0], dtype=torch.float64)
        assert differ(inside.to(dtype), p) is None, dtype
        outside = p.double() + torch.tensor([2 * (rtol + atol) * 100.0, 0.0])
        msg = differ(outside.to(dtype), p)
        assert msg is not None and "differ at t[0]" in msg and "allowed difference" in msg
    # float32: 1e-4 relative, plus 1e-3 of the tensor's largest value for elements near 0.
    p = torch.tensor([1000.0, 0.001])
    assert differ(torch.tensor([1000.09, 0.5]), p) is None
    assert "differ at t[1]" in differ(torch.tensor([1000.0, 1.2]), p)
    # Explicit tolerances replace the table.
    assert differ(torch.tensor([1.5]), torch.tensor([1.0]), rtol=0.6, atol=0.0) is None
    assert differ(torch.tensor([1.0 + 1e-6]), torch.tensor([1.0]), rtol=0.0, atol=0.0)


def test_nan_and_infinity():
    nan, inf = math.nan, math.inf
    assert differ(torch.tensor([nan, inf, -inf]), torch.tensor([nan, inf, -inf])) is None
    msg = differ(torch.tensor([1.0, inf]), torch.tensor([1.0, 2.0]))
    assert "t[1]: the GPU gives inf where the plain Python run gives the finite value 2" in msg
    assert "1 of 2 elements of t differs, 1 of them NaN or infinite on the GPU only" in msg
    msg = differ(torch.tensor([1.0]), torch.tensor([nan]))
    assert "t[0]: the GPU gives 1, the plain Python run gives nan" in msg
    assert differ(torch.tensor([inf]), torch.tensor([-inf])) is not None


def test_values_are_shown_as_their_dtype_would_print_them():
    msg = differ(torch.tensor([0.1]), torch.tensor([0.2]))
    assert "the GPU gives 0.1, the plain Python run gives 0.2" in msg
    msg = differ(torch.tensor([0.1], dtype=torch.float64), torch.tensor([0.2], dtype=torch.float64))
    assert "the GPU gives 0.1, the plain Python run gives 0.2" in msg
    msg = differ(torch.tensor([0.1], dtype=torch.float16), torch.tensor([0.2], dtype=torch.float16))
    assert "the GPU gives 0.1, the plain Python run gives 0.2 (float16" in msg


def test_first_element_in_index_order_and_other_tensors():
    g = torch.zeros(3, 4, dtype=torch.int32)
    p = g.clone()
    p[2, 1] = p[1, 3] = 5
    with pytest.raises(parir.ParirError) as info:
        checking.compare("f", [("a", g[0], g[0].clone()), ("b", g, p),
                               ("c", torch.ones(2), torch.zeros(2))])
    msg = str(info.value)
    assert "differ at b[1, 3]:" in msg and "2 of 12 elements of b differ" in msg, msg
    assert "other tensors that differ: c (2 elements)" in msg
    assert info.value.index == (1, 3)
    msg = differ(torch.tensor(1.0), torch.tensor(2.0))
    assert "differ at t (0-d): the GPU gives 1, the plain Python run gives 2" in msg


# ----- CPU copies ------------------------------------------------------------------------------

def test_copies_are_taken_now_with_shape_and_strides():
    x = torch.arange(12.0).reshape(3, 4).t()
    (c,) = checking.cpu_copies([x])
    assert c.equal(x) and c.stride() == x.stride()
    x.zero_()
    assert c[1, 2].item() == 9.0


def test_copies_keep_aliasing_between_arguments():
    base = torch.arange(10, dtype=torch.float32)
    a, b, bits = base[1:], base[:-1], base[2:6].view(torch.int32)
    ca, cb, cbits = checking.cpu_copies([a, b, bits])
    assert ca.equal(a) and cb.equal(b) and cbits.equal(bits)
    ca[0] = 100.0  # base[1]
    assert cb[1].item() == 100.0 and base[1].item() == 1.0
    cb[3] = 0.5  # base[3]
    assert cbits[1].item() == torch.tensor([0.5]).view(torch.int32).item()


def test_copies_of_views_of_a_large_tensor_copy_what_they_span():
    big = torch.zeros(1 << 20)
    (c,) = checking.cpu_copies([big[1000:1010]])
    assert c.untyped_storage().nbytes() <= 10 * 4 + 16
    expanded = torch.tensor([3.0]).expand(5)
    empty = torch.zeros(0, 3)
    ce, c0 = checking.cpu_copies([expanded, empty])
    assert ce.tolist() == [3.0] * 5 and ce.stride() == (0,) and c0.shape == (0, 3)


# ----- with a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
def test_correct_programs_pass(rng):
    n, m = 100, 517
    x = torch.randn(n, m, generator=rng).cuda()
    y = torch.zeros(n, device="cuda")
    parir.check(sum_rows, x, y, n, m,
                opts=parir.par({'N': parir.threads(n), 'M': parir.threads(256).reduce()}))
    torch.testing.assert_close(y, x.sum(1), rtol=1e-4, atol=1e-4)  # the GPU's results
    d = {'x': torch.randn(1000, generator=rng), 'y': torch.randn(1000, generator=rng).cuda(),
         'out': torch.full((1000,), math.nan)}  # CPU tensors too: copied to the GPU and back
    parir.check(axpy_dict, d, 2.5, 1000, opts=spec(i=1000))
    torch.testing.assert_close(d['out'], 2.5 * d['x'] + d['y'].cpu())


@pytest.mark.gpu
def test_check_starts_the_python_run_from_the_inputs_before_the_launch(rng):
    x = torch.randn(4097, generator=rng).cuda()
    expected = x * 2
    opts = spec(i=4097)
    opts.check = True
    double_in_place(x, 4097, opts=opts)
    assert torch.equal(x, expected)


@pytest.mark.gpu
@pytest.mark.parametrize("via_option", [False, True])
def test_a_reduction_without_reduce_is_reported(rng, via_option):
    n = 100_000
    x = torch.rand(n, generator=rng).cuda() + 0.5  # a sum near n, far from any one thread's
    y = torch.zeros(1, device="cuda")
    opts = spec(i=n)  # should be parir.threads(n).reduce(): the threads race on y[0]
    with pytest.raises(parir.ParirError) as info:
        if via_option:
            opts.check = True
            total(x, y, n, opts=opts)
        else:
            parir.check(total, x, y, n, opts=opts)
    msg = str(info.value)
    assert re.search(r"total\(\) on the GPU and as plain Python differ at y\[0\]: the GPU gives "
                     r"[-0-9.e+]+, the plain Python run gives [0-9.e+]+ \(float32", msg), msg
    e = info.value
    assert (e.argument, e.index) == ("y", (0,))
    assert e.python_value == pytest.approx(x.double().sum().item(), rel=1e-3)
    assert e.gpu_value == y.item()  # the caller's tensor holds the GPU's result
    assert e.gpu_value < 0.9 * e.python_value
    # With .reduce() the same check passes.
    y.zero_()
    parir.check(total, x, y, n, opts=parir.par({'i': parir.threads(n).reduce()}))


@pytest.mark.gpu
def test_integer_results_are_compared_exactly(rng):
    n = 100_000
    x = torch.rand(n, generator=rng).cuda()
    c = torch.zeros(1, dtype=torch.int32, device="cuda")
    with pytest.raises(parir.ParirError, match=r"differ at c\[0\]: the GPU gives \d+, the plain "
                                               r"Python run gives \d+ \(int32, compared exactly"):
        parir.check(count_above, x, c, n, opts=spec(i=n))
    c.zero_()
    parir.check(count_above, x, c, n, opts=parir.par({'i': parir.threads(n).reduce()}))
    assert c.item() == int((x > 0.5).sum())


@pytest.mark.gpu
def test_a_race_on_a_dict_entry_names_the_entry(rng):
    n = 50_000
    d = {'out': torch.zeros(3, device="cuda"), 'x': torch.rand(n, generator=rng).cuda() + 1,
         'y': torch.zeros(3, device="cuda")}

    @parir.jit
    def dict_total(d, N):
        parir.label('i')
        for i in range(N):
            d['out'][1] += d['x'][i]

    with pytest.raises(parir.ParirError, match=r"differ at d\['out'\]\[1\]: the GPU gives") as info:
        parir.check(dict_total, d, n, opts=spec(i=n))
    assert (info.value.argument, info.value.index) == ("d['out']", (1,))
    assert info.value.python_value == pytest.approx(d['x'].double().sum().item(), rel=1e-3)
    assert d['out'][1].item() == info.value.gpu_value < 0.9 * info.value.python_value
    assert d['out'][0].item() == d['out'][2].item() == 0.0


@pytest.mark.gpu
def test_nan_produced_only_by_the_gpu_is_reported(rng):
    n = 1000
    x = torch.rand(n, generator=rng) + 0.1
    x[[7, 500]] = -4.0  # the GPU's __fsqrt_rn gives NaN there; the Python twin gives 2
    x = x.cuda()
    y = torch.zeros(n, device="cuda")
    with pytest.raises(parir.ParirError,
                       match=r"differ at y\[7\]: the GPU gives nan where the plain Python run "
                             r"gives the finite value 2\. 2 of 1000 elements of y differ, 2 of "
                             r"them NaN or infinite on the GPU only"):
        parir.check(roots, x, y, n, opts=spec(i=n))
    assert torch.isnan(y[7]) and torch.isnan(y[500])
