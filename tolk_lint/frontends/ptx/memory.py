"""Memory: loads, stores, atomics, async copies, fences, textures and surfaces.

``ld``/``ldu``/``st`` become LOAD/STORE with their state space, type,
vector width, cache and ordering qualifiers and, when the base is a buffer
symbol, that buffer (``ld.param``/``st.param`` of parameters, call slots
and return values are reads and writes of values, not memory); ``atom``/
``red`` an ATOMIC; ``cp.async`` CP_ASYNC (with its commit and wait groups);
``membar``/``fence`` a FENCE; ``tex``/``tld4``/``suld`` a LOAD and
``sust``/``sured`` a STORE of the texture or surface space, whose address
folds in the handle and every coordinate. The bulk and tensor forms of
``cp.async``, and ``st.async``/``red.async``, stay OPAQUE.

What it may import: `params`, `opaque`, `vocabulary` and `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Value, type_bits
from tolk_lint.ir.opcodes import Opcode

from .opaque import OpaqueLowering
from .params import ParamLowering
from .vocabulary import SINK, OpInfo, Unmodelled

O = Opcode

_ATOM_OPS = ("add", "and", "or", "xor", "cas", "exch", "inc", "dec", "min", "max")


class MemoryLowering(ParamLowering, OpaqueLowering):
    """The handlers of the memory families."""

    def _space(self, oi: OpInfo) -> str:
        return oi.space or "generic"

    def _mem_attrs(self, oi: OpInfo, space: str) -> dict[str, Any]:
        mods = oi.modset
        vec = 1
        for m in oi.mods:
            if m[:1] == "v" and m[1:].isdigit():
                vec = int(m[1:])
        attrs: dict[str, Any] = {
            "space": space,
            "dtype": oi.t or "b32",
            "volatile": bool(mods & {"volatile", "relaxed", "acquire", "mmio", "release"}),
            "vec": vec,
        }
        if "nc" in mods or oi.fam == "ldu":
            attrs["nc"] = True
        for m in oi.mods:
            if m in ("ca", "cg", "cs", "lu", "cv", "wb", "wt"):
                attrs["cache"] = m
            elif m in ("relaxed", "acquire", "release", "weak", "volatile", "mmio"):
                attrs["sem"] = m
            elif m in ("cta", "gpu", "sys", "cluster"):
                attrs["scope"] = m
        return attrs

    def h_ld(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2 or ops[1][0] != "m":
            raise Unmodelled("expected `d, [a]`")
        space = self._space(oi)
        dests = self.dests(ops[0]) if ops[0][0] != "d" else None
        if dests is None:
            raise Unmodelled("dual destination")
        dtype = oi.t or "b32"
        m = ops[1]
        if space == "param" and m[1][0] == "r" and self._ld_param(oi, dests, m, dtype):
            return
        addr, buf, off = self.address(m, space)
        attrs = self._mem_attrs(oi, space)
        attrs["offset"] = off
        if buf is not None:
            attrs["buffer"] = buf
        n = len(dests)
        ins = self.emit(O.LOAD, [addr], (dtype,) * n, attrs, [self.dname(d) for d in dests])
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)

    def _ld_param(self, oi: OpInfo, dests: list, m: tuple, dtype: str) -> bool:
        name = m[1][1]
        off = m[2]
        r = self.resolve(name)
        el = max(1, type_bits(dtype) // 8)
        if r[0] == "par":
            for i, d in enumerate(dests):
                if d[0] == "r" and d[1] != SINK:
                    self.write(d, self.param_read(name, off + i * el, dtype))
            return True
        if r[0] == "slot":
            key = r[1]
            for i, d in enumerate(dests):
                if d[0] != "r" or d[1] == SINK:
                    continue
                v = self.call_results.get((key, off + i * el))
                if v is None:
                    v = self.b.read(f"{key}:{off + i * el}", type=dtype)
                self.write(d, v)
            return True
        if r[0] == "ret":
            for i, d in enumerate(dests):
                if d[0] == "r" and d[1] != SINK:
                    self.write(d, self.b.read(f"$ret:{name}:{off + i * el}", type=dtype))
            return True
        return False

    def h_st(self, oi: OpInfo, ops: list) -> None:
        if "async" in oi.modset or "bulk" in oi.modset:
            self.opaque(oi, ops)
            return
        if len(ops) < 2 or ops[0][0] != "m":
            raise Unmodelled("expected `[a], b`")
        space = self._space(oi)
        dtype = oi.t or "b32"
        m = ops[0]
        src = ops[1]
        srcs = list(src[1]) if src[0] == "v" else [src]
        if space == "param" and m[1][0] == "r":
            name = m[1][1]
            r = self.resolve(name)
            el = max(1, type_bits(dtype) // 8)
            if r[0] == "slot":
                key = r[1]
                offs = self.slot_offsets.setdefault(key, set())
                for i, s in enumerate(srcs):
                    o = m[2] + i * el
                    offs.add(o)
                    self.b.write(f"{key}:{o}", self.val(s, dtype))
                return
            if r[0] == "ret":
                offs = self.ret_slots.setdefault(name, set())
                for i, s in enumerate(srcs):
                    o = m[2] + i * el
                    offs.add(o)
                    self.b.write(f"$ret:{name}:{o}", self.val(s, dtype))
                return
        addr, buf, off = self.address(m, space)
        vals = [self.val(s, dtype) for s in srcs if not (s[0] == "r" and s[1] == SINK)]
        attrs = self._mem_attrs(oi, space)
        attrs["offset"] = off
        if buf is not None:
            attrs["buffer"] = buf
        self.emit(O.STORE, [addr] + vals, (), attrs)

    def h_atom(self, oi: OpInfo, ops: list) -> None:
        if "async" in oi.modset:
            self.opaque(oi, ops)
            return
        red = oi.fam == "red"
        space = self._space(oi)
        aop = next((m for m in oi.mods if m in _ATOM_OPS), None)
        if aop is None:
            raise Unmodelled("unknown atomic operation")
        dtype = oi.t or "b32"
        if red:
            if len(ops) < 2 or ops[0][0] != "m":
                raise Unmodelled("expected `[a], b`")
            m, rest, dests = ops[0], ops[1:], []
        else:
            if len(ops) < 3 or ops[1][0] != "m":
                raise Unmodelled("expected `d, [a], b`")
            m, rest = ops[1], ops[2:]
            dests = self.dests(ops[0])
        nvals = 2 if aop == "cas" else 1
        vals_ops = rest[:nvals]
        addr, buf, off = self.address(m, space)
        vals: list[Value] = []
        for o in vals_ops:
            if o[0] == "v":
                vals.extend(self.val(x, dtype) for x in o[1])
            else:
                vals.append(self.val(o, dtype))
        attrs: dict[str, Any] = {"op": aop, "space": space, "dtype": dtype, "offset": off}
        if red:
            attrs["red"] = True
        if buf is not None:
            attrs["buffer"] = buf
        for mm in oi.mods:
            if mm in ("relaxed", "acquire", "release", "acq_rel"):
                attrs["sem"] = mm
            elif mm in ("cta", "gpu", "sys", "cluster"):
                attrs["scope"] = mm
        ins = self.emit(O.ATOMIC, [addr] + vals, (dtype,) * len(dests), attrs, [self.dname(d) for d in dests])
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)

    def h_cp(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        if mods and mods[0] == "async" and "mbarrier" in oi.modset and "arrive" in oi.modset and len(ops) == 1:
            # the thread's earlier copies arrive on the mbarrier when they land
            addr, buf, _off = self.address(ops[0], "shared")
            attrs: dict[str, Any] = {"kind": "cp_async_arrive", "space": "shared", "noinc": "noinc" in oi.modset}
            if buf is not None:
                attrs["buffer"] = buf
            self.emit(O.MBARRIER, [addr], (), attrs)
            return
        if not mods or mods[0] != "async" or "bulk" in oi.modset or "mbarrier" in oi.modset:
            self.opaque(oi, ops)
            return
        if "commit_group" in oi.modset:
            self.emit(O.CP_ASYNC_COMMIT, [], (), {})
            return
        if "wait_group" in oi.modset:
            if len(ops) != 1 or ops[0][0] != "i":
                raise Unmodelled("expected an immediate group count")
            self.emit(O.CP_ASYNC_WAIT, [], (), {"n": ops[0][1]})
            return
        if "wait_all" in oi.modset:
            self.emit(O.CP_ASYNC_WAIT, [], (), {"n": 0, "all": True})
            return
        cache = next((m for m in mods if m in ("ca", "cg")), None)
        if cache is None or len(ops) < 3 or ops[0][0] != "m" or ops[1][0] != "m":
            raise Unmodelled("expected `[dst], [src], size`")
        rest = list(ops[2:])
        if any(m.endswith("cache_hint") for m in mods) and len(rest) > 1:
            rest = rest[:-1]  # the cache policy
        size = rest[0]
        if size[0] != "i":
            raise Unmodelled("copy size is not an immediate")
        nbytes = size[1]
        if nbytes not in ((16,) if cache == "cg" else (4, 8, 16)):
            sizes = "16 bytes with `.cg`" if cache == "cg" else "4, 8 or 16 bytes"
            raise self.rejected(f"`cp.async` copies {sizes}, not {nbytes} (ptxas rejects it)")
        dst, dbuf, doff = self.address(ops[0], "shared")
        src, sbuf, soff = self.address(ops[1], "global")
        args = [dst, src]
        attrs: dict[str, Any] = {"bytes": nbytes, "cache": cache, "dst_offset": doff, "src_offset": soff}
        if dbuf is not None:
            attrs["buffer"] = dbuf
        if sbuf is not None:
            attrs["src_buffer"] = sbuf
        for m in mods:
            if m.startswith("L2::") and m != "L2::cache_hint":
                attrs["prefetch"] = m
        if len(rest) > 1:
            x = rest[1]
            if x[0] in ("r", "!") and (x[0] == "!" or self.reg_type(x, "u32") == "pred"):
                # ignore-src: a true predicate copies zeros (src-size 0)
                p = self.val(x, "pred")
                z = self.const(0, "u32")
                full = self.const(nbytes, "u32")
                args.append(self.value(O.SELECT, [p, z, full], "u32"))
                attrs["ignore_src"] = True
            else:
                args.append(self.val(x, "u32"))
        self.emit(O.CP_ASYNC, args, (), attrs)

    def h_fence(self, oi: OpInfo, ops: list) -> None:
        scope = None
        for m in oi.mods:
            if m in ("cta", "gpu", "sys", "cluster"):
                scope = m
            elif m == "gl":
                scope = "gpu"
        attrs: dict[str, Any] = {"scope": scope}
        if oi.fam == "fence":
            attrs["kind"] = oi.mods[0] if oi.mods else "sc"
            if "proxy" in oi.modset:
                attrs["proxy"] = True
        args: list[Value] = []
        for o in ops:
            self._collect_reads(o, args)
        self.emit(O.FENCE, args, (), attrs)

    # textures and surfaces

    def _image_address(self, m: tuple, extra: list) -> tuple[Value, str | None]:
        """A texture/surface access: the handle and coordinates (and any
        lod/gradient operands) folded into one address value, so the access
        depends on every one of them."""
        if m[0] != "m":
            raise Unmodelled("expected `[handle, coords]`")
        base = m[1]
        handle = base[1] if base[0] == "r" else None
        args: list[Value] = []
        if base[0] == "r":
            r = self.resolve(base[1])
            if r[0] in ("buf", "sym", "par"):
                args.append(self.addr_of(base[1], r[0], "u64"))
            else:
                args.append(self.val(base, "u64"))
        for x in m[3]:
            if x[0] == "v":
                args.extend(self.val(y, None) for y in x[1])
            else:
                args.append(self.val(x, None))
        for x in extra:
            if x[0] == "v":
                args.extend(self.val(y, None) for y in x[1])
            else:
                args.append(self.val(x, None))
        return self.value(O.PURE, args, "u64", {"fn": "image.address"}), handle

    def h_tex(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2:
            raise Unmodelled(f"{len(ops)} operands")
        space = "surface" if oi.fam == "suld" else "texture"
        dest = ops[0]
        pred = None
        if dest[0] == "d":
            dests = [("r", dest[1])]
            pred = ("r", dest[2])
        else:
            dests = self.dests(dest)
        addr, handle = self._image_address(ops[1], ops[2:])
        dtype = oi.types[-2] if len(oi.types) >= 2 and oi.fam != "suld" else (oi.t or "b32")
        vec = len(dests)
        attrs: dict[str, Any] = {"space": space, "dtype": dtype, "volatile": False, "vec": vec, "handle": handle,
                                 "op": oi.fam}  # fmt: skip
        types = [dtype] * vec + (["pred"] if pred else [])
        names = [self.dname(d) for d in dests] + ([self.dname(pred)] if pred else [])
        ins = self.emit(O.LOAD, [addr], types, attrs, names)
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)
        if pred:
            self.write(pred, ins.results[-1])

    def h_sust(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2 or ops[0][0] != "m":
            raise Unmodelled("expected `[handle, coords], values`")
        addr, handle = self._image_address(ops[0], [])
        dtype = oi.t or "b32"
        vals = [self.val(x, dtype) for x in self._frag(ops[1])]
        attrs: dict[str, Any] = {"space": "surface", "dtype": dtype, "volatile": False, "vec": len(vals),
                                 "handle": handle, "op": oi.fam}  # fmt: skip
        if oi.fam == "sured":
            attrs["reduce"] = next((m for m in oi.mods if m in _ATOM_OPS), None)
        self.emit(O.STORE, [addr] + vals, (), attrs)
