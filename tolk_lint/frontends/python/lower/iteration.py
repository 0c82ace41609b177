"""``for`` over ``enumerate`` and ``zip``: index loops with element loads.

The iterable is read as a tree: ``enumerate(x, start)`` and ``zip(x, y,
...)`` over leaves that are ranges, arrays (one element, or one row, per
trip) or constant tuples. A tree of constant tuples is unrolled like a loop
over a tuple. Otherwise the loop is the canonical range loop of `loops`:

- ``enumerate(range(...))`` (nested or not) keeps the range as the loop:
  the counter is ``(v - start) // step`` (``v - start`` for a step of 1);
- anything else counts ``j`` over ``range(n)``, ``n`` the shortest of the
  leaves (an array's extent, a range's trip count), and each leaf's element
  is ``a[j]`` (a LOAD, or a view for an array of more dimensions) or
  ``start + j * step``.

What is left (an iterable that is neither, a range whose step is not a
constant inside ``zip``, a slice of an array) is the opaque loop of `loops`
(TL002), its message naming the construct.

Imports: `values`, `limits`, `vocabulary`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.lower.limits import MAX_UNROLL, MAX_UNROLL_NEST, MAX_UNROLL_NODES
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst, TupleLV
from tolk_lint.ir.opcodes import Opcode as O


class _Unsupported(Exception):
    """A leaf or form the lowering does not model: the reason for the TL002."""


class Iteration:
    """Mixin of `Lowerer`: loops over ``enumerate`` and ``zip``."""

    def iter_loop(self, st: ast.For, q: str, array: Any = None) -> bool:
        """Lower ``for ... in enumerate(...)``/``zip(...)`` (``q``), or over an
        array already lowered (``array``); where it is not modelled, the
        opaque loop, its TL002 naming the construct."""
        try:
            tree = self._iter_tree(st.iter, array)
        except _Unsupported as e:
            self.opaque_loop(st, None, str(e))
            return True
        items = self._static_items(tree)
        if items is not None:
            size = sum(1 for _ in ast.walk(st)) * len(items)
            if (
                len(items) <= MAX_UNROLL
                and self.unroll_nest * len(items) <= MAX_UNROLL_NEST
                and size <= MAX_UNROLL_NODES
            ):
                self.unroll_nest *= max(1, len(items))
                try:
                    self.unrolled_loop(st, items)
                finally:
                    self.unroll_nest //= max(1, len(items))
                return True
            self.opaque_loop(st, None, f"`{q[9:]}` over a tuple too long to unroll")
            return True
        try:
            if any(leaf[0] == "items" for leaf in self._leaves(tree)):
                raise _Unsupported(f"`{q[9:]}` mixing a tuple with arrays or ranges")
            ranges = [leaf for leaf in self._leaves(tree) if leaf[0] == "range"]
            if len(ranges) == 1 and not any(leaf[0] == "array" for leaf in self._leaves(tree)):
                _, start, stop, step = ranges[0]
                if not isinstance(self.static(step), int):
                    raise _Unsupported("`enumerate` over a range whose step is not a constant")
                self.range_loop(st, st.iter, element=lambda v: self._iter_value(tree, None, v, st.iter),
                                bounds=(start, stop, step))  # fmt: skip
                return True
            n = None
            for leaf in self._leaves(tree):
                m = self._leaf_length(leaf, st.iter)
                n = m if n is None else self.minmax(O.MIN, [n, m], st.iter)
        except _Unsupported as e:
            self.opaque_loop(st, None, str(e))
            return True
        self.range_loop(st, st.iter, element=lambda j: self._iter_value(tree, j, None, st.iter),
                        bounds=(PyConst(0), n, PyConst(1)))  # fmt: skip
        return True

    def _iter_tree(self, node: ast.expr, lv: Any = None, within: str = "") -> tuple:
        if (
            lv is None
            and isinstance(node, ast.Call)
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            q = self.static_qual(node.func)
            if q in V.RANGES and not node.keywords and 1 <= len(node.args) <= 3:
                lvs = [self.expr(a) for a in node.args]
                if len(lvs) == 1:
                    return ("range", PyConst(0), lvs[0], PyConst(1))
                return ("range", lvs[0], lvs[1], lvs[2] if len(lvs) == 3 else PyConst(1))
            if q == V.ENUMERATE and 1 <= len(node.args) + len(node.keywords) <= 2:
                a = self.call_args(node, ["iterable", "start"])
                if a is not None and "iterable" in a:
                    start = self.expr(a["start"]) if "start" in a else PyConst(0)
                    return ("enumerate", start, self._iter_tree(a["iterable"], within="enumerate"))
            if q == V.ZIP and not node.keywords and node.args:
                return ("zip", [self._iter_tree(a, within="zip") for a in node.args])
            if q in (V.ENUMERATE, V.ZIP):
                raise _Unsupported(f"`{q[9:]}` with arguments the front end does not model")
        if lv is None:
            lv = self.expr(node)
        if isinstance(lv, GlobalRef):
            lv = self.global_array(lv, node)
        if isinstance(lv, ArrayRef):
            d = len(lv.prefix)
            if d >= lv.ndim:
                raise _Unsupported("iteration over an array element")
            if d in lv.offsets or d in lv.strides:
                raise _Unsupported("iteration over a slice of an array (its length is unknown)")
            return ("array", lv)
        s = self.static(lv)
        if isinstance(lv, TupleLV) or isinstance(s, tuple):
            return ("items", lv.items if isinstance(lv, TupleLV) else [PyConst(x) for x in s])
        what = f"`{within}` over" if within else "iteration over"
        text = self.loc(node)[1]
        if isinstance(node, ast.GeneratorExp):
            raise _Unsupported(f"{what} a generator, `{text}`")
        raise _Unsupported(f"{what} `{text}`, which is not a range, an array or a tuple")

    def _leaves(self, tree: tuple) -> list[tuple]:
        if tree[0] == "enumerate":
            return self._leaves(tree[2])
        if tree[0] == "zip":
            return [leaf for t in tree[1] for leaf in self._leaves(t)]
        return [tree]

    def _static_items(self, tree: tuple) -> list | None:
        if tree[0] == "items":
            return list(tree[1])
        if tree[0] == "enumerate":
            inner = self._static_items(tree[2])
            start = self.static(tree[1])
            if inner is None or not isinstance(start, int):
                return None
            return [TupleLV([PyConst(start + i), x]) for i, x in enumerate(inner)]
        if tree[0] == "zip":
            parts = [self._static_items(t) for t in tree[1]]
            if any(p is None for p in parts):
                return None
            return [TupleLV(list(xs)) for xs in zip(*parts)]
        return None

    def _leaf_length(self, leaf: tuple, node) -> Any:
        if leaf[0] == "array":
            arr = leaf[1]
            return self.extent(arr, len(arr.prefix), node)
        _, start, stop, step = leaf
        s = self.static(step)
        if not isinstance(s, int) or s == 0:
            raise _Unsupported("`zip` over a range whose step is not a constant")
        span = self.binop(ast.Sub, stop, start, node) if s > 0 else self.binop(ast.Sub, start, stop, node)
        k = abs(s)
        if k != 1:
            span = self.binop(ast.FloorDiv, self.binop(ast.Add, span, PyConst(k - 1), node), PyConst(k), node)
        return self.minmax(O.MAX, [span, PyConst(0)], node)

    def _iter_value(self, tree: tuple, j: Any, v: Any, node) -> Any:
        """The element of ``tree`` at counter ``j`` (None: the loop is the one
        range leaf, whose value is ``v``)."""
        kind = tree[0]
        if kind == "enumerate":
            inner = self._iter_value(tree[2], j, v, node)
            if j is None:
                j = self._range_counter(self._leaves(tree)[0], v, node)
            return TupleLV([self.binop(ast.Add, tree[1], j, node), inner])
        if kind == "zip":
            return TupleLV([self._iter_value(t, j, v, node) for t in tree[1]])
        if kind == "range":
            if j is None:
                return v
            return self.binop(ast.Add, tree[1], self.binop(ast.Mult, j, tree[3], node), node)
        arr = tree[1]
        acc = self.element(arr, [j], node)
        if isinstance(acc, ArrayRef):
            return acc
        arr, addr, index = acc
        attrs = {"space": arr.space, "dtype": arr.dtype, "buffer": arr.name, "index": index}
        return self.value(O.LOAD, [addr], arr.dtype, attrs, node)

    def _range_counter(self, leaf: tuple, v: Any, node) -> Any:
        _, start, _, step = leaf
        d = self.binop(ast.Sub, v, start, node)
        s = self.static(step)
        return d if s == 1 else self.binop(ast.FloorDiv, d, step, node)
