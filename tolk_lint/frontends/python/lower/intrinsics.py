"""The ``numba.cuda`` calls: ``cuda.grid``/``gridsize``, shared, local and
constant arrays, barriers and fences, warp shuffles, votes and matches,
masks, ``selp``/``fma``, cache-hinted loads and stores, atomics, and the
``fp16``/``bf16`` operations. ``vocabulary.CUDA_CALLS`` names the
``_cuda_<handler>`` method of each.

Every ``shape=0`` shared array gets a Buffer of its own, but Numba places
them all at one address: they alias.

Imports: `values`, `vocabulary`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.consts import UNKNOWN
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, ObjRef, PyConst, TupleLV
from tolk_lint.ir.nodes import Value
from tolk_lint.ir.opcodes import Opcode as O


class CudaIntrinsics:
    """Mixin of `Lowerer`: the ``numba.cuda`` calls."""

    # -- thread indices and arrays -------------------------------------------------------------------

    def _cuda_grid(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ndim"], 1)
        n = self.static(self.expr(a["ndim"])) if a else UNKNOWN
        if n not in (1, 2, 3):
            return self._bad_call(node)
        vals = []
        for ax in V.AXES[:n]:
            ctaid = self.special(f"ctaid.{ax}", node)
            ntid = self.special(f"ntid.{ax}", node)
            prod = self.value(O.MUL, [ctaid, ntid], "s64", None, node)
            vals.append(self.value(O.ADD, [prod, self.special(f"tid.{ax}", node)], "s64", None, node))
        return vals[0] if n == 1 else TupleLV(vals)

    def _cuda_gridsize(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ndim"], 1)
        n = self.static(self.expr(a["ndim"])) if a else UNKNOWN
        if n not in (1, 2, 3):
            return self._bad_call(node)
        vals = []
        for ax in V.AXES[:n]:
            vals.append(
                self.value(
                    O.MUL,
                    [self.special(f"nctaid.{ax}", node), self.special(f"ntid.{ax}", node)],
                    "s64",
                    None,
                    node,
                )
            )
        return vals[0] if n == 1 else TupleLV(vals)

    def _shape_of(self, lv: Any, node) -> tuple[tuple, bool] | None:
        s = self.static(lv)
        if isinstance(s, bool):
            return None
        if isinstance(s, int):
            return ((None,), True) if s == 0 else ((s,), False)
        if isinstance(s, tuple) and s and all(isinstance(x, int) and not isinstance(x, bool) for x in s):
            if any(x == 0 for x in s):
                return tuple(None for _ in s), True
            return s, False
        return None

    def dtype_arg(self, node: ast.expr | None, default: str) -> str:
        if node is None:
            return default
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            t = V.dtype_of_string(node.value)
            if t:
                return t
        q = self.static_qual(node)
        t = V.dtype_of_qual(q) if q else None
        if t is None and isinstance(node, ast.Attribute) and node.attr == "dtype":
            base = self.expr(node.value)
            if isinstance(base, ArrayRef):
                return base.dtype
        if t is None:
            self.unsupported(
                node, "dtype", None, "a dtype the front end does not know", f"it is taken as `{default}`"
            )
            return default
        return t

    def _cuda_array(self, node: ast.Call, space: str) -> Any:
        a = self._arg(node, ["shape", "dtype", "alignment"], 2)
        if a is None:
            return self._bad_call(node)
        shape_lv = self.expr(a["shape"])
        got = self._shape_of(shape_lv, a["shape"])
        dtype = self.dtype_arg(a.get("dtype"), "f32")
        align = 0
        if "alignment" in a:
            al = self.static(self.expr(a["alignment"]))
            align = al if isinstance(al, int) else 0
        if got is None:
            self.unsupported(
                a["shape"],
                "array-shape",
                None,
                "an array shape that is not a compile-time constant",
                "its extents are unknown, so its accesses are not bounds-checked",
            )
            n = len(shape_lv.items) if isinstance(shape_lv, TupleLV) else 1
            shape, dynamic = (None,) * n, False
        else:
            shape, dynamic = got
        return self.new_buffer(space, dtype, shape, node, dynamic=dynamic and space == "shared", align=align)

    def _cuda_const_array(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["ary"], 1)
        if a is None:
            return self._bad_call(node)
        src = self.expr(a["ary"])
        if isinstance(src, ArrayRef):
            shape, dtype = src.shape[len(src.prefix) :], src.dtype
        else:
            shape, dtype = (None,), "f32"
        return self.new_buffer("const", dtype, tuple(shape) or (None,), node)

    # -- barriers and warp operations ----------------------------------------------------------------

    def _cuda_syncthreads(self, node: ast.Call, _: Any) -> Any:
        self.emit(O.BARRIER, [], (), {"kind": "sync", "aligned": True}, node)
        return PyConst(None)

    def _cuda_sync_red(self, node: ast.Call, op: str) -> Any:
        a = self._arg(node, ["predicate"], 1)
        if a is None:
            return self._bad_call(node)
        p = self.to_pred(self.expr(a["predicate"]), node)
        p = self.val(p, node)
        return self.value(O.BARRIER, [p], "s64", {"kind": "red", "op": op, "aligned": True}, node)

    def _mask(self, node: ast.expr | None, call) -> Value:
        if node is None:
            return self.const(0xFFFFFFFF, "u32", call)
        lv = self.expr(node)
        if isinstance(lv, PyConst) and isinstance(lv.value, int):
            return self.const(lv.value & 0xFFFFFFFF, "u32", node)
        return self.val(lv, node)

    def _cuda_syncwarp(self, node: ast.Call, _: Any) -> Any:
        a = self.call_args(node, ["mask"])
        if a is None:
            return self._bad_call(node)
        self.emit(O.WARP_SYNC, [self._mask(a.get("mask"), node)], (), None, node)
        return PyConst(None)

    def _cuda_fence(self, node: ast.Call, scope: str) -> Any:
        self.emit(O.FENCE, [], (), {"scope": scope}, node)
        return PyConst(None)

    def _cuda_this_grid(self, node: ast.Call, _: Any) -> Any:
        return ObjRef("grid")

    def barrier_grid(self, node: ast.Call) -> Any:
        self.emit(O.BARRIER, [], (), {"kind": "grid", "aligned": True}, node)
        return PyConst(None)

    def _cuda_shfl(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "value", "lane"], 3)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        v = self.val(self.expr(a["value"]), a["value"])
        lane = self._index_value(self.expr(a["lane"]), a["lane"])
        clamp = self.const(0 if mode == "up" else 31, "s64", node)
        return self.value(O.SHUFFLE, [v, lane, clamp, mask], v.type, {"mode": mode}, node)

    def _cuda_vote(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "predicate"], 2)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        p = self.val(self.to_pred(self.expr(a["predicate"]), node), node)
        return self.value(O.VOTE, [p, mask], "u32" if mode == "ballot" else "pred", {"mode": mode}, node)

    def _cuda_match(self, node: ast.Call, mode: str) -> Any:
        a = self._arg(node, ["mask", "value"], 2)
        if a is None:
            return self._bad_call(node)
        mask = self._mask(a["mask"], node)
        v = self.val(self.expr(a["value"]), a["value"])
        if mode == "any":
            return self.value(O.MATCH, [v, mask], "u32", {"mode": "any"}, node)
        ins = self.emit(O.MATCH, [v, mask], ("u32", "pred"), {"mode": "all"}, node)
        return TupleLV(list(ins.results))

    def _cuda_activemask(self, node: ast.Call, _: Any) -> Any:
        return self.value(O.ACTIVEMASK, [], "u32", None, node)

    def _cuda_lanemask(self, node: ast.Call, name: str) -> Any:
        return self.special(name, node, "u32")

    # -- values, cache hints, atomics, half precision ------------------------------------------------

    def _cuda_selp(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["cond", "a", "b"], 3)
        if a is None:
            return self._bad_call(node)
        c = self.to_pred(self.expr(a["cond"]), node)
        x, y = self.expr(a["a"]), self.expr(a["b"])
        if isinstance(c, PyConst):
            return x if c.value else y
        va, vb, t = self.unify(x, y, node)
        return self.value(O.SELECT, [c, va, vb], t, None, node)

    def _cuda_fma(self, node: ast.Call, _: Any) -> Any:
        a = self._arg(node, ["a", "b", "c"], 3)
        if a is None:
            return self._bad_call(node)
        x, y, z = (self.expr(a[k]) for k in "abc")
        vx, vy, t = self.unify(x, y, node)
        vz = self.coerce(z, t, node)
        return self.value(O.MAD, [vx, vy, vz], t, None, node)

    def _cuda_pure(self, node: ast.Call, fn: str) -> Any:
        return self.pure_fn(fn, node, keep_int=True)

    def _cuda_nothing(self, node: ast.Call, _: Any) -> Any:
        for a in node.args:
            self.expr(a)
        return PyConst(None)

    def _cuda_true(self, node: ast.Call, _: Any) -> Any:
        return PyConst(True)

    def _cuda_cache_load(self, node: ast.Call, hint: str) -> Any:
        a = self._arg(node, ["array", "i"], 2)
        arr = self.expr(a["array"]) if a else None
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        acc = self.element(arr, self._index_items(a["i"]), node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index, "cache": hint}
        return self.value(O.LOAD, [addr], arr.dtype, attrs, node)

    def _cuda_cache_store(self, node: ast.Call, hint: str) -> Any:
        a = self._arg(node, ["array", "i", "value"], 3)
        arr = self.expr(a["array"]) if a else None
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        acc = self.element(arr, self._index_items(a["i"]), node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        v = self.coerce(self.expr(a["value"]), arr.dtype, node)
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index, "cache": hint}
        self.emit(O.STORE, [addr, v], (), attrs, node)
        if arr.param is not None:
            arr.param.written = True
        return PyConst(None)

    def _index_items(self, node: ast.expr) -> list:
        lv = self.expr(node)
        if isinstance(lv, TupleLV):
            return list(lv.items)
        if isinstance(lv, PyConst) and isinstance(lv.value, tuple):
            return [PyConst(x) for x in lv.value]
        return [lv]

    def atomic(self, name: str, op: str, node: ast.Call) -> Any:
        if name == "compare_and_swap":
            a = self._arg(node, ["ary", "old", "val"], 3)
            idx_items: list = [PyConst(0)]
            vals = ["old", "val"]
        elif name == "cas":
            a = self._arg(node, ["ary", "idx", "old", "val"], 4)
            idx_items = []
            vals = ["old", "val"]
        else:
            a = self._arg(node, ["ary", "idx", "val"], 3)
            idx_items = []
            vals = ["val"]
        arr = self.expr(a["ary"]) if a else None
        if isinstance(arr, GlobalRef):
            arr = self.global_array(arr, node)
        if not isinstance(arr, ArrayRef):
            return self._bad_call(node)
        if not idx_items:
            idx_items = self._index_items(a["idx"])
        acc = self.element(arr, idx_items, node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        operands = [addr] + [self.coerce(self.expr(a[k]), arr.dtype, node) for k in vals]
        attrs = {"op": op, "space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        if arr.param is not None:
            arr.param.written = True
        return self.value(O.ATOMIC, operands, arr.dtype, attrs, node)

    def half_op(self, fn: str, t: str, node: ast.Call) -> Any:
        args = [self.expr(a) for a in node.args]
        vals = [self.coerce(x, t, node) if not (isinstance(x, Value) and x.type == t) else x for x in args]
        op = V.HALF_OPS.get(fn)
        if op is not None and len(vals) == {O.NEG: 1, O.ABS: 1, O.MAD: 3}.get(op, 2):
            return self.value(op, vals, t, None, node)
        cmp = V.HALF_CMPS.get(fn)
        if cmp is not None and len(vals) == 2:
            return self.value(O.CMP, vals, "pred", {"cmp": cmp}, node)
        return self.value(O.PURE, vals, t, {"fn": fn}, node)

    def xoroshiro(self, fn: str, node: ast.Call) -> Any:
        """``xoroshiro128p_uniform_float32(states, i)`` (and the other draws of
        ``numba.cuda.random``): read state ``i``, store the next state, and a
        PURE of the state read: as uniform as the state it reads."""
        a = self._arg(node, ["states", "index"], 2)
        states = self.expr(a["states"]) if a else None
        if not isinstance(states, ArrayRef):
            return self._bad_call(node)
        acc = self.element(states, [self.expr(a["index"])], node)
        if isinstance(acc, ArrayRef):
            return self._bad_call(node)
        arr, addr, index = acc
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        old = self.value(O.LOAD, [addr], arr.dtype, dict(attrs), node)
        nxt = self.value(O.PURE, [old], arr.dtype, {"fn": "xoroshiro128p_next"}, node)
        self.emit(O.STORE, [addr, nxt], (), attrs, node)
        if arr.param is not None:
            arr.param.written = True
        t = "u64" if fn == "xoroshiro128p_next" else "f32" if fn.endswith("32") else "f64"
        return self.value(O.PURE, [old], t, {"fn": fn}, node)
