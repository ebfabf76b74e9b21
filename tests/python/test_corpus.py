"""The program corpus (tests/corpus): programs written the way Parir's users write them.

For every program:

* ``test_seq``: the plain Python run (``seq=True``) on CPU tensors against the program's
  independent reference. A failure here is a mistake in the program or its reference.
* ``test_compiles``: ``print_compiled`` and NVRTC for sm_90, on the CPU.
* ``test_gpu`` (marker ``gpu``): the compiled run on CUDA tensors against the reference and
  against the plain Python run on the same inputs.

Programs the compiler cannot handle yet are listed in KNOWN_FAILURES with the cause; their
compile and GPU tests are strict xfails, so a fix shows up as an unexpected pass.
"""

import os
import re
import sys
import warnings

import pytest
import torch

import parir_torch as parir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from corpus import ALL_CASES  # noqa: E402

# Program name -> why the compiler fails on it today.
KNOWN_FAILURES = {
}

# Programs that compile but give wrong results on the GPU: program name -> what goes wrong.
KNOWN_GPU_FAILURES = {
}

# Programs whose plain Python run (seq=True) on torch tensors differs from what the kernels
# compute: program name -> why.
KNOWN_SEQ_FAILURES = {
}

SEED = 20240611


def build(name, device):
    return ALL_CASES[name](torch.Generator().manual_seed(SEED), device)


def options(case):
    make = case.get("opts")
    return make(case["spec"]) if make else parir.par(case["spec"])


def tolerances(case, dtype):
    if "tol" in case and dtype.is_floating_point:
        return case["tol"]
    return {
        torch.float64: (1e-9, 1e-9),
        torch.float32: (1e-4, 1e-4),
        torch.float16: (1e-2, 1e-2),
        torch.bfloat16: (5e-2, 5e-2),
    }.get(dtype, (0, 0))


def assert_matches(actual, expected, case, what):
    """Integers and bools exactly; floats within rtol * |expected| + atol * max|expected|
    (sums reorder on the GPU, so the error grows with the partial sums, not with each term)."""
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    assert tuple(a.shape) == tuple(e.shape), f"{what}: shape {tuple(a.shape)} != {tuple(e.shape)}"
    if not a.dtype.is_floating_point:
        bad = (a.to(torch.int64) != e.to(torch.int64)).nonzero()
        assert bad.numel() == 0, (
            f"{what}: {bad.shape[0]} wrong elements, first at {bad[0].tolist()}: "
            f"{a[tuple(bad[0])].item()} != {e[tuple(bad[0])].item()}")
        return
    a, e = a.double(), e.double()
    nan = torch.isnan(a) & ~torch.isnan(e)
    assert not nan.any(), (f"{what}: NaN at {nan.nonzero()[0].tolist()} "
                           f"({int(nan.sum())} elements; written wrong or not at all)")
    rtol, atol = tolerances(case, actual.dtype)
    finite = e[torch.isfinite(e)]
    scale = finite.abs().max().item() if finite.numel() else 1.0
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol * max(scale, 1e-30), equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def xfailing(table):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=table[n]))
            if n in table else n for n in sorted(ALL_CASES)]


def test_known_failures_name_programs():
    assert set(KNOWN_FAILURES) <= set(ALL_CASES)
    assert set(KNOWN_GPU_FAILURES) <= set(ALL_CASES)
    assert set(KNOWN_SEQ_FAILURES) <= set(ALL_CASES)


def test_corpus_size():
    assert len(ALL_CASES) >= 30


@pytest.mark.parametrize("name", xfailing(KNOWN_SEQ_FAILURES))
def test_seq(name):
    case = build(name, "cpu")
    case["fn"](*case["args"], seq=True)
    for k, (out, ref) in enumerate(case["check"]):
        assert_matches(out, ref, case, f"{name} (seq) output {k}")


@pytest.mark.parametrize("name", xfailing(KNOWN_FAILURES))
def test_compiles(name):
    case = build(name, "cpu")
    source = parir.print_compiled(case["fn"], case["args"], options(case))
    assert f"//@ parir.plan {case['fn'].__name__}" in source
    # Through compile_string, so that the plan's include directories and flags reach NVRTC.
    parir.compile_string(case["fn"].__name__, source, options(case)).compile("sm_90")


def _gpu_params():
    params = []
    for n in sorted(ALL_CASES):
        reason = KNOWN_FAILURES.get(n) or KNOWN_GPU_FAILURES.get(n)
        params.append(pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=reason))
                      if reason else n)
    return params


