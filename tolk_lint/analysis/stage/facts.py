"""Everything the staging rules and the report need for one kernel, computed
once (``RuleContext.staging()`` caches it): `staging_facts`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tolk_lint.analysis.stage.copies import TileCopy, tile_copies
from tolk_lint.analysis.stage.panels import DecodeVerdict, decodes
from tolk_lint.analysis.stage.stageable import OperandVerdict, operands
from tolk_lint.ir.nodes import Kernel
from tolk_lint.target import Target

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.ir.nodes import Module


@dataclass
class StagingFacts:
    kernel: Kernel
    target: Target
    operands: list[OperandVerdict] = field(default_factory=list)
    copies: list[TileCopy] = field(default_factory=list)
    decodes: list[DecodeVerdict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def admits(self) -> bool:
        return bool(self.operands) and all(v.stageable for v in self.operands)


def staging_facts(kernel: Kernel, module: Module | None, settings: Settings, target: Target) -> StagingFacts:
    """Everything the staging rules and the report need for one kernel."""
    facts = StagingFacts(kernel, target)
    if target.is_host or kernel.host:
        facts.decodes = decodes(kernel, target, settings)
        return facts
    facts.operands = operands(kernel, target, settings)
    facts.copies = tile_copies(kernel, target, settings)
    return facts
