"""Atomic updates: parir.atomic_add(t[i], v) and the other parir.atomic_* functions.

Without a GPU: every operation and element dtype through NVRTC (as a statement, with its old
value kept, between parallel levels and with run-time bounds checks), the plain Python against
torch's scatter operations, the errors, and how the passes treat an update (never repeated into
a later kernel, never a reduction's accumulation, no race warning). With a GPU (marker `gpu`):
every operation and dtype against references computed on the CPU, at sizes 1 to ~1e6, with many
and with few threads per element. The GPU cases run here too, as plain Python at small sizes,
so that their references and checks are tried before they reach a GPU.

The GPU results are checked without assuming an order of the updates. For every element, the
chain of updates that reached it must account for the values the threads got back: the old
values plus the final value are, as a multiset, the initial value plus op(old, v) for each
thread (a lost or doubled update breaks this). The final values are also compared with torch's
scatter operations. Float sums use integer values whose partial sums every float type holds
exactly (bounding how many updates each element takes), so that they too compare exactly; a
separate test sums random floats within a tolerance.
"""

import math

import pytest
import torch

import parir_torch as parir
from helpers import load_module, without_aligned_copies

INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
        torch.uint32, torch.uint64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
ALL = INTS + [torch.bool] + FLOATS
DTYPES = {
    "add": INTS + FLOATS, "sub": INTS + FLOATS, "min": INTS + FLOATS, "max": INTS + FLOATS,
    "exchange": ALL, "cas": ALL, "and": INTS + [torch.bool], "or": INTS + [torch.bool],
    "xor": INTS + [torch.bool],
}
CASES = [(op, dtype) for op, dtypes in DTYPES.items() for dtype in dtypes]
SIZES = [1, 31, 33, 1000, 4097, 1_000_003]


def case_id(value):
    return str(value).replace("torch.", "") if isinstance(value, torch.dtype) else None


# ----- the kernels: one thread per update -----------------------------------------------------------
#
# For each operation, `<op>_old` keeps each thread's old value and `<op>_only` updates as a
# statement of its own. parir reads a function's source, so they are written to a module.

KERNEL = """
def {op}_old(t, idx, e, v, old, N):
    parir.label('N')
    for i in range(N):
        o = parir.atomic_{op}(t[idx[i]], {args})
        old[i] = o


def {op}_only(t, idx, e, v, N):
    parir.label('N')
    for i in range(N):
        parir.atomic_{op}(t[idx[i]], {args})
"""


def kernel_module():
    import atexit
    import pathlib
    import shutil
    import tempfile

    text = "import parir_torch as parir\n" + "".join(
        KERNEL.format(op=op, args="e[i], v[i]" if op == "cas" else "v[i]") for op in DTYPES)
    folder = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return load_module(pathlib.Path(folder), text, "atomic_kernels")


_kernels = kernel_module()
WITH_OLD = {op: parir.jit(getattr(_kernels, f"{op}_old")) for op in DTYPES}
STATEMENT = {op: parir.jit(getattr(_kernels, f"{op}_only")) for op in DTYPES}


# ----- data and references -----------------------------------------------------------------------

