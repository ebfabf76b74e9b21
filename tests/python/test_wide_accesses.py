"""Wide accesses: a thread-level loop that walks a contiguous dimension moves 16 bytes per load
and store (four float32, two float64, eight float16), or 8 where a loop that is not a reduction
reads several tensors on a GPU whose memory is slower than 4 TB/s, where the tensors' data pointers are aligned, and element by element
where they are not. The code must show it where it applies and
only there, and the results must be torch's for aligned and misaligned views, every element
size, row widths that are and are not multiples of the width, and tensors that alias."""

import os
import re
import sys

import pytest
import torch

import parir_torch as parir
from parir_torch import build
from helpers import check_close, without_aligned_copies

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from kernels import softmax_rows, stencil_2d  # noqa: E402  (the roofline's kernels)


@parir.jit
def axpy(a, x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] += a * x[i]


@parir.jit
def scaled_copy(x, y, N):
    parir.label('i')
    for i in range(N):
        t = x[i] * 2.0
        u = t + 1.0
        y[i] = u * t


@parir.jit
def copy_then_reread(x, y, z, N):
    # The second statement reads the element the first one stored.
    parir.label('i')
    for i in range(N):
        y[i] = x[i] + 1.0
        z[i] = y[i] * 3.0


@parir.jit
def every_other(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[2 * i]


@parir.jit
def clipped(x, y, N):
    parir.label('i')
    for i in range(N):
        if x[i] > 0.0:
            y[i] = x[i]


@parir.jit
def row_sums(x, y, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            y[i] += x[i, j]


@parir.jit
def row_dots(x, z, y, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            y[i] += x[i, j] * z[i, j]


@parir.jit
def row_max(x, y, N, M):
    parir.label('N')
    parir.label('M')
    y[:] = parir.max(x[:, :], axis=1)


@parir.jit
def shifted_sum(x, y, N):
    # x[i + 1] is contiguous too, but starts one element past a 16-byte boundary.
    parir.label('i')
    for i in range(N - 1):
        y[i] = x[i] + x[i + 1]


@parir.jit
def mixed(h, d, N):
    parir.label('i')
    for i in range(N):
        d[i] = d[i] + h[i]


real_memory_bandwidth_gbps = build.memory_bandwidth_gbps
H100_GBPS = 3352  # an H100 SXM's peak: 2 x 2,619 MHz x 5,120 bits
H200_GBPS = 4915  # an H200's: 2 x 3,201 MHz x 6,144 bits


@pytest.fixture(autouse=True)
def h100_memory(monkeypatch):
    """The code these tests read is generated for an H100's memory, whatever GPU runs them."""
    monkeypatch.setattr(build, "memory_bandwidth_gbps", lambda device: H100_GBPS)


def spec(n):
    return parir.par({'i': parir.threads(n)})


def row_spec(n, threads=1024):
    return parir.par({'N': parir.threads(n), 'M': parir.threads(threads).reduce()})


def code(fn, args, opts):
    return parir.print_compiled(fn, args, opts=opts)


def test_an_elementwise_loop_reading_two_tensors_moves_8_bytes_and_launches_half_the_threads():
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    text = code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))
    assert "parir::aligned<8>(x, y)" in text
    assert re.search(r"parir::load_wide\(x \+ [^,]+, \w+, \w+\);", text)
    assert re.search(r"parir::store_wide\(y \+ [^,]+, \w+, \w+\);", text)
    # As many blocks as before (1024), of half the threads.
    assert "launch axpy grid(1024) block(512)" in text
    # The misaligned path keeps plain element accesses.
    assert "y[" in text and "x[" in text
    # Groups stay at least two elements: float64 keeps 16 bytes, float16 takes four.
    x, y = torch.empty(1 << 20, dtype=torch.float64), torch.empty(1 << 20, dtype=torch.float64)
    text = code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))
    assert "parir::aligned<16>(x, y)" in text and "launch axpy grid(1024) block(512)" in text
    x, y = torch.empty(1 << 20, dtype=torch.float16), torch.empty(1 << 20, dtype=torch.float16)
    text = code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))
    assert "parir::aligned<8>(x, y)" in text and "launch axpy grid(1024) block(256)" in text


