"""Values of another trip, computed early: the heart of a pipeline rewrite.

A pipelined loop issues the copy of tile k + 1 while trip k computes, so
it needs, at a point inside trip k, the addresses (and guards) the
original copy computes at trip k + 1; and before the loop, those of
trip 0. `Materializer.value(reg, at)` gives a register that holds, at the
insertion point, the value ``reg`` has when statement ``at`` reads it in
the wanted trip, emitting clones of the instructions that compute it:

- a register no write inside the loop reaches is loop-invariant: itself;
- one written once before ``at`` in the same trip: that instruction again,
  its operands taken in the same trip (``add.s64 %rd59, %rd57, %rd58``
  becomes ``add.s64 %tolk_b64_0, %rd57, %tolk_b64_1``);
- one carried around the loop (``add.s64 %rd18, %rd18, 64`` at the
  latch): in trip k + 1 it holds what the latch of trip k writes, so the
  latch's instruction again, with trip k's operands; in trip 0, what it
  holds when the loop is entered.

Only pure instructions are cloned (arithmetic, moves, conversions,
comparisons, selects, parameter loads); anything else, a write under a
predicate, a register written on some paths only, or one that is
overwritten before the insertion point raises `TextError` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from tolk_lint.fix.ptx_registers import RegisterPool
from tolk_lint.fix.ptx_text import ENTRY, KernelText, Stmt, TextError, registers_in, rename_registers

TRIP0, CUR, NEXT = "trip 0", "this trip", "the next trip"

_PURE = {
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max", "popc",
    "clz", "bfind", "brev", "bfe", "bfi", "and", "or", "xor", "not", "cnot", "lop3", "shl", "shr", "shf",
    "prmt", "cvt", "cvta", "mov", "setp", "selp", "slct", "fma", "copysign", "testp",
}  # fmt: skip
# Special registers whose value is the same whenever a thread reads it.
_STABLE_SPECIALS = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
                    "%gridid", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
                    "%cluster_ctarank", "%cluster_nctarank", "%dynamic_smem_size", "%total_smem_size",
                    "%lanemask")  # fmt: skip


@dataclass(frozen=True)
class Point:
    """Where new instructions go: before statement ``index`` (which must not
    write a register the materializer reads)."""

    index: int


class Materializer:
    """Computes values of one trip (`TRIP0`, `CUR` or `NEXT`) at one point.

    ``loop`` is the set of the loop's blocks, ``header`` its header block
    and ``latch`` its one latch; the point is inside the loop for `CUR` and
    `NEXT`, and at the end of the preheader for `TRIP0`. Emitted lines
    accumulate in ``lines``."""

    def __init__(self, kt: KernelText, loop: set[int], header: int, latch: int, point: Point, pool: RegisterPool):
        self.kt = kt
        self.loop = loop
        self.header = header
        self.latch = latch
        self.point = point
        self.pool = pool
        self.lines: list[str] = []
        self._memo: dict[tuple[int, str], str] = {}
        hb = kt.blocks[header]
        self._header_first = hb.first
        lb = kt.blocks[latch]
        self._latch_end = lb.last  # the back edge leaves after the latch's last statement

    def value(self, reg: str, at: int, trip: str) -> str:
        """A register (or the original one) holding ``reg`` as statement ``at`` reads it in ``trip``."""
        if not reg.startswith("%"):
            return reg
        if reg.startswith(_STABLE_SPECIALS):
            return reg
        if reg.startswith(("%clock", "%globaltimer", "%pm", "%envreg")):
            raise TextError(f"the copy's address reads `{reg}`, which changes from one read to the next")
        kt = self.kt
        defs = kt.reaching(reg, at)
        inside = {d for d in defs if d != ENTRY and kt.block_of[d] in self.loop}
        if not inside:  # loop-invariant: the register holds it anywhere in the loop and at its entry
            return reg
        if len(defs) == 1:  # one write, before `at` in the same trip
            (d,) = defs
            if trip == CUR and self._reaching_at_point(reg) == defs:
                return reg
            return self._clone(kt.stmts[d], trip)
        # carried around the loop: what reaches `at` is what reaches the header
        if defs != kt.reaching(reg, self._header_first):
            raise TextError(f"`{reg}` is written on some paths of the trip only")
        if trip == TRIP0:  # what enters the loop: the register at the end of the preheader
            return reg
        if trip == CUR:
            if self._reaching_at_point(reg) != defs:
                raise TextError(f"`{reg}` is overwritten before the point where the next tile's copy is issued")
            return reg
        back = self._reaching_end_of_latch(reg)
        if len(back) != 1 or next(iter(back)) == ENTRY or kt.block_of[next(iter(back))] not in self.loop:
            raise TextError(f"`{reg}` is not written once on every trip")
        return self._clone(kt.stmts[next(iter(back))], CUR)

    # -- helpers -----------------------------------------------------------------------------------

    def _reaching_at_point(self, reg: str) -> frozenset[int]:
        return self.kt.reaching(reg, self.point.index)

    def _reaching_end_of_latch(self, reg: str) -> frozenset[int]:
        return self.kt.reaching_end(reg, self.latch)

    def _clone(self, s: Stmt, trip: str) -> str:
        key = (s.index, trip)
        got = self._memo.get(key)
        if got is not None:
            return got
        base = s.opcode.split(".")[0]
        pure = base in _PURE or s.opcode.startswith("ld.param")
        if not pure:
            raise TextError(f"the copy's address depends on `{s.opcode}` at line {s.line}, which is not pure arithmetic")
        if s.guard is not None:
            raise TextError(f"the copy's address is written under a predicate at line {s.line}")
        dests = s.dests()
        if len(dests) != 1:
            raise TextError(f"line {s.line} writes {len(dests)} registers; the rewrite clones single results only")
        typ = self.kt.reg_type(dests[0])
        if typ is None:
            raise TextError(f"the type of `{dests[0]}` is not declared")
        text = self.kt.instr_text(s)
        head, regs_text = _split_dest(text, dests[0])
        mapping = {}
        for r in dict.fromkeys(registers_in(regs_text)):
            mapping[r] = self.value(r, s.index, trip)
        fresh = self.pool.fresh(typ)
        self.lines.append("\t" + head.replace(dests[0], fresh, 1) + rename_registers(regs_text, mapping) + ";")
        self._memo[key] = fresh
        return fresh


def _split_dest(text: str, dest: str) -> tuple[str, str]:
    """Split an instruction's text after its destination register."""
    i = text.find(dest)
    if i < 0:
        raise TextError(f"cannot find `{dest}` in `{text}`")
    j = i + len(dest)
    return text[:j], text[j:]