def exact_sum_cap(dtype):
    """How many values of magnitude <= 3 an element that starts at most 3 from zero may take
    so that every partial sum is an integer the dtype holds exactly, whatever the order
    (float16 holds the integers up to 2048, bfloat16 up to 256)."""
    return {torch.float16: (2048 - 3) // 3, torch.bfloat16: (256 - 3) // 3}.get(dtype, 1 << 40)


def indices(n, pattern, dtype, op, gen):
    """(idx, bins). 'many': the n updates spread evenly over a few elements (at most
    exact_sum_cap each); 'few': over 2n elements, at most two updates each."""
    if pattern == "many":
        bins = max(min(3, n), -(-n // exact_sum_cap(dtype)) if op in ("add", "sub") else 1)
        return torch.randperm(n, generator=gen) % bins, bins
    bins = 2 * n
    return torch.randperm(4 * n, generator=gen)[:n] // 2, bins


def random_values(n, dtype, op, gen):
    """n values of the dtype for `op`: integers over their whole range (64-bit sums kept within
    +-2^40 so the int64 references cannot overflow), bools, and floats that are small integers
    for sums (exact in any order) or random otherwise, a few NaNs for min and max."""
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    if dtype.is_floating_point:
        if op in ("add", "sub"):
            return torch.randint(-3, 4, (n,), generator=gen).to(dtype)
        # No zeros: min and max of 0.0 and -0.0 (a tiny value rounded to float16) may keep
        # either, and the checks compare bits.
        x = torch.randn(n, generator=gen)
        x = torch.where(x.abs() < 1e-3, torch.ones_like(x), x).to(dtype)
        if op in ("min", "max") and n > 30:
            x[torch.randperm(n, generator=gen)[: n // 30]] = math.nan
        return x
    bits = torch.iinfo(dtype).bits
    if bits == 64 and op in ("add", "sub"):
        return torch.randint(-(1 << 40), 1 << 40, (n,), generator=gen).to(dtype)
    raw = torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen) * 2 + torch.randint(
        0, 2, (n,), generator=gen)
    if bits == 64:
        return raw.view(dtype) if dtype == torch.int64 else raw.view(torch.uint64)
    return raw.to(dtype)  # the low bits: a value anywhere in the type's range


def make_case(op, dtype, n, pattern, seed=0):
    """The inputs of one case, on the CPU: t (initial), idx, e (atomic_cas's expected), v."""
    gen = torch.Generator().manual_seed(seed * 1000 + n)
    idx, bins = indices(n, pattern, dtype, op, gen)
    v = random_values(n, dtype, op, gen)
    if op == "cas":
        # Every thread tries to claim its element from the zero it starts at with a value of
        # its own that is not zero: exactly one thread per element wins.
        t = torch.zeros(bins, dtype=dtype)
        e = torch.zeros(n, dtype=dtype)
        v = torch.ones(n, dtype=dtype) if dtype == torch.bool else \
            (torch.arange(n) % 100 + 1).to(dtype)
        return t, idx, e, v
    if dtype.is_floating_point and op in ("add", "sub"):
        t = torch.randint(-3, 4, (bins,), generator=gen).to(dtype)
    else:
        t = random_values(bins, dtype, op, gen)
    return t, idx, torch.zeros(n, dtype=dtype), v


def as_int64(x):
    """Integer or bool values as int64 (uint64 by its bits: order is not kept)."""
    return x.view(torch.int64) if x.dtype == torch.uint64 else x.to(torch.int64)


def ordered_int64(x):
    """Integers as int64 in their own order (uint64 with the sign bit flipped)."""
    if x.dtype == torch.uint64:
        return x.view(torch.int64) ^ torch.iinfo(torch.int64).min
    return x.to(torch.int64)


def from_ordered_int64(y, dtype):
    if dtype == torch.uint64:
        return (y ^ torch.iinfo(torch.int64).min).view(torch.uint64)
    return y.to(dtype)


def from_int64(y, dtype):
    """int64 values wrapped into `dtype`, as C converts them (uint64 by its bits)."""
    return y.view(torch.uint64) if dtype == torch.uint64 else y.to(dtype)


def combine(op, old, v, e=None):
    """op(old, v) elementwise in the element dtype, as one atomic update computes it."""
    dtype = old.dtype
    if op == "exchange":
        return v.clone()
    if op == "cas":
        swap = bits(old) == bits(e)
        if dtype.is_floating_point or dtype == torch.bool:
            return torch.where(swap, v, old)
        return from_int64(torch.where(swap, as_int64(v), as_int64(old)), dtype)
    if op in ("add", "sub"):
        if dtype.is_floating_point:
            return old + v if op == "add" else old - v
        r = as_int64(old) + as_int64(v) if op == "add" else as_int64(old) - as_int64(v)
        return from_int64(r, dtype)
    if op in ("min", "max"):
        pick = torch.minimum if op == "min" else torch.maximum
        if dtype.is_floating_point:
            return pick(old, v)
        return from_ordered_int64(pick(ordered_int64(old), ordered_int64(v)), dtype)
    f = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}[op]
    if dtype == torch.bool:
        return f(old, v)
    return from_int64(f(as_int64(old), as_int64(v)), dtype)


def bits(x):
    """Each value's bits as an int64, every NaN as one NaN."""
    if x.dtype.is_floating_point:
        x = torch.where(torch.isnan(x), torch.full_like(x, math.nan), x)
        x = x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])
    return as_int64(x)


def final_reference(op, t, idx, e, v):
    """What the elements hold after every update, computed without atomics; None for the
    operations whose result depends on the order (exchange, cas: checked through the chain)."""
    dtype = t.dtype
    if op in ("add", "sub"):
        sign = 1 if op == "add" else -1
        if dtype.is_floating_point:
            total = t.double().index_add(0, idx, v.double(), alpha=sign)
            return total.to(dtype)
        return from_int64(as_int64(t).index_add(0, idx, as_int64(v), alpha=sign), dtype)
    if op in ("min", "max"):
        how = "amin" if op == "min" else "amax"
        if dtype.is_floating_point:
            return t.double().scatter_reduce(0, idx, v.double(), how).to(dtype)
        return from_ordered_int64(
            ordered_int64(t).scatter_reduce(0, idx, ordered_int64(v), how), dtype)
    if op in ("and", "or", "xor"):
        # Bit by bit: a bit of the result is set where all (and), any (or) or an odd number
        # (xor) of the values' bits are, the element's own included.
        out = torch.zeros(t.shape[0], dtype=torch.int64)
        tt, vv = as_int64(t), as_int64(v)
        for k in range(64):
            tb, vb = (tt >> k) & 1, (vv >> k) & 1
            if op == "xor":
                bit = tb.index_add(0, idx, vb) & 1
            else:
                bit = tb.scatter_reduce(0, idx, vb, "amin" if op == "and" else "amax")
            out |= bit << k
        return out.bool() if dtype == torch.bool else from_int64(out, dtype)
    return None


def check_case(op, t0, idx, e, v, final, old=None):
    """The final values (and the old values the threads got back) against the references."""
    final = final.cpu()
    expected = final_reference(op, t0, idx, e, v)
    if expected is not None:
        assert torch.equal(bits(final), bits(expected)), (
            f"{op} {t0.dtype}: {(bits(final) != bits(expected)).sum()} elements differ, e.g. "
            f"{final[bits(final) != bits(expected)][:5]} != "
            f"{expected[bits(final) != bits(expected)][:5]}")
    if old is None:
        return
    old = old.cpu()
    # The chain of updates of each element: its old values and its final value are its initial
    # value and the new values op(old, v), as multisets.
    touched = torch.unique(idx)
    left = sorted_pairs(torch.cat([idx, touched]), torch.cat([bits(old), bits(final[touched])]))
    right = sorted_pairs(torch.cat([touched, idx]),
                         torch.cat([bits(t0[touched]), bits(combine(op, old, v, e))]))
    assert all(torch.equal(a, b) for a, b in zip(left, right)), (
        f"{op} {t0.dtype}: the old values do not chain from the initial to the final values")
    if op == "cas":
        winners = bits(old) == bits(e)
        per_bin = torch.zeros(t0.shape[0], dtype=torch.int64).index_add(0, idx, winners.long())
        assert torch.equal(per_bin[touched], torch.ones_like(touched)), "one winner per element"
        assert torch.equal(bits(final[idx[winners]]), bits(v[winners]))


def sorted_pairs(keys, values):
    """(keys, values) sorted by key, then value: equal for equal multisets of pairs."""
    order = torch.sort(values, stable=True).indices
    order = order[torch.sort(keys[order], stable=True).indices]
    return keys[order], values[order]


def run_case(op, dtype, n, pattern, device, seq, with_old=True):
    t0, idx, e, v = make_case(op, dtype, n, pattern)
    t = t0.to(device, copy=True)  # t0 stays the initial values
    args = [idx.to(device), e.to(device), v.to(device)]
    opts = parir.par({'N': parir.threads(n)})
    if with_old:
        old = torch.zeros(n, dtype=dtype, device=device)
        WITH_OLD[op](t, *args, old, n, opts=opts, seq=seq)
        check_case(op, t0, idx, e, v, t, old)
    else:
        STATEMENT[op](t, *args, n, opts=opts, seq=seq)
        check_case(op, t0, idx, e, v, t)


def meta(n, dtype):
    return torch.empty(n, dtype=dtype, device="meta")


def case_args(op, dtype, n, with_old=True):
    args = [meta(n, dtype), meta(n, torch.int64), meta(n, dtype), meta(n, dtype)]
    return args + ([meta(n, dtype)] if with_old else []) + [n]


# ----- every operation and dtype through NVRTC ----------------------------------------------------

@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{case_id(d)}" for o, d in CASES])
def test_every_operation_and_dtype_compiles(op, dtype):
    opts = parir.par({'N': parir.threads(5000)})
    for fn, args in [(WITH_OLD[op], case_args(op, dtype, 5000)),
                     (STATEMENT[op], case_args(op, dtype, 5000, with_old=False))]:
        src = parir.print_compiled(fn, args, opts)
        call = "atomic_compare_exchange(" if op == "cas" else "atomic_combine("
        assert src.count("parir::" + call) == 1, src
        for arch in ("sm_80", "sm_90"):
            binary, _, _ = parir._C.nvrtc_compile(src, arch)
            assert len(binary) > 100
        checked = parir.par({'N': parir.threads(5000)})
        checked.bounds_check = True
        src = parir.print_compiled(fn, args, checked)
        assert "parir::in_bounds(parir_bounds" in src
        parir._C.nvrtc_compile(src, "sm_90")


def test_a_histogram_is_one_atomic_add_per_element():
    src = parir.print_compiled(histogram, [meta(1000, torch.float32), meta(10, torch.int32),
                                           1000, 10], parir.par({'N': parir.threads(1000)}))
    assert "parir::atomic_combine(parir::Sum(), &hist[" in src
    assert "//@ param hist int32[10] strides(1) inout" in src


# ----- plain Python against torch ---------------------------------------------------------------

@parir.jit
def histogram(x, hist, N, B):
    parir.label('N')
    for i in range(N):
        b = parir.int64(x[i] * B)
        if b == B:
            b = B - 1
        parir.atomic_add(hist[b], 1)


@parir.jit
def scatter_add(out, idx, w, N):
    parir.label('N')
    for i in range(N):
        parir.atomic_add(out[idx[i]], w[i])


@parir.jit
def scatter_max_min(hi, lo, idx, w, N):
    parir.label('N')
    for i in range(N):
        parir.atomic_max(hi[idx[i]], w[i])
        parir.atomic_min(lo[idx[i]], w[i])


@parir.jit
def counter(c, ids, N):
    parir.label('N')
    for i in range(N):
        k = parir.atomic_add(c[0], 1)
        ids[i] = k


def test_plain_python_histogram_is_torch_histc_and_bincount():
    x = torch.rand(1000, generator=torch.Generator().manual_seed(1))
    hist = torch.zeros(10, dtype=torch.int32)
    histogram(x, hist, 1000, 10, seq=True)
    assert torch.equal(hist, torch.histc(x, 10, 0, 1).to(torch.int32))
    assert torch.equal(hist.long(), torch.bincount((x * 10).long().clamp(max=9), minlength=10))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_plain_python_scatter_add_is_index_add(dtype):
    gen = torch.Generator().manual_seed(2)
    idx = torch.randint(0, 7, (300,), generator=gen)
    w = (torch.randn(300, generator=gen) * 10).to(dtype)
    out = torch.zeros(7, dtype=dtype)
    scatter_add(out, idx, w, 300, seq=True)
    torch.testing.assert_close(out, torch.zeros(7, dtype=dtype).index_add_(0, idx, w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int16, torch.int64])
def test_plain_python_max_and_min_are_scatter_reduce(dtype):
    gen = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 5, (200,), generator=gen)
    w = (torch.randn(200, generator=gen) * 100).to(dtype)
    if dtype.is_floating_point:
        w[17] = math.nan  # propagates, as in torch.maximum and scatter_reduce
    hi, lo = torch.zeros(5, dtype=dtype), torch.zeros(5, dtype=dtype)
    scatter_max_min(hi, lo, idx, w, 200, seq=True)
    for got, how in [(hi, "amax"), (lo, "amin")]:
        want = torch.zeros(5, dtype=dtype).scatter_reduce(0, idx, w, how)
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(),
                                                                      want.nan_to_num())


