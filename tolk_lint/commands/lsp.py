"""``tolk-lint lsp``: the language server over stdio (the ``lsp`` extra)."""

from __future__ import annotations

import sys

import click

LSP_PACKAGES = {"pygls", "lsprotocol", "cattrs", "attrs"}


@click.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default and only transport).")
def command(stdio: bool) -> None:
    """The language server, over stdio (needs the `lsp` extra)."""
    try:
        from tolk_lint.lsp.server import serve
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in LSP_PACKAGES:
            raise
        click.echo(f"tolk-lint: error: the language server needs `{e.name}`: "
                   "install it with `pip install 'tolk-lint[lsp]'`", err=True)  # fmt: skip
        sys.exit(2)
    serve()
