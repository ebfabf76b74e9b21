"""parir kernels inside CUDA graphs captured by PyTorch (torch.cuda.graph); compiled models
under mode="reduce-overhead" are in test_torch_compile.py."""

import os
import sys

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from torch_programs import inputs, scaled_add, threads

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("no_garbage")]


def fresh_scaled_add():
    """A jit function with empty caches of its own."""
    return parir.jit(scaled_add.fn)


def test_operator_call_inside_capture_replays():
    x, y = (t.view(-1) for t in inputs(100, 37))
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    torch.ops.parir.launch(source, [out], [x, y])  # warm-up: compiles and loads
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.ops.parir.launch(source, [out], [x, y])
    out.fill_(float("nan"))
    x.mul_(-1.0)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())


@pytest.mark.parametrize("through", ["jit function", "operator"])
def test_first_call_during_capture_is_a_clear_error(through):
    fn = fresh_scaled_add()
    x, y = (t.view(-1) for t in inputs(100, 41))  # a shape no other test compiles
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(fn, [7.0, x, y, out, n], threads(n))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="captured into a CUDA graph.*warm-up"):
        with torch.cuda.graph(graph):
            if through == "operator":
                torch.ops.parir.launch(source, [out], [x, y])
            else:
                fn(7.0, x, y, out, n, opts=threads(n))
    # Nothing was left half-done: the same call works outside the capture.
    fn(7.0, x, y, out, n, opts=threads(n))
    torch.testing.assert_close(out.double(), 7.0 * x.double() + y.double())


def test_captured_kernels_stay_loaded_after_their_program_is_dropped():
    fn = fresh_scaled_add()
    x, y = (t.view(-1) for t in inputs(10, 97))
    out = torch.empty_like(x)
    n = x.numel()
    fn(5.0, x, y, out, n, opts=threads(n))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(5.0, x, y, out, n, opts=threads(n))
    fn.clear_cache()  # drops the program that was captured
    # Enough other programs come and go for retired modules to be unloaded.
    other = fresh_scaled_add()
    other._cache.limit = 2
    for k in range(40):
        other(float(k), x, y, out, n, opts=threads(n))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out.double(), 5.0 * x.double() + y.double())
    assert _C.loaded_module_count() >= 1


# ----- host loops run as CUDA graphs (CompileOptions.use_cuda_graphs) -------------------------

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


def _host_loop_programs():
    """The real-program benchmark's programs whose launch plans have host loops."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    from npbench import PROGRAMS

    return [p for p in PROGRAMS
            if any("//@ for " in parir.print_compiled(fn, list(args), opts)
                   for fn, args, opts in _calls(p, "ci", "meta"))]


def _calls(prog, size, device, seed=5):
    from npbench.program import Inputs

    st = prog.make_inputs(prog.sizes[size], torch.float32, Inputs(torch.float32, device, seed))
    return prog.parir_calls(st) if device == "meta" else (st, prog.parir_calls(st))


def _run(prog, graphs, calls=1, seed=5, persistent=True, tiling=True):
    """The program's parir calls at its quick size with use_cuda_graphs=`graphs`,
    persistent_loops=`persistent` and time_tiling=`tiling`, `calls` times from the same inputs
    (restored between calls, in place: same addresses); the outputs."""
    st, steps = _calls(prog, "quick", "cuda", seed)
    pristine = {k: v.clone() for k, v in st.items() if isinstance(v, torch.Tensor)}
    for _ in range(calls):
        for k, v in pristine.items():
            st[k].copy_(v)
        for fn, args, opts in steps:
            opts.use_cuda_graphs = graphs
            opts.persistent_loops = persistent
            opts.time_tiling = tiling
            fn(*args, opts=opts)
    torch.cuda.synchronize()
    return {k: st[k].clone() for k in prog.outputs}


@pytest.mark.parametrize("prog", _host_loop_programs(), ids=lambda p: p.name)
def test_host_loop_programs_give_the_plain_path_results_as_graphs(prog):
    plain = _run(prog, False, persistent=False, tiling=False)
    for graphs, calls, tiling in [(None, 1, True), (None, 3, True), (True, 1, True),
                                  (True, 2, True), (False, 1, True), (None, 3, False)]:
        got = _run(prog, graphs, calls, tiling=tiling)
        for k in prog.outputs:
            assert torch.equal(got[k], plain[k]), (prog.name, k, graphs, calls, tiling)


@pytest.mark.parametrize("graphs", [None, True])
def test_host_loop_graphs_follow_tensors_that_change_address(graphs, rng):
    from programs import repeated_scale

    n, steps = 1000, 20
    opts = parir.par({"i": parir.threads(n)})
    opts.use_cuda_graphs = graphs
    # More sets of tensors than graphs are kept (8), called in turn, then fresh tensors on
    # every call: each result is the plain loop's.
    sets = [torch.rand(n, generator=rng).cuda() for _ in range(11)]
    for round in range(4):
        for x in sets:
            y = x if round < 3 else x.clone()
            expected = y.double()
            for t in range(steps):
                expected = expected * 0.5 + t
            repeated_scale(y, steps, n, opts=opts)
            torch.testing.assert_close(y.double(), expected, rtol=1e-5, atol=1e-3)


def test_host_loop_with_auto_graphs_inside_torch_cuda_graph_capture(rng):
    from programs import repeated_scale

    n, steps = 777, 9
    opts = parir.par({"i": parir.threads(n)})  # use_cuda_graphs=None: a graph when it pays
    x = torch.rand(n, generator=rng).cuda()
    y = x.clone()
    repeated_scale(y, steps, n, opts=opts)  # compiles and loads before the capture
    repeated_scale(y, steps, n, opts=opts)  # the second sighting of y: parir captures its graph
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # inside a capture, the launches join PyTorch's graph
        repeated_scale(y, steps, n, opts=opts)
    y.copy_(x)
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    expected = x.double()
    for _ in range(2):
        for t in range(steps):
            expected = expected * 0.5 + t
    torch.testing.assert_close(y.double(), expected, rtol=1e-5, atol=1e-4)


# ----- host loops as persistent kernels (CompileOptions.persistent_loops) ---------------------

@pytest.mark.parametrize("n", [1, 31, 1000, 15 * 1024 + 1, 16 * 1024])
def test_persistent_loop_matches_the_launches(n, rng):
    from programs import repeated_scale

    x = torch.rand(n, generator=rng).cuda()
    results = []
    for persistent in (False, True):
        y = x.clone()
        opts = parir.par({"i": parir.threads(n)})
        opts.persistent_loops = persistent
        opts.time_tiling = False  # the persistent kernel, not tiles of time steps
        opts.use_cuda_graphs = False
        repeated_scale(y, 37, n, opts=opts)
        results.append(y)
    torch.cuda.synchronize()
    assert torch.equal(results[0], results[1])
    expected = x.double()
    for t in range(37):
        expected = expected * 0.5 + t
    torch.testing.assert_close(results[1].double(), expected, rtol=1e-5, atol=1e-3)
