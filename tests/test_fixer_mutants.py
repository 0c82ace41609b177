"""Deliberately broken variants of a fixed kernel: both layers of `validate`
must catch each one -- (a) the static proof reports TL204, and (c) the
interpreter sees different outputs.

The base is the acceptance set's SGEMM (sgemm_tiled.sm80.ptx, skipped
without ../shared), fixed by ``fix --unsafe-fixes``: a Form A pipeline with
``cp.async.wait_group 0; bar.sync 0`` at the top of each trip, the issue of
tile k + 1 behind ``@!%run bra $L__tolk_0``, one ``cp.async.commit_group``
after that label, and reads at offset ``(k & 1) * 1024``. Each mutant changes
one thing in the loop.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tolk_lint.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SGEMM = ROOT.parent / "shared" / "acceptance" / "cuda" / "sgemm_tiled.sm80.ptx"
SPEC = ROOT / "fixtures" / "fixer" / "acceptance" / "sgemm_tiled16.toml"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> tuple[Path, str]:
    if not SGEMM.exists():
        pytest.skip("the acceptance set is not beside the repository")
    d = tmp_path_factory.mktemp("mutants")
    original = d / "k.ptx"
    shutil.copyfile(SGEMM, original)
    f = d / "k.fixed.ptx"
    shutil.copyfile(SGEMM, f)
    CliRunner().invoke(cli, ["fix", "--unsafe-fixes", "--block", "16,16,1", str(f)], catch_exceptions=False)
    text = f.read_text()
    assert "cp.async.commit_group" in text
    return original, text


def _loop(text: str) -> tuple[int, int]:
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("$L__BB0_2:"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("$L__BB0_3:"))
    return sum(len(x) for x in lines[:start]), sum(len(x) for x in lines[:end])


def mutate(text: str, old: str, new: str) -> str:
    """Replace the first ``old`` (a regex) inside the loop by ``new``."""
    a, b = _loop(text)
    body, n = re.subn(old, new, text[a:b], count=1)
    assert n == 1, f"no `{old}` in the loop"
    return text[:a] + body + text[b:]


def validate(original: Path, text: str, tmp: Path) -> dict[str, dict]:
    mutant = tmp / "mutant.ptx"
    mutant.write_text(text)
    r = CliRunner().invoke(cli, ["validate", str(original), str(mutant), "--launch", str(SPEC),
                                 "--output-format", "json"], catch_exceptions=False)  # fmt: skip
    return {s["stage"]: s for s in json.loads(r.output)["stages"]}


def caught_by_both(report: dict[str, dict]) -> None:
    static, interp = report["static"], report["interpreter"]
    assert static["verdict"] == "fail" and any("TL204" in d for d in static["details"]), static
    differ = [k for k, v in interp["figures"].get("outputs", {}).items() if v != "identical"]
    assert interp["verdict"] == "fail" and differ, interp


def test_wait_removed(fixed, tmp_path):
    """No wait before the barrier: the barrier does not complete a copy, so
    trip k reads its tile before it lands (RAW); under the interpreter's
    latest policy the copies land only at the drain after the loop."""
    original, text = fixed
    caught_by_both(validate(original, mutate(text, r"\tcp\.async\.wait_group 0;\n", ""), tmp_path))


def test_wait_group_1_in_form_a(fixed, tmp_path):
    """``wait_group 1`` leaves the newest group pending: in Form A that is
    the group of tile k itself, which this trip then reads."""
    original, text = fixed
    caught_by_both(validate(original, mutate(text, r"wait_group 0;", "wait_group 1;"), tmp_path))


def test_barrier_before_the_next_issue_removed(fixed, tmp_path):
    """Without the trip's barrier nothing publishes the other threads'
    copies of tile k (RAW across threads), and the issue of tile k + 1 into
    slot (k + 1) mod 2 races with the reads of it in trip k - 1 (WAR)."""
    original, text = fixed
    caught_by_both(validate(original, mutate(text, r"(wait_group 0;\n)\tbar\.sync \t0;\n", r"\1"), tmp_path))


def test_wrong_slot_parity(fixed, tmp_path):
    """The reads use slot (k + 1) mod 2, the one tile k + 1 is being copied
    into: they read while it lands, and never see tile k."""
    original, text = fixed
    m = re.search(r"\tand\.b32 \t(%tolk_b32_\d+), (%tolk_b32_\d+), 1;\n", text[_loop(text)[0]:])
    assert m
    wrong = f"\tadd.s32 \t{m.group(1)}, {m.group(2)}, 1;\n\tand.b32 \t{m.group(1)}, {m.group(1)}, 1;\n"
    caught_by_both(validate(original, mutate(text, re.escape(m.group(0)), wrong), tmp_path))


def test_commit_inside_the_guard_is_benign_in_form_a(fixed, tmp_path):
    """The commit moved inside ``if k + 1 < T`` (before the skip label).

    In Form C (``wait_group 1``) this is a bug: the last trip commits no
    group, so ``wait_group 1`` counts the wrong ones. In Form A it is not:
    the only commit skipped is the last trip's, which follows no copy, and
    ``wait_group 0`` retires every committed group whatever their number;
    every copy is still committed before the next wait (the commit follows
    the issue on the same path). So neither layer may report it -- and
    neither does: the static proof passes and the outputs are identical."""
    original, text = fixed
    mutant = mutate(text, r"(\$L__tolk_\d+:\n)\tcp\.async\.commit_group;\n", r"\tcp.async.commit_group;\n\1")
    report = validate(original, mutant, tmp_path)
    assert report["static"]["verdict"] == "pass", report["static"]
    assert report["interpreter"]["verdict"] == "pass", report["interpreter"]


def test_commit_inside_the_guard_with_wait_group_1_is_caught(fixed, tmp_path):
    """The same misplaced commit where the wait allows one group in flight
    (``wait_group 1``): now caught by both layers (the wait count alone is
    already a bug in Form A, and the skipped commit does not rescue it)."""
    original, text = fixed
    mutant = mutate(text, r"(\$L__tolk_\d+:\n)\tcp\.async\.commit_group;\n", r"\tcp.async.commit_group;\n\1")
    caught_by_both(validate(original, mutate(mutant, r"wait_group 0;", "wait_group 1;"), tmp_path))
