"""Control: the terminators of blocks, barriers, and calls.

`lower_term` ends each block as the split step decided: a JUMP (``bra``, or
falling through), a BRANCH on a guard (``@p bra``, and the block of a
predicated instruction; ``@!p`` swaps the targets), RET (with the values of
a ``.func``'s return registers and return slots) or EXIT (``exit``,
``trap``); a branch to a label that does not exist is reported (TL002) and
ends the block with an OPAQUE and an EXIT. ``bar``/``barrier`` become a
BARRIER (``.sync``/``.arrive``/``.red``, ``.aligned``, ``.cluster``; its
``.warp.sync`` form a WARP_SYNC), and ``call`` a CALL whose arguments are
the values stored to its ``.param`` slots and whose results are the values
later ``ld.param`` instructions of its return slots read. ``mbarrier.*``
becomes an MBARRIER (which of its arrives order memory is for
`tolk_lint.analysis.mbarriers` to say).

What it may import: `opaque`, `cfg`, `vocabulary` and `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Span, Value, type_bits
from tolk_lint.ir.opcodes import Opcode

from .cfg import Segment
from .opaque import OpaqueLowering
from .vocabulary import SINK, OpInfo, Unmodelled, opinfo

O = Opcode
_MBARRIER_KINDS = ("init", "inval", "arrive", "arrive_drop", "expect_tx", "complete_tx", "test_wait", "try_wait",
                   "pending_count")  # fmt: skip


class ControlLowering(OpaqueLowering):
    """Block terminators, barriers and calls."""

    def lower_term(self, s: Segment) -> None:
        b = self.b
        t = s.term
        if t is None:
            # falling through: the jump carries the span of the block's last statement
            # (or of the label it falls into, for an empty block)
            if not s.stmts:
                tgt = s.fall
                self.span = (tgt.span if tgt is not None and tgt.span is not None else self.k.span)
                self.origin = None
            if s.fall is not None:
                b.jump(s.fall.block, span=self.span, origin=self.origin)
            else:
                b.ret(span=self.span, origin=self.origin)
            return
        kind = t[0]
        if kind == "jump":
            st, origin = t[2], t[3]
            self.set_stmt(st, self.top, origin)
            tgt = s.succ_segs[0]
            b.jump(tgt.block, span=self.span, origin=self.origin, text=self.text)
        elif kind == "cbr":
            _, guard, _label, st, origin, scope = t
            self.set_stmt(st, scope, origin)
            tgt = s.succ_segs[0]
            fall = s.fall
            cond = self._guard_value(guard)
            if fall is None or fall is tgt:
                b.jump(tgt.block, span=self.span, origin=self.origin, text=self.text)
                return
            neg = guard[0]
            if neg:
                b.branch(cond, fall.block, tgt.block, span=self.span, origin=self.origin, text=self.text)
            else:
                b.branch(cond, tgt.block, fall.block, span=self.span, origin=self.origin, text=self.text)
        elif kind == "pred":
            _, guard, then, _none, st, origin, scope = t
            self.set_stmt(st, scope, origin)
            cond = self._guard_value(guard)
            fall = s.fall
            if fall is None or fall is then:
                b.jump(then.block, span=self.span, origin=self.origin, text=self.text)
                return
            if guard[0]:
                b.branch(cond, fall.block, then.block, span=self.span, origin=self.origin, text=self.text)
            else:
                b.branch(cond, then.block, fall.block, span=self.span, origin=self.origin, text=self.text)
        elif kind in ("ret", "exit", "trap"):
            st, origin = t[1], t[2]
            if st is not None:
                self.set_stmt(st, self.top, origin)
            else:
                self.span, self.origin, self.text = self._end_span(), None, "ret"
            if kind == "ret" and not self.k.is_entry:
                args = self._return_values()
                b.ret(args, span=self.span, origin=self.origin, text=self.text)
            elif kind == "ret":
                b.ret(span=self.span, origin=self.origin, text=self.text)
            else:
                # `trap` aborts the whole launch: no thread is left to wait (`ir.cfg` leaves it out of post-dominance)
                b.exit(attrs={"trap": True} if kind == "trap" else None, span=self.span, origin=self.origin,
                       text=self.text)
        elif kind == "badjump":
            st, origin = t[2], t[3]
            self.set_stmt(st, self.top, origin)
            self.report(f"{st[2]} {t[1]}", None)
            self.emit(O.OPAQUE, [], (), {"text": self.text, "reason": f"branch to unknown label `{t[1]}`"})
            b.exit(span=self.span, origin=self.origin, text=self.text)

    def _end_span(self) -> Span:
        return Span(self.path, self.fd.end_line, self.fd.end_column)

    def _guard_value(self, guard: tuple) -> Value:
        try:
            return self.val(("r", guard[1]), "pred")
        except Unmodelled:
            return self.value(O.OPAQUE, [], "pred", {"text": self.text, "reason": f"guard `{guard[1]}`"})

    def _return_values(self) -> list[Value]:
        out = []
        for r in self.fd.rets:
            if ".reg" in r.attrs:
                self._declare(r.name, r.dtype or "b32")
                out.append(self.b.read(r.name))
                continue
            offs = sorted(self.ret_slots.get(r.name, ()))
            for off in offs:
                out.append(self.b.read(f"$ret:{r.name}:{off}"))
        return out

    def h_bar(self, oi: OpInfo, ops: list) -> None:
        mods = oi.modset
        if "warp" in mods:
            if len(ops) != 1:
                raise Unmodelled(f"{len(ops)} operands")
            self.emit(O.WARP_SYNC, [self.val(ops[0], "b32")], (), {})
            return
        aligned = oi.fam == "bar" or "aligned" in mods
        if "cluster" in mods:
            kind = "arrive" if "arrive" in mods else "sync"
            self.emit(O.BARRIER, [], (), {"kind": kind, "aligned": aligned, "cluster": True, "id": None})
            return
        if "red" in mods:
            rop = next((m for m in oi.mods if m in ("popc", "and", "or")), None)
            if rop is None or len(ops) not in (3, 4):
                raise Unmodelled("unknown barrier reduction")
            rt = "u32" if rop == "popc" else "pred"
            args = [self.val(ops[1], "u32")]
            attrs: dict[str, Any] = {"kind": "red", "aligned": aligned, "op": rop,
                                     "id": ops[1][1] if ops[1][0] == "i" else None}  # fmt: skip
            if len(ops) == 4:
                args.append(self.val(ops[2], "u32"))
                attrs["count"] = ops[2][1] if ops[2][0] == "i" else None
            args.append(self.val(ops[-1], "pred"))
            attrs["has_pred"] = True
            ins = self.emit(O.BARRIER, args, (rt,), attrs, (self.dname(ops[0]),))
            self.write(ops[0], ins.results[0])
            return
        kind = "arrive" if "arrive" in mods else "sync"
        if not ops or len(ops) > 2:
            if not ops and kind == "sync":
                args0: list[Value] = [self.const(0, "u32")]
                self.emit(O.BARRIER, args0, (), {"kind": kind, "aligned": aligned, "id": 0})
                return
            raise Unmodelled(f"{len(ops)} operands")
        args = [self.val(ops[0], "u32")]
        attrs = {"kind": kind, "aligned": aligned, "id": ops[0][1] if ops[0][0] == "i" else None}
        if len(ops) == 2:
            args.append(self.val(ops[1], "u32"))
            attrs["count"] = ops[1][1] if ops[1][0] == "i" else None
        self.emit(O.BARRIER, args, (), attrs)

    def h_mbarrier(self, oi: OpInfo, ops: list) -> None:
        """``mbarrier.*`` -> MBARRIER (``tolk_lint.ir.opcodes``): the object's
        address first, then the count, state or parity operand; the state an
        arrive returns, the predicate a wait returns, as results."""
        mods = oi.modset
        kind = next((m for m in oi.mods if m in _MBARRIER_KINDS), None)
        if kind is None:
            raise Unmodelled("unknown mbarrier operation")
        attrs: dict[str, Any] = {"kind": kind, "space": "shared"}
        attrs.update({flag: True for flag, mod in (("parity", "parity"), ("no_complete", "noComplete"),
                                                    ("tx", "expect_tx"), ("cluster", "shared::cluster"))
                      if mod in mods})  # fmt: skip
        if kind in ("init", "inval", "expect_tx", "complete_tx"):
            addr_at, dest = 0, None
        elif kind == "pending_count":
            if len(ops) != 2:
                raise Unmodelled(f"{len(ops)} operands")
            v = self.value(O.MBARRIER, [self.val(ops[1], "b64")], "u32", attrs, self.dname(ops[0]))
            self.write(ops[0], v)
            return
        else:
            addr_at, dest = 1, ops[0]
        if len(ops) <= addr_at or ops[addr_at][0] != "m":
            raise Unmodelled("expected an mbarrier address")
        addr, buf, _off = self.address(ops[addr_at], "shared")
        if buf is not None:
            attrs["buffer"] = buf
        rest = [self.val(o, "b64" if kind in ("test_wait", "try_wait") and not attrs.get("parity") else "u32")
                for o in ops[addr_at + 1 :]]  # fmt: skip
        if kind in ("arrive", "arrive_drop") and rest:
            attrs["has_count"] = True
        args = [addr] + rest
        if dest is None or (dest[0] == "r" and dest[1] == SINK):
            self.emit(O.MBARRIER, args, (), attrs)
            return
        rt = "pred" if kind in ("test_wait", "try_wait") else "b64"
        self.write(dest, self.value(O.MBARRIER, args, rt, attrs, self.dname(dest)))

    def h_call(self, oi: OpInfo, ops: list) -> None:
        i = 0
        rets: list[tuple] = []
        if i < len(ops) and ops[i][0] == "g":
            rets = ops[i][1]
            i += 1
        if i >= len(ops) or ops[i][0] != "r":
            raise Unmodelled("no callee")
        callee_op = ops[i]
        i += 1
        args_ops: list[tuple] = []
        if i < len(ops) and ops[i][0] == "g":
            args_ops = ops[i][1]
            i += 1
        proto = ops[i][1] if i < len(ops) and ops[i][0] == "r" else None
        callee = callee_op[1]
        r = self.resolve(callee)
        indirect = r[0] in ("reg",)
        args: list[Value] = []
        for a in args_ops:
            if a[0] != "r":
                args.append(self.val(a, None))
                continue
            ra = self.resolve(a[1])
            if ra[0] == "slot":
                for off in sorted(self.slot_offsets.get(ra[1], ())):
                    args.append(self.b.read(f"{ra[1]}:{off}"))
            else:
                args.append(self.val(a, None))
        # results: the later `ld.param` of the return slots, in this block
        ret_keys = {}
        for x in rets:
            if x[0] == "r":
                rr = self.resolve(x[1])
                if rr[0] == "slot":
                    ret_keys[x[1]] = rr[1]
        res_slots: list[tuple[str, int]] = []
        res_types: list[str] = []
        res_names: list[str | None] = []
        if ret_keys:
            stmts = self._seg.stmts
            idx = next((j for j, s in enumerate(stmts) if s[0] is self._stmt), None)
            if idx is not None:
                for st, scope, _o, _u in stmts[idx + 1 :]:
                    sop = st[2]
                    if sop.startswith("call"):
                        break
                    if not sop.startswith("ld.param") or len(st[3]) < 2 or st[3][1][0] != "m":
                        continue
                    base = st[3][1][1]
                    if base[0] != "r" or base[1] not in ret_keys or scope is not self.scope:
                        continue
                    loi = opinfo(sop)
                    dt = loi.t or "b32"
                    el = max(1, type_bits(dt) // 8)
                    d0 = st[3][0]
                    dl = list(d0[1]) if d0[0] == "v" else [d0]
                    for j, dj in enumerate(dl):
                        slot = (ret_keys[base[1]], st[3][1][2] + j * el)
                        if slot not in res_slots:
                            res_slots.append(slot)
                            res_types.append(dt)
                            res_names.append(self.dname(dj) if dj[0] == "r" else None)
        if indirect:
            args.append(self.val(callee_op, "u64"))
        attrs: dict[str, Any] = {"callee": None if indirect else callee, "uni": "uni" in oi.modset}
        if indirect:
            attrs["indirect"] = True
        if proto:
            attrs["prototype"] = proto
        ins = self.emit(O.CALL, args, res_types, attrs, res_names)
        for slot, v in zip(res_slots, ins.results):
            self.call_results[slot] = v
            self.b.write(f"{slot[0]}:{slot[1]}", v)
