"""bench/real_corpus.py's matching of diagnostics to the planted bugs, on
small JSON diagnostics as ``tolk-lint check --output-format json`` writes
them (no nvcc needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "real_corpus.py"


@pytest.fixture(scope="module")
def corpus():
    spec = importlib.util.spec_from_file_location("real_corpus", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["real_corpus"] = module  # its dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["real_corpus"]
    return module


def _diag(code, line, related=(), path="k.ptx", origin_line=None, cu="k.cu"):
    """A diagnostic of the JSON output: on PTX ``line``, its origin at line
    ``origin_line`` of ``cu``; ``related``: (cu line, PTX line) pairs, a
    cu line of None for a related location without an origin."""
    rel = []
    for cu_line, ptx_line in related:
        if cu_line is None:
            rel.append({"path": path, "line": ptx_line, "column": 2, "message": "note"})
        else:
            rel.append({"path": cu, "line": cu_line, "column": 5, "message": "called from here",
                        "linted_path": path, "linted_line": ptx_line})
    origin = {"path": cu, "line": origin_line, "column": 5} if origin_line is not None else None
    return {"code": code, "severity": "error", "path": path, "line": line, "origin": origin, "related": rel,
            "kernel": "_Z6filterPiS_PKii", "message": "m"}


def test_a_planted_bug_is_found_on_its_own_line(corpus, tmp_path):
    cu = tmp_path / "k.cu"
    d = _diag("TL201", 120, origin_line=30, cu=str(cu))
    assert corpus.planted_match(d, cu, {("TL201", 30)}) == ("TL201", 30)
    assert corpus.planted_match(d, cu, {("TL202", 30)}) is None  # another code
    assert corpus.planted_match(d, cu, {("TL201", 31)}) is None  # another line


def test_a_collective_in_a_device_function_is_found_at_its_call(corpus, tmp_path):
    # reported at the __shfl_sync (line 80 of the device function), the call (line 87) a related location
    cu = tmp_path / "k.cu"
    d = _diag("TL103", 140, related=[(87, 160)], origin_line=80, cu=str(cu))
    assert corpus.diagnostic_lines(d, cu) == [80, 87]
    assert corpus.planted_match(d, cu, {("TL103", 87)}) == ("TL103", 87)


def test_related_locations_elsewhere_are_not_lines_of_the_source(corpus, tmp_path):
    cu = tmp_path / "k.cu"
    # a related location without an origin is a PTX line: PTX line 87 is not line 87 of the .cu
    d = _diag("TL103", 140, related=[(None, 87)], origin_line=80, cu=str(cu))
    assert corpus.diagnostic_lines(d, cu) == [80]
    assert corpus.planted_match(d, cu, {("TL103", 87)}) is None
    # nor is a line of a toolkit header
    header = _diag("TL103", 140, related=[(87, 160)], origin_line=80, cu="/usr/local/cuda/include/x.h")
    assert corpus.diagnostic_lines(header, cu) == []


def test_python_diagnostics_name_their_own_lines(corpus, tmp_path):
    py = tmp_path / "k.py"
    d = {"code": "TL103", "severity": "error", "path": str(py), "line": 12, "origin": None,
         "related": [{"path": str(py), "line": 20, "column": 9, "message": "called from the kernel here"},
                     {"path": str(py), "line": None, "column": None, "message": "no span"}]}
    assert corpus.diagnostic_lines(d, py) == [12, 20]
    assert corpus.planted_match(d, py, {("TL103", 20)}) == ("TL103", 20)


def test_sorting_counts_the_call_site_marker_as_found(corpus, tmp_path):
    cu = tmp_path / "k.cu"
    marks = [corpus.Marker("planted", "TL103", 87)]
    report = corpus.FileReport("k.cu")
    diags = [_diag("TL103", 140, related=[(87, 160)], origin_line=80, cu=str(cu)),
             _diag("TL201", 50, origin_line=12, cu=str(cu))]
    corpus.sort_diagnostics(report, diags, cu, marks, twins=set(), examples=0)
    assert (report.planted_found, report.planted_total, report.planted_missed) == (1, 1, [])
    assert report.false_alarms == {"TL201": 1}
