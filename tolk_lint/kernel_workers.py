"""The kernels of one file linted in worker processes.

A file nvcc writes for a Thrust, CUB or templated library holds tens of
kernels (``thrust_sort``: 19, a reduction sample: 32 instantiations), and
each kernel's lint is independent of the others': its own IR, its own
solver questions, its own findings. When the command line lints few files
(`batch.lint_files` lints more than `batch.PARALLEL_THRESHOLD` in worker
processes, one file each), the kernels of a large file are shared out
instead: the process that has opened the file (`frontends.ptx.stream`:
the declarations and device functions read once) forks `workers` copies
of itself, each reads, checks and lets go the kernels it is handed, smallest
first, and sends back what each gave (a `kernel_cache.ReadKernel` and
whether it may be kept), which the parent takes in file order exactly as
it takes a kernel its cache already holds. A Python file (and a PTX file
read whole) is lowered whole first; its kernels are then checked in the
workers the same way (`check_in_workers`). A kernel a worker could not
finish (a crash, a lost worker) is linted by the parent as if no worker
had run; one the budget stopped before it was read is one of those the
parent reports unread, in one TL005.

Each kernel starts a fresh Z3 context wherever it runs
(`engine.check_kernel`), so its findings are the same with workers and
without: the same codes, severities, lines and kernels, in the same order.
Which of several equally small witnesses a message shows may differ (threads
32 and 33, or 33 and 32), as it may already with what one process analysed
before; and the file's time budget is shared differently (the kernels run
side by side until its one deadline).

Forking is what makes it cheap (nothing is pickled but the results) and
is only done where ``fork`` is the platform's own (Linux); elsewhere, in
the language server and through the Python API (`workers` stays 1 unless
a caller sets it), the kernels are linted one after the other.

What it may import: `budget`, `kernel_cache`, `tolk_lint.ir` and the standard library.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
from collections.abc import Callable, Iterator

from tolk_lint import budget
from tolk_lint.ir.nodes import KernelOutline
from tolk_lint.kernel_cache import ReadKernel

MIN_LINES = 300  # the PTX kernels to lint must span this many lines (smaller files: a fork costs more)
MIN_INSTRUCTIONS = 150  # the same for kernels already lowered (a Python file's): their IR instructions

_workers = 1  # processes the kernels of one file may use (`using`)
_job: tuple | None = None  # what a forked worker runs: (its function, what it reads, check, the file's budget)


@contextlib.contextmanager
def using(n: int) -> Iterator[None]:
    """Lint the kernels of each file in up to ``n`` processes inside."""
    global _workers
    old, _workers = _workers, max(1, n)
    try:
        yield
    finally:
        _workers = old


def workers() -> int:
    return _workers if sys.platform.startswith("linux") else 1


def check_in_workers(kernels: list, check: Callable) -> dict[int, tuple[list, bool]]:
    """The findings of the lowered ``kernels`` (a whole module's: a Python
    file, or PTX read whole), checked in forked workers, by index, with
    whether each may be kept; ``check(kernel)`` as for `lint_in_workers`.
    Empty when there are too few workers or kernels to share."""
    todo = [i for i, k in enumerate(kernels) if k.blocks]
    sizes = {i: sum(len(b.instrs) for b in kernels[i].blocks) for i in todo}
    if min(workers(), len(todo)) < 2 or sum(sizes.values()) < MIN_INSTRUCTIONS:
        return {}
    return _share(sorted(todo, key=sizes.__getitem__), (_check_one, kernels, check, budget.current()))


def _check_one(i: int):
    _, kernels, check, outer = _job  # type: ignore[misc]
    if outer is not None and outer.spent():
        return None
    try:
        with budget.running(outer):
            return check(kernels[i])
    except BaseException:  # noqa: BLE001 - the parent checks it again, and reports what stops it
        return None


def _share(order: list[int], job: tuple) -> dict:
    """``job[0](i)`` for each ``i`` of ``order``, in forked workers (which
    find ``job`` in `_job`), by index; those that gave None left out."""
    global _job
    n = min(workers(), len(order))
    _job = job
    got: dict = {}
    try:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork")) as pool:
            chunk = max(1, len(order) // (n * 16))  # thousands of small kernels: fewer round trips
            for i, result in zip(order, pool.map(_run, order, chunksize=chunk)):
                if result is not None:
                    got[i] = result
    except Exception:  # noqa: BLE001 - a pool that cannot start or a lost worker: the parent lints what is left
        pass
    finally:
        _job = None
    return got


def _run(i: int):
    return _job[0](i)  # type: ignore[index]


def lint_in_workers(stream, entries: list[int], check: Callable) -> dict[int, tuple[ReadKernel, bool]]:
    """The lint of the entries ``entries`` (indices into ``stream.entries``)
    in forked workers, by index: what reading and checking each gave and
    whether it may be kept. ``check(kernel)`` is the parent's: it returns
    the findings and whether they may be kept. Empty when there are too
    few workers or lines to share, or the pool cannot be started; an index
    missing from it (one the budget stopped before it was read, one whose
    worker failed) is the caller's to lint, or to report unread (see the
    module docstring)."""
    lines = sum(stream.entries[i].end_line - stream.entries[i].line for i in entries)
    if min(workers(), len(entries)) < 2 or lines < MIN_LINES:
        return {}
    # smallest first: under the file's time budget, the many small kernels are
    # never left unread behind the few large ones that take most of it
    order = sorted(entries, key=lambda i: stream.entries[i].end - stream.entries[i].start)
    return _share(order, (_lint_one, stream, check, budget.current()))


def _lint_one(i: int) -> tuple[ReadKernel, bool] | None:
    """In a worker: the entry ``i`` read and checked, or None when it did
    not finish (the parent then lints it, and reports what stopped it)."""
    _, stream, check, outer = _job  # type: ignore[misc]
    if outer is not None and outer.spent():
        return None  # the parent reports it unread
    ft = stream.entries[i]
    try:
        with budget.running(outer):  # its deadline is the parent's: the monotonic clock is the machine's
            k = stream.read(ft)
            front_end = stream.front_end_of(ft)
            if k is None:
                return ReadKernel([], front_end, None), True
            findings, keep = check(k)
            outline = KernelOutline.of(k)
            k.release()
            return ReadKernel(findings, front_end, outline), keep
    except BaseException:  # noqa: BLE001 - the budget while reading, a crash: the parent's to lint or report
        return None
