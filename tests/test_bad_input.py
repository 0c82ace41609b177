"""Bad input through the real command line: the right code, the right exit
status (0 clean, 1 diagnostics, 2 usage error or a file not analysed: TL001,
TL004, TL005), never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ACCEPTANCE

DATA = Path(__file__).parent / "data"


def tolk_lint(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = shutil.which("tolk-lint", path=os.path.dirname(sys.executable)) or shutil.which("tolk-lint")
    argv = [exe] if exe else [sys.executable, "-m", "tolk_lint"]
    p = subprocess.run(  # noqa: PLW1510 - callers assert the exit status
        argv + list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert "Traceback" not in p.stderr, p.stderr
    assert "Traceback" not in p.stdout, p.stdout
    return p


def check_json(path: Path, *flags: str, timeout: float = 120) -> tuple[int, list[dict]]:
    p = tolk_lint("check", "--output-format", "json", *flags, str(path), timeout=timeout)
    try:
        diags = json.loads(p.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON on stdout (exit {p.returncode}): {p.stdout[:500]!r} {p.stderr[:500]!r}")
    return p.returncode, diags


def codes(diags: list[dict]) -> set[str]:
    return {d["code"] for d in diags}


SMALL_PTX = """\
.version 8.0
.target sm_80
.address_size 64

.visible .entry scale(.param .u64 scale_param_0, .param .u32 scale_param_1)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .f32 %f<3>;
\t.reg .b64 %rd<5>;

