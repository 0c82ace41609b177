"""SARIF 2.1.0: valid against the official schema for a sample of every
folder of fixtures and of the acceptance kernels, and carrying what GitHub
code scanning reads."""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from pathlib import Path

import jsonschema
import pytest
from conftest import ACCEPTANCE as CONFTEST_ACCEPTANCE

from tolk_lint.catalog import all_rules
from tolk_lint.config import DEFAULT_SETTINGS, resolve_settings
from tolk_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Related, Severity
from tolk_lint.engine import LintResult
from tolk_lint.ir.nodes import Origin, Span
from tolk_lint.outputs.sarif import render, sarif_log
from tolk_lint.testing import FixtureError, language_of, parse_expectations

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The published OASIS schema, kept with the tests so that they always run.
SCHEMA_PATH = os.path.join(REPO, "tests", "data", "sarif-schema-2.1.0.json")
ACCEPTANCE = str(CONFTEST_ACCEPTANCE)


# The real-code corpus takes minutes to lint (bench/real_corpus.py measures it);
# its SARIF is no different in kind from the fixtures'.
REAL_CORPUS = (os.path.join(REPO, "fixtures", "corpus", "cuda"), os.path.join(REPO, "fixtures", "corpus", "numba_real"))


PER_FOLDER = 2  # fixtures of each folder whose SARIF is validated


def _files() -> list[str]:
    """A sample of the kernels under fixtures/ (.py, .ptx, and .cu, which is
    compiled to PTX when nvcc is there): the first few of every folder, so
    every rule family, language and message shape is there; and the first
    acceptance kernels of each language (.ptx, .py). Every fixture is linted
    by tests/test_fixtures.py already: its SARIF is made by the same renderer
    from the same kinds of diagnostics, and linting all of them twice would
    double the suite's time."""
    every = sorted(p for p in glob.glob(os.path.join(REPO, "fixtures", "**", "*"), recursive=True)
                   if p.endswith((".py", ".ptx", ".cu")) and not p.startswith(REAL_CORPUS))  # fmt: skip
    per_folder: dict[str, list[str]] = {}
    for p in every:
        per_folder.setdefault(os.path.dirname(p), []).append(p)
    out = [p for folder in sorted(per_folder) for p in per_folder[folder][:PER_FOLDER]]
    for pattern in ("cuda/*.ptx", "numba/*.py"):
        out += sorted(glob.glob(os.path.join(ACCEPTANCE, pattern)))[:2 * PER_FOLDER]
    return out


FILES = _files()
# fixtures/corpus holds real-world kernels kept to exercise the front ends; they
# carry no expectations and some take minutes under every rule, so their
# SARIF is made from the front ends' own diagnostics (TL0xx) only.
CORPUS_SETTINGS = resolve_settings(select=("TL0",))


def _settings_of(path: str):
    """The settings a fixture is linted with: its own ``flags:`` line (the
    launch shape it is written for), as tests/test_fixtures.py runs it."""
    if os.sep + "corpus" + os.sep in path:
        return CORPUS_SETTINGS
    try:
        exp = parse_expectations(Path(path).read_text(), language_of(path))
    except (FixtureError, OSError, UnicodeDecodeError, ValueError):
        return DEFAULT_SETTINGS
    return exp.settings() if exp.flags else DEFAULT_SETTINGS


@pytest.fixture(scope="module")
def linted():
    """A file's result, linted when a test asks for it (each pytest-xdist
    worker lints only the files of its own tests: linting every selected
    file up front did so once per worker); CUDA C is compiled to PTX first
    when nvcc is there (else linted as is: TL001)."""
    from tolk_lint.engine import lint_file

    out_dir = tempfile.mkdtemp(prefix="tolk-sarif-")

    def lint(path: str) -> LintResult:
        target = path
        if path.endswith(".cu") and shutil.which("nvcc"):
            from tolk_lint.testing import compile_cuda

            target = str(compile_cuda(path, "sm_80", tempfile.mkdtemp(dir=out_dir)))
        return lint_file(target, _settings_of(path))

    return lint


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def assert_valid(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


@pytest.mark.slow  # every rule on every fixture: as slow as the analyses (they run in parallel)
@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, os.path.dirname(REPO)))
def test_sarif_of_every_fixture_is_schema_valid(validator, linted, path):
    result = linted(path)
    text = render([result], show_suppressed=True, root=os.path.dirname(REPO))
    log = json.loads(text)
    assert_valid(validator, log)
    run = log["runs"][0]
    assert len(run["results"]) == len(result.diagnostics) + len(result.suppressed)
    for res in run["results"]:
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]


def test_there_are_files_to_validate():
    assert any(p.endswith(".ptx") for p in FILES) and any(p.endswith(".py") for p in FILES)


def rich_diagnostic(path: str, cu: str) -> Diagnostic:
    return Diagnostic(
        code="TL101",
        severity=Severity.ERROR,
        message="barrier `bar.sync 0` is reached only by some threads",
        span=Span(path, 12, 5, 12, 16),
        kernel="column_sums",
        origin=Origin(os.path.basename(cu), 18, 9, inlined_at=Origin(os.path.basename(cu), 30, 3)),
        related=[
            Related("branch on `%p1`", Span(path, 10, 3, 10, 20)),
            Related("`threadIdx.x` differs between threads", origin=Origin(os.path.basename(cu), 17, 5)),
            Related("a step with no location"),
        ],
        witness={"threads": [[15, 0, 0], [960, 0, 0]], "description": "threads 15 and 960"},
        data={"level": "workgroup"},
        fix=Fix(
            "Hoist the barrier",
            (Edit(path, 12, 5, 12, 16, ""), Edit(path, 14, 1, 14, 1, "bar.sync 0;\n")),
            Applicability.UNSAFE,
        ),
        name="divergent-barrier",
    )


