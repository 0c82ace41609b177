"""The result cache: keyed by content, settings and tool; safe to lose."""

from __future__ import annotations

import glob
import json
import os

from click.testing import CliRunner

import tolk_lint.engine
from tolk_lint.cache import (
    CACHE_DIR_NAME,
    Cache,
    diagnostic_from_json,
    diagnostic_to_json,
    lint_cached,
)
from tolk_lint.cli import main
from tolk_lint.config import DEFAULT_SETTINGS, resolve_settings
from tolk_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Related, Severity
from tolk_lint.fingerprint import tool_fingerprint
from tolk_lint.ir.nodes import Origin, Span

BAD = "from numba import cuda\n\ndef k(a:\n"  # does not parse: not analysed, exit 2
# a finding (TL101 on line 7): exit 1
DIVERGENT = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()\n"
GOOD = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1.0\n"


def full_diagnostic() -> Diagnostic:
    return Diagnostic(
        code="TL101",
        severity=Severity.ERROR,
        message="barrier reached by some threads",
        span=Span("k.ptx", 12, 5, 12, 16),
        kernel="k",
        origin=Origin("k.cu", 18, 9, inlined_at=Origin("k.cu", 30, 3)),
        related=[Related("branch", Span("k.ptx", 10, 3, 10, 20)), Related("tid", origin=Origin("k.cu", 17)),
                 Related("bare")],
        witness={"threads": [[15, 0, 0], [960, 0, 0]], "description": "threads 15 and 960"},
        data={"level": "workgroup", "ways": 4},
        fix=Fix("Hoist", (Edit("k.ptx", 12, 5, 12, 16, ""),), Applicability.UNSAFE),
        name="divergent-barrier",
    )  # fmt: skip


def test_diagnostic_round_trip():
    d = full_diagnostic()
    assert diagnostic_from_json(diagnostic_to_json(d)) == d


def test_miss_then_hit(tmp_path):
    k = tmp_path / "k.py"
    k.write_text(DIVERGENT)
    cache = Cache(str(tmp_path))
    first, hit = lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert not hit and [d.code for d in first.diagnostics] == ["TL101"]
    second, hit = lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert hit and second.module is None
    as_stored = json.loads(json.dumps([diagnostic_to_json(d) for d in first.diagnostics]))
    assert [diagnostic_to_json(d) for d in second.diagnostics] == as_stored
    # the folder is marked as a cache and hidden from git
    root = tmp_path / CACHE_DIR_NAME
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (root / ".gitignore").read_text() == "*\n"


def test_suppressed_diagnostics_are_kept(tmp_path):
    k = tmp_path / "k.py"
    k.write_text(DIVERGENT.replace("cuda.syncthreads()", "cuda.syncthreads()  # tolk: noqa: TL101"))
    cache = Cache(str(tmp_path))
    lint_cached(str(k), DEFAULT_SETTINGS, cache)
    again, hit = lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert hit and again.diagnostics == [] and [d.code for d in again.suppressed] == ["TL101"]


def test_content_and_settings_are_part_of_the_key(tmp_path):
    k = tmp_path / "k.py"
    k.write_text(DIVERGENT)
    cache = Cache(str(tmp_path))
    lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert not lint_cached(str(k), resolve_settings(target="sm_90"), cache)[1]
    assert lint_cached(str(k), DEFAULT_SETTINGS, cache)[1]
    k.write_text(GOOD)
    result, hit = lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert not hit and result.diagnostics == []
    key = cache.key(str(k), GOOD.encode(), DEFAULT_SETTINGS)
    assert key != cache.key("other/k.py", GOOD.encode(), DEFAULT_SETTINGS)  # diagnostics carry the path
    assert tool_fingerprint() in (tool_fingerprint(),) and len(tool_fingerprint()) == 16


def test_a_broken_entry_is_a_miss(tmp_path):
    k = tmp_path / "k.py"
    k.write_text(DIVERGENT)
    cache = Cache(str(tmp_path))
    lint_cached(str(k), DEFAULT_SETTINGS, cache)
    [entry] = glob.glob(str(tmp_path / CACHE_DIR_NAME / "**" / "*.json"), recursive=True)
    with open(entry, "w") as f:
        f.write("{not json")
    result, hit = lint_cached(str(k), DEFAULT_SETTINGS, cache)
    assert not hit and [d.code for d in result.diagnostics] == ["TL101"]


def test_dependencies_invalidate(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text("__syncthreads();\n")
    cache = Cache(str(tmp_path))
    assert cache.put("ab" * 32, [full_diagnostic()], [], [str(cu)])
    assert cache.get("ab" * 32) is not None
    cu.write_text("__syncthreads(); // tolk: noqa: TL101\n")
    assert cache.get("ab" * 32) is None


def test_unserialisable_data_is_not_cached(tmp_path):
    d = full_diagnostic()
    d.data = {"op": object()}
    assert not Cache(str(tmp_path)).put("cd" * 32, [d], [], [])


def test_cli_second_run_is_served_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(DIVERGENT)
    (tmp_path / "good.py").write_text(GOOD)
    runner = CliRunner()
    first = runner.invoke(main, ["check", "."])
    assert first.exit_code == 1 and "TL101" in first.output
    assert (tmp_path / CACHE_DIR_NAME / "CACHEDIR.TAG").exists()

    def boom(*a, **k):
        raise AssertionError("linted again")

    monkeypatch.setattr(tolk_lint.engine, "lint_text", boom)
    second = runner.invoke(main, ["check", "."])
    assert second.exit_code == 1 and second.output == first.output
    # the caret line of the text output is rebuilt from the file
    assert "cuda.syncthreads()" in second.output
    # without the cache it must lint again (and the patched engine says so: exit 2)
    third = runner.invoke(main, ["check", "--no-cache", "."])
    assert third.exit_code == 2 and "linted again" in third.output


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(DIVERGENT)
    res = CliRunner().invoke(main, ["check", "--no-cache", "bad.py"])
    assert res.exit_code == 1
    assert not os.path.exists(tmp_path / CACHE_DIR_NAME)
