"""Single-pass rows: threads that walk one row in several loops (softmax, layer norm, L2
normalization) keep their elements in registers between the loops, and a row shorter than the
threads asked for gets only as many threads as it has elements (and many rows of 513-4,096
elements as many as give each thread 8). The code must show it, and the
results must stay those of the plain program: sizes that are not multiples of the thread count,
rows too long to keep, in-place calls, and programs where keeping a value would be wrong."""

import os
import re
import sys

import pytest
import torch

import parir_torch as parir
from helpers import check_close, without_aligned_copies

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from kernels import layer_norm, rms_norm, softmax_rows as softmax  # noqa: E402  (the benchmarks')


@parir.jit
def l2_normalize(x, out, N, M):
    # Written with explicit loops, as a CUDA programmer would.
    parir.label('row')
    for row in range(N):
        total = 0.0
        parir.label('acc')
        for col in range(M):
            total += x[row, col] * x[row, col]
        norm = parir.sqrt(total) + 1e-12
        parir.label('scale')
        for col in range(M):
            out[row, col] = x[row, col] / norm


@parir.jit
def scale_then_sum(x, out, s, N, M):
    # Called with out = x too: the sum must then see the scaled values.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        out[i, :] = x[i, :] * 2.0
        parir.label('M')
        s[i] = parir.sum(x[i, :])


