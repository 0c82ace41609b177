"""Building a kernel's CFG in SSA form, for both front ends.

PTX registers and Python variables are assigned many times; the IR defines
each value once. `Builder` renames on the fly with the algorithm of Braun,
Buchwald, Hack, Leißa, Mallon and Zwinkau, "Simple and Efficient
Construction of Static Single Assignment Form" (CC 2013):

- ``write(var, value)`` records the current definition of ``var`` in the
  current block; ``read(var)`` finds it, looking through predecessors and
  placing a PHI where several definitions meet.
- A block is *sealed* once all its predecessors are known; reading in an
  unsealed block (a loop header whose back edge is still to come) places an
  incomplete PHI that ``seal`` completes.
- ``finish()`` removes trivial PHIs (all operands the same value, or the PHI
  itself), numbers everything and checks the block structure.

The walk is iterative, not recursive: machine-generated PTX has thousands of
joins in a row, deeper than Python's recursion limit.

Usage, for a front end that knows its edges up front (PTX): create every
block, ``add_edge`` each edge, then fill blocks in layout order, calling
``seal`` on each block once all its predecessors are filled. A structured
front end (Python) seals as it goes: a loop header after its body.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Block, Instr, Kernel, Origin, Span, Value
from tolk_lint.ir.opcodes import Opcode


class Builder:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.current: Block | None = None
        self._ids = 0
        self._defs: dict[Block, dict[str, Value]] = {}
        self._sealed: set[Block] = set()
        self._incomplete: dict[Block, list[tuple[str, Instr]]] = {}
        self._var_types: dict[str, str] = {}
        self._versions: dict[str, int] = {}
        self._undefs: dict[str, Value] = {}
        self._nphis: dict[Block, int] = {}  # PHIs (and UNDEFs in the entry) at each block's start

    # -- blocks and edges -------------------------------------------------

    def block(self, name: str | None = None, span: Span | None = None) -> Block:
        b = Block(name or f"bb{len(self.kernel.blocks)}")
        b.kernel = self.kernel
        b.span = span
        self.kernel.blocks.append(b)
        self._defs[b] = {}
        return b

    def position(self, block: Block) -> None:
        self.current = block

    def add_edge(self, src: Block, dst: Block) -> None:
        if dst not in src.succs:
            src.succs.append(dst)
        if src not in dst.preds:
            if dst in self._sealed:
                raise ValueError(f"edge into sealed block {dst.name}")
            dst.preds.append(src)

    def is_sealed(self, block: Block) -> bool:
        return block in self._sealed

    def terminated(self, block: Block | None = None) -> bool:
        b = block or self.current
        return b is not None and b.terminator is not None

    # -- values and instructions ------------------------------------------

    def new_value(self, type: str, source_name: str | None = None) -> Value:
        self._ids += 1
        base = source_name or "%"
        n = self._versions.get(base, 0)
        self._versions[base] = n + 1
        name = f"{base}.{n}" if source_name else f"%v{self._ids}"
        return Value(self._ids, type, name, source_name)

    def emit(
        self,
        op: Opcode,
        args: list[Value],
        result_types: tuple[str, ...] | list[str] = (),
        attrs: dict[str, Any] | None = None,
        span: Span | None = None,
        origin: Origin | None = None,
        text: str = "",
        names: tuple[str | None, ...] | list[str | None] | None = None,
        block: Block | None = None,
    ) -> Instr:
        """Append an instruction to the current block (or ``block``)."""
        b = block or self.current
        assert b is not None, "no current block"
        names = list(names or [None] * len(result_types))
        results = [self.new_value(t, n) for t, n in zip(result_types, names)]
        ins = Instr(op, list(args), results, attrs, span, origin, text)
        ins.block = b
        if b.terminator is not None:
            raise ValueError(f"instruction after the terminator of {b.name}")
        b.instrs.append(ins)
        return ins

    def value_of(self, op: Opcode, args: list[Value], type: str, **kw: Any) -> Value:
        """Emit a one-result instruction and return its result."""
        return self.emit(op, args, (type,), **kw).result

    def const(self, value: Any, type: str, span: Span | None = None, origin: Origin | None = None) -> Value:
        return self.value_of(Opcode.CONST, [], type, attrs={"value": value}, span=span, origin=origin)

    # -- terminators ---------------------------------------------------------

    def branch(self, cond: Value, if_true: Block, if_false: Block, **kw: Any) -> Instr:
        b = self.current
        ins = self.emit(Opcode.BRANCH, [cond], attrs={"targets": (if_true, if_false)}, **kw)
        self.add_edge(b, if_true)
        self.add_edge(b, if_false)
        return ins

    def jump(self, target: Block, **kw: Any) -> Instr:
        b = self.current
        ins = self.emit(Opcode.JUMP, [], attrs={"target": target}, **kw)
        self.add_edge(b, target)
        return ins

    def ret(self, args: list[Value] | None = None, **kw: Any) -> Instr:
        return self.emit(Opcode.RET, list(args or []), **kw)

    def exit(self, **kw: Any) -> Instr:
        return self.emit(Opcode.EXIT, [], **kw)

    # -- variables (SSA construction) ------------------------------------------

    def write(self, var: str, value: Value, block: Block | None = None) -> None:
        b = block or self.current
        self._defs[b][var] = value
        self._var_types.setdefault(var, value.type)

    def declare(self, var: str, type: str) -> None:
        """Tell the builder a variable's type before its first write (PTX .reg)."""
        self._var_types[var] = type

    def read(self, var: str, block: Block | None = None, type: str | None = None) -> Value:
        b = block or self.current
        if type is not None:
            self._var_types.setdefault(var, type)
        pending: list[tuple[Instr, str]] = []
        v = self._lookup(var, b, pending)
        while pending:
            phi, name = pending.pop()
            for p in phi.block.preds:
                phi.args.append(self._lookup(name, p, pending))
        return v

    def has_definition(self, var: str) -> bool:
        return var in self._var_types

    def _lookup(self, var: str, block: Block, pending: list[tuple[Instr, str]]) -> Value:
        chain: list[Block] = []
        on_chain: set[Block] = set()
        b = block
        while True:
            v = self._defs[b].get(var)
            if v is not None:
                break
            if b in on_chain:
                # A cycle of blocks each with one predecessor, the next on the
                # cycle (`$L1: @%p bra $L1;` jumped over): no path from the
                # entry reaches it, so nothing defines ``var`` there.
                v = self._undef(var)
                break
            if b not in self._sealed:
                phi = self._phi(var, b)
                self._incomplete.setdefault(b, []).append((var, phi))
                self._defs[b][var] = phi.result  # one PHI per variable, whichever path asks first
                v = phi.result
                break
            if len(b.preds) == 1:
                chain.append(b)
                on_chain.add(b)
                b = b.preds[0]
                continue
            if not b.preds:
                v = self._undef(var)
                break
            phi = self._phi(var, b)
            self._defs[b][var] = phi.result
            pending.append((phi, var))
            v = phi.result
            break
        for c in chain:
            self._defs[c][var] = v
        self._defs[block][var] = v
        return v

    def _phi(self, var: str, block: Block) -> Instr:
        t = self._var_types.get(var, "b32")
        res = self.new_value(t, var)
        ins = Instr(Opcode.PHI, [], [res], span=block.span, text=f"phi {var}")
        ins.block = block
        n = self._nphis.get(block, 0)
        block.instrs.insert(n, ins)
        self._nphis[block] = n + 1
        return ins

    def _undef(self, var: str) -> Value:
        if var not in self._undefs:
            entry = self.kernel.blocks[0]
            res = self.new_value(self._var_types.get(var, "b32"), var)
            ins = Instr(Opcode.UNDEF, [], [res], text=f"undef {var}")
            ins.block = entry
            # after the entry's PHIs (it has none: no predecessors) and earlier UNDEFs
            n = self._nphis.get(entry, 0)
            entry.instrs.insert(n, ins)
            self._nphis[entry] = n + 1
            self._undefs[var] = res
        return self._undefs[var]

    def seal(self, block: Block) -> None:
        if block in self._sealed:
            return
        self._sealed.add(block)
        pending: list[tuple[Instr, str]] = []
        for var, phi in self._incomplete.pop(block, []):
            for p in block.preds:
                phi.args.append(self._lookup(var, p, pending))
        while pending:
            phi, name = pending.pop()
            for p in phi.block.preds:
                phi.args.append(self._lookup(name, p, pending))

    # -- finishing ---------------------------------------------------------------

    def finish(self, remove_unreachable: bool = True) -> Kernel:
        """Seal what is left, drop trivial PHIs and unreachable blocks, number
        blocks and instructions. Returns the kernel."""
        for b in list(self.kernel.blocks):
            self.seal(b)
        k = self.kernel
        if remove_unreachable:
            _remove_unreachable(k)
        _remove_trivial_phis(k)
        for i, b in enumerate(k.blocks):
            b.id = i
        n = 0
        for b in k.blocks:
            for ins in b.instrs:
                ins.id = n
                n += 1
        k._cache.clear()
        return k


