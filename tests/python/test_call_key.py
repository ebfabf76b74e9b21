"""The cached call's key: _C.call_key, the arguments' part built in C++, against the Python
keys it stands for, and the JitFunction's lookup by it (without a GPU: CPU tensors stand in
for CUDA tensors, as benchmarks/call_path_cpu.py does, and the launch is recorded)."""

import numpy as np
import pytest
import torch

import parir_torch as parir
from parir_torch import _C, arguments


def test_equal_keys_exactly_for_arguments_alike():
    a, b = torch.rand(4, 6), torch.rand(4, 6)
    assert _C.call_key((a, 3, 2.5, True)) == _C.call_key((b, 3, 2.5, True))
    base = _C.call_key((a, 3))
    different = [
        (a.double(), 3), (a[:, :5], 3), (a.t().contiguous().t(), 3),  # dtype, shape, strides
        (torch.rand(6, 4), 3), (a, 4), (a, 3.0), (a, True), (3, a), (a, 3, 3), (a,),
        (torch.empty(4, 6, device="meta"), 3),  # the device
    ]
    keys = [_C.call_key(args) for args in different]
    assert all(k is not None for k in keys)
    assert base not in keys and len(set(keys)) == len(keys)
    # Bools, ints and floats by type and value: 1, True and 1.0 differ; -0.0 and 0.0 differ
    # (their code differs), a NaN equals itself.
    assert len({_C.call_key((v,)) for v in (1, True, 1.0, 0.0, -0.0)}) == 5
    assert _C.call_key((float("nan"),)) == _C.call_key((float("nan"),))
    # None (an optional tensor not given) has a key of its own.
    assert len({_C.call_key((v,)) for v in (None, 0, False, 0.0)}) == 4


@pytest.mark.parametrize("arg", [torch.tensor(2.0), torch.rand(3).to_sparse(), {"k": 1},
                                 np.float32(1.5), 1 << 70, "text", [1, 2]],
                         ids=["0-d", "sparse", "dict", "numpy", "big int", "str", "list"])
def test_arguments_that_need_converting_have_no_key(arg):
    assert _C.call_key((torch.rand(3), arg)) is None


def test_tensor_subclasses_have_a_key_once_registered():
    class Tagged(torch.Tensor):
        pass

    t = torch.rand(3).as_subclass(Tagged)
    assert _C.call_key((t,)) is None
    arguments.convert("t", t)  # the converting path registers a plain subclass
    assert _C.call_key((t,)) == _C.call_key((torch.rand(3).as_subclass(Tagged),))
    assert _C.call_key((t,)) == _C.call_key((torch.rand(3),))  # the same metadata
    p = torch.nn.Parameter(torch.rand(2, 2))
    arguments.convert("p", p)
    assert _C.call_key((p,)) is not None


