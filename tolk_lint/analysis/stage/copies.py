"""Tile copies (TL302, TL303): the loops that fill a shared buffer at every
trip by plain copies global -> registers -> shared (the value stored is the
value loaded), then barrier and read it back; each with the depth a second
stage would give it on the target. A store of a computed value, or a
one-shot copy before the loop, is not a tile copy.

The commonest real copy is guarded at the matrix's edge: the value stored is
the load or a constant (``A[r, c] if c < n else 0``: a PHI or a select of the
two), or the loop stores the load on one branch and the constant on the
other; the stores together run at every trip. Those are tile copies too (a
constant fill is what a zero-filling ``cp.async`` does), reported at the
lines that load."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tolk_lint import budget
from tolk_lint.analysis.stage.box import Box, Leaf, box_of
from tolk_lint.analysis.stage.index import IndexEval, launch_block
from tolk_lint.analysis.stage.polynomials import Unstageable, p_const, p_subst, p_tf, tf_vars
from tolk_lint.analysis.stage.source import display_name, loop_line, loop_trips, source_line
from tolk_lint.analysis.stage.stages import SIDE_BY_SIDE, budget_bytes, depth, depth_reason, limited_by_budget
from tolk_lint.analysis.stage.trace import leaf_of, space_of
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.target import Target, parse_target

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.ir.cfg import Loop

log = logging.getLogger("tolk_lint.stage")

O = Opcode


@dataclass
class TileCopy:
    """A shared buffer a loop fills at every trip by plain copies global ->
    registers -> shared (the value stored is the value loaded), then
    barriers and reads."""

    kernel: str
    loop: Loop
    buffer: str
    stores: list[Instr]
    loads: list[Instr]
    barrier: Instr
    reads: list[Instr]
    fills: list[Instr] = field(default_factory=list)  # stores of a constant beside the copies (the edge)
    tile_bytes: int = 0  # the buffer's bytes: what a second stage doubles
    dtype: str = ""
    depth: int = 0
    depth_why: str = ""
    depths: dict[str, int] = field(default_factory=dict)
    used: int = 0
    budget: int = 0
    shared_bytes: int = 0
    optin_depth: int = 0
    optin_budget: int = 0
    loop_tiles: list[int] = field(default_factory=list)  # every buffer the loop stages
    reason: str | None = None
    budget_limited: bool = False  # the budget, not the target, holds the depth below 2
    box: Box | None = None  # what the copies read over the workgroup (report only)
    shape: tuple[int, ...] = ()  # the buffer's shape
    symbol: str = ""  # the buffer's name in the IR (the PTX symbol), where `buffer` is the name shown

    def data(self) -> dict[str, Any]:
        """The facts a TL302/TL303 diagnostic carries."""
        return {
            "depth": self.depth,
            "tile_bytes": self.tile_bytes,
            "buffer": self.buffer,
            "dtype": self.dtype,
            "stage_bytes": sum(self.loop_tiles),
            "used": self.used,
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "optin_depth": self.optin_depth,
            "depths": dict(self.depths),
        }

    @property
    def lines(self) -> list[int]:
        """The copy's source lines: its stores', or where a compiler merged the
        stores of two branches into one of no line (``.loc 1 0``), its loads'."""
        lined = any(ld.origin is not None for ld in self.loads)  # PTX with `.loc`: lines are the source's

        def line(ins: Instr) -> int | None:
            return source_line(ins) if ins.origin is not None or not lined else None

        got = {ln for ln in (line(s) for s in self.stores) if ln}
        if any(not line(s) for s in self.stores):
            got |= {ln for ln in (line(ld) for ld in self.loads) if ln}
        return sorted(got)

    @property
    def loop_line(self) -> int | None:
        return loop_line(self.loop)

    def at_line(self, line: int) -> Instr:
        """The copy to point a diagnostic at for ``line`` (its global load)."""
        for s in self.stores:
            if source_line(s) == line:
                return s
        for ld in self.loads:
            if source_line(ld) == line:
                return ld
        return self.stores[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "buffer": self.buffer,
            "lines": self.lines,
            "dtype": self.dtype,
            "tile_bytes": self.tile_bytes,
            "depth": self.depth,
            "depths": dict(self.depths),
            "used": self.used,
            "budget": self.budget,
            "shared_bytes": self.shared_bytes,
            "optin_depth": self.optin_depth,
            "reason": self.reason,
            "shape": list(self.shape),
            "box": [d.to_json() for d in self.box.dims] if self.box else None,
            "box_shape": list(self.box.shape) if self.box else None,
            "rereads": self.box.rereads if self.box else None,
        }


