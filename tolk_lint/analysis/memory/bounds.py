"""The out-of-bounds search (TL202 shared-out-of-bounds).

Each shared or local access of an array of known size is asked whether some
thread, at some trip, can leave the array: first by the concrete pass (every
thread of the block at every trip residue: all in bounds, or a thread that
leaves), or without a launch shape by the thread rank (`ranks`), then by
Z3 over one context where each loop's trip is free. A Python access is
judged per dimension of its index (Numba wraps ``-n..-1``), a PTX access
by its byte offset from the array's base. The
first access of each source line with a finding is reported; the others,
unrolled copies of the same line, are not asked about.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint import budget
from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.accesses import block_line, block_where, pretty_buffer, source_key
from tolk_lint.analysis.memory.evaluator import Unevaluable, sym_add
from tolk_lint.analysis.memory.query import Query, model_value, overflowing_thread
from tolk_lint.analysis.memory.ranks import rank_in_bounds
from tolk_lint.ir.nodes import type_bits

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore

log = logging.getLogger("tolk_lint.memory")


@dataclass(eq=False)
class OutOfBounds:
    access: Access
    witness: dict | None
    detail: str
    assumed: str
    solver: str = "sat"
    # (query, condition): what the solver was asked, for the launch contract (TL205) to ask again
    goal: tuple | None = None
    trips: dict | None = None  # loop -> the thread's trip term in ``goal``'s query


def find_out_of_bounds(mf: MemoryCore) -> list[OutOfBounds]:
    """The accesses that may leave their array, in program order: the
    first of each source line (`source_key`). Z3 is loaded only when some
    access is asked about (most kernels' are cleared by the concrete pass,
    or have none)."""
    z3 = None
    out = []
    q: Query | None = None
    reported: set = set()  # source lines with a finding: their later accesses are not asked about
    for n, acc in enumerate(mf.accesses, 1):
        budget.check("the bounds search (access %d of %d)", n, len(mf.accesses))
        buf = acc.buffer
        if buf is None or buf.dynamic:
            continue
        line = source_key(acc.instr)
        if line in reported:
            continue
        conc = _concrete_verdict(mf, acc)
        if conc == "clear" or (conc is None and rank_in_bounds(mf.ranks, acc, mf.k.launch.threads or 1024)):
            mf.concrete_cleared += 1
            continue
        try:
            # one context for every access: each trip is a free variable
            # of its loop (tag "o"), the same in every question asked here
            if q is None:
                z3 = smt.z3mod()
                q = Query(mf)  # its own: the race search's has other trip symbols
            got = _question(mf, q, acc)
            if got is None:
                continue
            tr, bad, detail_vals = got
            v = None
            if conc is None and mf.solve(q, bad).status == "unsat":
                continue  # in bounds whatever the path (its conditions are not even encoded)
            cond = q.conditions(acc, 0, tr)
            q.context(tr)
            if isinstance(conc, int):
                v = mf.solve(q, z3.And(*cond, bad, q.enc.linear(0) == conc))
                if v.status != "sat":
                    v = None
            if v is None:
                v = mf.solve(q, z3.And(*cond, bad))
            if v.status == "sat" and q.enc.used_strides:
                # found over counters whose products were abstracted: ask again
                # with them exact (a model there is a real witness; none, in bounds)
                # (the model found, small or not, when it satisfies that already: `MemoryCore.model_of`)
                qx = mf.query(exact=True)
                gx = _question(mf, qx, acc)
                goal_x = z3.And(*qx.conditions(acc, 0, gx[0]), gx[1]) if gx is not None else None
                mx = mf.model_of(qx, goal_x, v.small_model(), v.model) if gx is not None else None
                vx = smt.Verdict("sat", mx) if mx is not None else mf.solve(qx, goal_x) if gx is not None else None
                if vx is not None and vx.status == "unsat":
                    continue
                if vx is not None and vx.status == "sat":
                    q, v = qx, vx
                    tr, bad, detail_vals = gx
        except Exception as e:  # noqa: BLE001
            log.debug("memory: bounds query failed: %r", e, exc_info=True)
            continue
        if v.status == "unsat":
            continue
        reported.add(line)
        assumed = mf.assumed_launch()
        goal = (q, z3.And(*cond, bad))
        if v.status == "unknown":
            out.append(OutOfBounds(acc, None, "", assumed, "unknown", goal, tr))
            continue
        m = v.small_model()  # the witness shown: small threads and inputs
        vals = [model_value(m, e) for e in detail_vals]
        if mf.k.language == "python" and acc.index is not None:
            detail = "index " + ", ".join(str(_signed(x, 64)) for x in vals)
        else:
            off_v = vals[0] if isinstance(vals[0], int) else None
            if off_v is not None:
                off_s = _signed(off_v, detail_vals[0].size())
                detail = f"byte offset {off_s}" + (f"..{off_s + acc.width - 1}" if acc.width > 1 else "")
            else:
                detail = "an offset"
        extra = {"buffer": pretty_buffer(acc.root), "access": detail}
        w = smt.witness_of(q.enc, m, extra)
        t0 = tuple(w["threads"][0])
        w["threads"] = [t0]
        w.pop("trips", None)
        trips = {f"loop@{block_line(lp)}": model_value(m, e) for lp, e in tr.items()}
        loops = {f"loop@{block_line(lp)}": block_where(lp) for lp in tr}  # each key's loop, in words
        if trips:
            w["trips"] = trips
        desc = f"thread {t0[0] if not (t0[1] or t0[2]) else '(' + ','.join(map(str, t0)) + ')'}"
        if mf.k.launch.block is None:
            bl = w["block"]
            desc += f" of a block of {bl[0]}x{bl[1]}x{bl[2]}"
        blk = [model_value(m, c) for c in q.enc.ctaid]
        if any(isinstance(b, int) and b for b in blk):  # a global index may need a far block: say which
            w["ctaid"] = blk
            desc += f" in block ({blk[0]},{blk[1]},{blk[2]})"
        if trips:
            desc += " at " + ", ".join(f"trip {k} of the loop at {loops[lp]}" for lp, k in trips.items())
        inputs = w.get("inputs") or {}
        if inputs:
            desc += " when " + smt.inputs_text(mf.k, inputs)
        w["description"] = desc
        if any(z3.is_true(m.eval(o, model_completion=True)) for o in q.scaled_overflows(acc, 0)):
            detail += " (its scaled index overflows 32 bits: the array's start plus a wrapped offset)"
        out.append(OutOfBounds(acc, w, detail, assumed, "sat", goal, tr))
    return out


def _question(mf: MemoryCore, q: Query, acc: Access):
    """(trips, "it leaves the array", the values a finding reports) of
    ``acc`` in ``q``, each trip a free variable of its loop (tag "o", the
    same in every question a context is asked); None when it has no size."""
    z3 = q.z3
    buf = acc.buffer
    vec = mf.phases.vec0(acc.instr.block)
    tr = q.trip_exprs(acc, tuple((lp, "free", 0) for lp, _k, _n in vec), "o")
    q.context(tr)
    python = mf.k.language == "python"
    if python and acc.index is not None and len(acc.index) == len(buf.shape) and all(buf.shape):
        terms = []
        idx_vals = []
        for x, dim in zip(acc.index, buf.shape):
            e = q.enc.fit(q.enc.enc(x, 0), 64, True)
            idx_vals.append(e)
            terms.append(z3.Or(e < -dim, e >= dim))
        return tr, z3.Or(*terms), idx_vals
    nbytes = buf.bytes
    if nbytes is None or acc.base is None:
        return None
    start, width = q.footprint(acc, 0, tr)
    W = start.size()
    if python:
        base = q.enc.fit(q.enc.enc(acc.base, 0), W, False)
    else:
        base = q.enc.fit(q.enc._bv(q.enc.enc(acc.base, 0)), W, False)
    off = start - base
    if not isinstance(width, int):
        width = q.enc.fit(width, W)
    if isinstance(width, int):
        bad = z3.BoolVal(True) if width > nbytes else z3.UGT(off, nbytes - width)
    else:
        bad = z3.Or(z3.UGT(width, nbytes), z3.UGT(off, z3.BitVecVal(nbytes, W) - width))
    overflows = q.scaled_overflows(acc, 0)
    if overflows:
        bad = z3.Or(bad, *overflows)
    return tr, bad, [off]


def _concrete_verdict(mf: MemoryCore, acc: Access):
    """"clear" when every thread stays in bounds at every trip residue,
    a thread (int) that leaves them, or None (cannot tell)."""
    buf = acc.buffer
    block, _assumed = mf.concrete_block
    if block is None or buf is None or acc.fragment is not None:
        return None
    loops = mf.phases.loops(acc.instr.block)
    P = mf.period
    if P ** len(loops) > 64:
        return None

    python = mf.k.language == "python" and acc.index is not None and len(acc.index) == len(buf.shape) \
        and all(buf.shape)  # fmt: skip
    for rs in itertools.product(range(P), repeat=len(loops)):
        budget.check("the bounds search (every thread, each trip residue)")
        ctx = tuple((lp, ("free", r, "o")) for lp, r in zip(loops, rs))
        ev = mf.evaluator(ctx)
        if ev is None:
            return None
        try:
            act = ev.active(acc.instr.block)
            if python:
                for x, dim in zip(acc.index, buf.shape):
                    sy, c = ev.ev(x)
                    if sy:
                        return None
                    cs = c if isinstance(c, list) else [c] * ev.n
                    for t, i in enumerate(cs):
                        if (act is None or act[t]) and not -dim <= i < dim:
                            return t
                continue
            if acc.base is None or buf.bytes is None:
                return None
            t_over = overflowing_thread(ev, acc, mf.k.language)
            if t_over is not None and (act is None or act[t_over]):
                return t_over  # its scaled index overflows: out of bounds wherever it lands
            sy, c = ev.ev(acc.addr)
            sb, cb = ev.ev(acc.base)
        except Unevaluable:
            return None
        if sym_add(sy, sb, -1):
            return None
        mod = 1 << max(8, type_bits(acc.addr.type)) if acc.addr.type != "ptr" else 1 << 64
        cs = c if isinstance(c, list) else [c] * ev.n
        base_c = cb if isinstance(cb, int) else None
        if base_c is None:
            return None
        limit = buf.bytes - acc.width  # the last byte offset the access may start at
        if base_c <= min(cs) and max(cs) - base_c <= limit:
            continue  # every thread in bounds (no wrap-around either)
        for t, x in enumerate(cs):
            if (x - base_c) % mod > limit and (act is None or act[t]):
                return t
    return "clear"


def _signed(x, w: int):
    if not isinstance(x, int):
        return x
    return x - (1 << w) if x >= 1 << (w - 1) else x
