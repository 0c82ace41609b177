"""Linting many files: worker processes, the result cache, progress, and
what the run's outcome is.

Files are linted in worker processes when there are more than
`PARALLEL_THRESHOLD` of them (``-j``, default one per CPU), the largest
first so that the longest file does not start last. Each worker returns
the file's diagnostics, never its IR. Results come back sorted by path, so
the output does not depend on the scheduling.

Exit status (`exit_status`): 0 clean, 1 diagnostics found, 2 when the tool
could not do what was asked -- a file or folder that could not be read, a
file that does not parse, an internal error (the codes of
`tolk_lint.diagnostics.NOT_ANALYSED`). ``--exit-zero`` turns 1 into 0 and
leaves 2 alone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from tolk_lint.config import Settings
from tolk_lint.diagnostics import NOT_ANALYSED
from tolk_lint.engine import LintResult, parse_error

# More files than this are linted in worker processes.
PARALLEL_THRESHOLD = 8
# A run over at least this many files shows progress (on a terminal).
PROGRESS_THRESHOLD = 20


def _lint_task(path: str, settings: Settings, cache_root: str | None) -> LintResult:
    """One file, in a worker process: the result without its IR (which
    stays in the worker), so only diagnostics cross the process boundary."""
    from tolk_lint.cache import Cache, lint_cached

    result, _hit = lint_cached(path, settings, Cache(cache_root) if cache_root else None)
    result.module = None
    return result


class Progress:
    """``tolk-lint [#####.....] 120/200 files  kernels/reduce.ptx`` on stderr,
    redrawn in place; only on a terminal, so never inside a report."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.total, self.done, self.enabled = total, 0, enabled
        self.stream = stream or sys.stderr
        self.last = 0.0

    def step(self, path: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and self.done < self.total:
            return
        self.last = now
        width = 30
        filled = width * self.done // max(1, self.total)
        name = path if len(path) <= 40 else "..." + path[-37:]
        self.stream.write(
            f"\r\x1b[Ktolk-lint [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files  {name}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def lint_files(files: list[str], settings_of: Callable[[str], Settings], use_cache: bool = True,
               jobs: int | None = None, progress: bool = False) -> list[LintResult]:  # fmt: skip
    """Lint ``files`` (through the cache unless ``use_cache`` is off; in
    worker processes when there are more than `PARALLEL_THRESHOLD`), and
    return their `LintResult`s sorted by path."""
    tasks = []
    for f in files:
        s = settings_of(f)
        tasks.append((f, s, (s.project_root or os.getcwd()) if use_cache else None))
    bar = Progress(len(tasks), progress and len(tasks) >= PROGRESS_THRESHOLD)
    jobs = jobs or os.cpu_count() or 1
    results: dict[int, LintResult] = {}
    try:
        if jobs > 1 and len(tasks) > PARALLEL_THRESHOLD:
            from concurrent.futures import ProcessPoolExecutor, as_completed  # multiprocessing: 20 ms to import

            order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))  # largest first
            with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
                futures = {pool.submit(_lint_task, *tasks[i]): i for i in order}
                for fut in as_completed(futures):
                    i = futures[fut]
                    try:
                        results[i] = fut.result()
                    except Exception as e:  # noqa: BLE001 - a dead worker is this file's failure, not the run's
                        d = parse_error(tasks[i][0], f"internal error: the worker linting this file failed: {e}")
                        d.code, d.name = "TL004", "internal-error"
                        results[i] = LintResult(tasks[i][0], None, [d])
                    bar.step(tasks[i][0])
        else:
            from tolk_lint.cache import Cache, lint_cached
            from tolk_lint.kernel_workers import using

            with using(jobs):  # few files: the kernels of each in up to `jobs` processes
                for i, (f, s, root) in enumerate(tasks):
                    results[i] = lint_cached(f, s, Cache(root) if root else None)[0]
                    bar.step(f)
    finally:
        bar.close()
    return sorted((results[i] for i in range(len(tasks))), key=lambda r: r.path)


def not_analysed(results: list[LintResult]) -> bool:
    """Whether some file (or kernel) could not be analysed."""
    return any(d.code in NOT_ANALYSED for r in results for d in r.diagnostics)


def exit_status(results: list[LintResult], exit_zero: bool = False) -> int:
    if not_analysed(results):
        return 2
    found = any(r.diagnostics for r in results)
    return 1 if found and not exit_zero else 0