def _buffer_of(ins: Instr, ev: IndexEval) -> str | None:
    name = ins.attrs.get("buffer")
    if name:
        return str(name)
    if not ins.args:
        return None
    try:
        p = ev.poly(ins.args[0])
    except Unstageable:
        return None
    bufs = {a[5:] for m in p for a in m if a.startswith("addr:")}
    return next(iter(bufs)) if len(bufs) == 1 else None


def _after(cfg, a: Instr, b: Instr) -> bool:
    """Whether ``b`` runs after ``a`` in every trip that runs ``b`` (dominance)."""
    if a.block is b.block:
        return a.block.instrs.index(a) < b.block.instrs.index(b)
    return cfg.dominates(a.block, b.block)


def _anchor(cfg, lp: Loop, ins: Instr):
    """The block that stands for ``ins`` at ``lp``'s level: its own block, or
    the header of the loop nested in ``lp`` that holds it."""
    b = ins.block
    inner = cfg.loop_of(b)
    while inner is not None and inner is not lp and inner.parent is not lp:
        inner = inner.parent
    return b if inner is lp or inner is None else inner.header


def _every_trip(cfg, lp: Loop, ins: Instr) -> bool:
    anchor = _anchor(cfg, lp, ins)
    return all(cfg.dominates(anchor, latch) for latch in lp.latches)


def _after_in(cfg, lp: Loop, a: Instr, b: Instr) -> bool:
    """Whether ``b`` runs after ``a`` in every trip of ``lp`` that runs ``b``."""
    xa, xb = _anchor(cfg, lp, a), _anchor(cfg, lp, b)
    if xa is xb:
        return xa is a.block and a.block is b.block and _after(cfg, a, b)
    return cfg.dominates(xa, xb)


def _covers(cfg, lp: Loop, stores: list[Instr]) -> bool:
    """Whether every trip of ``lp`` runs one of ``stores`` (an if/else pair):
    no path from the header to a latch avoids their blocks (at ``lp``'s level)."""
    cut = {_anchor(cfg, lp, st) for st in stores}
    if lp.header in cut:
        return True
    seen = {lp.header}
    stack = [lp.header]
    latches = set(lp.latches)
    while stack:
        b = stack.pop()
        if b in latches:
            return False
        for s2 in b.succs:
            if s2 in lp.blocks and s2 is not lp.header and s2 not in seen and s2 not in cut:
                seen.add(s2)
                stack.append(s2)
    return True


def _before_in(cfg, lp: Loop, a: Instr, b: Instr) -> bool:
    """Whether ``b`` runs after ``a`` in every trip of ``lp`` that runs ``a``
    (``a`` on a branch: ``b`` post-dominates it and runs at every trip)."""
    if _after_in(cfg, lp, a, b):
        return True
    xa, xb = _anchor(cfg, lp, a), _anchor(cfg, lp, b)
    return xa is not xb and cfg.post_dominates(xb, xa) and all(cfg.dominates(xb, latch) for latch in lp.latches)


