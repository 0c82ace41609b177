"""Tensor cores and matrix moves: ``mma``, ``wmma``, ``ldmatrix``,
``stmatrix``, ``movmatrix``.

``mma.sync`` and ``wmma.mma`` become an MMA whose operands are the A, B and
C fragments' registers in order (their counts, the shape, layouts and types
as attributes); ``wmma.load``/``wmma.store`` a WMMA_LOAD/WMMA_STORE of the
fragment at an address; ``ldmatrix``/``stmatrix``/``movmatrix`` their IR
opcodes with ``.x1/.x2/.x4`` and ``.trans``; Hopper's ``wgmma.*`` a
WGMMA (`TensorCoreLowering.h_wgmma`).

What it may import: `core`, `vocabulary` and `tolk_lint.ir`.
"""

from __future__ import annotations

import re
from typing import Any

from tolk_lint.ir.opcodes import Opcode

from .core import LoweringCore
from .vocabulary import OpInfo, Unmodelled

O = Opcode

_SHAPE_RE = re.compile(r"m\d+n\d+k\d+\Z")


class TensorCoreLowering(LoweringCore):
    """The handlers of the tensor-core and matrix families."""

    def _mma(self, oi: OpInfo, ops: list, kind: str) -> None:
        if len(ops) < 4:
            raise Unmodelled(f"{len(ops)} operands")
        shape = next((m for m in oi.mods if _SHAPE_RE.match(m)), None)
        layouts = tuple(m for m in oi.mods if m in ("row", "col"))
        dtypes = tuple(oi.types)
        d, a, bfr, c = (self._frag(x) for x in ops[:4])
        args = [self.val(x, None) for x in a] + [self.val(x, None) for x in bfr] + [self.val(x, None) for x in c]
        extra = ops[4:]
        for x in extra:
            args.append(self.val(x, "b32"))
        dt = dtypes[0] if dtypes else "f32"
        rtypes = [self.reg_type(x, dt) for x in d]
        attrs: dict[str, Any] = {"kind": kind, "shape": shape, "layouts": layouts, "dtypes": dtypes,
                                 "counts": (len(a), len(bfr), len(c))}  # fmt: skip
        if "sp" in oi.modset or oi.fam == "mma" and oi.mods[:1] == ["sp"]:
            attrs["sparse"] = True
        if extra:
            attrs["extra"] = len(extra)
        ins = self.emit(O.MMA, args, rtypes, attrs, [self.dname(x) for x in d])
        for x, v in zip(d, ins.results):
            if x[0] == "r":
                self.write(x, v)

    def h_wgmma(self, oi: OpInfo, ops: list) -> None:
        """Hopper's warpgroup MMA: ``wgmma.fence``, ``wgmma.commit_group``,
        ``wgmma.wait_group N`` and ``wgmma.mma_async`` (every shape, dense or
        ``.sp``), each a WGMMA that the four warps of a warpgroup run
        together. ``mma_async``'s operands are the accumulators, then the A
        registers or descriptor, the B descriptor and the rest (scale-d,
        immediates); its results are the accumulators, pending until the
        ``wait_group`` that retires its group (`tolk_lint.analysis.wgmma`)."""
        mods = oi.modset
        if "sync" not in mods or "aligned" not in mods:
            raise Unmodelled("not a .sync.aligned wgmma")
        if "fence" in mods:
            self.emit(O.WGMMA, [], (), {"kind": "fence"})
            return
        if "commit_group" in mods:
            self.emit(O.WGMMA, [], (), {"kind": "commit"})
            return
        if "wait_group" in mods:
            if len(ops) != 1 or ops[0][0] != "i":
                raise Unmodelled("expected an immediate group count")
            self.emit(O.WGMMA, [], (), {"kind": "wait", "n": ops[0][1]})
            return
        if "mma_async" not in mods or len(ops) < 3:
            raise Unmodelled("unknown wgmma")
        shape = next((m for m in oi.mods if _SHAPE_RE.match(m)), None)
        d = self._frag(ops[0])
        a = self._frag(ops[1])
        dt = oi.types[0] if oi.types else "f32"
        args = [self.val(x, dt) for x in d] + [self.val(x, None if x[0] == "r" else "b64") for x in a]
        for x in ops[2:]:
            args.append(self.val(x, "b64" if x is ops[2] else None if x[0] == "r" else "b32"))
        attrs: dict[str, Any] = {"kind": "mma", "shape": shape, "dtypes": tuple(oi.types),
                                 "counts": (len(d), len(a)), "sparse": "sp" in mods}  # fmt: skip
        rtypes = [self.reg_type(x, dt) for x in d]
        ins = self.emit(O.WGMMA, args, rtypes, attrs, [self.dname(x) for x in d])
        for x, v in zip(d, ins.results):
            if x[0] == "r":
                self.write(x, v)

    def h_mma(self, oi: OpInfo, ops: list) -> None:
        if "sync" not in oi.modset:
            raise Unmodelled("not an mma.sync")
        self._mma(oi, ops, "mma")

    def h_wmma(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        what = mods[0] if mods else ""
        shape = next((m for m in mods if _SHAPE_RE.match(m)), None)
        layouts = tuple(m for m in mods if m in ("row", "col"))
        space = oi.space or "generic"
        if what == "mma":
            self._mma(oi, ops, "wmma")
            return
        if what == "load":
            if len(ops) < 2 or ops[1][0] != "m":
                raise Unmodelled("expected `{d..}, [a]`")
            d = self._frag(ops[0])
            addr, buf, off = self.address(ops[1], space)
            args = [addr]
            if len(ops) > 2:
                args.append(self.val(ops[2], "u32"))
            attrs: dict[str, Any] = {"matrix": mods[1] if len(mods) > 1 else None, "space": space,
                                     "layout": layouts[0] if layouts else None, "shape": shape,
                                     "dtype": oi.t, "offset": off}  # fmt: skip
            if buf is not None:
                attrs["buffer"] = buf
            rtypes = [self.reg_type(x, "b32") for x in d]
            ins = self.emit(O.WMMA_LOAD, args, rtypes, attrs, [self.dname(x) for x in d])
            for x, v in zip(d, ins.results):
                if x[0] == "r":
                    self.write(x, v)
            return
        if what == "store":
            if len(ops) < 2 or ops[0][0] != "m":
                raise Unmodelled("expected `[a], {d..}`")
            addr, buf, off = self.address(ops[0], space)
            vals = [self.val(x, None) for x in self._frag(ops[1])]
            args = [addr] + vals
            if len(ops) > 2:
                args.append(self.val(ops[2], "u32"))
            attrs = {"matrix": mods[1] if len(mods) > 1 else "d", "space": space,
                     "layout": layouts[0] if layouts else None, "shape": shape, "dtype": oi.t, "offset": off,
                     "has_stride": len(ops) > 2}  # fmt: skip
            if buf is not None:
                attrs["buffer"] = buf
            self.emit(O.WMMA_STORE, args, (), attrs)
            return
        raise Unmodelled(f"unknown wmma `{what}`")

    def h_ldmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2 or ops[1][0] != "m":
            raise Unmodelled("expected `{d..}, [a]`")
        num = next((int(m[1:]) for m in oi.mods if m[:1] == "x" and m[1:].isdigit()), 1)
        space = oi.space or "shared"
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        d = self._frag(ops[0])
        addr, buf, off = self.address(ops[1], space)
        attrs: dict[str, Any] = {"space": space, "num": num, "trans": "trans" in oi.modset, "shape": shape,
                                 "offset": off}  # fmt: skip
        if buf is not None:
            attrs["buffer"] = buf
        ins = self.emit(O.LDMATRIX, [addr], [self.reg_type(x, "b32") for x in d], attrs, [self.dname(x) for x in d])
        for x, v in zip(d, ins.results):
            if x[0] == "r":
                self.write(x, v)

    def h_stmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2 or ops[0][0] != "m":
            raise Unmodelled("expected `[a], {r..}`")
        num = next((int(m[1:]) for m in oi.mods if m[:1] == "x" and m[1:].isdigit()), 1)
        space = oi.space or "shared"
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        addr, buf, off = self.address(ops[0], space)
        vals = [self.val(x, "b32") for x in self._frag(ops[1])]
        attrs: dict[str, Any] = {"space": space, "num": num, "trans": "trans" in oi.modset, "shape": shape,
                                 "offset": off}  # fmt: skip
        if buf is not None:
            attrs["buffer"] = buf
        self.emit(O.STMATRIX, [addr] + vals, (), attrs)

    def h_movmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], "b32")
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        attrs = {"trans": "trans" in oi.modset, "shape": shape}
        self.write(ops[0], self.value(O.MOVMATRIX, [a], "b32", attrs, self.dname(ops[0])))