def test_plain_python_returns_old_values_of_the_element_dtype():
    c, ids = torch.zeros(1, dtype=torch.int16), torch.zeros(50, dtype=torch.int64)
    counter(c, ids, 50, seq=True)
    assert torch.equal(ids, torch.arange(50)) and c.item() == 50
    t = torch.tensor([5], dtype=torch.uint8)
    assert parir.atomic_sub(t[0], 7).dtype == torch.uint8 and t.item() == 254  # wraps
    f = torch.tensor([1.5], dtype=torch.bfloat16)
    old = parir.atomic_exchange(f[0], 2)
    assert old.dtype == torch.bfloat16 and old.item() == 1.5 and f.item() == 2.0


def test_plain_python_converts_the_value_as_a_store_does():
    t = torch.tensor([10], dtype=torch.int32)
    parir.atomic_add(t[0], 2.9)  # 2.9 stored into an int32 is 2
    assert t.item() == 12
    b = torch.tensor([False])
    assert parir.atomic_or(b[0], 5).item() is False and b.item() is True
    u = torch.tensor([0], dtype=torch.uint64)
    parir.atomic_sub(u[0], 1)
    assert u.item() == (1 << 64) - 1


def test_plain_python_cas_compares_bits():
    t = torch.tensor([0.0, math.nan])
    assert parir.atomic_cas(t[0], -0.0, 1.0).item() == 0.0 and t[0].item() == 0.0
    parir.atomic_cas(t[1], math.nan, 2.0)
    assert t[1].item() == 2.0