\tld.param.u64 %rd1, [scale_param_0];
\tld.param.u32 %r1, [scale_param_1];
\tmov.u32 %r2, %tid.x;
\tsetp.ge.u32 %p1, %r2, %r1;
\t@%p1 bra $L__BB0_2;
\tcvta.to.global.u64 %rd2, %rd1;
\tmul.wide.u32 %rd3, %r2, 4;
\tadd.s64 %rd4, %rd2, %rd3;
\tld.global.f32 %f1, [%rd4];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd4], %f2;
$L__BB0_2:
\tret;
}
"""


def test_clean_ptx(tmp_path):
    f = tmp_path / "scale.ptx"
    f.write_text(SMALL_PTX)
    rc, diags = check_json(f)
    assert (rc, diags) == (0, [])
    p = tolk_lint("check", str(f))
    assert p.returncode == 0


def test_prose_is_not_ptx(tmp_path):
    f = tmp_path / "notes.ptx"
    f.write_text("These are my notes about the kernel.\nIt runs fast; mostly.\n")
    rc, diags = check_json(f)
    assert rc == 2 and codes(diags) == {"TL001"}, diags
    d = diags[0]
    assert d["line"] >= 1 and d["column"] >= 1
    p = tolk_lint("check", str(f))
    assert p.returncode == 2 and "TL001" in p.stdout


def _truncated_sources() -> list[pytest.param]:
    out = [pytest.param(SMALL_PTX, id="small")]
    path = ACCEPTANCE / "cuda" / "sgemm_tiled.sm80.ptx"
    if path.is_file():
        out.append(pytest.param(path.read_text(), id="acceptance-sgemm_tiled"))
    return out


@pytest.mark.parametrize("text", _truncated_sources())
def test_truncated_ptx(tmp_path, text):
    lines = text.splitlines(keepends=True)
    f = tmp_path / "cut.ptx"
    f.write_text("".join(lines[: len(lines) // 2]))
    rc, diags = check_json(f)
    assert rc == 2 and "TL001" in codes(diags), diags
    d = next(d for d in diags if d["code"] == "TL001")
    assert d["line"] >= 1 and d["message"], d


def test_unknown_instruction_is_tl002(tmp_path):
    text = SMALL_PTX.replace(
        "\tadd.f32 %f2, %f1, %f1;\n", "\tadd.f32 %f2, %f1, %f1;\n\tfrobnicate.b32 %r3, %r2;\n"
    )
    f = tmp_path / "frob.ptx"
    f.write_text(text)
    rc, diags = check_json(f)
    assert rc == 1 and codes(diags) == {"TL002"}, diags
    line = text.splitlines().index("\tfrobnicate.b32 %r3, %r2;") + 1
    assert diags[0]["line"] == line


def test_binary_bytes(tmp_path):
    f = tmp_path / "blob.ptx"
    f.write_bytes(bytes(range(256)) * 16)
    rc, diags = check_json(f)
    assert rc == 2 and codes(diags) == {"TL001"}, diags


def test_invalid_utf8(tmp_path):
    f = tmp_path / "latin1.ptx"
    f.write_bytes(SMALL_PTX.encode() + b"// caf\xe9\n")
    rc, diags = check_json(f)
    assert rc == 2 and codes(diags) == {"TL001"}, diags


def test_invalid_python(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("from numba import cuda\n\n@cuda.jit\ndef k(a:\n    a[0] = 1\n")
    rc, diags = check_json(f)
    assert rc == 2 and codes(diags) == {"TL001"}, diags
    assert diags[0]["line"] >= 4


def test_empty_python_file_is_clean(tmp_path):
    f = tmp_path / "empty.py"
    f.write_text("")
    rc, diags = check_json(f)
    assert (rc, diags) == (0, [])


@pytest.mark.parametrize("text", ["", "// only a comment\n", ".target sm_80\n.address_size 64\n",
                                  SMALL_PTX.replace(".version 8.0\n", "")], ids=["empty", "comment", "directives",
                                  "kernel"])  # fmt: skip
def test_ptx_without_version_is_not_ptx(tmp_path, text):
    """ptxas: "Missing .version directive at start of file" (even for an empty file)."""
    f = tmp_path / "nothing.ptx"
    f.write_text(text)
    rc, diags = check_json(f)
    assert rc == 2 and codes(diags) == {"TL001"}, diags
    assert "`.version`" in diags[0]["message"], diags


def test_ptx_with_directives_only_is_clean(tmp_path):
    """``.version`` and ``.target`` and nothing else: ptxas assembles it, nothing to report."""
    f = tmp_path / "header.ptx"
    f.write_text(".version 8.0\n.target sm_80\n.address_size 64\n")
    rc, diags = check_json(f)
    assert (rc, diags) == (0, [])


def test_unknown_target_is_a_usage_error(tmp_path):
    f = tmp_path / "scale.ptx"
    f.write_text(SMALL_PTX)
    p = tolk_lint("check", "--target", "sm_banana", str(f))
    assert p.returncode == 2
    assert "sm_banana" in p.stderr


@pytest.mark.parametrize("flag", [["--block", "0,1,1"], ["--block", "x"], ["--output-format", "yaml"]])
def test_bad_flags_are_usage_errors(tmp_path, flag):
    f = tmp_path / "scale.ptx"
    f.write_text(SMALL_PTX)
    p = tolk_lint("check", *flag, str(f))
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_missing_path(tmp_path):
    missing = tmp_path / "nope.ptx"
    p = tolk_lint("check", "--output-format", "json", str(missing))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    diags = json.loads(p.stdout)
    assert codes(diags) == {"TL001"} and "nope.ptx" in diags[0]["message"] + diags[0]["path"]


def test_unknown_rule_is_a_usage_error():
    p = tolk_lint("rule", "TL999")
    assert p.returncode == 2 and "TL999" in p.stderr


# -- a 50 MB file ------------------------------------------------------------------------

_ENTRY = re.compile(r"^\.(?:visible\s+)?\.entry\s+(\w+)", re.MULTILINE)


def replicate_ptx(text: str, target_bytes: int) -> str:
    """One PTX module holding copies of ``text``'s kernels, each renamed, until
    it is ``target_bytes`` long: the module header once, the ``.file`` table
    once, debug sections dropped."""
    lines = text.splitlines()
    header, body, files, i = [], [], [], 0
    while i < len(lines) and not _ENTRY.match(lines[i]):
        if not lines[i].lstrip().startswith(".file"):
            header.append(lines[i])
        i += 1
    depth = 0
    in_kernel = False
    for line in lines[i:]:
        s = line.strip()
        if s.startswith(".file"):
            files.append(line)
            continue
        if s.startswith(".section"):
            break  # DWARF sections close the file
        if _ENTRY.match(line):
            in_kernel = True
        if in_kernel:
            body.append(line)
            depth += line.count("{") - line.count("}")
            if depth == 0 and "}" in line:
                in_kernel = False
    names = _ENTRY.findall("\n".join(body))
    chunk = "\n".join(body) + "\n"
    parts = ["\n".join(header) + "\n"]
    size, n = len(parts[0]), 0
    while size < target_bytes:
        copy = chunk
        for name in names:
            copy = re.sub(rf"\b{re.escape(name)}\b", f"{name}_{n}", copy)
        parts.append(copy)
        size += len(copy)
        n += 1
    parts.append("\n".join(files) + "\n")
    return "".join(parts)


@pytest.mark.slow
def test_ten_megabytes(tmp_path):
    src = ACCEPTANCE / "cuda" / "sgemm_tiled.sm80.ptx"
    text = src.read_text() if src.is_file() else SMALL_PTX
    big = replicate_ptx(text, 10 * 1024 * 1024)
    f = tmp_path / "big.ptx"
    f.write_text(big)
    assert f.stat().st_size >= 10 * 1024 * 1024
    start = time.perf_counter()
    # the front end and the engine on 10 MB (the rules' speed is bench/bench_ptx.py's business)
    # (the default budgets are for a person's files, and a loaded machine may
    # take longer: this test asks that the file be read, never TL005;
    # tests/test_budget_stops.py stops the parse of 50 MB within its budget)
    p = tolk_lint("check", "--select", "TL0", "--output-format", "json", "--exit-zero", "--time-budget", "1500",
                  "--memory-budget", "8192", str(f), timeout=1800)  # fmt: skip
    elapsed = time.perf_counter() - start
    assert p.returncode == 0, p.stderr[-2000:]
    diags = json.loads(p.stdout)
    assert not {"TL001", "TL004", "TL005"} & set(codes(diags)), diags[:3]
    print(f"10 MB PTX ({len(big.splitlines())} lines): {elapsed:.1f} s")
