"""Arithmetic, logic, comparison, selection, conversion and moves.

``add sub mul mad fma div rem neg abs min max and or xor not shl shr`` become
the IR's arithmetic opcodes (``.hi``/``.wide`` as attributes; the carry-out
of ``.cc`` is not modelled, the sum is); the bit-twiddling and
transcendental families (``bfe popc lop3 sqrt ...``) become PURE with their
name; ``setp``/``set`` a CMP (and the ``.and/.or/.xor`` with a predicate),
``selp``/``slct`` a SELECT, ``cvt``/``cvta`` a CVT, ``mov`` an alias of its
source (no instruction) or an EXTRACT per part when it unpacks.

What it may import: `opaque`, `vocabulary` and `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Value, type_bits
from tolk_lint.ir.opcodes import Opcode

from .opaque import OpaqueLowering
from .vocabulary import SINK, OpInfo, Unmodelled, wide

O = Opcode

_CMP_OPS = frozenset("eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan".split())
_BOOL_OPS = {"and": O.AND, "or": O.OR, "xor": O.XOR}

ARITH = {
    "add": O.ADD, "sub": O.SUB, "mul": O.MUL, "mad": O.MAD, "fma": O.MAD, "div": O.DIV, "rem": O.REM,
    "neg": O.NEG, "abs": O.ABS, "min": O.MIN, "max": O.MAX, "and": O.AND, "or": O.OR, "xor": O.XOR,
    "not": O.NOT, "shl": O.SHL, "shr": O.SHR,
}  # fmt: skip
ARITY = {O.NEG: 1, O.ABS: 1, O.NOT: 1, O.MAD: 3}

PURE_FAMILIES = frozenset(
    """bfe bfi bfind prmt popc clz brev sad lop3 shf fns bmsk szext dp4a dp2a ex2 lg2 sqrt rsqrt rcp sin cos
    tanh copysign testp cnot mul24 mad24 addc subc madc isspacep istypep txq suq getctarank mapa createpolicy
    vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 vadd4
    vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4 alloca stacksave cvt.pack""".split()
)
PURE_NO_RESULT = frozenset("prefetch prefetchu discard applypriority nanosleep pmevent brkpt stackrestore".split())
PRED_RESULT = frozenset({"testp", "isspacep", "istypep"})


class ArithmeticLowering(OpaqueLowering):
    """The handlers of the arithmetic, compare, select, convert and move families."""

    def h_arith(self, oi: OpInfo, ops: list) -> None:
        fam = oi.fam
        op = ARITH[fam]
        t = oi.t or "b32"
        mods = oi.modset
        if "cc" in mods and fam in ("add", "sub", "mad"):
            pass  # the carry-out is not modelled; the sum is
        n = ARITY.get(op, 2)
        if len(ops) != n + 1:
            if op in (O.MIN, O.MAX) and len(ops) == 4:
                n = 3
            else:
                raise Unmodelled(f"{len(ops)} operands")
        attrs: dict[str, Any] = {"signed": t[0] == "s"}
        rt = t
        ct = t
        if "hi" in mods:
            attrs["hi"] = True
        if "ftz" in mods:
            attrs["ftz"] = True  # subnormals flushed to zero (`smt.float_compare.ieee_abs`)
        if "wide" in mods:
            attrs["wide"] = True
            rt = wide(t)
            ct = rt
        if op in (O.SHL, O.SHR):
            args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        elif op is O.MAD:
            args = [self.val(ops[1], t), self.val(ops[2], t), self.val(ops[3], ct)]
        else:
            args = [self.val(x, t) for x in ops[1:]]
        v = self.value(op, args, rt, attrs, self.dname(ops[0]))
        self.write(ops[0], v)

    def h_pure(self, oi: OpInfo, ops: list) -> None:
        fam = oi.fam
        if fam in PURE_NO_RESULT:
            args: list[Value] = []
            for o in ops:
                if o[0] == "m":
                    args.append(self.address(o, oi.space or "generic")[0])
                else:
                    self._collect_reads(o, args)
            self.emit(O.PURE, args, (), {"fn": fam})
            return
        if not ops:
            raise Unmodelled("no operands")
        if fam in ("bfi", "bfe") and self._bit_field(fam, oi, ops):
            return
        if fam == "bmsk" and self._bit_mask(oi, ops):
            return
        dest = ops[0]
        t = oi.t or "b32"
        rt = "pred" if fam in PRED_RESULT else t
        if fam in ("clz", "popc", "bfind"):
            rt = "u32"
        if fam == "cvt":  # cvt.pack
            rt = oi.types[0] if oi.types else t
        args = []
        for o in ops[1:]:
            if o[0] == "m":
                args.append(self.address(o, oi.space or "generic")[0])
            else:
                args.append(self.val(o, t))
        if dest[0] == "d":
            d1, d2 = ("r", dest[1]), ("r", dest[2])
            ins = self.emit(O.PURE, args, (rt, "pred"), {"fn": fam}, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
            return
        attrs: dict[str, Any] = {"fn": fam}
        if fam == "bfind":  # which bit it finds, and what it returns (`smt.bit_ops`)
            attrs.update(signed=t.startswith("s"), shiftamt="shiftamt" in oi.mods)
        v = self.value(O.PURE, args, rt, attrs, self.dname(dest))
        self.write(dest, v)

    def _bit_field(self, fam: str, oi: OpInfo, ops: list) -> bool:
        """``bfi``/``bfe`` with constant position and length, as the shifts
        and masks they are (nvcc emits them for tile and lane indices, which
        the memory analyses must read exactly); False when not constant."""
        t = oi.t or "b32"
        w = type_bits(t)
        n_args = 4 if fam == "bfi" else 3
        if len(ops) != n_args + 1 or ops[-1][0] != "i" or ops[-2][0] != "i" or (fam == "bfe" and t[0] == "s"):
            return False
        pos, ln = int(ops[-2][1]) & 0xFF, int(ops[-1][1]) & 0xFF
        ln = min(ln, max(0, w - pos))
        field = ((1 << ln) - 1) << pos if pos < w else 0
        name = self.dname(ops[0])
        if fam == "bfe":
            a = self.val(ops[1], t)
            shifted = self.value(O.SHR, [a, self.const(min(pos, w - 1) if pos < w else 0, "u32")], t, {"signed": False})
            v = self.value(O.AND, [shifted, self.const((1 << ln) - 1 if pos < w else 0, t)], t, {"signed": False}, name)
        else:
            a, b = self.val(ops[1], t), self.val(ops[2], t)
            if not field:
                v = self.value(O.OR, [b, self.const(0, t)], t, {"signed": False}, name)
            else:
                moved = self.value(O.SHL, [a, self.const(pos, "u32")], t, {"signed": False})
                kept = self.value(O.AND, [b, self.const(~field & ((1 << w) - 1), t)], t, {"signed": False})
                put = self.value(O.AND, [moved, self.const(field, t)], t, {"signed": False})
                v = self.value(O.OR, [kept, put], t, {"signed": False}, name)
        self.write(ops[0], v)
        return True

    def _bit_mask(self, oi: OpInfo, ops: list) -> bool:
        """``bmsk.clamp.b32 d, a, b`` / ``bmsk.wrap.b32``: the mask of bits
        ``a .. a+b-1``, as the shifts it is (CUB's radix digits are
        ``key >> bit & bmsk(0, num_bits)``: a PURE would let a digit take any
        value). With ``low(n) = (1 << n) - 1`` (all ones at n = 32: a shift
        by the width gives 0), ``d = low(end) & ~low(start)``, where
        ``.clamp`` takes ``start = min(a, 32)``, ``end = min(start + min(b,
        32), 32)`` and ``.wrap`` takes ``start = a & 31``, ``end = min(start
        + (b & 31), 32)`` (the PTX ISA's definition, case by case: a start
        of 32 or more gives 0, a width of 0 gives 0, a field past bit 31
        ends there)."""
        if len(ops) != 3 or (oi.t or "b32") != "b32":
            return False
        a, b = self.val(ops[1], "u32"), self.val(ops[2], "u32")
        u = {"signed": False}
        if "wrap" in oi.mods:
            start = self.value(O.AND, [a, self.const(31, "u32")], "u32", u)
            width = self.value(O.AND, [b, self.const(31, "u32")], "u32", u)
        else:
            start = self.value(O.MIN, [a, self.const(32, "u32")], "u32", u)
            width = self.value(O.MIN, [b, self.const(32, "u32")], "u32", u)
        end = self.value(O.MIN, [self.value(O.ADD, [start, width], "u32", u), self.const(32, "u32")], "u32", u)

        def low(n: Value) -> Value:
            return self.value(O.SUB, [self.value(O.SHL, [self.const(1, "u32"), n], "u32", u), self.const(1, "u32")],
                              "u32", u)  # fmt: skip

        above = self.value(O.XOR, [low(start), self.const(0xFFFFFFFF, "u32")], "u32", u)
        self.write(ops[0], self.value(O.AND, [low(end), above], "b32", u, self.dname(ops[0])))
        return True

    def h_setp(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        cmp = mods[0] if mods and mods[0] in _CMP_OPS else None
        if cmp is None or oi.t is None:
            raise Unmodelled("unknown comparison")
        t = oi.t
        boolop = next((m for m in mods[1:] if m in _BOOL_OPS), None)
        signed = None if t[0] == "f" or t in ("bf16", "bf16x2") else t[0] == "s"
        need = 4 if boolop else 3
        if len(ops) != need:
            raise Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], t)
        bb = self.val(ops[2], t)
        dest = ops[0]
        d1 = ("r", dest[1]) if dest[0] == "d" else dest
        n1 = self.dname(d1)
        c = self.value(O.CMP, [a, bb], "pred", {"cmp": cmp, "signed": signed, "type": t}, None if boolop else n1)
        if boolop:
            cv = self.val(ops[3], "pred")
            p = self.value(_BOOL_OPS[boolop], [c, cv], "pred", {"signed": False}, n1)
        else:
            p = c
        if dest[0] == "d":
            self.write(d1, p)
            d2 = ("r", dest[2])
            n2 = self.dname(d2)
            nc = self.value(O.NOT, [c], "pred", {"signed": False}, None if boolop else n2)
            q = self.value(_BOOL_OPS[boolop], [nc, cv], "pred", {"signed": False}, n2) if boolop else nc
            self.write(d2, q)
        else:
            self.write(dest, p)

    def h_set(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        cmp = mods[0] if mods and mods[0] in _CMP_OPS else None
        if cmp is None or len(oi.types) < 2:
            raise Unmodelled("unknown comparison")
        dt, st_ = oi.types[-2], oi.types[-1]
        boolop = next((m for m in mods[1:] if m in _BOOL_OPS), None)
        signed = None if st_[0] == "f" else st_[0] == "s"
        if len(ops) != (4 if boolop else 3):
            raise Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], st_)
        bb = self.val(ops[2], st_)
        c = self.value(O.CMP, [a, bb], "pred", {"cmp": cmp, "signed": signed, "type": st_})
        if boolop:
            c = self.value(_BOOL_OPS[boolop], [c, self.val(ops[3], "pred")], "pred", {"signed": False})
        if dt[0] == "f":
            tv, fv = self.const(1.0, dt), self.const(0.0, dt)
        else:
            tv = self.const(-1 if dt[0] == "s" else (1 << type_bits(dt)) - 1, dt)
            fv = self.const(0, dt)
        self.write(ops[0], self.value(O.SELECT, [c, tv, fv], dt, None, self.dname(ops[0])))

    def h_selp(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 4:
            raise Unmodelled(f"{len(ops)} operands")
        t = oi.t or "b32"
        c = self.val(ops[3], "pred")
        a = self.val(ops[1], t)
        bb = self.val(ops[2], t)
        self.write(ops[0], self.value(O.SELECT, [c, a, bb], t, None, self.dname(ops[0])))

    def h_slct(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 4 or len(oi.types) < 2:
            raise Unmodelled(f"{len(ops)} operands")
        dt, ct = oi.types[-2], oi.types[-1]
        c = self.val(ops[3], ct)
        zero = self.const(0.0 if ct[0] == "f" else 0, ct)
        p = self.value(O.CMP, [c, zero], "pred", {"cmp": "ge", "signed": None if ct[0] == "f" else True, "type": ct})
        a, bb = self.val(ops[1], dt), self.val(ops[2], dt)
        self.write(ops[0], self.value(O.SELECT, [p, a, bb], dt, None, self.dname(ops[0])))

    def h_cvt(self, oi: OpInfo, ops: list) -> None:
        if "pack" in oi.modset:
            self.h_pure(oi, ops)
            return
        types = oi.types
        if not types or len(ops) < 2:
            raise Unmodelled("no type")
        to = types[0]
        frm = types[1] if len(types) > 1 else to
        attrs: dict[str, Any] = {"from_type": frm}
        for m in oi.mods:
            if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs"):
                attrs["rounding"] = m
            elif m in ("sat", "satfinite", "relu", "ftz"):
                attrs[m] = True
        if ops[0][0] == "d":
            raise Unmodelled("two destinations")
        args = [self.val(o, frm) for o in ops[1:]]
        v = self.value(O.CVT, args, to, attrs, self.dname(ops[0]))
        self.write(ops[0], v)

    def h_cvta(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise Unmodelled(f"{len(ops)} operands")
        t = oi.t or "u64"
        to = "to" in oi.modset
        space = oi.space or "generic"
        src = ops[1]
        if src[0] in ("r", "o", "x"):
            name = src[1]
            r = self.resolve(name)
            if r[0] in ("buf", "sym", "fn", "par"):
                self.write(ops[0], self.val(src, t, self.dname(ops[0])))
                return
        a = self.val(src, t)
        v = self.value(O.CVT, [a], t, {"from_type": a.type, "cvta": True, "space": space, "to_space": to},
                       self.dname(ops[0]))  # fmt: skip
        self.write(ops[0], v)

    def h_mov(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise Unmodelled(f"{len(ops)} operands")
        t = oi.t or "b32"
        dst, src = ops
        if dst[0] == "v":
            # unpack: mov.b64 {%r1, %r2}, %rd1
            whole = self.val(src, t)
            n = len(dst[1])
            part_bits = max(1, type_bits(t) // max(1, n))
            for i, d in enumerate(dst[1]):
                if d[0] != "r" or d[1] == SINK:
                    continue
                pt = self.reg_type(d, f"b{part_bits}")
                v = self.value(O.EXTRACT, [whole], pt, {"index": i}, self.dname(d))
                self.write(d, v)
            return
        if src[0] == "r":
            r = self.resolve(src[1])
            if r[0] == "reg":
                self.write(dst, self.val(src, t))  # an alias: no instruction
                return
        self.write(dst, self.val(src, t, self.dname(dst)))
