"""The cp.async walk (`analysis.memory.copies.copy_walk`) stays bounded.

Its states multiply with the trip relations of nested loops (a
`cuda::pipeline` with a shared state and three stages reached 1.7 million
states and 3.7 GB). Past `EXACT_STATES` the walk forgets how many trips
separate a copy from what it meets: a superset of the exact relations. So
with no exact states at all, every planted async-copy hazard of the
fixtures is still found (more may be reported, none may be missed).
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from tolk_lint.analysis.memory import copies
from tolk_lint.testing import collect_fixtures, fixture_result

HAZARD_FIXTURES = [p for p in collect_fixtures(FIXTURES) if "expect: TL204" in p.read_text(encoding="utf-8")]


def test_there_are_async_copy_fixtures():
    assert len(HAZARD_FIXTURES) >= 10


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.nvcc] if p.suffix == ".cu" else [], id=p.name) for p in HAZARD_FIXTURES],
)
def test_a_walk_that_forgets_every_trip_still_finds_every_hazard(path, monkeypatch):
    monkeypatch.setattr(copies, "EXACT_STATES", 0)
    res = fixture_result(path)
    missing = [e for e in res.missing if e.code == "TL204"]
    assert not missing, res.report()


def test_any_trip_keeps_which_loops_were_left():
    vec = (("outer", "rel", 3), ("inner", "xrelge", 5), ("prev", "habs", 1))
    assert copies._any_trip(vec) == (("outer", "free", 0), ("inner", "xfree", 0), ("prev", "hfree", 0))