def test_plain_python_rejects_what_is_not_an_element():
    x = torch.zeros(4)
    with pytest.raises(parir.ParirTypeError, match="must be one tensor element"):
        parir.atomic_add(x[1:3], 1.0)
    with pytest.raises(parir.ParirTypeError, match="must be one tensor element"):
        parir.atomic_add(x[1].clone(), 1.0)
    with pytest.raises(parir.ParirTypeError, match="needs an integer or bool element"):
        parir.atomic_and(x[1], 1)
    with pytest.raises(parir.ParirTypeError, match="needs a numeric element"):
        parir.atomic_add(torch.zeros(2, dtype=torch.bool)[0], 1)


@pytest.mark.parametrize("n", [1, 31, 33])
@pytest.mark.parametrize("pattern", ["many", "few"])
@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{case_id(d)}" for o, d in CASES])
def test_gpu_cases_hold_as_plain_python(op, dtype, n, pattern):
    run_case(op, dtype, n, pattern, "cpu", seq=True)


@pytest.mark.parametrize("op", list(DTYPES))
def test_gpu_cases_hold_as_plain_python_at_a_thousand(op):
    for dtype in (torch.int8, torch.uint64, torch.float16, torch.float32):
        if dtype in DTYPES[op]:
            run_case(op, dtype, 1000, "many", "cpu", seq=True)


def test_the_checks_catch_a_lost_update():
    t0, idx, e, v = make_case("add", torch.int32, 33, "many")
    t, old = t0.clone(), torch.zeros(33, dtype=torch.int32)
    WITH_OLD["add"](t, idx, e, v, old, 33, seq=True)
    old[5] = old[6]  # as if two threads had read the same value
    with pytest.raises(AssertionError, match="do not chain"):
        check_case("add", t0, idx, e, v, t, old)
    t[0] += 1
    with pytest.raises(AssertionError, match="elements differ"):
        check_case("add", t0, idx, e, v, t)


# ----- the errors ---------------------------------------------------------------------------------

# Programs whose loop body is one line: (name, the line, the error).
ONE_LINE_ERRORS = [
    ("on_a_slice", "parir.atomic_add(h[0:2], x[i])",
     r"must be one tensor element .* a slice is several elements"),
    ("on_a_scalar", "parir.atomic_add(N[0], x[i])", r"argument 'N' is a scalar and cannot be indexed"),
    ("in_an_expression", "h[i] = 2 * parir.atomic_add(h[0], x[i])",
     r"parir.atomic_add updates a tensor element and can only be a statement of its own"),
    ("into_a_tensor", "h[i] = parir.atomic_add(h[0], x[i])",
     r"can only be assigned to a local variable"),
    ("missing_index", "parir.atomic_max(h, x[i])",
     r"'h' is a name, not an element of a tensor .* h\[0\]"),
    ("one_index_short", "parir.atomic_add(m[i], x[i])",
     r"tensor 'm' has 2 dimensions .* indexed with 1 index"),
    ("cas_arity", "parir.atomic_cas(h[0], x[i])",
     r"parir.atomic_cas takes 3 arguments, \(t\[i\], expected, desired\); got 2"),
    ("keyword", "parir.atomic_add(h[0], value=x[i])",
     r"parir.atomic_add takes its arguments by position only"),
    ("bitwise_float", "parir.atomic_xor(h[0], x[i])",
     r"parir.atomic_xor needs an integer or bool element, but 'h' is a float32"),
    ("add_bool", "parir.atomic_add(b[0], True)",
     r"parir.atomic_add needs a numeric element, but 'b' is a bool tensor"),
    ("out_of_bounds", "parir.atomic_add(h[N + 5], x[i])", r"`h\[15\]`: .* but h has 10 elements"),
]

