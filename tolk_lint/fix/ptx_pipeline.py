"""The PTX pipeline rewrite: a loop that stages its tiles synchronously
becomes a two-stage ``cp.async`` pipeline in Form A.

    prologue:   issue tile 0 into slot 0; commit
    trip k:     cp.async.wait_group 0; bar.sync      (the loop's own barrier)
                if trip k + 1 runs: issue tile k + 1 into slot (k + 1) mod 2
                commit                               (every trip, empty on the last)
                compute on slot k mod 2              (the reads, moved to that slot)
    after:      cp.async.wait_group 0                (before anything reuses the memory)

`rewrite(text, kernel, copies, uniform_exit)` returns the `Rewrite` (the
new text and its `LineEdits`), or raises `NotFixableError`. What changes,
and nothing else does (`plan`, `slices`, `registers` do the parts):

- each staged ``.shared`` array is declared twice as long, aligned to at
  least its copy size; slot 1 starts one (aligned) stage after slot 0;
- each copy's ``ld.global`` + ``st.shared`` goes; ``cp.async.ca`` (4 or 8
  bytes) or ``cp.async.cg`` (16 bytes) takes its place, before the loop for
  tile 0 and after the barrier for tile k + 1, with the addresses that trip
  computes (`Materializer`), a generic source through ``cvta.to.global``,
  and, for a guarded copy, a zero-fill size (``selp`` 0 or N) and a source
  clamped to the array's first element when out of range;
- each read of a staged array adds the slot's offset to its address;
- a trip counter, the slot offsets and the clones live in fresh registers,
  declared beside the kernel's; the new instructions carry the ``.loc`` of
  the copy they replace, and the line after them gets its own back;
- the barrier that ended the trip, which only kept the next trip's copies
  off a tile still being read, goes (Form A's barrier does that) when the
  loop touches no other shared memory;
- ``.version`` is raised to 7.0 if lower (cp.async needs it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tolk_lint.fix.outcome import NotFixableError
from tolk_lint.fix.ptx_edits import LineEdits
from tolk_lint.fix.ptx_plan import CopyPlan, Plan, plan_pipeline
from tolk_lint.fix.ptx_registers import RegisterPool
from tolk_lint.fix.ptx_slices import CUR, NEXT, TRIP0, Materializer, Point
from tolk_lint.fix.ptx_text import KernelText, Stmt, TextError
from tolk_lint.ir.nodes import Kernel, type_bits

STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static .shared a block may declare


@dataclass
class Rewrite:
    text: str
    edits: LineEdits
    plan: Plan
    shared_bytes: int  # static shared memory of the kernel after the rewrite
    notes: list[str] = field(default_factory=list)


def rewrite(text: str, kernel: Kernel, copies: list, uniform_exit: bool, drop_trailing_barrier: bool = True
            ) -> Rewrite:  # fmt: skip
    try:
        kt = KernelText.parse(text, kernel.name)
        plan = plan_pipeline(kt, kernel, copies, uniform_exit)
        if not drop_trailing_barrier:
            plan.trailing_barrier = None
        return _Writer(kt, plan).write()
    except TextError as e:
        raise NotFixableError(str(e)) from None


class _Writer:
    def __init__(self, kt: KernelText, plan: Plan):
        self.kt = kt
        self.plan = plan
        self.pool = RegisterPool(kt.text)
        self.edits = LineEdits(kt.text)
        self.labels = 0

    def write(self) -> Rewrite:
        plan = self.plan
        shared = self._double_arrays()
        self.counter = self.pool.fresh("b32")
        self._prologue()
        self._trip()
        self._reads()
        for cp in plan.copies:
            self.edits.delete(cp.load.line)
            self.edits.delete(cp.store.line)
        if plan.trailing_barrier is not None:
            self.edits.delete(plan.trailing_barrier.line)
        self._drain()
        version = self._version()
        self._declare_registers()
        last = max(st.line for st in self.kt.stmts)
        stray = [n for n in self.edits.changed_lines() if n != version and not self.kt.func.line <= n <= last]
        if stray:  # never: a fix touches only the kernel its proof covers
            raise NotFixableError(f"the rewrite would change line {stray[0]}, outside `{plan.kernel}`")
        return Rewrite(self.edits.apply(), self.edits, plan, shared)

    # -- declarations ------------------------------------------------------------------------------

    def _double_arrays(self) -> int:
        kt = self.kt
        total = 0
        for s in kt.stmts:
            if s.kind == "V" and s.decl.space == "shared" and s.decl.shape and s.decl.shape[0]:
                bp = self.plan.buffers.get(s.decl.name)
                elem = max(1, type_bits(s.decl.dtype) // 8)
                total += 2 * bp.slot_bytes if bp else elem * s.decl.shape[0]
        for item in kt.file.items:  # module-level .shared arrays count too
            if type(item).__name__ == "VarDecl" and item.space == "shared" and item.shape and item.shape[0]:
                total += max(1, type_bits(item.dtype) // 8) * item.shape[0]
        if total > STATIC_SHARED_LIMIT:
            raise NotFixableError(f"two stages need {total} bytes of static shared memory, more than the "
                                  f"{STATIC_SHARED_LIMIT} bytes a block may declare (TL303)")  # fmt: skip
        for bp in self.plan.buffers.values():
            d = bp.decl.decl
            line = d.line
            old = kt.line_text(line)
            elem = max(1, type_bits(d.dtype) // 8)
            if (2 * bp.slot_bytes) % elem:
                raise NotFixableError(f"`{bp.display}` cannot be doubled in whole {d.dtype} elements")
            new, n = re.subn(rf"({re.escape(d.name)}\s*)\[\s*\d+\s*\]", rf"\g<1>[{2 * bp.slot_bytes // elem}]", old)
            if n != 1:
                raise NotFixableError(f"the declaration of `{bp.display}` at line {line} is not `name[N]`")
            if re.search(r"\.align\s+\d+", new):
                new = re.sub(r"\.align\s+\d+", f".align {bp.align}", new, count=1)
            else:
                new = new.replace(".shared", f".shared .align {bp.align}", 1)
            self.edits.replace(line, new)
        return total

    def _declare_registers(self) -> None:
        kt = self.kt
        decls = self.pool.declarations()
        first = next((s.line for s in kt.stmts if s.line > 0), None)
        if first is None:
            raise NotFixableError("the kernel's body is empty")
        reg_lines = [n for n in range(kt.func.line, first) if re.match(r"\s*\.reg\b", kt.line_text(n))]
        if reg_lines:
            self.edits.insert_after(reg_lines[-1], decls)
        else:
            self.edits.insert_before(first, decls)

    def _version(self) -> int | None:
        """Raise ``.version`` to 7.0 where it is lower; its line."""
        kt = self.kt
        for n in range(1, len(kt.line_starts) + 1):
            m = re.match(r"(\s*\.version\s+)(\d+)\.(\d+)", kt.line_text(n))
            if m:
                if (int(m.group(2)), int(m.group(3))) < (7, 0):
                    self.edits.replace(n, kt.line_text(n)[: m.start(2)] + "7.0" + kt.line_text(n)[m.end(3) :])
                return n
        return None

    # -- the schedule ------------------------------------------------------------------------------

    def _loc(self, index: int) -> list[str]:
        """The ``.loc`` line in effect at statement ``index``, as a list of zero or one line."""
        s = self.kt.loc_before(index)
        return [self.kt.line_text(s.loc_line)] if s is not None else []

    def _prologue(self) -> None:
        kt, plan = self.kt, self.plan
        pre = plan.preheader
        instrs = pre.instrs(kt)
        term = instrs[-1] if instrs and instrs[-1].opcode.startswith("bra") else None
        m = Materializer(kt, plan.loop, plan.header.index, plan.latch.index, Point(pre.last), self.pool)
        self.bases = {}
        for cp in plan.copies:  # the arrays' first elements: where an out-of-range copy reads from
            if cp.guard is not None:
                self._base(cp, m.lines)
        run = None
        if plan.exiting is not plan.latch:  # a loop tested at the top may run no trip at all
            run = m.value(plan.exit_branch.guard[1], plan.exit_branch.index, TRIP0)
        skip = self._label() if run is not None else None
        if run is not None:
            m.lines.append(f"\t@{'!' if plan.stays_when else ''}{run} bra \t{skip};")
        self.aligned = self._chunks_aligned(m) if any(cp.chunked for cp in plan.copies) else None
        for cp in plan.copies:
            self._issue(m, cp, TRIP0, None)
        if skip:
            m.lines.append(f"{skip}:")
        m.lines.append("\tcp.async.commit_group;")
        m.lines.append(f"\tmov.u32 \t{self.counter}, -1;")
        h = kt.stmts[plan.header.first]  # the header's label
        if term is not None:
            self.edits.insert_before(term.line, m.lines + self._loc(term.index))
        else:
            self.edits.insert_before(h.line, m.lines + self._loc(h.index))
        # the header counts the trips
        self.edits.insert_after(h.line, [f"\tadd.s32 \t{self.counter}, {self.counter}, 1;"])

    def _trip(self) -> None:
        kt, plan = self.kt, self.plan
        bar = plan.barrier
        self.edits.insert_before(bar.line, ["\tcp.async.wait_group 0;"])
        m = Materializer(kt, plan.loop, plan.header.index, plan.latch.index, Point(bar.index), self.pool)
        parity = self.pool.fresh("b32")
        nxt = self.pool.fresh("b32")
        m.lines += [f"\tand.b32 \t{parity}, {self.counter}, 1;",
                    f"\tadd.s32 \t{nxt}, {self.counter}, 1;",
                    f"\tand.b32 \t{nxt}, {nxt}, 1;"]  # fmt: skip
        self.cur_off: dict[str, dict[int, str]] = {}
        self.next_off: dict[str, dict[int, str]] = {}
        by_size: dict[int, tuple[dict, dict]] = {}
        for name, bp in plan.buffers.items():
            if bp.slot_bytes not in by_size:
                by_size[bp.slot_bytes] = ({32: self._scaled(m.lines, parity, bp.slot_bytes)},
                                          {32: self._scaled(m.lines, nxt, bp.slot_bytes)})  # fmt: skip
            self.cur_off[name], self.next_off[name] = by_size[bp.slot_bytes]
        mode = CUR if plan.exiting is plan.latch else NEXT
        run = m.value(plan.exit_branch.guard[1], plan.exit_branch.index, mode)
        skip = self._label()
        m.lines.append(f"\t@{'!' if plan.stays_when else ''}{run} bra \t{skip};")
        for cp in plan.copies:
            self._issue(m, cp, NEXT, self.next_off[cp.buffer])
        m.lines.append(f"{skip}:")
        m.lines.append("\tcp.async.commit_group;")
        self.trip_lines = m.lines
        self.trip_point = bar

    def _scaled(self, lines: list[str], parity: str, slot: int) -> str:
        r = self.pool.fresh("b32")
        if slot & (slot - 1) == 0:
            lines.append(f"\tshl.b32 \t{r}, {parity}, {slot.bit_length() - 1};")
        else:
            lines.append(f"\tmul.lo.s32 \t{r}, {parity}, {slot};")
        return r

    def _offset(self, offs: dict[int, str], bits: int, lines: list[str]) -> str:
        if bits not in offs:
            r = self.pool.fresh("b64")
            lines.append(f"\tcvt.u64.u32 \t{r}, {offs[32]};")
            offs[bits] = r
        return offs[bits]

    def _bits(self, reg: str) -> int:
        typ = self.pool.type_of(reg) or self.kt.reg_type(reg) or "b32"
        return 64 if typ.endswith("64") else 32

    def _label(self) -> str:
        while True:
            name = f"$L__tolk_{self.labels}"
            self.labels += 1
            if self.kt.label_index(name) is None:
                return name

    def _base(self, cp: CopyPlan, lines: list[str]) -> str:
        if cp.base_param is None:
            raise NotFixableError(f"the guarded copy at line {cp.line} reads through no single pointer "
                                  "parameter, so there is no safe address to read from when out of range")  # fmt: skip
        got = self.bases.get(cp.base_param)
        if got is None:
            p = self.pool.fresh("b64")
            g = self.pool.fresh("b64")
            lines += [f"\tld.param.u64 \t{p}, [{cp.base_param}];", f"\tcvta.to.global.u64 \t{g}, {p};"]
            got = self.bases[cp.base_param] = g
        return got

    def _issue(self, m: Materializer, cp: CopyPlan, trip: str, offs: dict[int, str] | None) -> None:
        """One cp.async for ``cp`` in ``trip``, into the slot ``offs`` says (None: slot 0)."""
        m.lines += self._loc(cp.store.index)
        src_op = next(o for o in cp.load.operands if o[0] == "m")
        dst_op = cp.store.operands[0]
        if dst_op[0] != "m":
            raise NotFixableError(f"the store at line {cp.line} has no address operand")
        src, src_off = self._address(m, src_op, cp.load, trip)
        dst, dst_off = self._address(m, dst_op, cp.store, trip)
        lead = self._leader(m, dst, dst_off) if cp.chunked else ""
        if offs is not None:
            bits = self._bits(dst)
            shifted = self.pool.fresh("b64" if bits == 64 else "b32")
            m.lines.append(f"\tadd.s{bits} \t{shifted}, {dst}, {self._offset(offs, bits, m.lines)};")
            dst = shifted
        if cp.generic_source:
            g = self.pool.fresh("b64")
            m.lines.append(f"\tcvta.to.global.u64 \t{g}, {src};")
            src = g
        size = ""
        if cp.guard is not None:
            p = m.value(cp.guard.pred, cp.guard.at, trip)
            inside, outside = (str(cp.nbytes), "0") if cp.guard.in_range_when else ("0", str(cp.nbytes))
            n = self.pool.fresh("b32")
            safe = self.pool.fresh("b64")
            base = self._base(cp, m.lines)
            if src_off:
                moved = self.pool.fresh("b64")
                m.lines.append(f"\tadd.s64 \t{moved}, {src}, {src_off};")
                src, src_off = moved, 0
            first, second = (src, base) if cp.guard.in_range_when else (base, src)
            m.lines += [f"\tselp.b32 \t{n}, {inside}, {outside}, {p};",
                        f"\tselp.b64 \t{safe}, {first}, {second}, {p};"]  # fmt: skip
            src, size = safe, f", {n}"
        if cp.chunked:
            self._chunk(m, cp, dst, dst_off, src, src_off, lead)
            return
        kind = "cg" if cp.nbytes == 16 else "ca"
        m.lines.append(f"\tcp.async.{kind}.shared.global \t[{_at(dst, dst_off)}], [{_at(src, src_off)}], "
                       f"{cp.nbytes}{size};")  # fmt: skip

    def _leader(self, m: Materializer, dst: str, off: int) -> str:
        """A predicate: this copy's shared address starts a 16-byte chunk."""
        bits = self._bits(dst)
        low, lead = self.pool.fresh(f"b{bits}"), self.pool.fresh("pred")
        m.lines += [f"\tand.b{bits} \t{low}, {dst}, 15;", f"\tsetp.eq.u{bits} \t{lead}, {low}, {(-off) % 16};"]
        return lead

    def _chunks_aligned(self, m: Materializer) -> str:
        """Before the loop: whether every leader's global address is 16-byte
        aligned at trip 0 (and so at every trip: the stride is a multiple of
        16), agreed by the whole block with ``bar.red.and.pred``."""
        ok = None
        for cp in self.plan.copies:
            if not cp.chunked:
                continue
            src, src_off = self._address(m, next(o for o in cp.load.operands if o[0] == "m"), cp.load, TRIP0)
            dst, dst_off = self._address(m, cp.store.operands[0], cp.store, TRIP0)
            lead = self._leader(m, dst, dst_off)
            low, fine, mine = self.pool.fresh("b64"), self.pool.fresh("pred"), self.pool.fresh("pred")
            m.lines += [f"\tand.b64 \t{low}, {src}, 15;", f"\tsetp.eq.u64 \t{fine}, {low}, {(-src_off) % 16};",
                        f"\tnot.pred \t{mine}, {lead};", f"\tor.pred \t{mine}, {mine}, {fine};"]  # fmt: skip
            if ok is None:
                ok = mine
            else:
                m.lines.append(f"\tand.pred \t{ok}, {ok}, {mine};")
        agreed = self.pool.fresh("pred")
        m.lines.append(f"\tbar.red.and.pred \t{agreed}, 0, {ok};")
        return agreed

    def _chunk(self, m: Materializer, cp: CopyPlan, dst: str, dst_off: int, src: str, src_off: int, lead: str
               ) -> None:  # fmt: skip
        """Aligned: the leader copies its 16-byte chunk; otherwise every copy is the original's, synchronous."""
        slow, skip, done = self._label(), self._label(), self._label()
        value = self.pool.fresh(self.kt.reg_type(_value_regs(cp.load)[0]) or "b16")
        m.lines += [f"\t@!{self.aligned} bra \t{slow};", f"\t@!{lead} bra \t{skip};",
                    f"\tcp.async.cg.shared.global \t[{_at(dst, dst_off)}], [{_at(src, src_off)}], 16;",
                    f"{skip}:", f"\tbra.uni \t{done};", f"{slow}:",
                    f"\t{cp.load.opcode} \t{value}, [{_at(src, src_off)}];",
                    f"\t{cp.store.opcode} \t[{_at(dst, dst_off)}], {value};", f"{done}:"]  # fmt: skip

    def _address(self, m: Materializer, op, s: Stmt, trip: str) -> tuple[str, int]:
        base, off = op[1], op[2] or 0
        if base is None or base[0] != "r":
            raise NotFixableError(f"the address at line {s.line} is not a register or a symbol plus an offset")
        name = base[1]
        if not name.startswith("%") and s.opcode.startswith("st."):  # a shared symbol: its address
            r = self.pool.fresh("b32")
            m.lines.append(f"\tmov.u32 \t{r}, {name};")
            return r, off
        return m.value(name, s.index, trip), off

    def _reads(self) -> None:
        kt, plan = self.kt, self.plan
        hoisted: dict[tuple[str, str], str] = {}
        after_commit: list[str] = []
        for name, bp in plan.buffers.items():
            for r in bp.reads:
                op = next(o for o in r.operands if o[0] == "m")
                base = op[1]
                if base is None or base[0] != "r":
                    raise NotFixableError(f"the read at line {r.line} has an address the rewrite cannot move")
                reg = base[1]
                bits = self._bits(reg) if reg.startswith("%") else 32
                invariant = not reg.startswith("%") or all(
                    d < 0 or kt.block_of[d] not in plan.loop for d in kt.reaching(reg, r.index)
                )
                key = (reg, name)
                if invariant and key in hoisted:
                    moved = hoisted[key]
                else:
                    moved = self.pool.fresh("b64" if bits == 64 else "b32")
                    lines = after_commit if invariant else []
                    src = reg
                    if not reg.startswith("%"):
                        src = self.pool.fresh("b32")
                        lines.append(f"\tmov.u32 \t{src}, {reg};")
                    off = self._offset(self.cur_off[name], bits, after_commit)
                    lines.append(f"\tadd.s{bits} \t{moved}, {src}, {off};")
                    if invariant:
                        hoisted[key] = moved
                    else:
                        self.edits.insert_before(r.line, lines)
                text = self.edits.current(r.line)
                new, n = re.subn(rf"\[\s*{re.escape(reg)}(?![\w$])", f"[{moved}", text)
                if n != 1:
                    raise NotFixableError(f"cannot find the address of the read at line {r.line}")
                self.edits.replace(r.line, new)
        lines = self.trip_lines + after_commit + self._loc(self.trip_point.index + 1)
        self.edits.insert_after(self.trip_point.line, lines)

    def _drain(self) -> None:
        kt, plan = self.kt, self.plan
        target = plan.exit_target
        first = kt.stmts[target.first]
        if first.kind == "L":
            self.edits.insert_after(first.line, ["\tcp.async.wait_group 0;"])
        else:
            self.edits.insert_before(first.line, ["\tcp.async.wait_group 0;"])


