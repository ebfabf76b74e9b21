"""Execution on the GPU: every test program against its torch or plain-Python reference, on
fresh random non-zero data, outputs poisoned with NaN (or -77) before the call, at sizes that
are not multiples of 32."""

import pytest
import torch

import parir_torch as parir
from helpers import check_close, run_case
from programs import CASES, axpy, case_add_matrices, case_axpy, case_sum_rows, sum_rows

pytestmark = pytest.mark.gpu

SIZES = [1, 31, 33, 1000, 4097]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_reference(name, size, rng):
    case = CASES[name](size, rng, "cuda")
    run_case(case)
    torch.cuda.synchronize()
    for i, (out, ref) in enumerate(case["check"]):
        check_close(out, ref, f"{name}[n={size}] output {i}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_millions_of_elements(dtype, rng):
    n = 3_000_017
    case = case_axpy(n, rng, "cuda", dtype)
    run_case(case)
    check_close(*case["check"][0], "axpy 3M")
    case = case_sum_rows(2_000_003, rng, "cuda", dtype, m=7)
    run_case(case)
    check_close(*case["check"][0], "sum_rows 2M x 7")
    case = case_add_matrices(100_003, rng, "cuda", dtype)
    run_case(case)
    check_close(*case["check"][0], "add_matrices 100003 x 37")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_int_ops_both_widths(dtype, rng):
    case = CASES["int_ops"](1000, rng, "cuda", dtype)
    run_case(case)
    check_close(*case["check"][0], f"int_ops {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_ops_both_widths(dtype, rng):
    case = CASES["float_ops"](1000, rng, "cuda", dtype)
    run_case(case)
    out, ref = case["check"][0]
    if dtype == torch.float32:
        ref = ref.float().double()  # the float32 program rounds its inputs and outputs
        torch.testing.assert_close(out.cpu().double(), ref, rtol=2e-5, atol=2e-5)
    else:
        check_close(out, ref, "float_ops float64")


def test_readme_example():
    N, M = 1000, 517
    x = torch.randn(N, M, device="cuda")
    y = torch.zeros(N, device="cuda")
    sum_rows(x, y, N, M, opts=parir.par({"N": parir.threads(N)}))
    assert torch.allclose(y, x.sum(1), atol=1e-4)
    y2 = torch.zeros(N, device="cuda")
    sum_rows(x[:50], y2[:50], 50, M, seq=True)
    assert torch.allclose(y2[:50], x[:50].sum(1), atol=1e-4)


def test_threads_per_block_and_fewer_threads_than_iterations(rng):
    # 64 threads for 1000 iterations: each thread takes every 64th iteration.
    case = case_axpy(1000, rng, "cuda")
    x, y, out = case["args"][1:4]
    axpy(1.75, x, y, out, 1000, opts=parir.par({"i": parir.threads(64)}))
    check_close(*case["check"][0], "64 threads")
    out.fill_(float("nan"))
    axpy(1.75, x, y, out, 1000, opts=parir.par({"i": parir.threads(1000).tpb(128)}))
    check_close(*case["check"][0], "tpb 128")


def test_side_stream_and_views(rng):
    case = case_axpy(4097, rng, "cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        run_case(case)
    s.synchronize()
    check_close(*case["check"][0], "side stream")
    # A view with a storage offset: the kernel writes through data_ptr() into the base.
    base = torch.full((10,), float("nan"), device="cuda")
    x = torch.arange(5, dtype=torch.float32, device="cuda")
    axpy(2.0, x, x, base[3:8], 5, opts=parir.par({"i": parir.threads(5)}))
    assert torch.isnan(base[:3]).all() and torch.isnan(base[8:]).all()
    assert torch.equal(base[3:8], 3 * x)


def test_repeated_call_uses_memory_cache(rng, monkeypatch):
    case = case_axpy(100, rng, "cuda")
    run_case(case)
    from parir_torch import _C

    compiles = []
    real = _C.compile

    def counting(*a, **k):
        compiles.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_C, "compile", counting)
    for _ in range(5):
        run_case(case)
    assert compiles == []
    # A new scalar value specializes again.
    a, x, y, out, n = case["args"]
    axpy(2.5, x, y, out, n, opts=parir.par(case["spec"]))
    assert compiles == [1]
    check_close(out, 2.5 * x.double() + y.double(), "after respecialization")


def test_errors_at_launch(rng):
    case = case_axpy(100, rng, "cuda")
    a, x, y, out, n = case["args"]
    with pytest.raises(parir.ParirError, match="argument 'x'.*meta"):
        axpy(a, x.to("meta"), y, out, n, opts=parir.par(case["spec"]))
    with pytest.raises(parir.ParirError, match=r"takes 5 arguments \(a, x, y, out, N\) but 4"):
        axpy(a, x, y, out, opts=parir.par(case["spec"]))
    with pytest.raises(parir.ParirTypeError, match="unexpected keyword"):
        axpy(a, x, y, out, n, parallel=True)


def test_op_is_registered_and_runs(rng):
    case = case_axpy(1000, rng, "cuda")
    a, x, y, out, n = case["args"]
    source = parir.print_compiled(axpy, case["args"], parir.par(case["spec"]))
    torch.ops.parir.launch(source, [out], [x, y])
    check_close(*case["check"][0], "through torch.ops.parir.launch")
    with pytest.raises(RuntimeError, match="shape"):
        torch.ops.parir.launch(source, [out[:10]], [x, y])


def test_siblings_with_different_parallelism_run_as_separate_kernels():
    @parir.jit
    def fill_two(x, y, N):
        parir.label("i")
        for i in range(2):
            parir.label("a")
            for j in range(N):
                x[i, j] = j * 1.0
            parir.label("b")
            for j in range(N):
                y[i, j] = j * 2.0

    x = torch.full((2, 5000), float("nan"), device="cuda")
    y = torch.full((2, 5000), float("nan"), device="cuda")
    fill_two(x, y, 5000, opts=parir.par({"i": parir.threads(2), "a": parir.threads(2048),
                                          "b": parir.threads(4096)}))
    ref = torch.arange(5000, device="cuda", dtype=torch.float32).expand(2, 5000)
    assert torch.equal(x, ref) and torch.equal(y, 2 * ref)


@pytest.mark.parametrize("graphs", [False, True, None])
def test_cuda_graphs_option_replays_the_host_loop(graphs, rng):
    from programs import repeated_scale

    x = torch.rand(3000, generator=rng).cuda()
    ref = x.double().clone()
    for t in range(50):
        ref = ref * 0.5 + t
    opts = parir.par({"i": parir.threads(3000)})
    opts.use_cuda_graphs = graphs
    y = x.clone()
    repeated_scale(y, 50, 3000, opts=opts)
    check_close(y, ref, "first call")
    # A second call on the same tensor replays the graph; another tensor is captured again.
    y.copy_(x)
    repeated_scale(y, 50, 3000, opts=opts)
    check_close(y, ref, "replay")
    z = x.clone()
    repeated_scale(z, 50, 3000, opts=opts)
    check_close(z, ref, "new tensor")
    src = parir.print_compiled(repeated_scale, [y, 50, 3000], opts)
    header = {True: "//@ parir.plan repeated_scale cuda_graphs\n",
              False: "//@ parir.plan repeated_scale no_cuda_graphs\n",
              None: "//@ parir.plan repeated_scale\n"}[graphs]
    assert header in src


@pytest.mark.usefixtures("no_garbage")
def test_eager_calls_inside_torch_cuda_graph_capture(rng):
    case = case_axpy(5000, rng, "cuda")
    a, x, y, out, n = case["args"]
    opts = parir.par(case["spec"])
    axpy(a, x, y, out, n, opts=opts)  # compiles and loads before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        axpy(a, x, y, out, n, opts=opts)
    out.fill_(float("nan"))
    x.mul_(2.0)
    graph.replay()
    torch.cuda.synchronize()
    check_close(out, a * x.double() + y.double(), "graph replay")
