"""``--output-format github``: workflow commands, escaping, order and the per-step cap."""

from __future__ import annotations

import os

from click.testing import CliRunner

from tolk_lint.cli import main
from tolk_lint.diagnostics import Diagnostic, Edit, Fix, Related, Severity
from tolk_lint.engine import LintResult
from tolk_lint.ir.nodes import Span
from tolk_lint.outputs.github import annotation, escape_data, escape_property, render


def d(code="TL101", sev=Severity.ERROR, line=3, msg="barrier reached by some threads", path="k.py", end_line=None,
      name="divergent-barrier") -> Diagnostic:  # fmt: skip
    return Diagnostic(code, sev, msg, Span(path, line, 9, end_line or line, 27), name=name)


def test_escaping():
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("dir:a,b%\n") == "dir%3Aa%2Cb%25%0A"
    # % first, so an escape is never escaped twice
    assert escape_data("%0A") == "%250A"


def test_one_line_annotation(tmp_path):
    a = annotation(d(path=str(tmp_path / "src" / "k.py")), root=str(tmp_path))
    assert a == ("::error file=src/k.py,line=3,col=9,endLine=3,endColumn=27,"
                 "title=TL101 divergent-barrier::barrier reached by some threads")  # fmt: skip


def test_multi_line_range_drops_columns_and_notes_are_escaped():
    x = d(end_line=5, msg="50% of threads: skip it")
    x.related = [Related("branch on `tid`", Span("k.py", 2, 1))]
    x.fix = Fix("Hoist it", (Edit("k.py", 3, 1, 3, 2, ""),))
    a = annotation(x, root=os.getcwd())
    head, data = a.split("::", 2)[1:]
    assert head == "error file=k.py,line=3,endLine=5,title=TL101 divergent-barrier"
    assert data == "50%25 of threads: skip it%0A  = note: k.py:2: branch on `tid`%0A  = help: Hoist it"
    assert "\n" not in a


def test_property_values_are_escaped():
    a = annotation(d(path="we,ird:dir/k.py"), root=os.getcwd())
    assert "file=we%2Cird%3Adir/k.py," in a


def test_levels_and_order():
    results = [
        LintResult("a.py", None, [d("TL203", Severity.INFO, 1, name="bank-conflict", path="a.py"),
                                  d("TL002", Severity.WARNING, 2, name="unsupported-construct", path="a.py")]),
        LintResult("b.py", None, [d("TL101", Severity.ERROR, 7, path="b.py")]),
    ]  # fmt: skip
    lines = render(results, root=os.getcwd()).splitlines()
    assert [ln.split(" ", 1)[0] for ln in lines] == ["::error", "::warning", "::notice"]
    assert "file=b.py" in lines[0] and "title=TL002" in lines[1] and "title=TL203" in lines[2]


def test_cap_per_step_with_a_final_notice():
    errors = [d(line=i) for i in range(1, 16)]  # 15 errors
    lines = render([LintResult("k.py", None, errors)], root=os.getcwd()).splitlines()
    annotated = [ln for ln in lines if ln.startswith("::error ")]
    assert len(annotated) == 10
    plain = [ln for ln in lines if not ln.startswith("::")]
    assert plain == [f"k.py:{i}:9: TL101 barrier reached by some threads" for i in range(11, 16)]
    assert lines[-1].startswith("::notice::5 more diagnostics not annotated")


def test_notice_overflow_leaves_room_for_the_summary():
    infos = [d("TL203", Severity.INFO, i, name="bank-conflict") for i in range(1, 13)]
    lines = render([LintResult("k.py", None, infos)], root=os.getcwd()).splitlines()
    notices = [ln for ln in lines if ln.startswith("::notice")]
    assert len(notices) == 10  # 9 annotations + the summary: GitHub shows all ten
    assert notices[-1].startswith("::notice::3 more diagnostics")


def test_nothing_found_prints_nothing():
    assert render([LintResult("k.py", None, [])]) == ""


def test_cli_github_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text("from numba import cuda\n\ndef k(a:\n")
    res = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "github", "k.py"])
    assert res.exit_code == 2  # a file that does not parse was not analysed
    [line] = res.output.splitlines()
    assert line.startswith("::error file=k.py,line=3,")
    assert ",title=TL001 parse-error::" in line
