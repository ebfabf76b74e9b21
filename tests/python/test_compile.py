"""The whole compiler and NVRTC on the CPU: every test program is compiled to CUDA C++, checked,
and compiled by NVRTC to CUBIN and PTX. Needs no GPU (CI runs these)."""

import re

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import check_close
from programs import CASES, prefix_sum, repeated_scale, sum_rows

SIZES = [1, 33, 1000]


def compiled(name, size=33, rng=None):
    case = CASES[name](size, rng or torch.Generator().manual_seed(0), "cpu")
    return case, parir.print_compiled(case["fn"], case["args"], parir.par(case["spec"]))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_compiles_with_nvrtc(name, size, rng):
    case, source = compiled(name, size, rng)
    fn_name = case["fn"].__name__
    assert re.search(rf'extern "C" __global__ void __launch_bounds__\(\d+(?:, \d+)?\) {fn_name}(_\d+)?\(',
                     source)
    assert f"//@ parir.plan {fn_name}" in source
    assert '#line ' in source and 'programs.py"' in source
    for arch in ("sm_90", "compute_90"):
        binary, is_cubin, log = _C.nvrtc_compile(source, arch)
        assert len(binary) > 100 and is_cubin == arch.startswith("sm_")


@pytest.mark.parametrize("name", sorted(CASES))
def test_seq_runs_the_python(name, rng):
    case = CASES[name](33, rng, "cpu")
    case["fn"](*case["args"], seq=True)
    for i, (out, ref) in enumerate(case["check"]):
        check_close(out, ref, f"{name} seq output {i}")


def test_print_compiled_readme_example():
    N, M = 1000, 517
    x, y = torch.randn(N, M), torch.zeros(N)
    src = parir.print_compiled(sum_rows, [x, y, N, M], parir.par({"N": parir.threads(N)}))
    assert "void __launch_bounds__(1024) sum_rows(const float* x, float* y)" in src
    assert "for (int64_t i = parir_t; i < 1000L; i += 1024L)" in src
    assert "y[i] = (y[i] + x[i * 517 + j]);" in src
    assert "//@ launch sum_rows grid(1) block(1024) (x, y)" in src
    assert "//@ param x float32[1000, 517] strides(517, 1) in" in src
    assert "//@ param y float32[1000] strides(1) inout" in src