@pytest.mark.gpu
@pytest.mark.parametrize("name", _gpu_params())
def test_gpu(name):
    case = build(name, "cuda")
    if case.get("run"):
        case["run"](case)
    else:
        case["fn"](*case["args"], opts=options(case))
    torch.cuda.synchronize()
    plain = build(name, "cpu")
    plain["fn"](*plain["args"], seq=True)
    for k, ((out, ref), (seq_out, _)) in enumerate(zip(case["check"], plain["check"])):
        assert_matches(out, ref, case, f"{name} (GPU) output {k}")
        if name not in KNOWN_SEQ_FAILURES:
            assert_matches(out, seq_out, case, f"{name} (GPU against seq) output {k}")


def test_seed_rejected_example():
    """The Parir README's sum with `y[0] = 0.0` outside any parallel loop is rejected, naming
    the statement and the `with parir.gpu:` remedy."""
    from corpus.seed_examples import sum_host_init

    x, y = torch.rand(100), torch.zeros(1)
    with pytest.raises(parir.ParirError, match=r"parir\.gpu"):
        parir.print_compiled(sum_host_init, [x, y, 100], parir.par({'N': parir.threads(100)}))


def _host_loop_cases():
    """Corpus programs whose launch plans have host loops (sequential loops around kernels)."""
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", parir.ParirWarning)  # test_compiles shows them
        for n in sorted(ALL_CASES):
            if n in KNOWN_FAILURES:
                continue
            case = build(n, "cpu")
            if case.get("run"):
                continue  # driven by its own code, with its own options
            try:
                source = parir.print_compiled(case["fn"], case["args"], options(case))
            except parir.ParirError:
                continue  # test_compiles fails for it, naming the cause
            if re.search(r"^//@ +(for|while) ", source, re.M):
                names.append(n)
    return names


@pytest.mark.gpu
@pytest.mark.parametrize("name", _host_loop_cases())
def test_host_loops_as_graphs_and_persistent_kernels_match_the_plain_launches(name):
    """A host loop's launches replayed as a CUDA graph (the default captures the second call
    with the same tensors; True the first), run as one persistent kernel (the default where
    the kernels are small), or in tiles of time steps (the default for 1-D stencils), leave
    exactly what the plain launches leave (to rounding where floating-point atomic updates
    add up in whatever order the threads reach them, and where the persistent kernel's or the
    tiles' code contracts other products into FMAs)."""
    first = build(name, "cuda")
    exact = "parir::atomic" not in parir.print_compiled(first["fn"], first["args"],
                                                        options(first))
    results = {}
    for how in [(False, 1, False, False), (None, 1, True, True), (None, 3, True, True),
                (True, 2, True, True), (None, 3, False, False), (False, 2, True, False),
                (False, 1, False, True)]:
        graphs, calls, persistent, tiling = how
        case = build(name, "cuda")
        inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in case["args"]]
        opts = options(case)
        opts.use_cuda_graphs = graphs
        opts.persistent_loops = persistent
        opts.time_tiling = tiling
        for _ in range(calls):
            for a, saved in zip(case["args"], inputs):
                if isinstance(a, torch.Tensor):
                    a.copy_(saved)  # the same addresses, the same starting values
            case["fn"](*case["args"], opts=opts)
        torch.cuda.synchronize()
        results[how] = [out.clone() for out, _ in case["check"]]
    plain = results.pop((False, 1, False, False))
    for how, outs in results.items():
        for k, (got, want) in enumerate(zip(outs, plain)):
            # A persistent kernel or tiles of time steps compile the steps into other code,
            # where NVRTC may contract a * b + c into one FMA where the plain kernel does not.
            recompiled = how[2] or how[3]
            if got.dtype.is_floating_point and (
                    not exact or recompiled and not torch.equal(got, want)):
                # A simulation's steps carry the rounding on: its own tolerances, where it
                # gives looser ones.
                rtol, atol = 1e-5, 1e-6
                if "tol" in first:
                    rtol = max(rtol, first["tol"][0])
                    atol = max(atol, first["tol"][1] * float(want.abs().nan_to_num().max()))
                torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                           msg=lambda m: f"{name} {how} {k}: {m}")
                continue
            assert torch.equal(got, want) or (
                got.dtype.is_floating_point and torch.equal(got.isnan(), want.isnan())
                and torch.equal(got.nan_to_num(), want.nan_to_num())), (name, how, k)
