"""Why a function compiled again: the "parir_torch" logger (TORCH_LOGS, PARIR_LOGS) names the
argument that differs from the nearest cached specialization, a function past
recompiles.WARN_AFTER specializations gets one warning, and the runtime's messages (NVRTC's
time, disk cache hits and misses) reach the logger from C++. No GPU needed: without one the
calls compile and fail at the launch."""

import logging
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import parir_torch as parir
from parir_torch import recompiles

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@parir.jit
def sum_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i] += x[i, j]


def call(fn, *args, opts):
    """Calls fn; without a GPU the call compiles and then fails to launch, which is all a test
    of compilation needs."""
    try:
        fn(*args, opts=opts)
    except parir.ParirError as e:
        if torch.cuda.is_available() or "no CUDA GPU" not in str(e):
            raise


def rows(n, m=5):
    return torch.ones(n, m, device=DEVICE), torch.zeros(n, device=DEVICE)


def spec(n):
    return parir.par({'N': parir.threads(n)})


@pytest.fixture
def records(caplog):
    caplog.set_level(logging.DEBUG, logger="parir_torch")
    sum_rows.clear_cache()
    yield lambda level=logging.INFO: [r.getMessage() for r in caplog.records
                                      if r.name == "parir_torch" and r.levelno >= level]
    sum_rows.clear_cache()


def test_a_new_scalar_value_is_logged_with_the_argument_that_changed(records):
    x, y = rows(8)
    opts = spec(8)
    call(sum_rows, x, y, 8, 5, opts=opts)
    assert records() == []  # a first compilation is not a recompilation
    assert any(m.startswith("compiled sum_rows(x, y, N=8, M=5) to CUDA in ")
               for m in records(logging.DEBUG)), records(logging.DEBUG)
    x6, y6 = rows(8, 6)
    call(sum_rows, x6, y6, 8, 6, opts=opts)
    (message,) = records()
    assert message.startswith("recompiling sum_rows (specialization 2): "), message
    assert "M changed 5 → 6; scalar values are compiled into the code: pass M as a " \
           "shape-(1,) tensor" in message, message
    assert "x's shape (8, 5) → (8, 6)" in message, message


def test_the_nearest_specialization_is_the_one_compared(records):
    """Against the cached specialization that differs least: only the options here."""
    x, y = rows(8)
    call(sum_rows, x, y, 8, 5, opts=spec(8))
    call(sum_rows, x, y, 8, 5, opts=spec(16))
    (message,) = records()
    assert message.endswith("opts.parallelize changed {'N': parir.threads(8)} → "
                            "{'N': parir.threads(16)}"), message


def test_dtype_and_dict_entry_changes_are_named(records):
    @parir.jit
    def scale(p, out, N):
        parir.label('N')
        for i in range(N):
            out[i] = p['a'] * p['x'][i]

    out = torch.zeros(4, device=DEVICE)
    for a, x in [(2.0, torch.ones(4, device=DEVICE)), (3.0, torch.ones(4, device=DEVICE)),
                 (3.0, torch.ones(4, device=DEVICE, dtype=torch.float64))]:
        call(scale, {'a': a, 'x': x}, out, 4, opts=spec(4))
    first, second = records()
    assert "p['a'] changed 2.0 → 3.0" in first, first
    assert "p['x']'s dtype float32 → float64" in second, second


def test_a_function_past_the_limit_gets_one_warning(records, monkeypatch):
    monkeypatch.setattr(recompiles, "WARN_AFTER", 3)
    x, y = rows(8)
    with pytest.warns(parir.ParirWarning) as caught:
        for n in (1, 2, 3):
            call(sum_rows, x, y, 8, 5, opts=spec(8 * n))
    messages = [str(w.message) for w in caught if issubclass(w.category, parir.ParirWarning)]
    assert len(messages) == 1, messages
    assert messages[0].startswith("sum_rows() has been compiled for 3 specializations, the "
                                  "latest because opts.parallelize changed"), messages[0]
    assert 'TORCH_LOGS="parir_torch" or PARIR_LOGS=info' in messages[0]
    assert caught[0].filename == __file__  # points at the user's call
    with warnings.catch_warnings():
        warnings.simplefilter("error", parir.ParirWarning)
        call(sum_rows, x, y, 8, 5, opts=spec(32))  # warned once per function