ERRORS = "import parir_torch as parir\n" + "".join(f"""
def {name}({'b' if name == 'add_bool' else 'm' if name == 'one_index_short' else 'h'}, x, N):
    parir.label('N')
    for i in range(N):
        {line}
""" for name, line, _ in ONE_LINE_ERRORS) + """
def on_a_local(h, x, N):
    parir.label('N')
    for i in range(N):
        s = 0.0
        parir.atomic_add(s, x[i])

def on_the_host(h, x, N):
    parir.atomic_add(h[0], 1.0)
    parir.label('N')
    for i in range(N):
        h[i] = x[i]

def labelled_parallel(h, x, N):
    parir.label('N')
    for i in range(N):
        parir.label('N')
        parir.atomic_add(h[0], x[i])

def into_a_reduction_target(h, x, N):
    with parir.gpu:
        s = 0.0
        parir.label('R')
        for i in range(N):
            s += x[i]
            if x[i] > 0.5:
                s = parir.atomic_add(h[0], x[i])
        h[1] = s

def returned(h, x, N):
    parir.label('N')
    for i in range(N):
        h[i] = bump(h, i)

def bump(h, i):
    return parir.atomic_add(h[0], 1.0)
"""

ERROR_CASES = [(name, message) for name, _, message in ONE_LINE_ERRORS] + [
    ("on_a_local", r"must be one tensor element .* 's' is a name, not an element of a tensor"),
    ("on_the_host", r"outside any parallel loop, so it would run on the host"),
    ("labelled_parallel", r"only for-loops can be parallelized, but the label of this atomic "
                          r"update is in the parallel specification"),
    ("into_a_reduction_target", r"'s' is the result of the reduction loop on line \d+; it can "
                                r"only be accumulated into there"),
    ("returned", r"parir.atomic_add updates a tensor element and can only be a statement"),
]


