"""Every rule's VALID and INVALID examples run through the fixture harness, and
the catalog's own conventions (codes, module names, documentation headings)."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, pending_prefixes
from tolk_lint.rules import ALL_RULES

from tolk_lint.registry import Rule
from tolk_lint.testing import collect_fixtures, language_of, parse_expectations, run_example

REQUIRED_HEADINGS = ("## What it does", "## Why is this bad?", "## Fix safety")


def _examples():
    out = []
    for rule in ALL_RULES:
        for kind in ("VALID", "INVALID"):
            for i, ex in enumerate(getattr(rule, kind)):
                marks = [pytest.mark.nvcc] if ex.language == "cuda" else []
                out.append(pytest.param(rule, kind, i, ex, marks=marks, id=f"{rule.code}-{kind}-{i}"))
    return out


@pytest.mark.parametrize(("rule", "kind", "index", "example"), _examples())
def test_example(rule: type[Rule], kind: str, index: int, example):
    exp = parse_expectations(example.source, example.language)
    if kind == "VALID":
        assert not exp.expected, f"{rule.code} VALID[{index}] carries `expect:` comments"
    else:
        assert rule.code in exp.codes, f"{rule.code} INVALID[{index}] expects no {rule.code}"
    run_example(example, name=f"{rule.code.lower()}_{kind.lower()}_{index}")


def test_registry_is_not_empty():
    assert ALL_RULES
    assert all(isinstance(r, type) and issubclass(r, Rule) for r in ALL_RULES)


def test_codes_are_unique_and_sorted():
    codes = [r.code for r in ALL_RULES]
    assert len(codes) == len(set(codes)), f"duplicate codes: {sorted(c for c in codes if codes.count(c) > 1)}"
    assert codes == sorted(codes)
    names = [r.name for r in ALL_RULES]
    assert len(names) == len(set(names)), "duplicate rule names"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_code_name_and_module(rule: type[Rule]):
    assert re.fullmatch(r"TL\d{3}", rule.code), rule.code
    assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", rule.name), (
        f"{rule.code}: name `{rule.name}` is not kebab-case"
    )
    module = rule.__module__.rsplit(".", 1)[-1]
    want = f"tl{rule.code[2:]}_{rule.name.replace('-', '_')}"
    assert module == want, f"{rule.code} lives in {module}.py; expected {want}.py"
    assert rule.__module__.startswith("tolk_lint.rules."), rule.__module__


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_documentation(rule: type[Rule]):
    doc = rule.doc()
    first = doc.splitlines()[0] if doc else ""
    assert first == f"{rule.code} {rule.name}", (
        f"{rule.code}: docstring must start with `{rule.code} {rule.name}`"
    )
    headings = set(re.findall(r"^## .+$", doc, flags=re.MULTILINE))
    required = REQUIRED_HEADINGS + (() if rule.engine_rule else ("## Example",))
    missing = [h for h in required if h not in headings]
    assert not missing, f"{rule.code}: docstring lacks {missing}"
    assert rule.summary() and rule.summary() != rule.name, f"{rule.code}: no one-line summary after the title"


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if not r.engine_rule], ids=lambda r: r.code)
def test_rule_has_invalid_examples(rule: type[Rule]):
    assert rule.INVALID, f"{rule.code} has no INVALID example (engine rules TL001/TL002/TL004 are exempt)"
    assert rule.VALID, f"{rule.code} has no VALID example"


def test_engine_rules():
    engine = {r.code for r in ALL_RULES if r.engine_rule}
    assert {"TL001", "TL002"} <= engine


def test_fixtures_name_only_known_codes():
    codes = {r.code for r in ALL_RULES}
    pend = pending_prefixes()
    unknown = []
    for path in collect_fixtures(FIXTURES):
        exp = parse_expectations(path.read_text(encoding="utf-8"), language_of(path))
        for e in exp.expected:
            if e.code not in codes and not any(e.code.startswith(p) for p in pend):
                unknown.append(f"{path.relative_to(FIXTURES)}:{e.line}: {e.code}")
    assert not unknown, "fixtures name codes no rule has: " + ", ".join(unknown)


def test_example_languages_are_known():
    for rule in ALL_RULES:
        for ex in list(rule.VALID) + list(rule.INVALID):
            assert ex.language in ("ptx", "python", "cuda"), f"{rule.code}: example language {ex.language}"