@parir.jit
def updated_in_place(x, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        x[i, :] += 1.0
        parir.label('M')
        x[i, :] *= 2.0
        parir.label('M')
        x[i, :] -= 3.0


@parir.jit
def clip_copy(x, out, N, M):
    # A conditional store: the copy's value must reach memory even where the clip skips it.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j]
        parir.label('M')
        for j in range(M):
            if out[i, j] > 0.5:
                out[i, j] = 0.5


@parir.jit
def reverse_after(x, out, N, M):
    # The second loop reads elements that other threads stored.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j] * 3.0
        parir.label('M')
        for j in range(M):
            x[i, j] = out[i, M - 1 - j]


@parir.jit
def shifted_softmax(x, out, N, M):
    # Rows from their second element: groups would start one element past a boundary.
    parir.label('N')
    for i in range(N):
        parir.label('M')
        m = parir.max(x[i, 1:])
        parir.label('M')
        out[i, 1:] = parir.exp(x[i, 1:] - m)
        parir.label('M')
        s = parir.sum(out[i, 1:])
        parir.label('M')
        out[i, 1:] /= s


@parir.jit
def three_rows(x, y, z, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        a = parir.sum(x[i, :] * y[i, :])
        parir.label('M')
        b = parir.sum(y[i, :] * z[i, :])
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j] * a + y[i, j] * b + z[i, j]


@parir.jit
def five_rows(a, b, c, d, e, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        s = parir.sum(a[i, :] * b[i, :] + c[i, :] * d[i, :] + e[i, :])
        parir.label('M')
        out[i, :] = a[i, :] + b[i, :] + c[i, :] + d[i, :] + e[i, :] * s


@parir.jit
def powers_summed(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            acc = 0.0
            p = 1.0
            for k in range(6):
                acc = acc + p
                p = p * x[i, j]
            out[i, j] = acc


def spec(n, threads):
    return {'N': parir.threads(n), 'M': parir.threads(threads)}


def code(fn, args, opts):
    # The kernels as launched for tensors of any alignment: the copies for aligned ones leave
    # out the tests and the element-by-element path (test_wide_accesses checks them).
    return without_aligned_copies(parir.print_compiled(fn, args, opts=parir.par(opts)))


def kept(tensor, text):
    """Whether the code keeps elements of `tensor` in registers (locals tensor_r0, ...), or in
    shared memory through such locals."""
    return re.search(rf"\b{tensor}_r\d+\b", text) is not None


def shared_arrays(text):
    """How many arrays of rows the code keeps in shared memory."""
    return text.count("reinterpret_cast<float*>(parir_dynamic_shared + ")


def without_shared_memory(text):
    """The code's path for GPUs that did not give the launch its shared memory: the else of
    the test of parir::dynamic_shared_bytes()."""
    m = re.search(r"^( *)if \(parir::dynamic_shared_bytes\(\) >= \d+L\) \{$", text, re.M)
    start = text.index(f"\n{m.group(1)}}} else {{\n", m.end())
    return text[start:text.index(f"\n{m.group(1)}}}\n", start + 1)]


def shared_launch(text):
    """The launch's shared(...) of the code's one kernel, or None."""
    m = re.search(r"^//@ launch .* shared\(([^)]*)\)", text, re.M)
    return m and m.group(1)


# ----- the generated code (no GPU) -----------------------------------------------------------

def test_softmax_keeps_its_row_in_registers():
    x, out = torch.empty(4, 8192), torch.empty(4, 8192)
    text = code(softmax, (x, out, 4, 8192), spec(4, 1024))
    assert kept("out", text) and kept("x", text)
    # Each element is read from x once and stored to out once.
    assert text.count("= x[") == 8 + 1  # and the max's first element
    assert text.count("out[") == 8


def test_rows_too_long_to_keep_are_walked_as_before():
    # 79 elements a thread, 320,000 bytes a row: more than registers or shared memory hold.
    x, out = torch.empty(2, 80000), torch.empty(2, 80000)
    text = code(softmax, (x, out, 2, 80000), spec(2, 1024))
    assert not kept("out", text) and not kept("x", text) and shared_launch(text) is None


def test_up_to_32_elements_a_thread_are_kept():
    x, out = torch.empty(4, 8192), torch.empty(4, 8192)
    text = code(softmax, (x, out, 4, 8192), spec(4, 256))
    assert kept("out", text) and kept("x", text)
    assert len(re.findall(r"parir::load_wide\(x \+ ", text)) == 8


def test_rows_the_registers_cannot_all_hold_are_kept_in_shared_memory():
    # 64 elements a thread: the 64 values would hold out alone. In shared memory x and out share
    # one array of the row (x is last read where out is first stored), 32 KB, which every GPU
    # gives a block: no other path.
    x, out = torch.empty(4, 8192), torch.empty(4, 8192)
    text = code(softmax, (x, out, 4, 8192), spec(4, 128))
    assert kept("out", text) and kept("x", text)
    assert shared_launch(text) == "32768" and shared_arrays(text) == 1
    assert "dynamic_shared_bytes" not in text
    # x read from memory once, out written once, each in 16-byte groups.
    assert len(re.findall(r"load_wide\(x \+ ", text)) == 1
    assert len(re.findall(r"store_wide\(out \+ ", text)) == 1
    assert len(re.findall(r"\bx\[", text)) == 1 + 4 and len(re.findall(r"\bout\[", text)) == 4


def test_rows_past_48_kb_in_shared_memory_have_a_path_without_it():
    # 96 KB a row of float32 on 256 threads (96 elements a thread): no registers hold it.
    x, out = torch.empty(3, 24576), torch.empty(3, 24576)
    text = code(softmax, (x, out, 3, 24576), spec(3, 256))
    assert shared_launch(text) == "98304 if available"
    assert "if (parir::dynamic_shared_bytes() >= 98304L) {" in text
    # The other path walks the row once per loop: x read twice, out read twice more.
    other = without_shared_memory(text)
    assert len(re.findall(r"load_wide\(x \+ ", other)) == 2


def test_long_rows_that_two_loops_read_are_kept_on_blocks_of_512_threads_at_most():
    # RMS norm reads x in two loops: past 32 elements a thread it is kept in registers on 512
    # threads, not on 1,024 (whose registers would leave one block a multiprocessor), nor in
    # shared memory (160 KB, one block a multiprocessor, to save one pass); layer norm reads x
    # in three and keeps it on 1,024.
    x, out, w = torch.empty(4, 40000), torch.empty(4, 40000), torch.empty(40000)
    rms = {'N': parir.threads(4), 'D': parir.threads(1024)}
    text = code(rms_norm, (x, w, out, 4, 40000, 1e-5), rms)
    assert not kept("x", text) and shared_launch(text) is None
    x, out, w = torch.empty(4, 20000), torch.empty(4, 20000), torch.empty(20000)
    assert kept("x", code(rms_norm, (x, w, out, 4, 20000, 1e-5),
                          {'N': parir.threads(4), 'D': parir.threads(512)}))
    x, out, w = torch.empty(4, 40000), torch.empty(4, 40000), torch.empty(40000)
    assert kept("x", code(layer_norm, (x, w, w, out, 4, 40000, 1e-5),
                          {'N': parir.threads(4), 'D': parir.threads(1024)}))


def test_rows_past_96_kb_go_to_shared_memory_only_to_save_two_passes_or_more():
    # 50,257-wide rows (201 KB): softmax on 1,024 threads keeps out in registers and reads x
    # twice; on 512 threads (98 elements a thread) no registers hold a row, and shared memory
    # keeps x and out, read and written in four loops.
    x, out = torch.empty(2, 50257), torch.empty(2, 50257)
    text = code(softmax, (x, out, 2, 50257), spec(2, 1024))
    assert kept("out", text) and not kept("x", text) and shared_launch(text) is None
    text = code(softmax, (x, out, 2, 50257), spec(2, 512))
    assert shared_launch(text) == "201040 if available" and shared_arrays(text) == 1
    assert not kept("x", without_shared_memory(text))


def test_warps_of_short_rows_keep_rows_in_registers_only():
    # 8192 rows of 512: a warp a row, 16 elements a lane; five rows would take 80 values, more
    # than the registers keep, but the warps of a block cannot share arrays of a row.
    tensors = [torch.empty(8192, 512) for _ in range(6)]
    text = code(five_rows, (*tensors, 8192, 512), spec(8192, 1024))
    assert "warps(8)" in text and shared_launch(text) is None
    assert sum(kept(t, text) for t in "abcde") == 4


def test_rows_are_kept_as_far_as_64_values_a_thread_allow():
    # x, y and z each read in two or three loops: at 8 elements a thread all three are kept in
    # registers; at 32 all three in shared memory (96 KB, three arrays: all are read in the
    # last loop), and where that is not given, two of them in registers, y (read in all three
    # loops) among them.
    x, y, z, out = (torch.empty(4, 8192) for _ in range(4))
    text = code(three_rows, (x, y, z, out, 4, 8192), spec(4, 1024))
    assert all(kept(t, text) for t in ("x", "y", "z")) and shared_launch(text) is None
    text = code(three_rows, (x, y, z, out, 4, 8192), spec(4, 256))
    assert shared_launch(text) == "98304 if available" and shared_arrays(text) == 3
    other = without_shared_memory(text)
    assert sum(kept(t, other) for t in ("x", "y", "z")) == 2 and kept("y", other)


def test_a_conditional_store_is_not_kept():
    x, out = torch.empty(3, 100), torch.empty(3, 100)
    text = code(clip_copy, (x, out, 3, 100), spec(3, 64))
    assert not kept("out", text)


def test_a_short_row_gets_as_many_threads_as_it_has_elements():
    x, out = torch.empty(8, 448), torch.empty(8, 448)
    text = code(softmax, (x, out, 8, 448), spec(8, 1024))
    assert "block(448)" in text
    assert "__launch_bounds__(448)" in text


def test_many_short_rows_run_a_warp_each():
    x, out = torch.empty(16384, 448), torch.empty(16384, 448)
    text = code(softmax, (x, out, 16384, 448), spec(16384, 1024))
    assert "block(256) warps(8)" in text and "parir::warp_reduce" in text
    assert "__syncthreads" not in text
    assert kept("x", text) and kept("out", text)


def test_many_medium_rows_give_each_thread_8_elements():
    # 40,000 rows of 768 with threads(1024): 96 threads a row, two 16-byte groups of x each,
    # not 768 threads with one element each; 40,000 x 96 threads still fill the GPU.
    x, out = torch.empty(40000, 768), torch.empty(40000, 768)
    text = code(softmax, (x, out, 40000, 768), spec(40000, 1024))
    assert "block(96)" in text and "__launch_bounds__(96)" in text
    assert len(re.findall(r"parir::load_wide\(x \+ [^;]*, x_r\d+, x_r\d+, x_r\d+, x_r\d+\);",
                          text)) == 2
    # 1,000-wide rows: 125 threads' worth, a whole warp more.
    x, out = torch.empty(40000, 1000), torch.empty(40000, 1000)
    assert "block(128)" in code(softmax, (x, out, 40000, 1000), spec(40000, 1024))
    # Asked for fewer than that, the spec's count stands.
    assert "block(64)" in code(softmax, (x, out, 40000, 1000), spec(40000, 64))


def test_medium_rows_keep_the_threads_that_fill_the_gpu():
    # 1,000 rows of 768: 96 threads a row would give the GPU 96,000 threads of its 270,336;
    # 288 a row (271 rounded to a warp) give it them all.
    x, out = torch.empty(1000, 768), torch.empty(1000, 768)
    assert "block(288)" in code(softmax, (x, out, 1000, 768), spec(1000, 1024))
    x, out = torch.empty(8, 768), torch.empty(8, 768)
    assert "block(768)" in code(softmax, (x, out, 8, 768), spec(8, 1024))


def test_medium_rows_whose_elements_loop_or_that_reduce_nothing_keep_a_thread_an_element():
    # Each element's own loop is the work to share out; rows only updated element by element
    # have no barriers to wait at: the threads stay one an element.
    x, out = torch.empty(40000, 768), torch.empty(40000, 768)
    assert "block(768)" in code(powers_summed, (x, out, 40000, 768), spec(40000, 1024))
    assert "block(768)" in code(clip_copy, (x, out, 40000, 768), spec(40000, 1024))


def test_a_thread_moves_its_elements_of_a_row_in_16_byte_groups():
    x, out = torch.empty(4, 8192), torch.empty(4, 8192)
    text = code(softmax, (x, out, 4, 8192), spec(4, 1024))
    # Two groups of four consecutive elements a thread, loaded once, stored once, where the
    # pointers are aligned; element by element otherwise.
    assert len(re.findall(r"parir::load_wide\(x \+ ", text)) == 2
    assert len(re.findall(r"parir::store_wide\(out \+ ", text)) == 2
    assert "parir::aligned<16>(x)" in text and "parir::aligned<16>(out)" in text


def test_a_warp_per_short_row_moves_8_byte_groups_that_spread_evenly():
    # 448 elements: 112 groups of 16 bytes would leave half the lanes a group short; 224 of 8
    # bytes are seven a lane.
    x, out = torch.empty(16384, 448), torch.empty(16384, 448)
    text = code(softmax, (x, out, 16384, 448), spec(16384, 1024))
    assert len(re.findall(r"parir::load_wide\(x \+ [^;]*, x_r\d+, x_r\d+\);", text)) == 7
    assert "parir::aligned<8>(x)" in text and "if (parir_t <" not in text


@pytest.mark.parametrize("m,threads,width", [
    (1000, 128, 4), (1000, 256, 2),  # 250 groups of 16 bytes would leave threads without one
    (4097, 1024, 1), (4098, 1024, 2), (100, 32, 2), (8192, 1024, 4)])
def test_a_row_in_groups_of_16_bytes_or_8_or_single_elements(m, threads, width):
    x, out = torch.empty(3, m), torch.empty(3, m)
    text = code(softmax, (x, out, 3, m), spec(3, threads))
    assert kept("x", text)
    wide = re.findall(r"parir::load_wide\(x \+ [^;]*;", text)
    if width == 1:
        assert not wide
    else:
        assert wide and all(w.count("x_r") == width for w in wide)


def test_a_row_off_the_group_boundary_or_with_odd_strides_keeps_single_elements():
    base = torch.empty(4, 449)
    x, out = base[:, :448], torch.empty(4, 448)  # rows 449 elements apart
    assert "load_wide" not in code(softmax, (x, out, 4, 448), spec(4, 64))
    text = code(shifted_softmax, (torch.empty(4, 449), torch.empty(4, 449), 4, 449), spec(4, 64))
    assert kept("x", text) and "load_wide" not in text


# ----- results on the GPU --------------------------------------------------------------------

SIZES = [(1, 1, 32), (7, 33, 32), (5, 1000, 256), (3, 4097, 1024), (4, 8192, 1024),
         (6, 448, 1024), (2, 20000, 1024), (3, 8192, 256), (2, 40000, 1024), (3, 8192, 128),
         (2, 70000, 1024),
         # in shared memory: up to 48 KB, past it (where given), single elements (50257)
         (3, 12288, 128), (3, 24576, 256), (2, 50257, 512), (5, 3001, 32), (1, 60000, 1024),
         # a warp per row: enough rows, each short
         (16384, 448, 1024), (8192, 100, 256), (8194, 33, 64), (8192, 512, 512),
         # too many rows of an odd count for warps to share blocks evenly
         (9001, 100, 128),
         # rows of 513-4,096 on fewer threads than asked, 8 elements each, or as many as fill
         # the GPU
         (40000, 768, 1024), (3001, 1000, 1024), (20000, 1025, 1024), (2000, 4096, 1024)]


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", SIZES)
def test_softmax(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(n * m)
    x = torch.randn(n, m, device="cuda", generator=g) * 3
    out = torch.full_like(x, float("nan"))
    softmax(x, out, n, m, opts=parir.par(spec(n, threads)))
    check_close(out, torch.softmax(x.double(), 1), f"softmax {n}x{m}")
    # In place: the same tensor as input and output.
    y = x.clone()
    softmax(y, y, n, m, opts=parir.par(spec(n, threads)))
    check_close(y, torch.softmax(x.double(), 1), f"softmax in place {n}x{m}")


@pytest.mark.gpu
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
@pytest.mark.parametrize("n,m,threads", [(4, 8192, 1024), (16384, 448, 1024), (5, 1000, 256)])
def test_softmax_of_views_off_the_group_boundary(n, m, threads, shift):
    # Views that start `shift` elements into their storage: the groups' pointers are aligned
    # to 16 or 8 bytes only for some shifts, and the code must check which.
    g = torch.Generator(device="cuda").manual_seed(shift)
    storage = torch.randn(n * m + 8, device="cuda", generator=g) * 3
    x = storage[shift:shift + n * m].view(n, m)
    out_storage = torch.full((n * m + 8,), float("nan"), device="cuda")
    out = out_storage[3 - shift:3 - shift + n * m].view(n, m)
    softmax(x, out, n, m, opts=parir.par(spec(n, threads)))
    check_close(out, torch.softmax(x.double(), 1), f"softmax {n}x{m} shifted {shift}")
    # Rows of 448 elements 449 and 450 apart.
    if m == 448:
        for stride in (449, 450):
            wide = torch.randn(n, stride, device="cuda", generator=g)
            out = torch.full((n, 448), float("nan"), device="cuda")
            softmax(wide[:, 1:449], out, n, m, opts=parir.par(spec(n, threads)))
            check_close(out, torch.softmax(wide[:, 1:449].double(), 1), f"rows {stride} apart")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-12), (torch.float16, 4e-3),
                                        (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("n,m,threads", [(4, 8192, 1024), (3, 8192, 256), (5, 1000, 128),
                                         (8192, 448, 1024), (7, 33, 32)])
def test_softmax_of_other_element_sizes(dtype, rtol, n, m, threads):
    # Groups of 2 float64 or 8 float16 / bfloat16 elements (16 bytes); half types computed in
    # float32 (half_in_float32), so the reference differs by their rounding only.
    g = torch.Generator(device="cuda").manual_seed(m)
    x = (torch.randn(n, m, device="cuda", generator=g) * 2).to(dtype)
    out = torch.full_like(x, float("nan"))
    opts = parir.par(spec(n, threads))
    opts.half_in_float32 = dtype != torch.float64
    softmax(x, out, n, m, opts=opts)
    ref = torch.softmax(x.double(), 1)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out.double(), ref, rtol=rtol, atol=rtol * ref.max().item())


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [1024, 256])
def test_three_rows(threads):
    g = torch.Generator(device="cuda").manual_seed(threads)
    # Positive values: no cancellation for float32's sums of 8192 products to magnify.
    x, y, z = (torch.rand(4, 8192, device="cuda", generator=g) + 0.5 for _ in range(3))
    out = torch.full_like(x, float("nan"))
    three_rows(x, y, z, out, 4, 8192, opts=parir.par(spec(4, threads)))
    xd, yd, zd = x.double(), y.double(), z.double()
    ref = xd * (xd * yd).sum(1, keepdim=True) + yd * (yd * zd).sum(1, keepdim=True) + zd
    check_close(out, ref, f"three rows, {threads} threads")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", [(8192, 512, 1024), (3, 8192, 128), (3, 8192, 1024)])
def test_five_rows(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(m)
    a, b, c, d, e = (torch.rand(n, m, device="cuda", generator=g) for _ in range(5))
    out = torch.full_like(a, float("nan"))
    five_rows(a, b, c, d, e, out, n, m, opts=parir.par(spec(n, threads)))
    ad, bd, cd, dd, ed = (t.double() for t in (a, b, c, d, e))
    s = (ad * bd + cd * dd + ed).sum(1, keepdim=True)
    check_close(out, ad + bd + cd + dd + ed * s, f"five rows, {n} x {m} on {threads} threads")


@pytest.mark.gpu
@pytest.mark.parametrize("launch", ["", " shared(1048576 if available)"])
@pytest.mark.parametrize("fn,m,threads", [(softmax, 24576, 256), (three_rows, 8192, 256)])
def test_kernels_launched_without_their_shared_memory_take_the_other_path(fn, m, threads, launch):
    # A GPU that cannot give the launch its shared memory (here: a plan that asks for none, or
    # for more than any GPU gives) runs the rows as registers alone allow.
    g = torch.Generator(device="cuda").manual_seed(m)
    tensors = [torch.rand(3, m, device="cuda", generator=g) + 0.5
               for _ in range(2 if fn is softmax else 4)]
    tensors[-1].fill_(float("nan"))
    args = [*tensors, 3, m]
    text = parir.print_compiled(fn, args, opts=parir.par(spec(3, threads)))
    asked = re.search(r" shared\(\d+ if available\)", text).group(0)
    edited = parir.compile_string(fn.__name__, text.replace(asked, launch))
    edited(*args)
    expected = tensors[-1].clone()
    tensors[-1].fill_(float("nan"))
    fn(*args, opts=parir.par(spec(3, threads)))  # as compiled: in shared memory on this GPU
    check_close(expected, tensors[-1].double(), f"{fn.__name__} without shared memory")
    if fn is softmax:
        check_close(expected, torch.softmax(tensors[0].double(), 1), "softmax")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m", [(3, 449), (8192, 101)])
def test_softmax_from_the_second_element(n, m):
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(n, m, device="cuda", generator=g)
    out = torch.full_like(x, float("nan"))
    shifted_softmax(x, out, n, m, opts=parir.par(spec(n, 64)))
    check_close(out[:, 1:], torch.softmax(x[:, 1:].double(), 1), "softmax of x[:, 1:]")
    assert torch.isnan(out[:, 0]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("n,d,threads", SIZES)
def test_layer_norm(n, d, threads):
    g = torch.Generator(device="cuda").manual_seed(d)
    x = torch.randn(n, d, device="cuda", generator=g) + 0.5
    w = torch.rand(d, device="cuda", generator=g) + 0.5
    b = torch.randn(d, device="cuda", generator=g)
    out = torch.full_like(x, float("nan"))
    opts = parir.par({'N': parir.threads(n), 'D': parir.threads(threads)})
    layer_norm(x, w, b, out, n, d, 1e-5, opts=opts)
    ref = torch.nn.functional.layer_norm(x.double(), (d,), w.double(), b.double(), 1e-5)
    check_close(out, ref, f"layer norm {n}x{d}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,d,threads", [(4, 40000, 1024), (4, 20000, 512), (3, 8192, 128),
                                         (5, 1000, 256), (40000, 768, 1024), (20000, 1536, 1024)])
def test_rms_norm(n, d, threads):
    g = torch.Generator(device="cuda").manual_seed(d)
    x = torch.randn(n, d, device="cuda", generator=g)
    w = torch.rand(d, device="cuda", generator=g) + 0.5
    out = torch.full_like(x, float("nan"))
    opts = parir.par({'N': parir.threads(n), 'D': parir.threads(threads)})
    rms_norm(x, w, out, n, d, 1e-5, opts=opts)
    xd = x.double()
    check_close(out, xd * torch.rsqrt(xd.pow(2).mean(1, keepdim=True) + 1e-5) * w.double(),
                f"RMS norm {n}x{d}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", SIZES)
def test_l2_normalize(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(m + 1)
    x = torch.randn(n, m, device="cuda", generator=g)
    out = torch.full_like(x, float("nan"))
    opts = parir.par({'row': parir.threads(n), 'acc': parir.threads(threads).reduce(),
                      'scale': parir.threads(threads)})
    l2_normalize(x, out, n, m, opts=opts)
    xd = x.double()
    check_close(out, xd / (xd.norm(dim=1, keepdim=True) + 1e-12), f"l2 normalize {n}x{m}")


@pytest.mark.gpu
@pytest.mark.parametrize("n,m,threads", [(3, 100, 64), (4, 8192, 1024), (5, 1000, 256)])
def test_values_that_must_not_be_kept(n, m, threads):
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(n, m, device="cuda", generator=g)
    opts = parir.par(spec(n, threads))

    # Separate output: the sum is over x; in place: over the doubled values.
    out, s = torch.full_like(x, float("nan")), torch.full((n,), float("nan"), device="cuda")
    scale_then_sum(x, out, s, n, m, opts=opts)
    check_close(out, x.double() * 2, "scaled")
    check_close(s, x.double().sum(1), "sum of x")
    y, s = x.clone(), torch.full((n,), float("nan"), device="cuda")
    scale_then_sum(y, y, s, n, m, opts=opts)
    check_close(s, x.double().sum(1) * 2, "sum after scaling in place")

    y = x.clone()
    updated_in_place(y, n, m, opts=opts)
    check_close(y, (x.double() + 1) * 2 - 3, "updated in place")

    out = torch.full_like(x, float("nan"))
    clip_copy(x, out, n, m, opts=opts)
    check_close(out, x.double().clamp(max=0.5), "clipped copy")

    y, out = x.clone(), torch.full_like(x, float("nan"))
    reverse_after(y, out, n, m, opts=opts)
    check_close(out, x.double() * 3, "tripled")
    check_close(y, (x.double() * 3).flip(1), "reversed")