def tile_copies(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[TileCopy]:
    """The loops of ``kernel`` that copy a tile global -> registers -> shared
    at every trip, barrier, then read it; each with its depth on ``target``."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    cfg = cfg_of(kernel)
    if not cfg.loops:
        return []
    block, _ = launch_block(kernel)
    ev = IndexEval(kernel, block)
    stores_by_buf: dict[str, list[Instr]] = {}
    for ins in kernel.instrs():
        if ins.op in (O.STORE, O.CP_ASYNC, O.ATOMIC, O.WMMA_STORE, O.STMATRIX) and space_of(ins) == "shared":
            buf = _buffer_of(ins, ev) if ins.op is not O.CP_ASYNC else _cp_async_buffer(ins, ev)
            stores_by_buf.setdefault(buf or "?", []).append(ins)
    reads_by_buf: dict[str, list[Instr]] = {}
    for ins in kernel.instrs():
        if ins.op in (O.LOAD, O.WMMA_LOAD, O.LDMATRIX) and space_of(ins) == "shared":
            reads_by_buf.setdefault(_buffer_of(ins, ev) or "?", []).append(ins)
    barriers = [i for i in kernel.instrs() if i.op is O.BARRIER]
    found: dict[tuple[Loop, str], TileCopy] = {}
    for buf, stores in stores_by_buf.items():
        if buf == "?" or buf not in kernel.buffers:
            continue
        for lp in _loops_of(cfg, stores):
            budget.check("the staging analysis (the copies into `%s`)", buf)
            in_loop = [s for s in stores if s.block in lp.blocks]
            copies = [(s, _plain_copy(s, lp)) for s in in_loop]
            if not in_loop or any(ld is None for _, ld in copies) or not any(ld for _, ld in copies):
                continue
            if not all(_every_trip(cfg, lp, s) for s in in_loop) and not _covers(cfg, lp, in_loop):
                continue
            bar = next(
                (b for b in barriers if b.block in lp.blocks and all(_before_in(cfg, lp, s, b) for s in in_loop)),
                None,
            )
            if bar is None:
                continue
            reads = [r for r in reads_by_buf.get(buf, []) if r.block in lp.blocks and _after_in(cfg, lp, bar, r)]
            if not reads:
                continue
            loads = [ld for _, lds in copies for ld in lds]  # type: ignore[union-attr]
            b = kernel.buffers[buf]
            dtype = str(loads[0].attrs.get("dtype") or loads[0].results[0].type) if loads else b.dtype
            tc = TileCopy(kernel.name, lp, display_name(buf), [st for st, lds in copies if lds], loads, bar, reads,
                          fills=[st for st, lds in copies if not lds], tile_bytes=b.bytes or 0,
                          dtype=dtype)  # fmt: skip
            tc.shape = tuple(x or 0 for x in b.shape)
            tc.symbol = buf
            if b.dynamic or not b.bytes:
                tc.reason = f"`{buf}` is dynamic shared memory of unknown size"
            tc.box = _copy_box(tc, ev, cfg, settings)
            found[(lp, buf)] = tc
            break
    out = list(found.values())
    total = sum(b.bytes or 0 for b in kernel.buffers.values() if b.space == "shared")
    optin = settings.shared_budget == "optin"
    for tc in out:
        tiles = [t.tile_bytes for t in out if t.loop is tc.loop]
        tc.loop_tiles = tiles
        tc.used = max(0, total - sum(tiles))
        tc.budget = budget_bytes(target, optin)
        tc.optin_budget = budget_bytes(target, True)
        for name in SIDE_BY_SIDE:
            tc.depths[name] = depth(parse_target(name), tiles, tc.used, settings.stage, optin) if not tc.reason else 0
        if tc.reason:
            continue
        tc.depth, tc.depth_why = depth_reason(target, tiles, tc.used, settings.stage, optin)
        tc.optin_depth = depth(target, tiles, tc.used, settings.stage, True)
        tc.shared_bytes = tc.depth * sum(tiles) + tc.used
        tc.budget_limited = limited_by_budget(target, tiles, tc.used, settings.stage, optin)
    return sorted(out, key=lambda t: (t.lines[:1] or [0])[0])


def _copy_box(tc: TileCopy, ev: IndexEval, cfg, settings: Settings) -> Box | None:
    """The box a tile copy's global loads read at one trip: the trips of
    constant loops nested in the copy's loop count as lanes."""
    try:
        leaves = []
        inner: dict[str, int] = {}
        for ld in tc.loads:
            lf = leaf_of(ev, ld, ld.results.index(ld.results[0]) if ld.results else None)
            addr = lf.address
            for lp in cfg.loops_around(ld.block):
                if lp is tc.loop:
                    break
                key = f"trip:{lp.header.name}"
                trips = loop_trips(lp)
                if trips is None:
                    raise Unstageable("an inner copy loop without a constant trip count")
                var = f"inner.{lp.header.name}"
                inner[var] = trips
                addr = p_subst(addr, key, p_tf(("v", var)))
            lanes = {v: n for v, n in inner.items() if any(v in tf_vars(c) for c in addr.values())}
            for i in range(max(1, len(ld.results))):
                leaves.append(Leaf(ld, addr, lanes, p_const(i * lf.elem_bytes), lf.elem_bytes, i))
        return box_of(leaves, ev, False, leaves[0].elem_bytes, settings.solver_rlimit, prove=False)
    except (Unstageable, IndexError, ValueError) as e:
        log.debug("no box for the copy of %s: %s", tc.buffer, e)
        return None


def _loops_of(cfg, stores: list[Instr]) -> list[Loop]:
    seen: list[Loop] = []
    for s in stores:
        for lp in cfg.loops_around(s.block):
            if lp not in seen:
                seen.append(lp)
    return sorted(seen, key=lambda lp: len(lp.blocks))  # innermost first


def _plain_copy(store: Instr, lp: Loop) -> list[Instr] | None:
    """The global loads whose values ``store`` writes unchanged, [] for a
    store of a constant (an edge fill), or None. A value that is the load or
    a constant (a PHI or select of the two: the guarded copy at a matrix's
    edge) counts as the load."""
    if store.op is not O.STORE:
        return None
    vals = store.args[1:]
    if store.attrs.get("gate") is True or store.attrs.get("gated") is True:
        vals = vals[:-1]
    if not vals:
        return None
    loads: list[Instr] = []
    for v in vals:
        got = _loaded(v, lp)
        if got is None:
            return None
        loads += [d for d in got if d not in loads]
    return loads


def _loaded(v, lp: Loop, depth: int = 0) -> list[Instr] | None:
    """The global loads of ``lp`` that ``v`` is, through PHIs and selects
    whose other values are constants ([] for a constant alone); None otherwise."""
    d = v.defn
    if d is None or depth > 4:
        return None
    if d.op is O.CONST:
        return []
    if d.op is O.LOAD:
        return [d] if space_of(d) == "global" and d.block in lp.blocks else None
    if d.op is O.CVT and d.args and d.attrs.get("from_type", d.args[0].type) == v.type:
        return _loaded(d.args[0], lp, depth + 1)
    if d.op is O.PHI and d.block in lp.blocks and d.block is not lp.header:
        parts = d.args
    elif d.op is O.SELECT and len(d.args) == 3:
        parts = d.args[1:]
    else:
        return None
    out: list[Instr] = []
    loaded = 0
    for a in parts:
        got = _loaded(a, lp, depth + 1)
        if got is None:
            return None
        loaded += bool(got)
        out += [x for x in got if x not in out]
    return out if loaded <= 1 else None  # one source or the other is no copy of one tile


def _cp_async_buffer(ins: Instr, ev: IndexEval) -> str | None:
    try:
        p = ev.poly(ins.args[0])
    except Unstageable:
        return None
    bufs = {a[5:] for m in p for a in m if a.startswith("addr:")}
    return next(iter(bufs)) if len(bufs) == 1 else None
