"""``tolk-lint check [PATH ...]``: lint files and folders, and report.

Exit status: 0 clean, 1 diagnostics found, 2 when the tool could not do
what was asked (a usage error, a code that names no rule, a path or folder
that cannot be read, a file that does not parse, an internal error);
``--exit-zero`` turns 1 into 0 and leaves 2 alone (`tolk_lint.batch`).
"""

from __future__ import annotations

import sys

import click

from tolk_lint.batch import exit_status, lint_files
from tolk_lint.commands.options import overrides_from_options
from tolk_lint.config import SettingsResolver
from tolk_lint.engine import LintResult, parse_error


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--select", help="Comma-separated codes or prefixes to check (TL1, TL302); replaces the configured set."
)
@click.option("--extend-select", help="Codes or prefixes to check on top of the configured set.")
@click.option("--ignore", help="Comma-separated codes or prefixes to leave out.")
@click.option("--target", help="Target architecture: sm_75, sm_80, sm_90, ..., or cpu.")
@click.option("--block", help="The launch's block shape X,Y,Z, for every kernel linted.")
@click.option("--config", "config", metavar="FILE|'KEY = VALUE'",
              help="A configuration file to use for every file (instead of the nearest pyproject.toml), "
                   "or one inline setting in TOML syntax.")  # fmt: skip
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
)
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report to this file.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when diagnostics are found.")
@click.option(
    "--statistics", is_flag=True, help="Print the number of diagnostics per code instead of each one."
)
@click.option("-q", "--quiet", is_flag=True, help="Print the diagnostics only: no summary, no progress.")
@click.option(
    "--show-suppressed", is_flag=True, help="Also report what `tolk: noqa` suppressed (marked as such)."
)
@click.option("--show-settings", is_flag=True, help="Print the resolved configuration and exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be linted and exit.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the `.tolk_lint_cache` folder.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per CPU): for many files, one file each; for few, the kernels of a large PTX file.")
@click.option(
    "--force-exclude", is_flag=True, help="Apply `exclude` and .gitignore to files named explicitly too."
)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop analysing a file after this long (default 30; TL005 says what was not finished).")
@click.option("--memory-budget", type=click.IntRange(min=1), metavar="MIB",
              help="Stop analysing when the process holds this much memory (default 2048).")
@click.option("--unsafe-fixes", is_flag=True,
              help="Also work out the fixes marked unsafe (TL302's cp.async pipeline, proved by a second lint "
                   "of the rewritten file) and show which findings have one.")  # fmt: skip
@click.option("--dump-ir", is_flag=True, help="Print the IR of every kernel instead of linting.")
@click.option("--dump", "dump_what", type=click.Choice(["ir", "uniformity"]), help="Print an analysis dump.")
def command(paths, select, extend_select, ignore, target, block, config, isolated, output_format, output_file,
          exit_zero, statistics, quiet, show_suppressed, show_settings, show_files, no_cache, jobs,
          force_exclude, color, time_budget, memory_budget, unsafe_fixes, dump_ir, dump_what) -> None:  # fmt: skip
    """Lint files and folders (*.py, *.ptx)."""
    from tolk_lint.walk import iter_files

    ov = overrides_from_options(select, ignore, target, block, extend_select, config, isolated, show_suppressed,
                                time_budget, memory_budget, unsafe_fixes)  # fmt: skip
    resolver = SettingsResolver(ov)
    paths = list(paths) or ["."]
    unreadable: list[LintResult] = []

    def folder_error(path: str, message: str) -> None:
        unreadable.append(LintResult(path, None, [parse_error(path, f"`{path}`: {message}")]))

    files = list(iter_files(paths, settings_for=resolver.for_path, force_exclude=force_exclude,
                            on_error=folder_error))  # fmt: skip
    if show_settings:
        where = files[0] if files else paths[0]
        click.echo(f"Resolved settings for: {where}")
        click.echo(resolver.for_path(where).to_toml(), nl=False)
        return
    if show_files:
        for f in sorted(files):
            click.echo(f)
        return
    if dump_ir or dump_what:
        _dump(files, resolver, dump_what or "ir")
        return
    if not files and not quiet:
        click.echo("tolk-lint: warning: no .py or .ptx files found under the given paths", err=True)
    results = lint_files(files, resolver.for_path, use_cache=not no_cache, jobs=jobs,
                         progress=not quiet and sys.stderr.isatty())  # fmt: skip
    results = sorted(results + unreadable, key=lambda r: r.path)
    out = open(output_file, "w", encoding="utf-8") if output_file else sys.stdout
    try:
        _emit(results, output_format, out, quiet=quiet, statistics=statistics,
              show_suppressed=show_suppressed, color=color if not output_file else "never")  # fmt: skip
    finally:
        if output_file:
            out.close()
    sys.exit(exit_status(results, exit_zero))


def _emit(results, output_format: str, out=None, quiet: bool = False, statistics: bool = False,
          show_suppressed: bool = False, color: str = "auto") -> None:  # fmt: skip
    out = out or sys.stdout
    if output_format == "json":
        from tolk_lint.outputs.json_out import render

        out.write(render(results, show_suppressed=show_suppressed))
    elif output_format == "sarif":
        from tolk_lint.outputs.sarif import render as render_sarif

        out.write(render_sarif(results, show_suppressed=show_suppressed))
    elif output_format == "github":
        from tolk_lint.outputs.github import render as render_github

        out.write(render_github(results))
    else:
        from tolk_lint.outputs.text import render as render_text
        from tolk_lint.outputs.text import statistics as render_statistics
        from tolk_lint.outputs.text import summary, use_color

        if statistics:
            out.write(render_statistics(results))
            return
        text = render_text(results, color=use_color(out, color), show_suppressed=show_suppressed)
        if text:
            out.write(text + ("" if quiet else "\n"))
        if not quiet:
            out.write(summary(results) + "\n")


def _dump(files, resolver: SettingsResolver, what: str) -> None:
    from tolk_lint.engine import decode, parse, prepare
    from tolk_lint.ir.printer import dump_kernel

    for path in files:
        settings = resolver.for_path(path)
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
