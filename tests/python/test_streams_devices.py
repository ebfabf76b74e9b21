"""Kernels run on the current stream of their tensors' device: side streams, a second GPU,
and tensors of one call on different devices. The torchrun example runs a parir kernel on each
rank's GPU inside an NCCL job."""

import os
import subprocess
import sys

import pytest
import torch

import parir_torch as parir
from torch_programs import TwoKernels, inputs, scaled_add, threads, two_kernels_reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.gpu
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")

SLEEP_CYCLES = 200_000_000  # about 0.1 s: long enough to see which stream a kernel waits on


def run_on_blocked_side_stream(call, out):
    """Runs `call` on a side stream that is busy sleeping: if the kernel went to that stream,
    `out` is still untouched when the default stream reads it; once the side stream is done,
    the result is there."""
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        result = call()
    early = out.cpu()  # on the default stream, while the side stream sleeps
    side.synchronize()
    assert torch.isnan(early).all(), "the kernel did not wait for its stream"
    return result


@pytest.mark.parametrize("through", ["jit function", "operator"])
def test_kernel_runs_on_the_current_side_stream(through):
    x, y = (t.view(-1) for t in inputs(1000, 517))
    out = torch.empty_like(x)
    n = x.numel()
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    torch.ops.parir.launch(source, [out], [x, y])  # compile and load before timing anything
    scaled_add(2.0, x, y, out, n, opts=threads(n))
    if through == "operator":
        run_on_blocked_side_stream(lambda: torch.ops.parir.launch(source, [out], [x, y]), out)
    else:
        run_on_blocked_side_stream(lambda: scaled_add(2.0, x, y, out, n, opts=threads(n)), out)
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())


def test_compiled_model_runs_on_the_current_side_stream():
    x, y = inputs(1000, 517)
    compiled = torch.compile(TwoKernels(), fullgraph=True)
    compiled(x, y)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        out = compiled(x, y)
    side.synchronize()
    torch.testing.assert_close(out.double(), two_kernels_reference(x, y), rtol=1e-5, atol=1e-4)


@two_gpus
def test_tensors_on_the_second_gpu_run_there():
    x, y = (t.view(-1) for t in inputs(1000, 517, device="cuda:1"))
    out = torch.full_like(x, float("nan"))
    n = x.numel()
    assert torch.cuda.current_device() == 0
    scaled_add(2.0, x, y, out, n, opts=threads(n))
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())
    # The same program on device 0 gets a module of its own.
    x0, y0, out0 = x.to("cuda:0"), y.to("cuda:0"), torch.full_like(x, float("nan"), device="cuda:0")
    scaled_add(2.0, x0, y0, out0, n, opts=threads(n))
    torch.testing.assert_close(out0.cpu(), out.cpu())
    source = parir.print_compiled(scaled_add, [2.0, x, y, out, n], threads(n))
    out.fill_(float("nan"))
    torch.ops.parir.launch(source, [out], [x, y])
    torch.testing.assert_close(out.double(), 2.0 * x.double() + y.double())
    xs, ys = inputs(100, 37, device="cuda:1")
    compiled = torch.compile(TwoKernels(), fullgraph=True)
    torch.testing.assert_close(compiled(xs, ys).double(), two_kernels_reference(xs, ys),
                               rtol=1e-5, atol=1e-4)


@two_gpus
def test_tensors_on_different_gpus_are_an_error():
    x = torch.rand(100, device="cuda:0")
    y = torch.rand(100, device="cuda:1")
    out = torch.empty(100, device="cuda:0")
    with pytest.raises(parir.ParirError, match="all tensors of one call must be on the same GPU"):
        scaled_add(2.0, x, y, out, 100, opts=threads(100))


def test_cpu_tensor_passed_to_the_operator_is_an_error():
    # A jit function call copies CPU arguments to the GPU; the operator takes GPU tensors only.
    x = torch.rand(100, device="cuda")
    source = parir.print_compiled(scaled_add, [2.0, x, x, x, 100], threads(100))
    with pytest.raises(parir.ParirError, match="argument 'y' is on cpu, but parir kernels need "
                                               "CUDA tensors"):
        torch.ops.parir.launch(source, [torch.empty_like(x)], [x, x.cpu()])


def test_cpu_arguments_of_a_jit_call_are_copied_to_the_gpu_of_the_others():
    x = torch.rand(100, device="cuda")
    y = torch.rand(100)
    out = torch.full_like(x, float("nan"))
    scaled_add(2.0, x, y, out, 100, opts=threads(100))
    torch.testing.assert_close(out.double().cpu(), 2.0 * x.double().cpu() + y.double())


@two_gpus
def test_torchrun_two_ranks_each_on_its_own_gpu():
    script = os.path.join(ROOT, "examples", "distributed", "allreduce_gradients.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node=2", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rank in range(2):
        assert f"rank {rank} on cuda:{rank}: OK" in proc.stdout, proc.stdout
