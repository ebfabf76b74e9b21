"""Argument kinds: dicts, 0-d and shape-(1,) tensors, views through their strides, CPU tensors
and NumPy arrays (copied for the call), CuPy and DLPack arrays (used in place)."""

import os

import pytest
import torch

import parir_torch as parir
from helpers import check_close


@parir.jit
def scale_dict(p, x, N):
    parir.label('i')
    for i in range(N):
        p['out'][i] = x[i] * p['scale'] + p['shift'][i]


@parir.jit
def add_value(x, k, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[i] + k


@parir.jit
def copy2d(x, y, N, M):
    parir.label('i')
    for i in range(N):
        for j in range(M):
            y[i, j] = x[i, j] * 2.0 + 1.0


def spec(n):
    return parir.par({'i': parir.threads(n)})


# ----- CPU -----------------------------------------------------------------------------------

def test_dict_arguments_become_named_entries():
    src = parir.print_compiled(scale_dict, [{'out': torch.zeros(5), 'scale': 2.5,
                                             'shift': torch.zeros(5)}, torch.zeros(5), 5], spec(5))
    assert "//@ param p__out float32[5] strides(1) inout" in src
    assert "p__out[i] = ((x[i] * 2.5f) + p__shift[i]);" in src
    assert "//@ signature scale_dict(p['out'], p['scale']=2.5, p['shift'], x, N=5)" in src


@pytest.mark.parametrize("arg,pattern", [
    ({'out': torch.zeros(5), 'scale': {'a': 1}, 'shift': torch.zeros(5)},
     r"entry 'scale' of argument 'p' is a dict; dict arguments hold scalars and tensors"),
    ({'out': torch.zeros(5), 3: 1.0, 'shift': torch.zeros(5)},
     r"argument 'p' is a dict with the key 3; parir dict arguments need string keys"),
    ({'out': torch.zeros(5), 'shift': torch.zeros(5)},
     r"the dict argument 'p' has no entry 'scale'"),
    ({'out': torch.zeros(5), 'scale': "2", 'shift': torch.zeros(5)},
     r"entry 'scale' of argument 'p' is a builtins.str"),
])
def test_bad_dict_arguments_are_named(arg, pattern):
    with pytest.raises(parir.ParirError, match=pattern):
        parir.print_compiled(scale_dict, [arg, torch.zeros(5), 5], spec(5))


def test_a_dict_used_as_a_value_is_an_error():
    def f(d, x, N):
        parir.label('i')
        for i in range(N):
            x[i] = d

    with pytest.raises(parir.ParirError, match=r"dict argument 'd' is used as a value"):
        parir.print_compiled(f, [{'a': 1}, torch.zeros(3), 3], spec(3))


def test_zero_dim_tensors_are_typed_scalars():
    src = parir.print_compiled(add_value, [torch.zeros(5), torch.tensor(3, dtype=torch.int16),
                                           torch.zeros(5), 5], spec(5))
    assert "k=int16(3)" in src and "(x[i] + 3.0f)" in src
    src = parir.print_compiled(add_value, [torch.zeros(5, dtype=torch.int8),
                                           torch.tensor(1000, dtype=torch.int32),
                                           torch.zeros(5, dtype=torch.int32), 5], spec(5))
    # A strong int32 scalar widens int8 + int32 to int32; a Python int would stay int8.
    assert "(((int32_t)x[i]) + 1000)" in src


def test_shape_one_tensor_is_read_not_compiled_in():
    src = parir.print_compiled(add_value, [torch.zeros(5), torch.zeros(1), torch.zeros(5), 5],
                               spec(5))
    assert "(x[i] + k[0])" in src and "//@ param k float32[1]" in src


def test_numpy_scalars_are_typed():
    np = pytest.importorskip("numpy")
    src = parir.print_compiled(add_value, [torch.zeros(4, dtype=torch.float64), np.float32(1.5),
                                           torch.zeros(4, dtype=torch.float64), 4], spec(4))
    assert "k=float32(1.5)" in src


def test_numpy_scalars_reach_the_launch():
    # A call converts a NumPy scalar once; compiling must take the converted value as it is.
    # Meta tensors compile and then fail at the launch, which is the point this test reaches.
    np = pytest.importorskip("numpy")
    x = torch.zeros(4, dtype=torch.float64, device="meta")
    with pytest.raises(parir.ParirError) as info:
        add_value(x, np.float64(1.5), x, 4, opts=spec(4))
    msg = str(info.value)
    assert "NumpyScalar" not in msg and ("meta" in msg or "no CUDA GPU" in msg), msg


# ----- GPU -----------------------------------------------------------------------------------

@pytest.mark.gpu
def test_numpy_scalars_on_the_gpu():
    np = pytest.importorskip("numpy")
    x = torch.randn(33, dtype=torch.float64, device="cuda")
    out = torch.full_like(x, float("nan"))
    add_value(x, np.float64(1.5), out, 33, opts=spec(33))
    torch.testing.assert_close(out, x + 1.5)
    add_value(x, np.float32(0.25), out, 33, opts=spec(33))
    torch.testing.assert_close(out, x + 0.25)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 4097])
def test_dicts_on_the_gpu(n, rng):
    x, shift = torch.randn(n, generator=rng).cuda(), torch.randn(n, generator=rng).cuda()
    out = torch.full((n,), float("nan"), device="cuda")
    scale_dict({'out': out, 'scale': -1.25, 'shift': shift}, x, n, opts=spec(n))
    check_close(out, x.double() * -1.25 + shift.double(), "dict")


