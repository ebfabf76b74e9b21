"""torch.compile, torch.export and the parir::launch operator's hygiene.

CPU tests trace with fake CUDA tensors (no GPU needed): the graphs Dynamo, make_fx and export
record. GPU tests (marker `gpu`) run compiled models against eager and float64 references."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import parir_torch as parir
from parir_torch import torch_ops
from programs import repeated_scale
from torch_programs import (TwoKernels, dict_scale, inputs, row_opts, scaled_add, sum_rows,
                            threads, two_kernels_reference)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def launch_nodes(gm):
    return [n for n in gm.graph.nodes if n.target is torch.ops.parir.launch.default]


def recording_backend(graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend


# ---------------------------------------------------------------------------------------------
# CPU: the operator and tracing with fake CUDA tensors


def test_op_schema_mutates_outputs_only():
    schema = torch.ops.parir.launch.default._schema
    assert str(schema) == "parir::launch(str program, Tensor(a!)[] outs, Tensor[] ins) -> ()"
    outs, ins = schema.arguments[1], schema.arguments[2]
    assert outs.alias_info.is_write and (ins.alias_info is None or not ins.alias_info.is_write)
    for key in ("CUDA", "Autograd"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key("parir::launch", key)


def test_fake_tensor_call_records_the_operator_with_its_program():
    mode = FakeTensorMode()
    with mode:
        x, y = (torch.empty(1000, device="cuda") for _ in range(2))

    def f(x, y):
        out = torch.empty_like(x)
        scaled_add(2.0, x, y, out, 1000, opts=threads(1000))
        return out

    with mode:
        gm = make_fx(f)(x, y)
    (node,) = launch_nodes(gm)
    meta = torch.empty(1000, device="meta")
    source = parir.print_compiled(scaled_add, [2.0, meta, meta, meta, 1000], threads(1000))
    # The graph carries the program on one line (Inductor copies string arguments unescaped into
    # comments of the Python it generates); the op reads it back to the same text.
    assert "\n" not in node.args[0] and "\n" not in node.format_node()
    assert parir._C.Program(node.args[0], [], [], []).source == source
    assert parir._C.Program(source, [], [], []).one_line_source == node.args[0]
    empty = [n for n in gm.graph.nodes if n.target is torch.ops.aten.empty_like.default]
    assert [a.name for a in node.args[1]] == [empty[0].name]
    assert [a.name for a in node.args[2]] == ["x_1", "y_1"]


@pytest.mark.parametrize("dynamic", [False, True])
def test_dynamo_records_one_node_per_call_without_graph_breaks(dynamic):
    graphs = []
    torch._dynamo.reset()
    compiled = torch.compile(TwoKernels(), backend=recording_backend(graphs), fullgraph=True,
                             dynamic=dynamic)
    mode = FakeTensorMode()
    with mode:
        for rows in (100, 101, 100):  # a new shape compiles a new graph; the old one is reused
            x, y = (torch.empty(rows, 37, device="cuda") for _ in range(2))
            compiled(x, y)
    assert len(graphs) == 2
    for gm in graphs:
        entries = [n for n in gm.graph.nodes if n.op == "call_function"
                   and getattr(n.target, "__name__", "").startswith("parir_")]
        assert [n.target.__name__ for n in entries] == ["parir_scaled_add", "parir_sum_rows"]


def test_dynamo_explain_reports_no_graph_break():
    mode = FakeTensorMode()
    with mode:
        x, y = (torch.empty(100, 37, device="cuda") for _ in range(2))
        explanation = torch._dynamo.explain(TwoKernels())(x, y)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


@pytest.mark.parametrize("strict", [False, True])
def test_export_records_the_operator_and_functionalizes_it(strict):
    mode = FakeTensorMode()
    with mode:
        x, y = (torch.empty(100, 37, device="cuda") for _ in range(2))
        ep = torch.export.export(TwoKernels(), (x, y), strict=strict)
        assert len(launch_nodes(ep.graph_module)) == 2
        decomposed = ep.run_decompositions()
    functional = [n for n in decomposed.graph_module.graph.nodes
                  if n.target is torch.ops.higher_order.auto_functionalized_v2]
    assert [n.args[0] for n in functional] == [torch.ops.parir.launch.default] * 2
    assert not launch_nodes(decomposed.graph_module)


def test_symbolic_sizes_are_specialized_with_guards():
    graphs = []
    torch._dynamo.reset()
    compiled = torch.compile(TwoKernels(), backend=recording_backend(graphs), fullgraph=True,
                             dynamic=True)
    with FakeTensorMode():
        x, y = (torch.empty(100, 37, device="cuda") for _ in range(2))
        compiled(x, y)
    (gm,) = graphs
    # The graph's inputs have symbolic sizes; the traced call pins them with guards.
    example = next(n for n in gm.graph.nodes if n.op == "placeholder").meta["example_value"]
    assert all(isinstance(s, torch.SymInt) for s in example.shape)
    guards = [str(g.expr) for g in example.shape[0].node.shape_env.guards]
    assert any("100" in g for g in guards) and any("37" in g for g in guards), guards


def make_fx_backend(graphs):
    """A torch.compile backend that traces Dynamo's graph down to operators (as AOTAutograd
    does) and keeps that graph."""
    def backend(gm, example_inputs):
        graphs.append(make_fx(gm)(*example_inputs))
        return gm.forward
    return backend


def test_dict_argument_crosses_the_graph_as_keys_and_tensors():
    def f(x, a):
        out = torch.empty_like(x)
        dict_scale({"a": a, "x": x}, out, x.shape[0], opts=threads(x.shape[0]))
        return out

    graphs = []
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=make_fx_backend(graphs), fullgraph=True)
    with FakeTensorMode():
        x = torch.empty(50, device="cuda")
        compiled(x, 3.0)
    (gm,) = graphs
    (node,) = launch_nodes(gm)
    meta = torch.empty(50, device="meta")
    source = parir.print_compiled(dict_scale, [{"a": 3.0, "x": meta}, meta, 50], threads(50))
    assert parir._C.Program(node.args[0], [], [], []).source == source
    assert len(node.args[1]) == 1 and len(node.args[2]) == 1  # out; p['x']


def test_traced_zero_dim_tensor_is_a_parir_error():
    def f(x, a):
        out = torch.empty_like(x)
        scaled_add(a, x, x, out, 50, opts=threads(50))
        return out

    torch._dynamo.reset()
    compiled = torch.compile(f, backend=recording_backend([]), fullgraph=True)
    with FakeTensorMode():
        x = torch.empty(50, device="cuda")
        with pytest.raises(Exception, match="argument 'a' is a 0-d tensor.*Python number"):
            compiled(x, torch.tensor(2.0, device="cuda"))


def test_options_cross_the_graph_as_constants():
    opts = row_opts(10)
    opts.use_cuda_graphs = True
    opts.extra_flags = ["-lineinfo"]
    state = torch_ops.options_state(opts)
    again = torch_ops.options_from_state(state)
    assert torch_ops.options_state(again) == state
    assert again.parallelize == opts.parallelize and again.extra_flags == ["-lineinfo"]
    hash(state)


def test_traced_call_of_a_cpu_tensor_is_a_parir_error():
    mode = FakeTensorMode()
    with mode:
        x, y, out = (torch.empty(10) for _ in range(3))
        with pytest.raises(parir.ParirError, match="argument 'x' is a tensor on cpu"):
            torch_ops.launch_traced(scaled_add, (2.0, x, y, out, 10), threads(10), False)


# ---------------------------------------------------------------------------------------------
# GPU: compiled models run


def check_output(actual, expected, what):
    assert not torch.isnan(actual).any(), what
    torch.testing.assert_close(actual.double().cpu(), expected.double().cpu(), rtol=1e-5,
                               atol=1e-4, msg=what)


@pytest.mark.gpu
def test_compiled_model_matches_eager_and_runs_only_the_operator():
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    x, y = inputs(1000, 517)
    eager = TwoKernels()(x, y)
    check_output(eager, two_kernels_reference(x, y), "eager")
    compiled = torch.compile(TwoKernels(), fullgraph=True)
    out, (code, *_) = run_and_get_code(compiled, x, y)
    assert torch.equal(out, eager)
    assert code.count("torch.ops.parir.launch.default(") == 2, code
    # Outputs allocated in the graph are written in place: no clone or copy around the kernels.
    assert "clone" not in code and ".copy_(" not in code, code
    x2, y2 = inputs(1000, 517, seed=1)
    check_output(compiled(x2, y2), two_kernels_reference(x2, y2), "second call")


@pytest.mark.gpu
@pytest.mark.parametrize("dynamic", [False, True])
def test_new_shape_recompiles(dynamic):
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    compiled = torch.compile(TwoKernels(), fullgraph=True, dynamic=dynamic)
    for rows in (1000, 33, 1000, 4097):
        x, y = inputs(rows, 65, seed=rows)
        check_output(compiled(x, y), two_kernels_reference(x, y), f"{rows} rows")
    assert counters["stats"]["unique_graphs"] == 3


@pytest.mark.gpu
def test_compiled_function_writing_its_input_matches_eager():
    def f(x, y, out):
        scaled_add(3.0, x, y, out, x.numel(), opts=threads(x.numel()))
        return out.sum()

    x, y = (t.view(-1) for t in inputs(31, 33))
    out = torch.full_like(x, float("nan"))
    total = torch.compile(f, fullgraph=True)(x, y, out)
    check_output(out, 3.0 * x.double() + y.double(), "mutated input")
    check_output(total, (3.0 * x.double() + y.double()).sum(), "sum")


@pytest.mark.gpu
def test_reduce_overhead_captures_cuda_graphs_without_skips(caplog):
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    compiled = torch.compile(TwoKernels(), mode="reduce-overhead", fullgraph=True)
    with caplog.at_level("WARNING"):
        for seed in range(5):  # warm-up, recording, then replays
            x, y = inputs(1000, 517, seed=seed)
            out = compiled(x, y).clone()
            check_output(out, two_kernels_reference(x, y), f"call {seed}")
    assert counters["inductor"]["cudagraph_skips"] == 0
    assert "skipping cudagraphs" not in caplog.text


@pytest.mark.gpu
def test_no_device_synchronization_on_the_call_paths():
    x, y = (t.view(-1) for t in inputs(100, 37))
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    compiled = torch.compile(TwoKernels(), fullgraph=True)
    x2, y2 = inputs(100, 37)
    scaled_add(2.0, x, y, out, n, opts=threads(n))  # compile and load first
    torch.ops.parir.launch(source, [out], [x, y])
    compiled(x2, y2)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            scaled_add(2.0, x, y, out, n, opts=threads(n))
            torch.ops.parir.launch(source, [out], [x, y])
            result = compiled(x2, y2)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    check_output(out, 2.0 * x.double() + y.double(), "eager")
    check_output(result, two_kernels_reference(x2, y2), "compiled")


@pytest.mark.gpu
def test_opcheck():
    x, y = (t.view(-1) for t in inputs(100, 37))
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    torch.library.opcheck(torch.ops.parir.launch.default, (source, [out], [x, y]))
    xs = x.view(100, 37)
    s = torch.zeros(100, device="cuda")
    rows = parir.print_compiled(sum_rows, [xs, s, 100, 37], row_opts(100))
    torch.library.opcheck(torch.ops.parir.launch.default, (rows, [s], [xs]))
    # With inputs that require grad: the operator has an autograd kernel (which refuses to be
    # differentiated, with an error; see test_autograd.py).
    torch.library.opcheck(torch.ops.parir.launch.default,
                          (source, [out], [x.clone().requires_grad_(), y]),
                          test_utils="test_autograd_registration")


FRESH_PROCESS = textwrap.dedent("""
    import json, sys
    import torch
    sys.path.insert(0, {tests!r})
    from torch_programs import TwoKernels, inputs, two_kernels_reference
    torch._dynamo.utils.counters.clear()
    x, y = inputs(1000, 517)
    out = torch.compile(TwoKernels(), fullgraph=True)(x, y)
    err = (out.double() - two_kernels_reference(x, y)).abs().max().item()
    print(json.dumps({{"err": err, "hits": torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"]}}))
""")


@pytest.mark.gpu
def test_compiled_graph_from_the_fx_graph_cache_runs_in_a_fresh_process(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(FRESH_PROCESS.format(tests=HERE))
    results = []
    for run in range(2):
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
                   TORCHINDUCTOR_FX_GRAPH_CACHE="1",
                   PARIR_CACHE_DIR=str(tmp_path / f"parir{run}"),  # kernels built afresh
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert results[0]["hits"] == 0 and results[1]["hits"] >= 1, results
    assert all(r["err"] < 1e-3 for r in results), results


class HostLoopModel(torch.nn.Module):
    """A model whose forward calls a jit function with a host loop (a kernel per step)."""

    def __init__(self, steps, graphs):
        super().__init__()
        self.steps, self.graphs = steps, graphs

    def forward(self, x):
        y = x * 2.0
        opts = parir.par({"i": parir.threads(x.shape[0])})
        opts.use_cuda_graphs = self.graphs
        repeated_scale(y, self.steps, x.shape[0], opts=opts)
        return y + 1.0


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [None, True, False])
def test_host_loop_under_reduce_overhead_matches_eager(graphs):
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    model = HostLoopModel(12, graphs)
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    for seed in range(5):  # warm-up, recording, then replays on new inputs
        x = torch.rand(3001, generator=torch.Generator().manual_seed(seed)).cuda()
        eager = HostLoopModel(12, False)(x)
        out = compiled(x).clone()
        assert torch.equal(out, eager), seed
    assert counters["inductor"]["cudagraph_skips"] == 0
