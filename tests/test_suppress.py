"""Suppressions: line noqa, origin noqa, file-level noqa, per-file ignores, TL003."""

from __future__ import annotations

import os

import pytest

from tolk_lint.catalog import rule_by_code
from tolk_lint.config import DEFAULT_SETTINGS, resolve_settings
from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.engine import lint_text
from tolk_lint.ir.nodes import Module, Origin, Span
from tolk_lint.suppress import (
    apply_suppressions,
    file_noqa,
    noqa_codes,
    noqa_insertion,
    parse_noqa,
    per_file_ignored,
)


def diag(code: str, line: int, path: str = "k.py", col: int = 1, origin: Origin | None = None) -> Diagnostic:
    return Diagnostic(
        code, Severity.ERROR, f"{code} here", Span(path, line, col, line, col + 1), origin=origin
    )


def module(source: str, path: str = "k.py") -> Module:
    return Module(path, "python" if path.endswith(".py") else "ptx", source)


def apply_edits(text: str, edits) -> str:
    """Apply non-overlapping 1-based, end-exclusive edits (last first)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1 if line - 1 < len(starts) else len(text)

    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        a, b = offset(e.line, e.column), offset(e.end_line, e.end_column)
        text = text[:a] + e.content + text[b:]
    return text


# ---------------------------------------------------------------- grammar


@pytest.mark.parametrize(
    "line, codes",
    [
        ("x = 1  # tolk: noqa", frozenset()),
        ("x = 1  # tolk: noqa: TL101", {"TL101"}),
        ("x = 1  # tolk: noqa: TL101, TL203", {"TL101", "TL203"}),
        ("x = 1  # tolk: noqa: TL101 TL203", {"TL101", "TL203"}),
        ("x = 1  #tolk:noqa:tl101,tl203", {"TL101", "TL203"}),
        ("x = 1  # TOLK: NOQA: TL101", {"TL101"}),
        ("bar.sync 0; // tolk: noqa: TL101", {"TL101"}),
        ("x = 1  # tolk: noqa: TL101  # expect: TL003", {"TL101"}),
        ("x = 1  # noqa: TL101", None),  # a flake8/ruff noqa is not ours
        ("# tolk: noqa-file", None),  # file-level, not a line noqa
        ("x = 1", None),
    ],
)
def test_noqa_grammar(line, codes):
    assert noqa_codes(line) == (None if codes is None else frozenset(codes))


def test_noqa_positions():
    n = parse_noqa("x = 1  # tolk: noqa: TL101, TL203", 7)
    assert n is not None and n.line == 7 and n.marker == "#"
    assert (n.start, n.end) == (7, 33)
    assert n.codes == ("TL101", "TL203")
    assert "x = 1  # tolk: noqa: TL101, TL203"[n.codes_start : n.codes_end] == "TL101, TL203"


def test_file_noqa():
    assert file_noqa(["x = 1", "# tolk: noqa-file"]) == frozenset()
    assert file_noqa(["// tolk: noqa-file: TL203, TL3"]) == {"TL203", "TL3"}
    assert file_noqa(["x = 1  # tolk: noqa-file"]) is None  # must be on its own line
    assert file_noqa(["x = 1  # tolk: noqa"]) is None


# ---------------------------------------------------------------- applying


def test_line_noqa_suppresses_named_codes_only():
    m = module("a\nb  # tolk: noqa: TL101\nc  # tolk: noqa\nd  # tolk: noqa: TL2\n")
    ds = [
        diag("TL101", 2),
        diag("TL102", 2),
        diag("TL103", 3),
        diag("TL203", 4),
        diag("TL101", 4),
        diag("TL101", 1),
    ]
    kept, sup = apply_suppressions(ds, m, resolve_settings(ignore=("TL003",)))
    assert sorted((d.code, d.span.line) for d in sup) == [("TL101", 2), ("TL103", 3), ("TL203", 4)]
    assert sorted((d.code, d.span.line) for d in kept) == [("TL101", 1), ("TL101", 4), ("TL102", 2)]


def test_file_level_noqa():
    m = module("// tolk: noqa-file: TL2\nx\ny\n", "k.ptx")
    kept, sup = apply_suppressions(
        [diag("TL201", 2, "k.ptx"), diag("TL101", 3, "k.ptx")], m, DEFAULT_SETTINGS
    )
    assert [d.code for d in sup] == ["TL201"] and [d.code for d in kept] == ["TL101"]
    m = module("# tolk: noqa-file\nx\n")
    kept, sup = apply_suppressions([diag("TL201", 2), diag("TL101", 2)], m, DEFAULT_SETTINGS)
    assert kept == [] and len(sup) == 2


def test_origin_line_in_cuda_source_suppresses(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void k() {\n  __syncthreads(); // tolk: noqa: TL101\n  __syncthreads();\n}\n")
    ptx = str(tmp_path / "k.ptx")
    m = module("bar.sync 0;\nbar.sync 0;\n", ptx)
    ds = [diag("TL101", 1, ptx, origin=Origin("k.cu", 2)), diag("TL101", 2, ptx, origin=Origin("k.cu", 3))]
    kept, sup = apply_suppressions(ds, m, DEFAULT_SETTINGS)
    assert [d.span.line for d in sup] == [1] and [d.span.line for d in kept] == [2]
    # a barrier in an inlined device function: the noqa at the call in the kernel counts
    inl = Origin(str(tmp_path / "dev.cuh"), 9, inlined_at=Origin("k.cu", 2))
    kept, sup = apply_suppressions([diag("TL101", 1, ptx, origin=inl)], m, DEFAULT_SETTINGS)
    assert len(sup) == 1


def test_per_file_ignores_deselect(tmp_path):
    root = str(tmp_path)
    s = resolve_settings().with_(
        project_root=root, per_file_ignores=(("tests/**", ("TL2",)), ("!src/**", ("TL1",)))
    )
    assert per_file_ignored(os.path.join(root, "tests", "a.py"), s) == ("TL2", "TL1")
    assert per_file_ignored(os.path.join(root, "src", "a.py"), s) == ()
    path = os.path.join(root, "tests", "a.py")
    m = module("x\n", path)
    kept, sup = apply_suppressions(
        [diag("TL201", 1, path), diag("TL101", 1, path), diag("TL001", 1, path)], m, s
    )
    # deselected, not suppressed: they are not listed anywhere
    assert [d.code for d in kept] == ["TL001"] and sup == []


# ---------------------------------------------------------------- TL003


def tl003(source: str, diags, settings=DEFAULT_SETTINGS, path="k.py"):
    kept, _ = apply_suppressions(diags, module(source, path), settings)
    return [d for d in kept if d.code == "TL003"]


def test_unused_blanket_noqa_is_reported_with_a_fix():
    src = "a = 1\nb = 2  # tolk: noqa\n"
    [d] = tl003(src, [])
    assert d.name == "unused-noqa" and d.severity == Severity.WARNING
    assert (d.span.line, d.span.column, d.span.end_column) == (2, 8, 20)
    assert "blanket" in d.message
    assert apply_edits(src, d.fix.edits) == "a = 1\nb = 2\n"


def test_used_noqa_is_not_reported():
    assert tl003("a = 1  # tolk: noqa: TL101\n", [diag("TL101", 1)]) == []
    assert tl003("a = 1  # tolk: noqa\n", [diag("TL101", 1)]) == []


def test_partly_used_noqa_keeps_the_used_codes():
    src = "a = 1  # tolk: noqa: TL101, TL102, TL101\n"
    [d] = tl003(src, [diag("TL101", 1)])
    assert "unused: `TL102`" in d.message and "duplicated: `TL101`" in d.message
    assert apply_edits(src, d.fix.edits) == "a = 1  # tolk: noqa: TL101\n"


def test_unknown_and_non_enabled_codes():
    s = resolve_settings(ignore=("TL102",))
    [d] = tl003("a = 1  # tolk: noqa: TL102, TL999\n", [], s)
    assert "non-enabled: `TL102`" in d.message and "unknown: `TL999`" in d.message
    assert d.fix is not None and apply_edits("a = 1  # tolk: noqa: TL102, TL999\n", d.fix.edits) == "a = 1\n"


def test_removal_keeps_a_following_comment_and_ptx_syntax():
    src = "ret; // tolk: noqa: TL101 // expect: TL003\n"
    [d] = tl003(src, [], path="k.ptx")
    assert apply_edits(src, d.fix.edits) == "ret; // expect: TL003\n"
    src = "x\n# tolk: noqa\ny\n"  # a noqa alone on its line: the line goes
    [d] = tl003(src, [])
    assert apply_edits(src, d.fix.edits) == "x\ny\n"


def test_tl003_needs_a_complete_check_and_its_selection():
    src = "a = 1  # tolk: noqa: TL101\n"
    assert tl003(src, [diag("TL001", 1, col=3)]) == []  # parse error: rules did not run
    assert tl003(src, [diag("TL004", 1)]) == []  # a rule crashed
    assert tl003(src, [], resolve_settings(select=("TL1",))) == []  # not selected
    assert tl003(src, [], resolve_settings(ignore=("TL003",))) == []
    assert tl003("a = 1  # tolk: noqa: TL101, TL003\n", []) == []  # it names TL003 itself
    assert tl003("# tolk: noqa-file: TL003\na = 1  # tolk: noqa: TL101\n", []) == []


def test_tl003_is_in_the_catalog():
    r = rule_by_code("TL003")
    assert r is not None and r.name == "unused-noqa" and r.fixable
    assert rule_by_code("unused-noqa") is r


# ---------------------------------------------------------------- adding a noqa


@pytest.mark.parametrize(
    "line, marker, result",
    [
        ("    cuda.syncthreads()", "#", "    cuda.syncthreads()  # tolk: noqa: TL101"),
        ("    cuda.syncthreads()   ", "#", "    cuda.syncthreads()  # tolk: noqa: TL101"),
        ("  bar.sync 0;", "//", "  bar.sync 0;  // tolk: noqa: TL101"),
        ("x  # tolk: noqa: TL203", "#", "x  # tolk: noqa: TL203, TL101"),
        ("x  # other comment", "#", "x  # other comment  # tolk: noqa: TL101"),
    ],
)
def test_noqa_insertion(line, marker, result):
    start, end, text = noqa_insertion(line, "TL101", marker)
    new = line[:start] + text + line[end:]
    assert new == result
    assert noqa_codes(new) is not None and "TL101" in noqa_codes(new)


def test_noqa_insertion_when_already_covered():
    assert noqa_insertion("x  # tolk: noqa", "TL101") is None
    assert noqa_insertion("x  # tolk: noqa: TL1", "TL101") is None


# ---------------------------------------------------------------- through the engine


def test_a_parse_error_is_never_suppressed():
    """A file that does not parse was not analysed: a noqa does not hide it."""
    bad = "from numba import cuda\n\ndef k(a:  # tolk: noqa: TL001\n"
    r = lint_text(bad, "k.py")
    assert [d.code for d in r.diagnostics] == ["TL001"] and r.suppressed == []
    r = lint_text("# tolk: noqa-file\n" + bad.replace("# tolk: noqa: TL001", ""), "k.py")
    assert [d.code for d in r.diagnostics] == ["TL001"]


def test_engine_reports_unused_noqa_in_a_clean_file():
    src = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1.0  # tolk: noqa: TL101\n"
    r = lint_text(src, "k.py")
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("TL003", 6)]
    fixed = apply_edits(src, r.diagnostics[0].fix.edits)
    assert fixed.endswith("a[cuda.grid(1)] = 1.0\n")
    assert lint_text(fixed, "k.py").diagnostics == []
