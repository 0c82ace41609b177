"""The user's view of what the staging analysis found: the source line of an
instruction and of a loop, a loop's constant trip count, and a shared
buffer's name as the user wrote it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tolk_lint.ir.nodes import Instr
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.ir.cfg import Loop

O = Opcode


def loop_line(lp: Loop) -> int | None:
    """The user's line of a loop: its exit test (the ``for`` line)."""
    cands = [ex.branch for ex in lp.exits] + [b.terminator for b in lp.latches] + list(lp.header.instrs)
    for ins in cands:
        line = source_line(ins) if ins is not None else None
        if line:
            return line
    return None


def display_name(name: str) -> str:
    """A shared buffer's name as the user wrote it: nvcc names a function's
    ``__shared__`` array ``_ZZ<n><function>E<n><name>`` (Itanium mangling of
    a local static)."""
    mt = re.match(r"_ZZ(\d+)", name)
    if not mt:
        return name
    i = mt.end() + int(mt.group(1))
    rest = name[i:]
    m2 = re.match(r"E(\d+)", rest)
    if not m2:
        return name
    n = int(m2.group(1))
    return rest[m2.end() : m2.end() + n] or name


def source_line(ins: Instr | None) -> int | None:
    """The user's line an instruction came from: the outermost ``.loc``
    origin (following ``inlined_at``), else its line in the linted file."""
    if ins is None:
        return None
    if ins.origin is not None:
        return ins.origin.outermost().line
    return ins.span.line if ins.span else None


def loop_trips(lp: Loop) -> int | None:
    """The trip count of a loop with a constant start, step and bound."""
    for ex in lp.exits:
        iv, bound = ex.iv, ex.bound
        if iv is None or bound is None or bound.defn is None or bound.defn.op is not O.CONST:
            continue
        s = iv.start.defn
        if s is None or s.op is not O.CONST:
            continue
        start, stop, step = s.attrs.get("value"), bound.defn.attrs.get("value"), iv.step
        if not all(isinstance(x, int) for x in (start, stop)) or not step:
            continue
        cmp = ex.cmp
        if ex.exits_when:  # the exit test: invert to the stay test
            cmp = {"ge": "lt", "gt": "le", "le": "gt", "lt": "ge", "eq": "ne", "ne": "eq",
                   "hs": "lo", "hi": "ls", "ls": "hi", "lo": "hs"}.get(cmp or "", cmp)  # fmt: skip
        first = start + step if ex.uses_next else start
        span = {"lt": stop - first, "lo": stop - first, "le": stop - first + 1, "ls": stop - first + 1,
                "ne": stop - first, "gt": first - stop, "hi": first - stop, "ge": first - stop + 1,
                "hs": first - stop + 1}.get(cmp or "")  # fmt: skip
        if span is None:
            continue
        n = max(0, -(-span // abs(step)))
        return 1 + n if ex.uses_next else n
    return None
