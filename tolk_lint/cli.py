"""The command line (DESIGN.md's contract: scripts, hooks and CI depend on it).

    tolk-lint check [PATH ...]     lint files and folders
    tolk-lint rule CODE | rules    a rule's documentation; the catalog
    tolk-lint lsp                  the language server, over stdio
    tolk-lint --version

``stage``, ``fix`` and ``validate`` live in ``tolk_lint.commands.*``: listed
when installed, and imported only when run (``OPTIONAL_COMMANDS``).

Exit status: 0 clean, 1 diagnostics found, 2 usage, configuration or internal
error (``--exit-zero`` turns 1 into 0 and leaves 2 alone).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback

import click

from tolk_lint import __version__
from tolk_lint.config import ConfigError, Overrides, Settings, SettingsResolver

# More files than this are linted in worker processes.
PARALLEL_THRESHOLD = 8
# A run over at least this many files shows a progress bar (on a terminal).
PROGRESS_THRESHOLD = 20


def _codes(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    from tolk_lint.config import SELECTOR

    out = []
    for c in value.split(","):
        c = c.strip().upper()
        if not c:
            continue
        if not SELECTOR.match(c):
            raise click.BadParameter(
                f"`{c}` is not a rule code or prefix (expected e.g. TL101, TL1, TL or ALL)"
            )
        out.append(c)
    return tuple(out)


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
        raise click.BadParameter(
            f"a block holds at most 1024 threads; {value} holds {dims[0] * dims[1] * dims[2]}"
        )
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
    """ruff's exit statuses, and the optional commands of ``OPTIONAL_COMMANDS``
    imported lazily: listed when their module is installed, imported when run."""

    def _lazy(self) -> dict[str, str]:
        import importlib.util

        out = {}
        for module in OPTIONAL_COMMANDS:
            name = module.rsplit(".", 1)[1]
            if name in self.commands:
                continue
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:
                found = False
            if found:
                out[name] = module
        return out

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._lazy()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        module = self._lazy().get(cmd_name)
        if module is None:
            return None
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
        except Exception as e:
            click.echo(f"tolk-lint: error: internal error: {type(e).__name__}: {e}", err=True)
            if os.environ.get("TOLK_LINT_DEBUG"):
                traceback.print_exc()
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tolk-lint")
def main() -> None:
    """A linter, analyser and fixer for GPU kernels (Numba Python and NVIDIA PTX)."""


def overrides_from_options(
    select: str | None = None,
    ignore: str | None = None,
    target: str | None = None,
    block: str | None = None,
    extend_select: str | None = None,
    config: str | None = None,
    isolated: bool = False,
    show_suppressed: bool | None = None,
) -> Overrides:
    return Overrides(
        select=_codes(select) or None,
        ignore=_codes(ignore) or None,
        extend_select=_codes(extend_select) or None,
        target=_target(target),
        block=_block(block),
        config=config,
        isolated=isolated,
        show_suppressed=show_suppressed or None,
    )


def settings_from_options(
    select: str | None, ignore: str | None, target: str | None, block: str | None, **extra
) -> Settings:
    """One `Settings` for a command that does not resolve per file: the
    configuration found from the current folder, under these flags.
    (``extend_select``, ``config`` and ``isolated`` may be passed too.)"""
    keys = ("extend_select", "config", "isolated", "show_suppressed")
    ov = overrides_from_options(
        select, ignore, target, block, **{k: extra.pop(k) for k in keys if k in extra}
    )
    s = SettingsResolver(ov).for_path(os.getcwd())
    changes = {k: v for k, v in extra.items() if v is not None}
    return s.with_(**changes) if changes else s


# ---------------------------------------------------------------- running many files


def _lint_task(path: str, settings: Settings, cache_root: str | None):
    """One file, in a worker process: the result without its IR (which
    stays in the worker), so only diagnostics cross the process boundary."""
    from tolk_lint.cache import Cache, lint_cached

    result, _hit = lint_cached(path, settings, Cache(cache_root) if cache_root else None)
    result.module = None
    return result


class _Progress:
    """``[#####.....] 120/200 files`` on stderr, redrawn in place."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled
        self.last = 0.0

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and self.done < self.total:
            return
        self.last = now
        width = 30
        filled = width * self.done // max(1, self.total)
        sys.stderr.write(
            f"\rtolk-lint [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def lint_files(files: list[str], settings_of, use_cache: bool = True, jobs: int | None = None,
               progress: bool = False) -> list:  # fmt: skip
    """Lint ``files`` (through the cache unless ``use_cache`` is off; in
    worker processes when there are more than `PARALLEL_THRESHOLD`), and
    return their `LintResult`s sorted by path."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tolk_lint.engine import LintResult, parse_error

    tasks = []
    for f in files:
        s = settings_of(f)
        tasks.append((f, s, (s.project_root or os.getcwd()) if use_cache else None))
    bar = _Progress(len(tasks), progress and len(tasks) >= PROGRESS_THRESHOLD)
    jobs = jobs or os.cpu_count() or 1
    results: dict[int, LintResult] = {}
    try:
        if jobs > 1 and len(tasks) > PARALLEL_THRESHOLD:
            with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
                futures = {pool.submit(_lint_task, *t): i for i, t in enumerate(tasks)}
                for fut in as_completed(futures):
                    i = futures[fut]
                    try:
                        results[i] = fut.result()
                    except Exception as e:
                        d = parse_error(
                            tasks[i][0], f"internal error: the worker linting this file failed: {e}"
                        )
                        d.code, d.name = "TL004", "internal-error"
                        results[i] = LintResult(tasks[i][0], None, [d])
                    bar.step()
        else:
            from tolk_lint.cache import Cache, lint_cached

            for i, (f, s, root) in enumerate(tasks):
                results[i] = lint_cached(f, s, Cache(root) if root else None)[0]
                bar.step()
    finally:
        bar.close()
    return sorted((results[i] for i in range(len(tasks))), key=lambda r: r.path)


# ---------------------------------------------------------------- check


@main.command()
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
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: one per CPU).")
@click.option(
    "--force-exclude", is_flag=True, help="Apply `exclude` and .gitignore to files named explicitly too."
)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("--dump-ir", is_flag=True, help="Print the IR of every kernel instead of linting.")
@click.option("--dump", "dump_what", type=click.Choice(["ir", "uniformity"]), help="Print an analysis dump.")
def check(paths, select, extend_select, ignore, target, block, config, isolated, output_format, output_file,
          exit_zero, statistics, quiet, show_suppressed, show_settings, show_files, no_cache, jobs,
          force_exclude, color, dump_ir, dump_what) -> None:  # fmt: skip
    """Lint files and folders (*.py, *.ptx)."""
    from tolk_lint.walk import iter_files

    ov = overrides_from_options(
        select, ignore, target, block, extend_select, config, isolated, show_suppressed
    )
    resolver = SettingsResolver(ov)
    paths = list(paths) or ["."]
    files = list(iter_files(paths, settings_for=resolver.for_path, force_exclude=force_exclude))
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
    out = open(output_file, "w", encoding="utf-8") if output_file else sys.stdout
    try:
        _emit(results, output_format, out, quiet=quiet, statistics=statistics,
              show_suppressed=show_suppressed, color=color if not output_file else "never")  # fmt: skip
    finally:
        if output_file:
            out.close()
    found = any(r.diagnostics for r in results)
    sys.exit(0 if (exit_zero or not found) else 1)


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


# ---------------------------------------------------------------- rules, lsp


@main.command("rules")
@click.option("--all", "show_all", is_flag=True, help="Print every rule's full documentation.")
def rules_cmd(show_all: bool) -> None:
    """The rule catalog."""
    from tolk_lint.catalog import all_rules

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
    from tolk_lint.catalog import rule_by_code

    r = rule_by_code(code)
    if r is None:
        click.echo(f"tolk-lint: error: no rule `{code}` (see `tolk-lint rules`)", err=True)
        sys.exit(2)
    click.echo(r.doc())


LSP_PACKAGES = {"pygls", "lsprotocol", "cattrs", "attrs"}


@main.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default and only transport).")
def lsp_cmd(stdio: bool) -> None:
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


# ---------------------------------------------------------------- optional commands

# Each module holds one click command named ``command``, registered under the
# module's last name. They are imported only when their command runs (or for
# ``--help``): ``stage`` pulls in the staging analysis, which ``check`` and
# ``--version`` do not need.
OPTIONAL_COMMANDS = ("tolk_lint.commands.stage", "tolk_lint.commands.fix", "tolk_lint.commands.validate")

if __name__ == "__main__":
    main()
