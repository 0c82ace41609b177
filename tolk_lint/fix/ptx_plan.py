"""Planning a PTX pipeline rewrite: what the loop, its copies and its reads
are in the text, and every reason the rewrite would not be exact.

`plan_pipeline(kt, kernel, copies, uniform_exit)` reads the tile copies the
staging analysis found (`TileCopy`: IR instructions, with their lines) back
in the kernel's text (`KernelText`) and returns a `Plan`, or raises
`NotFixableError` with the reason TL302 shows. The rewrite is exact only
when:

- the loop has one preheader, one latch and one exit, and its trip count
  is the same for every thread (the pipeline's barrier and waits are
  executed by all of them);
- each copy is one ``ld.global`` whose registers one ``st.shared`` stores
  unchanged, 4, 8 or 16 bytes (``cp.async`` copies nothing else); a
  guarded copy (a branch or predicate around the load, zero stored
  otherwise) becomes a zero-fill copy, and only zero can be filled;
- the staged array is read only after the loop's first barrier, and
  written only by the copies (no reader outside the loop sees the wrong
  slot);
- every shared access of the kernel names the array it touches, so none
  can reach a staged array unseen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tolk_lint.fix.outcome import NotFixableError
from tolk_lint.fix.ptx_chunks import regroup
from tolk_lint.fix.ptx_text import ENTRY, KernelText, Stmt, TBlock, TextError
from tolk_lint.ir.nodes import Kernel, pointer_params, type_bits
from tolk_lint.ir.opcodes import MEMORY_READS, MEMORY_WRITES, Opcode

O = Opcode
COPY_SIZES = (4, 8, 16)
_PURE_OPS = {"add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "cvt", "cvta", "mov", "setp", "selp",
             "mul24", "mad24", "min", "max", "neg", "not"}  # fmt: skip


@dataclass
class Guard:
    """A guarded copy: the load runs only when ``pred`` (read at statement
    ``at``) is ``in_range_when``; otherwise zero is stored."""

    pred: str
    at: int
    in_range_when: bool


@dataclass
class CopyPlan:
    buffer: str  # the PTX symbol
    load: Stmt
    store: Stmt
    nbytes: int
    guard: Guard | None = None
    generic_source: bool = False  # the load reads a generic address: cvta.to.global it
    base_param: str | None = None  # the pointer parameter the source lies in (for a clamped source)
    chunked: bool = False  # an element of a 16-byte run its leader copies (`ptx_chunks`)

    @property
    def line(self) -> int:
        return self.store.line


@dataclass
class BufferPlan:
    symbol: str
    display: str
    size: int  # bytes of one stage
    slot_bytes: int  # the distance between the two slots (size rounded up to the alignment)
    align: int  # the doubled array's alignment
    decl: Stmt
    reads: list[Stmt] = field(default_factory=list)


@dataclass
class Plan:
    kernel: str
    header: TBlock
    latch: TBlock
    preheader: TBlock
    exit_target: TBlock
    loop: set[int]
    exiting: TBlock  # the block whose branch leaves the loop (the header or the latch)
    exit_branch: Stmt
    stays_when: bool  # the exit branch stays in the loop when its predicate is this
    barrier: Stmt
    copies: list[CopyPlan]
    buffers: dict[str, BufferPlan]
    trailing_barrier: Stmt | None = None  # a barrier Form A makes redundant (removed)


def plan_pipeline(kt: KernelText, kernel: Kernel, copies: list, uniform_exit: bool) -> Plan:
    """The plan for pipelining the loop of ``copies`` (the `TileCopy`s of one loop)."""
    try:
        return _plan(kt, kernel, copies, uniform_exit)
    except TextError as e:
        raise NotFixableError(str(e)) from None


def _plan(kt: KernelText, kernel: Kernel, copies: list, uniform_exit: bool) -> Plan:
    lp = copies[0].loop
    header = kt.block_by_label(lp.header.name)
    if header is None:
        raise NotFixableError("the loop's header has no label in the text")
    loop, latches = kt.natural_loop(header.index)
    if len(latches) != 1:
        raise NotFixableError(f"the loop has {len(latches)} back edges; the rewrite handles loops with one")
    latch = kt.blocks[latches[0]]
    outside_preds = [p for p in header.preds if p not in loop]
    if len(outside_preds) != 1 or kt.blocks[outside_preds[0]].succs != [header.index]:
        raise NotFixableError("the loop is not entered from one block that leads only to it (no preheader)")
    preheader = kt.blocks[outside_preds[0]]
    exits = [(b, s) for b in sorted(loop) for s in kt.blocks[b].succs if s not in loop]
    if len(exits) != 1:
        raise NotFixableError(f"the loop has {len(exits)} exits; the rewrite handles loops with one")
    exiting, target = kt.blocks[exits[0][0]], kt.blocks[exits[0][1]]
    if exiting.index not in (header.index, latch.index):
        raise NotFixableError("the loop is left from the middle of its body, not from its header or latch")
    if not uniform_exit:
        raise NotFixableError("the loop's trip count varies between threads (TL102), so the pipeline's "
                              "barriers and waits would not be reached by all of them")  # fmt: skip
    branch = exiting.instrs(kt)[-1]
    if not branch.opcode.startswith("bra") or branch.guard is None:
        raise NotFixableError("the loop's exit is not a conditional branch")
    taken_stays = kt.block_by_label(branch.operands[0][1]).index in loop
    negated, _pred = branch.guard
    stays_when = taken_stays != negated

    barrier = _one_barrier(kt, copies)
    if not kt.dominates(kt.block_of[barrier.index], latch.index):
        raise NotFixableError("the barrier after the copies is not reached at every trip")
    for tc in copies:
        if tc.fills:  # an if/else pair of stores: the constant's store has no copy to become
            line = tc.fills[0].span.line if tc.fills[0].span else "?"
            raise NotFixableError(f"the edge of `{tc.buffer}` is filled by a store of its own (line {line}); the "
                                  "rewrite handles guarded copies whose load and constant meet in one store")
    plans = [_copy_plan(kt, kernel, tc, s) for tc in copies for s in tc.stores]
    for tc in copies:
        mine = [cp for cp in plans if cp.buffer == tc.symbol]
        if any(cp.chunked for cp in mine):
            if not all(cp.chunked and cp.nbytes == mine[0].nbytes for cp in mine):
                raise NotFixableError(f"`{tc.buffer}` is copied in elements of several sizes")
            regroup(kernel, [(s.args[1].defn, s) for s in tc.stores], mine[0].nbytes, tc.symbol)
    buffers = {tc.symbol: _buffer_plan(kt, kernel, tc, plans) for tc in copies}
    for cp in plans:
        if kt.block_of[cp.store.index] not in loop:
            raise NotFixableError(f"the copy at line {cp.line} is not inside the loop")
        if cp.store.index > barrier.index:
            raise NotFixableError(f"the copy at line {cp.line} comes after the loop's barrier")
    _check_accesses(kernel, copies)
    plan = Plan(kernel.name, header, latch, preheader, target, loop, exiting, branch, stays_when, barrier, plans,
                buffers)  # fmt: skip
    plan.trailing_barrier = _trailing_barrier(kt, plan, kernel, copies)
    return plan


def _one_barrier(kt: KernelText, copies: list) -> Stmt:
    lines = {tc.barrier.span.line for tc in copies if tc.barrier.span}
    if len(lines) != 1:
        raise NotFixableError("the staged arrays of the loop are published by different barriers")
    bar = kt.instr_at_line(lines.pop())
    if bar.guard is not None or not bar.opcode.startswith(("bar.sync", "barrier.sync", "bar", "barrier")):
        raise NotFixableError("the barrier after the copies is predicated or not a plain bar.sync")
    return bar


def _width(opcode: str) -> tuple[int, str]:
    """A ld/st opcode's vector length and element type."""
    parts = opcode.split(".")
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    return vec, parts[-1]


