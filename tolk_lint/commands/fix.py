"""``tolk-lint fix [PATH ...] [--diff] [--unsafe-fixes]``: apply fixes.

Lints each file, applies the fixes the diagnostics carry (safe ones; unsafe
ones with ``--unsafe-fixes``), re-lints and repeats while fixes apply (at most
a few passes), then writes the file -- or, with ``--diff``, prints a unified
diff and writes nothing. Exit status: 0 when nothing is left to report, 1
when diagnostics remain (or, with ``--diff``, when there is a diff), 2 on
usage errors. This is what the ``tolk-lint-fix`` pre-commit hook runs.
"""

from __future__ import annotations

import difflib
import sys

import click

MAX_PASSES = 4


@click.command("fix")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of writing them.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes marked unsafe.")
@click.option("--select", help="Comma-separated codes or prefixes to check.")
@click.option("--ignore", help="Comma-separated codes or prefixes to leave out.")
@click.option("--target", help="Target architecture: sm_80, sm_90, ..., or cpu.")
@click.option("--block", help="The launch's block shape X,Y,Z.")
def command(paths, diff, unsafe_fixes, select, ignore, target, block) -> None:
    """Apply the fixes that the diagnostics carry."""
    from tolk_lint.commands.options import settings_from_options
    from tolk_lint.engine import lint_text
    from tolk_lint.fix.edits import apply_edits, fixes_for
    from tolk_lint.walk import iter_files

    settings = settings_from_options(select, ignore, target, block)
    fixed_total = remaining = 0
    changed_any = False
    for path in iter_files(paths or ["."], settings):
        try:
            with open(path, encoding="utf-8") as f:
                original = f.read()
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"{path}: cannot read: {e}", err=True)
            remaining += 1
            continue
        text = original
        for _ in range(MAX_PASSES):
            result = lint_text(text, path, settings)
            fixes = fixes_for(result.diagnostics, path, unsafe_fixes)
            if not fixes:
                break
            text, n = apply_edits(text, fixes)
            fixed_total += n
            if n == 0:
                break
        remaining += len(lint_text(text, path, settings).diagnostics)
        if text != original:
            changed_any = True
            if diff:
                sys.stdout.writelines(
                    difflib.unified_diff(original.splitlines(True), text.splitlines(True), path, path)
                )
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    if fixed_total == 0:
        click.echo("No fixes available.", err=True)
    else:
        verb = "Would fix" if diff else "Fixed"
        click.echo(f"{verb} {fixed_total} diagnostic{'s' if fixed_total != 1 else ''}.", err=True)
    if remaining:
        click.echo(f"{remaining} diagnostic{'s' if remaining != 1 else ''} left (see `tolk-lint check`).", err=True)
    sys.exit(1 if (remaining or (diff and changed_any)) else 0)
