"""`Encoder`: IR values of one kernel as bit-vector terms for two threads
(``t = 0, 1``), with the launch's constraints; see the package docstring for
how each kind of value is encoded."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tolk_lint.analysis.buffers import mem_root, space_of
from tolk_lint.analysis.smt import bit_ops, lane_ranks
from tolk_lint.analysis.smt.contract_terms import argument_constraints, contract_constraints, grid_constraints
from tolk_lint.analysis.smt.float_compare import float_bits, float_compare, ieee_abs
from tolk_lint.analysis.smt.paths import PathConditions
from tolk_lint.analysis.smt.solver import z3mod
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value, const_int, is_float, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.uniformity_info import UniformityInfo

log = logging.getLogger("tolk_lint.smt")
O = Opcode

MAX_NODES = 4000  # per encoding: deeper values become symbols
MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's largest grid, per dimension (every GPU since compute capability 3.0)


class Encoder(PathConditions):
    """Encodes IR values of one kernel for two threads.

    ``trips`` maps each loop that holds the point of the question to the trip
    index expression both threads share (a fresh ``k`` per loop by default).
    ``level`` is ``workgroup``, ``warp`` (same-warp constraint) or
    ``warpgroup`` (two threads of one 128-thread warpgroup)."""

    def __init__(self, kernel: Kernel, info: UniformityInfo | None, level: str = "workgroup",
                 point: Block | None = None):  # fmt: skip
        self.z3 = z3mod()
        self.k = kernel
        self.info = info
        self.level = level
        self.cfg = cfg_of(kernel)
        self.python = kernel.language == "python"
        self.memo: dict[tuple, Any] = {}
        self.constraints: list[Any] = []
        self.nodes = 0
        self.per_thread_symbols: set[str] = set()
        self.shared_symbols: dict[str, Any] = {}
        self._sym_id = 0
        self._exit_trip: dict[tuple, Any] = {}
        self._trip_width = 128 if self.python else 64
        # header phis a relational loop question takes as one value for both
        # threads at a trip (its induction hypothesis: `questions._carried`)
        self.shared_carry: set[Value] = set()
        z3 = self.z3
        # the trip index of each loop around the point: shared by both threads
        self.trips: dict[Loop, tuple[Any, Any]] = {}
        if point is not None:
            for lp in self.cfg.loops_around(point):
                k = z3.BitVec(f"k_{lp.header.name}", self._trip_width)
                self._bound_trip(k)
                self.trips[lp] = (k, k)
        self._launch()

    # -- symbols -----------------------------------------------------------------
    def width(self, t: str) -> int:
        if t == "pred":
            return 1
        if self.python and not is_float(t) and t not in ("pred",):
            return 128
        return max(1, type_bits(t))

    def sort(self, t: str):
        z3 = self.z3
        return z3.BoolSort() if t == "pred" else z3.BitVecSort(self.width(t))

    def shared(self, name: str, t: str):
        if name not in self.shared_symbols:
            z3 = self.z3
            self.shared_symbols[name] = z3.Bool(name) if t == "pred" else z3.BitVec(name, self.width(t))
        return self.shared_symbols[name]

    def _param_symbol(self, j: int, bits: int):
        """The symbol of the kernel's parameter number ``j`` (as its PARAM
        reads name it), when it is a ``bits``-wide integer; else None."""
        if j >= len(self.k.params):
            return None
        prm = self.k.params[j]
        if prm.kind != "scalar" or is_float(prm.dtype) or prm.dtype == "pred" or type_bits(prm.dtype) != bits:
            return None
        s = self.shared(f"param:{prm.name}", prm.dtype)
        return s if s.size() == bits else None

    def fresh(self, base: str, t: str, thread: int | None):
        """A fresh symbol: per thread (thread = 0/1) or shared (None)."""
        self._sym_id += 1
        name = f"{base}!{self._sym_id}" + ("" if thread is None else f"@t{thread}")
        z3 = self.z3
        s = z3.Bool(name) if t == "pred" else z3.BitVec(name, self.width(t))
        if thread is not None:
            self.per_thread_symbols.add(name)
        return s

    def _bound_trip(self, k) -> None:
        """Python integers do not wrap, and a `range` of int64 bounds runs
        fewer than 2**64 trips: bound the 128-bit trip index accordingly."""
        if self.python:
            self.constraints.append(self.z3.ULT(k, self.z3.BitVecVal(1 << 64, self._trip_width)))

    def _launch(self) -> None:
        """The launch: a known block shape is a constant (cheap to solve);
        otherwise 1 <= ntid.d and the product is at most the kernel's bound."""
        z3 = self.z3
        k = self.k
        block = k.launch.block
        # Which lanes share a warp depends on the block's shape (`linear`):
        # a warp-level question about a kernel that reads only tid.x takes
        # its block as flat, the convention the memory questions follow
        # (`MemoryCore.tid_dims`); TL103 says so in its launch note
        self.flat_assumed = block is None and self.level in ("warp", "warpgroup") and k.tid_dims() <= {"x"}
        if block is not None:
            self.ntid = [z3.BitVecVal(block[d], 32) for d in range(3)]
        else:
            self.ntid = [z3.BitVec(f"ntid.{d}", 32) for d in "xyz"]
            if self.flat_assumed:
                self.ntid[1] = self.ntid[2] = z3.BitVecVal(1, 32)
        self.nctaid = [z3.BitVec(f"nctaid.{d}", 32) for d in "xyz"]
        self.ctaid = [z3.BitVec(f"ctaid.{d}", 32) for d in "xyz"]
        self.tid = [[z3.BitVec(f"tid.{d}@t{t}", 32) for d in "xyz"] for t in (0, 1)]
        for t in (0, 1):
            for d in range(3):
                self.per_thread_symbols.add(f"tid.{'xyz'[d]}@t{t}")
        c = self.constraints
        c += grid_constraints(z3, self.nctaid, k.launch.grid)
        # CUDA's grid limits, for y and z where the kernel reads their block
        # index (a witness never has `blockIdx.y` past 65534: imageDenoising's
        # `iy < imageH` for `imageH = 0`); elsewhere, and for x (2**31 - 1),
        # they would only add terms the solver cannot drop, which slows some
        # unrelated questions by seconds
        grid_dims = k.cached("grid_dims", lambda k: {
            str(i.attrs.get("name", "")).partition(".")[2] for i in k.instrs()
            if i.op is O.SPECIAL and str(i.attrs.get("name", "")).startswith(("ctaid.", "nctaid."))})  # fmt: skip
        for d in range(3):
            c.append(z3.UGE(self.nctaid[d], 1))
            if d and "xyz"[d] in grid_dims:  # no launch has more blocks: no `blockIdx.y` past 65534
                c.append(z3.ULE(self.nctaid[d], MAX_GRID[d]))
            c.append(z3.ULT(self.ctaid[d], self.nctaid[d]))
            for t in (0, 1):
                if block is not None and block[d] == 1:
                    c.append(self.tid[t][d] == 0)
                else:
                    c.append(z3.ULT(self.tid[t][d], self.ntid[d]))
            if block is None:
                c.append(z3.UGE(self.ntid[d], 1))
                c.append(z3.ULE(self.ntid[d], 1024))
        if block is None:
            limit = k.launch.threads or 1024
            x, y, z = self.ntid
            if limit <= 1024:
                # Each dimension is at most 1024 (11 bits), and so is x * y
                # once bounded: two 11-by-11-bit products in 22 bits, which
                # cannot wrap, instead of 64-bit multipliers -- a fixed cost
                # every query of the kernel pays (40 ms -> a few ms)
                def low11(v):
                    return z3.ZeroExt(11, z3.Extract(10, 0, v))

                xy = low11(x) * low11(y)
                c += [z3.ULE(xy, limit), z3.ULE(low11(xy) * low11(z), limit)]
            else:
                wide = [z3.ZeroExt(32, n) for n in self.ntid]
                c.append(z3.ULE(wide[0] * wide[1] * wide[2], limit))
            if k.launch.contract is not None:
                c += contract_constraints(z3, self.ntid, k.launch.contract)
        # distinct threads
        t0, t1 = self.tid
        dims = [d for d in range(3) if block is None or block[d] > 1] or [0]
        c.append(z3.Or(*[t0[d] != t1[d] for d in dims]))
        if self.level in ("warp", "warpgroup"):
            size = 32 if self.level == "warp" else 128
            c.append(z3.UDiv(self.linear(0), size) == z3.UDiv(self.linear(1), size))

    def linear(self, t: int):
        x, y, z = self.tid[t]
        nx, ny, _ = self.ntid
        block = self.k.launch.block
        if self.flat_assumed or (block is not None and block[1] == 1 and block[2] == 1):
            return x
        return x + nx * (y + ny * z)

    # -- helpers -------------------------------------------------------------------
    def fit(self, e, width: int, signed: bool = False):
        """``e`` as a ``width``-bit vector (Bool -> 0/1; extend or truncate)."""
        z3 = self.z3
        if z3.is_bool(e):
            return z3.If(e, z3.BitVecVal(1, width), z3.BitVecVal(0, width))
        w = e.size()
        if w == width:
            return e
        if w < width:
            return z3.SignExt(width - w, e) if signed else z3.ZeroExt(width - w, e)
        return z3.Extract(width - 1, 0, e)

    def as_bool(self, e):
        z3 = self.z3
        if z3.is_bool(e):
            return e
        return e != z3.BitVecVal(0, e.size())

    def uf(self, name: str, args: list, result_sort):
        z3 = self.z3
        sorts = [a.sort() for a in args] + [result_sort]
        key = ("uf", name, tuple(str(s) for s in sorts))
        f = self.memo.get(key)
        if f is None:
            f = z3.Function(f"{name}_{len(self.memo)}", *sorts)
            self.memo[key] = f
        return f(*args) if args else self.shared(f"{name}", "b32")

    # -- the trip context ------------------------------------------------------------
    def trip_of(self, lp: Loop, t: int):
        """The trip of ``lp`` in thread ``t`` at the point being encoded."""
        if lp in self.trips:
            return self.trips[lp][t]
        shared = self.info is not None and lp not in self.info.divergent_loops
        key = (lp, None if shared else t, self._outer_key(lp))
        T = self._exit_trip.get(key)
        if T is None:
            # a loop whose trips are the same everywhere has one exit trip
            T = self.fresh(f"T_{lp.header.name}", "s64" if self.python else "b64", None if shared else t)
            self._bound_trip(T)
            self._exit_trip[key] = T
            for th in ((0, 1) if shared else (t,)):
                self._constrain_exit_trip(lp, th, T)
        return T

    def _outer_key(self, lp: Loop) -> tuple:
        out = []
        p = lp.parent
        while p is not None:
            if p in self.trips:
                out.append((p.header.name, self.trips[p][0].get_id()))
            p = p.parent
        return tuple(out)

    def with_trip(self, lp: Loop, trip0, trip1):
        """A copy of this encoder's context with ``lp`` at the given trips."""
        saved = self.trips.get(lp)
        self.trips[lp] = (trip0, trip1)
        return saved

    def restore_trip(self, lp: Loop, saved) -> None:
        if saved is None:
            self.trips.pop(lp, None)
        else:
            self.trips[lp] = saved

    def exits_at(self, lp: Loop, t: int, trip) -> Any | None:
        """Whether thread ``t`` leaves ``lp`` at trip ``trip`` (its exits that
        run on every trip), or None when the loop has an exit that does not."""
        z3 = self.z3
        always = [ex for ex in lp.exits if all(self.cfg.dominates(ex.branch.block, l) for l in lp.latches)]
        if not always or len(always) != len(lp.exits):
            return None
        saved = self.trips.get(lp)
        pair = list(saved) if saved else [None, None]
        pair[t] = trip
        if pair[1 - t] is None:
            pair[1 - t] = trip
        self.trips[lp] = (pair[0], pair[1])
        try:
            terms = []
            for ex in always:
                c = self.as_bool(self.enc(ex.cond, t))
                terms.append(c if ex.exits_when else z3.Not(c))
            return z3.Or(*terms) if len(terms) > 1 else terms[0]
        finally:
            self.restore_trip(lp, saved)

    def _constrain_exit_trip(self, lp: Loop, t: int, T) -> None:
        z3 = self.z3
        here = self.exits_at(lp, t, T)
        if here is None:
            return
        prev = self.exits_at(lp, t, T - 1)
        self.constraints.append(here)
        self.constraints.append(z3.Or(T == 0, z3.Not(prev)))

    # -- encoding ------------------------------------------------------------------
    def _is_varying(self, v: Value) -> bool:
        return self.info is None or v in self.info.varying

    def _ctx_key(self, v: Value, left: bool = True) -> tuple:
        d = v.defn
        if d is None or d.block is None:
            return ()
        out = []
        around = self.cfg.loops_around(d.block)
        for lp in around:
            if lp in self.trips:
                out.append((id(lp), self.trips[lp][0].get_id(), self.trips[lp][1].get_id()))
            else:
                out.append((id(lp), "exit", self._outer_key(lp)))
        if left and len(self.trips) > len(around):
            # loops the thread has left before it (their exit trips given, as
            # the memory queries do): the value may be computed from their
            # exit values, so their trips are part of its context too
            order = self.cfg.order.get(d.block)
            gone = []
            for lp, (k0, k1) in self.trips.items():
                if lp in around:
                    continue
                ho = self.cfg.order.get(lp.header)
                if order is None or ho is None or ho < order:
                    gone.append((self.cfg.order.get(lp.header, -1), id(lp), k0.get_id(), k1.get_id()))
            out += sorted(gone)
        return tuple(out)

    def enc(self, v: Value, t: int):
        """The value ``v`` in thread ``t`` (0 or 1)."""
        key = (v, t, self._ctx_key(v))
        got = self.memo.get(key)
        if got is not None:
            return got
        # iterative post-order over the operands that still need encoding
        stack: list[tuple[Value, bool]] = [(v, False)]
        while stack:
            x, ready = stack.pop()
            kx = (x, t, self._ctx_key(x))
            if kx in self.memo:
                continue
            deps = self._deps(x)
            if not ready and deps:
                stack.append((x, True))
                for dv in deps:
                    if (dv, t, self._ctx_key(dv)) not in self.memo:
                        stack.append((dv, False))
                continue
            self.memo[kx] = self._encode_one(x, t)
        return self.memo[key]

    def _deps(self, v: Value) -> list[Value]:
        """Operands ``_encode_one`` will ask for structurally (so they are
        encoded first, without recursion)."""
        d = v.defn
        if d is None or self.nodes > MAX_NODES:
            return []
        if d.op in _STRUCTURAL:
            return list(d.args)
        if d.op is O.LOAD and d.args and self._stable_load(d):
            return [d.args[0]]
        return []

    def _leaf(self, v: Value, t: int, why: str):
        """A symbol for ``v``: shared if the analysis calls it uniform."""
        if not self._is_varying(v):
            # one value for both threads at the same trips of the loops around it
            key = ("leaf", v, self._ctx_key(v, left=False))
            s = self.memo.get(key)
            if s is None:
                s = self.fresh(f"u_{_clean(v.name)}", v.type, None)
                self.memo[key] = s
            return s
        return self.fresh(f"{why}_{_clean(v.name)}", v.type, t)

    def _stable_load(self, ld: Instr) -> bool:
        """A load two threads agree on when they read one address: memory no
        thread changes under it. Local memory is each thread's own, so only a
        local buffer no write leaves varying qualifies."""
        facts = self.k._cache.get("uniform_facts")
        if facts is None or ld.attrs.get("volatile") or facts.load_seed(ld) is not None:
            return False

        if space_of(ld) in ("local", "reg", "generic"):
            if self.info is None:
                return False
            root = mem_root(ld)
            return root is not None and root not in self.info.varying_buffers and None not in self.info.varying_buffers
        return True

    def _encode_one(self, v: Value, t: int):
        z3 = self.z3
        self.nodes += 1
        d = v.defn
        if d is None:
            return self._leaf(v, t, "in")
        op = d.op
        if op is O.CONST:
            return self._const(d.attrs.get("value"), v.type)
        if self.info is not None and v in self.info.proved_values:
            return self._leaf(v, t, "proved")  # proved uniform already: one shared symbol
        if op is O.PARAM:
            name = d.attrs.get("name", v.name)
            if not self.k.is_entry:
                return self.fresh(f"arg_{_clean(name)}", v.type, t)
            p = self.shared(f"param:{name}", v.type)
            self.constraints += argument_constraints(z3, p, self.k.launch.arguments.get(name), d, self.ntid,
                                                     self._param_symbol)  # fmt: skip
            if self.python and not is_float(v.type) and v.type != "pred":
                lo, hi = -(1 << 63), (1 << 63) - 1
                if ".shape[" in name:  # an extent: never negative, and below 2**31 (what a witness may show)
                    lo, hi = 0, (1 << 31) - 1
                self.constraints.append(z3.And(p >= lo, p <= hi))
            return p
        if op is O.SPECIAL:
            return self._special(d.attrs.get("name", ""), v, t)
        if op is O.UNDEF:
            return self.shared(f"undef:{v.name}", v.type)  # garbage, but the same garbage: see uniform.py
        if op is O.ADDR:
            return self.shared(f"addr:{d.attrs.get('buffer')}", v.type)
        if op is O.PHI:
            return self._phi(d, v, t)
        if op is O.LOAD:
            if d.args and self._stable_load(d) and self.nodes <= MAX_NODES:
                addr = self.enc(d.args[0], t)
                extra = [self.fit(self.trips[lp][t], 64) for lp in self.cfg.loops_around(d.block) if lp in self.trips]
                return self.uf(f"mem{d.id}_{v.index}", [addr] + extra, self.sort(v.type))
            return self._leaf(v, t, "ld")
        if op in _STRUCTURAL and self.nodes <= MAX_NODES:
            try:
                return self._arith(d, v, t)
            except _Unsupported:
                return self._leaf(v, t, "op")
        return self._leaf(v, t, op.value.replace(".", "_"))

    def _const(self, value, t: str):
        z3 = self.z3
        if t == "pred":
            return z3.BoolVal(bool(value))
        w = self.width(t)
        if isinstance(value, float) or (is_float(t) and not isinstance(value, int)):
            bits = float_bits(float(value), w)
            return z3.BitVecVal(bits, w)
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            return self.shared(f"const:{value!r}", t)
        return z3.BitVecVal(value % (1 << w), w)

    def _special(self, name: str, v: Value, t: int):
        z3 = self.z3
        dims = {"x": 0, "y": 1, "z": 2}
        base, _, dim = name.partition(".")
        w = self.width(v.type)
        if base == "tid" and dim in dims:
            return self.fit(self.tid[t][dims[dim]], w)
        if base == "ntid" and dim in dims:
            return self.fit(self.ntid[dims[dim]], w)
        if base == "ctaid" and dim in dims:
            return self.fit(self.ctaid[dims[dim]], w)
        if base == "nctaid" and dim in dims:
            return self.fit(self.nctaid[dims[dim]], w)
        if name == "laneid":
            return self.fit(z3.URem(self.linear(t), 32), w)
        if name == "warpsize":
            return z3.BitVecVal(32, w)
        if name.startswith("lanemask_"):
            lane = z3.URem(self.linear(t), 32)
            one = z3.BitVecVal(1, 32)
            eq = one << lane
            m = {"lanemask_eq": eq, "lanemask_lt": eq - 1, "lanemask_le": (eq << 1) - 1,
                 "lanemask_gt": ~((eq << 1) - 1), "lanemask_ge": ~(eq - 1)}.get(name)  # fmt: skip
            if m is not None:
                return self.fit(m, w)
        from tolk_lint.ir.opcodes import special_varies

        if special_varies(name, self.level):
            return self.fresh(f"sreg_{_clean(name)}", v.type, t)
        return self.shared(f"sreg:{name}", v.type)

    # phis ------------------------------------------------------------------------
    def _phi(self, d: Instr, v: Value, t: int):
        b = d.block
        lp = self.cfg.loop_of(b)
        if lp is not None and lp.header is b:
            return self._header_phi(lp, d, v, t)
        enc = self._join(d, v, t)
        if enc is None:
            return self._leaf(v, t, "phi")
        return enc

    def _header_phi(self, lp: Loop, d: Instr, v: Value, t: int):
        z3 = self.z3
        trip = self.trip_of(lp, t)
        for iv in lp.ivs:
            if iv.phi is v:
                start = self.enc(iv.start, t)
                if z3.is_bool(start):
                    break
                w = start.size()
                if iv.step is not None:
                    step = z3.BitVecVal(iv.step % (1 << w), w)
                else:
                    sv = self.enc(iv.step_value, t)
                    if z3.is_bool(sv):
                        break
                    step = self.fit(sv, w, is_signed(iv.step_value.type))
                    if iv.negated:
                        step = -step
                return start + step * self.fit(trip, w)
        # a loop-carried value: a function of the trip, per thread unless uniform
        if not self._is_varying(v) or v in self.shared_carry:
            return self.uf(f"carry_{_clean(v.name)}", [self.fit(trip, 64)], self.sort(v.type))
        return self.uf(f"carry_{_clean(v.name)}_t{t}", [self.fit(trip, 64)], self.sort(v.type))

    # arithmetic -------------------------------------------------------------------
    def _arith(self, d: Instr, v: Value, t: int):
        z3 = self.z3
        op = d.op
        args = [self.enc(a, t) for a in d.args]
        rt = v.type
        a_types = [a.type for a in d.args]
        # PTX's instruction type says how it reads its operands' bits: a .f32
        # register moved to an integer one and shifted (`mov.b32 %r3, %f1;
        # shr.u32 %r4, %r3, 23`: the exponent) is integer arithmetic on those bits
        floaty = is_float(rt) or (self.python and any(is_float(x) for x in a_types))
        if op is O.CMP:
            cmp = d.attrs.get("cmp", "eq")
            # PTX: `setp`'s own type says how it reads the bits (IEEE for
            # .f32/.f64); Python: a float may stand for a complex number's
            # parts (a free value), so its comparisons stay free predicates
            ptx_type = None if self.python else d.attrs.get("type")
            if is_float(ptx_type) if ptx_type else (any(is_float(x) for x in a_types) or d.attrs.get("float")):
                ieee = ptx_type in ("f32", "f64")
                return float_compare(self.uf, z3, cmp, [self._bv(a) for a in args], ieee)
            if all(z3.is_bool(a) for a in args):
                a, b = args
                if cmp in ("eq",):
                    return a == b
                if cmp in ("ne",):
                    return a != b
                args = [self.fit(a, 1) for a in args]
            w = max(self._bv(a).size() for a in args)
            signed = d.attrs.get("signed")
            if signed is None:
                signed = any(is_signed(x) for x in a_types)
            a, b = (self.fit(self._bv(x), w, signed) for x in args)
            return _compare(z3, cmp, a, b, signed)
        if rt == "pred" and op in (O.AND, O.OR, O.XOR, O.NOT, O.SELECT):
            bs = [self.as_bool(a) for a in args]
            if op is O.AND:
                return z3.And(*bs)
            if op is O.OR:
                return z3.Or(*bs)
            if op is O.XOR:
                return z3.Xor(bs[0], bs[1])
            if op is O.NOT:
                return z3.Not(bs[0])
            return z3.If(bs[0], bs[1], bs[2])
        if op is O.SELECT:
            c = self.as_bool(args[0])
            w = self.width(rt)
            return z3.If(c, self.fit(self._bv(args[1]), w), self.fit(self._bv(args[2]), w))
        w = self.width(rt)
        if op is O.CVT:
            src_t = d.attrs.get("from_type") or a_types[0]
            if is_float(rt) or is_float(src_t):
                return self.uf(f"cvt_{src_t}_{rt}", [self._bv(args[0])], self.sort(rt))
            return self.fit(self._bv(args[0]), w, is_signed(src_t))
        if op is O.PURE and d.attrs.get("fn") == "popc" and len(args) == 1 and not floaty:
            # the count of set bits, exactly: a popcount of a lane mask is a
            # group's size (cooperative groups' `tile.size()`), which bounds
            # the loops over it
            x = self._bv(args[0])
            narrow = x.size().bit_length()  # the count's own width: small adders for the solver
            count = self.fit(_sum([z3.ZeroExt(narrow - 1, z3.Extract(i, i, x)) for i in range(x.size())]), w)
            lane_ranks.note(self, d, t, x, count)  # a lane's rank among the set bits below it
            return count
        if op is O.PURE and d.attrs.get("fn") in bit_ops.FUNCTIONS and len(args) == 1 and not floaty:
            x = self._bv(args[0])
            bits = type_bits(a_types[0]) or x.size()  # a Numba int32 is encoded wide: scan its own bits
            if bits < x.size():
                x = z3.Extract(bits - 1, 0, x)
            return bit_ops.bit_scan(z3, d.attrs["fn"], x, d.attrs, w)
        if op is O.ABS and not self.python and rt in ("f32", "f64") and a_types == [rt]:
            return ieee_abs(self.uf, z3, self._bv(args[0]), bool(d.attrs.get("ftz")))
        if op is O.PURE or floaty:
            fn = d.attrs.get("fn", op.value)
            return self.uf(f"f_{fn}_{op.value}_{rt}", [self._bv(a) for a in args], self.sort(rt))
        if op is O.PACK:
            parts = [self._bv(a) for a in args]
            return self.fit(z3.Concat(*reversed(parts)) if len(parts) > 1 else parts[0], w)
        if op is O.EXTRACT:
            src = self._bv(args[0])
            idx = d.attrs.get("index", 0)
            lo = idx * w
            if lo + w > src.size():
                raise _Unsupported
            return z3.Extract(lo + w - 1, lo, src)
        signed = d.attrs.get("signed")
        if signed is None:
            signed = is_signed(rt) or any(is_signed(x) for x in a_types)
        if d.attrs.get("hi") and op in (O.MUL, O.MAD):
            a, b = (self.fit(self._bv(x), 2 * w, signed) for x in args[:2])
            hi = z3.Extract(2 * w - 1, w, a * b)
            return hi + self.fit(self._bv(args[2]), w, signed) if op is O.MAD else hi
        xs = [self.fit(self._bv(x), w, signed) for x in args]
        if op is O.ADD:
            return _sum(xs)
        if op is O.SUB:
            return xs[0] - xs[1]
        if op is O.MUL:
            return xs[0] * xs[1]
        if op is O.MAD:
            return xs[0] * xs[1] + xs[2]
        if op is O.NEG:
            return -xs[0]
        if op is O.NOT:
            return ~xs[0]
        if op is O.AND:
            return xs[0] & xs[1]
        if op is O.OR:
            return xs[0] | xs[1]
        if op is O.XOR:
            return xs[0] ^ xs[1]
        if op is O.ABS:
            return z3.If(xs[0] < 0, -xs[0], xs[0])
        if op in (O.MIN, O.MAX):
            a, b = xs
            lt = a < b if signed else z3.ULT(a, b)
            return z3.If(lt, a, b) if op is O.MIN else z3.If(lt, b, a)
        if op is O.SHL:
            return xs[0] << self.fit(self._bv(args[1]), w, False)
        if op is O.SHR:
            amt = self.fit(self._bv(args[1]), w, False)
            return (xs[0] >> amt) if signed else z3.LShR(xs[0], amt)
        if op in (O.DIV, O.REM):
            a, b = xs
            if d.attrs.get("floor"):
                c = const_int(d.args[1])
                if c is not None and c > 0 and c & (c - 1) == 0:  # `tid // 32`, `i % 2`: a shift and a mask,
                    shift = c.bit_length() - 1  # where two division circuits cost the solver seconds
                    return ((a >> shift) if signed else z3.LShR(a, shift)) if op is O.DIV else a & (c - 1)
                r = a % b  # z3py: BitVec % is bvsmod, the sign of the divisor (Python)
                return (a - r) / b if op is O.DIV else r
            if op is O.DIV:
                return a / b if signed else z3.UDiv(a, b)
            return z3.SRem(a, b) if signed else z3.URem(a, b)
        raise _Unsupported

    def _bv(self, e):
        return self.fit(e, 1) if self.z3.is_bool(e) else e


class _Unsupported(Exception):
    pass


_STRUCTURAL = frozenset(
    {O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX, O.AND, O.OR, O.XOR,
     O.NOT, O.SHL, O.SHR, O.CMP, O.SELECT, O.CVT, O.PURE, O.PACK, O.EXTRACT}
)  # fmt: skip


def _sum(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _compare(z3, cmp: str, a, b, signed: bool):
    if cmp in ("eq", "equ"):
        return a == b
    if cmp in ("ne", "neu"):
        return a != b
    if cmp in ("lo",):
        return z3.ULT(a, b)
    if cmp in ("ls",):
        return z3.ULE(a, b)
    if cmp in ("hi",):
        return z3.UGT(a, b)
    if cmp in ("hs",):
        return z3.UGE(a, b)
    if signed:
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}.get(cmp, a == b)
    return {"lt": z3.ULT(a, b), "le": z3.ULE(a, b), "gt": z3.UGT(a, b), "ge": z3.UGE(a, b)}.get(cmp, a == b)


def _clean(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]
