"""Warp collectives: ``shfl``, ``vote``, ``match``, ``redux``, ``activemask``.

Each becomes its IR opcode (SHUFFLE, VOTE, MATCH, REDUX, ACTIVEMASK) with
its mode; the pre-Volta forms without ``.sync`` carry ``sync=False``; a
second ``|%p`` destination is a second result. (``bar.warp.sync`` is a
barrier: the control family lowers it, to WARP_SYNC.)

What it may import: `core`, `vocabulary` and `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.opcodes import Opcode

from .core import LoweringCore
from .vocabulary import OpInfo, Unmodelled

O = Opcode


class WarpLowering(LoweringCore):
    """The handlers of the warp collectives."""

    def h_shfl(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("idx", "up", "down", "bfly")), None)
        sync = "sync" in oi.modset
        if mode is None or len(ops) != (5 if sync else 4):
            raise Unmodelled("unknown shuffle")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32"), self.val(ops[3], "u32")]
        if sync:
            args.append(self.val(ops[4], "u32"))
        d = ops[0]
        attrs: dict[str, Any] = {"mode": mode}
        if not sync:
            attrs["sync"] = False
        if d[0] == "d":
            d1, d2 = ("r", d[1]), ("r", d[2])
            ins = self.emit(O.SHUFFLE, args, (t, "pred"), attrs, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
        else:
            ins = self.emit(O.SHUFFLE, args, (t,), attrs, (self.dname(d),))
            self.write(d, ins.results[0])

    def h_vote(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("all", "any", "uni", "ballot")), None)
        sync = "sync" in oi.modset
        if mode is None or len(ops) != (3 if sync else 2):
            raise Unmodelled("unknown vote")
        args = [self.val(ops[1], "pred")]
        if sync:
            args.append(self.val(ops[2], "u32"))
        rt = "b32" if mode == "ballot" else "pred"
        attrs: dict[str, Any] = {"mode": mode}
        if not sync:
            attrs["sync"] = False
        ins = self.emit(O.VOTE, args, (rt,), attrs, (self.dname(ops[0]),))
        self.write(ops[0], ins.results[0])

    def h_match(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("any", "all")), None)
        if mode is None or len(ops) != 3:
            raise Unmodelled("unknown match")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        d = ops[0]
        if d[0] == "d":
            d1, d2 = ("r", d[1]), ("r", d[2])
            ins = self.emit(O.MATCH, args, ("b32", "pred"), {"mode": mode}, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
        else:
            self.write(d, self.value(O.MATCH, args, "b32", {"mode": mode}, self.dname(d)))

    def h_redux(self, oi: OpInfo, ops: list) -> None:
        rop = next((m for m in oi.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
        if rop is None or len(ops) != 3:
            raise Unmodelled("unknown redux")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        self.write(ops[0], self.value(O.REDUX, args, t, {"op": rop, "type": t}, self.dname(ops[0])))

    def h_activemask(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 1:
            raise Unmodelled(f"{len(ops)} operands")
        self.write(ops[0], self.value(O.ACTIVEMASK, [], "b32", {}, self.dname(ops[0])))