def test_on_faster_memory_an_elementwise_loop_moves_16_bytes(monkeypatch):
    # An H200's memory wants more bytes in flight per thread: 16-byte groups, a quarter of the
    # threads.
    monkeypatch.setattr(build, "memory_bandwidth_gbps", lambda device: H200_GBPS)
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    text = code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))
    assert "parir::aligned<16>(x, y)" in text and "launch axpy grid(1024) block(256)" in text
    assert re.search(r"parir::load_wide\(x \+ [^,]+, \w+, \w+, \w+, \w+\);", text)
    # Unknown memory (code printed where there is no GPU) gets the slower memory's groups.
    monkeypatch.setattr(build, "memory_bandwidth_gbps", lambda device: 0)
    assert "parir::aligned<8>(x, y)" in code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))


def test_the_memory_bandwidth_is_that_of_the_gpu_the_call_runs_on():
    assert build.target_device([torch.empty(3), 2.0]) == (
        torch.cuda.current_device() if torch.cuda.is_available() else None)
    assert real_memory_bandwidth_gbps(None) == 0


@pytest.mark.gpu
def test_the_memory_bandwidth_of_this_gpu_is_its_datasheets():
    name = torch.cuda.get_device_name()
    gbps = real_memory_bandwidth_gbps(torch.cuda.current_device())
    assert gbps > 0
    if "H100" in name and "HBM3" in name:
        assert abs(gbps - H100_GBPS) < 50, gbps
    elif "H200" in name:
        # The H200s measured here give memory clocks of 3,134-3,201 MHz through torch's device
        # properties (4,814-4,917 GB/s; the datasheet says 4.8 TB/s): all well above the
        # 4,000 GB/s where widen_accesses keeps 16-byte groups.
        assert 4700 < gbps < 5000, gbps


def test_a_loop_reading_one_tensor_or_reducing_keeps_16_bytes():
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    text = code(scaled_copy, (x, y, 1 << 20), spec(1 << 20))
    assert "parir::aligned<16>(x, y)" in text and "launch scaled_copy grid(1024) block(256)" in text
    # A row reduction of two tensors' products keeps 16-byte groups.
    x, z, y = torch.empty(64, 8192), torch.empty(64, 8192), torch.empty(64)
    assert "parir::aligned<16>(x, z)" in code(row_dots, (x, z, y, 64, 8192), row_spec(64))


@pytest.mark.parametrize("dtype,width", [(torch.float64, 2), (torch.float16, 8),
                                         (torch.bfloat16, 8), (torch.int32, 4),
                                         (torch.int64, 2)])
def test_the_width_is_16_bytes_of_the_element_type(dtype, width):
    x, y = torch.empty(4096, dtype=dtype), torch.empty(4096, dtype=dtype)
    text = code(scaled_copy if dtype.is_floating_point else every_other_free, (x, y, 4096),
                spec(4096))
    m = re.search(r"parir::load_wide\(x \+ [^;]+\);", text)
    assert m and m.group(0).count(",") == width


@parir.jit
def every_other_free(x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] = x[i] * 3


def test_rows_of_a_reduction_are_read_16_bytes_at_a_time():
    x, y = torch.empty(64, 8192), torch.empty(64)
    text = code(row_sums, (x, y, 64, 8192), row_spec(64))
    assert "parir::load_wide(x + " in text
    assert "block_reduce" in text and "grid(64) block(1024)" in text
    text = code(row_max, (x, y, 64, 8192), row_spec(64))
    assert "parir::load_wide(x + " in text


