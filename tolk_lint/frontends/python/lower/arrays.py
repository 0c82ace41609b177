"""Array access: subscripts (loads), element stores, views, and new buffers.

Array accesses compute a byte address: ``ADDR(buf)`` (or the array
parameter's ``PARAM``) ``+ row-major index * itemsize``; the extents of an
array parameter are ``PARAM "a.shape[d]"`` values (uniform), emitted once
per kernel in the entry block. Indexing fewer dimensions than the array has,
or slicing it, gives a view (`ArrayRef` with fixed leading indices and
offsets). A subscript of a tuple or a constant tuple is resolved at compile
time.

Imports: `values`, `consts`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, TupleLV
from tolk_lint.ir.nodes import Buffer, Value
from tolk_lint.ir.opcodes import Opcode as O


class ArrayAccess:
    """Mixin of `Lowerer`: subscripts, addresses, views, stores, buffers."""

    def _e_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, GlobalRef):
            base = self.global_array(base, node)
        if isinstance(base, ArrayRef):
            acc = self.access(base, node.slice, node)
            if acc is None:
                return self.opaque(node, "subscript", None, "an index the front end does not model")
            if isinstance(acc, ArrayRef):
                return acc
            arr, addr, index = acc
            attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
            return self.value(O.LOAD, [addr], arr.dtype, attrs, node)
        if isinstance(base, (TupleLV, PyConst)):
            items = base.items if isinstance(base, TupleLV) else None
            if items is None:
                if not isinstance(base.value, tuple):
                    return self.opaque(node, "subscript", None, "subscript of a constant")
                items = [PyConst(x) for x in base.value]
            sl = node.slice
            if isinstance(sl, ast.Slice):
                lo, hi, st = (
                    self.static(self.expr(x)) if x is not None else None
                    for x in (sl.lower, sl.upper, sl.step)
                )
                if any(x is UNKNOWN for x in (lo, hi, st)):
                    return self.opaque(node, "tuple-slice", None, "a tuple sliced by unknown bounds")
                return TupleLV(items[lo:hi:st])
            i = self.static(self.expr(sl))
            if isinstance(i, int) and -len(items) <= i < len(items):
                return items[i]
            return self.opaque(node, "tuple-index", None, "a tuple indexed by a value that is not constant")
        return self.opaque(node, "subscript", None, "subscript of something that is not an array")

    def extent(self, arr: ArrayRef, d: int, node) -> Any:
        n = arr.shape[d] if d < len(arr.shape) else None
        if isinstance(n, int):
            return PyConst(n)
        key = (arr.key, d)
        v = self.shape_params.get(key)
        if v is None:
            name = f"{arr.key}.shape[{d}]"
            v = self.b.emit(O.PARAM, [], ("s64",), attrs={"name": name}, span=self.kernel.span, text=name,
                            names=(name,), block=self.entry).result  # fmt: skip
            self.shape_params[key] = v
        return v

    def _index_value(self, lv: Any, node) -> Value:
        if isinstance(lv, PyConst) and isinstance(lv.value, (int, bool)):
            return self.const(int(lv.value), "s64", node)
        v = self.val(lv, node)
        if v.type not in ("s64", "u64", "ptr"):
            v = self.cvt(v, "s64", node)
        return v

    def access(self, arr: ArrayRef, sl: ast.expr, node) -> Any:
        """Index ``arr`` by ``sl``: (array, byte address, index values) for an
        element, an ArrayRef for a view, or None."""
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(e, ast.Starred) for e in elts):
            return None
        if any(isinstance(e, ast.Slice) for e in elts):
            return self.slice_view(arr, elts, node)
        lvs = [self.expr(e) for e in elts]
        flat: list[Any] = []
        for lv in lvs:
            if isinstance(lv, TupleLV):
                flat.extend(lv.items)
            elif isinstance(lv, PyConst) and isinstance(lv.value, tuple):
                flat.extend(PyConst(x) for x in lv.value)
            else:
                flat.append(lv)
        return self.element(arr, flat, node)

    def element(self, arr: ArrayRef, idx: list, node) -> Any:
        d0 = len(arr.prefix)
        vals = list(arr.prefix)
        for i, lv in enumerate(idx):
            v = self._index_value(lv, node)
            off = arr.offsets.get(d0 + i)
            if off is not None:
                v = self.value(O.ADD, [v, off], "s64", None, node)
            vals.append(v)
        if len(vals) < arr.ndim:
            view = arr.view()
            view.prefix = tuple(vals)
            return view
        return arr, self.address(arr, vals, node), tuple(vals)

    def address(self, arr: ArrayRef, idx: list[Value], node) -> Value:
        lin: Any = self._foldable(idx[0])
        for d in range(1, len(idx)):
            lin = self._arith(O.MUL, lin, self.extent(arr, d, node), node)
            lin = self._arith(O.ADD, lin, self._foldable(idx[d]), node)
        byte = self._arith(O.MUL, lin, PyConst(arr.itemsize), node)
        if isinstance(byte, PyConst) and byte.value == 0:
            return arr.base
        return self.value(O.ADD, [arr.base, self.val(byte, node, "s64")], "ptr", None, node)

    def _foldable(self, v: Value) -> Any:
        d = v.defn
        if d is not None and d.op is O.CONST and isinstance(d.attrs.get("value"), int):
            return PyConst(d.attrs["value"])
        return v

    def _arith(self, op: O, a: Any, b: Any, node) -> Any:
        """Index arithmetic with constant folding (s64)."""
        if isinstance(a, PyConst) and isinstance(b, PyConst):
            return PyConst(a.value * b.value if op is O.MUL else a.value + b.value)
        if op is O.MUL:
            for x, y in ((a, b), (b, a)):
                if isinstance(y, PyConst) and y.value == 1:
                    return x
                if isinstance(y, PyConst) and y.value == 0:
                    return PyConst(0)
        if op is O.ADD:
            for x, y in ((a, b), (b, a)):
                if isinstance(y, PyConst) and y.value == 0:
                    return x
        return self.value(op, [self.val(a, node, "s64"), self.val(b, node, "s64")], "s64", None, node)

    def slice_view(self, arr: ArrayRef, elts: list[ast.expr], node) -> Any:
        d0 = len(arr.prefix)
        view = arr.view()
        prefix = list(arr.prefix)
        sliced = False
        for i, e in enumerate(elts):
            d = d0 + i
            if isinstance(e, ast.Slice):
                if e.step is not None:
                    step = self.static(self.expr(e.step))
                    if step != 1:
                        self.unsupported(e, "strided-slice", None, "a strided slice")
                if e.lower is not None:
                    lo = self._index_value(self.expr(e.lower), e)
                    prev = view.offsets.get(d)
                    view.offsets[d] = (
                        self.value(O.ADD, [prev, lo], "s64", None, e) if prev is not None else lo
                    )
                if e.upper is not None:
                    self.expr(e.upper)
                shape = list(view.shape) + [None] * (d + 1 - len(view.shape))
                shape[d] = None
                view.shape = tuple(shape)
                sliced = True
            else:
                if sliced:
                    self.unsupported(e, "mixed-slice", None, "an index after a slice", "the indices from it on are ignored")
                    return view
                v = self._index_value(self.expr(e), e)
                off = view.offsets.get(d)
                if off is not None:
                    v = self.value(O.ADD, [v, off], "s64", None, e)
                prefix.append(v)
        view.prefix = tuple(prefix)
        return view

    def store(self, arr: ArrayRef, sl: ast.expr, lv: Any, target, st) -> None:
        acc = self.access(arr, sl, target)
        if acc is None or isinstance(acc, ArrayRef):
            self.opaque(
                st,
                "view-store",
                None,
                "a store into an array view",
                args=[lv] if isinstance(lv, Value) else [],
            )
            return
        arr, addr, index = acc
        v = self.coerce(lv, arr.dtype, st)
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        self.emit(O.STORE, [addr, v], (), attrs, target)
        if arr.param is not None:
            arr.param.written = True

    def new_buffer(self, space: str, dtype: str, shape: tuple, node, dynamic=False, align=0) -> ArrayRef:
        base = self.name_hint or f"{space}_array"
        name, n = base, 0
        while name in self.kernel.buffers:
            n += 1
            name = f"{base}.{n}"
        span = self.loc(node)[0]
        buf = Buffer(
            name,
            space,
            dtype,
            tuple(shape),
            align=align,
            dynamic=dynamic,
            span=span,
            origin=self._origin(span),
        )
        self.kernel.buffers[name] = buf
        addr = self.emit(O.ADDR, [], ("ptr",), {"buffer": name}, node, names=(name,)).result
        return ArrayRef(name, space, dtype, addr, shape, len(shape))
