"""Ahead-of-time binaries (parir.aot): CUBIN per architecture and PTX stored in the program
text, loaded without NVRTC where they run on the GPU, the source compiled where none does.
The CPU tests compile with NVRTC and read the text back; the GPU tests run a saved TorchScript
module in a fresh process where NVRTC cannot be loaded."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from parir_torch.torchscript import launch
from torch_programs import scaled_add, threads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N = 1000
LIKE = torch.empty(N, device="meta")


def args():
    return [2.5, LIKE, LIKE, LIKE, N]


def test_binaries_follow_the_plan_and_read_back():
    plain = parir.print_compiled(scaled_add, args(), threads(N))
    text = parir.aot(scaled_add, args(), threads(N), archs=["sm_80", "sm_90"])
    assert text.startswith(plain)  # the program itself is unchanged
    tail = text[len(plain):].splitlines()
    assert tail[0].startswith("//% Binaries stored by parir.aot (sm_80, sm_90, compute_80)")
    assert [line.split()[2:4] for line in tail[1:]] == [
        ["sm_80", "cubin"], ["sm_90", "cubin"], ["compute_80", "ptx"]]
    program = _C.Program(text)
    assert program.stored_archs == ["sm_80", "sm_90", "compute_80"]
    assert program.source == text  # kept whole: graphs and scripted modules carry it
    assert program.function == "scaled_add" and program.params == _C.Program(plain).params
    # The one-line form that torch.compile graphs carry keeps them too.
    assert _C.Program(program.one_line_source).stored_archs == program.stored_archs


def test_a_program_text_gets_binaries_too():
    plain = parir.print_compiled(scaled_add, args(), threads(N))
    text = parir.aot(plain, archs="sm_90", ptx=False)
    assert _C.Program(text).stored_archs == ["sm_90"]
    # Again: the old binaries are replaced, not kept beside the new ones.
    assert _C.Program(parir.aot(text, archs=["sm_80"])).stored_archs == ["sm_80", "compute_80"]
    # compile_string runs such text as any other.
    fn = parir.compile_string("scaled_add", text)
    assert fn.program.stored_archs == ["sm_90"]


def test_bad_architectures_are_errors_naming_the_supported_ones():
    with pytest.raises(parir.ParirError, match=r"'sm90' is not an architecture"):
        parir.aot(scaled_add, args(), threads(N), archs=["sm90"])
    with pytest.raises(parir.ParirError, match=r"cannot compile for sm_20; it knows sm_\d+"):
        parir.aot(scaled_add, args(), threads(N), archs=["sm_20"])
    with pytest.raises(parir.ParirTypeError, match="archs is a list"):
        parir.aot(scaled_add, args(), threads(N), archs=[90])
    with pytest.raises(parir.ParirTypeError, match="takes the options from the text"):
        parir.aot("text", args(), archs=["sm_90"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="the default is the GPU's architecture")
def test_without_a_gpu_the_architectures_must_be_named():
    with pytest.raises(parir.ParirValueError, match="name the GPUs' architectures"):
        parir.aot(scaled_add, args(), threads(N))


def test_a_corrupt_binary_is_an_error_naming_its_line():
    text = parir.aot(scaled_add, args(), threads(N), archs=["sm_90"], ptx=False)
    line = len(text.splitlines())
    with pytest.raises(parir.ParirError, match=f"stored binary on line {line} of the program"):
        _C.Program(text[:-10] + "\n")


def test_parir_nvrtc_path_is_the_only_place_looked_at(tmp_path):
    """Pointing PARIR_NVRTC_PATH at nothing makes NVRTC unavailable: code is still generated,
    and compiling says why it cannot."""
    script = tmp_path / "no_nvrtc.py"
    script.write_text(textwrap.dedent("""
        import torch
        import parir_torch as parir
        from torch_programs import scaled_add, threads
        like = torch.empty(10, device="meta")
        parir.print_compiled(scaled_add, [2.0, like, like, like, 10], threads(10))
        try:
            parir.aot(scaled_add, [2.0, like, like, like, 10], threads(10), archs=["sm_90"])
        except parir.ParirError as e:
            print(e)
    """))
    env = dict(os.environ, PARIR_NVRTC_PATH=str(tmp_path / "nowhere" / "libnvrtc.so"),
               PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "NVRTC (libnvrtc.so) was not found (PARIR_NVRTC_PATH=" in proc.stdout, proc.stdout
    assert "is the only place looked at" in proc.stdout
    assert "binaries stored by parir.aot for the GPU run without it" in proc.stdout


class Model(torch.nn.Module):
    """out = 2.5 * x + y, through a program text held as an attribute."""

    def __init__(self, program):
        super().__init__()
        self.program = program

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out, = launch(self.program, [torch.empty_like(x)], [x, y])
        return out


def test_a_saved_scripted_module_keeps_its_binaries(tmp_path):
    text = parir.aot(scaled_add, args(), threads(N), archs=["sm_90"])
    path = str(tmp_path / "model.pt")
    torch.jit.save(parir.torchscript.script(Model(text)), path)
    assert torch.jit.load(path, map_location="cpu").program == text


FRESH_PROCESS = textwrap.dedent("""
    import sys
    import torch
    import parir_torch as parir
    from parir_torch import _C

    data = torch.load(sys.argv[3])
    x, y = data["x"].cuda(), data["y"].cuda()
    out = torch.jit.load(sys.argv[1])(x, y)
    torch.testing.assert_close(out.cpu(), data["expected"])
    print("stored binaries ran")
    assert "was not found" in _C.nvrtc_status(), _C.nvrtc_status()
    try:
        torch.jit.load(sys.argv[2])(x, y)
    except Exception as e:
        print("without binaries:", e)
