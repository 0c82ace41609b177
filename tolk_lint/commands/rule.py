"""``tolk-lint rule CODE``: one rule's documentation (by code or name)."""

from __future__ import annotations

import sys

import click


@click.command("rule")
@click.argument("code")
def command(code: str) -> None:
    """A rule's documentation."""
    from tolk_lint.catalog import rule_by_code

    r = rule_by_code(code)
    if r is None:
        click.echo(f"tolk-lint: error: no rule `{code}` (see `tolk-lint rules`)", err=True)
        sys.exit(2)
    click.echo(r.doc())