@pytest.mark.gpu
def test_zero_dim_tensors_specialize_on_their_value(rng):
    fn = parir.jit(add_value.fn)
    x = torch.randn(100, generator=rng).cuda()
    y = torch.full((100,), float("nan"), device="cuda")
    fn(x, torch.tensor(2.5, device="cuda"), y, 100, opts=spec(100))
    check_close(y, x.double() + 2.5, "0-d 2.5")
    fn(x, torch.tensor(-4.0), y, 100, opts=spec(100))  # a CPU 0-d tensor: a scalar too
    check_close(y, x.double() - 4.0, "0-d -4")
    assert fn.cache_size() == 2


@pytest.mark.gpu
def test_shape_one_tensor_changes_without_recompiling(rng):
    fn = parir.jit(add_value.fn)
    x = torch.randn(1000, generator=rng).cuda()
    y = torch.full((1000,), float("nan"), device="cuda")
    k = torch.tensor([1.5], device="cuda")
    for step in range(5):
        k.fill_(step * 0.75 - 1)
        fn(x, k, y, 1000, opts=spec(1000))
        check_close(y, x.double() + (step * 0.75 - 1), f"step {step}")
    assert fn.cache_size() == 1


@pytest.mark.gpu
def test_views_are_used_through_their_strides(rng):
    base = torch.randn(40, 70, generator=rng).cuda()
    out = torch.full((70, 40), float("nan"), device="cuda")
    # A transposed input and a transposed output.
    copy2d(base.t(), out, 70, 40, opts=spec(70))
    check_close(out, base.t().double() * 2 + 1, "transposed")
    # A sliced input (step 3, offset) and a sliced output.
    big_out = torch.full((40, 70), float("nan"), device="cuda")
    copy2d(base[1::3, 5:40], big_out[2:15, 10:45], 13, 35, opts=spec(13))
    check_close(big_out[2:15, 10:45], base[1::3, 5:40].double() * 2 + 1, "sliced")
    assert torch.isnan(big_out[:2]).all() and torch.isnan(big_out[15:]).all()
    # An expanded (stride-0) input.
    row = torch.randn(70, generator=rng).cuda()
    out2 = torch.full((40, 70), float("nan"), device="cuda")
    copy2d(row.expand(40, 70), out2, 40, 70, opts=spec(40))
    check_close(out2, row.double().expand(40, 70) * 2 + 1, "expanded")
    assert base.data_ptr() == base.t().data_ptr()  # views, never copies


@pytest.mark.gpu
def test_cpu_tensors_and_numpy_arrays_are_copied_and_written_back(rng):
    np = pytest.importorskip("numpy")
    x = torch.randn(1000, generator=rng)
    y = torch.full((1000,), float("nan"))
    add_value(x, 0.5, y, 1000, opts=spec(1000))
    check_close(y, x.double() + 0.5, "CPU tensors")
    xn = np.random.default_rng(5).standard_normal(777).astype(np.float32)
    yn = np.full(777, np.nan, dtype=np.float32)
    add_value(xn, 0.25, yn, 777, opts=spec(777))
    np.testing.assert_allclose(yn, xn + np.float32(0.25), rtol=1e-6)
    # Mixed: a NumPy input, a CUDA output. The GPU copy of the input comes from PyTorch's
    # caching allocator and goes back to it after the call.
    yc = torch.full((777,), float("nan"), device="cuda")
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    in_use = torch.cuda.memory_allocated()
    add_value(xn, -1.0, yc, 777, opts=spec(777))
    check_close(yc, torch.from_numpy(xn).double() - 1.0, "numpy in, cuda out")
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1":  # (tests/run_sanitizer.sh)
        assert torch.cuda.memory_stats()["allocation.all.allocated"] == before + 1
        assert torch.cuda.memory_allocated() == in_use


@pytest.mark.gpu
def test_cupy_arrays_are_used_in_place(rng):
    cp = pytest.importorskip("cupy")
    x = cp.random.standard_normal(4097, dtype=cp.float32)
    y = cp.full(4097, cp.nan, dtype=cp.float32)
    ptr = y.data.ptr
    add_value(x, 2.0, y, 4097, opts=spec(4097))
    cp.cuda.get_current_stream().synchronize()
    torch.cuda.synchronize()
    assert y.data.ptr == ptr
    cp.testing.assert_allclose(y, x + 2.0, rtol=1e-6)


class _DLPackOnly:
    """An array that offers only DLPack (no __cuda_array_interface__)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


@pytest.mark.gpu
def test_dlpack_arrays_are_used_in_place(rng):
    x = torch.randn(333, generator=rng).cuda()
    y = torch.full((333,), float("nan"), device="cuda")
    add_value(_DLPackOnly(x), 3.0, _DLPackOnly(y), 333, opts=spec(333))
    check_close(y, x.double() + 3.0, "dlpack")


@parir.jit
def scale_by(x, y, N, a=2.0):
    parir.label('N')
    for i in range(N):
        y[i] = a * x[i]


def test_parameters_left_out_take_their_defaults():
    x, y = torch.arange(5.0), torch.full((5,), float("nan"))
    opts = parir.par({'N': parir.threads(5)})
    assert "(2.0f * x[i])" in parir.print_compiled(scale_by, [x, y, 5], opts)
    assert "(3.0f * x[i])" in parir.print_compiled(scale_by, [x, y, 5, 3.0], opts)
    scale_by(x, y, 5, seq=True)
    assert torch.equal(y, x * 2)


@pytest.mark.gpu
def test_a_call_leaving_out_a_parameter_with_a_default_runs():
    x, y = torch.arange(1000.0, device="cuda"), torch.full((1000,), float("nan"), device="cuda")
    for _ in range(2):  # the second call through the cached launch
        scale_by(x, y, 1000, opts=parir.par({'N': parir.threads(1000)}))
        assert torch.equal(y, x * 2)
