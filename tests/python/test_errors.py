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
    ("x[i] = x.dtype", r"attribute access is not supported"),
    ("x[i] = sorted(x)", r"'sorted' is not a function parir can call"),
    ("break", r"`break` is not supported"),
    ("a, b = N", r"a tuple can be assigned only from values written out"),
    ("a, b = parir.sqrt(N)", r"this call returns one value, which cannot be unpacked"),
    ("a, b, c = divmod(N, 2)", r"divmod\(a, b\) takes two arguments and is unpacked into two"),
    ("a, (b, c) = 1, (2, 3)", r"nested or starred tuple assignment is not supported"),
    ("a, b = 1, 2, 3", r"3 values are assigned to 2 targets"),
    ("x[i:], x[:i] = x[:i], x[i:]", r"a tuple assignment of slices .* is not supported"),
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


def test_assigning_a_tensor_argument():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x = 3

    expect(f, [x10(), 10], {"i": parir.threads(10)}, r"cannot assign to the argument 'x'; "
           r"write to its elements instead", at="x = 3")


def test_a_scalar_argument_assigned_is_a_local_starting_at_its_value():
    # As in Python: the range was computed from the argument before the loop assigned N.
    @parir.jit
    def f(x, N):
        parir.label("i")
        for i in range(N):
            N = 3
            x[i] = N

    x = x10()
    src = parir.print_compiled(f, [x, 10], parir.par({"i": parir.threads(10)}))
    assert "i < 10L" in src
    f(x, 10, seq=True)
    assert x.tolist() == [3.0] * 10


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
    with pytest.raises(parir.ParirValueError):
        parir.threads(-1)
    with pytest.raises(parir.ParirValueError):
        parir.threads(10).tpb(100)
    with pytest.raises(parir.ParirTypeError):
        parir.par([("i", parir.threads(3))])


