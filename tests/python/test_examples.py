"""Every example runs, or says in one line why it cannot on this machine (no GPU, no torchrun,
too few GPUs) and exits without a traceback."""

import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")


def run(args, **env):
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    full.update(env)
    return subprocess.run(args, env=full, capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_quickstart_runs_or_prints_the_code():
    proc = run([sys.executable, os.path.join(EXAMPLES, "quickstart.py")])
    assert proc.returncode == 0, proc.stderr
    assert "//@ parir.plan sum_rows" in proc.stdout
    last = proc.stdout.strip().splitlines()[-1]
    if torch.cuda.is_available():
        assert last.startswith("sum_rows ran on "), last
    else:
        assert last.startswith("No CUDA GPU was found: above is the CUDA C++"), last


def test_distributed_example_outside_torchrun_says_how_to_start_it():
    proc = run([sys.executable, os.path.join(EXAMPLES, "distributed", "allreduce_gradients.py")])
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "allreduce_gradients.py runs one process per GPU: start it with torchrun --standalone "
        "--nproc-per-node=2 examples/distributed/allreduce_gradients.py"]


def test_distributed_example_without_a_gpu_per_rank_says_so():
    env = dict(RANK="3", WORLD_SIZE="4", LOCAL_RANK="3", CUDA_VISIBLE_DEVICES="")
    proc = run([sys.executable, os.path.join(EXAMPLES, "distributed", "allreduce_gradients.py")],
               **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "allreduce_gradients.py needs an NVIDIA GPU for each rank, and PyTorch finds no CUDA "
        "GPU here"], proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="test_cpp_deploy.py runs it on a GPU")
def test_cpp_deploy_without_a_gpu_writes_the_model_and_says_why_it_stops(tmp_path):
    proc = run(["bash", os.path.join(EXAMPLES, "cpp_deploy", "run.sh"), str(tmp_path)])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (tmp_path / "model.pt").exists() and (tmp_path / "data.pt").exists()
    assert proc.stderr.strip().splitlines()[-1] == (
        f"run.sh: the model is in {tmp_path}; running it from C++ needs an NVIDIA GPU, and "
        f"PyTorch finds no CUDA GPU here"), proc.stderr