""")


@pytest.mark.gpu
def test_scripted_module_with_binaries_runs_without_nvrtc(tmp_path):
    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    expected = 2.5 * x + y
    with_binaries, without = tmp_path / "aot.pt", tmp_path / "plain.pt"
    torch.jit.save(parir.torchscript.script(Model(parir.aot(scaled_add, args(), threads(N)))),
                   str(with_binaries))
    torch.jit.save(parir.torchscript.script(
        Model(parir.print_compiled(scaled_add, args(), threads(N)))), str(without))
    torch.save({"x": x.cpu(), "y": y.cpu(), "expected": expected.cpu()}, tmp_path / "data.pt")
    script = tmp_path / "run.py"
    script.write_text(FRESH_PROCESS)
    env = dict(os.environ, PARIR_NVRTC_PATH=str(tmp_path / "no-nvrtc"), PARIR_LOGS="debug",
               PARIR_CACHE_DIR=str(tmp_path / "kernels"),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script), str(with_binaries), str(without),
                           str(tmp_path / "data.pt")], env=env, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "stored binaries ran" in proc.stdout, out
    major, minor = torch.cuda.get_device_capability()
    assert f"scaled_add: loaded its stored sm_{major}{minor} binary on cuda:0" in proc.stderr, out
    assert "without binaries:" in proc.stdout and "NVRTC (libnvrtc.so) was not found" in \
        proc.stdout, out


def run_and_log(text, caplog):
    caplog.set_level("DEBUG", logger="parir_torch")
    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    out = torch.empty_like(x)
    torch.ops.parir.launch(text, [out], [x, y])
    torch.testing.assert_close(out, 2.5 * x + y)
    return [r.getMessage() for r in caplog.records if r.name == "parir_torch"]


@pytest.mark.gpu
def test_ptx_runs_where_no_cubin_does(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("PARIR_CACHE_DIR", str(tmp_path))
    oldest = min(_C.nvrtc_supported_archs())
    major, _ = torch.cuda.get_device_capability()
    if oldest // 10 == major:
        pytest.skip("needs a GPU of a newer major architecture than NVRTC's oldest")
    messages = run_and_log(parir.aot(scaled_add, args(), threads(N), archs=[f"sm_{oldest}"]),
                           caplog)
    assert any(f"loaded its stored compute_{oldest} binary" in m and "the driver compiled the "
               "PTX" in m for m in messages), messages
    assert not any("NVRTC compiled" in m for m in messages), messages


@pytest.mark.gpu
def test_nvrtc_compiles_where_no_stored_binary_runs(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("PARIR_CACHE_DIR", str(tmp_path))
    oldest = min(_C.nvrtc_supported_archs())
    major, _ = torch.cuda.get_device_capability()
    if oldest // 10 == major:
        pytest.skip("needs a GPU of a newer major architecture than NVRTC's oldest")
    messages = run_and_log(parir.aot(scaled_add, args(), threads(N), archs=[f"sm_{oldest}"],
                                     ptx=False), caplog)
    assert any(f"none of its stored binaries (sm_{oldest}) runs on cuda:0" in m
               for m in messages), messages
    assert any("NVRTC compiled it for" in m for m in messages), messages