def test_label_must_precede_a_statement():
    def f(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0
            parir.label("dangling")

    g = parir.jit(f)  # decorating only captures; compiling reports it
    with pytest.raises(parir.ParirError, match="must be followed by the statement it labels"):
        parir.print_compiled(g, [x10(), 10], parir.par({"i": parir.threads(10)}))


def test_jit_rejects_what_it_cannot_read():
    with pytest.raises(parir.ParirTypeError):
        parir.jit(len)


# ----- exception classes: ParirError, and the TypeError or ValueError Python code expects -------

@parir.jit
def fill(x, N):
    parir.label("i")
    for i in range(N):
        x[i] = 1.0


@parir.jit
def copy_into(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = x[i]


def _options(**fields):
    opts = parir.par({"i": parir.threads(10)})
    for k, v in fields.items():
        setattr(opts, k, v)
    return opts


def _not_a_jit_function(x):
    return x


USER_ERRORS = [
    # (what the user does, the Python class, the message)
    (lambda: parir.threads(-5), ValueError, r"parir.threads needs a non-negative int, got -5"),
    (lambda: parir.threads(2.5), TypeError, r"parir.threads needs a non-negative int, got 2.5"),
    (lambda: parir.threads(True), TypeError, r"non-negative int, got True"),
    (lambda: parir.threads(64).tpb(2048), ValueError, r"multiple of 32 in \[32, 1024\], got 2048"),
    (lambda: parir.threads(64).tpb(100), ValueError, r"multiple of 32 in \[32, 1024\], got 100"),
    (lambda: parir.threads(64).tpb("32"), TypeError, r"multiple of 32 in \[32, 1024\], got '32'"),
    (lambda: parir.par(3), TypeError, r"parir.par takes a dict of label -> LoopPar, got int"),
    (lambda: parir.CompileOptions(sequential=True), TypeError,
     r"CompileOptions has no field 'sequential'; its fields are parallelize, seq, check"),
    (lambda: parir.CompileOptions(parallelize=3), TypeError, r"takes a dict of label -> LoopPar"),
    (lambda: fill(x10(), 10, opts={"i": 3}), TypeError,
     r"opts must be a parir.CompileOptions, got a dict; .*opts=parir.par\(\{'N': "),
    (lambda: fill(x10(), 10, opts=3), TypeError, r"opts must be a parir.CompileOptions .*got int"),
    (lambda: fill(x10(), 10, parallel=True), TypeError,
     r"fill\(\) got unexpected keyword argument\(s\) 'parallel'; .* opts=, seq=, debug="),
    (lambda: fill(x10(), 10, 3, opts=_options()), TypeError,
     r"fill\(\) takes 2 arguments \(x, N\) but 3 were given"),
    (lambda: fill(x10(), "10", opts=_options()), TypeError,
     r"argument 'N' is a builtins.str; parir functions take tensors"),
    (lambda: fill(x10().to_sparse(), 10, opts=_options()), TypeError,
     r"argument 'x' is a tensor of layout torch.sparse_coo; .*x.to_dense\(\)"),
    (lambda: parir.print_compiled(fill, [x10().to_sparse(), 10], _options()), TypeError,
     r"argument 'x' is a tensor of layout torch.sparse_coo"),
    (lambda: fill({"a": {"b": 1}}, 10, opts=_options()), TypeError,
     r"entry 'a' of argument 'x' is a dict"),
    (lambda: fill(x10(), 2 ** 70, opts=_options()), ValueError,
     r"argument 'N' = 1180591620717411303424 does not fit in a 64-bit integer"),
    (lambda: fill(x10().to(torch.complex64), 10, opts=_options()), TypeError,
     r"argument 'x' has dtype torch.complex64, which parir does not support"),
    (lambda: fill(x10(), 10, opts=_options(parallelize=[("i", 3)])), TypeError,
     r"CompileOptions.parallelize must be a dict of label -> LoopPar, got list"),
    (lambda: fill(x10(), 10, opts=_options(parallelize={"i": 3})), TypeError,
     r"maps label strings to LoopPar objects"),
    (lambda: fill(x10(), 10, opts=_options(parallelize={"i": parir.reduce()})), ValueError,
     r"label 'i' maps to parir.LoopPar\(\).reduce\(\), which has no thread count"),
    (lambda: parir.print_compiled(fill, [x10(), 10], _options(backend="cuda")), ValueError,
     r"unknown backend 'cuda'"),
    (lambda: parir.jit(len), TypeError, r"parir.jit decorates functions, not builtin_function"),
    (lambda: parir.label(3), TypeError, r"parir.label takes a string, got int"),
    (lambda: parir.out_like(3), TypeError, r"parir.out_like takes a tensor, got int"),
    (lambda: parir.call(_not_a_jit_function, parir.out_like(x10())), TypeError,
     r"parir.call takes a @parir.jit function, got function"),
    (lambda: parir.compile_string("f", b"code"), TypeError,
     r"compile_string takes the code as a str, got bytes"),
    (lambda: parir.ElemSize.BF16.to_numpy(), TypeError, r"NumPy has no bfloat16 type"),
    (lambda: parir.ElemSize.F16.to_ctype(), TypeError, r"ctypes has no type for float16"),
]


@pytest.mark.parametrize("case", range(len(USER_ERRORS)))
def test_user_errors_are_parir_errors_of_the_class_python_expects(case):
    thunk, python_class, pattern = USER_ERRORS[case]
    kind = parir.ParirTypeError if python_class is TypeError else parir.ParirValueError
    with pytest.raises(parir.ParirError, match=pattern) as info:
        thunk()
    assert isinstance(info.value, (kind, python_class, RuntimeError)), type(info.value)
    assert type(info.value) is kind, type(info.value)


def test_the_error_classes():
    for kind, python_class in ((parir.ParirTypeError, TypeError),
                               (parir.ParirValueError, ValueError)):
        assert issubclass(kind, parir.ParirError) and issubclass(kind, python_class)
        assert issubclass(kind, RuntimeError)
    assert parir.ParirError is parir._C.ParirError
    assert issubclass(parir.ParirWarning, UserWarning)


def _missing_attribute(v):
    return v.no_such_attribute


def test_attribute_errors_of_the_function_itself_are_not_taken_for_bad_options():
    def reads_a_missing_attribute(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = _missing_attribute(x[i])

    f = parir.jit(reads_a_missing_attribute)
    with pytest.raises(AttributeError, match="no_such_attribute") as info:
        f(x10(), 10, seq=True)
    assert not isinstance(info.value, parir.ParirError)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_a_sparse_tensor_on_the_short_path_is_named(monkeypatch):
    """The short path keys CUDA tensors without looking at their layout: a sparse CSR tensor
    has no strides, and a sparse COO tensor is keyed like a dense expanded one. Both are
    reported as the conversion reports them (CPU tensors play CUDA tensors here)."""
    monkeypatch.setattr(torch.Tensor, "is_cuda", torch._C.TensorBase.is_cpu)
    opts = _options()
    with pytest.raises(parir.ParirTypeError, match="argument 'x' is a tensor of layout "
                                                    "torch.sparse_csr"):
        fill(torch.zeros(2, 5).to_sparse_csr(), 10, opts=opts)
    sparse = x10().to_sparse()
    dense = torch.zeros(1).expand(10)
    if sparse.stride() != dense.stride():
        pytest.skip("this PyTorch gives sparse COO tensors no strides like an expanded tensor's")
    # An expanded tensor may be read (not written): compiles, and caches, then fails at the
    # launch.
    with pytest.raises(parir.ParirError):
        copy_into(dense, x10(), 10, opts=opts)
    assert copy_into.cache_size() >= 1
    with pytest.raises(parir.ParirTypeError, match="argument 'x' is a tensor of layout "
                                                    "torch.sparse_coo"):
        copy_into(sparse, x10(), 10, opts=opts)


def test_metal_backend_exists_and_explains_that_parir_torch_runs_on_cuda():
    def fill(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 1.0

    opts = parir.par({"i": parir.threads(10)})
    opts.backend = parir.CompileBackend.Metal
    with pytest.raises(parir.ParirError, match=r"CompileBackend.Metal is not available: "
                                               r"parir-torch compiles to CUDA") as info:
        parir.print_compiled(fill, [x10(), 10], opts)
    assert isinstance(info.value, ValueError)


def test_decorating_only_captures_unsupported_constructs_fail_when_compiled():
    # A module with one function parir cannot compile still imports; the function fails when it
    # is compiled, with the message decoration used to give.
    @parir.jit
    def uses_a_list(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = [1.0, 2.0][0]

    @parir.jit
    def fine(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = 2.0

    assert "x[i] = 2.0f;" in parir.print_compiled(fine, [x10(), 10],
                                                 parir.par({"i": parir.threads(10)}))
    for attempt in range(2):  # the same error each time
        with pytest.raises(parir.ParirError, match=r"List expressions are not supported") as info:
            parir.print_compiled(uses_a_list, [x10(), 10], parir.par({"i": parir.threads(10)}))
        assert f"{FILE}:" in str(info.value)
    with pytest.raises(parir.ParirError, match=r"List expressions are not supported"):
        uses_a_list(x10(), 10, opts=parir.par({"i": parir.threads(10)}))


@parir.jit
def _double_it(v):
    return v * 2.0


@parir.jit
def _uses_helper(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = _double_it(x[i])


def test_seq_runs_jit_helpers_as_python_too():
    # The helper is a @parir.jit function; under seq=True it runs as the plain Python it is,
    # where compiling it alone would fail (it returns a value and has no parallel loop).
    x, y = torch.arange(6.0), torch.zeros(6)
    _uses_helper(x, y, 6, seq=True)
    torch.testing.assert_close(y, 2 * x)


def test_kernels_named_like_parir_internals_are_launched_by_their_cuda_names():
    def parir_kernel(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = x[i] * 2.0

    src = parir.print_compiled(parir_kernel, [x10(), 10], parir.par({"i": parir.threads(10)}))
    defined = re.findall(r'__global__ void __launch_bounds__\(\d+(?:, \d+)?\) (\w+)\(', src)
    launched = re.findall(r"//@ launch (\w+) ", src)
    assert defined and set(launched) == set(defined), src


@pytest.mark.gpu
def test_kernels_named_like_cuda_keywords_and_parir_internals_run():
    def double(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = x[i] * 2.0

    def parir_add(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = x[i] + 1.0

    x = torch.randn(33, device="cuda")
    want = (x * 2.0 + 1.0).cpu()
    parir.jit(double)(x, 33, opts=parir.par({"i": parir.threads(33)}))
    parir.jit(parir_add)(x, 33, opts=parir.par({"i": parir.threads(33)}))
    torch.testing.assert_close(x.cpu(), want)


@parir.jit
def _sum_into_local(x, y, N):
    # The rows change with the host loop, so no temporary can hold one partial sum per row.
    for k in range(2):
        parir.label("row")
        for r in range(k, 2):
            s = 0.0
            parir.label("i")
            for i in range(N):
                s += x[r, i]
            y[r] = s


@pytest.mark.parametrize("clusters, max_blocks, n, advice", [
    (False, 8, 4096, r"or enable use_cuda_thread_block_clusters"),
    (True, 2, 4096, r"or raise max_thread_blocks_per_cluster \(now 2\) to 4"),
    (True, 16, 20480, r"\(a thread block cluster holds at most 16 blocks\)"),
])
def test_multi_block_reduction_into_a_local_advises_what_the_options_allow(clusters, max_blocks,
                                                                          n, advice):
    opts = parir.par({"row": parir.threads(2), "i": parir.threads(n).reduce()})
    opts.use_cuda_thread_block_clusters = clusters
    opts.max_thread_blocks_per_cluster = max_blocks
    with pytest.raises(parir.ParirError, match=r"cannot combine their results into a local.*"
                                               + advice):
        parir.print_compiled(_sum_into_local, [torch.ones(2, n), torch.zeros(2), n], opts)


# ----- arguments the kernels cannot use as they are ------------------------------------------

@parir.jit
def copy_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i, j] = x[i, j]


def test_writing_an_expanded_tensor_is_an_error_naming_the_statement():
    x = torch.arange(12.0).reshape(4, 3)
    y = torch.zeros(3).unsqueeze(0).expand(4, 3)  # strides (0, 1): four rows, one in memory
    expect(copy_rows, [x, y, 4, 3], {'N': parir.threads(4)},
           r"writes 'y', whose 4 elements along dimension 0 are one element in memory \(stride "
           r"0, as expand\(\) makes\).*y\.contiguous\(\)", at="y[i, j] = x[i, j]")
    # Reading one is a broadcast, which is fine.
    src = parir.print_compiled(copy_rows, [y, torch.empty(4, 3), 4, 3],
                               parir.par({'N': parir.threads(4)}))
    assert "x[i * 0 + j]" in src or "x[j]" in src


def test_a_negated_view_is_an_error_naming_the_argument():
    x = torch.tensor([1 + 2j, 3 + 4j]).conj().imag  # values -2, -4; memory 2, 4
    assert x.is_neg()
    with pytest.raises(parir.ParirError, match=r"argument 'x' is a negated view.*"
                                               r"x\.resolve_neg\(\)"):
        parir.print_compiled(copy_rows, [x.reshape(1, 2), torch.empty(1, 2), 1, 2],
                             parir.par({'N': parir.threads(1)}))


@pytest.mark.parametrize("n", [2 ** 63 - 1, 2 ** 63, 2 ** 64])
def test_more_threads_than_a_launch_can_have_is_an_error(n):
    with pytest.raises(parir.ParirError, match=r"asks for more threads than one launch can have "
                                               r"\(2199023254528: CUDA's limit"):
        parir.threads(n)


def test_a_bad_block_size_is_named_once():
    with pytest.raises(parir.ParirError) as info:
        parir.threads(100).tpb(64.0)
    assert str(info.value).count("64.0") == 1, str(info.value)


@parir.jit
def fill_with(x, v, N):
    parir.label('N')
    for i in range(N):
        x[i] = v * 0.5


def test_a_uint64_of_two_to_the_63_or_more_converts_to_float_unsigned():
    import numpy as np

    for v, value in [(np.uint64(2 ** 64 - 1), 2 ** 64 - 1),
                     (torch.tensor(2 ** 63, dtype=torch.uint64), 2 ** 63)]:
        src = parir.print_compiled(fill_with, [torch.empty(2, dtype=torch.float64), v, 2],
                                   parir.par({'N': parir.threads(2)}))
        want = float(value) * 0.5
        assert f"x[i] = {want!r}" in src or f"x[i] = {want:.17g}" in src, (
            [l for l in src.splitlines() if "x[i] =" in l], want)


def test_a_numpy_scalar_without_a_torch_dtype_is_named():
    import numpy as np

    with pytest.raises(parir.ParirTypeError, match=r"argument 'v' has NumPy type longdouble"):
        parir.print_compiled(fill_with, [torch.empty(2, dtype=torch.float64),
                                         np.longdouble(1.0), 2],
                             parir.par({'N': parir.threads(2)}))


@parir.jit
def scaled_by_key_with_parenthesis(d, y, N):
    parir.label('N')
    for i in range(N):
        y[i] = d['w)'] * d['s']


@parir.jit
def scaled_by_key_with_comma(d, y, N):
    parir.label('N')
    for i in range(N):
        y[i] = d['a,b'] * d['s']


@pytest.mark.parametrize("fn, key", [(scaled_by_key_with_parenthesis, 'w)'),
                                     (scaled_by_key_with_comma, 'a,b')])
def test_dict_keys_the_plan_could_not_read_back_are_an_error(fn, key):
    with pytest.raises(parir.ParirError, match=r"cannot be used in a parir function; use keys "
                                               r"that are not empty and hold no quotes, brackets"):
        parir.print_compiled(fn, [{key: torch.ones(3), 's': 2}, torch.empty(3), 3],
                             parir.par({'N': parir.threads(3)}))


def test_a_spec_whose_labels_match_no_loop_says_so_in_the_error():
    @parir.jit
    def labelled_a(x, N):
        parir.label('A')
        for i in range(N):
            x[i] = 1.0

    with pytest.raises(parir.ParirError, match=r"has no parallel code.*the parallel "
                                               r"specification names 'a', but no statement of "
                                               r"labelled_a\(\) has such a label"):
        parir.print_compiled(labelled_a, [torch.empty(4), 4], parir.par({'a': parir.threads(4)}))