@pytest.mark.parametrize("name,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_name_the_file_and_line(tmp_path, name, message):
    module = load_module(tmp_path, ERRORS, "atomic_errors")
    fn = parir.jit(getattr(module, name))
    f32 = torch.zeros(10)
    args = {"add_bool": [torch.zeros(10, dtype=torch.bool), f32, 10],
            "one_index_short": [torch.zeros(10, 10), f32, 10]}.get(name, [f32, f32, 10])
    spec = {'N': parir.threads(10), 'R': parir.threads(10).reduce()}
    with pytest.raises(parir.ParirError, match=message) as info:
        parir.print_compiled(fn, args, parir.par(spec))
    assert "atomic_errors.py:" in str(info.value)


# ----- how the passes treat an atomic update --------------------------------------------------------

@parir.jit
def claim_rows(c, y, N, M):
    parir.label('row')
    for r in range(N):
        slot = parir.atomic_add(c[0], 1)
        parir.label('col')
        for j in range(M):
            y[slot, j] = r


@parir.jit
def count_then_fill(c, y, N, M):
    parir.label('row')
    for r in range(N):
        parir.atomic_add(c[r % 2], 1)
        k = r * 2
        parir.label('col')
        for j in range(M):
            y[r, j] = k


@parir.jit
def sum_and_count(x, h, s, N):
    with parir.gpu:
        t = 0.0
        parir.label('R')
        for i in range(N):
            t += x[i]
            parir.atomic_add(h[parir.int64(x[i] > 0.0)], 1)
        s[0] = t


@parir.jit
def two_sums_and_a_count(x, s, h, N):
    parir.label('R')
    for i in range(N):
        s[0] += x[i]
        s[1] += x[i] * x[i]
        parir.atomic_add(h[0], 1)


def test_an_update_between_parallel_levels_shares_its_old_value_through_shared_memory():
    src = parir.print_compiled(claim_rows, [meta(1, torch.int32), torch.empty(4, 256,
                                            device="meta"), 4, 256],
                               parir.par({'row': parir.threads(4), 'col': parir.threads(256)}))
    assert "__shared__ int32_t parir_old0;" in src
    assert "if (threadIdx.x == 0) parir_old0 = parir::atomic_combine(parir::Sum(), &c[0], 1);" \
        in src
    # The other threads read the old value only after the barrier that follows its store.
    lines = [t.strip() for t in src.splitlines() if t.strip() and not t.startswith("#line")]
    store = next(k for k, t in enumerate(lines) if t.endswith("parir_old0 = parir::atomic_combine("
                                                               "parir::Sum(), &c[0], 1);"))
    assert lines[store + 1] == "__syncthreads();", src
    parir._C.nvrtc_compile(src, "sm_90")


@parir.jit
def exchange_per_block(t, v, out, N, M):
    parir.label('row')
    for r in range(N):
        o = parir.atomic_exchange(t[r], v[r])
        parir.label('col')
        for j in range(M):
            out[r, j] = o


@pytest.mark.parametrize("dtype", ALL, ids=case_id)
def test_block_level_old_values_of_every_dtype_compile(dtype):
    src = parir.print_compiled(exchange_per_block, [meta(4, dtype), meta(4, dtype),
                                                    torch.empty(4, 64, dtype=dtype,
                                                                device="meta"), 4, 64],
                               parir.par({'row': parir.threads(4), 'col': parir.threads(64)}))
    assert "__shared__ " in src and "parir_old0 = parir::atomic_combine(parir::Exchange()" in src
    parir._C.nvrtc_compile(src, "sm_90")


def test_block_level_old_values_run_as_plain_python():
    t, v, out = torch.arange(4.0), torch.arange(10.0, 14.0), torch.zeros(4, 3)
    exchange_per_block(t, v, out, 4, 3, seq=True)
    assert torch.equal(t, torch.arange(10.0, 14.0))
    assert torch.equal(out, torch.arange(4.0)[:, None].expand(4, 3))


@parir.jit
def count_and_sum_rows(x, c, y, N, M):
    parir.label('row')
    for r in range(N):
        parir.atomic_add(c[0], 1)
        parir.label('col')
        for j in range(M):
            y[r] += x[r, j]


@parir.jit
def claim_and_sum_rows(x, c, y, N, M):
    parir.label('row')
    for r in range(N):
        k = parir.atomic_add(c[0], 1)
        parir.label('col')
        for j in range(M):
            y[k] += x[r, j]


def cluster_opts():
    opts = parir.par({'row': parir.threads(3), 'col': parir.threads(4096).reduce()})
    opts.use_cuda_thread_block_clusters = True
    return opts


def test_block_level_update_in_a_cluster_is_done_once_per_cluster():
    args = [torch.empty(3, 4096, device="meta"), meta(1, torch.int32), meta(3, torch.float32),
            3, 4096]
    src = parir.print_compiled(count_and_sum_rows, args, cluster_opts())
    assert "if (threadIdx.x == 0 && parir::cluster_rank() == 0) parir::atomic_combine(" in src
    parir._C.nvrtc_compile(src, "sm_90")
    with pytest.raises(parir.ParirError, match=r"old value of this atomic update outside the "
                                               r"innermost parallel loop would have to reach "
                                               r"every block of a thread block cluster"):
        parir.print_compiled(claim_and_sum_rows, args, cluster_opts())


@parir.jit
def count_into_a_dict_entry(d, idx, N):
    parir.label('N')
    for i in range(N):
        parir.atomic_add(d['hist'][idx[i]], 1)


def test_an_element_of_a_dict_entry_updates_atomically():
    d = {'hist': torch.zeros(3, dtype=torch.int64)}
    idx = torch.tensor([0, 2, 2, 1, 2])
    count_into_a_dict_entry(d, idx, 5, seq=True)
    assert d['hist'].tolist() == [1, 1, 3]
    src = parir.print_compiled(count_into_a_dict_entry, [d, idx, 5],
                               parir.par({'N': parir.threads(5)}))
    assert "parir::atomic_combine(parir::Sum(), &d__hist[" in src


def test_an_old_value_does_not_cross_a_kernel_cut():
    # Over 5000 threads a row spans several blocks: the update runs in a kernel before the
    # loop's, once, and its old value is not there for the loop.
    with pytest.raises(parir.ParirError, match=r"test_atomics.py:\d+: local variable 'slot' is "
                                               r"read in kernel claim_rows_1 but assigned only "
                                               r"in other parallel code"):
        parir.print_compiled(claim_rows, [meta(1, torch.int32),
                                          torch.empty(3, 5000, device="meta"), 3, 5000],
                             parir.par({'row': parir.threads(3), 'col': parir.threads(5000)}))


def test_an_update_is_never_repeated_into_a_later_kernel():
    src = parir.print_compiled(count_then_fill, [meta(2, torch.int32),
                                                 torch.empty(3, 5000, device="meta"), 3, 5000],
                               parir.par({'row': parir.threads(3), 'col': parir.threads(5000)}))
    parir._C.nvrtc_compile(src, "sm_90")
    src = without_aligned_copies(src)  # the fill's copy for aligned tensors repeats it
    assert len([l for l in src.splitlines() if l.startswith("//@ launch")]) == 2
    assert src.count("atomic_combine") == 1
    assert src.count("k = (r * 2L);") == 1  # the local is computed where it is used


def test_an_update_in_a_reduction_loop_is_not_its_accumulation():
    src = parir.print_compiled(sum_and_count, [meta(5000, torch.float32), meta(2, torch.int32),
                                               meta(1, torch.float32), 5000],
                               parir.par({'R': parir.threads(5000).reduce()}))
    assert "parir::Sum()" in src and "atomic_combine(parir::Sum(), &h[" in src
    assert src.count("atomic_combine(parir::Sum(), &h[") == 1
    parir._C.nvrtc_compile(src, "sm_90")


def test_a_loop_with_two_accumulations_and_an_update_is_not_copied():
    # Copying the loop once per accumulation would repeat the update; it stays one loop, which
    # reduces into s[0] and updates s[1] atomically in every iteration.
    src = parir.print_compiled(two_sums_and_a_count, [meta(100, torch.float32),
                                                      meta(2, torch.float32),
                                                      meta(1, torch.int32), 100],
                               parir.par({'R': parir.threads(100).reduce()}))
    kernels = without_aligned_copies(src).split("//@")[0]
    assert kernels.count("__global__") == 1
    assert kernels.count("&h[0]") == 1 and "&s[1]" in kernels and "block_reduce" in kernels


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 4097])
def test_two_accumulations_and_an_update_on_the_gpu(n, rng):
    x = torch.randn(n, generator=rng).cuda()
    s = torch.zeros(2, device="cuda")
    h = torch.zeros(1, dtype=torch.int32, device="cuda")
    two_sums_and_a_count(x, s, h, n, opts=parir.par({'R': parir.threads(min(n, 1024)).reduce()}))
    xd = x.double().cpu()
    torch.testing.assert_close(s.cpu().double(), torch.stack([xd.sum(), (xd * xd).sum()]),
                               rtol=1e-4, atol=1e-4)
    assert h.item() == n