@parir.jit
def scale(x, y, a, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[i] * a


@pytest.fixture
def cpu_as_cuda(monkeypatch):
    """CPU tensors take the CUDA tensors' path; launches are recorded instead of run."""
    monkeypatch.setattr(torch.Tensor, "is_cuda", torch._C.TensorBase.is_cpu)
    launched = []

    class Record:  # a launcher, with the launch stamp the cache's eviction reads
        last_used = 0

        def __call__(self, call_args):
            launched.append(call_args)

    def call(fn, *args, opts):
        try:
            fn(*args, opts=opts)
        except parir.ParirError:  # the first launch, without a GPU
            pass
        for compiled in fn._cache.values():
            if not isinstance(compiled.launch, Record):
                compiled.launch = Record()
        fn(*args, opts=opts)  # launches, and so enters the call table
    yield call, launched


def test_a_cached_call_finds_its_specialization_by_the_fast_key(cpu_as_cuda):
    call, launched = cpu_as_cuda
    scale.clear_cache()
    opts = parir.par({'i': parir.threads(64)})
    x, y = torch.rand(64), torch.rand(64)
    call(scale, x, y, 2.0, 64, opts=opts)  # compiles, then launches under both keys
    assert scale.cache_size() == 1 and len(scale._calls) == 1
    scale(x, y, 2.0, 64, opts=opts)
    assert launched[-1] == (x, y, 2.0, 64)
    x2, y2 = torch.rand(64), torch.rand(64)
    scale(x2, y2, 2.0, 64, opts=opts)  # the fast key alone
    assert launched[-1][0] is x2 and len(scale._calls) == 1 and scale.cache_size() == 1
    # Another value, stride or option is another specialization.
    call(scale, x, y, 3.0, 64, opts=opts)
    call(scale, torch.rand(128)[::2], y, 2.0, 64, opts=opts)
    call(scale, x, y, 2.0, 64, opts=parir.par({'i': parir.threads(32)}))
    assert scale.cache_size() == 4
    # A call with a CPU tensor that is not standing in for a CUDA one converts, as before.
    scale.clear_cache()
    assert len(scale._calls) == 0


def test_dropping_a_specialization_empties_the_fast_keys(cpu_as_cuda):
    call, _ = cpu_as_cuda
    scale.clear_cache()
    scale._cache.limit = 1
    try:
        opts = parir.par({'i': parir.threads(64)})
        x, y = torch.rand(64), torch.rand(64)
        call(scale, x, y, 2.0, 64, opts=opts)
        assert len(scale._calls) == 1 and scale._calls.find(opts, (x, y, 2.0, 64))
        call(scale, x, y, 5.0, 64, opts=opts)  # drops the first specialization
        assert scale.cache_size() == 1 and len(scale._calls) == 1
        assert scale._calls.find(opts, (x, y, 2.0, 64)) is None
        assert scale._calls.find(opts, (x, y, 5.0, 64)) is not None
    finally:
        scale._cache.limit = 256
        scale.clear_cache()


def test_a_call_whose_arguments_are_converted_takes_no_fast_key():
    scale.clear_cache()
    x, y = torch.rand(64), torch.rand(64)  # CPU tensors: copied to the GPU for the call
    try:
        scale(x, y, 2.0, 64, opts=parir.par({'i': parir.threads(64)}))
    except Exception:  # without a GPU, the copy
        pass
    assert scale.cache_size() == 1 and len(scale._calls) == 0
    scale.clear_cache()


def test_options_changed_in_place_find_their_own_specialization(cpu_as_cuda):
    call, launched = cpu_as_cuda
    scale.clear_cache()
    opts = parir.par({'i': parir.threads(64)})
    x, y = torch.rand(64), torch.rand(64)
    call(scale, x, y, 2.0, 64, opts=opts)
    first = scale._calls.find(opts, (x, y, 2.0, 64))
    assert first is not None
    # The same options object, changed in place after its call: each change is another key
    # (the spec's dict, a flag, a list), and the table never returns the old entry for it.
    opts.parallelize['i'] = parir.threads(32)
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is None
    call(scale, x, y, 2.0, 64, opts=opts)
    second = scale._calls.find(opts, (x, y, 2.0, 64))
    assert second is not None and second is not first
    opts.bounds_check = True
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is None
    opts.bounds_check = False
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is second
    opts.extra_flags.append("-DPARIR_TEST_FLAG=1")
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is None
    opts.extra_flags.clear()
    # Fields that are not part of the key leave the entry; seq and check calls never launch.
    opts.debug_print = False
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is second
    opts.seq = True
    assert scale._calls.find(opts, (x, y, 2.0, 64)) is None
    before = len(launched)
    scale(x.clone(), y, 2.0, 64, opts=opts)  # plain Python: no launch
    assert len(launched) == before
    scale.clear_cache()


def test_default_options_and_option_spellings(cpu_as_cuda):
    call, _ = cpu_as_cuda
    scale.clear_cache()
    x, y = torch.rand(64), torch.rand(64)
    opts = parir.CompileOptions()
    opts.parallelize = {'i': parir.threads(64)}
    call(scale, x, y, 2.0, 64, opts=opts)
    twin = parir.par({'i': parir.threads(64)})
    assert scale._calls.find(twin, (x, y, 2.0, 64)) is scale._calls.find(opts, (x, y, 2.0, 64))
    # An int where a bool is usual is a key of its own: only another entry, never a wrong one.
    twin.bounds_check = 0
    assert scale._calls.find(twin, (x, y, 2.0, 64)) is None
    # Options that are not CompileOptions, or hold values the table does not encode, are never
    # found: the slow path explains or compiles.
    for odd in [{'i': parir.threads(64)}, 3, object()]:
        assert scale._calls.find(odd, (x, y, 2.0, 64)) is None
        assert scale._calls.launch(odd, (x, y, 2.0, 64)) is False
    scale.clear_cache()


def test_options_are_found_whatever_the_order_of_their_fields(cpu_as_cuda):
    call, _ = cpu_as_cuda
    scale.clear_cache()
    x, y = torch.rand(64), torch.rand(64)
    opts = parir.par({'i': parir.threads(64)})
    call(scale, x, y, 2.0, 64, opts=opts)
    entry = scale._calls.find(opts, (x, y, 2.0, 64))
    assert entry is not None
    # Fields set again after deletion come last in the instance dict; attributes of the
    # user's own are not options.
    reordered = parir.par({'i': parir.threads(64)})
    del reordered.bounds_check
    reordered.bounds_check = False
    reordered.note = "mine"
    assert scale._calls.find(reordered, (x, y, 2.0, 64)) is entry
    reordered.bounds_check = True
    assert scale._calls.find(reordered, (x, y, 2.0, 64)) is None
    reordered.bounds_check = False
    del reordered.seq
    reordered.seq = True
    assert scale._calls.find(reordered, (x, y, 2.0, 64)) is None
    del reordered.parallelize  # a key field missing: never found, the slow path explains
    assert scale._calls.find(reordered, (x, y, 2.0, 64)) is None
    scale.clear_cache()
