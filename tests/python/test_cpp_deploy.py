"""The C++ deployment example end to end: a scripted model calling parir kernels is saved,
a C++ program linking LibTorch and libparir_torch_ops is built with CMake, and it runs the
model with no Python and compares its output, then the model with binaries stored in its
programs without NVRTC (examples/cpp_deploy/run.sh does it all)."""

import os
import shutil
import subprocess

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "examples", "cpp_deploy", "run.sh")


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cpp_program_runs_the_saved_model_without_python(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(["bash", RUN, str(tmp_path / "build")], env=env, capture_output=True,
                          text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Python, saved and reloaded: max |out - expected|" in proc.stdout, out
    runs = [line for line in proc.stdout.splitlines() if line.startswith("run ")]
    # Three runs compiling the text, three with the stored binaries and no NVRTC.
    assert len(runs) == 6 and all("output finite" in line for line in runs), out
    assert proc.stdout.count("equal to the output of the same model run from Python") == 6, out
    assert [line for line in proc.stdout.splitlines() if line in ("OK", "FAILED")] == \
        ["OK", "OK"], out
    major, minor = torch.cuda.get_device_capability()
    for kernel in ("scaled_add", "sum_rows"):
        assert f"parir_torch: {kernel}: loaded its stored sm_{major}{minor} binary" in \
            proc.stderr, out
    assert "NVRTC compiled" not in proc.stderr, out