def test_an_update_of_data_chosen_elements_gets_no_race_warning(recwarn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", parir.ParirWarning)
        parir.print_compiled(scatter_add, [meta(7, torch.float32), meta(300, torch.int64),
                                           meta(300, torch.float32), 300],
                             parir.par({'N': parir.threads(300)}))


def test_the_race_warning_suggests_atomic_updates(tmp_path):
    module = load_module(tmp_path, """
import parir_torch as parir

def racy(out, idx, w, N):
    parir.label('N')
    for i in range(N):
        out[idx[i]] += w[i]
""", "racy_scatter")
    with pytest.warns(parir.ParirWarning, match=r"race and lose updates \(parir.atomic_add"):
        parir.print_compiled(parir.jit(module.racy), [meta(7, torch.float32),
                                                      meta(30, torch.int64),
                                                      meta(30, torch.float32), 30],
                             parir.par({'N': parir.threads(30)}))


def bump(h, b):
    old = parir.atomic_add(h[b], 1)
    return old


@parir.jit
def bump_rows(h, ids, N):
    parir.label('N')
    for i in range(N):
        ids[i] = bump(h[i % 2], i % 3)


@parir.jit
def old_in_a_wider_local(h, x, out, N):
    parir.label('N')
    for i in range(N):
        o = x[i]
        if i > 2:
            o = parir.atomic_max(h[i % 4], x[i])
        out[i] = o


def test_updates_in_called_functions_and_wider_locals_compile():
    src = parir.print_compiled(bump_rows, [torch.empty(2, 3, dtype=torch.int32, device="meta"),
                                           meta(10, torch.int64), 10],
                               parir.par({'N': parir.threads(10)}))
    assert "atomic_combine(parir::Sum(), &h[" in src
    parir._C.nvrtc_compile(src, "sm_90")
    src = parir.print_compiled(old_in_a_wider_local, [meta(4, torch.float16),
                                                      meta(10, torch.float32),
                                                      meta(10, torch.float32), 10],
                               parir.par({'N': parir.threads(10)}))
    assert "parir::from_half<float>(parir::atomic_combine(parir::Max()" in src
    parir._C.nvrtc_compile(src, "sm_90")


def test_updates_in_called_functions_run_as_plain_python():
    h, ids = torch.zeros(2, 3, dtype=torch.int32), torch.zeros(10, dtype=torch.int64)
    bump_rows(h, ids, 10, seq=True)
    expected = torch.zeros(2, 3, dtype=torch.int32)
    for i in range(10):
        expected[i % 2, i % 3] += 1
    assert torch.equal(h, expected)
    assert ids.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]


def test_claim_rows_runs_as_plain_python():
    c, y = torch.zeros(1, dtype=torch.int32), torch.zeros(4, 3)
    claim_rows(c, y, 4, 3, seq=True)
    assert c.item() == 4 and torch.equal(y, torch.arange(4.0)[:, None].expand(4, 3))


# ----- on the GPU ----------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("pattern", ["many", "few"])
@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{case_id(d)}" for o, d in CASES])
def test_gpu_updates_and_old_values(op, dtype, n, pattern):
    run_case(op, dtype, n, pattern, "cuda", seq=False)


@pytest.mark.gpu
@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{case_id(d)}" for o, d in CASES])
def test_gpu_updates_as_statements(op, dtype):
    for n, pattern in [(4097, "many"), (1_000_003, "few")]:
        run_case(op, dtype, n, pattern, "cuda", seq=False, with_old=False)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint32, torch.uint64,
                                   torch.float32, torch.float64])
@pytest.mark.parametrize("n", SIZES)
def test_gpu_counter_hands_out_each_number_once(dtype, n):
    c, ids = torch.zeros(1, dtype=dtype, device="cuda"), torch.zeros(n, dtype=torch.int64,
                                                                       device="cuda")
    counter(c, ids, n, opts=parir.par({'N': parir.threads(n)}))
    assert torch.equal(ids.sort().values.cpu(), torch.arange(n))
    assert c.item() == n


