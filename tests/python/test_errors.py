"""Bad input gives a ParirError naming the user's file, line and the construct at fault;
never a crash or a wrong answer. All checks run without a GPU."""

import inspect
import re

import pytest
import torch

import parir_torch as parir

FILE = "test_errors.py"


def line_of(fn, text):
    """The file line number of the first source line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def expect(fn, args, spec, pattern, at=None):
    with pytest.raises(parir.ParirError) as info:
        parir.print_compiled(fn, args, parir.par(spec))
    msg = str(info.value)
    assert re.search(pattern, msg, re.S), msg
    if at is not None:
        assert f"{FILE}:{line_of(fn, at)}" in msg, msg
        assert at in msg, "the message quotes the offending source: " + msg
    return msg


def x10():
    return torch.zeros(10)


def test_statement_outside_parallel_code_suggests_gpu_block():
    def f(x, N):
        x[0] = 0.0
        parir.label("i")
        for i in range(N):
            x[i] += 1.0

    expect(f, [x10(), 10], {"i": parir.threads(10)}, r"with parir\.gpu:", at="x[0] = 0.0")


def test_wrong_rank_indexing_names_the_tensor():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    expect(f, [torch.zeros(10, 3), 10], {"i": parir.threads(10)},
           r"tensor 'x' has 2 dimensions .* indexed with 1 index", at="x[i] = 1.0")


@pytest.mark.parametrize("stmt,pattern", [
    ("return x", r"`return` is not supported"),
    ("print(i)", r"'print' is not a function parir can call"),
    ("x[i] = [1, 2][0]", r"List expressions are not supported"),
    ("x[i] = 'a'", r"constants of type str are not supported"),
    ("x[i] = x.shape[0]", r"attribute access is not supported"),
    ("x[i] = len(x)", r"'len' is not a function parir can call"),
    ("break", r"`break` is not supported"),
    ("a, b = 1, 2", r"tuple assignment is not supported"),
])
def test_unsupported_constructs_are_named(tmp_path, stmt, pattern):
    # Each function lives in its own file so that its source can be read back.
    path = tmp_path / "bad_construct.py"
    path.write_text(
        "import parir_torch as parir\n"
        "def f(x, N):\n"
        "    parir.label('i')\n"
        "    for i in range(N):\n"
        f"        {stmt}\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(parir.ParirError, match=pattern) as info:
        parir.print_compiled(namespace["f"], [x10(), 10], parir.par({"i": parir.threads(10)}))
    assert f"{path}:5" in str(info.value)
    assert stmt in str(info.value)


def test_spec_labels_the_function_does_not_use_are_ignored():
    # One spec is often shared by several functions: 'j' belongs to another one.
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    src = parir.print_compiled(f, [x10(), 10],
                               parir.par({"i": parir.threads(10), "j": parir.threads(4)}))
    assert "label 'i': parallel over 32 threads" in src


def test_spec_matching_no_label_warns():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            with parir.gpu:
                x[i] = 1.0

    with pytest.warns(parir.ParirWarning, match=r"names 'k', but no statement of f\(\) has such"):
        parir.print_compiled(f, [x10(), 10], parir.par({"k": parir.threads(4)}))


def test_zero_threads_for_a_loop_that_runs():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    expect(f, [x10(), 10], {"i": parir.threads(0)}, r"gives this loop 0 threads")
    # A size of 0 gives 0 threads to an empty loop: nothing to run, nothing wrong.
    parir.print_compiled(f, [torch.zeros(0), 0], parir.par({"i": parir.threads(0)}))


def test_float_index():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i * 0.5] = 1.0

    expect(f, [x10(), 10], {"i": parir.threads(10)}, r"index into 'x' must be an integer, not "
           r"float64", at="x[i * 0.5] = 1.0")


def test_undefined_name_and_use_before_assignment():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = undefined_thing  # noqa: F821

    expect(f, [x10(), 10], {"i": parir.threads(10)}, r"name 'undefined_thing' is not defined",
           at="undefined_thing")

    def g(x, N):
        parir.label("i")
        for i in range(N):
            if i > 2:
                s = 1.0
            x[i] = s

    expect(g, [x10(), 10], {"i": parir.threads(10)}, r"local variable 's' may be used before it is assigned",
           at="x[i] = s")


def test_assigning_an_argument():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            N = 3

    expect(f, [x10(), 10], {"i": parir.threads(10)}, r"cannot assign to the argument 'N'",
           at="N = 3")


def test_conflicting_types_for_one_local():
    def f(x, y, N):
        parir.label("i")
        for i in range(N):
            if i > 3:
                v = x[i]
            else:
                v = y[i]
            x[i] = v

    expect(f, [x10(), torch.zeros(10, dtype=torch.int32), 10], {"i": parir.threads(10)},
           r"local variable 'v' is assigned a int32 value here, but a float32 value",
           at="v = y[i]")


def test_no_parallelism():
    def f(x, N):
        for i in range(N):
            parir.label("j")
            for j in range(N):
                x[j] = 1.0

    expect(f, [x10(), 10], {}, r"f \(.*\) has no parallel code")


def test_host_loop_bound_reads_a_tensor():
    def f(x, n, N):
        for t in range(n[0]):
            parir.label("i")
            for i in range(N):
                x[i] += 1.0

    expect(f, [x10(), torch.zeros(1, dtype=torch.int64), 10], {"i": parir.threads(10)},
           r"reads tensor 'n', whose data is on the GPU", at="for t in range(n[0]):")


def test_local_read_after_its_parallel_loop():
    def f(x, y, N):
        parir.label("i")
        for i in range(1):
            s = 0.0
            parir.label("j")
            for j in range(N):
                s = x[j]
            y[0] = s

    expect(f, [x10(), x10(), 10], {"i": parir.threads(1), "j": parir.threads(10)},
           r"local variable 's' is assigned inside the parallel loop on line \d+ and read after",
           at="y[0] = s")


def test_block_level_write_with_multi_block_inner_loop():
    def f(x, y, N):
        parir.label("i")
        for i in range(2):
            y[i] = 0.0
            parir.label("j")
            for j in range(N):
                x[i, j] = 1.0

    expect(f, [torch.zeros(2, 5000), x10(), 5000],
           {"i": parir.threads(2), "j": parir.threads(5000)},
           r"write to 'y' is outside the innermost parallel loop, which spans 5 blocks",
           at="y[i] = 0.0")


def test_split_kernels_cannot_share_locals():
    def f(x, y, N):
        parir.label("i")
        for i in range(2):
            s = x[i, 0]
            parir.label("a")
            for j in range(N):
                x[i, j] = s
            parir.label("b")
            for j in range(N):
                y[i, j] = s

    expect(f, [torch.zeros(2, 5000), torch.zeros(2, 5000), 5000],
           {"i": parir.threads(2), "a": parir.threads(2048), "b": parir.threads(4096)},
           r"request different numbers of threads, so this code runs in a separate kernel from "
           r"the assignment to local 's'", at="y[i, j] = s")


def test_bad_arguments_are_named():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    with pytest.raises(parir.ParirError, match=r"argument 'x' has dtype torch.complex64"):
        parir.print_compiled(f, [torch.zeros(10, dtype=torch.complex64), 10],
                             parir.par({"i": parir.threads(10)}))
    with pytest.raises(parir.ParirError, match=r"argument 'N' is a builtins.str"):
        parir.print_compiled(f, [x10(), "10"], parir.par({"i": parir.threads(10)}))
    with pytest.raises(parir.ParirError, match=r"argument 'N' = 36893488147419103232 does not fit"):
        parir.print_compiled(f, [x10(), 2 ** 65], parir.par({"i": parir.threads(10)}))
    with pytest.raises(parir.ParirError, match=r"takes 2 arguments \(x, N\) but 3 were given"):
        parir.print_compiled(f, [x10(), 10, 3], parir.par({"i": parir.threads(10)}))


def test_forced_sizes_of_the_wrong_kind_are_rejected():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    opts = parir.par({"i": parir.threads(10)})
    opts.force_int_size = parir.ElemSize.F32
    with pytest.raises(parir.ParirError, match="force_int_size must be an integer type"):
        parir.print_compiled(f, [x10(), 10], opts)
    opts.force_int_size, opts.force_float_size = None, parir.ElemSize.I32
    with pytest.raises(parir.ParirError, match="force_float_size must be a floating-point type"):
        parir.print_compiled(f, [x10(), 10], opts)
    opts.force_float_size = "float128"
    with pytest.raises(parir.ParirError, match="'float128' is not a type parir knows"):
        parir.print_compiled(f, [x10(), 10], opts)


def test_bad_parallel_specs():
    with pytest.raises(ValueError):
        parir.threads(-1)
    with pytest.raises(ValueError):
        parir.threads(10).tpb(100)
    with pytest.raises(TypeError):
        parir.par([("i", parir.threads(3))])


def test_label_must_precede_a_statement():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0
            parir.label("dangling")

    with pytest.raises(parir.ParirError, match="must be followed by the statement it labels"):
        parir.jit(f)


def test_jit_rejects_what_it_cannot_read():
    with pytest.raises(TypeError):
        parir.jit(len)
