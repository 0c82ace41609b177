"""`tolk-lint check`: exit status, formats, statistics, colour, walking, parallel runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tolk_lint.cli import COMMANDS, main

BAD = "from numba import cuda\n\ndef k(a:\n"  # does not parse: not analysed, exit 2
# a finding (TL101 on line 7): exit 1
DIVERGENT = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()\n"
GOOD = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1.0\n"
STALE = GOOD.replace("= 1.0\n", "= 1.0  # tolk: noqa: TL101\n")  # TL003, with a safe fix

JSON_KEYS = {"code", "severity", "message", "path", "line", "column", "end_line", "end_column", "kernel", "origin",
             "related", "witness", "data", "fix"}  # fmt: skip


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def write(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_exit_status(project):
    """0 clean, 1 findings, 2 when the tool could not do what was asked: a
    file that does not parse was not analysed, and --exit-zero leaves that 2."""
    write("good.py", GOOD)
    write("bad.py", BAD)
    write("stale.py", STALE)
    r = run("check", "--no-cache", "good.py")
    assert r.exit_code == 0 and r.output == "All checks passed!\n"
    r = run("check", "--no-cache", "stale.py")
    assert r.exit_code == 1 and "TL003" in r.output
    assert run("check", "--no-cache", "--exit-zero", "stale.py").exit_code == 0
    r = run("check", "--no-cache", "bad.py")
    assert r.exit_code == 2
    assert r.output.startswith("bad.py:3:")
    assert "TL001" in r.output and r.output.endswith("Found 1 diagnostic.\n")
    assert run("check", "--no-cache", "--exit-zero", "bad.py").exit_code == 2
    assert run("check", "--select", "ZZ999", "good.py").exit_code == 2
    assert run("check", "--select", "TL9", "good.py").exit_code == 2  # a well-formed code that names no rule
    assert run("check", "--frobnicate").exit_code == 2
    assert run("check", "--block", "64,32,1", "good.py").exit_code == 2  # 2048 threads


def test_select_and_ignore(project):
    write("stale.py", STALE)
    assert run("check", "--no-cache", "--ignore", "TL003", "stale.py").exit_code == 0
    assert run("check", "--no-cache", "--select", "TL1", "stale.py").exit_code == 0
    assert run("check", "--no-cache", "--select", "TL1", "--extend-select", "TL0", "stale.py").exit_code == 1


def test_what_was_not_analysed_is_never_selected_away(project):
    """--ignore and --select never hide a file that does not parse."""
    write("bad.py", BAD)
    for flags in (["--ignore", "TL001"], ["--select", "TL1"], ["--ignore", "ALL"]):
        r = run("check", "--no-cache", *flags, "bad.py")
        assert r.exit_code == 2 and "TL001" in r.output, (flags, r.output)


def test_json_contract(project):
    write("bad.py", DIVERGENT)
    r = run("check", "--no-cache", "--output-format", "json", "bad.py")
    [item] = json.loads(r.output)
    assert JSON_KEYS <= set(item)
    assert (item["code"], item["severity"], item["path"], item["line"]) == ("TL101", "error", "bad.py", 7)
    assert item["kernel"] == "k" and item["origin"] is None and item["fix"] is None and item["witness"]


def test_show_suppressed(project):
    write("k.py", DIVERGENT.replace("cuda.syncthreads()", "cuda.syncthreads()  # tolk: noqa: TL101"))
    assert run("check", "--no-cache", "k.py").exit_code == 0
    r = run("check", "--no-cache", "--show-suppressed", "k.py")
    assert "TL101" in r.output and "(suppressed)" in r.output
    assert r.exit_code == 0  # suppressed diagnostics never fail the run
    items = json.loads(
        run("check", "--no-cache", "--show-suppressed", "--output-format", "json", "k.py").output
    )
    assert [(i["code"], i["suppressed"]) for i in items] == [("TL101", True)]


def test_statistics_and_quiet(project):
    write("a.py", DIVERGENT)
    write("b.py", DIVERGENT)
    write("c.py", STALE)
    r = run("check", "--no-cache", "--statistics", ".")
    assert r.exit_code == 1
    assert r.output == "2\tTL101\t[ ] divergent-barrier\n1\tTL003\t[*] unused-noqa\n"
    q = run("check", "--no-cache", "--quiet", ".")
    assert q.exit_code == 1 and "Found" not in q.output and "a.py:7:" in q.output
    full = run("check", "--no-cache", ".")
    assert "Found 3 diagnostics.\n[*] 1 fixable with `tolk-lint fix`." in full.output


def test_colour_only_when_wanted(project):
    write("bad.py", DIVERGENT)
    assert "\x1b[" not in run("check", "--no-cache", "bad.py").output  # not a terminal
    assert "\x1b[" in run("check", "--no-cache", "bad.py", env={"FORCE_COLOR": "1"}).output
    assert (
        "\x1b[" not in run("check", "--no-cache", "bad.py", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).output
    )
    assert "\x1b[" in run("check", "--no-cache", "--color", "always", "bad.py").output
    assert "\x1b[" not in run("check", "--no-cache", "--color", "never", "bad.py",
                              env={"FORCE_COLOR": "1"}).output  # fmt: skip


def test_output_file(project):
    write("bad.py", DIVERGENT)
    r = run(
        "check",
        "--no-cache",
        "--output-format",
        "json",
        "-o",
        "report.json",
        "bad.py",
        env={"FORCE_COLOR": "1"},
    )
    assert r.exit_code == 1 and r.output == ""
    assert json.loads(open("report.json").read())[0]["code"] == "TL101"


def test_walk_respects_gitignore_exclude_and_hidden_folders(project):
    os.makedirs(".git")  # a work tree
    write(".gitignore", "ignored/\n*.gen.py\n")
    write("pyproject.toml", '[tool.tolk-lint]\nexclude = ["vendor/"]\n')
    for name in (
        "src/a.py",
        "src/b.ptx",
        "src/c.txt",
        "ignored/x.py",
        "src/y.gen.py",
        "vendor/v.py",
        ".hidden/h.py",
        "build/b.py",
        "src/sub/.gitignore",
        "src/sub/keep.py",
        "src/sub/drop.py",
    ):
        write(name, GOOD if name.endswith(".py") else "")  # fmt: skip
    write("src/sub/.gitignore", "drop.py\n")
    r = run("check", "--show-files", ".")
    assert r.output.split() == ["src/a.py", "src/b.ptx", "src/sub/keep.py"]
    # a file named explicitly is linted, unless --force-exclude (what pre-commit passes)
    assert run("check", "--show-files", "vendor/v.py").output.split() == ["vendor/v.py"]
    assert run("check", "--show-files", "--force-exclude", "vendor/v.py", "src/y.gen.py", "src/a.py").output.split() \
        == ["src/a.py"]  # fmt: skip


def test_per_file_ignores_from_configuration(project):
    write("pyproject.toml", '[tool.tolk-lint.per-file-ignores]\n"legacy/*.py" = ["TL101"]\n')
    write("legacy/bad.py", DIVERGENT)
    write("new/bad.py", DIVERGENT)
    r = run("check", "--no-cache", "--output-format", "json", ".")
    assert [i["path"] for i in json.loads(r.output)] == ["new/bad.py"]


def test_parallel_run_is_deterministic(project):
    for i in range(12):
        write(f"k{i:02d}.py", DIVERGENT if i % 3 == 0 else (STALE if i % 3 == 1 else GOOD))
    serial = run("check", "--no-cache", "-j", "1", "--output-format", "json", ".")
    parallel = run("check", "--no-cache", "-j", "4", "--output-format", "json", ".")
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.output == parallel.output
    paths = [i["path"] for i in json.loads(parallel.output)]
    assert paths == sorted(paths) and len(paths) == 8
    # and through the cache, in workers
    cold = run("check", "-j", "4", "--output-format", "json", ".")
    warm = run("check", "-j", "4", "--output-format", "json", ".")
    assert cold.output == warm.output == serial.output


def test_missing_file_is_a_diagnostic(project):
    r = run("check", "--no-cache", "nope.py")
    assert r.exit_code == 2 and "nope.py" in r.output and "TL001" in r.output


def test_commands_and_version():
    """Every command lives in `tolk_lint.commands`; the CLI lists what is installed."""
    listed = main.list_commands(None)
    assert {"check", "fix", "stage", "rule", "rules", "lsp"} <= set(listed) <= set(COMMANDS)
    for name in listed:
        assert main.get_command(None, name).name == name
    out = subprocess.run([sys.executable, "-m", "tolk_lint", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("tolk-lint, version ")


def test_optional_commands_are_imported_when_run():
    """`--version` does not import `stage` and its analysis (the largest part
    of the CLI's start-up); `--help` still lists it."""
    code = (
        "import sys; from click.testing import CliRunner; from tolk_lint.cli import main\n"
        "r = CliRunner().invoke(main, ['--version']); assert r.exit_code == 0, r.output\n"
        "assert not any(m.startswith(('tolk_lint.commands.', 'tolk_lint.analysis.stage', 'tolk_lint.rules', 'z3')) "
        "for m in sys.modules), sorted(m for m in sys.modules if m.startswith('tolk_lint'))\n"
        "r = CliRunner().invoke(main, ['--help']); assert 'stage' in r.output and 'fix' in r.output, r.output\n"
        "r = CliRunner().invoke(main, ['nosuch']); assert r.exit_code == 2 and 'No such command' in r.output\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_rule_command_prints_tl003():
    r = run("rule", "TL003")
    assert r.exit_code == 0 and r.output.startswith("TL003 unused-noqa")
    assert run("rule", "TL999").exit_code == 2


def test_lsp_without_pygls_says_how_to_install():
    code = "import sys; sys.modules['pygls'] = None; from tolk_lint.cli import main; main(['lsp'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2
    assert "pip install 'tolk-lint[lsp]'" in out.stderr


def test_action_runs_check_with_github_output():
    yaml = pytest.importorskip("yaml")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(repo, "action.yml"), encoding="utf-8") as f:
        action = yaml.safe_load(f)
    assert action["runs"]["using"] == "composite"
    assert "args" in action["inputs"] and "sarif-file" in action["inputs"]
    steps = action["runs"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install tolk-lint")
    assert '"$GITHUB_ACTION_PATH"' in install["run"]
    check = steps[-1]
    assert check["run"] == "tolk-lint check --output-format github $TOLK_ARGS"
    assert check["env"]["TOLK_ARGS"] == "${{ inputs.args }}"
    assert all("shell" in s for s in steps if "run" in s)  # composite steps must name their shell
