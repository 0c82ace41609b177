"""``tolk-lint rules [--all]``: the rule catalog, one line a rule (or every
rule's whole documentation)."""

from __future__ import annotations

import click


@click.command("rules")
@click.option("--all", "show_all", is_flag=True, help="Print every rule's full documentation.")
def command(show_all: bool) -> None:
    """The rule catalog."""
    from tolk_lint.catalog import all_rules

    for r in all_rules():
        if show_all:
            click.echo(r.doc() + "\n")
        else:
            fix = " (fixable)" if r.fixable else ""
            click.echo(f"{r.code}  {r.name:<30} {r.severity.value:<8} {r.summary()}{fix}")
