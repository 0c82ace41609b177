"""The light syntax tree the parser builds: dataclasses and tagged tuples.

The tree (all positions are 1-based lines/columns of the file):

- `PtxFile`: ``items`` in file order: `FuncDecl`, `VarDecl`, ``("version", s)``,
  ``("target", [names])``, ``("file", index, path)``, ``("loc", ...)``, ...
- `FuncDecl`: header facts, and ``body`` (list of statements, or None for a
  declaration).
- statements are tuples tagged by their first element:
  ``("I", guard, opcode, operands, pos)`` instruction (``guard`` is None or
  ``(negated, name)``; ``pos`` is ``(line, col, end_line, end_col, start,
  end)`` with ``start``/``end`` offsets into the text);
  ``("L", name, line, col)`` label; ``("R", type, [(name, count|None)])``
  ``.reg``; ``("V", VarDecl)``; ``("C", file, line, col, inlined_at|None, line of the .loc)``
  ``.loc``; ``("B", [statements])`` a ``{ }`` scope; ``("X", ProtoDecl)``
  ``.callprototype``; ``("P",)`` pragma and other ignorable directives.
- operands: ``("r", name)`` register or symbol; ``("d", a, b)`` ``a|b``;
  ``("!", name)``; ``("i", int)``; ``("f", float, "f32"|"f64"|None)``;
  ``("m", base, offset, extras)`` a ``[...]`` address (``base`` is an operand
  tuple or None); ``("v", [operands])`` ``{...}``; ``("g", [operands])``
  ``(...)``; ``("x", name, index)`` ``sym[i]``; ``("o", name, offset)``
  ``sym+off``.

What it may import: nothing of the front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParamDecl:
    name: str
    dtype: str  # "u64", "b8", ... ("" when only an array of bytes)
    attrs: list[str]
    align: int = 0
    shape: tuple[int | None, ...] = ()
    space: str | None = None  # .ptr .global -> "global"


@dataclass
class VarDecl:
    name: str
    space: str  # global shared const local param tex
    dtype: str
    attrs: list[str]
    linkage: list[str]
    align: int = 0
    shape: tuple[int | None, ...] = ()
    init: list[Any] | None = None
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass
class ProtoDecl:
    name: str
    rets: list[ParamDecl]
    params: list[ParamDecl]


@dataclass
class FuncDecl:
    kind: str  # "entry" | "func"
    name: str
    linkage: list[str]
    rets: list[ParamDecl]
    params: list[ParamDecl]
    perf: list[tuple[str, list[int]]]
    body: list[tuple] | None
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass
class PtxFile:
    items: list[Any] = field(default_factory=list)
    clean: str = ""  # the text parsed: comments blanked, every line and column in place
    files: dict[int, str] = field(default_factory=dict)
    target: str | None = None
    target_flags: list[str] = field(default_factory=list)
    version: str | None = None
