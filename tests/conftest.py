"""Shared test set-up: the ``--update-fixtures`` option, the rule families not
built yet (``PENDING``), where ``shared/`` is, and the record of which
compilers produced the PTX the tests linted (printed at the end of the run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# shared/ sits beside the repository (/work/shared beside /work/main; CI puts it beside the clone)
SHARED = Path(__file__).resolve().parents[2] / "shared"
ACCEPTANCE = SHARED / "acceptance"
FIXTURES = REPO / "fixtures"

# Rule families whose rules are not built yet, by code prefix, with the reason.
# A fixture or acceptance case whose expected codes all fall in these families
# is marked xfail (never skipped); one that mixes families fails only on the
# built ones. Remove an entry when its family lands.
PENDING: dict[str, str] = {
    # Every rule family (TL0-TL4) is built and asserted: a rule family still
    # being built is listed here, with its issue, so that its fixtures'
    # mismatches xfail with that reason instead of failing.
}


def pending_prefixes() -> dict[str, str]:
    """``PENDING``, plus every rule family with no rule registered at all."""
    from tolk_lint.rules import ALL_RULES

    out = dict(PENDING)
    registered = {r.code[:3] for r in ALL_RULES}
    for fam in ("TL1", "TL2", "TL3", "TL4"):
        if fam not in registered and fam not in out:
            out[fam] = f"no {fam}xx rule is registered yet"
    return out


def pending_reason(codes: set[str] | frozenset[str]) -> str | None:
    """The xfail reason when every code of ``codes`` is in a pending family
    (None when ``codes`` is empty or holds a built one)."""
    pend = pending_prefixes()
    reasons = []
    for c in sorted(codes):
        fam = next((p for p in pend if c.startswith(p)), None)
        if fam is None:
            return None
        if pend[fam] not in reasons:
            reasons.append(pend[fam])
    return "; ".join(reasons) or None


def xfail_if_pending(result) -> None:
    """After a failed check: xfail when every mismatched code is in a pending
    family, so work in progress on a pending family never hides a failure of
    a built one."""
    if result.ok:
        return
    reason = pending_reason(result.mismatched_codes())
    if reason:
        pytest.xfail(f"{reason}\n{result.report()}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="rewrite the expect: comments of fixtures (and tests/data dumps) from what tolk-lint reports",
    )


@pytest.fixture
def update_fixtures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-fixtures"))


# -- which compilers the tests exercised ------------------------------------------------

_COMPILERS = pytest.StashKey[dict]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_COMPILERS] = {}
    config.addinivalue_line("markers", "nvcc: compiles CUDA C with nvcc (skipped when nvcc is not on PATH)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the tests marked slow first (a stable sort: each group keeps its order):
    # pytest-xdist hands tests out in this order, so the long ones start at
    # once instead of leaving one worker running them alone at the end
    items.sort(key=lambda item: "slow" not in item.keywords)
    if shutil.which("nvcc"):
        return
    skip = pytest.mark.skip(reason="nvcc is not on PATH: CUDA C fixtures are compiled at test time")
    for item in items:
        if "nvcc" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def compiler_log(request: pytest.FixtureRequest) -> dict:
    """``{compiler: {"version": str, "kernels": int, "skipped": reason}}``,
    printed in the terminal summary."""
    return request.config.stash[_COMPILERS]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    log = config.stash.get(_COMPILERS, {})
    if not log:
        return
    terminalreporter.section("compilers exercised")
    for name in sorted(log):
        entry = log[name]
        if entry.get("kernels"):
            terminalreporter.write_line(
                f"{name} {entry.get('version', '?')}: {entry['kernels']} PTX files linted"
            )
        else:
            terminalreporter.write_line(f"{name}: not exercised ({entry.get('skipped', 'no kernels')})")
