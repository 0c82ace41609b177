"""One PTX kernel's text as the rewrite sees it: its statements in order,
its basic blocks and their edges, dominators, loops and reaching
definitions of registers.

The front end's IR is SSA and forgets which register holds a value where;
a rewrite that adds instructions to the text must know exactly that. So
this module reads the kernel again from the parse tree (`parse_tree`, the
same grammar as the front end) and keeps the text's own view: a register
is a name, an instruction may define it, and a definition *reaches* a
statement when some path leads from it to the statement without another
definition of the same register.

- `KernelText.parse(text, name)`: the kernel, or `TextError` with the
  reason it cannot be rewritten (nested scopes that declare registers, an
  indirect branch).
- `Stmt`: one statement (instruction, label, ``.loc``, declaration).
- `KernelText.reaching(reg, at)`: the statements whose definition of
  ``reg`` reaches statement ``at`` (`ENTRY` for "never defined before").
- `KernelText.natural_loop(header)`: the blocks of the loop a label heads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tolk_lint import budget

ENTRY = -1  # the pseudo-definition "the register's value on entry"

# Opcodes whose first operand is read, not written.
_NO_DEST = (
    "st.", "st", "red.", "cp.", "bar", "barrier", "bra", "brx", "ret", "exit", "trap", "membar", "fence",
    "prefetch", "wmma.store", "stmatrix", "nanosleep", "pmevent", "griddepcontrol", "multimem.st",
    "multimem.red", "tensormap", "discard", "applypriority", "createpolicy.", "setmaxnreg", "mbarrier.init",
    "mbarrier.inval", "mbarrier.expect_tx", "mbarrier.complete_tx", "wgmma.fence", "wgmma.commit_group",
    "wgmma.wait_group", "elect.",
)  # fmt: skip
_REG = re.compile(r"%[A-Za-z_$][\w$]*(?:\.[xyzw])?")


class TextError(Exception):
    """The kernel's text has a shape the rewrite does not handle; the
    message says which, in words for a TL302 note."""


@dataclass
class Stmt:
    index: int
    kind: str  # "I" instruction, "L" label, "C" .loc, "R" .reg, "V" variable, "P" other directive
    line: int  # 1-based
    guard: tuple[bool, str] | None = None  # (negated, predicate register)
    opcode: str = ""
    operands: list = field(default_factory=list)
    label: str = ""
    start: int = -1  # an instruction's first column, and its last line and the column after it
    end: int = -1
    end_line: int = 0
    loc_line: int = 0  # for a .loc: the line it is on
    decl: object = None  # ("R", ...) or VarDecl

    @property
    def is_instr(self) -> bool:
        return self.kind == "I"

    def dests(self) -> list[str]:
        """The registers this instruction writes."""
        if not self.is_instr or not self.operands:
            return []
        op = self.opcode
        if op.startswith("call"):
            first = self.operands[0]
            return [r for r in _regs(first)] if first[0] == "g" else []
        if any(op == p or op.startswith(p if p.endswith(".") else p + ".") for p in _NO_DEST):
            return []
        return _regs(self.operands[0])

    def sources(self) -> list[str]:
        """The registers this instruction reads (its guard included)."""
        if not self.is_instr:
            return []
        out = [self.guard[1]] if self.guard else []
        dests = self.dests()
        for i, o in enumerate(self.operands):
            if i == 0 and dests:
                continue
            out += _regs(o)
        return out


def _regs(o) -> list[str]:
    tag = o[0]
    if tag == "r":
        return [o[1]] if o[1].startswith("%") else []
    if tag == "!":
        return [o[1]] if o[1].startswith("%") else []
    if tag == "d":
        return [x for part in o[1:] for x in _regs(part)]
    if tag in ("v", "g"):
        return [x for part in o[1] for x in _regs(part)]
    if tag == "m":
        return _regs(o[1]) if o[1] is not None else []
    return []


@dataclass
class TBlock:
    index: int
    first: int  # statement indices [first, last]
    last: int
    label: str = ""
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)

    def instrs(self, kt: KernelText) -> list[Stmt]:
        return [s for s in kt.stmts[self.first : self.last + 1] if s.is_instr]


class KernelText:
    """A kernel's statements, blocks and register definitions (see the module docstring)."""

    def __init__(self, text: str, func, stmts: list[Stmt], ptx_file):
        self.text = text
        self.func = func
        self.stmts = stmts
        self.file = ptx_file
        self.line_starts = _line_starts(text)
        self.reg_types = _reg_types(stmts)
        self.blocks: list[TBlock] = []
        self.block_of: list[int] = []
        self._build_blocks()
        self._idom: list[int] | None = None
        self._rd_in: list[dict[str, frozenset[int]]] | None = None

    # -- reading -----------------------------------------------------------------------------------

    @staticmethod
    def parse(text: str, kernel: str) -> KernelText:
        from tolk_lint.frontends.ptx import PtxSyntaxError, parse_tree

        try:
            f = parse_tree(text)
        except PtxSyntaxError as e:
            raise TextError(f"the PTX does not parse: {e}") from None
        func = next((i for i in f.items if type(i).__name__ == "FuncDecl" and i.name == kernel and i.body), None)
        if func is None:
            raise TextError(f"no body of `{kernel}` in the file")
        stmts: list[Stmt] = []
        _flatten(func.body, stmts, top=True)
        return KernelText(text, func, stmts, f)

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its end of line."""
        a = self.line_starts[line - 1]
        b = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[a:b].rstrip("\r\n")

    def instr_text(self, s: Stmt) -> str:
        """The instruction's text, guard to last operand, without the ';'."""
        a = self.line_starts[s.line - 1] + s.start - 1
        b = self.line_starts[s.end_line - 1] + s.end - 1
        return self.text[a:b].rstrip().rstrip(";").rstrip()

    def reg_type(self, reg: str) -> str | None:
        """The declared type of a register (``b32``, ``pred``...), or None."""
        if reg in self.reg_types:
            return self.reg_types[reg]
        m = re.fullmatch(r"(%[A-Za-z_$][\w$]*?)(\d+)", reg)
        return self.reg_types.get(m.group(1) + "<>") if m else None

    def loc_before(self, index: int) -> Stmt | None:
        """The ``.loc`` in effect at statement ``index`` (the last one before it)."""
        for s in reversed(self.stmts[:index]):
            if s.kind == "C":
                return s
        return None

    def stmts_on_line(self, line: int) -> list[Stmt]:
        return [s for s in self.stmts if s.line == line and s.kind in ("I", "L")]

    def instr_at_line(self, line: int) -> Stmt:
        found = [s for s in self.stmts if s.is_instr and s.line == line]
        if len(found) != 1:
            raise TextError(f"line {line} holds {len(found)} instructions, not one")
        return found[0]

    def label_index(self, label: str) -> int | None:
        for s in self.stmts:
            if s.kind == "L" and s.label == label:
                return s.index
        return None

    # -- blocks ------------------------------------------------------------------------------------

    def _build_blocks(self) -> None:
        starts = {0}
        for s in self.stmts:
            if s.kind == "L":
                starts.add(s.index)
            elif s.is_instr and _ends_block(s.opcode):
                starts.add(s.index + 1)
        starts = sorted(i for i in starts if i < len(self.stmts))
        by_label: dict[str, int] = {}
        for n, first in enumerate(starts):
            last = (starts[n + 1] if n + 1 < len(starts) else len(self.stmts)) - 1
            b = TBlock(n, first, last)
            s0 = self.stmts[first]
            if s0.kind == "L":
                b.label = s0.label
                by_label[s0.label] = n
            self.blocks.append(b)
            self.block_of += [n] * (last - first + 1)
        for b in self.blocks:
            ins = b.instrs(self)
            t = ins[-1] if ins else None
            falls = True
            if t is not None and _ends_block(t.opcode):
                op = t.opcode.split(".")[0]
                if op == "brx":
                    raise TextError("the kernel branches indirectly (brx.idx)")
                if op == "bra":
                    target = t.operands[0][1] if t.operands and t.operands[0][0] == "r" else None
                    if target not in by_label:
                        raise TextError(f"a branch to an unknown label `{target}`")
                    b.succs.append(by_label[target])
                    falls = t.guard is not None
                else:  # ret, exit, trap
                    falls = t.guard is not None
            if falls and b.index + 1 < len(self.blocks) and b.index + 1 not in b.succs:
                b.succs.append(b.index + 1)
        for b in self.blocks:
            for s in b.succs:
                self.blocks[s].preds.append(b.index)

    def block_by_label(self, label: str) -> TBlock | None:
        return next((b for b in self.blocks if b.label == label), None)

    def idom(self) -> list[int]:
        """Immediate dominators (Cooper, Harvey and Kennedy's iteration); the entry's is itself."""
        if self._idom is not None:
            return self._idom
        order = self._rpo()
        pos = {b: i for i, b in enumerate(order)}
        idom = [-1] * len(self.blocks)
        idom[0] = 0
        changed = True
        while changed:
            changed = False
            for b in order[1:]:
                ps = [p for p in self.blocks[b].preds if idom[p] != -1]
                if not ps:
                    continue
                new = ps[0]
                for p in ps[1:]:
                    new = _intersect(idom, pos, p, new)
                if idom[b] != new:
                    idom[b] = new
                    changed = True
        self._idom = idom
        return idom

    def dominates(self, a: int, b: int) -> bool:
        idom = self.idom()
        if idom[b] == -1:
            return False
        while True:
            if a == b:
                return True
            if b == 0 or idom[b] == b:
                return False
            b = idom[b]

    def _rpo(self) -> list[int]:
        seen, out = set(), []
        stack = [(0, iter(self.blocks[0].succs))]
        seen.add(0)
        while stack:
            b, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                out.append(b)
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(self.blocks[nxt].succs)))
        return out[::-1]

    def natural_loop(self, header: int) -> tuple[set[int], list[int]]:
        """The blocks of the loop ``header`` heads, and its latches (the
        blocks with an edge back to it)."""
        latches = [p for p in self.blocks[header].preds if self.dominates(header, p)]
        body = {header}
        work = list(latches)
        while work:
            b = work.pop()
            if b in body:
                continue
            body.add(b)
            work += self.blocks[b].preds
        return body, latches

    # -- reaching definitions ----------------------------------------------------------------------

    def reaching(self, reg: str, at: int) -> frozenset[int]:
        """The statements whose write of ``reg`` reaches statement ``at``
        (before it runs); `ENTRY` when some path reaches it with no write."""
        rd_in = self._reaching_in()
        b = self.block_of[at]
        cur = set(rd_in[b].get(reg, frozenset({ENTRY})))
        for s in self.stmts[self.blocks[b].first : at]:
            if reg in s.dests():
                if s.guard is None:
                    cur = {s.index}
                else:
                    cur.add(s.index)
        return frozenset(cur)

    def reaching_end(self, reg: str, block: int) -> frozenset[int]:
        """What reaches the end of ``block`` (after its last statement)."""
        last = self.stmts[self.blocks[block].last]
        cur = set(self.reaching(reg, last.index))
        if reg in last.dests():
            cur = {last.index} if last.guard is None else cur | {last.index}
        return frozenset(cur)

    def _reaching_in(self) -> list[dict[str, frozenset[int]]]:
        if self._rd_in is not None:
            return self._rd_in
        gen: list[dict[str, set[int]]] = []
        kill: list[set[str]] = []
        for b in self.blocks:
            g: dict[str, set[int]] = {}
            k: set[str] = set()
            for s in self.stmts[b.first : b.last + 1]:
                for r in s.dests():
                    if s.guard is None:
                        g[r] = {s.index}
                        k.add(r)
                    else:
                        g.setdefault(r, set()).add(s.index)
            gen.append(g)
            kill.append(k)
        regs = {r for g in gen for r in g}
        rd_in: list[dict[str, frozenset[int]]] = [dict() for _ in self.blocks]
        rd_out: list[dict[str, frozenset[int]]] = [dict() for _ in self.blocks]
        entry_only = frozenset({ENTRY})
        for r in regs:
            rd_in[0][r] = entry_only
        order = self._rpo()
        changed = True
        while changed:
            budget.check("reading the kernel's register definitions for the rewrite")
            changed = False
            for bi in order:
                b = self.blocks[bi]
                if bi != 0:
                    new_in: dict[str, set[int]] = {}
                    for p in b.preds:
                        for r, ds in rd_out[p].items():
                            new_in.setdefault(r, set()).update(ds)
                    frozen = {r: frozenset(v) for r, v in new_in.items()}
                    if frozen != rd_in[bi]:
                        rd_in[bi] = frozen
                        changed = True
                out = {r: ds for r, ds in rd_in[bi].items() if r not in kill[bi]}
                for r, ds in gen[bi].items():
                    out[r] = frozenset(ds) if r in kill[bi] else frozenset(ds | out.get(r, frozenset()))
                if out != rd_out[bi]:
                    rd_out[bi] = out
                    changed = True
        # a register some path reaches without a write (never written on it) also holds ENTRY
        for bi, b in enumerate(self.blocks):
            for r in regs:
                if r not in rd_in[bi]:
                    rd_in[bi][r] = entry_only
                elif bi != 0 and any(r not in rd_out[p] for p in b.preds):
                    rd_in[bi][r] = rd_in[bi][r] | entry_only
        self._rd_in = rd_in
        return rd_in


