"""Lit-style tests of the uniformity dump (`tolk-lint check --dump uniformity`).

Each file under ``fixtures/analysis/uniformity`` carries ``CHECK-LABEL``,
``CHECK`` and ``CHECK-NOT`` comments, matched in order against the dump as
LLVM's FileCheck does (a small subset: substrings, in order; ``CHECK-NOT``
forbids a substring between the previous match and the next one or the end
of the label's section). Values are named ``%uni_*`` / ``%div_*`` so one
``CHECK-NOT: DIVERGENT: %uni_`` guards every uniform value.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tolk_lint.analysis.uniform import dump_uniformity, uniformity
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import parse, prepare

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "analysis" / "uniformity"
DIRECTIVE = re.compile(r"(?://|#)\s*(CHECK(?:-LABEL|-NOT)?):\s?(.*)$")


def filecheck(text: str, checks: list[tuple[str, str]]) -> None:
    lines = text.splitlines()
    pos = 0
    pending_not: list[str] = []
    for kind, pattern in checks + [("END", "")]:
        if kind == "CHECK-NOT":
            pending_not.append(pattern)
            continue
        if kind == "END":
            end = len(lines)
        else:
            found = next((i for i in range(pos, len(lines)) if pattern in lines[i]), None)
            assert found is not None, f"{kind}: {pattern!r} not found after line {pos + 1} of:\n{text}"
            end = found
        for bad in pending_not:
            hit = next((lines[i] for i in range(pos, end) if bad in lines[i]), None)
            assert hit is None, f"CHECK-NOT: {bad!r} matched {hit!r} in:\n{text}"
        pending_not = []
        pos = end + 1 if kind != "END" else end


def checks_of(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        m = DIRECTIVE.search(line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return out


@pytest.mark.parametrize("path", sorted(ROOT.glob("*.ptx")) + sorted(ROOT.glob("*.py")), ids=lambda p: p.name)
def test_uniformity_dump(path: Path):
    module = parse(path.read_text(), str(path))
    prepare(module, DEFAULT_SETTINGS)
    assert module.kernels, module.diagnostics
    dump = "".join(dump_uniformity(uniformity(k, module, DEFAULT_SETTINGS)) for k in module.kernels)
    # only the workgroup section is checked: cut the warp section of each kernel
    sections = re.split(r"(?m)^(?=uniformity of kernel)", dump)
    workgroup = "".join(s for s in sections if s and "(workgroup)" in s.splitlines()[0])
    filecheck(workgroup, checks_of(path))


def test_filecheck_catches_a_forbidden_value():
    with pytest.raises(AssertionError):
        filecheck("uniformity of kernel 'k' (workgroup):\nDIVERGENT: %uni_x\n",
                  [("CHECK-LABEL", "uniformity of kernel 'k'"), ("CHECK-NOT", "DIVERGENT: %uni_")])
    with pytest.raises(AssertionError):
        filecheck("DIVERGENT: %div_a\n", [("CHECK", "DIVERGENT: %div_b")])