def test_no_wide_accesses_where_they_cannot_apply():
    # A stride of 2, a branch in the body, a row of fewer elements than one group.
    x, y = torch.empty(2048), torch.empty(1024)
    assert "load_wide" not in code(every_other, (x, y, 1024), spec(1024))
    x, y = torch.empty(1024), torch.empty(1024)
    assert "load_wide" not in code(clipped, (x, y, 1024), spec(1024))
    x, y = torch.empty(64, 3), torch.empty(64)
    assert "load_wide" not in code(row_sums, (x, y, 64, 3), row_spec(64))
    x, y = torch.empty(4097), torch.empty(4097)
    text = without_aligned_copies(code(shifted_sum, (x, y, 4097), spec(4096)))
    assert text.count("load_wide") == 1  # x[i] only; x[i + 1] element by element



def kernel_text(source, name):
    """The text of one kernel of a generated source, from its signature to its closing brace."""
    start = source.index(f" {name}(")
    return source[start:source.index("\n}\n", start)]


def test_kernels_that_test_alignment_get_a_copy_for_aligned_data():
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    text = code(axpy, (2.0, x, y, 1 << 20), spec(1 << 20))
    assert "launch axpy grid(1024) block(512) (x, y) aligned(axpy_aligned)" in text
    general, copy = kernel_text(text, "axpy"), kernel_text(text, "axpy_aligned")
    assert "parir::aligned<8>(x, y)" in general and "y[" in general
    # The copy has the wide accesses only: no test and no element path.
    assert "parir::aligned" not in copy and "x[" not in copy and "y[" not in copy
    assert copy.count("parir::load_wide") == 2 and copy.count("parir::store_wide") == 1
    # Off the 16-byte grid the copy keeps the test of the range and the element path of the
    # last group.
    x, y = torch.empty(4097), torch.empty(4097)
    copy = kernel_text(code(axpy, (2.0, x, y, 4097), spec(4097)), "axpy_aligned")
    assert "if (i_w0 < 2048L) {" in copy and "parir::aligned" not in copy and "y[" in copy
    # Rows kept in registers: the copy reads and writes whole groups only.
    x, y = torch.empty(64, 2048), torch.empty(64, 2048)
    text = code(softmax_rows, (x, y, 64, 2048),
                parir.par({'N': parir.threads(64), 'M': parir.threads(512)}))
    assert "aligned(softmax_rows_aligned)" in text
    copy = kernel_text(text, "softmax_rows_aligned")
    assert "parir::aligned" not in copy and "out[" not in copy
    assert copy.count("x[") == 1  # the row's first element, where its maximum starts
    # No test, no copy; nor without wide accesses.
    x, y = torch.empty(2048), torch.empty(1024)
    text = code(every_other, (x, y, 1024), spec(1024))
    assert "_aligned" not in text and "aligned(" not in text
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    opts = spec(1 << 20)
    opts.wide_accesses = False
    text = code(axpy, (2.0, x, y, 1 << 20), opts)
    assert "_aligned" not in text

@parir.jit
def stencil_1d(x, y, N):
    parir.label('i')
    for i in range(1, N - 1):
        y[i] = x[i - 1] + 2.0 * x[i] + x[i + 1]


@parir.jit
def tail_sums(x, y, N, M):
    # Each row from its second element.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(1, M):
            y[i] += x[i, j]


def stencil_spec(n, m):
    return parir.par({'i': parir.threads(n - 2), 'j': parir.threads(m - 2)})


