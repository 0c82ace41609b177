"""The calls of ``tolk_lint.runtime``, the cp.async module the TL302 fixer's
Numba kernels use: ``cp_async``, ``cp_async_zfill``, ``commit_group`` and
``wait_group`` become the IR's CP_ASYNC, CP_ASYNC_COMMIT and CP_ASYNC_WAIT,
as the PTX front end lowers ``cp.async``, so TL204 proves a pipeline written
in Python as it proves one in PTX.

The copy's destination and source are element addresses computed as
``dst[dst_index]`` and ``src[src_index]`` are (the runtime indexes the
arrays with Numba's own code); ``nbytes`` must be the literal 4, 8 or 16 and
the wait count a literal 0..7, as the runtime's typing insists. A call the
runtime would refuse, or one this lowering cannot read (a computed size, a
destination that is not a shared array, a source that is not a global
array), is opaque (TL002): analysed conservatively, never trusted.

Imports: `values`, `vocabulary`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.lower.values import ArrayRef, GlobalRef, PyConst
from tolk_lint.ir.opcodes import Opcode as O

COPY_BYTES = (4, 8, 16)
MAX_WAIT = 7


class AsyncCopies:
    """Mixin of `Lowerer`: the ``tolk_lint.runtime`` calls."""

    def runtime_call(self, name: str, node: ast.Call) -> Any:
        if name == "cp_async":
            return self._runtime_copy(node, zfill=False)
        if name == "cp_async_zfill":
            return self._runtime_copy(node, zfill=True)
        if name == "commit_group":
            if node.args or node.keywords:
                return self._bad_call(node)
            self.emit(O.CP_ASYNC_COMMIT, [], (), {}, node)
            return PyConst(None)
        if name == "wait_group":
            a = self._arg(node, ["n"], 1)
            n = self.static(self.expr(a["n"])) if a else None
            if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_WAIT:
                return self._bad_call(node)
            self.emit(O.CP_ASYNC_WAIT, [], (), {"n": n}, node)
            return PyConst(None)
        return self.opaque_call(node, f"call:{V.RUNTIME}{name}", f"{V.RUNTIME}{name}", "an unknown function")

    def _runtime_copy(self, node: ast.Call, zfill: bool) -> Any:
        names = ["dst", "dst_index", "src", "src_index", "nbytes"] + (["src_bytes"] if zfill else [])
        a = self._arg(node, names, len(names))
        if a is None:
            return self._bad_call(node)
        dst, src = self.expr(a["dst"]), self.expr(a["src"])
        if isinstance(src, GlobalRef):
            src = self.global_array(src, node)
        nbytes = self.static(self.expr(a["nbytes"]))
        if not isinstance(dst, ArrayRef) or not isinstance(src, ArrayRef) or dst.space != "shared" \
                or src.space != "global" or nbytes not in COPY_BYTES or isinstance(nbytes, bool) \
                or dst.dtype != src.dtype or nbytes % dst.itemsize:  # fmt: skip
            return self._bad_call(node)
        d = self.element(dst, self._index_items(a["dst_index"]), node)
        s = self.element(src, self._index_items(a["src_index"]), node)
        if isinstance(d, ArrayRef) or isinstance(s, ArrayRef):
            return self._bad_call(node)  # an index of too few dimensions: a view, not an element
        darr, daddr, dindex = d
        sarr, saddr, sindex = s
        args = [daddr, saddr]
        if zfill:
            args.append(self.coerce(self.expr(a["src_bytes"]), "u32", node))
        attrs = {"bytes": nbytes, "cache": "cg" if nbytes == 16 else "ca", "space": "shared",
                 "dtype": darr.dtype, "buffer": darr.name, "src_buffer": sarr.name}  # fmt: skip
        if nbytes == darr.itemsize:
            # one element: its bounds are judged per dimension, as a store's
            # (a run of several is judged by its bytes)
            attrs["index"] = dindex
        self.emit(O.CP_ASYNC, args, (), attrs, node)
        return PyConst(None)
