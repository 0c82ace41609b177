"""What the lowering of one file shares (`ModuleCtx`), and one function
being lowered: the kernel itself or an inlined call (`Frame`).

Imports: the finder's types, the diagnostics and `tolk_lint.ir.nodes`.
"""

from __future__ import annotations

import ast

from tolk_lint.diagnostics import Diagnostic
from tolk_lint.frontends.python.finder import FuncInfo, Scope, Source
from tolk_lint.ir.nodes import Block, Origin


class ModuleCtx:
    """What every kernel of one file shares: the source, the finder's tables
    and the diagnostics list."""

    def __init__(self, src: Source, finder, target: str = "sm_80"):
        self.src = src
        self.finder = finder
        self.path = src.path
        self.target = target
        self.diagnostics: list[Diagnostic] = []
        self.from_functions: set[int] = set()  # ids of diagnostics from a device function's own lowering
        self._sizes: dict[ast.AST, int] = {}

    def size(self, fn: ast.AST) -> int:
        """Syntax nodes in a function (cached)."""
        n = self._sizes.get(fn)
        if n is None:
            n = self._sizes[fn] = sum(1 for _ in ast.walk(fn))
        return n


class Frame:
    """One function being lowered: the kernel itself, or an inlined call."""

    __slots__ = (
        "call_origin",
        "cont",
        "fi",
        "has_value",
        "line",
        "locals",
        "loops",
        "prefix",
        "ret_var",
        "scope",
        "site",
        "source",
    )

    def __init__(self, fi: FuncInfo, prefix: str, call_origin: Origin | None):
        self.fi = fi
        self.prefix = prefix
        self.scope: Scope = fi.scope
        self.line = fi.line
        self.call_origin = call_origin
        self.ret_var: str | None = None
        self.cont: Block | None = None
        self.loops: list[tuple[Block, Block]] = []  # (continue target, break target)
        self.has_value = False
        self.locals = fi.locals
        # a function of another file (`siblings`): its `Source`, and the call in the linted
        # file its instructions are placed on
        self.source = None
        self.site = None

    def var(self, name: str) -> str:
        return name if not self.prefix else f"{name}@{self.prefix}"
