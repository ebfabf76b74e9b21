"""Dependencies run one way. The modules of parir_torch import each other one way: each only
imports modules of a lower layer, so no import cycle (direct, or through other modules) can form;
read from the sources with `ast`, so every import counts: module-level and function-local,
relative and absolute. Likewise each folder of csrc/ is a layer, and an #include only reaches
the same layer or a lower one."""

import ast
import os
import re
from pathlib import Path

PACKAGE = "parir_torch"
SOURCE = Path(__file__).resolve().parents[2] / PACKAGE

# Lowest first; the same order as the docstring of parir_torch/__init__.py. _C, the C++
# extension, lies below them all.
LAYERS = [
    "errors",
    "logs",
    "plain_python_ops",
    "scans",
    "builtins",
    "plain_python_rewrite",
    "plain_python",
    "specializations",
    "types",
    "options",
    "external",
    "arguments",
    "capture",
    "callees",
    "build",
    "recompiles",
    "torch_ops",
    "checking",
    "jit_function",
    "outputs",
    "ufunc_types",
    "ufunc_kernels",
    "ufunc_plans",
    "ufuncs",
    "compile",
    "torchscript",
    "__init__",
]


def _modules():
    return {p.stem for p in SOURCE.glob("*.py")}


def _imports(path, modules):
    """The modules of the package that the file at `path` imports, with the line of each."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    targets.append("__init__")  # importing a submodule runs the package first
                    targets += parts[1:2]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and (node.module or "").split(".")[0] == PACKAGE:
                targets.append("__init__")
                base = node.module.split(".")[1] if "." in node.module else None
            else:
                continue
            if base is not None:
                targets.append(base)
            else:  # `from . import x`: x is a module, or a name of the package
                targets += [a.name if a.name in modules else "__init__" for a in node.names
                            if a.name != "_C"]
        out += [(t, node.lineno) for t in targets if t in modules and t != path.stem]
    return out


def _graph():
    modules = _modules()
    return {m: _imports(SOURCE / f"{m}.py", modules) for m in sorted(modules)}


def test_layers_list_every_module():
    assert sorted(LAYERS) == sorted(_modules()), (
        "add each new module of parir_torch to LAYERS (and to the docstring of __init__.py)")


def test_imports_go_down_the_layers():
    rank = {m: i for i, m in enumerate(LAYERS)}
    wrong = [f"{m}.py:{line} imports {t}, which is not in a lower layer"
             for m, imports in _graph().items() for t, line in imports if rank[t] >= rank[m]]
    assert not wrong, "\n".join(wrong)


def test_import_graph_is_acyclic():
    graph = {m: sorted({t for t, _ in imports}) for m, imports in _graph().items()}
    state = {}  # module -> "open" while on the path, "done" after

    def visit(m, path):
        state[m] = "open"
        for t in graph[m]:
            if state.get(t) == "open":
                cycle = path[path.index(t):] + [m, t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t, path + [m])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [])


def test_package_docstring_names_the_layers():
    doc = ast.get_docstring(ast.parse((SOURCE / "__init__.py").read_text()))
    listed = re.findall(r"^    (\w+) {2,}", doc, re.MULTILINE)
    assert listed == LAYERS


def test_the_check_sees_imports(tmp_path):
    """The reader finds each form of import (a check that finds none would always pass)."""
    (tmp_path / "m.py").write_text(
        "from . import a\nfrom .b import x\nimport parir_torch.c\n"
        "def f():\n    from parir_torch import d\n    from parir_torch.e import y\n")
    found = sorted(t for t, _ in _imports(tmp_path / "m.py", {"a", "b", "c", "d", "e",
                                                               "__init__"}))
    assert found == ["__init__", "__init__", "__init__", "a", "b", "c", "d", "e"]


# ----- C++: csrc/<layer>/ folders --------------------------------------------------------------

CSRC = str(Path(__file__).resolve().parents[2] / "csrc")

# Lowest first. A file may include headers of its own layer and of the layers below it:
#   ir        the IR, its types and the data every level of lowering produces (kernels, plans)
#   passes    transformations of the IR, one per file
#   codegen   printing: CUDA C++ and the launch plan's text (which it also parses)
#   compiler  the pipeline: passes then code generation
#   runtime   NVRTC, the driver, the disk cache, running plans, the parir::launch operator
#   frontend  Python `ast` objects to IR
#   python    the bindings (parir_torch._C)
CPP_LAYERS = ["ir", "passes", "codegen", "compiler", "runtime", "frontend", "python"]
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def cpp_includes():
    """[(file, its layer, included layer)] for every #include "layer/..." of csrc."""
    out = []
    for layer in sorted(os.listdir(CSRC)):
        folder = os.path.join(CSRC, layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith((".h", ".cpp")):
                with open(os.path.join(folder, name)) as f:
                    for included in _INCLUDE.findall(f.read()):
                        out.append((f"{layer}/{name}", layer, included))
    return out


def test_every_csrc_folder_is_a_layer():
    folders = {d for d in os.listdir(CSRC) if os.path.isdir(os.path.join(CSRC, d))}
    assert folders == set(CPP_LAYERS)


def test_cpp_includes_point_down():
    upward = [f"{file} includes {inc}/" for file, layer, inc in cpp_includes()
              if inc in CPP_LAYERS and CPP_LAYERS.index(inc) > CPP_LAYERS.index(layer)]
    assert not upward, "includes from a lower layer to a higher one:\n" + "\n".join(upward)
    assert len(cpp_includes()) > 50  # the scan found the code
