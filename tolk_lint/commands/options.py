"""Options the subcommands share: rule selectors, the block shape, the
target, and the settings they make.

A bad value is a click ``BadParameter`` (exit 2, with the option named), so
``--select TL9`` (no such rule) or ``--block 64,64,1`` (4,096 threads) never
runs a check that means something else than was asked.
"""

from __future__ import annotations

import os

import click

from tolk_lint.codes import unknown_selectors
from tolk_lint.config import SELECTOR, Overrides, Settings, SettingsResolver


def parse_codes(value: str | None) -> tuple[str, ...]:
    """``TL101,TL2`` -> ``("TL101", "TL2")``; each must name at least one rule."""
    if not value:
        return ()
    out = []
    for c in value.split(","):
        c = c.strip().upper()
        if not c:
            continue
        if not SELECTOR.match(c):
            raise click.BadParameter(f"`{c}` is not a rule code or prefix (expected e.g. TL101, TL1, TL or ALL)")
        out.append(c)
    unknown = unknown_selectors(out)
    if unknown:
        raise click.BadParameter(f"`{unknown[0]}` names no rule (see `tolk-lint rules`)")
    return tuple(out)


def parse_block(value: str | None) -> tuple[int, int, int] | None:
    """``256`` / ``16,16`` / ``(16,16,1)`` -> a block shape of at most 1024 threads."""
    if not value:
        return None
    try:
        dims = [int(x) for x in value.replace("(", "").replace(")", "").split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected X,Y,Z (e.g. 256,1,1), got `{value}`") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise click.BadParameter(f"expected one to three positive sizes, got `{value}`")
    dims += [1] * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > 1024:
        raise click.BadParameter(f"a block holds at most 1024 threads; {value} holds {dims[0] * dims[1] * dims[2]}")
    return (dims[0], dims[1], dims[2])


def parse_target_option(value: str | None) -> str | None:
    if not value:
        return None
    from tolk_lint.target import parse_target

    try:
        return parse_target(value).name
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def overrides_from_options(
    select: str | None = None,
    ignore: str | None = None,
    target: str | None = None,
    block: str | None = None,
    extend_select: str | None = None,
    config: str | None = None,
    isolated: bool = False,
    show_suppressed: bool | None = None,
    time_budget: float | None = None,
    memory_budget: int | None = None,
    unsafe_fixes: bool | None = None,
) -> Overrides:
    return Overrides(
        select=parse_codes(select) or None,
        ignore=parse_codes(ignore) or None,
        extend_select=parse_codes(extend_select) or None,
        target=parse_target_option(target),
        block=parse_block(block),
        config=config,
        isolated=isolated,
        show_suppressed=show_suppressed or None,
        time_budget=time_budget,
        memory_budget=memory_budget,
        unsafe_fixes=unsafe_fixes or None,
    )


def settings_from_options(
    select: str | None, ignore: str | None, target: str | None, block: str | None, **extra
) -> Settings:
    """One `Settings` for a command that does not resolve per file: the
    configuration found from the current folder, under these flags.
    (``extend_select``, ``config``, ``isolated``, ``unsafe_fixes`` and the budgets may be passed too.)"""
    keys = ("extend_select", "config", "isolated", "show_suppressed", "time_budget", "memory_budget", "unsafe_fixes")
    ov = overrides_from_options(select, ignore, target, block, **{k: extra.pop(k) for k in keys if k in extra})
    s = SettingsResolver(ov).for_path(os.getcwd())
    changes = {k: v for k, v in extra.items() if v is not None}
    return s.with_(**changes) if changes else s