def test_evictions_are_logged(records):
    x, y = rows(8)
    old = sum_rows._cache.limit
    sum_rows._cache.limit = 1
    try:
        call(sum_rows, x, y, 8, 5, opts=spec(8))
        call(sum_rows, x, y, 8, 5, opts=spec(16))
    finally:
        sum_rows._cache.limit = old
    assert any(m.startswith("sum_rows: dropped the specialization launched least recently")
               for m in records()), records()


def test_runtime_messages_reach_the_logger(records, tmp_path, monkeypatch):
    """NVRTC's time and the disk cache, from C++: parir.aot compiles with NVRTC at once."""
    monkeypatch.setenv("PARIR_CACHE_DIR", str(tmp_path))
    x, y = rows(8)
    for _ in range(2):
        parir.aot(sum_rows, [x, y, 8, 5], spec(8), archs=["sm_80"], ptx=False)
    messages = records(logging.DEBUG)
    assert any(m.startswith("sum_rows: NVRTC compiled it for sm_80 in ") and
               str(tmp_path) in m for m in messages), messages
    assert any(m.startswith("sum_rows: sm_80 binary from the disk cache") for m in messages), \
        messages


PROGRAM = textwrap.dedent("""
    import torch
    import parir_torch as parir

    @parir.jit
    def double(x, y, N):
        parir.label('i')
        for i in range(N):
            y[i] = 2 * x[i]

    for n in (10, 11):
        x = torch.ones(n)
        print(parir.aot(double, [x, x, n], parir.par({'i': parir.threads(n)}),
                        archs=['sm_80'], ptx=False).count('//% binary'))
        double.clear_cache()
        try:
            double(x, x.clone(), n, opts=parir.par({'i': parir.threads(32)}))
        except parir.ParirError:
            pass  # no GPU: compiled, not launched
""")


SET_LOGS = ('import logging, torch\n'
            'torch._logging.set_logs(modules={"parir_torch": logging.DEBUG})\n')


@pytest.mark.parametrize("env, prelude, debug, info", [
    ({"PARIR_LOGS": "debug"}, "", True, True),
    ({"TORCH_LOGS": "+parir_torch"}, "", True, True),
    ({"PARIR_LOGS": "info"}, "", False, True),
    ({}, SET_LOGS, True, True),
    ({}, "", False, False),
], ids=["PARIR_LOGS=debug", "TORCH_LOGS=+parir_torch", "PARIR_LOGS=info", "set_logs", "off"])
def test_environment_variables_turn_the_log_on(env, prelude, debug, info, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(prelude + PROGRAM)
    full = {k: v for k, v in os.environ.items() if k not in ("PARIR_LOGS", "TORCH_LOGS")}
    full.update(env, PARIR_CACHE_DIR=str(tmp_path / "cache"), CUDA_VISIBLE_DEVICES="",
                PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], env=full, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert ("NVRTC compiled it for sm_80 in" in err) == debug, err
    assert ("compiled double(x, y, N=11) to CUDA" in err) == debug, err
    assert "recompiling" not in err, err  # each cache was cleared before the call
    if not info:
        assert "parir_torch" not in err, err


def test_traced_recompilations_are_logged_too(records):
    """torch.compile specializes the function on the traced tensors: a new shape is a new
    graph and a new specialization, logged with the argument that changed."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def model(x, y):
        sum_rows(x, y, x.shape[0], x.shape[1], opts=spec(x.shape[0]))
        return y

    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    with FakeTensorMode():
        for n in (8, 9):
            compiled(torch.empty(n, 5, device="cuda"), torch.empty(n, device="cuda"))
    recompiled = [m for m in records() if m.startswith("recompiling sum_rows")]
    assert len(recompiled) == 1, records()
    assert "x's shape (8, 5) → (9, 5)" in recompiled[0] and "N changed 8 → 9" in \
        recompiled[0] and "opts.parallelize changed" in recompiled[0], recompiled[0]
