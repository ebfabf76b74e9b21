import re

import torch

import parir_torch as parir


def check_close(actual, expected, what=""):
    """Compares a parir output with its reference (computed in float64 or exactly)."""
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    assert a.shape == e.shape, f"{what}: shape {tuple(a.shape)} != {tuple(e.shape)}"
    if a.dtype == torch.bool or not a.dtype.is_floating_point:
        mismatch = (a.to(torch.int64) != e.to(torch.int64)).nonzero()
        assert mismatch.numel() == 0, (
            f"{what}: {mismatch.shape[0]} wrong elements, first at {mismatch[0].tolist()}: "
            f"{a[tuple(mismatch[0])].item()} != {e[tuple(mismatch[0])].item()}")
        return
    assert not torch.isnan(a).any(), f"{what}: NaN in output (an element was not written)"
    rtol, atol = (1e-5, 1e-4) if a.dtype == torch.float32 else (1e-11, 1e-11)
    torch.testing.assert_close(a.double(), e.double(), rtol=rtol, atol=atol, msg=what)


def run_case(case):
    case["fn"](*case["args"], opts=parir.par(case["spec"]))


def check_reduction(out, ref, n):
    """A one-element reduction result against its reference: exact for integers; for floats a
    tolerance that grows with the number of elements combined."""
    if out.dtype.is_floating_point:
        tol = 1e-4 if out.dtype == torch.float32 else 1e-10
        torch.testing.assert_close(out.cpu().double()[0], ref.double(), rtol=tol,
                                   atol=tol * max(1.0, n ** 0.5))
    else:
        assert out.item() == ref.item()


def load_module(tmp_path, text, name="user_program"):
    """Imports Python source `text` as a module from a file (parir reads functions' source)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expect_error_in_loop(tmp_path, statement, pattern, args, spec, name="bad_program"):
    """Compiling `def f(x, N)` whose labelled loop body is `statement` raises a ParirError that
    matches `pattern` and names the statement's file and line."""
    import pytest
    import parir_torch as parir

    m = load_module(tmp_path, "import parir_torch as parir\n"
                              "def f(x, N):\n"
                              "    parir.label('N')\n"
                              "    for i in range(N):\n"
                              f"        {statement}\n", name)
    with pytest.raises(parir.ParirError, match=pattern) as info:
        parir.print_compiled(m.f, args, spec)
    assert f"{tmp_path / (name + '.py')}:5" in str(info.value)


def without_aligned_copies(source):
    """A generated source without the kernels' copies for 16-byte aligned tensors (NAME_aligned,
    passes/specialize_aligned_kernels.h): the code that tests counting a kernel's statements
    read. test_wide_accesses checks the copies."""
    return re.sub(r'\nextern "C" __global__ void __launch_bounds__\([^)]*\) \w+_aligned\(.*?\n}\n',
                  "\n", source, flags=re.S)
