"""Names as users choose them: every Python identifier, dict key and label reaches CUDA C++ and the
launch plan through one injective mapping (codegen/cuda_names.h), so programs whose names are C++
keywords, CUDA built-ins, macros, math functions, non-ASCII or escaped forms of one another
compile, launch and compute what their names say."""

import re

import pytest
import torch

import parir_torch as parir
from parir_torch import _C
from helpers import load_module

# Names that C++, CUDA, NVRTC's headers, PTX or the compiler itself reserve or use, names that
# escaping could make collide (int / int_, exp / exp_, d['k'] / d__k), and non-ASCII names.
AWKWARD = [
    "int", "int_", "auto", "register", "threadIdx", "blockIdx", "warpSize", "xor", "bitand",
    "compl", "and_eq", "not_eq", "static_cast", "char16_t", "thread_local", "_Pragma", "NULL",
    "__LINE__", "__CUDA_ARCH__", "fabs", "size_t", "nv_bfloat16", "__half", "half", "π", "λ_1",
    "exp", "exp_", "sinf", "y0", "j1", "min", "max", "WARP_SZ", "parir_t",
    "parir_block", "parir_kernel", "parir_u_int", "PARIR_FN", "cudaSuccess", "CUDART_INF",
    "acc0", "red0", "s0", "d__k", "x" * 200, "_", "__", "__x_0", "main", "std", "printf",
]

TEMPLATE = '''
import parir_torch as parir

def {fn}({a}, {b}, {n}):
    parir.label("i")
    for {i} in range({n}):
        {t} = {a}[{i}] * 2.0
        {b}[{i}] = {t} + 1.0
'''


def _programs():
    """Each awkward name once as the function, the input, the output, the size, the loop variable
    and the temporary (the other roles filled by its neighbours in the list)."""
    out = []
    k = len(AWKWARD)
    for j in range(k):
        names = [AWKWARD[(j + s) % k] for s in range(6)]
        out.append(dict(zip(("fn", "a", "b", "n", "i", "t"), names)))
    return out


PROGRAMS = _programs()


def _compiled(tmp_path, names, n=33, device="cpu"):
    module = load_module(tmp_path, TEMPLATE.format(**names), f"prog_{abs(hash(names['fn']))}")
    fn = parir.jit(getattr(module, names["fn"]))
    x = torch.randn(n, device=device)
    y = torch.full((n,), float("nan"), device=device)
    return fn, x, y


def _kernel_names(src):
    return set(re.findall(r'__global__ void __launch_bounds__\(\d+(?:, \d+)?\) (\w+)\(', src))


@pytest.mark.parametrize("names", PROGRAMS, ids=lambda p: p["fn"][:20])
def test_awkward_names_compile_and_the_plan_launches_what_the_source_defines(names, tmp_path):
    fn, x, y = _compiled(tmp_path, names)
    src = parir.print_compiled(fn, [x, y, 33], parir.par({"i": parir.threads(33)}))
    defined = _kernel_names(src)
    launched = set(re.findall(r"//@ launch (\w+) ", src))
    assert defined and launched == defined, src
    _C.nvrtc_compile(src, "sm_90")
    # The plan names the parameters by the program's own names once read back.
    assert [p for p, _ in _C.Program(src).params] == [names["a"], names["b"]]


def test_the_mapping_is_injective_and_leaves_ordinary_names_alone(tmp_path):
    fn, x, y = _compiled(tmp_path, dict(fn="scale", a="x", b="y", n="N", i="i", t="t"))
    src = parir.print_compiled(fn, [x, y, 33], parir.par({"i": parir.threads(33)}))
    assert "void __launch_bounds__(64) scale(const float* x, float* y)" in src
    assert "t = (x[i] * 2.0f);" in src
    fn, x, y = _compiled(tmp_path, dict(fn="f", a="int", b="int_", n="N", i="exp", t="exp_"))
    src = parir.print_compiled(fn, [x, y, 33], parir.par({"i": parir.threads(33)}))
    assert "f(const float* parir_u_int, float* int_)" in src
    assert "exp_ = (parir_u_int[parir_u_exp] * 2.0f);" in src


@pytest.mark.gpu
@pytest.mark.parametrize("names", PROGRAMS, ids=lambda p: p["fn"][:20])
def test_awkward_names_run(names, tmp_path):
    fn, x, y = _compiled(tmp_path, names, device="cuda")
    fn(x, y, 33, opts=parir.par({"i": parir.threads(33)}))
    torch.testing.assert_close(y, x * 2.0 + 1.0)


DICT_PROGRAM = '''
import parir_torch as parir

def {fn}({d}, d__k, out, N):
    parir.label("row\\nx = 1; // not code")
    for i in range(N):
        out[i] = {d}["k"][i] + 10.0 * d__k[i] + 100.0 * {d}["a b"][i] + 1000.0 * {d}["x-y"][i]
'''


@pytest.mark.parametrize("dict_name", ["d", "int", "π", "parir_x"])
def test_dict_keys_that_are_not_identifiers_and_entries_named_like_parameters(dict_name,
                                                                             tmp_path):
    module = load_module(tmp_path, DICT_PROGRAM.format(fn="parir_dicts", d=dict_name),
                         f"dicts_{len(dict_name)}_{ord(dict_name[0])}")
    fn = parir.jit(module.parir_dicts)
    n = 31
    device = "cuda" if torch.cuda.is_available() else "cpu"
    d = {k: torch.randn(n, device=device) for k in ("k", "a b", "x-y")}
    d__k, out = torch.randn(n, device=device), torch.full((n,), float("nan"), device=device)
    opts = parir.par({"row\nx = 1; // not code": parir.threads(n)})
    src = parir.print_compiled(fn, [d, d__k, out, n], opts)
    # The label stays inside its comment.
    assert "// label 'row\\nx = 1; // not code'" in src
    _C.nvrtc_compile(src, "sm_90")
    names = [p for p, _ in _C.Program(src).params]
    assert sorted(names) == sorted([f"{dict_name}.k", f"{dict_name}.a b", f"{dict_name}.x-y",
                                    "d__k", "out"])
    want = d["k"] + 10.0 * d__k + 100.0 * d["a b"] + 1000.0 * d["x-y"]
    if device == "cuda":
        fn(d, d__k, out, n, opts=opts)
        torch.testing.assert_close(out, want)
    fn(d, d__k, out.fill_(float("nan")), n, seq=True)
    torch.testing.assert_close(out, want)
