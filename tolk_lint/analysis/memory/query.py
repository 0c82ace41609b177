"""The solver's side of the memory queries: one Z3 context per kernel.

A `Query` turns an access at given loop trips into terms: its trips
(anchored at a phase start, exact, or free), the conditions under which the
thread runs it (valid trips, the paths to it, the exit trips of the loops
it left, counted exits that do not wrap), its footprint, and its staying
inside its array. The shared buffers are laid out disjoint, aligned and
below the shared window. `solve_bv` asks the questions through a
bit-blasting tactic with the deterministic resource limit, `model_value`
reads a model.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tolk_lint.analysis import smt
from tolk_lint.analysis.memory.encoder import MemoryEncoder
from tolk_lint.analysis.memory.loops import TRIP_BOUND, const_int, exit_tests, inside_successor
from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Block, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.phases import Vec

O = Opcode

SHARED_WINDOW = 1 << 24  # shared addresses live below this
_ADDEND_WALK = 8  # values of an address's sum searched for scaled indices


def scaled_addends(acc: Access, language: str) -> list[tuple[Any, Opcode, int]]:
    """The ``x << c`` and ``x * c`` terms added into a PTX address (the
    element index times the element size, a row times its pitch), as
    ``(x, op, c)``. nvcc computes shared addresses in 32 bits, where ``bi *
    4`` with ``bi = 3 * 2**30`` wraps to ``base + 0``; in CUDA C the pointer
    is 12 GiB past the array. An access whose scaled index does not fit the
    register (as a signed value) is out of bounds (TL202's) wherever the
    wrapped address lands, and is no race on the array. The index itself may
    wrap (unsigned arithmetic does, in C too): only the scaling is checked."""
    if language == "python" or acc.addr is None:
        return []
    out = []
    stack, seen = [acc.addr], 0
    while stack and seen < _ADDEND_WALK:
        v = stack.pop()
        seen += 1
        d = v.defn
        if d is None or d.attrs.get("wide") or d.attrs.get("hi") or len(d.args) != 2:
            continue
        if d.op is O.ADD:
            stack.extend(d.args)
            continue
        if d.op not in (O.SHL, O.MUL):
            continue
        c, x = const_int(d.args[1]), d.args[0]
        if c is None and d.op is O.MUL:
            c, x = const_int(d.args[0]), d.args[1]
        if c is not None and not (d.op is O.MUL and c in (0, 1, -1)):
            out.append((x, d.op, c))
    return out


def overflowing_thread(ev, acc: Access, language: str) -> int | None:
    """A thread of the concrete pass's evaluator ``ev`` whose scaled index
    of ``acc`` overflows (`scaled_addends`), or None (none does, or a value
    it cannot evaluate)."""
    from tolk_lint.analysis.memory.evaluator import Unevaluable

    for x, op, c in scaled_addends(acc, language):
        try:
            sy, vals = ev.ev(x)
        except Unevaluable:
            continue
        if sy:
            continue
        w = type_bits(x.type) if x.type != "ptr" else 64
        half = 1 << (w - 1)
        for t, xv in enumerate(vals if isinstance(vals, list) else [vals]):
            xs = (xv + half) % (1 << w) - half
            y = xs << c if op is O.SHL else xs * c
            if not -half <= y < half:
                return t
    return None


class Footprint(tuple):
    """(start, width) in bytes, the bounding box an access touches; for a
    wmma fragment stored or loaded with a stride, ``rows`` = (rows, row
    bytes, pitch in bytes) says which bytes of the box it really touches
    (`Query.overlap`): two warps' 16x16 tiles side by side in one row-major
    array have overlapping boxes and no byte in common."""

    rows: tuple | None = None


class Query:
    """One Z3 context: one access of thread 0 against partners of thread 1
    (or of thread 0 itself)."""

    def __init__(self, mf: MemoryCore, exact: bool = False):
        self.mf = mf
        self.k = mf.k
        self.enc = MemoryEncoder(self.k, mf.info, "workgroup", point=None)
        self.enc.exact_products = exact
        self.enc.canon = mf.canon
        self.enc.geo = mf.geo
        self.enc.rings = mf.rings
        self.enc.invariants = mf.invariants
        self.enc.selected_ivs = mf.selected_ivs
        self.z3 = self.enc.z3
        self.anchors: dict[Loop, Any] = {}
        self._free_names: set[str] = set()
        self._cache: dict[tuple, Any] = {}
        self.base_constraints: list = []
        self.trips_of: dict[tuple, dict[Loop, Any]] = {}
        smt._assume(self.enc)
        self._layout()
        if self.k.launch.block is None:
            # a kernel that never reads tid.y (tid.z) is launched with a flat block
            for d, dim in ((1, "y"), (2, "z")):
                if dim not in mf.tid_dims:
                    self.enc.constraints.append(self.enc.ntid[d] == 1)

    def _layout(self) -> None:
        """Shared buffers are disjoint, aligned and below the shared window."""
        z3 = self.z3
        enc = self.enc
        if self.k.language == "python":
            return
        bases = []
        for name, buf in self.k.buffers.items():
            if buf.space != "shared":
                continue
            v = self.mf.addr_values.get(name)
            if v is None:
                continue
            try:
                b = enc.fit(enc.enc(v, 0), 64)
            except Exception:  # noqa: BLE001
                continue
            al = max(1, buf.align or 1)
            c = [z3.ULT(b, SHARED_WINDOW)]
            if al & (al - 1) == 0 and al > 1:
                c.append(b & (al - 1) == 0)
            enc.constraints.extend(c)
            bases.append((b, buf))
        for i in range(len(bases)):
            for j in range(i + 1, len(bases)):
                (a, ba), (b, bb) = bases[i], bases[j]
                na, nb = ba.bytes, bb.bytes
                if ba.dynamic or na is None:
                    if nb is not None and not bb.dynamic:
                        enc.constraints.append(z3.UGE(a, b + nb))
                    continue
                if bb.dynamic or nb is None:
                    enc.constraints.append(z3.UGE(b, a + na))
                    continue
                enc.constraints.append(z3.Or(z3.ULE(a + na, b), z3.ULE(b + nb, a)))

    # trips -------------------------------------------------------------------------
    def trip_exprs(self, acc: Access, vec: Vec, tag: str) -> dict[Loop, Any]:
        z3 = self.z3
        w = self.enc._trip_width
        out: dict[Loop, Any] = {}
        for lp, k, n in vec:
            if k[0] == "h":
                continue
            k = k[1:] if k[0] == "x" else k
            if k in ("relge", "absge"):
                extra = z3.BitVec(f"g_{lp.header.name}_{tag}", w)
                if k == "relge":
                    s = self.anchors.get(lp)
                    if s is None:
                        s = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                        self.enc.constraints += [s >= 0, s < TRIP_BOUND]
                    base = s + n
                else:
                    base = z3.BitVecVal(n, w)
                # extra >= 0 and small: the trip bound in `conditions` keeps the sum in range
                out[lp] = base + z3.ZeroExt(w - 28, z3.Extract(27, 0, extra))
                continue
            if k == "rel":
                s = self.anchors.get(lp)
                if s is None:
                    s = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                    self.enc.constraints += [s >= 0, s < TRIP_BOUND]
                out[lp] = s + n if n else s
            elif k == "abs":
                out[lp] = z3.BitVecVal(n, w)
            else:
                # bounded by `conditions` (kept out of the shared constraints, which every query carries)
                out[lp] = z3.BitVec(f"k_{lp.header.name}_{tag}", w)
        return out

    def cached(self, key: tuple, compute):
        """Per-kernel memo of encodings (conditions, footprints) by access,
        trip relations and thread: the query context is shared by all pairs."""
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = compute()
        return got

    def context(self, trips: dict[Loop, Any]) -> None:
        self.enc.trips = {lp: (e, e) for lp, e in trips.items()}

    def history(self, vec: Vec, t: int, trips: dict[Loop, Any], tag: str) -> list:
        """Where the thread left an inner loop in the trip of its enclosing
        loop before this one (``h`` entries): that loop really ran so."""
        z3 = self.z3
        enc = self.enc
        out = []
        w = enc._trip_width
        for lp, k, n in vec:
            if k[0] != "h" or lp.parent is None or lp.parent not in trips:
                continue
            if k == "hrel":
                sym = self.anchors.get(lp)
                if sym is None:
                    sym = self.anchors[lp] = z3.BitVec(f"s_{lp.header.name}", w)
                    enc.constraints += [sym >= 0, sym < TRIP_BOUND]
                T = sym + n
            elif k == "habs":
                T = z3.BitVecVal(n, w)
            else:
                continue
            ctx = dict(trips)
            ctx.pop(lp, None)
            ctx[lp.parent] = trips[lp.parent] - 1
            self.context(ctx)
            try:
                here = enc.exits_at(lp, t, T)
                prev = enc.exits_at(lp, t, T - 1)
            except Exception:  # noqa: BLE001
                continue
            out += [trips[lp.parent] >= 1, T >= 0] + self.geometric(lp, T) + self.geometric(lp.parent, trips[lp.parent])
            if here is not None:
                out.append(here)
            if prev is not None:
                out.append(z3.Or(T == 0, z3.Not(prev)))
        self.context(trips)
        return out

    def conditions(self, acc: Access, t: int, trips: dict[Loop, Any], vec: Vec = ()) -> list:
        """The thread runs ``acc`` at these trips: valid trips, the paths to it,
        and the exit trips of the loops it came out of."""
        z3 = self.z3
        enc = self.enc
        out = self.history(vec, t, trips, "h") if vec else []
        self.context(trips)
        loops = self.mf.phases.loops(acc.instr.block)
        inside = set(loops)
        for lp, k in trips.items():
            if lp in inside:
                continue
            out += [k >= 0, k < TRIP_BOUND] + self.counted(lp, t, k, acc.instr.block)
            out += self.loop_facts(lp, t, k)
            try:
                here = enc.exits_at(lp, t, k)
                prev = enc.exits_at(lp, t, k - 1)
            except Exception:  # noqa: BLE001
                here = prev = None
            if here is not None:
                out.append(here)
            if prev is not None:
                out.append(z3.Or(k == 0, z3.Not(prev)))
        for lp in loops:
            k = trips[lp]
            out.append(k >= 0)
            out.append(k < TRIP_BOUND)
            try:
                prev = enc.exits_at(lp, t, k - 1)
            except Exception:  # noqa: BLE001
                prev = None
            if prev is not None:
                out.append(z3.Or(k == 0, z3.Not(prev)))
            out += self.counted(lp, t, k, acc.instr.block)
            out += self.loop_facts(lp, t, k)
        out += self.reach(acc.instr.block, t)
        return out

    def loop_facts(self, lp: Loop, t: int, k) -> list:
        """The proved invariants of ``lp``'s header values (`invariants`) at trip ``k`` of thread ``t``."""
        inv = self.mf.invariants
        return inv.terms(self.enc, lp, t, k) if inv is not None else []

    def barrier_blocks_before(self, acc: Access, start, level: str) -> list[Block]:
        """The blocks holding a boundary (at ``level``) that a thread may pass
        on its way from the phase start ``start`` (None: the entry) to
        ``acc`` within one trip of ``acc``'s innermost loop: a thread that
        passes one is in a later phase when it runs ``acc``."""
        ph = self.mf.phases
        order = self.mf.order
        cfg = self.mf.cfg
        key = ("bars_before", acc.order, id(start), level)
        got = self._cache.get(key)
        if got is not None:
            return got
        home = cfg.loop_of(acc.instr.block)
        p0 = start.block if start is not None else self.k.entry
        got = []
        for b in self.k.blocks:
            if b is acc.instr.block or b is p0 or cfg.loop_of(b) is not home:
                continue
            if not any(ph.boundary(i, level) for i in b.instrs):
                continue
            if order.forward_reaches(b, acc.instr.block) and order.forward_reaches(p0, b):
                got.append(b)
        self._cache[key] = got
        return got

    def in_phase(self, acc: Access, t: int, trips, start, level: str) -> list:
        """Thread ``t`` runs ``acc`` in the phase of ``start``: it passed none
        of the barriers between (`barrier_blocks_before`) in this trip. A
        divergent barrier still orders what the threads that reach it do
        (acceptance convention 3): a race through the way around it is one of
        the threads that took that way."""
        z3 = self.z3
        out = []
        self.context(trips)
        for b in self.barrier_blocks_before(acc, start, level):
            try:
                pc = self.enc.path_condition(b, t)
            except Exception:  # noqa: BLE001
                pc = None
            if pc is not None:
                out.append(z3.Not(pc))
        return out

    def geometric(self, lp: Loop, k) -> list:
        """A counter multiplied or divided by 2^s each trip runs fewer than
        width / s trips (a doubling one would wrap to 0, a halving one is 0
        by then): without this bound a wrapped counter makes any trip valid.
        Only a counter an exit of the loop tests bounds its trips: a loop
        left on another value may run on after the counter reached 0."""
        out = []
        for phi in lp.header.phis():
            g = (self.mf.geo or {}).get(phi.result)
            if g is None or not exit_tests(self.mf.cfg, lp, phi, self.mf.canon):
                continue
            w = self.enc.width(phi.result.type)
            out.append(k * g[2] < w)
        return out

    def counted(self, lp: Loop, t: int, k, block: Block) -> list:
        """What the loop's counted exits say of trip ``k`` beyond "not left at
        k - 1": induction variables do not wrap (a compiler's loop counter
        never does; C's signed overflow is undefined), whether their step is
        a constant or a loop-invariant value (``i += blockDim.x``: without
        this, a wrapped counter makes an exit test pass again at some huge
        trip), and a ``!=`` exit at a bound ``start + n * step`` runs exactly
        n trips."""
        z3 = self.z3
        enc = self.enc
        cfg = self.mf.cfg
        out = self.geometric(lp, k)
        for ex in lp.exits:
            iv = ex.iv
            if iv is None or (iv.step is None and iv.step_value is None) or ex.bound is None or not all(
                cfg.dominates(ex.branch.block, l) for l in lp.latches
            ):
                continue
            try:
                start = enc._bv(enc.enc(iv.start, t))
                bound = enc._bv(enc.enc(ex.bound, t))
                step_e = None if iv.step is not None else enc._bv(enc.enc(iv.step_value, t))
            except Exception:  # noqa: BLE001
                continue
            if z3.is_bool(start) or z3.is_bool(bound):
                continue
            if step_e is not None and not z3.is_bv_value(z3.simplify(step_e)):
                # a step the launch does not fix: no product (see `strided`)
                out += self.strided(lp, iv, t, k, start, step_e, ex.cmp in ("lt", "le", "gt", "ge"))
                continue
            w = start.size()
            if w >= 128:
                continue  # Python integers do not wrap
            bound = enc.fit(bound, w, ex.cmp in ("lt", "le", "gt", "ge"))
            K = enc.fit(k, 2 * w + 2, False)
            step = iv.step
            last = K + (1 if ex.uses_next else 0)
            if ex.cmp in ("lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"):
                signed = ex.cmp in ("lt", "le", "gt", "ge")
                S = z3.SignExt(w + 2, start) if signed else z3.ZeroExt(w + 2, start)
                if step_e is None:
                    STEP = z3.BitVecVal(step, 2 * w + 2)
                else:
                    # the step as the value it is (``%ntid.x`` is unsigned), at the counter's width
                    STEP = enc.fit(enc.fit(step_e, w, is_signed(iv.step_value.type)), 2 * w + 2,
                                   is_signed(iv.step_value.type) or signed)  # fmt: skip
                    if iv.negated:
                        STEP = -STEP
                # the value tested at trip k: between the start and it, every
                # trip's value is in range too (it moves one way)
                V = S + STEP * last
                if signed:
                    out += [V >= -(1 << (w - 1)), V < (1 << (w - 1))]
                else:
                    out += [V >= 0, V < (1 << w)]
            elif ex.cmp == "ne" and not ex.exits_when and step is not None and step != 0:
                # runs while iv != bound: n = (bound - start) / step trips
                dist = (bound - start) if step > 0 else (start - bound)
                D = z3.ZeroExt(w + 2, dist)
                strict = ex.uses_next or cfg.dominates(inside_successor(ex.branch, lp), block)
                lhs = K * abs(step)
                out.append(z3.ULT(lhs, D) if strict else z3.ULE(lhs, D))
        return out

    def strided(self, lp: Loop, iv, t: int, k, start, step_e, signed: bool) -> list:
        """A counter stepped by a loop-invariant value S (``i += blockDim.x``)
        that does not wrap moves at least one per trip: at trip k,
        ``i - start >= k`` when S > 0 (``start - i >= k`` when S < 0). Linear,
        where ``start + S * k`` in wide arithmetic is a product the solver
        finds costly; with the loop's invariants (``i < 256``) it bounds k, and
        a wrapped counter is no longer a model."""
        z3 = self.z3
        enc = self.enc
        w = start.size()
        if w < 30:
            return []  # trips (below 2^28) would not fit the difference
        try:
            x = enc._bv(enc.enc(iv.phi, t))  # at trip k: the context `conditions` set
        except Exception:  # noqa: BLE001
            return []
        if x.size() != w:
            return []
        ext = z3.SignExt if signed else z3.ZeroExt
        up = ext(2, x) - ext(2, start)
        K = enc.fit(k, w + 2, False)
        st_signed = is_signed(iv.step_value.type)
        S = enc.fit(step_e, w, st_signed)
        zero = z3.BitVecVal(0, w)
        pos = (S > zero) if st_signed else (S != zero)
        neg = (S < zero) if st_signed else z3.BoolVal(False)
        if iv.negated:
            pos, neg = neg, pos
        out = [z3.Implies(pos, up >= K), z3.Implies(neg, -up >= K)]
        if not iv.negated:
            out += self._block_residue(t, x, start, S, signed)
        return out

    def _block_residue(self, t: int, x, start, S, signed: bool) -> list:
        """A block-stride counter (step ``blockDim.x``, or the block's size
        with the linear thread index) keeps its thread's residue: ``i - start
        + tid = tid + S * k``, whose remainder by S is ``tid`` whatever the
        trip. Told as one uninterpreted function of that value (x mod S), so
        two threads at one index are one thread, with no product or division
        for the solver to reason through. Only while ``i - start`` is below
        2^(w-1), where it cannot have wrapped."""
        z3 = self.z3
        enc = self.enc
        w = x.size()
        if self.k.launch.block is not None:
            return []  # S is a constant: the arithmetic is linear already
        nx, ny, nz = (enc.fit(n, w) for n in enc.ntid)
        tx, ty, tz = (enc.fit(d, w) for d in enc.tid[t])
        S = z3.simplify(S)
        for size, lane in ((nx, tx), (nx * ny, tx + nx * ty), (nx * ny * nz, tx + nx * (ty + ny * tz))):
            if z3.simplify(size).eq(S):
                break
        else:
            return []
        rem = enc.uf(f"block_residue_{w}", [x - start + lane], z3.BitVecSort(w))
        return [z3.Implies(z3.ULT(x - start, 1 << (w - 1)), rem == lane)]

    def reach(self, block: Block, t: int) -> list:
        z3 = self.z3
        enc = self.enc
        out = []
        try:
            # what running `block` implies is all a condition of the access needs
            pc = enc.path_condition(block, t, over=True)
        except Exception:  # noqa: BLE001
            pc = None
        if pc is not None:
            out.append(pc)
        for lp in self.mf.cfg.loops_around(block):
            terms = []
            for p in lp.header.preds:
                if p in lp.blocks:
                    continue
                try:
                    pcp = enc.path_condition(p, t, over=True)
                    if pcp is None:
                        terms = None
                        break
                    terms.append(z3.And(pcp, enc._edge(p, lp.header, t)))
                except Exception:  # noqa: BLE001
                    terms = None
                    break
            if terms:
                out.append(z3.Or(*terms) if len(terms) > 1 else terms[0])
        return out

    # addresses ------------------------------------------------------------------------
    def footprint(self, acc: Access, t: int, trips: dict[Loop, Any]):
        """(start, width) in bytes: 64-bit (PTX) or 128-bit (Python) vectors."""
        z3 = self.z3
        enc = self.enc
        self.context(trips)
        python = self.k.language == "python"
        W = 64
        if python and acc.index is not None and acc.buffer is not None and all(d for d in acc.buffer.shape) \
                and len(acc.index) == len(acc.buffer.shape):  # fmt: skip
            lin = None
            for i, (x, dim) in enumerate(zip(acc.index, acc.buffer.shape)):
                e = enc.fit(enc.enc(x, t), W, True)
                e = z3.If(e < 0, e + dim, e)  # Numba wraps negative indices
                lin = e if lin is None else lin * dim + e
            base = enc.shared(f"pybuf:{acc.root}", "s64")
            start = enc.fit(base, W) + lin * acc.elem
        else:
            start = enc._bv(enc.enc(acc.addr, t))
            W = start.size()
        width: Any = acc.width
        out = Footprint((start, width))
        if acc.fragment is not None:
            rows, row_bytes, stride, e = acc.fragment
            if stride is not None:
                s = enc.fit(enc.enc(stride, t), W, False)
                out = Footprint((start, (rows - 1) * s * e + row_bytes))
                out.rows = (rows, row_bytes, s * e)
            else:
                out = Footprint((start, rows * row_bytes))
        return out

    def in_bounds(self, acc: Access, t: int, trips, f) -> list:
        """The access stays inside its array (an access that leaves it is
        TL202's finding, not a race on the array)."""
        z3 = self.z3
        enc = self.enc
        buf = acc.buffer
        if buf is None and acc.roots is not None and len(acc.roots) > 1 and acc.fragment is None:
            return self._in_one_of(acc, t, trips, f)
        if buf is None or buf.dynamic or acc.fragment is not None:
            return []
        self.context(trips)
        try:
            if self.k.language == "python" and acc.index is not None and len(acc.index) == len(buf.shape) \
                    and all(buf.shape):  # fmt: skip
                out = []
                for x, dim in zip(acc.index, buf.shape):
                    e = enc.fit(enc.enc(x, t), 64, True)
                    out += [e >= -dim, e < dim]
                return out
            nbytes = buf.bytes
            if nbytes is None or acc.base is None or not isinstance(f[1], int) or f[1] > nbytes:
                return []
            start = f[0]
            base = enc.fit(enc._bv(enc.enc(acc.base, t)), start.size(), False)
            return [z3.ULE(start - base, nbytes - f[1])] + [z3.Not(o) for o in self.scaled_overflows(acc, t)]
        except Exception:  # noqa: BLE001
            return []

    def scaled_overflows(self, acc: Access, t: int) -> list:
        """"A scaled index of ``acc``'s address overflows" (`scaled_addends`),
        one term each, for thread ``t``."""
        z3 = self.z3
        enc = self.enc
        out = []
        for x, op, c in scaled_addends(acc, self.k.language):
            try:
                e = enc._bv(enc.enc(x, t))
            except Exception:  # noqa: BLE001 - a value the encoder cannot read: no term
                continue
            w = e.size()
            if op is O.SHL and 0 < c < w:
                out.append((e << c) >> c != e)
            elif op is O.MUL:
                out.append(z3.SignExt(w, e) * c != z3.SignExt(w, e * c))
        return out

    def _in_one_of(self, acc: Access, t: int, trips, f) -> list:
        """A pointer chosen between static buffers stays inside one of them
        (leaving it is TL202's finding where it is known which)."""
        z3 = self.z3
        enc = self.enc
        if self.k.language == "python" or not isinstance(f[1], int):
            return []
        start = f[0]
        terms = []
        for name in sorted(acc.roots):
            buf = self.k.buffers.get(name)
            base_v = self.mf.addr_values.get(name)
            if buf is None or buf.dynamic or buf.bytes is None or base_v is None or f[1] > buf.bytes:
                return []
            self.context(trips)
            base = enc.fit(enc._bv(enc.enc(base_v, t)), start.size(), False)
            terms.append(z3.ULE(start - base, buf.bytes - f[1]))
        return [z3.Or(*terms)] if terms else []

    def overlap(self, f0, f1):
        """The byte ranges meet (computed in the addresses' own width, so a
        common base cancels)."""
        z3 = self.z3
        (a, wa), (b, wb) = f0, f1
        if a.size() != b.size():
            n = max(a.size(), b.size())
            a, b = self.enc.fit(a, n), self.enc.fit(b, n)
            wa = wa if isinstance(wa, int) else self.enc.fit(wa, n)
            wb = wb if isinstance(wb, int) else self.enc.fit(wb, n)
        if not isinstance(wa, int) and wa.size() != a.size():
            wa = self.enc.fit(wa, a.size())
        if not isinstance(wb, int) and wb.size() != b.size():
            wb = self.enc.fit(wb, b.size())
        ra, rb = getattr(f0, "rows", None), getattr(f1, "rows", None)
        rows_of = []
        if ra is not None:  # some row i of the fragment: its bytes, not the box's
            a, wa = self._row(a, ra, rows_of)
        if rb is not None:
            b, wb = self._row(b, rb, rows_of)
        wa = wa if not isinstance(wa, int) else z3.BitVecVal(wa, a.size())
        wb = wb if not isinstance(wb, int) else z3.BitVecVal(wb, b.size())
        return z3.And(*rows_of, z3.Or(z3.ULT(b - a, wa), z3.ULT(a - b, wb)))

    def _row(self, start, rows: tuple, constraints: list):
        """(start, width) of one row of a strided fragment, the row a fresh
        symbol below its row count (the question asks whether *some* row of
        each meets)."""
        z3 = self.z3
        n, row_bytes, pitch = rows
        w = start.size()
        self._rows = getattr(self, "_rows", 0) + 1
        i = z3.BitVec(f"row_{self._rows}", w)
        constraints.append(z3.ULT(i, n))
        pitch = self.enc.fit(pitch, w) if not isinstance(pitch, int) else pitch
        return start + i * pitch, row_bytes

    def warp_rel(self, same: bool | None):
        if same is None:
            return None
        z3 = self.z3
        w0 = z3.UDiv(self.enc.linear(0), 32)
        w1 = z3.UDiv(self.enc.linear(1), 32)
        return w0 == w1 if same else w0 != w1

    def stored_value(self, acc: Access, t: int, trips):
        ins = acc.instr
        if ins.op is O.ATOMIC and ins.attrs.get("op") == "exch" and len(ins.args) == 2:
            self.context(trips)  # an exchange stores its operand (`race_findings.stores_a_value`)
            return self.enc._bv(self.enc.enc(ins.args[1], t))
        if ins.op is not O.STORE or len(ins.args) < 2:
            return None
        self.context(trips)
        vals = [self.enc._bv(self.enc.enc(v, t)) for v in ins.args[1:]]
        if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
            vals = vals[:-1]
        if not vals:
            return None
        return vals[0] if len(vals) == 1 else self.z3.Concat(*vals)


def solve_bv(enc, goal, rlimit: int, fallback: bool = True) -> smt.Verdict:
    """`smt.solve`'s question through a bit-blasting tactic (simplify, solve
    equations, drop unconstrained terms, Ackermannize the uninterpreted
    functions, bit-blast, SAT): the memory queries are pure bit-vector
    arithmetic over many small terms, where this is a few times faster than
    the default solver. Same deterministic resource limit; when the tactic
    cannot decide for another reason, `smt.solve` answers."""
    z3 = smt.z3mod()
    tactic = smt.tactic("memory", lambda z3: z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr",
                                                      "simplify", "ackermannize_bv", "bit-blast", "sat"))  # fmt: skip
    smt.STATS["queries"] += 1
    start = time.perf_counter()
    try:
        s = tactic.solver()
        s.set("rlimit", rlimit)
        s.add(*enc.constraints)
        s.add(goal)
        r = smt.check_within_budget(s)
        reason = s.reason_unknown() if r == z3.unknown else ""
    except z3.Z3Exception as e:  # noqa: F841
        r, reason = None, "tactic failed"
    smt.STATS["seconds"] += time.perf_counter() - start
    if r == z3.unsat:
        smt.STATS["unsat"] += 1
        return smt.Verdict("unsat")
    if r == z3.sat:
        smt.STATS["sat"] += 1
        return smt.Verdict("sat", s.model(), solver=s)
    spent = _resource_limit(reason)
    if spent or not fallback:
        smt.STATS["unknown"] += 1
        return smt.Verdict("unknown", reason="resource limit" if spent else reason)
    smt.STATS["queries"] -= 1
    return smt.solve(enc, goal, rlimit)


def _resource_limit(reason: str | None) -> bool:
    """Whether the tactic gave up on the resource limit: it says so
    ("max. resource limit exceeded") when the limit runs out in a
    preprocessing step, and "canceled" when it runs out in the SAT solver
    (the only other cancellation, the lint's budget, has raised already:
    `smt.check_within_budget`). Asking `smt.solve` again then spent as much
    again, under the same limit, to give up too (a 64-bit division by a
    runtime extent: 3.5 s of kmeans_assign.py's 9)."""
    return bool(reason) and ("resource" in reason or reason == "canceled")


def model_value(model, e):
    z3 = smt.z3mod()
    x = model.eval(e, model_completion=True)
    try:
        return bool(z3.is_true(x)) if z3.is_bool(x) else x.as_long()
    except Exception:  # noqa: BLE001
        return str(x)
