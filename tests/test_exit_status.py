"""The exit status of ``tolk-lint check``, through the real command line,
for each way a run can end (README.md, "Exit status"):

- 0: the files were analysed and nothing was found;
- 1: diagnostics were found (``--exit-zero`` makes this 0, and only this);
- 2: the tool could not do what was asked -- a usage error, a code that
  names no rule (in ``--select``/``--ignore`` or in the configuration), a
  path that is missing, a file or folder that cannot be read, a file that
  does not parse (TL001), an internal error (TL004), a budget that ran out
  (TL005).

A file gives the same status whether it is named on the command line or
found in a walked folder, also when there are more than
`tolk_lint.batch.PARALLEL_THRESHOLD` files (linted in worker processes).
Tests run as root here, so permissions do not make a file unreadable: a
FIFO named ``k.ptx`` (never read: it would block) and monkeypatched
``open``/``os.scandir`` (in process, through click's runner) stand in.
"""

from __future__ import annotations

import builtins
import json
import os

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from test_bad_input import SMALL_PTX, tolk_lint

from tolk_lint.batch import PARALLEL_THRESHOLD
from tolk_lint.cli import main

BUG = (FIXTURES / "ptx" / "uniformity" / "early_exit_barrier.ptx").read_text()  # TL101
FILES = {
    "clean": ("clean.ptx", SMALL_PTX, 0),
    "finding": ("bug.ptx", BUG, 1),
    "parse-error": ("broken.ptx", SMALL_PTX[: len(SMALL_PTX) // 2], 2),
    "no-version": ("empty.ptx", "", 2),
}


def write(folder, name: str, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def status(*args: str, cwd=None) -> int:
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return tolk_lint("check", "--no-cache", *args, timeout=300).returncode
    finally:
        os.chdir(old)


# -- 0, 1, 2 per file, and --exit-zero ------------------------------------------------------------


@pytest.mark.parametrize("case", list(FILES))
def test_file_status_and_exit_zero(tmp_path, case):
    name, text, expected = FILES[case]
    f = write(tmp_path, name, text)
    assert status(str(f)) == expected
    assert status("--exit-zero", str(f)) == (0 if expected == 1 else expected)


@pytest.mark.parametrize("case", list(FILES))
def test_named_and_walked_give_one_status(tmp_path, case):
    """The file alone, its folder walked, and a folder of more files than go
    to worker processes (the others clean) give the same status."""
    name, text, expected = FILES[case]
    alone = write(tmp_path / "alone", name, text)
    many = tmp_path / "many"
    write(many, name, text)
    for i in range(PARALLEL_THRESHOLD + 2):
        write(many, f"clean{i}.ptx", SMALL_PTX)
    assert status(str(alone)) == expected
    assert status("-j", "2", str(many)) == expected
    assert status("-j", "2", str(many / name), str(many)) == expected  # named and walked: linted once


def test_budget_exceeded_is_2(tmp_path):
    """(A time budget: the memory budget counts what the lint adds, which a
    file this small may never take 1 MiB of.)"""
    f = write(tmp_path, "bug.ptx", BUG)
    p = tolk_lint("check", "--no-cache", "--time-budget", "0.001", "--output-format", "json", str(f), timeout=300)
    assert p.returncode == 2 and {d["code"] for d in json.loads(p.stdout)} == {"TL005"}
    assert status("--exit-zero", "--time-budget", "0.001", str(f)) == 2


# -- usage errors and codes that name no rule --------------------------------------------------------


@pytest.mark.parametrize("flags", [
    ["--frobnicate"], ["--block", "0,1,1"], ["--output-format", "yaml"], ["--time-budget", "0"],
    ["--select", "TL9"], ["--ignore", "TL9"], ["--extend-select", "TL999"], ["--select", "XYZ"],
], ids=lambda f: " ".join(f))  # fmt: skip
def test_usage_errors_are_2(tmp_path, flags):
    f = write(tmp_path, "clean.ptx", SMALL_PTX)
    p = tolk_lint("check", "--no-cache", *flags, str(f), timeout=300)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.strip(), "a usage error says what is wrong"
    if flags[0] in ("--select", "--frobnicate"):
        assert tolk_lint("check", "--no-cache", "--exit-zero", *flags, str(f), timeout=300).returncode == 2


@pytest.mark.parametrize("setting", ['select = ["TL9"]', 'ignore = ["TL999"]', 'extend-select = ["TLX"]'])
def test_unknown_code_in_the_configuration_is_2(tmp_path, setting):
    write(tmp_path, "pyproject.toml", f"[tool.tolk-lint]\n{setting}\n")
    write(tmp_path, "clean.ptx", SMALL_PTX)
    p = tolk_lint("check", "--no-cache", str(tmp_path / "clean.ptx"), timeout=300)
    assert p.returncode == 2 and "pyproject.toml" in p.stderr, (p.stdout, p.stderr)
    assert status("--exit-zero", str(tmp_path / "clean.ptx")) == 2


def test_missing_path_is_2(tmp_path):
    write(tmp_path, "clean.ptx", SMALL_PTX)
    for args in ([str(tmp_path / "nope.ptx")], [str(tmp_path / "clean.ptx"), str(tmp_path / "nope")]):
        p = tolk_lint("check", "--no-cache", "--output-format", "json", *args, timeout=300)
        assert p.returncode == 2 and "nope" in p.stdout, (p.stdout, p.stderr)
        assert status("--exit-zero", *args) == 2


# -- files and folders that cannot be read -----------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_named_like_a_kernel_is_2(tmp_path):
    """Never opened (a read would block forever): TL001, named or walked."""
    write(tmp_path, "clean.ptx", SMALL_PTX)
    os.mkfifo(tmp_path / "k.ptx")
    for target in (tmp_path / "k.ptx", tmp_path):
        p = tolk_lint("check", "--no-cache", "--output-format", "json", str(target), timeout=120)
        diags = json.loads(p.stdout)
        assert p.returncode == 2 and [d["code"] for d in diags] == ["TL001"], diags
        assert "FIFO" in diags[0]["message"]


def invoke(args: list[str]):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def test_unreadable_file_is_2(tmp_path, monkeypatch):
    f = write(tmp_path, "k.ptx", SMALL_PTX)
    real_open = builtins.open

    def guarded_open(file, *a, **k):
        if os.fspath(file) == str(f):
            raise PermissionError(13, "Permission denied", str(f))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    for args in ([str(f)], [str(tmp_path)], ["--exit-zero", str(f)]):
        r = invoke(["--output-format", "json", *args])
        assert r.exit_code == 2, r.output
        [d] = json.loads(r.output)
        assert d["code"] == "TL001" and "Permission denied" in d["message"]


def test_unreadable_folder_is_2(tmp_path, monkeypatch):
    """A subfolder the walk cannot list is reported (TL001 naming it), the
    rest is linted, and the run exits 2."""
    write(tmp_path / "ok", "bug.ptx", BUG)
    write(tmp_path / "locked", "hidden.ptx", SMALL_PTX)
    real_scandir = os.scandir

    def guarded_scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", guarded_scandir)
    for extra in ([], ["--exit-zero"]):
        r = invoke(["--output-format", "json", *extra, str(tmp_path)])
        assert r.exit_code == 2, r.output
        diags = json.loads(r.output)
        assert {d["code"] for d in diags} == {"TL001", "TL101"}, diags
        assert any("locked" in d["message"] and "Permission denied" in d["message"] for d in diags), diags


# -- internal errors ----------------------------------------------------------------------------------


def test_internal_error_is_2(tmp_path, monkeypatch):
    """A rule that raises is TL004 (the other rules go on) and exit 2,
    named or walked, in this process or in worker processes."""
    from tolk_lint.rules.tl101_divergent_barrier import DivergentBarrier

    def boom(self, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(DivergentBarrier, "check", boom)
    f = write(tmp_path, "clean.ptx", SMALL_PTX)
    for i in range(PARALLEL_THRESHOLD + 2):
        write(tmp_path / "many", f"clean{i}.ptx", SMALL_PTX)
    for args in ([str(f)], [str(tmp_path)], ["--exit-zero", str(f)], ["-j", "2", str(tmp_path / "many")]):
        r = invoke(["--output-format", "json", *args])
        assert r.exit_code == 2, (args, r.output)
        diags = json.loads(r.output)
        assert diags and all(d["code"] == "TL004" and "RuntimeError: boom" in d["message"] for d in diags), diags
