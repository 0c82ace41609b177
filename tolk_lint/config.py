"""Settings: what to check and how, from ``[tool.tolk-lint]`` and the command line.

`Settings` is the one resolved configuration every stage reads. Command-line
flags override the file's values; the file is the nearest ``pyproject.toml``
holding a ``[tool.tolk-lint]`` table (found from each linted file upward), or
the one ``--config`` names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("TL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes)
    target: str | None = None  # overrides .target and the default (sm_80)
    block: tuple[int, int, int] | None = None  # --block: every kernel's launch shape
    launch: tuple[tuple[str, tuple[int, int, int]], ...] = ()  # per-kernel block shapes
    shared_budget: str = "static"  # "static" (48 KiB) or "optin"
    exclude: tuple[str, ...] = ()
    assume: tuple[str, ...] = ()  # extra assumptions, in the kernel's language
    solver_rlimit: int = 2_000_000  # Z3's deterministic resource budget per query
    show_suppressed: bool = False
    unsafe_fixes: bool = False
    stage: bool = True  # staging analysis on (tolk-stage's Setting.stage)
    config_path: str | None = None  # the file these came from
    project_root: str | None = None  # folder of that file (SARIF %SRCROOT%)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def block_for(self, kernel_name: str) -> tuple[int, int, int] | None:
        if self.block is not None:
            return self.block
        for name, shape in self.launch:
            if name == kernel_name:
                return shape
        return None

    @property
    def effective_select(self) -> tuple[str, ...]:
        return tuple(self.select) + tuple(self.extend_select)


DEFAULT_SETTINGS = Settings()


@dataclass
class ConfigError(Exception):
    """A bad configuration value: names the key and the file."""

    message: str
    path: str | None = None
    key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        key = f"`{self.key}`: " if self.key else ""
        return f"{where}{key}{self.message}"


def resolve_settings(
    select: tuple[str, ...] | None = None,
    ignore: tuple[str, ...] | None = None,
    target: str | None = None,
    block: tuple[int, int, int] | None = None,
    **extra: Any,
) -> Settings:
    """The settings for a run: command-line values over the defaults."""
    s = DEFAULT_SETTINGS
    changes: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if select:
        changes["select"] = tuple(select)
    if ignore:
        changes["ignore"] = tuple(ignore)
    if target:
        changes["target"] = target
    if block:
        changes["block"] = block
    return s.with_(**changes)