def _intersect(idom: list[int], pos: dict[int, int], a: int, b: int) -> int:
    while a != b:
        while pos[a] > pos[b]:
            a = idom[a]
        while pos[b] > pos[a]:
            b = idom[b]
    return a


def _ends_block(opcode: str) -> bool:
    return opcode.split(".")[0] in ("bra", "brx", "ret", "exit", "trap")


def _flatten(body: list, out: list[Stmt], top: bool) -> None:
    for s in body:
        tag = s[0]
        n = len(out)
        if tag == "I":
            _guard, opcode, operands, pos = s[1], s[2], s[3], s[4]
            out.append(Stmt(n, "I", pos[0], _guard, opcode, operands, start=pos[1], end=pos[3], end_line=pos[2]))
        elif tag == "L":
            out.append(Stmt(n, "L", s[2], label=s[1]))
        elif tag == "C":
            out.append(Stmt(n, "C", s[5], loc_line=s[5]))
        elif tag == "R":
            if not top:
                raise TextError("the kernel declares registers in a nested { } scope")
            out.append(Stmt(n, "R", 0, decl=s))  # the tree keeps no line for .reg
        elif tag == "V":
            out.append(Stmt(n, "V", s[1].line, decl=s[1]))
        elif tag == "B":
            _flatten(s[1], out, top=False)
        else:
            out.append(Stmt(n, "P", 0))


def _reg_types(stmts: list[Stmt]) -> dict[str, str]:
    """Register name (or ``prefix<>`` for a ``%r<29>`` family) -> declared type."""
    out: dict[str, str] = {}
    for s in stmts:
        if s.kind != "R":
            continue
        _tag, typ, names = s.decl[0], s.decl[1], s.decl[2]
        for name, count in names:
            out[name + "<>" if count is not None else name] = typ
    return out


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def rename_registers(text: str, mapping: dict[str, str]) -> str:
    """``text`` with each register token renamed by ``mapping`` (whole tokens only)."""
    return _REG.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def registers_in(text: str) -> list[str]:
    return _REG.findall(text)
