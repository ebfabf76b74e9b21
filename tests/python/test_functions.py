"""Functions calling functions, external device functions (intrinsics and user headers), device
libraries, and the escape hatch: printed code edited by hand and run with compile_string."""

import math
import os
import shutil
import subprocess

import pytest
import torch

import parir_torch as parir
from helpers import check_close, load_module


def spec(**labels):
    return parir.par({k: parir.threads(v) for k, v in labels.items()})


# ----- functions the jit function calls ----------------------------------------------------

def norm2(a, b):
    return a * a + b * b


def clamp(v, lo, hi):
    r = v
    if v < lo:
        r = lo
    if v > hi:
        r = hi
    return r


@parir.jit
def write_scaled(out, x, i, k):
    out[i] = x[i] * k


def smooth(x, i, n):
    left = x[i]
    right = x[i]
    if i > 0:
        left = x[i - 1]
    if i < n - 1:
        right = x[i + 1]
    return (left + 2.0 * x[i] + right) * 0.25


@parir.jit
def uses_functions(x, y, out, out2, N):
    parir.label('i')
    for i in range(N):
        out[i] = clamp(norm2(x[i], y[i]), 0.5, 3.0) + smooth(x, i, N)
        write_scaled(out2, y, i, 3.0)


def recursive(n):
    r = 0
    if n > 0:
        r = recursive(n - 1)
    return r


def calls_recursive(x, N):
    parir.label('i')
    for i in range(N):
        x[i] = recursive(i)


def test_calls_are_inlined_into_the_kernel():
    x = torch.zeros(50)
    src = parir.print_compiled(uses_functions, [x, x, x, x, 50], spec(i=50))
    assert "__device__" not in src.split("__global__")[0].split('#include "parir.h"')[1]
    assert "out2[i] = (y[i] * 3.0f);" in src  # a literal argument is substituted
    assert "r_clamp = 0.5f;" in src
    # Each call's statements name the callee's lines.
    assert f'#line 28 "{__file__}"' in src


def test_recursion_is_an_error():
    with pytest.raises(parir.ParirError, match=r"recursive\(\) calls itself: recursion is not"):
        parir.print_compiled(calls_recursive, [torch.zeros(5), 5], spec(i=5))


TUPLE_HELPERS = """
import parir_torch as parir

def two_values(v):
    return v, v + 1.0

def one_value(v):
    return v * 2.0

def one_or_two(v):
    if v > 0.0:
        return v, v
    else:
        return v

def two_or_three(v):
    if v > 0.0:
        return v, v
    else:
        return v, v, v

def f(x, N):
    parir.label('i')
    for i in range(N):
        {statement}
"""


@pytest.mark.parametrize("statement,pattern", [
    ("x[i] = two_values(x[i])", r"two_values\(\) returns a tuple of 2 values, which is used "
                                r"here as one value; unpack it"),
    ("a, b, c = two_values(x[i])", r"two_values\(\) returns 2 values, which cannot be unpacked "
                                   r"into 3 targets"),
    ("a, b = one_value(x[i])", r"one_value\(\) returns 1 value, which cannot be unpacked into "
                               r"2 targets"),
    ("a, b = one_or_two(x[i])", r"one_or_two\(\) returns 2 values on some paths and 1 on "
                                r"others"),
    ("a, b = two_or_three(x[i])", r"two_or_three\(\) returns 3 values on some paths and 2 on "
                                  r"others"),
])
def test_tuples_returned_by_functions_are_unpacked_as_many_as_returned(tmp_path, statement,
                                                                        pattern):
    m = load_module(tmp_path, TUPLE_HELPERS.format(statement=statement), "tuple_helpers")
    with pytest.raises(parir.ParirError, match=pattern) as info:
        parir.print_compiled(m.f, [torch.zeros(5), 5], spec(i=5))
    assert "tuple_helpers.py" in str(info.value)


def normalize(x, y, z):
    inv = 1.0 / parir.sqrt(x * x + y * y + z * z)
    return x * inv, y * inv, z * inv


def gradient(p, h):
    # Warp's raymarching example: the normal is another helper's tuple, returned as it is.
    return normalize(p[0] + h, p[1] - h, p[2] + 2.0 * h)


def unit_or_axis(p, h):
    if h > 0.0:
        return gradient(p, h)
    else:
        return 0.0, 0.0, 1.0


@parir.jit
def normals(p, n, h, N):
    parir.label('i')
    for i in range(N):
        n[i, 0], n[i, 1], n[i, 2] = unit_or_axis(p[i], h)