def _copy_plan(kt: KernelText, kernel: Kernel, tc, store_ir) -> CopyPlan:
    line = store_ir.span.line
    st = kt.instr_at_line(line)
    if not st.opcode.startswith("st.shared") and not st.opcode.startswith("st."):
        raise NotFixableError(f"line {line} is not a store to shared memory")
    vec, typ = _width(st.opcode)
    nbytes = vec * max(1, type_bits(typ) // 8)
    values = _value_regs(st.operands[1]) if len(st.operands) > 1 else []
    if st.guard is not None or len(values) != vec:
        raise NotFixableError(f"the store at line {line} is predicated or stores other than its registers")
    loads = {d for r in values for d in kt.reaching(r, st.index)}
    guard = None
    plain = [d for d in loads if d != ENTRY and kt.stmts[d].opcode.startswith("ld.")]
    if len(plain) != 1:
        raise NotFixableError(f"the value stored at line {line} does not come from one load")
    ld = kt.stmts[plain[0]]
    others = loads - {ld.index}
    if others:
        guard = _zero_guard(kt, ld, st, others, values)
    elif ld.guard is not None:
        raise NotFixableError(f"the load at line {ld.line} is predicated with no value stored otherwise")
    lvec, ltyp = _width(ld.opcode)
    lbytes = lvec * max(1, type_bits(ltyp) // 8)
    if lbytes != nbytes or _value_regs(ld.operands[0]) != values:
        raise NotFixableError(f"the copy at line {line} converts or reorders its values on the way "
                              f"({ld.opcode} -> {st.opcode}); cp.async moves bytes only")  # fmt: skip
    if ld.opcode.split(".")[1] in ("shared", "local", "const", "param"):
        raise NotFixableError(f"the load at line {ld.line} does not read global memory")
    chunked = nbytes in (1, 2)
    if chunked and guard is not None:
        raise NotFixableError(f"the guarded copy at line {line} copies {nbytes}-byte {typ} elements: a 16-byte "
                              "chunk of them would need a guard per element")  # fmt: skip
    if nbytes not in COPY_SIZES and not chunked:
        raise NotFixableError(f"each thread copies {nbytes} bytes at line {line} ({typ} elements); cp.async "
                              "copies 4, 8 or 16 bytes")  # fmt: skip
    return CopyPlan(tc.symbol, ld, st, nbytes, guard, generic_source=not ld.opcode.startswith("ld.global"),
                    base_param=_pointer_param(tc, store_ir), chunked=chunked)  # fmt: skip


def _value_regs(o) -> list[str]:
    if o[0] == "r":
        return [o[1]]
    if o[0] == "v":
        return [x[1] for x in o[1] if x[0] == "r"]
    return []


def _zero_guard(kt: KernelText, ld: Stmt, st: Stmt, others: set[int], values: list[str]) -> Guard:
    """The guard of a copy that stores zero when its load does not run."""
    if ENTRY in others:
        raise NotFixableError(f"the value stored at line {st.line} may be undefined")
    for d in others:
        if not _is_zero(kt, kt.stmts[d]):
            raise NotFixableError(f"the guarded copy at line {st.line} stores a non-zero value when the load "
                                  "does not run; cp.async can fill only with zeros")  # fmt: skip
    if ld.guard is not None:  # @p ld.global ... after a mov of zero
        negated, pred = ld.guard
        return Guard(pred, ld.index, not negated)
    lb = kt.blocks[kt.block_of[ld.index]]
    if len(lb.preds) != 1:
        raise NotFixableError(f"the load at line {ld.line} is reached from several places")
    gb = kt.blocks[lb.preds[0]]
    br = gb.instrs(kt)[-1] if gb.instrs(kt) else None
    if br is None or not br.opcode.startswith("bra") or br.guard is None:
        raise NotFixableError(f"the load at line {ld.line} is guarded by something other than a branch")
    for s in lb.instrs(kt):
        if s is ld or (s.opcode.startswith("bra") and s.guard is None):
            continue
        if s.guard is not None or not s.dests() or s.opcode.split(".")[0] not in _PURE_OPS:
            raise NotFixableError(f"the guarded block of line {ld.line} does more than compute an address and load")
    negated, pred = br.guard
    # the branch skips the load when taken
    return Guard(pred, br.index, negated)


def _is_zero(kt: KernelText, s: Stmt, depth: int = 0) -> bool:
    if not s.opcode.startswith("mov.") or s.guard is not None or len(s.operands) != 2 or depth > 8:
        return False
    src = s.operands[1]
    if src[0] == "i":
        return src[1] == 0
    if src[0] == "f":
        return src[1] == 0.0 and not str(src[1]).startswith("-") and _positive_zero(kt, s)
    if src[0] == "r" and src[1].startswith("%"):
        defs = kt.reaching(src[1], s.index)
        return bool(defs) and ENTRY not in defs and all(_is_zero(kt, kt.stmts[d], depth + 1) for d in defs)
    return False


def _positive_zero(kt: KernelText, s: Stmt) -> bool:
    """A float zero written as +0 (``0f00000000``, ``0d0000000000000000``, ``0.0``), not -0."""
    text = kt.instr_text(s).rsplit(",", 1)[-1].strip().lower()
    return not text.startswith("-") and text not in ("0f80000000", "0d8000000000000000")


def _pointer_param(tc, store_ir) -> str | None:
    """The pointer parameter the copy's load reads through (for a safe source address)."""
    ld = store_ir.args[1].defn if len(store_ir.args) > 1 else None
    if ld is None or ld.op is not O.LOAD:
        for x in tc.loads:
            ld = x
            break
    if ld is None or not ld.args:
        return None
    found = pointer_params(ld.args[0])
    return found.pop() if len(found) == 1 else None


def _buffer_plan(kt: KernelText, kernel: Kernel, tc, plans: list[CopyPlan]) -> BufferPlan:
    b = kernel.buffers.get(tc.symbol)
    if b is None or not b.bytes or b.dynamic:
        raise NotFixableError(f"`{tc.buffer}` has no static size")
    decl = next((s for s in kt.stmts if s.kind == "V" and s.decl.name == tc.symbol), None)
    if decl is None or decl.decl.space != "shared":
        raise NotFixableError(f"`{tc.buffer}` is not declared as a .shared array in the kernel's body")
    if len(decl.decl.shape) != 1:
        raise NotFixableError(f"`{tc.buffer}` is declared with {len(decl.decl.shape)} dimensions; the rewrite "
                              "doubles one-dimensional arrays")  # fmt: skip
    sizes = [16 if cp.chunked else cp.nbytes for cp in plans if cp.buffer == tc.symbol]
    align = max([decl.decl.align or 1, *sizes])
    size = b.bytes
    slot = -(-size // align) * align
    reads = []
    for r in tc.reads:
        if r.span is None:
            raise NotFixableError(f"a read of `{tc.buffer}` has no line")
        s = kt.instr_at_line(r.span.line)
        addr = next((o for o in s.operands if o[0] == "m"), None)
        if addr is None:
            raise NotFixableError(f"the read at line {s.line} has no address operand")
        if s not in reads:
            reads.append(s)
    return BufferPlan(tc.symbol, tc.buffer, size, slot, align, decl, reads)


def _check_accesses(kernel: Kernel, copies: list) -> None:
    """Every shared access of the kernel names its array, and the staged ones
    are touched by their copies and reads only."""
    from tolk_lint.analysis.stage.index import IndexEval, launch_block
    from tolk_lint.analysis.stage.polynomials import Unstageable
    from tolk_lint.analysis.stage.trace import space_of

    staged = {tc.symbol: tc for tc in copies}
    allowed = {id(i) for tc in copies for i in (*tc.stores, *tc.reads)}
    block, _ = launch_block(kernel)
    ev = IndexEval(kernel, block)
    for ins in kernel.instrs():
        if ins.op not in MEMORY_READS and ins.op not in MEMORY_WRITES:
            continue
        space = space_of(ins)
        if space not in ("shared", "generic"):
            continue
        buf = ins.attrs.get("buffer")
        names: set[str]
        if buf:
            names = {str(buf)}
        else:
            try:
                p = ev.poly(ins.args[0]) if ins.args else {}
                names = {a[5:] for m in p for a in m if a.startswith("addr:")}
            except (Unstageable, IndexError):
                names = set()
            if not names:
                if space == "generic":
                    continue  # a generic access with no shared array behind it: global memory
                raise NotFixableError(f"the shared access at line {_line(ins)} does not name its array, so it "
                                      "might touch a staged one")  # fmt: skip
        hit = names & set(staged)
        if hit and id(ins) not in allowed:
            tc = staged[next(iter(hit))]
            raise NotFixableError(f"`{tc.buffer}` is also accessed at line {_line(ins)}, outside its copies and "
                                  "the reads after the barrier")  # fmt: skip


def _line(ins) -> int | str:
    return ins.span.line if ins.span else "?"


def _trailing_barrier(kt: KernelText, plan: Plan, kernel: Kernel, copies: list) -> Stmt | None:
    """The barrier at the end of the trip that protected the single buffer
    against the next trip's copies: Form A's one barrier does that job, so it
    goes -- when the loop touches no other shared memory, nothing reads a
    staged array after it, and it is the trip's last barrier."""
    bars = [s for b in sorted(plan.loop) for s in kt.blocks[b].instrs(kt)
            if s.opcode.startswith(("bar.sync", "barrier.sync")) and s is not plan.barrier]  # fmt: skip
    if len(bars) != 1:
        return None
    bar = bars[0]
    if bar.guard is not None or not (len(bar.operands) == 1 and bar.operands[0] == ("i", 0)):
        return None
    bblock = kt.block_of[bar.index]
    if not kt.dominates(bblock, plan.latch.index) or not kt.dominates(kt.block_of[plan.barrier.index], bblock):
        return None
    inner = [h for h in plan.loop if h != plan.header.index and kt.natural_loop(h)[1]
             and bblock in kt.natural_loop(h)[0]]  # fmt: skip
    if inner:
        return None
    reads = [r for bp in plan.buffers.values() for r in bp.reads]
    if any(r.index > bar.index for r in reads):
        return None
    allowed = {id(i) for tc in copies for i in (*tc.stores, *tc.reads)}
    blocks = {b for b in copies[0].loop.blocks}
    for ins in kernel.instrs():
        if ins.block in blocks and (ins.op in MEMORY_READS or ins.op in MEMORY_WRITES) and id(ins) not in allowed:
            from tolk_lint.analysis.stage.trace import space_of

            if space_of(ins) in ("shared", "generic"):
                return None
    return bar