def test_loops_off_the_16_byte_grid_widen_their_whole_groups():
    # 4097 elements: 2048 groups of two (two tensors read: 8 bytes), the last one (element 4096)
    # element by element; the five blocks of 4097 threads stay five, of 416 threads.
    x, y = torch.empty(4097), torch.empty(4097)
    text = code(axpy, (2.0, x, y, 4097), spec(4097))
    assert "parir::load_wide(x + " in text and "parir::store_wide(y + " in text
    assert "(i_w0 < 2048L) && parir::aligned<8>(x, y)" in text
    assert "if ((((i_w0 * 2L) + 1L) >= 0L) && (((i_w0 * 2L) + 1L) < 4097L))" in text
    assert "launch axpy grid(5) block(416)" in text
    # Small loops keep their plain code: too few bytes for the width to matter.
    x, y = torch.empty(1001), torch.empty(1001)
    assert "load_wide" not in code(axpy, (2.0, x, y, 1001), spec(1001))
    # The interior of a grid: groups on the 16-byte grid of the rows, the first and the last
    # cut by the interior's edges; x[i, j - 1] and x[i, j + 1] off that grid are read element
    # by element.
    x, y = torch.empty(1000, 1000), torch.empty(1000, 1000)
    text = without_aligned_copies(code(stencil_2d, (x, y, 1000, 1000), stencil_spec(1000, 1000)))
    assert text.count("parir::load_wide(x + ") == 3 and text.count("parir::store_wide(y + ") == 1
    # Within the wide group the neighbours come from the loaded row: two elements, one past
    # each end of the group, are read on their own.
    wide = text[text.index("parir::load_wide(x + "):text.index("parir::store_wide(y + ")]
    assert wide.count("x[") == 2
    assert "(j_w0 < 249L) && ((j_w0 >= 1L) && parir::aligned<16>(x, y))" in text
    assert "if ((((j_w0 * 4L) + 3L) >= 1L) && (((j_w0 * 4L) + 3L) < 999L))" in text
    # Rows summed from their second element: the first group holds elements 1 to 3 only.
    x, y = torch.empty(64, 1024), torch.empty(64)
    text = code(tail_sums, (x, y, 64, 1024), row_spec(64))
    assert "(j_w0 >= 1L) && parir::aligned<16>(x)" in text
    # Rows of 1002 elements start on the 16-byte grid only every other row.
    x, y = torch.empty(64, 1002), torch.empty(64)
    assert "load_wide" not in code(row_sums, (x, y, 64, 1002), row_spec(64))


def test_a_row_sum_loads_its_target_before_the_row():
    x, y = torch.empty(64, 8192), torch.empty(64)
    text = code(row_sums, (x, y, 64, 8192), row_spec(64))
    before = text.index("y_before0 = y[i];")
    assert before < text.index("parir::load_wide(x + ")
    assert "if (threadIdx.x == 0) y[i] = (y_before0 + acc0);" in text
    # A slice reduction assigns its target without reading it: nothing to load.
    assert "_before" not in code(row_max, (x, y, 64, 8192), row_spec(64))