def _remove_unreachable(k: Kernel) -> None:
    seen = {k.blocks[0]}
    stack = [k.blocks[0]]
    while stack:
        b = stack.pop()
        for s in b.succs:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    if len(seen) == len(k.blocks):
        return
    dead = [b for b in k.blocks if b not in seen]
    for b in dead:
        for s in b.succs:
            if s in seen:
                idx = s.preds.index(b)
                s.preds.pop(idx)
                for phi in s.phis():
                    if idx < len(phi.args):
                        phi.args.pop(idx)
    k.blocks = [b for b in k.blocks if b in seen]


def _remove_trivial_phis(k: Kernel) -> None:
    """Replace each PHI whose operands are one value (besides itself) by that
    value, until none is left."""
    replace: dict[Value, Value] = {}

    def find(v: Value) -> Value:
        while v in replace:
            v = replace[v]
        return v

    changed = True
    while changed:
        changed = False
        for b in k.blocks:
            for phi in list(b.phis()):
                res = phi.result
                if res in replace:
                    continue
                ops = {find(a) for a in phi.args} - {res}
                if len(ops) == 1:
                    replace[res] = ops.pop()
                    changed = True
                elif not ops:  # only self-references: an undefined value
                    pass
    if not replace:
        return
    for b in k.blocks:
        b.instrs = [i for i in b.instrs if not (i.op is Opcode.PHI and i.result in replace)]
        for ins in b.instrs:
            ins.args = [find(a) for a in ins.args]
            idx = ins.attrs.get("index")
            if isinstance(idx, (tuple, list)):  # Python subscripts keep their index values
                ins.attrs["index"] = type(idx)(find(x) if isinstance(x, Value) else x for x in idx)
    k.assumptions = [find(a) for a in k.assumptions]
    for p in k.params:
        if p.value is not None:
            p.value = find(p.value)
