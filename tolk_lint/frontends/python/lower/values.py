"""What an expression lowers to (``LV``).

Either an SSA `Value`, or a compile-time thing the front end keeps
symbolic: a Python constant (`PyConst`, folded with Python's semantics and
materialised as a CONST when it reaches an instruction), a tuple
(`TupleLV`), an array (`ArrayRef`: a parameter or a shared/local/const
buffer, or a view of one), a qualified name (`QualRef`: ``numba.cuda``,
``math.sqrt``), a jitted function (`FuncRef`), a cooperative group
(`ObjRef`) or a method of one (`MethodRef`), or a global of unknown value
(`GlobalRef`). Symbolic bindings of a variable live beside the SSA
variables (the lowerer's ``statics``, see `environment`).

Imports: `tolk_lint.ir.nodes` only.
"""

from __future__ import annotations

import ast
from typing import Any

from tolk_lint.ir.nodes import Value, type_bits


class PyConst:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"PyConst({self.value!r})"


class QualRef:
    __slots__ = ("qual",)

    def __init__(self, qual: str):
        self.qual = qual


class TupleLV:
    __slots__ = ("items",)

    def __init__(self, items: list):
        self.items = items


class ArrayRef:
    """An array: a parameter, a buffer, or a view of one (fixed leading
    indices ``prefix``; a sliced dim ``d`` reads index ``offsets[d] +
    strides[d] * i`` of the array, a missing entry being 0 and 1)."""

    __slots__ = (
        "base", "dtype", "key", "name", "ndim", "offsets", "param", "prefix", "shape", "space", "strides"
    )  # fmt: skip

    def __init__(self, name, space, dtype, base, shape, ndim, param=None, key=None):
        self.name = name
        self.space = space
        self.dtype = dtype
        self.base = base
        self.shape = tuple(shape)
        self.ndim = ndim
        self.prefix: tuple = ()
        self.offsets: dict[int, Value] = {}
        self.strides: dict[int, Any] = {}
        self.param = param
        self.key = key or name

    def view(self) -> ArrayRef:
        a = ArrayRef(
            self.name, self.space, self.dtype, self.base, self.shape, self.ndim, self.param, self.key
        )
        a.prefix = self.prefix
        a.offsets = dict(self.offsets)
        a.strides = dict(self.strides)
        return a

    @property
    def itemsize(self) -> int:
        return max(1, type_bits(self.dtype) // 8)


class FuncRef:
    __slots__ = ("info",)

    def __init__(self, info):
        self.info = info


class ChoiceRef:
    """A factory's parameter that the file's calls give one of several of
    its functions (``make_binary_op_kernel(_add)``, ``(_hypot)``): a call of
    it runs one of them, the same one in every thread (`Calls.call_choice`)."""

    __slots__ = ("infos", "name")

    def __init__(self, name: str, infos: tuple):
        self.name = name
        self.infos = infos


class ObjRef:
    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind


class MethodRef:
    __slots__ = ("name", "obj")

    def __init__(self, obj, name: str):
        self.obj = obj
        self.name = name


class GlobalRef:
    """A global or closure variable whose value the file does not give."""

    __slots__ = ("factory", "name", "node", "why")

    def __init__(self, name: str, why: str, node: ast.AST | None = None, factory: ast.AST | None = None):
        self.name = name
        self.why = why
        self.node = node  # where the name is read, for the TL002
        self.factory = factory  # the `def` whose parameter it is (a kernel factory's argument)