@parir.jit
def sum_and_scale(x, y, z, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            y[i] += x[i, j]
            z[i, j] = 2.0 * x[i, j]


@parir.jit
def sums_of_multiples(x, y, N, M):
    # The row is summed into y[i] twice, as y[i] + sum(x[i, :]) and then that plus 2 * sum.
    parir.label('N')
    for i in range(N):
        for t in range(2):
            parir.label('M')
            for j in range(M):
                y[i] += x[i, j] * (t + 1)


def test_a_reduction_loop_that_stores_reads_its_target_at_the_end():
    # z may be y: the target is read after the loop's stores, where it always was.
    x, z = torch.empty(64, 1024), torch.empty(64, 1024)
    y = torch.empty(64)
    text = code(sum_and_scale, (x, y, z, 64, 1024), row_spec(64))
    assert "_before" not in text and "y[i] = (y[i] + acc" in text


def test_rows_in_registers_keep_their_loops_and_move_a_group_per_access():
    # Each thread's registers hold its own elements of the row, in groups of four consecutive
    # ones: the loops that read them keep their iterations (no loop over groups of widen_accesses)
    # and move each group with one 16-byte access.
    from test_rows_in_registers import l2_normalize, layer_norm, softmax
    x, y = torch.empty(64, 8192), torch.empty(64, 8192)
    w, b = torch.empty(8192), torch.empty(8192)
    opts = parir.par({'N': parir.threads(64), 'M': parir.threads(1024),
                      'D': parir.threads(1024), 'row': parir.threads(64),
                      'acc': parir.threads(1024).reduce(), 'scale': parir.threads(1024)})
    for fn, args in [(softmax, (x, y, 64, 8192)), (layer_norm, (x, w, b, y, 64, 8192, 1e-5)),
                     (l2_normalize, (x, y, 64, 8192))]:
        text = code(fn, args, opts)
        assert not re.search(r"\b\w+_w0\b", text), fn.__name__
        assert re.search(r"load_wide\(x \+ \w+ \* 8192 \+ \w+ \* 4, x_r\d+, x_r\d+, x_r\d+, "
                         r"x_r\d+\)", text), fn.__name__
        assert "store_wide(out + " in text and "parir::aligned<16>" in text, fn.__name__


# ----- on the GPU ---------------------------------------------------------------------------

def fresh(n, dtype=torch.float32, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.rand(n, device="cuda", generator=g) * 4 - 1).to(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 4, 31, 33, 1000, 1024, 4097, 1 << 20, 3 * (1 << 20) + 8])
def test_axpy_matches_torch(n):
    x, y = fresh(n, seed=1), fresh(n, seed=2)
    expected = y + 2.5 * x
    axpy(2.5, x, y, n, opts=spec(n))
    check_close(y, expected, f"axpy {n}")


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4])
def test_misaligned_views_take_the_element_path(offset):
    n = 4096
    xs, ys = fresh(n + 8, seed=3), fresh(n + 8, seed=4)
    x, y = xs[offset:offset + n], ys[(offset * 3) % 8:(offset * 3) % 8 + n]
    expected = y + 2.0 * x
    untouched = ys.clone()
    axpy(2.0, x, y, n, opts=spec(n))
    check_close(y, expected, f"axpy views at {offset}")
    lo, hi = (offset * 3) % 8, (offset * 3) % 8 + n
    assert torch.equal(ys[:lo], untouched[:lo]) and torch.equal(ys[hi:], untouched[hi:])



