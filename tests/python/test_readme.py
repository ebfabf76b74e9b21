"""The README is true to the code: `.ci/run` runs the Quick start's commands as they are written
there, and the error and log it quotes are what parir prints for the code it shows."""

import logging
import os
import re

import torch

import parir_torch as parir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def readme_section(title):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = text.index(f"\n{title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def blocks(section, lang=""):
    """The code blocks of a section, in order, as (language, text)."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", section, re.S)
            if not lang or m.group(1) == lang]


def test_ci_runs_the_quick_start_commands_as_written():
    commands = [text.strip() for _, text in blocks(readme_section("## Quick start"), "bash")]
    assert len(commands) == 4, commands  # apt-get, the two commands, the wheel
    ci = [line.strip() for line in open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8")]
    for command in commands[1:3]:
        assert command in ci, f"{command!r} is not a line of .ci/run"
    assert "apt-get install" in commands[0]
    for package in commands[0].split("install -y ")[1].split():
        assert package in open(os.path.join(ROOT, ".ci", "run")).read(), package


def test_the_error_example_is_what_parir_prints(tmp_path):
    section = readme_section("### Errors")
    (_, code), (_, error) = blocks(section)[:2]
    name = error.split(":")[0]  # "total.py"
    path = tmp_path / name
    path.write_text("import parir_torch as parir\n\n" + code)
    scope = {"__name__": "readme_example"}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    fn = next(v for v in scope.values() if isinstance(v, parir.JitFunction))
    x, y = torch.zeros(100), torch.zeros(1)
    try:
        parir.print_compiled(fn, [x, y, 100], parir.par({'N': parir.threads(100)}))
    except parir.ParirError as e:
        message = str(e).replace(str(tmp_path) + os.sep, "")
    else:
        raise AssertionError("no error")
    assert message == error.strip(), message


def test_the_recompile_example_is_what_parir_logs(caplog):
    section = readme_section("## Logs and profiling")
    example = next(text for _, text in blocks(section) if "recompiling" in text).strip()
    caplog.set_level(logging.INFO, logger="parir_torch")

    @parir.jit
    def sum_rows(x, y, N, M):
        parir.label('N')
        for i in range(N):
            for j in range(M):
                y[i] += x[i, j]

    opts = parir.par({'N': parir.threads(1000)})
    for m in (517, 518):
        try:
            sum_rows(torch.zeros(1000, m), torch.zeros(1000), 1000, m, opts=opts)
        except parir.ParirError:
            assert not torch.cuda.is_available()  # compiled, then no GPU to launch on
    logged = [f"parir_torch: {r.getMessage()}" for r in caplog.records if r.name == "parir_torch"]
    assert logged == [example], logged
