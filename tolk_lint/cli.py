"""The command line (DESIGN.md's contract: scripts, hooks and CI depend on it).

    tolk-lint check [PATH ...]     lint files and folders
    tolk-lint rule CODE | rules    a rule's documentation; the catalog
    tolk-lint --version

Exit status: 0 clean, 1 diagnostics found, 2 usage or internal error.
"""

from __future__ import annotations

import os
import sys

import click

from tolk_lint import __version__
from tolk_lint.config import ConfigError, Settings


def _codes(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(c.strip().upper() for c in value.split(",") if c.strip())


def _block(value: str | None) -> tuple[int, int, int] | None:
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


def _target(value: str | None) -> str | None:
    if not value:
        return None
    from tolk_lint.target import parse_target

    try:
        return parse_target(value).name
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


class _Group(click.Group):
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tolk-lint")
def main() -> None:
    """A linter, analyser and fixer for GPU kernels (Numba Python and NVIDIA PTX)."""


def settings_from_options(
    select: str | None, ignore: str | None, target: str | None, block: str | None, **extra
) -> Settings:
    from tolk_lint.config import resolve_settings

    return resolve_settings(
        select=_codes(select) or None,
        ignore=_codes(ignore) or None,
        target=_target(target),
        block=_block(block),
        **extra,
    )


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", help="Comma-separated codes or prefixes to check (TL1, TL302).")
@click.option("--ignore", help="Comma-separated codes or prefixes to leave out.")
@click.option("--target", help="Target architecture: sm_75, sm_80, sm_90, ..., or cpu.")
@click.option("--block", help="The launch's block shape X,Y,Z, for every kernel linted.")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when diagnostics are found.")
@click.option("--dump-ir", is_flag=True, help="Print the IR of every kernel instead of linting.")
@click.option("--dump", "dump_what", type=click.Choice(["ir", "uniformity"]), help="Print an analysis dump.")
def check(paths, select, ignore, target, block, output_format, exit_zero, dump_ir, dump_what) -> None:
    """Lint files and folders (*.py, *.ptx)."""
    from tolk_lint.engine import lint_file
    from tolk_lint.walk import iter_files

    settings = settings_from_options(select, ignore, target, block)
    files = list(iter_files(paths or ["."], settings))
    if dump_ir or dump_what:
        _dump(files, settings, dump_what or "ir")
        return
    results = [lint_file(p, settings) for p in files]
    _emit(results, output_format)
    found = any(r.diagnostics for r in results)
    sys.exit(0 if (exit_zero or not found) else 1)


def _emit(results, output_format: str) -> None:
    if output_format == "json":
        from tolk_lint.outputs.json_out import render

        sys.stdout.write(render(results))
    elif output_format == "sarif":
        from tolk_lint.outputs.sarif import render

        sys.stdout.write(render(results))
    elif output_format == "github":
        from tolk_lint.outputs.github import render

        sys.stdout.write(render(results))
    else:
        from tolk_lint.outputs.text import render, summary

        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        text = render(results, color=color)
        if text:
            sys.stdout.write(text + "\n")
        sys.stdout.write(summary(results) + "\n")


def _dump(files, settings: Settings, what: str) -> None:
    from tolk_lint.engine import decode, parse, prepare
    from tolk_lint.ir.printer import dump_kernel

    for path in files:
        with open(path, "rb") as f:
            text, err = decode(f.read(), path)
        if err is not None:
            click.echo(f"{path}: {err.message}", err=True)
            continue
        module = parse(text, path)
        prepare(module, settings)
        for d in module.diagnostics:
            click.echo(f"{d.span}: {d.code} {d.message}", err=True)
        for k in module.all_kernels():
            if what == "uniformity":
                from tolk_lint.analysis.uniform import dump_uniformity, uniformity

                click.echo(dump_uniformity(uniformity(k, module, settings)), nl=False)
            else:
                click.echo(dump_kernel(k, with_locations=True), nl=False)


@main.command("rules")
@click.option("--all", "show_all", is_flag=True, help="Print every rule's full documentation.")
def rules_cmd(show_all: bool) -> None:
    """The rule catalog."""
    from tolk_lint.registry import all_rules

    for r in all_rules():
        if show_all:
            click.echo(r.doc() + "\n")
        else:
            fix = " (fixable)" if r.fixable else ""
            click.echo(f"{r.code}  {r.name:<30} {r.severity.value:<8} {r.summary()}{fix}")


@main.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """A rule's documentation."""
    from tolk_lint.registry import rule_by_code

    r = rule_by_code(code)
    if r is None:
        click.echo(f"tolk-lint: error: no rule `{code}` (see `tolk-lint rules`)", err=True)
        sys.exit(2)
    click.echo(r.doc())


if __name__ == "__main__":
    main()
