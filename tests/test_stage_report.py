"""`tolk-lint stage`: the staging report (table, JSON, HTML), and its depths
on the acceptance kernels against shared/acceptance/manifest.json."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tolk_lint.commands.stage import command, render_html, render_text, report_rows, stage_file
from tolk_lint.config import DEFAULT_SETTINGS

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
ACCEPTANCE = SHARED / "acceptance"
STAGING_PY = REPO / "fixtures" / "numba" / "staging"

needs_acceptance = pytest.mark.skipif(not (ACCEPTANCE / "manifest.json").is_file(), reason="no shared/acceptance")


def _rows(path: Path, block=None, target=None):
    st = DEFAULT_SETTINGS.with_(block=block, target=target)
    kernels, problems = stage_file(str(path), st)
    assert not problems, problems
    return report_rows(str(path), kernels)


def _staging_cases():
    if not (ACCEPTANCE / "manifest.json").is_file():
        return []
    man = json.loads((ACCEPTANCE / "manifest.json").read_text())
    out = []
    for k in man["kernels"]:
        staged = [e for e in k["expected"] if e["code"].startswith(("TL3", "TL4"))]
        if not staged:
            continue
        runs = list(k.get("ptx", {}).items()) if k["language"] == "cuda" else [(k["targets"][0], k["file"])]
        for target, path in runs:
            out.append(pytest.param(k, target, path, id=f"{k['file']}[{target}]"))
    return out


@needs_acceptance
@pytest.mark.parametrize("kernel,target,path", _staging_cases())
def test_report_depths_equal_the_manifest(kernel, target, path):
    block = tuple(kernel["launch"]["block"]) if kernel.get("launch") else None
    rows = [r for r in _rows(ACCEPTANCE / path, block=block) if r["kernel"] == kernel["kernel"]]
    expected = kernel.get("expected_by_target", {}).get(target, kernel["expected"])
    for e in kernel["expected"]:
        if not e["code"].startswith(("TL3", "TL4")):
            continue
        line_rows = [r for r in rows if r["line"] == e["line"]]
        assert line_rows, f"no report row at line {e['line']}"
        r = line_rows[0]
        if isinstance(e.get("depth"), dict) and target in e["depth"]:
            assert r["depth"] == e["depth"][target], r
            for t, d in e["depth"].items():
                assert r["depths"][t] == d, (t, r["depths"])
        reported = {(x["code"], x["line"]) for x in rows if x["code"]}
        if e in expected:
            assert (e["code"], e["line"]) in reported
        else:  # e.g. sm_75: the synchronous copy is what the target allows, depth 1, nothing reported
            assert r["code"] is None and r["depth"] == 1, r


@needs_acceptance
def test_report_on_clean_kernels_reports_nothing():
    for name, block in (("cuda/cpasync_pipeline.sm80.ptx", (16, 16, 1)), ("cuda/wmma_ragged_k.sm80.ptx", (32, 1, 1)),
                        ("numba/host_decode_panel.py", None), ("cuda/shifted_loop.sm80.ptx", (256, 1, 1))):  # fmt: skip
        rows = _rows(ACCEPTANCE / name, block=block)
        assert all(r["code"] is None for r in rows), (name, [r for r in rows if r["code"]])


def test_report_rows_for_python_kernels():
    rows = _rows(STAGING_PY / "naive_matmul_global.py")
    by = {r["operand"]: r for r in rows}
    a = by["A[i, k]"]
    assert a["kind"] == "operand" and a["code"] == "TL301" and a["tile_shape"] == [16, 1]
    assert a["depths"] == {"sm_75": 1, "sm_80": 2, "sm_90": 2} and a["rereads"] == 16
    assert a["box"] == [{"name": "tid.y", "extent": 16, "stride": "A.shape[1]", "kind": "thread"}]
    assert a["k_unrolled_shape"] == [16, 32]
    rows = _rows(STAGING_PY / "host_decode_rows.py")
    dec = [r for r in rows if r["kind"] == "decode"]
    assert {(r["kernel"], r["code"]) for r in dec} == {("dequant_matmul", "TL401"), ("dequant_matvec", None)}
    assert next(r for r in dec if r["code"])["tile_bytes"] == 2048


def test_text_table_and_reasons():
    rows = _rows(STAGING_PY / "rotated_dot_mixed.py")
    text = render_text(rows)
    lines = text.splitlines()
    # first the launch shape each kernel was analysed under, and where it came from
    assert lines[0] == "launch shapes assumed:"
    assert lines[1].endswith("rotated_dot: block=(64,1,1) from the `tolk: launch` comment at line 9"), lines[:4]
    head = next(ln for ln in lines if ln.startswith("kernel"))
    assert head.split()[:4] == ["kernel", "launch", "op@line", "operand@line"]
    assert "sm_75" in text and "why not staged" in text and "mixes" in text
    assert {r["launch"]["source"] for r in rows} == {f"the `tolk: launch` comment at line {n}" for n in (9, 19)}
    assert render_text([]).startswith("no tensor-core operand")


def test_html_draws_each_staged_tile():
    rows = _rows(STAGING_PY / "sgemm_tiled_sync.py") + _rows(STAGING_PY / "naive_matmul_global.py")
    page = render_html(rows)
    staged = [r for r in rows if r["stageable"] and r["depth"] >= 1 and r["kind"] != "decode"]
    assert page.count("<svg") == len(staged) == 4
    assert "slot 1 (trip k+1)" in page and "slot 0 (trip k)" in page
    for svg in page.split("<svg")[1:]:
        ET.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")  # well-formed


def test_command_json_and_html(tmp_path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(command, ["--output-format", "json", "--html", str(out),
                                       str(STAGING_PY / "sgemm_deep_k_no_fit.py")])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    copies = {r["operand"]: r for r in rows if r["kind"] == "tile-copy"}
    assert {k: (r["depth"], r["code"], r["tile_bytes"]) for k, r in copies.items()} == {
        "sA": (1, "TL303", 8192),
        "sB": (1, "TL303", 32768),
    }
    assert copies["sA"]["optin_depth"] == 2
    assert out.read_text().count("<svg") == 2


def test_command_text_with_target_override():
    res = CliRunner().invoke(command, ["--target", "sm_75", str(STAGING_PY / "sgemm_tiled_sync.py")])
    assert res.exit_code == 0, res.output
    assert "1 (sm_75)" in res.stdout and "TL302" not in res.stdout


def test_stage_is_a_subcommand_of_the_cli():
    import click

    from tolk_lint.cli import main

    ctx = click.Context(main)
    assert "stage" in main.list_commands(ctx)
    assert main.get_command(ctx, "stage") is command


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_command_on_compiled_cuda(tmp_path):
    import subprocess

    cu = REPO / "fixtures" / "cuda" / "staging" / "mma_sync_global.cu"
    ptx = tmp_path / "m.ptx"
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, timeout=300)
    res = CliRunner().invoke(command, ["--block", "128,1,1", "--output-format", "json", str(ptx)])
    assert res.exit_code == 0, res.output
    rows = {r["operand"]: r for r in json.loads(res.stdout)}
    assert rows["a"]["tile_shape"] == [32, 16] and rows["a"]["depth"] == 2 and rows["a"]["code"] == "TL301"
    assert rows["b"]["tile_shape"] == [16, 16] and rows["b"]["line"] == 24