def test_print_compiled_takes_undecorated_functions():
    def double(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = x[i] * 2

    src = parir.print_compiled(double, [torch.zeros(10, dtype=torch.int32), 10],
                               parir.par({"i": parir.threads(10)}))
    assert "x[i] = (x[i] * 2);" in src


def test_host_loop_becomes_launch_plan():
    x = torch.zeros(99)
    opts = parir.par({"i": parir.threads(99)})
    opts.time_tiling = False  # which would run the 7 steps in one launch (test_time_tiling.py)
    src = parir.print_compiled(repeated_scale, [x, 7, 99], opts)
    assert "//@ for t in range(0, 7, 1):" in src
    assert "//@   launch repeated_scale grid(1) block(128) (x, t)" in src
    assert "int64_t t)" in src


def test_gpu_block_is_one_thread():
    src = parir.print_compiled(prefix_sum, [torch.zeros(5), torch.zeros(5), 5], parir.par({}))
    assert "__launch_bounds__(1) prefix_sum(" in src
    assert "//@ launch prefix_sum grid(1) block(1)" in src


def test_threads_round_up_to_warps_and_spread_over_blocks():
    # Every other element, which 16-byte accesses leave alone: a thread per iteration.
    x = torch.zeros(2 * 4999)[::2]
    src = parir.print_compiled(repeated_scale, [x, 1, 4999], parir.par({"i": parir.threads(4999)}))
    # 4999 threads -> 5 blocks of 1024: every launched thread takes a share of the loop.
    assert "grid(5) block(1024)" in src
    assert "parir_t = (parir_block % 5) * 1024 + threadIdx.x" in src
    assert "i += 5120L" in src


def test_debug_prints_each_pass(capsys):
    x = torch.zeros(10)
    parir.print_compiled(repeated_scale, [x, 2, 10], parir.CompileOptions(
        parallelize={"i": parir.threads(10)}, debug_print=True))
    out = capsys.readouterr().out
    for p in ["parse", "specialize_arguments", "apply_parallel_spec", "infer_types", "simplify",
              "split_host_device", "map_parallelism", "generate_cuda"]:
        assert re.search(rf"=== after {p} \(\d+\.\d+ ms\)", out), p


def test_weak_literals_take_the_tensor_type():
    def scale(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = x[i] * 2.5 + 1

    src = parir.print_compiled(scale, [torch.zeros(5), 5], parir.par({"i": parir.threads(5)}))
    assert "x[i] = ((x[i] * 2.5f) + 1.0f);" in src


def test_comparisons_the_loop_ranges_decide_are_folded():
    # CUDA's and Numba's thread guards, written into loops whose ranges already keep them.
    def guarded(x, y, N):
        parir.label("i")
        for i in range(N):
            if i < x.shape[0] and i >= 0:
                y[i] = x[i] * 2.0
            if i == N:
                y[i] = -1.0
            if i > 0:  # not decided: i is 0 in the first iteration
                y[i] += x[i - 1]

    src = parir.print_compiled(guarded, [torch.zeros(100), torch.zeros(100), 100],
                               parir.par({"i": parir.threads(100)}))
    assert "y[i] = (x[i] * 2.0f);" in src and "-1.0f" not in src
    assert src.count("if (") == 1 and "if (i > 0L)" in src


def test_nvrtc_error_points_at_user_line():
    src = '#include "parir.h"\n#line 42 "user_file.py"\nextern "C" __global__ void k() { oops; }\n'
    with pytest.raises(parir.ParirError, match=r"user_file\.py\(42\)"):
        _C.nvrtc_compile(src, "sm_90")


def test_parir_error_is_a_runtime_error():
    assert issubclass(parir.ParirError, RuntimeError)


def test_launch_plan_round_trips_through_the_op_source():
    x = torch.zeros(100)
    src = parir.print_compiled(repeated_scale, [x, 3, 100], parir.par({"i": parir.threads(100)}))
    program = _C.Program(src)
    assert program.function == "repeated_scale"
    assert program.params == [("x", True)]


def test_siblings_with_different_parallelism_become_kernels():
    def f(x, y, N):
        parir.label("i")
        for i in range(2):
            parir.label("a")
            for j in range(N):
                x[i, j] = 1.0
            parir.label("b")
            for j in range(N):
                y[i, j] = 2.0

    spec = {"i": parir.threads(2), "a": parir.threads(2048), "b": parir.threads(4096)}
    src = parir.print_compiled(f, [torch.zeros(2, 4999), torch.zeros(2, 4999), 4999],
                               parir.par(spec))
    assert "//@ launch f_0 grid(4) block(1024) (x)" in src
    assert "//@ launch f_1 grid(8) block(1024) (y)" in src


def test_gpu_block_is_cut_at_loops_that_need_blocks():
    from slice_programs import total

    src = parir.print_compiled(total, [torch.zeros(4999), torch.zeros(1), 4999],
                               parir.par({"i": parir.threads(4999).reduce()}))
    assert "//@ launch total_0 grid(1) block(1) (out)" in src
    # 4999 elements four at a time (16-byte accesses): 1250 threads, in five blocks as before.
    assert "//@ launch total_1 grid(5) block(256) (x, out)" in src
    assert "atomic_combine(parir::Sum(), &out[0]" in src


def test_default_threads_per_block_is_the_compilers():
    assert parir.threads(64).threads_per_block == _C.DEFAULT_THREADS_PER_BLOCK == 1024
    assert parir.threads(64).tpb(128).threads_per_block == 128


def test_small_host_loops_get_a_persistent_kernel_that_compiles_everywhere():
    x = torch.empty(2999, device="meta")
    opts = parir.par({"i": parir.threads(2999)})
    opts.time_tiling = False  # which would otherwise run it in tiles of time steps
    src = parir.print_compiled(repeated_scale, [x, 50, 2999], opts)
    assert "//@ persistent launch repeated_scale_loop0 grid(3) block(1024) cluster(3) (x)" in src
    # For GPUs without clusters the persistent kernel compiles empty; the loop runs there.
    for arch in ("sm_80", "sm_90"):
        binary, is_cubin, _ = _C.nvrtc_compile(src, arch)
        assert is_cubin and binary
    opts.persistent_loops = False
    assert "persistent" not in parir.print_compiled(repeated_scale, [x, 50, 2999], opts)
    # Kernels of more blocks than a cluster holds (16) stay a loop of launches.
    n = 17 * 1024 - 1
    big = torch.empty(n, device="meta")
    opts = parir.par({"i": parir.threads(n)})
    opts.time_tiling = False
    src = parir.print_compiled(repeated_scale, [big, 5, n], opts)
    assert "persistent" not in src
