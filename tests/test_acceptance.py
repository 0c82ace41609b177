"""The acceptance set (shared/acceptance/manifest.json): every kernel on every
asserted target, with the semantics of shared/tools/acceptance.py.

Families not built yet are listed in conftest.PENDING: a case whose expected
codes all fall in them is xfail (never skipped); a case that mixes families
fails on the built ones and is xfail only when every mismatch is pending."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ACCEPTANCE, SHARED, pending_prefixes, pending_reason, xfail_if_pending

from tolk_lint.testing import acceptance_cases, acceptance_result

pytestmark = pytest.mark.skipif(
    not (ACCEPTANCE / "manifest.json").is_file(), reason=f"no acceptance set at {ACCEPTANCE} (shared/ absent)"
)


def _params():
    if not (ACCEPTANCE / "manifest.json").is_file():
        return []
    out = []
    for case in acceptance_cases(ACCEPTANCE):
        reason = pending_reason(case.expected_codes)
        marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
        out.append(pytest.param(case, marks=marks, id=case.id))
    return out


@pytest.mark.parametrize("case", _params())
def test_acceptance(case):
    res = acceptance_result(case)
    xfail_if_pending(res)
    assert res.ok, res.report()


def test_every_ptx_of_the_manifest_is_a_case():
    """Cases come from the manifest; none of its asserted PTX files is dropped."""
    cases = acceptance_cases(ACCEPTANCE)
    assert cases
    assert all(c.linted.is_file() for c in cases), [str(c.linted) for c in cases if not c.linted.is_file()]


def _built_families() -> list[str]:
    pend = pending_prefixes()
    return [f for f in ("TL1", "TL2", "TL3", "TL4") if f not in pend]


@pytest.mark.slow
def test_acceptance_script():
    """shared/tools/acceptance.py, through the real command line, on the built families."""
    script = SHARED / "tools" / "acceptance.py"
    if not script.is_file():
        pytest.skip(f"{script} is absent")
    built = _built_families()
    if not built:
        pytest.xfail("no rule family is built yet: " + "; ".join(sorted(set(pending_prefixes().values()))))
    cmd = f"{sys.executable} -m tolk_lint"
    p = subprocess.run(  # noqa: PLW1510 - the exit status is asserted below
        [sys.executable, str(script), "--summary", "--codes", ",".join(built), "--cmd", cmd],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "NO_COLOR": "1"},
    )
    lines = p.stdout.strip().splitlines()
    assert lines, f"acceptance.py printed nothing (exit {p.returncode}): {p.stderr[-2000:]}"
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1])
    assert m, f"unexpected last line: {lines[-1]!r}"
    assert int(m.group(2)) == 0 and p.returncode == 0, p.stdout[-4000:]
    assert int(m.group(1)) > 0
