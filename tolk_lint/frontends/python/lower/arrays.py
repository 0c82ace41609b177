"""Array access: subscripts (loads), element stores, views, and new buffers.

Array accesses compute a byte address: ``ADDR(buf)`` (or the array
parameter's ``PARAM``) ``+ row-major index * itemsize``; the extents of an
array parameter are ``PARAM "a.shape[d]"`` values (uniform), emitted once
per kernel in the entry block. Indexing fewer dimensions than the array has,
or slicing it, gives a view (`ArrayRef` with fixed leading indices and
offsets). A subscript of a tuple or a constant tuple is resolved at compile
time; by an index that is not constant (``shape[d]`` in a loop over the
dimensions), it is the item the index picks, by SELECTs.

Imports: `values`, `consts`, `conversion`'s ``join_types``, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN, is_scalar
from tolk_lint.frontends.python.lower.conversion import join_types
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, TupleLV
from tolk_lint.ir.nodes import Buffer, Value
from tolk_lint.ir.opcodes import Opcode as O


class ArrayAccess:
    """Mixin of `Lowerer`: subscripts, addresses, views, stores, buffers."""

    def _e_Subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return self.field_load(self.expr(node.value), node.slice.value, node)
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
            index = self.expr(sl)
            i = self.static(index)
            if isinstance(i, int) and -len(items) <= i < len(items):
                return items[i]
            chosen = self._tuple_select(items, index, node) if i is UNKNOWN else None
            if chosen is not None:
                return chosen
            return self.opaque(node, "tuple-index", None, "a tuple indexed by a value that is not constant")
        return self.opaque(
            node, "subscript", None, "subscript of something that is not an array", args=[base]
        )

    # -- record fields -------------------------------------------------------------------------------

    def is_element(self, v: Value) -> bool:
        """Is ``v`` a LOAD of an array element (of a dtype that may be a record)?"""
        d = v.defn
        return (
            d is not None and d.op is O.LOAD and "buffer" in d.attrs and bool(d.args)
            and not str(d.attrs.get("dtype", "")).startswith("c")
        )  # fmt: skip

    def field_address(self, lv: Any, name: str, node) -> tuple | None:
        """The LOAD attributes and the address of field ``name`` of the record
        ``lv`` (a LOAD of an array element): the element's address plus the
        field's offset, a PURE ``field.<name>`` (uniform, unknown, distinct
        per field); None when ``lv`` is not an array element."""
        if not isinstance(lv, Value) or not self.is_element(lv):
            return None
        d = lv.defn
        cur = self.b.current
        if cur is not None and cur.instrs and cur.instrs[-1] is d:
            cur.instrs.pop()  # the record itself is not read: only its field
        off = self.value(O.PURE, [], "s64", {"fn": f"field.{name}"}, node)
        addr = self.value(O.ADD, [d.args[0], off], "ptr", None, node)
        return dict(d.attrs, field=name), addr

    def field_load(self, lv: Any, name: str, node) -> Any:
        got = self.field_address(lv, name, node)
        if got is None:
            return self.opaque(node, "field", None, "a field of something that is not an array element")
        attrs, addr = got
        return self.value(O.LOAD, [addr], attrs["dtype"], attrs, node)

    def field_store(self, elem: ast.expr, name: str, lv: Any, target, st, op: type | None = None) -> None:
        """``elem.name = lv`` (``elem['name'] = lv``; ``op=``: the augmented form)."""
        got = self.field_address(self.expr(elem), name, target)
        if got is None:
            args = [lv] if isinstance(lv, Value) else []
            why = "a store to an attribute of something that is not an array element"
            self.opaque(
                st,
                "attribute-store",
                None,
                why,
                args=args,
                assumed="it is treated as a write to unknown memory",
            )
            return
        attrs, addr = got
        if op is not None:
            old = self.value(O.LOAD, [addr], attrs["dtype"], dict(attrs), target)
            lv = self.binop(op, old, lv, st)
        self.emit(O.STORE, [addr, self.coerce(lv, attrs["dtype"], st)], (), attrs, target)
        for p in self.kernel.params:
            if p.value is not None and p.value is self.root_pointer(addr):
                p.written = True

    def root_pointer(self, v: Value) -> Value:
        while v.defn is not None and v.defn.op is O.ADD and v.type == "ptr":
            v = v.defn.args[0]
        return v

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

    def _tuple_select(self, items: list, index: Any, node) -> Value | None:
        """``shape[d]``, ``(3, 4)[d]`` with ``d`` not constant (a loop over the
        dimensions): the item the index picks, as SELECTs on ``index == k``
        (a negative index counts from the end, as in Python); None when an
        item is not a number. An index past the end fails to run: it takes
        the last item."""
        def number(x: Any) -> bool:
            return isinstance(x, Value) or (
                isinstance(x, PyConst) and is_scalar(x.value) and not isinstance(x.value, complex)
            )

        if not items or not all(number(x) for x in items):
            return None
        if not isinstance(index, (Value, PyConst)) or not _integer(self.type_of(index)):
            return None
        t = self.type_of(items[0])
        for x in items[1:]:
            t = join_types(t, self.type_of(x), False)
        n = len(items)
        out = self.coerce(items[-1], t, node)
        for k in range(n - 2, -1, -1):
            at = self.val(self.compare(ast.Eq(), index, PyConst(k), node), node)
            from_end = self.val(self.compare(ast.Eq(), index, PyConst(k - n), node), node)
            hit = self.value(O.OR, [at, from_end], "pred", None, node)
            out = self.value(O.SELECT, [hit, self.coerce(items[k], t, node), out], t, None, node)
        return out

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
            v = self._strided(v, arr.strides.get(d0 + i), node)
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
                self._slice_dim(arr, view, d, e)
                if e.upper is not None:
                    self.expr(e.upper)
                shape = list(view.shape) + [None] * (d + 1 - len(view.shape))
                shape[d] = None
                view.shape = tuple(shape)
                sliced = True
            else:
                if sliced:
                    self.unsupported(
                        e, "mixed-slice", None, "an index after a slice", "the indices from it on are ignored"
                    )
                    return view
                v = self._index_value(self.expr(e), e)
                v = self._strided(v, view.strides.get(d), e)
                off = view.offsets.get(d)
                if off is not None:
                    v = self.value(O.ADD, [v, off], "s64", None, e)
                prefix.append(v)
        view.prefix = tuple(prefix)
        return view

    def _strided(self, v: Value, stride: Any, node) -> Value:
        if stride is None:
            return v
        return self.val(self._arith(O.MUL, self._foldable(v), stride, node), node, "s64")

    def _slice_dim(self, arr: ArrayRef, view: ArrayRef, d: int, e: ast.Slice) -> None:
        """Dim ``d`` of ``view`` sliced by ``e``: its offset and stride in the
        array (``lo`` and ``step`` composed with what slicing gave it
        before). A start Python computes from the length (a negative step
        without a start, a negative start) is the array's extent on a dim
        not sliced before; else it is not modelled (TL002) and unknown."""
        step = PyConst(1) if e.step is None else self.expr(e.step)
        sc = self.static(step)
        if sc == 0:
            self.unsupported(e, "slice-step", None, "a slice with a step of 0", "it is read as a step of 1")
            step, sc = PyConst(1), 1
        fresh = d not in view.offsets and d not in view.strides
        lo: Any = None if e.lower is None else self.expr(e.lower)
        lc = self.static(lo) if lo is not None else None
        if lo is None and isinstance(sc, int) and sc > 0:
            lo = PyConst(0)
        elif lo is None and isinstance(sc, int) and fresh:
            lo = self._arith(O.ADD, self.extent(arr, d, e), PyConst(-1), e)
        elif isinstance(lc, int) and lc < 0 and fresh:
            lo = self._arith(O.ADD, self.extent(arr, d, e), PyConst(lc), e)
        elif lo is None or (isinstance(lc, int) and lc < 0):
            why = (
                "a slice whose start depends on the sign of a step that is not a constant"
                if lo is None and not isinstance(sc, int)
                else "a slice starting from the end of a slice"
            )
            self.unsupported(
                e, "slice-start", None, why, "the indices it gives are treated as varying and unknown"
            )
            lo = self.opaque(e, "slice-start", None, why)
        stride = view.strides.get(d)
        if not (isinstance(lo, PyConst) and lo.value == 0):
            base_lo = self._strided(self._index_value(lo, e), stride, e)
            prev = view.offsets.get(d)
            view.offsets[d] = (
                self.value(O.ADD, [prev, base_lo], "s64", None, e) if prev is not None else base_lo
            )
        if sc != 1:
            stride = self._arith(O.MUL, stride if stride is not None else PyConst(1),
                                 step if isinstance(sc, int) else self._index_value(step, e), e)  # fmt: skip
            view.strides[d] = stride

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


def _integer(t: str) -> bool:
    """An integer IR type (``s32``, ``u64``, ``b32``; not ``bf16``)."""
    return t[:1] in ("s", "u") or (t[:1] == "b" and t[1:].isdigit())
