"""From IR values to polynomials: `IndexEval` turns the address of each load
of a kernel into a polynomial over atoms whose coefficients are thread
functions (see `polynomials`):

    address = sum over monomials m of  coef_m(threads, lanes) * m(atoms)

Atoms are the values the same for every thread of a workgroup (parameters,
``ctaid``, values loaded at a uniform address, a shared buffer's address)
and the trips of loops (an induction variable ``i = start + step * trip``).
Thread functions are small expressions of ``tid.x/y/z`` (``laneid`` and
``warpid`` are derived from them) and of the lanes of the access (vector
lanes, the rows and columns of a ``wmma`` fragment). A bit-field of a thread
index (``tid.x >> 5``, ``tid.x & 3``) stays a thread function; a bit-field of
a sum of a thread term and a uniform term is split when the uniform term is a
multiple of the divisor and refused ("mixed") otherwise. Arithmetic is taken
over the integers (addresses do not wrap).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tolk_lint.analysis.stage.polynomials import (
    ZERO,
    Atom,
    Poly,
    Unstageable,
    is_pow2,
    lazy_numpy,
    p_add,
    p_atom,
    p_const,
    p_const_value,
    p_mul,
    p_neg,
    p_scale,
    p_split,
    p_sub,
    p_subst,
    p_tf,
    p_thread_free,
    p_thread_only,
    p_tz,
    tf,
    tf_const,
    tf_eval,
    tf_values,
)
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.ir.cfg import Loop

O = Opcode


class _Cycle(Unstageable):
    """A value reached again while it is being evaluated."""


_CMP_TF = {"lt": ("lt", False), "le": ("le", False), "gt": ("lt", True), "ge": ("le", True),
           "lo": ("lt", False), "ls": ("le", False), "hi": ("lt", True), "hs": ("le", True),
           "eq": ("eq", False), "ne": ("ne", False)}  # fmt: skip
_NONLINEAR = {O.SHR: "shr", O.AND: "and", O.OR: "or", O.XOR: "xor", O.DIV: "div", O.REM: "rem",
              O.MIN: "min", O.MAX: "max"}  # fmt: skip


def launch_block(kernel: Kernel) -> tuple[tuple[int, int, int] | None, str]:
    """The block shape the analysis enumerates, and where it came from."""
    lb = kernel.launch
    if lb.block:
        return tuple(lb.block), lb.source or "launch"  # type: ignore[return-value]
    for dims, src in ((lb.reqntid, ".reqntid"), (lb.maxntid, ".maxntid")):
        if dims:
            d = (tuple(dims) + (1, 1, 1))[:3]
            return (int(d[0]), int(d[1]), int(d[2])), src
    return None, ""


class IndexEval:
    """Polynomials of a kernel's integer values (see this module's docstring)."""

    def __init__(self, kernel: Kernel, block: tuple[int, int, int] | None):
        self.kernel = kernel
        self.cfg = cfg_of(kernel)
        self.block = block
        self.atoms: dict[str, Atom] = {}
        self.memo: dict[Value, Poly] = {}
        self.failed: dict[Value, str] = {}
        self.busy: set[Value] = set()
        self.gates: set[Instr] = set()
        self._log: list[Value] | None = None
        self._headers = {lp.header: lp for lp in self.cfg.loops}
        self.box_cache: dict[tuple, Any] = {}

    # -- atoms --------------------------------------------------------------

    def atom(self, key: str, name: str, kind: str) -> Poly:
        if key not in self.atoms:
            self.atoms[key] = Atom(key, name, kind)
        return p_atom(key)

    def fresh(self, v: Value, p_args: Iterable[Poly], name: str | None = None) -> Poly:
        """An opaque atom for a value computed from thread-free polynomials."""
        kind = "uniform"
        for p in p_args:
            if not p_thread_free(p):
                raise Unstageable(f"`{v.name}` mixes thread terms with uniform values")
            if any(self.atoms[a].kind == "range" for m in p for a in m):
                kind = "range"
        return self.atom(f"v:{v.id}", name or v.source_name or v.name, kind)

    def trip(self, lp: Loop) -> Poly:
        iv_name = lp.ivs[0].phi.source_name if lp.ivs else lp.header.name
        return self.atom(f"trip:{lp.header.name}", f"trip({iv_name})", "range")

    def has_range(self, p: Poly) -> bool:
        return any(self.atoms.get(a, Atom(a, a, "uniform")).kind == "range" for m in p for a in m)

    # -- evaluation ---------------------------------------------------------

    def poly(self, v: Value) -> Poly:
        got = self.memo.get(v)
        if got is not None:
            return got
        if v in self.failed:
            raise Unstageable(self.failed[v])
        if v in self.busy:
            raise _Cycle(f"`{v.name}` depends on itself around a loop")
        self.busy.add(v)
        try:
            p = self._poly(v)
        except _Cycle:
            raise  # depends on where the walk started: not cached
        except Unstageable as e:
            if self._log is None:
                self.failed[v] = str(e)
            raise
        finally:
            self.busy.discard(v)
        self.memo[v] = p
        if self._log is not None:
            self._log.append(v)
        return p

    def _poly(self, v: Value) -> Poly:
        d = v.defn
        if d is None:
            return self.atom(f"v:{v.id}", v.source_name or v.name, "uniform")
        op, a = d.op, d.args
        if op is O.CONST:
            val = d.attrs.get("value")
            if isinstance(val, bool) or not isinstance(val, int):
                raise Unstageable(f"a non-integer constant `{val}` in the index")
            return p_const(val)
        if op is O.SPECIAL:
            return self._special(str(d.attrs.get("name", "")).lstrip("%"))
        if op is O.PARAM:
            name = str(d.attrs.get("name", v.name))
            label = next((p.label for p in self.kernel.params if p.name == name and p.label), name)
            return self.atom(f"param:{name}", label, "uniform")  # shown by its CUDA name (`N`) when read
        if op is O.ADDR:
            name = str(d.attrs.get("buffer", v.name))
            return self.atom(f"addr:{name}", name, "uniform")
        if op is O.UNDEF:
            raise Unstageable(f"`{v.name}` is read before it is written")
        if op is O.ADD:
            return p_add(self.poly(a[0]), self.poly(a[1]))
        if op is O.SUB:
            return p_sub(self.poly(a[0]), self.poly(a[1]))
        if op is O.NEG:
            return p_neg(self.poly(a[0]))
        if op is O.MUL:
            if d.attrs.get("hi"):
                return self._nonlinear(v, "mulhi", a)
            return p_mul(self.poly(a[0]), self.poly(a[1]))
        if op is O.MAD:
            if d.attrs.get("hi"):
                return self._nonlinear(v, "madhi", a)
            return p_add(p_mul(self.poly(a[0]), self.poly(a[1])), self.poly(a[2]))
        if op is O.SHL:
            k = p_const_value(self.poly(a[1]))
            if k is None or not 0 <= k < 63:
                return self._nonlinear(v, "shl", a)
            return p_scale(self.poly(a[0]), ("c", 1 << k))
        if op is O.CVT:
            src = d.attrs.get("from_type") or (a[0].type if a else "")
            if is_float(str(src)) or is_float(v.type):
                raise Unstageable("a floating-point value in the index")
            return self.poly(a[0])
        if op is O.PURE:
            fn = str(d.attrs.get("fn", ""))
            if fn.startswith(("cvta", "mov", "copy")) and len(a) == 1:
                return self.poly(a[0])
            return self._nonlinear(v, fn or "pure", a)
        if op in _NONLINEAR:
            return self._bits(v, _NONLINEAR[op], a)
        if op is O.SELECT:
            return self._select(d)
        if op is O.CMP:
            return self._cmp(d)
        if op is O.PHI:
            return self._phi(d)
        if op is O.LOAD:
            return self._load(d)
        raise Unstageable(f"`{d.text or op.value}` in the index is not arithmetic the analysis models")

    def _special(self, name: str) -> Poly:
        block = self.block
        axis = {"x": 0, "y": 1, "z": 2}
        if name.startswith("tid."):
            if block is None:
                raise Unstageable("the launch's block shape is unknown (pass --block or a `launch` comment)")
            return p_const(0) if block[axis[name[-1]]] == 1 else p_tf(("v", name))
        if name.startswith("ntid.") and block is not None:
            return p_const(block[axis[name[-1]]])
        if name in ("laneid", "warpid"):
            if block is None:
                raise Unstageable("the launch's block shape is unknown (pass --block or a `launch` comment)")
            lin = _linear_tid(block)
            return p_tf(tf("and", lin, ("c", 31)) if name == "laneid" else tf("shr", lin, ("c", 5)))
        from tolk_lint.ir.opcodes import special_varies

        if special_varies(name):
            raise Unstageable(f"`%{name}` varies between threads in a way the box does not model")
        return self.atom(name, name, "uniform")

    def _nonlinear(self, v: Value, fn: str, args: list[Value]) -> Poly:
        ps = [self.poly(x) for x in args]
        if all(p_thread_free(p) for p in ps):
            return self.fresh(v, ps)
        raise Unstageable(f"`{fn}` of a thread index in the index")

    def _bits(self, v: Value, op: str, args: list[Value]) -> Poly:
        p, q = self.poly(args[0]), self.poly(args[1])
        cp, cq = p_const_value(p), p_const_value(q)
        if cp is not None and cq is not None:
            return p_tf(tf(op, ("c", cp), ("c", cq)))
        if p_thread_free(p) and p_thread_free(q):
            return self.fresh(v, [p, q])
        k = p_const_value(q)
        if op == "shr" and k is not None and k >= type_bits(v.type) - 1 >= 7 and self.nonneg(p):
            return {}  # the sign of a non-negative value (signed division idioms)
        if op == "and" and k is not None and k < 0 and is_pow2(-k):
            # x & -2^n clears the low bits: (x >> n) << n
            n = (-k).bit_length() - 1
            free, thread = p_split(p)
            if all(tf_const(c) % (-k) == 0 for c in free.values()) and self.min_of(thread) >= 0:
                return p_add(free, p_tf(tf("shl", tf("shr", thread.get((), ZERO), ("c", n)), ("c", n))))
        if op == "or":
            # a | b is a + b where their bits are disjoint: thread fields that
            # never share a bit, below the trailing zeros of the uniform term
            if self._disjoint(p, q):
                return p_add(p, q)
            if p_thread_only(p) and p_thread_only(q):
                return p_tf(tf("or", p.get((), ZERO), q.get((), ZERO)))
            raise Unstageable("`or` of a thread index with a uniform value whose bits may overlap")
        if op in ("shr", "div", "and", "rem") and k is not None and k > 0:
            if op == "shr":
                d = 1 << k if k < 63 else 0
            elif op == "and":
                d = k + 1 if not (k + 1) & k else 0  # a low mask only
            else:
                d = k
            free, thread = p_split(p)
            if d and free and all(tf_const(c) % d == 0 for c in free.values()) and self.min_of(thread) >= 0:
                t = thread.get((), ZERO)
                if op in ("shr", "div"):
                    scaled = {m: ("c", tf_const(c) // d) for m, c in free.items()}
                    return p_add(scaled, p_tf(tf(op, t, ("c", k))))
                return p_tf(tf(op, t, ("c", k)))
            if not free:
                return p_tf(tf(op, p.get((), ZERO), ("c", k)))
        if p_thread_only(p) and p_thread_only(q):
            return p_tf(tf(op, p.get((), ZERO), q.get((), ZERO)))
        raise Unstageable(f"`{op}` mixes a thread index with another range or a uniform value")

    def _cmp(self, d: Instr) -> Poly:
        p, q = self.poly(d.args[0]), self.poly(d.args[1])
        if p_thread_free(p) and p_thread_free(q):
            return self.fresh(d.result, [p, q])
        if p_thread_only(p) and p_thread_only(q):
            op, swap = _CMP_TF.get(str(d.attrs.get("cmp")), (None, False))
            if op is not None:
                x, y = p.get((), ZERO), q.get((), ZERO)
                return p_tf(tf(op, y, x) if swap else tf(op, x, y))
        raise Unstageable("a comparison of a thread index with a uniform value in the index")

    def _select(self, d: Instr) -> Poly:
        c, x, y = d.args
        px, py = self.poly(x), self.poly(y)
        if p_const_value(py) == 0 and p_const_value(px) != 0:
            self.gates.add(d)
            return px
        if p_const_value(px) == 0 and p_const_value(py) != 0:
            self.gates.add(d)
            return py
        if px == py:
            return px
        pc = self.poly(c)
        if all(p_thread_free(p) for p in (pc, px, py)):
            return self.fresh(d.result, [pc, px, py])
        if all(p_thread_only(p) for p in (pc, px, py)):
            return p_tf(("sel", pc.get((), ZERO), px.get((), ZERO), py.get((), ZERO)))
        raise Unstageable("a selection between thread-dependent indices")

    def _phi(self, d: Instr) -> Poly:
        block = d.block
        lp = self._headers.get(block)
        v = d.result
        if lp is None:
            ps = [self.poly(x) for x in d.args]
            if all(p == ps[0] for p in ps):
                return ps[0]
            if all(p_thread_free(p) for p in ps):
                return self.fresh(v, ps)
            raise Unstageable(f"`{v.source_name}` merges thread-dependent values from branches")
        outside = {x for p, x in zip(block.preds, d.args) if p not in lp.blocks}
        inside = {x for p, x in zip(block.preds, d.args) if p in lp.blocks}
        if len(outside) != 1 or len(inside) != 1:
            raise Unstageable(f"`{v.source_name}` is carried around a loop in a way the analysis does not model")
        start = self.poly(next(iter(outside)))
        nxt = next(iter(inside))
        key = f"ph:{v.id}"
        self.atoms[key] = Atom(key, v.source_name, "range")
        self.memo[v] = p_atom(key)
        saved, self._log = self._log, []
        busy, self.busy = self.busy, set()  # `nxt` may be what the walk is evaluating: phi is P now
        try:
            step = p_sub(self.poly(nxt), p_atom(key))
        except Unstageable:
            raise Unstageable(f"`{v.source_name}` is carried around a loop, not stepped by a uniform amount")
        finally:
            touched, self._log = self._log, saved
            self.busy = busy
            del self.memo[v]
        trip = self.trip(lp)
        if any(key in m for m in step):
            for t in touched:
                self.memo.pop(t, None)
            # a rotated copy of another induction variable: the value it takes
            # at trip n + 1 is `nxt` at trip n, and `start` is `nxt` at trip -1
            nxt_p = p_add(step, p_atom(key))
            tkey = next(iter(trip))[0]
            if not any(key in m for m in nxt_p):
                prev = p_subst(nxt_p, tkey, p_add(trip, p_const(-1)))
                if self.same(p_subst(prev, tkey, {}), start):
                    return prev
            raise Unstageable(f"`{v.source_name}` is carried around a loop, not stepped by a uniform amount")
        result = p_add(start, p_mul(step, trip))
        for t in touched:
            if t in self.memo:
                self.memo[t] = p_subst(self.memo[t], key, result)
        if saved is not None:
            saved.extend(touched)
        return result

    def _load(self, d: Instr) -> Poly:
        space = d.attrs.get("space")
        addr = self.address(d)
        if all(p_thread_free(p) for p in addr):
            name = str(d.attrs.get("buffer") or (d.text.split("[")[-1].rstrip("];") if "[" in d.text else ""))
            return self.fresh(d.result, addr, name or f"{space or 'mem'}[...]")
        raise Unstageable("an index loaded from memory at a thread-dependent address")

    def address(self, d: Instr) -> list[Poly]:
        """The address of a memory op as polynomials: the byte address (PTX
        and Python alike), or, for an access without one, its index tuple."""
        idx = d.attrs.get("index")
        if not d.args:
            if idx is not None:
                return [self.poly(x) for x in idx]
            raise Unstageable("a memory access without an address")
        return [self.poly(d.args[0])]  # the address value holds the immediate offset already

    def same(self, p: Poly, q: Poly) -> bool:
        """Whether two polynomials are equal for every thread."""
        np = lazy_numpy()
        for c in p_sub(p, q).values():
            cv = tf_const(c)
            if cv is not None:
                if cv:
                    return False
                continue
            if self.block is None:
                return False
            if np.any(np.asarray(tf_eval(c, thread_env(self.block))) != 0):
                return False
        return True

    def nonneg(self, p: Poly) -> bool:
        """Whether every value of ``p`` is >= 0: non-negative coefficients on
        atoms that cannot be negative (trips, block indices and sizes)."""
        for m, c in p.items():
            for a in m:
                if not a.startswith(("trip:", "ctaid.", "nctaid.", "ntid.", "addr:")):
                    return False
            cv = tf_const(c)
            if cv is not None:
                if cv < 0:
                    return False
            elif self.min_of({(): c}) < 0:
                return False
        return True

    def _disjoint(self, p: Poly, q: Poly) -> bool:
        """Whether ``p`` and ``q`` never have a set bit in common (so ``p | q``
        is ``p + q``): their thread parts are non-negative and disjoint in
        every thread, and lie below the trailing zeros of the one uniform part."""
        np = lazy_numpy()
        try:
            fp, tp = p_split(p)
            fq, tq = p_split(q)
        except Unstageable:
            return False
        if fp and fq:
            return False
        if self.block is None:
            return False
        env = thread_env(self.block)
        a = tf_values(tp.get((), ZERO), env) + np.zeros(1, dtype="int64")
        b = tf_values(tq.get((), ZERO), env) + np.zeros(1, dtype="int64")
        if a.min() < 0 or b.min() < 0 or np.any(a & b):
            return False
        free = fp or fq
        if not free:
            return True
        return int((a | b).max()) < (1 << min(p_tz(free), 62))

    # -- bounds of thread-only polynomials --------------------------------------

    def _values(self, p: Poly):
        np = lazy_numpy()
        if self.block is None:
            return None
        env = thread_env(self.block)
        t = p.get((), ZERO)
        return tf_values(t, env) + np.zeros(1, dtype="int64")

    def max_of(self, p: Poly) -> int | None:
        vals = self._values(p)
        return None if vals is None else int(vals.max())

    def min_of(self, p: Poly) -> int:
        vals = self._values(p)
        return -1 if vals is None else int(vals.min())


def _linear_tid(block: tuple[int, int, int]):
    bx, by, _ = block
    return tf("add", ("v", "tid.x"), tf("mul", ("c", bx), tf("add", ("v", "tid.y"), tf("mul", ("c", by), ("v", "tid.z")))))


def thread_env(block: tuple[int, int, int]) -> dict[str, Any]:
    """tid.x/y/z of every thread of the block, as flat arrays (x fastest)."""
    np = lazy_numpy()
    bx, by, bz = block
    lin = np.arange(bx * by * bz, dtype="int64")
    return {"tid.x": lin % bx, "tid.y": (lin // bx) % by, "tid.z": lin // (bx * by)}