def test_a_tuple_returned_by_another_function_is_returned_as_it_is():
    src = parir.print_compiled(normals, [torch.zeros(7, 3), torch.zeros(7, 3), 0.5, 7], spec(i=7))
    assert "sqrt" in src


@pytest.mark.gpu
@pytest.mark.parametrize("h", [0.25, -1.0])
def test_tuples_returned_through_functions_on_the_gpu(h, rng):
    p = torch.rand(33, 3, generator=rng).cuda() + 0.1
    n = torch.full((33, 3), float("nan"), device="cuda")
    normals(p, n, h, 33, opts=spec(i=33))
    expected = torch.stack([p[:, 0] + h, p[:, 1] - h, p[:, 2] + 2.0 * h], 1)
    expected = expected / expected.norm(dim=1, keepdim=True)
    if h <= 0.0:
        expected = torch.tensor([0.0, 0.0, 1.0], device="cuda").expand(33, 3)
    torch.testing.assert_close(n, expected)
    seq = torch.full((33, 3), float("nan"))
    normals(p.cpu(), seq, h, 33, seq=True)
    torch.testing.assert_close(seq, expected.cpu())


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 37, 5003])
def test_inlined_functions_on_the_gpu(n, rng):
    x = torch.randn(n, generator=rng, dtype=torch.float64).cuda()
    y = torch.randn(n, generator=rng, dtype=torch.float64).cuda()
    out = torch.full_like(x, float("nan"))
    out2 = torch.full_like(x, float("nan"))
    uses_functions(x, y, out, out2, n, opts=spec(i=n))
    xc, yc = x.cpu(), y.cpu()
    left = torch.cat([xc[:1], xc[:-1]])
    right = torch.cat([xc[1:], xc[-1:]])
    ref = (xc * xc + yc * yc).clamp(0.5, 3.0) + (left + 2 * xc + right) * 0.25
    check_close(out, ref, "inlined functions")
    check_close(out2, yc * 3.0, "callee writing a tensor")


def safe_sqrt(v):
    if v < 0.0:
        return 0.0
    return math.sqrt(v)


def sign3(v):
    if v > 0.5:
        return 1
    elif v < -0.5:
        return -1
    r = 0
    return r


def channel_param(p, c, default):
    if p is None:
        return default
    return p[c]


@parir.jit
def early_returns(x, y, z, w, N):
    parir.label('i')
    for i in range(N):
        y[i] = safe_sqrt(x[i]) + channel_param(w, i, 1.0)
        z[i] = sign3(x[i])


def test_early_returns_become_branches():
    x, y, z = torch.randn(40), torch.zeros(40), torch.zeros(40, dtype=torch.int64)
    for w in (None, torch.rand(40)):
        src = parir.print_compiled(early_returns, [x, y, z, w, 40], spec(i=40))
        assert "} else if (v_sign3 < -0.5f) {" in src and "sign3_result = 0L;" in src
        assert ("w[i]" in src) == (w is not None)
        parir.compile_string("early_returns", src, spec(i=40)).compile("sm_90")
        y.fill_(float("nan"))
        early_returns(x, y, z, w, 40, seq=True)
        check_close(y, x.clamp(min=0).sqrt() + (1.0 if w is None else w))
        assert torch.equal(z, torch.where(x > 0.5, 1, torch.where(x < -0.5, -1, 0)))


def test_a_return_from_a_loop_of_a_called_function_is_an_error_naming_it(tmp_path):
    mod = load_module(tmp_path, "import parir_torch as parir\n\n"
                                "def first_negative(x, n):\n    for k in range(n):\n"
                                "        if x[k] < 0.0:\n            return k\n    return n\n\n"
                                "@parir.jit\ndef f(x, y, N):\n    parir.label('i')\n"
                                "    for i in range(N):\n        y[i] = first_negative(x, N)\n")
    with pytest.raises(parir.ParirError, match=r"user_program.py:6: `return` inside a loop \(or "
                                                r"`with parir.gpu:`\) of first_negative\(\)"):
        parir.print_compiled(mod.f, [torch.zeros(4), torch.zeros(4), 4], spec(i=4))


@pytest.mark.gpu
def test_early_returns_on_the_gpu(rng):
    x = torch.randn(1000, generator=rng).cuda()
    w = torch.rand(1000, generator=rng).cuda()
    y = torch.full((1000,), float("nan"), device="cuda")
    z = torch.full((1000,), -7, dtype=torch.int64, device="cuda")
    early_returns(x, y, z, w, 1000, opts=spec(i=1000))
    check_close(y, x.clamp(min=0).sqrt() + w)
    assert torch.equal(z, torch.where(x > 0.5, 1, torch.where(x < -0.5, -1, 0)))