def launched_kernels(run):
    """The names of the CUDA kernels run() launches, from a profiler trace."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.gpu
def test_aligned_tensors_launch_the_copy_and_views_off_16_bytes_the_tested_kernel():
    n = 1 << 16
    xs, ys = fresh(n + 4, seed=8), fresh(n + 4, seed=9)
    for offset, kernel in ((0, "axpy_aligned"), (2, "axpy"), (4, "axpy_aligned")):
        x, y = xs[offset:offset + n], ys[offset:offset + n]
        expected = y + 3.0 * x
        names = launched_kernels(lambda: axpy(3.0, x, y, n, opts=spec(n)))
        assert [k for k in names if k.startswith("axpy")] == [kernel], (offset, names)
        check_close(y, expected, f"axpy at offset {offset}")
    # One of the tensors off 16 bytes is enough for the tested kernel; 8-byte groups still
    # take their wide path in it (x and y at 8 bytes).
    x, y = xs[2:2 + n], ys[:n]
    expected = y + 3.0 * x
    names = launched_kernels(lambda: axpy(3.0, x, y, n, opts=spec(n)))
    assert [k for k in names if k.startswith("axpy")] == ["axpy"], names
    check_close(y, expected, "axpy with one view at 8 bytes")

@pytest.mark.gpu
def test_in_place_and_aliased_arguments():
    n = 1 << 16
    x = fresh(n, seed=5)
    expected = x + 2.0 * x
    axpy(2.0, x, x, n, opts=spec(n))
    check_close(x, expected, "axpy in place")
    x = fresh(n, seed=6)
    y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    copy_then_reread(x, y, z, n, opts=spec(n))
    check_close(y, x + 1.0, "stored")
    check_close(z, (x + 1.0) * 3.0, "stored then read")
    # The same tensor as y and z: z's store is the last.
    x = fresh(n, seed=7)
    y = torch.full_like(x, float("nan"))
    copy_then_reread(x, y, y, n, opts=spec(n))
    check_close(y, (x + 1.0) * 3.0, "y and z the same tensor")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("n", [8, 1000, 4096, 65536 + 8])
def test_locals_of_each_element(dtype, n):
    x = fresh(n, dtype, seed=8)
    y = torch.full_like(x, float("nan"))
    scaled_copy(x, y, n, opts=spec(n))
    t = x.double() * 2.0
    if dtype in (torch.float16, torch.bfloat16):
        assert not torch.isnan(y).any()
        torch.testing.assert_close(y.double(), (t + 1.0) * t, rtol=2e-2, atol=5e-2)
    else:
        check_close(y, ((t + 1.0) * t).to(dtype), f"{dtype} {n}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_integers(dtype):
    n = 4096 + 16
    x = (fresh(n, seed=9) * 40).to(dtype)
    y = torch.zeros_like(x)
    every_other_free(x, y, n, opts=spec(n))
    assert torch.equal(y, (x * 3).to(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(1, 8), (3, 1000), (33, 1002), (100, 4096), (257, 8192),
                                 (7, 4097)])
def test_row_reductions(n, m):
    g = torch.Generator(device="cuda").manual_seed(n * m)
    x = torch.rand(n, m, device="cuda", generator=g) - 0.3
    y = torch.zeros(n, device="cuda")
    row_sums(x, y, n, m, opts=row_spec(n))
    check_close(y, x.double().sum(1), f"row sums {n}x{m}")
    y = torch.full((n,), float("nan"), device="cuda")
    row_max(x, y, n, m, opts=row_spec(n, 256))
    assert torch.equal(y, x.max(1).values)
    # A view whose rows start off the 16-byte boundary: element by element.
    wide = torch.rand(n, m + 1, device="cuda", generator=g)
    view = wide[:, 1:]
    y = torch.zeros(n, device="cuda")
    row_sums(view, y, n, m, opts=row_spec(n))
    check_close(y, view.double().sum(1), f"row sums of a view {n}x{m}")


@pytest.mark.gpu
def test_shifted_reads_and_mixed_types():
    n = 4097
    x = fresh(n, seed=10)
    y = torch.full((n,), float("nan"), device="cuda")
    shifted_sum(x, y, n, opts=spec(n - 1))
    check_close(y[:-1], x[:-1] + x[1:], "x[i] + x[i + 1]")
    assert torch.isnan(y[-1])
    n = 4096
    h = fresh(n, torch.float16, seed=11)
    d = fresh(n, torch.float64, seed=12)
    expected = d + h.double()
    mixed(h, d, n, opts=spec(n))
    check_close(d, expected, "float64 += float16")


@pytest.mark.gpu
def test_one_spec_for_two_functions_and_a_fresh_specialization_per_alignment():
    n = 1 << 12
    opts = spec(n)
    base = fresh(n + 4, seed=13)
    for start in (0, 1, 0, 2):
        x = base[start:start + n]
        y = torch.zeros(n, device="cuda")
        axpy(1.5, x, y, n, opts=opts)
        check_close(y, 1.5 * x, f"axpy from element {start}")
        z = torch.full((n,), float("nan"), device="cuda")
        scaled_copy(x, z, n, opts=opts)
        check_close(z, (x * 2 + 1) * (x * 2), f"scaled copy from element {start}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(3, 3), (3, 6), (5, 7), (33, 37), (100, 1000), (257, 4099),
                                 (64, 4098)])
def test_stencil_interior_matches_torch(n, m):
    g = torch.Generator(device="cuda").manual_seed(n * 7919 + m)
    x = torch.rand(n, m, device="cuda", generator=g) - 0.25
    y = torch.full((n, m), float("nan"), device="cuda")
    stencil_2d(x, y, n, m, opts=stencil_spec(n, m))
    expected = 0.2 * (x[1:-1, 1:-1] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    check_close(y[1:-1, 1:-1], expected, f"stencil {n}x{m}")
    # The border is not written.
    assert torch.isnan(y[0]).all() and torch.isnan(y[-1]).all()
    assert torch.isnan(y[:, 0]).all() and torch.isnan(y[:, -1]).all()
    # Views whose rows start off the 16-byte grid, and one whose rows are one element longer.
    big = torch.rand(n, m + 2, device="cuda", generator=g)
    for start in (1, 2):
        view = big[:, start:start + m]
        y = torch.full((n, m), float("nan"), device="cuda")
        stencil_2d(view, y, n, m, opts=stencil_spec(n, m))
        expected = 0.2 * (view[1:-1, 1:-1] + view[:-2, 1:-1] + view[2:, 1:-1] + view[1:-1, :-2]
                          + view[1:-1, 2:])
        check_close(y[1:-1, 1:-1], expected, f"stencil of a view from column {start}")


@pytest.mark.gpu
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 9, 33, 1000, 4097, (1 << 20) + 3])
def test_interior_of_a_vector_matches_torch(n):
    x = fresh(n, seed=n)
    y = torch.full((n,), float("nan"), device="cuda")
    stencil_1d(x, y, n, opts=spec(n - 2))
    check_close(y[1:-1], x[:-2] + 2.0 * x[1:-1] + x[2:], f"1-D stencil {n}")
    assert torch.isnan(y[0]) and torch.isnan(y[-1])
    # In place on an offset view of a float64 vector: two elements per group.
    xd = fresh(n + 1, torch.float64, seed=n + 1)
    view = xd[1:]
    out = torch.full((n,), float("nan"), device="cuda", dtype=torch.float64)
    stencil_1d(view, out, n, opts=spec(n - 2))
    check_close(out[1:-1], view[:-2] + 2.0 * view[1:-1] + view[2:], f"float64 view {n}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(1, 2), (5, 4), (33, 1001), (100, 4096), (7, 8193)])
def test_reductions_into_targets_that_hold_values(n, m):
    g = torch.Generator(device="cuda").manual_seed(n + m)
    x = torch.rand(n, m, device="cuda", generator=g) - 0.3
    y0 = torch.rand(n, device="cuda", generator=g) + 1.0
    y = y0.clone()
    row_sums(x, y, n, m, opts=row_spec(n))
    check_close(y, y0.double() + x.double().sum(1), f"y += row sums {n}x{m}")
    y = y0.clone()
    tail_sums(x, y, n, m, opts=row_spec(n))
    check_close(y, y0.double() + x[:, 1:].double().sum(1), f"y += sums from column 1 {n}x{m}")
    y = y0.clone()
    sums_of_multiples(x, y, n, m, opts=row_spec(n))
    check_close(y, y0.double() + 3 * x.double().sum(1), f"two sums in a row {n}x{m}")
    # The loop stores to the tensor it sums into (z is y's storage): the target is read after.
    y = y0.clone()
    z = torch.full((n, m), float("nan"), device="cuda")
    sum_and_scale(x, y, z, n, m, opts=row_spec(n))
    check_close(y, y0.double() + x.double().sum(1), f"sum and scale {n}x{m}")
    check_close(z, 2.0 * x, f"scaled {n}x{m}")


def test_wide_accesses_can_be_turned_off():
    x, y = torch.empty(1 << 20), torch.empty(1 << 20)
    opts = spec(1 << 20)
    opts.wide_accesses = False
    text = code(axpy, (2.0, x, y, 1 << 20), opts)
    assert "load_wide" not in text and "launch axpy grid(1024) block(1024)" in text
    assert "y[i] = (y[i] + (2.0f * x[i]));" in text


@pytest.mark.gpu
def test_the_same_results_with_and_without_wide_accesses():
    n, m = 129, 1030
    g = torch.Generator(device="cuda").manual_seed(17)
    x = torch.rand(n, m, device="cuda", generator=g) - 0.5
    outs = []
    for wide in (True, False):
        opts = stencil_spec(n, m)
        opts.wide_accesses = wide
        y = torch.full((n, m), float("nan"), device="cuda")
        stencil_2d(x, y, n, m, opts=opts)
        outs.append(y)
    assert torch.equal(outs[0][1:-1, 1:-1], outs[1][1:-1, 1:-1])
