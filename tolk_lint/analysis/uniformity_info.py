"""The results of the uniformity analysis, as the rules and the solver read them.

`UniformityInfo` is the query API over one kernel at one level (LLVM's
``GenericUniformityInfo``): which values vary, which branches diverge, which
loops' trips may differ, and why (`Reason` chains). `Proof` is what Z3 said
about one value. Kept apart from the propagation (`tolk_lint.analysis.uniform`)
so that `tolk_lint.analysis.smt`, which the propagation calls, can read them
without importing it.

Imports only the IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tolk_lint.ir.cfg import Loop
from tolk_lint.ir.nodes import Block, Instr, Kernel, Module, Value


class Reason:
    """Why a value varies: one step of the chain. ``source`` is the value (or
    None) this step inherits from; ``instr`` where it happens.

    ``message`` may be given as ``(function, *arguments)`` and is then written
    when first read: the propagation marks tens of thousands of values in a
    large kernel, and only the few chains a diagnostic cites are ever read."""

    __slots__ = ("_message", "instr", "source")

    def __init__(self, message: str | tuple, instr: Instr | None = None, source: Value | None = None):
        self._message = message
        self.instr = instr
        self.source = source

    @property
    def message(self) -> str:
        m = self._message
        if not isinstance(m, str):
            m = self._message = m[0](*m[1:])
        return m

    def _key(self) -> tuple:
        return (self.message, self.instr, self.source)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reason) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Reason({self.message!r}, {self.instr!r}, {self.source!r})"


@dataclass
class Proof:
    """What Z3 said about a value: ``verdict`` is ``uniform``, ``varying`` or
    ``unknown``; ``witness`` a model when varying."""

    verdict: str
    witness: dict | None = None
    detail: str = ""


@dataclass
class UniformityInfo:
    """The query API over one kernel (LLVM's GenericUniformityInfo)."""

    kernel: Kernel
    module: Module | None
    level: str
    varying: set[Value] = field(default_factory=set)
    divergent_branches: set[Block] = field(default_factory=set)  # blocks whose BRANCH diverges
    divergent_loops: set[Loop] = field(default_factory=set)  # loops whose trips may differ
    varying_buffers: set[tuple[str, str] | None] = field(default_factory=set)
    reasons: dict[Value, Reason] = field(default_factory=dict)
    branch_reasons: dict[Block, Reason] = field(default_factory=dict)
    loop_reasons: dict[Loop, Reason] = field(default_factory=dict)
    proofs: dict[Value, Proof] = field(default_factory=dict)  # Z3 verdicts on conditions
    loop_proofs: dict[Loop, Proof] = field(default_factory=dict)
    forced_uniform: set[Value] = field(default_factory=set)
    proved_values: set[Value] = field(default_factory=set)  # branch conditions Z3 proved uniform
    uniform_loops: set[Loop] = field(default_factory=set)  # proved by Z3
    z3_queries: int = 0
    z3_proved: int = 0

    def copy(self, level: str) -> UniformityInfo:
        """An independent copy of the taint, told it is for ``level``."""
        return UniformityInfo(
            self.kernel, self.module, level, set(self.varying), set(self.divergent_branches),
            set(self.divergent_loops), set(self.varying_buffers), dict(self.reasons),
            dict(self.branch_reasons), dict(self.loop_reasons), dict(self.proofs), dict(self.loop_proofs),
            set(self.forced_uniform), set(self.proved_values), set(self.uniform_loops),
            self.z3_queries, self.z3_proved,
        )  # fmt: skip

    # -- queries -------------------------------------------------------------
    def is_uniform(self, v: Value) -> bool:
        return v not in self.varying

    def is_varying(self, v: Value) -> bool:
        return v in self.varying

    def is_divergent_branch(self, block: Block) -> bool:
        return block in self.divergent_branches

    def is_divergent_loop(self, loop: Loop) -> bool:
        return loop in self.divergent_loops

    def why(self, v: Value, limit: int = 12) -> list[Reason]:
        """The chain of reasons ``v`` varies, from ``v`` down to its root."""
        out: list[Reason] = []
        seen: set[Value] = set()
        while v is not None and v in self.reasons and v not in seen and len(out) < limit:
            seen.add(v)
            r = self.reasons[v]
            out.append(r)
            v = r.source
        return out
