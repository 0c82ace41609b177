"""A race finding (`Race`): what proved it, and how it is worded.

A race is proved either by a solver model (`race_finding`: the model's
threads, trips, inputs and offset are its witness) or by the concrete pass
(`direct_race`: two threads of the launch that collide, with no loop or
uniform condition left in doubt). Either way the finding points at the
access that comes later in program order, names its kind (TL201:
read-write, write-write; TL204: which hazard on a copy's destination) and
carries a one-line description of its witness. `races_by_line` groups the
findings by the source line they point at, as the rules report them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.accesses import block_line, block_where, pretty_buffer
from tolk_lint.analysis.memory.concrete import q0_trips
from tolk_lint.analysis.memory.evaluator import Unevaluable, addr_terms
from tolk_lint.analysis.memory.phases import vec_repr
from tolk_lint.analysis.memory.query import model_value
from tolk_lint.ir.nodes import is_float
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.copies import PendingWalk
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.query import Query

O = Opcode

SAME_VALUE_BUDGET = 20  # "both store the same value" is asked with rlimit / this


@dataclass(eq=False)
class Race:
    """An unordered pair: TL201 (``code``), or a cp.async hazard (TL204).

    ``later`` is where the diagnostic points (the access later in program
    order; for a pair on one instruction, that instruction), ``other`` the
    other access. ``kind``: ``read-write``, ``write-write`` (TL201);
    ``read-before-wait``, ``read-before-barrier``, ``copy-into-read``,
    ``copy-over-inflight``, ``write-over-inflight``, ``copy-over-write``
    (TL204)."""

    code: str
    kind: str
    later: Access
    other: Access
    copy: Access | None = None
    same_thread: bool = False
    same_value: bool = False
    witness: dict | None = None
    solver: str = "sat"  # or "unknown"
    reason: str = ""
    walk: PendingWalk | None = None
    model: Any = field(default=None, repr=False)
    # (query, condition): what the solver was asked, for the launch contract (TL205) to ask again
    goal: tuple | None = field(default=None, repr=False)
    # (query, condition, access, access): instances of this finding's line the search did not
    # ask about (`RaceSearch._covering`), which a launch contract (TL205) must rule out too
    also: list = field(default_factory=list, repr=False)
    # each thread's trips (loop -> trip term) in ``goal``'s query, when it asked the question
    trips: tuple = field(default=(), repr=False)


def races_by_line(races: Iterable[Race], code: str) -> dict[tuple, list[Race]]:
    """Findings of ``code`` grouped by where they point (the user's line)."""
    out: dict[tuple, list[Race]] = defaultdict(list)
    for r in races:
        if r.code != code:
            continue
        ins = r.later.instr
        if ins.origin is not None:
            # the line with every call it was inlined through: two races inside
            # one inlined device function are two findings
            key = tuple((o.path, o.line) for o in ins.origin.chain())
        else:
            key = (ins.span.path if ins.span else "", ins.span.line if ins.span else 0, ins.span.column if ins.span else 0)
        out[key].append(r)
    return out


def race_finding(mf: MemoryCore, a: Access, ta, b: Access, tb, code: str, q: Query | None, status: str, walks,
                 same_thread: bool, model, reason: str = "", fa=None, fb=None, kind_vec=None) -> Race:  # fmt: skip
    """The race of ``a`` (trips ``ta``) and ``b`` (trips ``tb``) the solver
    answered ``status`` on, with the witness of its ``model`` (if any);
    ``kind_vec`` as for `race_kind`."""
    later, other = b, a
    trips_a = trips_b = None
    if model is not None and ta is not None and tb is not None:
        trips_a = {lp: model_value(model, e) for lp, e in ta.items()}
        trips_b = {lp: model_value(model, e) for lp, e in tb.items()}
        if not mf.order.after_at_trips(b, trips_b, a, trips_a):
            later, other = a, b
    elif not mf.order.program_after(a, b):
        later, other = a, b
    copy = a if a.kind == "copy" else (b if b.kind == "copy" else None)
    kind = race_kind(code, later, other, copy, same_thread, walks, kind_vec)
    walk = walks.get(copy) if (walks and copy is not None) else None
    witness = None
    same_value = False
    if model is not None and q is not None:
        witness = _witness(mf, q, model, a, trips_a, b, trips_b, fa, same_thread)
        if code == "TL201" and stores_a_value(a) and stores_a_value(b) and fa is not None and fb is not None:
            same_value = _same_value(mf, q, a, ta, b, tb, fa, fb, model)
    return Race(code, kind, later, other, copy, same_thread, same_value, witness, status, reason, walk, model)


def direct_race(mf: MemoryCore, a: Access, b: Access, hint, code: str, walks, same_thread,
                kind_vec=None) -> Race:  # fmt: skip
    """A race the concrete pass proved: threads ``hint[0]`` and ``hint[1]``
    run both accesses (no loop around them, every deciding branch known);
    ``kind_vec`` as for `race_kind`."""
    h0, h1, _exact, ca, cb = hint
    tra, trb = q0_trips(mf, ca) or {}, q0_trips(mf, cb) or {}
    later, other = (b, a) if mf.order.after_at_trips(b, trb, a, tra) else (a, b)
    copy = a if a.kind == "copy" else (b if b.kind == "copy" else None)
    kind = race_kind(code, later, other, copy, same_thread, walks, kind_vec)
    ev = mf.evaluator(ca)
    bx, by, _bz = mf.k.launch.block

    def tid(i):
        return (i % bx, (i // bx) % by, i // (bx * by))

    threads = [tid(h0)] if same_thread else [tid(h0), tid(h1)]
    w: dict[str, Any] = {"threads": threads, "block": tuple(mf.k.launch.block), "inputs": {},
                         "buffer": pretty_buffer(a.root or b.root)}  # fmt: skip
    try:
        sa, c = addr_terms(ev, a)
        cs = c if isinstance(c, list) else [c] * ev.n
        if mf.k.language == "python":
            w["offset"] = cs[h0]
            w["element"] = cs[h0] // max(1, a.elem)
        elif a.base is not None:
            sb, cbase = ev.ev(a.base)
            if sb == sa and isinstance(cbase, int):
                w["offset"] = cs[h0] - cbase
    except Unevaluable:
        pass
    trips, loops = _trips(tra, trb)
    if trips:
        w["trips"] = trips
    same_value = False
    if code == "TL201" and stores_a_value(a) and stores_a_value(b) and len(a.instr.args) > 1 \
            and len(b.instr.args) > 1:  # fmt: skip
        try:
            ea, eb = ev, mf.evaluator(cb)
            xa, xb = ea.ev(a.instr.args[1]), eb.ev(b.instr.args[1])
            va_ = xa[1][h0] if isinstance(xa[1], list) else xa[1]
            vb_ = xb[1][h1] if isinstance(xb[1], list) else xb[1]
            same_value = xa[0] == xb[0] and va_ == vb_ and not is_float(a.instr.args[1].type)
        except Unevaluable:
            pass
    w["description"] = _describe(mf, w, a, b, same_thread, loops)
    walk = walks.get(copy) if (walks and copy is not None) else None
    return Race(code, kind, later, other, copy, same_thread, same_value, w, "sat", "", walk)


def race_kind(code, later: Access, other: Access, copy, same_thread, walks, kind_vec=None) -> str:
    """The kind of a race (see `Race`). ``kind_vec``: the trips of the
    access paired with a copy, which tell a read the copying thread itself
    makes before the retiring wait."""
    if code == "TL201":
        def only_writes(acc: Access) -> bool:  # an exchange nothing reads the old value of only writes
            return acc.writes and (not acc.reads or stores_a_value(acc))

        return "write-write" if only_writes(later) and only_writes(other) else "read-write"
    x = other if later is copy else later
    if later is copy:
        if x.kind == "copy":
            return "copy-over-inflight"
        return "copy-into-read" if x.kind == "read" else "copy-over-write"
    if x.kind == "copy":
        return "copy-over-inflight"
    if x.kind in ("write", "atomic") and not x.reads:
        return "write-over-inflight"
    w = walks.get(copy) if walks else None
    if same_thread or w is None or not w.retiring:
        return "read-before-wait"
    # met on the copying thread's own path before the retiring wait
    vx = kind_vec
    if vx is not None and any(acc is x and vec_repr(v) == vec_repr(vx) for acc, v in w.own):
        return "read-before-wait"
    return "read-before-barrier"


def stores_a_value(acc: Access) -> bool:
    """A plain store, or an atomic exchange whose old value nothing reads
    (`atomicExch(&flag, 1)` beside `flag = 1`, eigenvalues' bisection): both
    leave the word holding the value they store, so two of them that store
    one value race only in which lands last."""
    ins = acc.instr
    if acc.kind == "write":
        return ins.op is O.STORE
    if acc.kind != "atomic" or ins.op is not O.ATOMIC or ins.attrs.get("op") != "exch":
        return False
    k = ins.block.kernel if ins.block is not None else None
    if k is None:
        return False
    read = k.cached("values_read", _values_read)
    return not any(r in read for r in ins.results)


def _values_read(k) -> frozenset:
    return frozenset(a for i in k.instrs() for a in i.args)


def _same_value(mf: MemoryCore, q: Query, a, ta, b, tb, fa, fb, model=None) -> bool:
    """Whether the two writes store one value wherever they meet (a small budget)."""
    z3 = q.z3
    try:
        va = q.stored_value(a, 0, ta)
        vb = q.stored_value(b, 1, tb)
        if va is None or vb is None or va.size() != vb.size():
            return False
        if model is not None and model_value(model, va) != model_value(model, vb):
            return False  # the witness itself stores two values
        base = q.conditions(a, 0, ta) + q.conditions(b, 1, tb)
        goal = z3.And(*base, q.overlap(fa, fb), va != vb)
        # Only the message's wording depends on this: a small budget, no
        # second solver; "don't know" words it as two values.
        return mf.solve(q, goal, mf.rlimit // SAME_VALUE_BUDGET, fallback=False).status == "unsat"
    except Exception:  # noqa: BLE001
        return False


def _witness(mf: MemoryCore, q: Query, model, a: Access, trips_a, b: Access, trips_b, fa, same_thread) -> dict:
    """The witness of a solver's model: threads, trips, inputs, address and offset."""
    enc = q.enc
    extra: dict[str, Any] = {}
    try:
        addr = model_value(model, fa[0])
        extra["address"] = addr
        if a.root is not None and a.base is not None and mf.k.language != "python":
            base = model_value(model, enc.fit(enc.enc(a.base, 0), fa[0].size()))
            if isinstance(addr, int) and isinstance(base, int):
                extra["offset"] = (addr - base) % (1 << fa[0].size())
        elif mf.k.language == "python" and a.root is not None:
            base = model_value(model, enc.fit(enc.shared(f"pybuf:{a.root}", "s64"), fa[0].size()))
            if isinstance(addr, int) and isinstance(base, int):
                extra["offset"] = (addr - base) % (1 << fa[0].size())
                extra["element"] = extra["offset"] // max(1, a.elem)
    except Exception:  # noqa: BLE001
        pass
    extra["buffer"] = pretty_buffer(a.root or b.root)
    trips, loops = _trips(trips_a, trips_b)
    w = smt.witness_of(enc, model, extra)
    if trips:
        w["trips"] = trips
    else:
        w.pop("trips", None)
    if same_thread:
        w["threads"] = [w["threads"][0]]
    w["description"] = _describe(mf, w, a, b, same_thread, loops)
    return w


def _trips(first: dict, second: dict) -> tuple[dict, dict[str, str]]:
    """Each thread's trip of each loop, keyed ``loop@<line>`` (the witness's
    JSON), and each key's loop in a message's words (``line 7 of k.cu``)."""
    trips: dict = {}
    loops: dict[str, str] = {}
    for label, tr in (("first", first), ("second", second)):
        if tr:
            trips[label] = {}
            for lp, v in tr.items():
                key = f"loop@{block_line(lp.header)}"
                trips[label][key] = v
                loops[key] = block_where(lp.header)
    return trips, loops


def _describe(mf: MemoryCore, w: dict, a: Access, b: Access, same_thread: bool, loops: dict[str, str]) -> str:
    """The witness in words: the threads, the element or offset, the trips
    (``loops`` names each loop of ``w["trips"]``), the inputs."""
    def th(x):
        x = tuple(x)
        return "(" + ",".join(str(i) for i in x) + ")" if (len(x) > 1 and (x[1] or x[2])) else str(x[0])

    ts = w.get("threads") or []
    if same_thread:
        desc = f"thread {th(ts[0])}"
    else:
        desc = f"threads {th(ts[0])} and {th(ts[1])}" if len(ts) > 1 else "two threads"
    if mf.k.launch.block is None and w.get("block"):
        bl = w["block"]
        desc += f" of a block of {bl[0]}x{bl[1]}x{bl[2]}"
    if "offset" in w:
        if "element" in w:
            desc += f", element {w['element']} of `{w.get('buffer')}`"
        else:
            desc += f", byte offset {w['offset']} of `{w.get('buffer')}`"
    trips = w.get("trips") or {}
    tparts = []
    for label in ("first", "second"):
        for loop, k in (trips.get(label) or {}).items():
            who = th(ts[0]) if label == "first" or same_thread else th(ts[1] if len(ts) > 1 else ts[0])
            tparts.append(f"thread {who} at trip {k} of the loop at {loops.get(loop, 'line ' + loop[5:])}")
    if tparts:
        desc += " (" + "; ".join(dict.fromkeys(tparts)) + ")"
    inputs = w.get("inputs") or {}
    if inputs:
        desc += " when " + smt.inputs_text(mf.k, inputs)
    return desc