def test_a_rich_result(validator, tmp_path):
    ptx = tmp_path / "kernels" / "k.ptx"
    ptx.parent.mkdir()
    ptx.write_text("\n" * 20)
    cu = tmp_path / "kernels" / "k.cu"
    cu.write_text("\n" * 40)
    d = rich_diagnostic(str(ptx), str(cu))
    log = sarif_log([LintResult(str(ptx), None, [d])], root=str(tmp_path))
    assert_valid(validator, log)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    [res] = run["results"]
    assert res["ruleId"] == "TL101" and res["level"] == "error"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "TL101"
    loc = res["locations"][0]
    # PTX with line info lands on the user's CUDA C line: the origin's own frame (a rule that
    # reports at a call, as the barrier rules do, passes the call's frame as the origin)
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "kernels/k.cu", "uriBaseId": "%SRCROOT%"}
    assert loc["physicalLocation"]["region"] == {"startLine": 18, "startColumn": 9}
    assert loc["logicalLocations"] == [{"name": "column_sums", "kind": "function"}]
    rel = res["relatedLocations"]
    assert [r["id"] for r in rel] == [1, 2, 3, 4, 5]
    # the PTX instruction linted first, then the .cu line, then the notes
    assert rel[0]["physicalLocation"]["artifactLocation"]["uri"] == "kernels/k.ptx"
    assert rel[0]["physicalLocation"]["region"] == {"startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 16}
    assert rel[1]["physicalLocation"]["artifactLocation"]["uri"] == "kernels/k.cu"
    assert rel[1]["physicalLocation"]["region"]["startLine"] == 18
    assert rel[2]["message"]["text"] == "branch on `%p1`"
    assert rel[2]["physicalLocation"]["region"]["startLine"] == 10
    assert rel[3]["physicalLocation"]["artifactLocation"]["uri"] == "kernels/k.cu"
    assert "physicalLocation" not in rel[4]
    [fix] = res["fixes"]
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "kernels/k.ptx"
    assert change["replacements"][1]["deletedRegion"] == {
        "startLine": 14,
        "startColumn": 1,
        "endLine": 14,
        "endColumn": 1,
    }
    assert change["replacements"][1]["insertedContent"]["text"] == "bar.sync 0;\n"
    assert "threads 15 and 960" in res["message"]["text"]


def test_a_path_outside_the_root_is_an_absolute_uri(validator, tmp_path):
    d = Diagnostic(
        "TL001", Severity.ERROR, "bad", Span("/elsewhere/my kernels/k.py", 1, 1, 1, 2), name="parse-error"
    )
    log = sarif_log([LintResult(d.span.path, None, [d])], root=str(tmp_path))
    assert_valid(validator, log)
    art = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "file:///elsewhere/my%20kernels/k.py"}


def test_rules_carry_what_github_requires(validator):
    log = sarif_log([])
    assert_valid(validator, log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for desc, rule in zip(rules, all_rules()):
        assert desc["name"] == rule.name
        assert 0 < len(desc["shortDescription"]["text"]) <= 1024
        assert 0 < len(desc["fullDescription"]["text"]) <= 1024
        assert desc["help"]["text"] == rule.doc()
        assert desc["help"]["markdown"].startswith(f"# {rule.name} ({rule.code})")
        assert desc["helpUri"].endswith(f"/rules/{rule.code}")
        assert desc["defaultConfiguration"]["level"] == levels[rule.severity.value]
    tl003 = next(d for d in rules if d["id"] == "TL003")
    assert "Checks every line-level" in tl003["fullDescription"]["text"]


def test_suppressed_results_only_when_asked(validator):
    kept = Diagnostic("TL101", Severity.ERROR, "kept", Span("k.py", 1, 1, 1, 2), name="divergent-barrier")
    gone = Diagnostic("TL203", Severity.INFO, "suppressed", Span("k.py", 2, 1, 2, 2), name="bank-conflict")
    results = [LintResult("k.py", None, [kept], [gone])]
    plain = sarif_log(results, root=os.getcwd())["runs"][0]["results"]
    assert [r["message"]["text"] for r in plain] == ["kept"]
    log = sarif_log(results, show_suppressed=True, root=os.getcwd())
    assert_valid(validator, log)
    both = log["runs"][0]["results"]
    assert [r["message"]["text"] for r in both] == ["kept", "suppressed"]
    assert "suppressions" not in both[0]
    assert both[1]["suppressions"] == [{"kind": "inSource", "justification": "tolk: noqa"}]
    assert both[1]["level"] == "note"


def test_cli_sarif(validator, tmp_path):
    from click.testing import CliRunner

    from tolk_lint.cli import main

    k = tmp_path / "k.py"
    k.write_text("from numba import cuda\n\ndef k(a:\n")
    res = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "sarif", str(k)])
    assert res.exit_code == 2  # a file that does not parse was not analysed
    log = json.loads(res.output)
    assert_valid(validator, log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["TL001"]
