"""``tolk-lint fix [PATH ...] [--diff] [--unsafe-fixes]``: apply fixes.

Lints each file, applies the fixes the diagnostics carry (safe ones; unsafe
ones with ``--unsafe-fixes``), re-lints and repeats while fixes apply (at most
a few passes), then writes the file -- or, with ``--diff``, prints a unified
diff and writes nothing. Exit status: 0 when nothing is left to report, 1
when diagnostics remain (or, with ``--diff``, when there is a diff), 2 on
usage errors or when a file could not be written. This is what the
``tolk-lint-fix`` pre-commit hook runs.

    tolk-lint fix --unsafe-fixes [--diff] kernel.ptx

``--unsafe-fixes`` also applies TL302's "Pipeline this loop with cp.async"
(it doubles shared arrays; see docs/fixer.md). A file is written safely:

- atomically: the new text goes to a temporary file beside it, which then
  replaces it (a crash leaves the old file or the new one, never half);
  its permissions are kept;
- never over a change made meanwhile: when the file on disk no longer holds
  the text that was linted (an editor saved it during the run), nothing is
  written and the file is named on stderr;
- idempotently: a fixed file has nothing left to fix, so a second ``fix``
  changes nothing; and a fix touches only the kernel its proof covers.
"""

from __future__ import annotations

import difflib
import os
import sys
import tempfile

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
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop analysing a file after this long (default 30); a fix whose proof does not finish is not applied.")
@click.option("--memory-budget", type=click.IntRange(min=1), metavar="MIB",
              help="Stop analysing when the process holds this much memory (default 2048).")
def command(paths, diff, unsafe_fixes, select, ignore, target, block, time_budget, memory_budget) -> None:
    """Apply the fixes that the diagnostics carry."""
    from tolk_lint.commands.options import settings_from_options
    from tolk_lint.engine import lint_text
    from tolk_lint.fix.edits import apply_edits, fixes_for
    from tolk_lint.walk import iter_files

    # --unsafe-fixes also has the rules work out their unsafe fixes (TL302's proof is a second lint)
    settings = settings_from_options(select, ignore, target, block, time_budget=time_budget,
                                     memory_budget=memory_budget, unsafe_fixes=unsafe_fixes)  # fmt: skip
    fixed_total = remaining = 0
    changed_any = failed = False
    for path in iter_files(paths or ["."], settings):
        try:
            with open(path, encoding="utf-8", newline="") as f:
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
                problem = write_if_unchanged(path, original, text)
                if problem:
                    click.echo(f"{path}: {problem}", err=True)
                    failed = True
    if fixed_total == 0:
        click.echo("No fixes available.", err=True)
    else:
        verb = "Would fix" if diff else "Fixed"
        click.echo(f"{verb} {fixed_total} diagnostic{'s' if fixed_total != 1 else ''}.", err=True)
    if remaining:
        click.echo(f"{remaining} diagnostic{'s' if remaining != 1 else ''} left (see `tolk-lint check`).", err=True)
    sys.exit(2 if failed else 1 if (remaining or (diff and changed_any)) else 0)


def write_if_unchanged(path: str, linted: str, text: str) -> str | None:
    """Write ``text`` to ``path`` atomically if the file still holds
    ``linted``; else, or on an error, say why (None when written)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            now = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return f"cannot read it again before writing: {e}; nothing written"
    if now != linted:
        return "changed since it was linted; nothing written (run `tolk-lint fix` again)"
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tolk-fix-", suffix=os.path.splitext(path)[1], dir=folder)
    except OSError as e:
        return f"cannot write beside it: {e}; nothing written"
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return f"cannot write it: {e}; the file is unchanged"
    return None
