"""Step 1 of lowering a function: its body -> a flat list of statements.

The walk goes through the body and its ``{ }`` scopes (each a `Scope`):

- ``.reg`` declarations: top-level names as written (``%r<100>`` as a range
  checked on use); a name declared in a nested scope gets a key of its own
  (``q'3``) when the name is already taken;
- ``.param`` declared inside the body: call-site slots, per scope;
- ``.shared``/``.local``/``.global``/``.const`` declarations: buffers of the
  kernel (`buffer_of`, also used for the module's own);
- ``.loc``: the `Origin` in force, following ``inlined_at`` to the ``.loc``
  that named that position; every instruction is tagged with its scope and
  that origin;
- labels (a label naming a ``.callprototype`` is not code).

Then every register's number of writing instructions is counted (the
shortcut in `LoweringCore.val` for registers written once).

What it may import: `core`, `scope`, `vocabulary`, the syntax tree (`tree`)
and `tolk_lint.ir`.
"""

from __future__ import annotations

from tolk_lint.ir.nodes import Buffer, Origin, Span, type_bits

from .core import LoweringCore
from .scope import Scope
from .tree import VarDecl
from .vocabulary import SINK

# families whose first operand is not a destination register
_NO_DEST_FAMILIES = frozenset(
    "bra brx call ret exit trap".split()
)


def buffer_of(d: VarDecl, path: str) -> Buffer:
    shape: tuple[int | None, ...] = d.shape
    dynamic = "extern" in [x.lstrip(".") for x in d.linkage] and (not shape or None in shape)
    space = {"tex": "texture"}.get(d.space, d.space)
    dtype = d.dtype
    if dtype in ("texref", "surfref", "samplerref"):
        space = {"texref": "texture", "surfref": "surface", "samplerref": "texture"}[dtype]
    return Buffer(
        name=d.name,
        space=space,
        dtype=dtype,
        shape=shape,
        align=d.align,
        dynamic=dynamic,
        span=Span(path, d.line, d.column, d.end_line, d.end_column),
        init=d.init,
    )


class DeclarationLowering(LoweringCore):
    """The flatten step: scopes, declarations, ``.loc`` origins, labels."""

    def flatten(self, body: list[tuple]) -> list[tuple]:
        items: list[tuple] = []
        locs: dict[tuple[int, int, int], Origin] = {}
        origin: Origin | None = None
        files = self.pf.files
        stack: list[tuple[list, int, Scope]] = [(body, 0, self.top)]
        scope = self.top
        while stack:
            stmts, i, scope = stack.pop()
            n = len(stmts)
            while i < n:
                st = stmts[i]
                i += 1
                tag = st[0]
                if tag == "I":
                    items.append((st, scope, origin))
                elif tag == "C":
                    _, f, line, col, inl, _l = st
                    if line == 0:
                        origin = None
                        continue
                    parent = None
                    if inl is not None:
                        parent = locs.get(inl)
                        if parent is None and inl[1] != 0:
                            parent = Origin(files.get(inl[0], f"<file {inl[0]}>"), inl[1], inl[2])
                    key = (f, line, col)
                    o = locs.get(key)
                    if o is None or o.inlined_at is not parent:
                        o = Origin(files.get(f, f"<file {f}>"), line, col, parent)
                        locs[key] = o
                    origin = o
                elif tag == "L":
                    if i < n and stmts[i][0] == "X":
                        continue  # `prototype_3 : .callprototype ...` names a prototype, not code
                    items.append(("L", st[1], st[2], st[3], scope))
                elif tag == "R":
                    self.declare_regs(st, scope)
                elif tag == "B":
                    stack.append((stmts, i, scope))
                    self.scope_ids += 1
                    stack.append((st[1], 0, Scope(self.scope_ids, scope)))
                    break
                elif tag == "V":
                    self.declare_var(st[1], scope, origin)
                # "X" (.callprototype), "P" (pragmas, .branchtargets): nothing to lower
        return items

    def _count_defs(self, items: list[tuple]) -> None:
        """How many instructions write each register (an over-count is
        harmless: it only turns off the shortcut in `val`)."""
        for it in items:
            if it[0] == "L":
                continue
            st = it[0]
            ops = st[3]
            if ops:
                o = ops[0]
                t0 = o[0]
                if t0 == "r" or t0 == "v" or t0 == "d":
                    if st[2].split(".", 1)[0] not in _NO_DEST_FAMILIES:
                        self._count_def(o, it[1])
        self.scope = self.top

    def _count_def(self, o: tuple, scope: Scope) -> None:
        t0 = o[0]
        if t0 == "r":
            names = [o[1]]
        elif t0 == "d":
            names = [o[1], o[2]]
        else:
            names = [x[1] for x in o[1] if x[0] == "r"]
        defs = self.static_defs
        self.scope = scope
        for n in names:
            if n == SINK:
                continue
            r = self.resolve(n)
            if r[0] == "reg":
                defs[r[1]] = defs.get(r[1], 0) + 1

    def declare_regs(self, st: tuple, scope: Scope) -> None:
        _, t, names, _vec = st
        for name, count in names:
            if scope is self.top:
                if count is not None:
                    self.ranges[name] = (t, count)
                else:
                    self.top.regs[name] = (name, t)
                    self.used_keys.add(name)
            else:
                if count is not None:
                    for j in range(count):
                        self._declare_nested(f"{name}{j}", t, scope)
                else:
                    self._declare_nested(name, t, scope)

    def _declare_nested(self, name: str, t: str, scope: Scope) -> None:
        key = name
        if key in self.used_keys or self._top_reg(name) is not None:
            key = f"{name}'{scope.id}"
        self.used_keys.add(key)
        scope.regs[name] = (key, t)

    def declare_var(self, d: VarDecl, scope: Scope, origin: Origin | None) -> None:
        if d.space == "param":
            if scope is self.top:
                return
            nbytes = 0
            el = max(1, type_bits(d.dtype) // 8)
            n = 1
            for s in d.shape:
                n *= s or 1
            nbytes = el * n
            scope.slots[d.name] = (f"$arg:{d.name}@{scope.id}", d.dtype, nbytes)
            return
        if d.space in ("global", "shared", "const", "local", "tex"):
            buf = buffer_of(d, self.path)
            buf.origin = origin
            self.k.buffers[d.name] = buf
