"""The command line: wiring only. Each subcommand is a module of
`tolk_lint.commands` holding one click command named ``command``:

    tolk-lint check [PATH ...]        lint files and folders       commands/check.py
    tolk-lint fix [PATH ...]          apply fixes                  commands/fix.py
    tolk-lint stage [PATH ...]        the staging report           commands/stage.py
    tolk-lint validate ORIG FIXED     prove, assemble, run a fix   commands/validate.py
    tolk-lint rules | rule CODE       the catalog; one rule's doc  commands/rules.py, rule.py
    tolk-lint lsp                     the language server          commands/lsp.py
    tolk-lint --version

A command's module is imported only when it runs (or for ``--help``), so
``--version`` and ``check`` do not pay for the staging analysis or pygls.
A command whose module is not installed is not listed.

Exit status (ruff's): 0 clean, 1 diagnostics found, 2 usage, configuration
or internal error; see `tolk_lint.batch` for what ``check`` counts.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback

import click

from tolk_lint.config import ConfigError
from tolk_lint.version import __version__

COMMANDS = ("check", "fix", "lsp", "rule", "rules", "stage", "validate")


def _module_of(name: str) -> str:
    return f"tolk_lint.commands.{name}"


class _Group(click.Group):
    """The subcommands of `COMMANDS`, imported when run; ruff's exit statuses."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        found = []
        for name in COMMANDS:
            try:
                if importlib.util.find_spec(_module_of(name)) is not None:
                    found.append(name)
            except ModuleNotFoundError:
                pass
        return found

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        module = _module_of(cmd_name)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name not in (module, "tolk_lint.commands"):
                raise
            return None
        self.add_command(mod.command, cmd_name)
        return mod.command

    def main(self, *args, **kwargs):  # exit 2 on usage errors, like ruff
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.UsageError as e:
            e.show()
            sys.exit(2)
        except click.Abort:
            sys.exit(2)
        except ConfigError as e:
            click.echo(f"tolk-lint: error: {e}", err=True)
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(2)
        except Exception as e:  # noqa: BLE001 - a bug is one line and exit 2, never a traceback
            click.echo(f"tolk-lint: error: internal error: {type(e).__name__}: {e}", err=True)
            click.echo("tolk-lint: this is a bug in tolk-lint; please report it with the input that caused it "
                       "(set TOLK_LINT_DEBUG=1 for the traceback)", err=True)  # fmt: skip
            if os.environ.get("TOLK_LINT_DEBUG"):
                traceback.print_exc()
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tolk-lint")
def main() -> None:
    """A linter, analyser and fixer for GPU kernels (Numba Python and NVIDIA PTX)."""


if __name__ == "__main__":
    main()