@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", [1, 10, 1000])
def test_gpu_histogram_is_torch_bincount(n, bins):
    x = torch.rand(n, device="cuda")
    hist = torch.zeros(bins, dtype=torch.int32, device="cuda")
    histogram(x, hist, n, bins, opts=parir.par({'N': parir.threads(n)}))
    # The bins as the kernel computes them, x * bins in float32 (torch.histc's formula too).
    want = torch.bincount((x * bins).long().clamp(max=bins - 1), minlength=bins)
    assert torch.equal(hist.long(), want)
    assert torch.equal(hist, torch.histc(x, bins, 0, 1).to(torch.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", [3, 100_000])
def test_gpu_float_sums_of_random_values_within_tolerance(dtype, n, bins):
    gen = torch.Generator().manual_seed(n)
    idx = torch.randint(0, bins, (n,), generator=gen)
    w = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype)
    out = torch.zeros(bins, dtype=dtype, device="cuda")
    scatter_add(out, idx.cuda(), w.cuda(), n, opts=parir.par({'N': parir.threads(n)}))
    want = torch.zeros(bins, dtype=torch.float64).index_add_(0, idx, w.double())
    count = torch.bincount(idx, minlength=bins).double()
    # Each addition rounds once, by at most half an ulp of its partial sum, which for k random
    # normal values is about sqrt(k) in size; the k roundings add up like a random walk, to
    # about eps * k / 2 in all. The bound allows 64 times that, and the worst case for small k.
    eps = torch.finfo(dtype).eps
    tol = 32 * eps * (count + 4)
    err = (out.cpu().double() - want).abs()
    assert (err <= tol).all(), f"largest error {err.max().item()} (allowed {tol.max().item()})"


@pytest.mark.gpu
@pytest.mark.parametrize("rows,cols", [(1, 31), (33, 256), (1000, 1024)])
def test_gpu_block_level_update_shares_its_old_value(rows, cols):
    c = torch.zeros(1, dtype=torch.int32, device="cuda")
    y = torch.full((rows, cols), -1.0, device="cuda")
    claim_rows(c, y, rows, cols,
               opts=parir.par({'row': parir.threads(rows), 'col': parir.threads(cols)}))
    assert c.item() == rows
    # Each block claimed one row and all its threads wrote it: a permutation of the rows.
    assert torch.equal(y[:, :1].expand(rows, cols), y)
    assert torch.equal(y[:, 0].sort().values.cpu(), torch.arange(rows, dtype=torch.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL, ids=case_id)
def test_gpu_block_level_old_values_of_every_dtype(dtype):
    gen = torch.Generator().manual_seed(5)
    t0, v = random_values(33, dtype, "exchange", gen), random_values(33, dtype, "exchange", gen)
    t, out = t0.cuda(), torch.zeros(33, 64, dtype=dtype, device="cuda")
    exchange_per_block(t, v.cuda(), out, 33, 64,
                       opts=parir.par({'row': parir.threads(33), 'col': parir.threads(64)}))
    assert torch.equal(bits(t.cpu()), bits(v))
    assert torch.equal(bits(out.cpu()), bits(t0)[:, None].expand(33, 64))


@pytest.mark.gpu
def test_gpu_block_level_update_in_a_cluster_is_done_once_per_row():
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("thread block clusters need compute capability 9.0")
    x = torch.rand(3, 4096, device="cuda")
    c, y = torch.zeros(1, dtype=torch.int32, device="cuda"), torch.zeros(3, device="cuda")
    count_and_sum_rows(x, c, y, 3, 4096, opts=cluster_opts())
    assert c.item() == 3
    torch.testing.assert_close(y, x.sum(1), rtol=1e-5, atol=1e-3)


@pytest.mark.gpu
def test_gpu_update_through_strided_views():
    base = torch.zeros(6, 8, dtype=torch.int64, device="cuda")
    h = base.t()[1::2]  # non-contiguous
    idx = torch.arange(1000, device="cuda") % h.shape[0]
    scatter_add(h[:, 3], idx, torch.ones(1000, dtype=torch.int64, device="cuda"), 1000,
                opts=parir.par({'N': parir.threads(1000)}))
    assert torch.equal(base[3, 1::2].cpu(), torch.bincount(idx.cpu(), minlength=4))
    assert base.sum().item() == 1000


@pytest.mark.gpu
def test_gpu_out_of_bounds_update_is_skipped_and_reported():
    h = torch.zeros(4, dtype=torch.int32, device="cuda")
    idx = torch.tensor([0, 1, 9, 2], device="cuda")
    opts = parir.par({'N': parir.threads(4)})
    opts.bounds_check = True
    with pytest.raises(parir.ParirError, match=r"index 9 of 'out' \(dimension 0\) is out of bounds"):
        scatter_add(h, idx, torch.ones(4, dtype=torch.int32, device="cuda"), 4, opts=opts)
    assert h.tolist() == [1, 1, 1, 0]


@pytest.mark.gpu
def test_gpu_check_passes_for_a_histogram():
    x = torch.rand(10_000, device="cuda")
    hist = torch.zeros(16, dtype=torch.int32, device="cuda")
    parir.check(histogram, x, hist, 10_000, 16, opts=parir.par({'N': parir.threads(10_000)}))


def readme_histogram():
    """The README's atomic-update example: (the definition, the lines that run it)."""
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    section = text[text.index("**Atomic updates.**"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return code.split("\n\n", 1)


def test_the_readme_histogram_runs_as_plain_python_and_compiles(tmp_path):
    definition, _ = readme_histogram()
    module = load_module(tmp_path, "import torch\nimport parir_torch as parir\n\n" + definition,
                         "readme_histogram")
    x = torch.rand(300, generator=torch.Generator().manual_seed(4))
    hist = torch.zeros(100, dtype=torch.int32)
    module.histogram(x, hist, 300, 100, seq=True)
    assert torch.equal(hist, torch.histc(x, 100, 0, 1).int())
    src = parir.print_compiled(module.histogram, [x, hist, 300, 100],
                               parir.par({'N': parir.threads(300)}))
    parir._C.nvrtc_compile(src, "sm_90")


@pytest.mark.gpu
def test_gpu_the_readme_histogram_runs(tmp_path):
    definition, run = readme_histogram()
    module = load_module(tmp_path, "import torch\nimport parir_torch as parir\n\n" + definition
                         + "\n\ndef main():\n" + "".join("    " + line + "\n"
                                                         for line in run.splitlines()),
                         "readme_histogram_gpu")
    module.main()
