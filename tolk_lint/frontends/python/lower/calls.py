"""Calls: what a call is a call of, and the fallbacks for what is not
understood.

A qualified name goes to `intrinsics` (``numba.cuda``), `async_copy`
(``tolk_lint.runtime``), `library`
(``math``, ``cmath``, NumPy, builtins) or a conversion (``float32(x)``); a function
of the file to `inlining` (a kernel called from a kernel too: numba-cuda
compiles it as a device function there), an external device function
(``cuda.declare_device``) to a CALL; an unjitted function, a method (but
``int.bit_count()``) or an unknown global to an OPAQUE (TL002). Also the
argument matching the intrinsics share.

A factory's parameter that the file's calls give several of its functions
is a call of each, on its own path (`call_choice`).

Imports: `values`, `conversion`'s ``join_types``, the finder's `ExternInfo`,
`vocabulary`, `tolk_lint.ir`.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.frontends.python import vocabulary as V
from tolk_lint.frontends.python.finder import ExternInfo
from tolk_lint.frontends.python.lower.conversion import join_types
from tolk_lint.frontends.python.lower.values import (
    ArrayRef,
    ChoiceRef,
    FuncRef,
    GlobalRef,
    MethodRef,
    ObjRef,
    PyConst,
    QualRef,
)
from tolk_lint.ir.nodes import Value, is_float
from tolk_lint.ir.opcodes import Opcode as O


class Calls:
    """Mixin of `Lowerer`: the call dispatch, argument matching, opaque calls."""

    def _e_Call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func)
        if isinstance(callee, QualRef):
            return self.call_qual(callee.qual, node)
        if isinstance(callee, FuncRef):
            return self.call_function(callee.info, node)
        if isinstance(callee, ChoiceRef):
            return self.call_choice(callee, node)
        if isinstance(callee, MethodRef):
            if (
                isinstance(callee.obj, ObjRef)
                and callee.obj.kind == "grid"
                and callee.name == "sync"
                and not node.args
            ):
                return self.barrier_grid(node)
            if callee.name == "conjugate" and not node.args and isinstance(callee.obj, (Value, PyConst)):
                return self.complex_part(callee.obj, "conjugate", node)
            if callee.name == "bit_count" and not node.args and not node.keywords:
                return self.bit_count(callee.obj, node)
            return self.opaque_call(node, f"method:{callee.name}", f".{callee.name}()", "a method call")
        if isinstance(callee, GlobalRef):
            why = f"a call of a {callee.why}"
            assumed = "its result is treated as varying and unknown, and it may write any memory"
            self.unsupported(
                callee.node or node, f"global:{callee.name}", f"{callee.name}(...)", why, assumed
            )
            return self.opaque_call(node, f"global:{callee.name}", callee.name, why)
        return self.opaque_call(node, "call", None, "a call of an unknown object")

    def call_function(self, info, node: ast.Call) -> Any:
        """A call of a function of the file (or of a declared external one)."""
        if isinstance(info, ExternInfo):
            return self.call_op(node, info.name, "external device function")
        if info.kind in ("device", "host", "kernel"):
            # numba-cuda compiles a `@cuda.jit` function a kernel calls as a device function
            return self.inline(info, node)
        return self.opaque_call(node, f"call:{info.name}", f"{info.name}(...)", "a function that is not jitted")

    def bit_count(self, obj: Any, node: ast.Call) -> Any:
        """``x.bit_count()`` of an integer: numba-cuda's is ``cuda.popc`` of
        the register (a negative int64 counts its two's complement bits)."""
        if isinstance(obj, PyConst) and isinstance(obj.value, int) and not isinstance(obj.value, bool):
            return PyConst(bin(obj.value & 0xFFFFFFFFFFFFFFFF).count("1"))
        if not isinstance(obj, Value) or obj.type in ("pred", "ptr") or obj.type[:1] == "c" \
                or is_float(obj.type):  # fmt: skip
            return self.opaque_call(node, "method:bit_count", ".bit_count()", "a method call")
        return self.value(O.PURE, [obj], obj.type, {"fn": "popc"}, node)

    def call_choice(self, choice: ChoiceRef, node: ast.Call) -> Any:
        """A call of a factory's parameter that is one of several functions of
        the file: each inlined on its own path, chosen by a uniform PARAM
        (which kernel the factory made), the arguments lowered on each path."""
        b = self.b
        which = self.global_params.get(choice.name)
        if which is None:
            names = tuple(info.name for info in choice.infos)
            attrs = {"name": choice.name, "global": True, "choices": names}  # a witness names the function
            which = b.emit(O.PARAM, [], ("s64",), attrs=attrs, span=self.kernel.span, text=choice.name,
                           names=(choice.name,), block=self.entry).result  # fmt: skip
            self.global_params[choice.name] = which
            self._factory_assumption(which, tuple(range(len(names))))
        self.counter += 1
        var = f"$choice{self.counter}"
        join = b.block()
        arms = []
        for i, info in enumerate(choice.infos):
            if i < len(choice.infos) - 1:
                here, rest = b.block(), b.block()
                self.branch(self.compare(ast.Eq(), which, PyConst(i), node), here, rest, node)
                b.seal(here)
                b.position(here)
            lv = self.call_function(info, node)
            void = isinstance(lv, PyConst) and lv.value is None
            arms.append((b.current, lv if isinstance(lv, (Value, PyConst)) and not void else None))
            if i < len(choice.infos) - 1:
                b.seal(rest)
                b.position(rest)
        values = [lv for _, lv in arms]
        t = None
        if all(lv is not None for lv in values):
            for lv in values:
                t = self.type_of(lv) if t is None else join_types(t, self.type_of(lv), False)
        for blk, lv in arms:
            b.position(blk)
            if t is not None:
                b.write(var, self.coerce(lv, t, node))
            self.jump(join, node)
        b.seal(join)
        b.position(join)
        return b.read(var) if t is not None else PyConst(None)

    def call_args(self, node: ast.Call, names: list[str]) -> dict[str, ast.expr] | None:
        out: dict[str, ast.expr] = {}
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred) or i >= len(names):
                return None
            out[names[i]] = a
        for kw in node.keywords:
            if kw.arg is None:
                return None
            out[kw.arg] = kw.value
        return out

    def opaque_call(
        self, node: ast.Call, kind: str, what: str | None, reason: str, type: str = "s64"
    ) -> Value:
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a) for a in node.args]
        args += [self.expr(k.value) for k in node.keywords]
        vals = []
        for a in args:
            if isinstance(a, Value):
                vals.append(a)
            elif isinstance(a, ArrayRef):
                vals.append(a.base)
        return self.opaque(
            node,
            kind,
            what or self.loc(node)[1],
            reason,
            args=vals,
            type=type,
            assumed="its result is treated as varying and unknown, and it may write any memory",
        )

    def call_op(self, node: ast.Call, callee: str, reason: str) -> Value:
        self.unsupported(node, f"call:{callee}", f"{callee}(...)", reason)
        vals = []
        for a in node.args:
            lv = self.expr(a)
            if isinstance(lv, ArrayRef):
                vals.append(lv.base)
            elif isinstance(lv, (Value, PyConst)):
                vals.append(self.val(lv, a))
        return self.value(O.CALL, vals, "s64", {"callee": callee}, node)

    def call_qual(self, q: str, node: ast.Call) -> Any:
        if q.startswith(V.CUDA):
            rest = q[len(V.CUDA) :]
            if rest.startswith("random.xoroshiro128p_") and rest[7:] in V.XOROSHIRO_DRAWS:
                return self.xoroshiro(rest[7:], node)
            if rest.startswith("atomic."):
                op = V.ATOMIC_OPS.get(rest[7:])
                if op is not None:
                    return self.atomic(rest[7:], op, node)
            h = V.CUDA_CALLS.get(rest)
            if h is not None:
                return getattr(self, "_cuda_" + h[0])(node, h[1])
            if rest.startswith(("fp16.", "bf16.")):
                return self.half_op(rest.split(".", 1)[1], "f16" if rest.startswith("fp16") else "bf16", node)
            if rest.startswith("libdevice."):
                return self.pure_fn(rest[10:], node, keep_int=False)
        runtime = V.runtime_call(q)
        if runtime is not None:
            return self.runtime_call(runtime, node)
        if q.startswith("math."):
            return self.math_call(q[5:], node, numpy=False)
        if q.startswith("cmath."):
            return self.cmath_call(q[6:], node)
        if q.startswith("numpy."):
            return self.numpy_call(q[6:], node)
        if q.startswith("builtins."):
            return self.builtin_call(q[9:], node)
        t = V.dtype_of_qual(q)
        if t is not None:
            return self.convert(t, node, q.rsplit(".", 1)[-1])
        return self.opaque_call(node, f"call:{q}", q, "an unknown function")

    def _arg(self, node: ast.Call, names: list[str], required: int) -> dict[str, ast.expr] | None:
        a = self.call_args(node, names)
        if a is None or any(n not in a for n in names[:required]):
            return None
        return a

    def _bad_call(self, node: ast.Call) -> Value:
        return self.opaque_call(
            node, f"call:{self.loc(node.func)[1]}", None, "a call with arguments the front end does not model"
        )