def _value_regs(ld: Stmt) -> list[str]:
    o = ld.operands[0]
    return [o[1]] if o[0] == "r" else [x[1] for x in o[1] if x[0] == "r"]


def _at(reg: str, off: int) -> str:
    if not off:
        return reg
    return f"{reg}+{off}" if off > 0 else f"{reg}-{-off}"


def pipeline_fix(ctx, copies: list):
    """TL302's fix for the loop of ``copies`` in a PTX kernel: the rewrite,
    proved on its own text (``ctx.relint``), or the reason there is none."""
    from tolk_lint import budget
    from tolk_lint.budget import BudgetExceeded
    from tolk_lint.diagnostics import Applicability, Fix
    from tolk_lint.fix.outcome import FIX_TITLE, NotFixable
    from tolk_lint.fix.proof import PROOF_SELECT, problems

    if ctx.relint is None:
        return NotFixable("the rewrite is not proved here")
    module, kernel = ctx.module, ctx.kernel
    uniform_exit = not ctx.uniformity().workgroup.is_divergent_loop(copies[0].loop)
    staged = {tc.buffer for tc in copies}
    unsupported = sum(1 for d in module.diagnostics if d.code == "TL002" and d.kernel in (kernel.name, None))
    why = ""
    for drop in (True, False):
        try:
            rw = rewrite(module.source, kernel, copies, uniform_exit, drop_trailing_barrier=drop)
        except NotFixableError as e:
            return NotFixable(str(e))
        if drop and rw.plan.trailing_barrier is None:
            drop = False
        try:
            found = problems(ctx.relint(rw.text, PROOF_SELECT, kernel.name), kernel.name, staged, unsupported)
        except BudgetExceeded as e:
            budget.check("proving the cp.async pipeline rewrite")  # the lint's own budget: stop it there
            return NotFixable(f"the static proof did not finish ({e.reason}); no fix is offered unproved")
        if not found:
            return Fix(FIX_TITLE, rw.edits.to_edits(module.path), Applicability.UNSAFE)
        why = found[0]
        if not drop:
            break
    return NotFixable(f"the rewrite does not pass the static proof: {why}")
