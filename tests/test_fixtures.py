"""Every fixture under fixtures/{ptx,numba,cuda}: its inline expectations, matched exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, pending_reason, xfail_if_pending

from tolk_lint.testing import (
    FixtureError,
    Placed,
    collect_fixtures,
    fixture_result,
    language_of,
    match,
    parse_expectations,
    rewrite_expectations,
    settings_from_flags,
)


def _params():
    out = []
    for path in collect_fixtures(FIXTURES):
        exp = parse_expectations(path.read_text(encoding="utf-8"), language_of(path))
        marks = []
        if language_of(path) == "cuda":
            marks.append(pytest.mark.nvcc)
        reason = pending_reason(exp.codes)
        if reason:
            marks.append(pytest.mark.xfail(reason=reason, strict=False))
        out.append(pytest.param(path, marks=marks, id=str(path.relative_to(FIXTURES))))
    return out


@pytest.mark.parametrize("path", _params())
def test_fixture(path, update_fixtures):
    res = fixture_result(path)
    if update_fixtures and not res.ok:
        rewrite_expectations(res)
        res = fixture_result(path)
    xfail_if_pending(res)
    assert res.ok, res.report()


def test_there_are_fixtures():
    assert collect_fixtures(FIXTURES), f"no fixtures under {FIXTURES}"


# -- the harness itself ------------------------------------------------------------------


CU = """\
// flags: --target sm_90 --block 128,2 --select TL1,TL2 --ignore TL203
// prose that mentions TL101 and the word expect without a colon
extern "C" __global__ void __launch_bounds__(256) clean_one(float* x)  // expect-clean
{
    __syncthreads();  // expect: TL101 "thread-dependent"
    // expect: TL201
    // expect: [TL102]

    x[0] = 1;
    x[1] = 2;  // expect: TL201, TL202
}
"""


def test_parse_expectations_cuda():
    exp = parse_expectations(CU, "cuda")
    assert exp.flags == ["--target", "sm_90", "--block", "128,2", "--select", "TL1,TL2", "--ignore", "TL203"]
    assert [(e.line, e.code, e.substring) for e in exp.expected] == [
        (5, "TL101", "thread-dependent"),
        (9, "TL201", None),
        (9, "TL102", None),
        (10, "TL201", None),
        (10, "TL202", None),
    ]
    assert [(c.line, c.name) for c in exp.clean] == [(3, "clean_one")]
    s = exp.settings()
    assert s.target == "sm_90" and s.block == (128, 2, 1)
    assert s.select == ("TL1", "TL2") and s.ignore == ("TL203",)


def test_parse_expectations_python_and_ptx():
    py = "from numba import cuda\n\n@cuda.jit\ndef k(a):  # expect-clean\n    pass\n\ndef g(a):\n    cuda.syncthreads()  # expect: [TL101]\n"
    exp = parse_expectations(py, "python")
    assert exp.pairs == {(8, "TL101")} and [(c.line, c.name) for c in exp.clean] == [(4, "k")]
    ptx = ".visible .entry k() // expect-clean\n{\n  bar.sync 0; // expect: TL101\n  ret;\n}\n"
    exp = parse_expectations(ptx, "ptx")
    assert exp.pairs == {(3, "TL101")} and exp.clean[0].name == "k"
    assert parse_expectations(ptx, "ptx").flags == []


@pytest.mark.parametrize(
    "bad", ["x = 1;  // expect: nothing\n", "// expect: TL101\n", "// flags: --frobnicate 3\nx;\n"]
)
def test_malformed_fixtures(bad):
    with pytest.raises(FixtureError):
        exp = parse_expectations(bad, "cuda")
        settings_from_flags(exp.flags)


def test_match_reports_missing_extra_and_clean():
    exp = parse_expectations(CU, "cuda")
    reported = [
        Placed(5, "TL101", "barrier is reached under a thread-dependent condition", "clean_one", "x.ptx:40"),
        Placed(5, "TL101", "the same, from an unrolled copy", "clean_one", "x.ptx:80"),
        Placed(9, "TL201", "race", "clean_one", "x.ptx:50"),
        Placed(9, "TL102", "loop", "clean_one", "x.ptx:51"),
        Placed(10, "TL201", "race", "clean_one", "x.ptx:60"),
        Placed(10, "TL202", "oob", "clean_one", "x.ptx:61"),
    ]
    res = match(Path("x.cu"), exp, reported)
    # everything expected was reported, but the kernel is expect-clean
    assert not res.missing and not res.extra and res.dirty_clean and not res.ok
    exp.clean.clear()
    assert match(Path("x.cu"), exp, reported).ok
    res = match(Path("x.cu"), exp, reported[2:] + [Placed(None, "TL002", "opaque", None, "x.ptx:3")])
    assert [str(e) for e in res.missing] == ['line 5: TL101 "thread-dependent"']
    assert [p.code for p in res.extra] == ["TL002"]
    text = res.report()
    assert (
        "missing line 5: TL101" in text and "extra   no line of the fixture (x.ptx:3): TL002 opaque" in text
    )
    res = match(Path("x.cu"), exp, [Placed(5, "TL101", "other words", None, "")] + reported[2:])
    assert res.wrong_message and not res.ok


def test_rewrite_expectations(tmp_path):
    from tolk_lint.testing import rewrite_expectations

    f = tmp_path / "x.cu"
    f.write_text(CU)
    exp = parse_expectations(CU, "cuda")
    reported = [
        Placed(5, "TL101", "thread-dependent barrier", "clean_one", ""),
        Placed(10, "TL203", "bank conflict", "clean_one", ""),
    ]
    rewrite_expectations(match(f, exp, reported))
    new = parse_expectations(f.read_text(), "cuda")
    assert [(e.line, e.code, e.substring) for e in new.expected] == [
        (5, "TL101", "thread-dependent"),
        (8, "TL203", None),  # the two own-line comments are gone
    ]
    assert new.clean == []  # the kernel has diagnostics now
    assert match(
        f, new, [Placed(5, "TL101", "thread-dependent", None, ""), Placed(8, "TL203", "", None, "")]
    ).ok
