"""Shared- and local-memory accesses, and what each one touches.

Every LOAD / STORE / ATOMIC / WMMA_LOAD / WMMA_STORE / LDMATRIX / STMATRIX
in shared (or local) space, and the destination of every CP_ASYNC, becomes
an `Access`: its instruction, its kind (``read``, ``write``, ``atomic``,
``copy``), the buffer its address points into (by root: ``ADDR(buffer)``
through additions, conversions and PHIs), and its footprint (byte address
and width; a vector access covers all its lanes, a wmma fragment its rows at
the stride given). Python accesses also keep their index tuple (bounds per
dimension; Numba wraps ``-n..-1``).

Also here: how a finding names an instruction, a buffer and a source line
(`instr_text`, `pretty_buffer`, `source_key`, `block_line`, `block_where`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tolk_lint.diagnostics import is_toolkit_path, report_frame, where
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Buffer, Instr, Kernel, Value, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode


ACCESS_OPS = frozenset({O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC, O.WMMA_LOAD, O.WMMA_STORE, O.LDMATRIX, O.STMATRIX})
READ_OPS = frozenset({O.LOAD, O.WMMA_LOAD, O.LDMATRIX})
WRITE_OPS = frozenset({O.STORE, O.WMMA_STORE, O.STMATRIX})


@dataclass(eq=False)
class Access:
    """One shared- or local-memory access of a kernel."""

    instr: Instr
    kind: str  # "read" | "write" | "atomic" | "copy"
    space: str  # "shared" | "local"
    root: str | None  # the buffer its address points into (None: unknown)
    buffer: Buffer | None
    addr: Value | None  # byte address
    base: Value | None  # the ADDR value of ``root`` (PTX), for offsets
    width: int  # bytes per thread (wmma: see ``fragment``)
    elem: int  # bytes of one element (vector accesses: width = elem * lanes)
    index: tuple | None = None  # Python: the index values, one per dimension
    fragment: tuple | None = None  # wmma: (rows, row_bytes, stride Value | None, elem bytes)
    order: int = 0  # position in the kernel's layout (program order tie-break)
    # every buffer the address may point into (`roots_of`: a pointer chosen
    # between two arrays, a shared-space kernel parameter); None: unknown
    roots: frozenset | None = None

    @property
    def writes(self) -> bool:
        return self.kind in ("write", "atomic", "copy")

    @property
    def reads(self) -> bool:
        return self.kind in ("read", "atomic")

    @property
    def line(self) -> int:
        return _line(self.instr)

    def describe(self) -> str:
        return {"read": "reads", "write": "writes", "atomic": "atomically updates", "copy": "copies into"}[self.kind]


def _line(ins: Instr | None) -> int:
    if ins is None:
        return 0
    if ins.origin is not None:
        return report_frame(ins.origin).line
    return ins.span.line if ins.span is not None else 0


def instr_text(ins: Instr, limit: int = 60) -> str:
    t = (ins.text or ins.op.value).strip().rstrip(";")
    return t if len(t) <= limit else t[: limit - 3] + "..."


def pretty_buffer(name: str | None) -> str:
    """``_ZZ14tile_diff_raceE1s`` -> ``s`` (a function-local static)."""
    if not name:
        return "shared memory"
    if name.startswith("param:"):
        return name[len("param:"):]  # a shared-space kernel parameter (OpenCL `__local`)
    m = re.fullmatch(r"_ZZ(\d+)(\w+)", name)
    if m:
        n = int(m.group(1))
        rest = m.group(2)[n:]
        if rest.startswith("E"):
            m2 = re.match(r"E(\d+)(\w+)", rest)
            if m2:
                return m2.group(2)[: int(m2.group(1))]
    if name.startswith("_ZZ"):  # `_ZZ3oobPfPKfE4tile`: the kernel's parameter types come before the `E`
        for m3 in reversed(list(re.finditer(r"E(\d+)", name))):
            tail = name[m3.end():]
            local = tail[: int(m3.group(1))]
            if len(local) == int(m3.group(1)) and re.fullmatch(r"[A-Za-z_]\w*", local) \
                    and re.fullmatch(r"(?:_\d*_?)?", tail[len(local):]):  # fmt: skip
                return local
    return name


class Canon:
    """Redundant PHI webs (``%r.0 = phi(%v, %r.1)``, ``%r.1 = phi(%r.0, %r.0)``)
    all equal their one value from outside the web (Braun et al. 2013, 3.2)."""

    def __init__(self, kernel: Kernel):
        self.map: dict[Value, Value] = {}
        phis = [i for i in kernel.instrs() if i.op is O.PHI]
        done: set[Value] = set()
        for p in phis:
            v = p.result
            if v in done:
                continue
            web: set[Value] = set()
            outer: set[Value] = set()
            stack = [v]
            while stack and len(outer) < 2:
                x = stack.pop()
                if x in web:
                    continue
                web.add(x)
                for a in x.defn.args:
                    if a.defn is not None and a.defn.op is O.PHI:
                        if a not in web:
                            stack.append(a)
                    else:
                        outer.add(a)
            if len(outer) == 1 and not stack:
                (o,) = outer
                for x in web:
                    self.map[x] = o
                    done.add(x)
            else:
                done.add(v)

    def __call__(self, v: Value) -> Value:
        return self.map.get(v, v)


def _root(v: Value, canon: Canon, depth: int = 0, seen: set | None = None) -> Value | None:
    """The ADDR value an address is computed from, or None."""
    if depth > 64:
        return None
    v = canon(v)
    d = v.defn
    if d is None:
        return None
    if d.op is O.ADDR:
        return v
    if d.op in (O.ADD, O.SUB) and d.args:
        cands = [_root(a, canon, depth + 1, seen) for a in (d.args if d.op is O.ADD else d.args[:1])]
        found = [c for c in cands if c is not None]
        if len(found) == 1 or (found and all(f.defn.attrs.get("buffer") == found[0].defn.attrs.get("buffer") for f in found)):
            return found[0]
        return None
    if d.op is O.MAD and len(d.args) == 3:
        return _root(d.args[2], canon, depth + 1, seen)
    if d.op is O.CVT and d.args:
        return _root(d.args[0], canon, depth + 1, seen)
    if d.op is O.SELECT and len(d.args) == 3:
        a, b = _root(d.args[1], canon, depth + 1, seen), _root(d.args[2], canon, depth + 1, seen)
        if a is not None and b is not None and a.defn.attrs.get("buffer") == b.defn.attrs.get("buffer"):
            return a
        return None
    if d.op is O.PHI:
        seen = set() if seen is None else seen
        if v in seen:
            return None
        seen.add(v)
        roots = [_root(a, canon, depth + 1, seen) for a in d.args if canon(a) is not v]
        roots = [r for r in roots]
        known = [r for r in roots if r is not None]
        # operands that come back around the loop to this phi give None: ignore them
        if known and all(r.defn.attrs.get("buffer") == known[0].defn.attrs.get("buffer") for r in known):
            return known[0]
        return None
    return None


def roots_of(v: Value, canon: Canon, params: dict, depth: int = 0, seen: set | None = None) -> frozenset | None:
    """The buffers an address may point into: a static buffer's ADDR, or a
    kernel parameter in shared space (``.param .u64 .ptr .shared``, as clang
    emits OpenCL's ``__local`` arguments: each is its own allocation, apart
    from the others and from the static buffers), through additions,
    conversions, selects and PHIs (a pointer chosen between two arrays has
    both). None when some operand leads elsewhere."""
    if depth > 64:
        return None
    v = canon(v)
    d = v.defn
    if d is None:
        return None
    if d.op is O.ADDR:
        b = d.attrs.get("buffer")
        return frozenset({b}) if isinstance(b, str) else None
    if d.op is O.PARAM:
        p = params.get(d.attrs.get("name"))
        return frozenset({f"param:{p.name}"}) if p is not None and p.space == "shared" else None
    ops = None
    if d.op in (O.ADD, O.SUB) and d.args:
        # an address plus offsets: the operands that are addresses
        parts = [roots_of(a, canon, params, depth + 1, seen) for a in (d.args if d.op is O.ADD else d.args[:1])]
        known = [r for r in parts if r is not None]
        if len(known) != 1:
            return None
        return known[0]
    if d.op is O.MAD and len(d.args) == 3:
        ops = [d.args[2]]
    elif d.op is O.CVT and d.args:
        ops = [d.args[0]]
    elif d.op is O.SELECT and len(d.args) == 3:
        ops = [d.args[1], d.args[2]]
    elif d.op is O.PHI:
        seen = set() if seen is None else seen
        if v in seen:
            return frozenset()  # around a loop: what comes in from outside decides
        seen.add(v)
        ops = [a for a in d.args if canon(a) is not v]
    if not ops:
        return None
    out: set = set()
    for a in ops:
        r = roots_of(a, canon, params, depth + 1, seen)
        if r is None:
            return None
        out |= r
    return frozenset(out)


def _space(ins: Instr) -> str:
    sp = ins.attrs.get("space")
    if ins.op is O.CP_ASYNC:
        return "shared"
    if sp:
        return sp
    if ins.op in (O.LDMATRIX, O.STMATRIX):
        return "shared"
    return "generic"


def _bytes_of(dtype: str | None) -> int:
    if not dtype:
        return 4
    return max(1, type_bits(dtype) // 8)


def collect_accesses(kernel: Kernel, canon: Canon | None = None) -> list[Access]:
    canon = canon or Canon(kernel)
    addr_values: dict[str, Value] = {}
    for ins in kernel.instrs():
        if ins.op is O.ADDR and ins.attrs.get("buffer") not in addr_values:
            addr_values[ins.attrs.get("buffer")] = ins.result
    params = {p.name: p for p in kernel.params}
    out: list[Access] = []
    order = 0
    for b in kernel.blocks:
        for ins in b.instrs:
            order += 1
            if ins.op not in ACCESS_OPS or not ins.args:
                continue
            space = _space(ins)
            name = ins.attrs.get("buffer")
            if ins.op is O.CP_ASYNC:
                name = ins.attrs.get("buffer")
            base = None
            if isinstance(name, str) and name in kernel.buffers:
                base = addr_values.get(name)
            else:
                name = None
            if name is None:
                r = _root(ins.args[0], canon)
                if r is not None:
                    name = r.defn.attrs.get("buffer")
                    base = r
            roots = frozenset({name}) if name is not None else roots_of(ins.args[0], canon, params)
            if roots is not None and not roots:
                roots = None
            if name is None and roots is not None and len(roots) == 1:
                (only,) = roots
                if only.startswith("param:"):
                    name = only  # a shared-space parameter: its own buffer, of unknown size
            buf = kernel.buffers.get(name) if name else None
            if buf is not None and space in ("generic", ""):
                space = buf.space
            elif isinstance(name, str) and name.startswith("param:") and space in ("generic", ""):
                space = "shared"
            if space not in ("shared", "local"):
                continue
            if buf is not None and buf.space not in ("shared", "local"):
                continue
            kind = "copy" if ins.op is O.CP_ASYNC else "atomic" if ins.op is O.ATOMIC else \
                "read" if ins.op in READ_OPS else "write"  # fmt: skip
            dtype = ins.attrs.get("dtype")
            elem = _bytes_of(dtype) if dtype else (_bytes_of(buf.dtype) if buf is not None else 4)
            fragment = None
            if ins.op is O.LOAD:
                width = elem * max(1, len(ins.results))
            elif ins.op is O.STORE:
                n = len(ins.args) - 1
                if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
                    n -= 1
                width = elem * max(1, n)
            elif ins.op is O.ATOMIC:
                width = elem
            elif ins.op is O.CP_ASYNC:
                width = int(ins.attrs.get("bytes") or 16)
            elif ins.op in (O.LDMATRIX, O.STMATRIX):
                width = 16
            else:  # wmma fragments
                fragment = _fragment(ins, elem)
                width = fragment[0] * fragment[1]
            index = ins.attrs.get("index") if kernel.language == "python" else None
            if not isinstance(index, tuple) or not all(isinstance(x, Value) for x in index):
                index = None
            out.append(Access(ins, kind, space, name, buf, ins.args[0], base, width, elem, index, fragment, order,
                              roots))  # fmt: skip
    return out


def _fragment(ins: Instr, elem: int) -> tuple:
    """(rows, row bytes, stride value or None, element bytes) of a wmma fragment."""
    shape = ins.attrs.get("shape") or "m16n16k16"
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    M, N, K = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (16, 16, 16)
    which = ins.attrs.get("matrix") or "c"
    rows, cols = {"a": (M, K), "b": (K, N)}.get(which, (M, N))
    if ins.attrs.get("layout") == "col":
        rows, cols = cols, rows
    stride = None
    if ins.op is O.WMMA_LOAD and len(ins.args) > 1:
        stride = ins.args[1]
    elif ins.op is O.WMMA_STORE and ins.attrs.get("has_stride"):
        stride = ins.args[-1]
    dt = ins.attrs.get("dtype")
    e = _bytes_of(dt) if dt else elem
    return rows, cols * e, stride, e


def source_key(ins: Instr) -> tuple:
    """The source line an instruction reports at, with the calls it was
    inlined through (its ``.loc`` origin's frames in the user's own code),
    else its own line and column. The copies nvcc unrolls from one line
    share it, and TL202 reports one finding per key."""
    if ins.origin is not None:
        frame = report_frame(ins.origin)
        return tuple(o.line for o in frame.chain() if not is_toolkit_path(o.path)) or (frame.line,)
    return (ins.span.line, ins.span.column) if ins.span is not None else ("instr", id(ins))


def block_line(x) -> int:
    """The source line of a block (or a loop's header): its first located instruction's."""
    return _line(_first_located(x))


def block_where(x) -> str:
    """A block's (or a loop's header's) line in a message's words: ``line 7
    of k.cu``, ``PTX line 40`` (`tolk_lint.diagnostics.where`). The first
    instruction with a ``.loc`` is named, when one has it: nvcc puts the
    label and the counters' moves of a loop's header before its first
    ``.loc``, and the user's line says more than the PTX line of those."""
    b = x.header if isinstance(x, Loop) else x
    own = next((ins for ins in b.instrs if ins.span is not None and ins.origin is not None), None)
    return where(own or _first_located(x))


def _first_located(x) -> Instr | None:
    b = x.header if isinstance(x, Loop) else x
    for ins in b.instrs:
        if ins.span is not None:
            return ins
    for s in b.succs:
        for ins in s.instrs:
            if ins.span is not None:
                return ins
    return None
