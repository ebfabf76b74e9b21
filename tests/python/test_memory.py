"""Memory: cached calls allocate nothing, on the GPU or the host; the tables of compiled
specializations and loaded modules are bounded; GPU copies of CPU arguments come from
PyTorch's caching allocator."""

import gc
import os

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from parir_torch.specializations import SpecializationCache
from torch_programs import inputs, scaled_add, threads

CALLS = 100_000


class _Launch:
    def __init__(self, stamp):
        self.last_used = stamp


class _Compiled:
    def __init__(self, stamp):
        self.launch = _Launch(stamp)


def test_specialization_cache_drops_the_least_recently_launched():
    cache = SpecializationCache(limit=3)
    for k, stamp in (("a", 5), ("b", 1), ("c", 9)):
        cache[k] = _Compiled(stamp)
    cache["d"] = _Compiled(10)
    assert set(cache) == {"a", "c", "d"}  # "b" was launched longest ago
    cache["a"] = _Compiled(11)  # replacing an entry drops nothing
    assert set(cache) == {"a", "c", "d"}
    cache["e"] = _Compiled(12)
    assert set(cache) == {"a", "d", "e"}


def test_launch_stamps_grow():
    first = _C.next_launch_stamp()
    assert _C.next_launch_stamp() == first + 1


def host_resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.gpu
def test_cached_calls_leave_gpu_and_host_memory_unchanged():
    x, y = (t.view(-1) for t in inputs(100, 33))
    out = torch.empty_like(x)
    n = x.numel()
    opts = threads(n)
    for _ in range(1000):  # warm-up: compile, load, let the allocator and Python settle
        scaled_add(2.0, x, y, out, n, opts=opts)
    torch.cuda.synchronize()
    gc.collect()
    allocated = torch.cuda.memory_allocated()
    allocations = torch.cuda.memory_stats()["allocation.all.allocated"]
    free_on_device, _ = torch.cuda.mem_get_info()
    host = host_resident_bytes()
    for _ in range(CALLS):
        scaled_add(2.0, x, y, out, n, opts=opts)
    torch.cuda.synchronize()
    gc.collect()
    assert torch.cuda.memory_allocated() == allocated
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == allocations
    # Nothing allocated outside PyTorch's allocator either (cudaMalloc, cuMemAlloc). The free
    # memory is the device's, so the check holds only while no other process (a pytest-xdist
    # worker, say) allocates on it.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        assert torch.cuda.mem_get_info()[0] >= free_on_device - (2 << 20)
    growth = host_resident_bytes() - host
    assert growth < (8 << 20), f"host memory grew by {growth / 2**20:.1f} MiB"
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())


@pytest.mark.gpu
def test_gpu_copies_of_cpu_arguments_come_from_the_caching_allocator():
    x, y = (t.view(-1) for t in inputs(100, 33, device="cpu"))
    out = torch.full_like(x, float("nan"))
    n = x.numel()
    scaled_add(3.0, x, y, out, n, opts=threads(n))  # compiles
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    free_on_device, _ = torch.cuda.mem_get_info()
    out.fill_(float("nan"))
    scaled_add(3.0, x, y, out, n, opts=threads(n))
    torch.cuda.synchronize()
    # Three GPU copies (x, y, out), each an allocation of PyTorch's, all released again.
    assert torch.cuda.memory_stats()["allocation.all.allocated"] - before == 3
    assert torch.cuda.memory_allocated() == allocated
    assert torch.cuda.mem_get_info()[0] >= free_on_device - (2 << 20)
    torch.testing.assert_close(out.double(), 3.0 * x.double() + y.double())


@pytest.mark.gpu
def test_specializations_and_modules_stay_bounded():
    fn = parir.jit(scaled_add.fn)  # a function with a cache of its own
    fn._cache.limit = 8
    x, y = (t.view(-1) for t in inputs(10, 33))
    out = torch.empty_like(x)
    n = x.numel()
    counts = []
    for k in range(60):  # a new scalar value is a new specialization, program and module
        fn(float(k), x, y, out, n, opts=threads(n))
        counts.append(_C.loaded_module_count())
    torch.cuda.synchronize()
    assert len(fn._cache) == 8
    # Evicted programs' modules are unloaded in batches of 32, before a later load: the count
    # falls at least once and never exceeds the cached 8 plus one batch.
    assert any(later < earlier for earlier, later in zip(counts, counts[1:])), counts
    assert max(counts) <= counts[0] + 8 + 32, counts
    torch.testing.assert_close(out.double(), 59.0 * x.double() + y.double())