def collatz_next(v):
    r = v // 2
    if v % 2 == 1:
        r = 3 * v + 1
    return r


@parir.jit
def collatz_steps(start, steps, N):
    parir.label('i')
    for i in range(N):
        v, k = start[i], 0
        while collatz_next(v) != 1 and v != 1:
            v = collatz_next(v)
            k += 1
        steps[i] = k


def test_a_while_condition_calling_a_function_with_statements_is_computed_each_iteration():
    src = parir.print_compiled(collatz_steps, [torch.ones(5, dtype=torch.int64),
                                               torch.zeros(5, dtype=torch.int64), 5], spec(i=5))
    body = src[src.index("while ("):]
    # Once before the loop, once at the end of each iteration, each from its own copy.
    assert "while (while_condition)" in src
    assert src.count("while_condition = ") == 2 and "while_condition = " in body
    start = torch.tensor([1, 2, 3, 6, 7, 27])
    steps = torch.zeros(6, dtype=torch.int64)
    collatz_steps(start, steps, 6, seq=True)
    assert steps.tolist() == [0, 0, 6, 7, 15, 110]


@pytest.mark.gpu
def test_a_while_condition_calling_a_function_on_the_gpu():
    start = torch.arange(1, 1001, device="cuda")
    steps = torch.full((1000,), -1, dtype=torch.int64, device="cuda")
    collatz_steps(start, steps, 1000, opts=spec(i=1000))
    expected = torch.zeros(1000, dtype=torch.int64)
    collatz_steps(start.cpu(), expected, 1000, seq=True)
    assert torch.equal(steps.cpu(), expected)
    assert expected[26].item() == 110  # 27 reaches 1 in 111 steps: 110 before its last


# ----- external device functions ---------------------------------------------------------

@parir.external("__fdividef", parir.CompileBackend.Cuda, parir.Target.Device)
def fast_divide(a: parir.float32, b: parir.float32) -> parir.float32:
    return a / b


@parir.jit
def divide_all(x, y, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = fast_divide(x[i], y[i])


HEADER = """#pragma once
__device__ inline float smoothstep(float e0, float e1, float v) {
  float t = fminf(fmaxf((v - e0) / (e1 - e0), 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
"""


@parir.external("smoothstep", parir.CompileBackend.Cuda, parir.Target.Device,
                header="parir_test_smooth.cuh")
def smoothstep(e0: float, e1: float, v: parir.float32) -> parir.float32:
    t = min(max((v - e0) / (e1 - e0), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@parir.jit
def smooth_all(x, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = smoothstep(-1.0, 1.0, x[i])


@pytest.fixture
def header_dir(tmp_path):
    (tmp_path / "parir_test_smooth.cuh").write_text(HEADER)
    return str(tmp_path)


def test_externals_are_called_by_their_cuda_name(header_dir):
    x = torch.zeros(10)
    src = parir.print_compiled(divide_all, [x, x, x, 10], spec(i=10))
    assert "out[i] = __fdividef(x[i], y[i]);" in src
    opts = spec(i=10)
    opts.includes = [header_dir]
    src = parir.print_compiled(smooth_all, [x, x, 10], opts)
    assert '#include "parir_test_smooth.cuh"' in src
    assert f"//@ include {header_dir}" in src


def test_host_externals_are_rejected_with_the_reason():
    with pytest.raises(parir.ParirError, match=r"Target.Host is not supported.*implicit copies"):
        parir.external("f", parir.CompileBackend.Cuda, parir.Target.Host)


def test_externals_run_as_python_with_seq():
    x = torch.tensor([1.0, -2.0, 0.25])
    y = torch.tensor([4.0, 8.0, 0.5])
    out = torch.zeros(3)
    divide_all(x, y, out, 3, opts=parir.CompileOptions(seq=True))
    assert out.tolist() == [0.25, -0.25, 0.5]


@pytest.mark.gpu
def test_intrinsic_and_header_externals_on_the_gpu(header_dir, rng):
    n = 3001
    x = torch.randn(n, generator=rng).cuda()
    y = torch.rand(n, generator=rng).cuda() + 0.5
    out = torch.full_like(x, float("nan"))
    divide_all(x, y, out, n, opts=spec(i=n))
    check_close(out, x.double() / y.double(), "__fdividef")
    opts = spec(i=n)
    opts.includes = [header_dir]
    smooth_all(x, out, n, opts=opts)
    t = ((x.double() + 1) / 2).clamp(0, 1)
    check_close(out, t * t * (3 - 2 * t), "user header")


def compile_now(name, code, opts=None):
    """compile_string, then NVRTC now (with a GPU compile_string itself compiles)."""
    fn = parir.compile_string(name, code, opts)
    fn.compile("sm_90")
    return fn


def test_header_externals_compile_with_their_include_dir(header_dir):
    opts = spec(i=4)
    opts.includes = [header_dir]
    code = parir.print_compiled(smooth_all, [torch.zeros(4), torch.zeros(4), 4], opts)
    compile_now("smooth_all", code, opts)
    # Without the directory, NVRTC's error names the header.
    code = code.replace(f"//@ include {header_dir}\n", "")
    with pytest.raises(parir.ParirError, match=r"parir_test_smooth.cuh"):
        compile_now("smooth_all", code)


# ----- device libraries --------------------------------------------------------------------

LIBRARY = """extern "C" __device__ float lib_poly(float v) { return 3.0f * v * v - 2.0f * v + 1.0f; }
"""


@parir.external("lib_poly", parir.CompileBackend.Cuda, parir.Target.Device)
def lib_poly(v: parir.float32) -> parir.float32:
    return 3.0 * v * v - 2.0 * v + 1.0


@parir.jit
def poly_all(x, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = lib_poly(x[i])


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["object", "archive"])
def test_device_libraries_are_linked(kind, tmp_path, rng):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("nvcc is needed to build the device library")
    major, minor = torch.cuda.get_device_capability()
    (tmp_path / "poly.cu").write_text(LIBRARY)
    obj = tmp_path / "poly.o"
    subprocess.run([nvcc, "-rdc=true", "-c", f"-arch=sm_{major}{minor}", str(tmp_path / "poly.cu"),
                    "-o", str(obj)], check=True)
    opts = spec(i=2049)
    if kind == "object":
        opts.libs = [str(obj)]
    else:
        subprocess.run([nvcc, "-lib", str(obj), "-o", str(tmp_path / "libpoly.a")], check=True)
        opts.libs = [str(tmp_path)]
        opts.extra_flags = ["-lpoly"]
    # The declaration the generated code needs, as a user's header would give it.
    (tmp_path / "lib_poly.cuh").write_text('extern "C" __device__ float lib_poly(float v);\n')
    opts.includes = [str(tmp_path)]
    opts.extra_flags = opts.extra_flags + ["-include", "lib_poly.cuh"]
    x = torch.randn(2049, generator=rng).cuda()
    out = torch.full_like(x, float("nan"))
    poly_all(x, out, 2049, opts=opts)
    xd = x.double()
    check_close(out, 3 * xd * xd - 2 * xd + 1, f"linked {kind}")


# ----- the escape hatch: print, edit, compile_string ---------------------------------------

@parir.jit
def row_sums(x, y, N, M):
    parir.label('N')
    for i in range(N):
        s = 0.0
        parir.label('M')
        for j in range(M):
            s += x[i, j]
        y[i] = s


ROW_SPEC = {'N': parir.threads(77), 'M': parir.threads(128).reduce()}

# A hand-written block reduction through __shared__ memory, replacing parir's.
SHARED_REDUCTION = """{
        __shared__ float partial[128];
        partial[threadIdx.x] = acc0;
        __syncthreads();
        for (int step = 64; step > 0; step >>= 1) {
          if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
          __syncthreads();
        }
        acc0 = partial[0];
        __syncthreads();
      }"""


def _edited_row_sums():
    x = torch.zeros(77, 301)
    code = parir.print_compiled(row_sums, [x, torch.zeros(77), 77, 301], parir.par(ROW_SPEC))
    old = "acc0 = parir::block_reduce(acc0, parir::Sum());"
    assert old in code
    code = code.replace(old, SHARED_REDUCTION)
    return code.replace("acc0 = (acc0 + x[", "acc0 = __fadd_rn(acc0, x[").replace(
        "x[i * 301 + j]);", "x[i * 301 + j]);", 1)


def test_the_signature_line_describes_the_call():
    code = _edited_row_sums()
    assert "//@ signature row_sums(x, y, N=77, M=301)" in code
    fn = parir.compile_string("row_sums", code)
    assert "row_sums(x, y, N=77, M=301)" in repr(fn)
    with pytest.raises(parir.ParirError, match=r"takes 4 arguments"):
        fn(torch.zeros(3))
    with pytest.raises(parir.ParirError, match=r"compiled for N=77, but N=78"):
        fn(torch.zeros(77, 301), torch.zeros(77), 78, 301)
    with pytest.raises(parir.ParirError, match=r"launch plan is for 'row_sums'"):
        parir.compile_string("other_name", code)


@pytest.mark.gpu
def test_hand_edited_code_runs_with_the_original_arguments(rng):
    code = _edited_row_sums()
    assert "__shared__ float partial[128];" in code and "__fadd_rn" in code
    fn = parir.compile_string("row_sums", code)
    x = torch.randn(77, 301, generator=rng).cuda()
    y = torch.full((77,), float("nan"), device="cuda")
    fn(x, y, 77, 301)
    check_close(y, x.double().sum(1), "edited code")


# Hand-edited code that stages each row in dynamic shared memory, more than the 48 KB a block
# has without asking: the launch's shared(bytes) is granted when the kernel is loaded.
ROW_IN_SHARED = """{
        extern __shared__ float row[];
        for (int64_t j = parir_t; j < M_COLS; j += 128) row[j] = x[i * M_COLS + j];
        float acc = 0.0f;
        for (int64_t j = parir_t; j < M_COLS; j += 128) acc += row[j];
        acc = parir::block_reduce(acc, parir::Sum());
        if (threadIdx.x == 0) y[i] = acc;
      }"""


def _row_sums_in_shared(cols, shared_bytes):
    x = torch.zeros(5, cols)
    code = parir.print_compiled(row_sums, [x, torch.zeros(5), 5, cols],
                                parir.par({'N': parir.threads(5),
                                           'M': parir.threads(128).reduce()}))
    start = code.index("    s = 0.0f;")
    end = code.index("  }\n}\n", start)
    code = code[:start] + "    " + ROW_IN_SHARED.replace("M_COLS", str(cols)) + "\n" + code[end:]
    launch = "block(128) (x, y)"
    assert launch in code
    return code.replace(launch, f"block(128) shared({shared_bytes}) (x, y)")


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [301, 20000, 50000])
def test_hand_edited_code_gets_the_dynamic_shared_memory_it_launches_with(cols, rng):
    fn = parir.compile_string("row_sums", _row_sums_in_shared(cols, cols * 4))
    x = torch.randn(5, cols, generator=rng).cuda()
    y = torch.full((5,), float("nan"), device="cuda")
    fn(x, y, 5, cols)
    check_close(y, x.double().sum(1), f"rows of {cols} in shared memory")


@pytest.mark.gpu
def test_more_shared_memory_than_a_block_may_have_is_an_error_naming_the_kernel(rng):
    # compile_string loads the code on the current GPU: the error comes there.
    with pytest.raises(parir.ParirError, match=r"kernel 'row_sums' is launched with 1048576 "
                       r"bytes of dynamic shared memory .* more than the \d+ bytes a block may"):
        parir.compile_string("row_sums", _row_sums_in_shared(301, 1 << 20))
    # The CUDA context is still usable.
    assert torch.ones(3, device="cuda").sum().item() == 3


def test_write_output_saves_the_failing_source():
    code = _edited_row_sums().replace("__syncthreads();", "__syncthreads_typo();", 1)
    opts = parir.CompileOptions()
    opts.write_output = True
    with pytest.raises(parir.ParirError) as err:
        compile_now("row_sums", code, opts)
    message = str(err.value)
    assert "__syncthreads_typo" in message
    path = message.split("saved to ")[-1].rstrip(")")
    assert os.path.isfile(path), message
    assert "__syncthreads_typo" in open(path).read()
    os.remove(path)


def test_extra_flags_reach_nvrtc():
    x = torch.zeros(8)
    opts = spec(i=8)
    opts.extra_flags = ["-DPARIR_TEST_FLAG_VALUE=3"]
    code = parir.print_compiled(divide_all, [x, x, x, 8], opts)
    assert "//@ flag -DPARIR_TEST_FLAG_VALUE=3" in code
    code = code.replace('#include "parir.h"', '#include "parir.h"\n'
                        '#if PARIR_TEST_FLAG_VALUE != 3\n#error flag missing\n#endif')
    compile_now("divide_all", code)  # the plan's flag line is enough
    broken = code.replace("//@ flag -DPARIR_TEST_FLAG_VALUE=3\n", "")
    with pytest.raises(parir.ParirError, match=r"flag missing"):
        compile_now("divide_all", broken)
    opts = parir.CompileOptions()
    opts.extra_flags = ["-DPARIR_TEST_FLAG_VALUE=3"]
    compile_now("divide_all", broken, opts)  # or the options


def test_verbose_backend_resolution_explains(capsys):
    opts = spec(i=4)
    opts.verbose_backend_resolution = True
    x = torch.zeros(4)
    try:
        divide_all(x, x, x, 4, opts=opts)  # CPU tensors: copied to a GPU if there is one
    except parir.ParirError:
        assert not torch.cuda.is_available()
    captured = capsys.readouterr()
    assert "NVRTC" in captured.out and "driver" in captured.out
