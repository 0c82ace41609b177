"""The language server's per-kernel reuse (`tolk_lint.kernel_cache`), in process.

PTX read kernel by kernel is keyed by each entry's text (`KernelCache.ptx_keys`):
an edit reads, lowers and analyses only the entries it changed (or moved,
or whose surroundings it changed), and the result is always the one an
uncached lint of the new text gives. A kernel whose analysis ran out of its
whole budget keeps its TL005 while it does not change; one stopped by a
cancel is analysed again.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from conftest import FIXTURES

from tolk_lint import budget, engine
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.frontends.ptx.stream import PtxStream
from tolk_lint.kernel_cache import KernelCache

LAUNCH_PTX = (FIXTURES / "ptx" / "launch" / "comment_launch.ptx").read_text()


def many_kernels(copies: int) -> str:
    """``copies`` renamed copies of a racy kernel and of kernels calling device functions."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from big_ptx import build

    texts = [(FIXTURES / "ptx" / "memory" / "shared_race_no_barrier.ptx").read_text(),
             (FIXTURES / "ptx" / "collectives" / "func_calls.ptx").read_text()]  # fmt: skip
    return build(texts, copies=copies)


def as_json(r) -> str:
    return json.dumps({"diagnostics": [d.to_json() for d in r.diagnostics],
                       "suppressed": [d.to_json() for d in r.suppressed],
                       "kernels": [(k.name, str(k.span)) for k in r.kernels]}, indent=1, sort_keys=True)  # fmt: skip


def lint(path: Path, text: str, cache: KernelCache | None = None, within=None):
    return engine.lint_text(text, str(path), DEFAULT_SETTINGS, kernel_cache=cache, within=within or budget.Budget())


@pytest.fixture
def reads(monkeypatch):
    """The names of the entries `PtxStream.read` parses, lint after lint."""
    seen: list[str] = []
    real = PtxStream.read

    def counted(self, ft):
        seen.append(ft.name)
        return real(self, ft)

    monkeypatch.setattr(PtxStream, "read", counted)
    return seen


def entry_lines(text: str) -> list[int]:
    return [i for i, ln in enumerate(text.splitlines()) if ".entry" in ln]


def edits(text: str) -> list[tuple[str, str]]:
    """Edits of ``text``, named: each kind of change the key must see."""
    lines = text.splitlines()
    entries = entry_lines(text)
    mid = entries[len(entries) // 2]
    body = next(i for i in range(mid, len(lines)) if lines[i].strip().startswith(("mov.", "add.", "ld.", "st.")))
    func = next((i for i, ln in enumerate(lines) if ".func" in ln and not ln.rstrip().endswith(";")), None)

    def with_line(i: int, new: str) -> str:
        return "\n".join(lines[:i] + [new] + lines[i:]) + "\n"

    def replaced(i: int, new: str) -> str:
        return "\n".join(lines[:i] + [new] + lines[i + 1 :]) + "\n"

    out = [
        ("a comment at the end", text + "// edit\n"),
        ("a trailing comment in the middle kernel", replaced(body, lines[body] + "  // typing")),
        ("a line inserted in the middle kernel", with_line(body, lines[body])),
        ("a comment line above the middle kernel", with_line(mid, "// a note")),
        ("a kernel renamed", text.replace(lines[mid].split("(")[0], lines[mid].split("(")[0] + "_renamed", 1)),
        ("the header", text.replace(".target sm_80", ".target sm_90", 1)),
    ]
    if func is not None:
        fbody = next(i for i in range(func, len(lines)) if lines[i].strip().startswith(("mov.", "add.", "ld.", "st.")))
        out.append(("a line inserted in a device function", with_line(fbody, lines[fbody])))
    return out


def test_an_unchanged_file_reads_no_kernel_again(tmp_path, reads):
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    first = lint(path, text, cache)
    n = len(entry_lines(text))
    assert len(reads) == n
    reads.clear()
    again = lint(path, text, cache)
    assert reads == [], "an entry whose text key is kept is not parsed"
    assert cache.hits == n
    assert as_json(again) == as_json(first) == as_json(lint(path, text))


@pytest.mark.parametrize("index", range(7))
def test_every_edit_gives_what_an_uncached_lint_gives(tmp_path, reads, index):
    text = many_kernels(2)  # 8 entries: kernels above, below and in the middle of each edit
    cases = edits(text)
    if index >= len(cases):
        pytest.skip("no device function with a body in the generated file")
    name, new = cases[index]
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    lint(path, text, cache)
    reads.clear()
    got = lint(path, new, cache)
    assert as_json(got) == as_json(lint(path, new)), name


def test_an_edit_inside_one_kernel_reads_only_that_kernel(tmp_path, reads):
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    lint(path, text, cache)
    name, new = edits(text)[1]  # a trailing comment: no line moves
    reads.clear()
    lint(path, new, cache)
    assert len(reads) == 1, reads
    reads.clear()
    lint(path, text + "// edit\n", cache)  # below every kernel: nothing to read but the one changed back
    assert len(reads) == 1, reads


def test_a_line_inserted_rereads_the_kernels_below_it_only(tmp_path, reads):
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    lint(path, text, cache)
    lines = text.splitlines()
    entries = entry_lines(text)
    last = entries[-1]
    new = "\n".join(lines[:last] + ["// a note"] + lines[last:]) + "\n"
    reads.clear()
    lint(path, new, cache)
    names = [ln.split(".entry")[1].split("(")[0].strip() for ln in lines if ".entry" in ln]
    # only the last entry moved; the ones calling device functions below it
    # (their IR reaches those lines) are read again too
    assert names[-1] in reads and set(reads) < set(names), reads


def test_a_launch_comment_above_an_entry_is_part_of_its_key(tmp_path):
    """64 threads store one word each into 32 words: out of bounds (TL202);
    32 threads do not. The comment is the only change."""
    path = tmp_path / "comment_launch.ptx"
    cache = KernelCache()
    assert [d.code for d in lint(path, LAUNCH_PTX, cache).diagnostics] == ["TL202"]
    fewer = LAUNCH_PTX.replace("block=(64,1,1)", "block=(32,1,1)")
    assert [d.code for d in lint(path, fewer, cache).diagnostics] == []
    assert [d.code for d in lint(path, LAUNCH_PTX, cache).diagnostics] == ["TL202"]


def test_the_cuda_source_is_part_of_the_key(tmp_path, reads):
    """The launch shape comes from the `.cu` the `.file` table names: a
    change to it is a miss, though the PTX did not change."""
    cu = tmp_path / "k.cu"
    cu.write_text("// tolk: launch block=(64,1,1)\n__global__ void own_word() {}\n")
    text = LAUNCH_PTX.replace("// tolk: launch block=(64,1,1)\n", "") + '.file 1 "k.cu"\n'
    path = tmp_path / "k.ptx"
    cache = KernelCache()
    before = lint(path, text, cache)
    reads.clear()
    assert as_json(lint(path, text, cache)) == as_json(before) and reads == []
    cu.write_text("// tolk: launch block=(32,1,1)\n__global__ void own_word() {}\n")
    after = lint(path, text, cache)
    assert reads == ["own_word"]
    assert as_json(after) == as_json(lint(path, text))



def test_a_kernel_out_of_its_whole_budget_keeps_its_stop(tmp_path):
    """A kernel whose own time ran out while it had all of it would stop
    again: its TL005 is kept until it changes. A stop by a cancel is not."""
    text = (FIXTURES / "ptx" / "memory" / "shared_race_no_barrier.ptx").read_text()
    path = tmp_path / "k.ptx"
    tiny = DEFAULT_SETTINGS.with_(kernel_time_budget=1e-9)
    cache = KernelCache()
    got = engine.lint_text(text, str(path), tiny, kernel_cache=cache, within=budget.Budget(30.0))
    assert "TL005" in [d.code for d in got.diagnostics]
    assert cache.entries[str(path)], "the kernel's own budget ran out: kept"
    cache.forget_stops(str(path))
    assert not cache.entries[str(path)], "a save retries it"
    got = engine.lint_text(text, str(path), tiny, kernel_cache=cache, within=budget.Budget(30.0))
    reason = next(d.data["reason"] for d in got.diagnostics if d.code == "TL005")
    cache.forget_stops(str(path), "the language server's time budget of 5 s ran out")
    assert cache.entries[str(path)], "a stop for another reason (a longer budget) is kept"
    cache.forget_stops(str(path), reason)
    assert not cache.entries[str(path)], "a stop for that reason is retried"
    cancelled = threading.Event()
    cancelled.set()
    cache = KernelCache()
    got = engine.lint_text(text, str(path), DEFAULT_SETTINGS, kernel_cache=cache,
                           within=budget.Budget(30.0, cancel=cancelled))  # fmt: skip
    assert "TL005" in [d.code for d in got.diagnostics]
    assert not cache.entries.get(str(path)), "a cancelled kernel is analysed again"


def test_a_file_budget_spent_by_earlier_kernels_is_not_kept(monkeypatch):
    """`keepable`: a TL005 counts as the kernel's own only when it had its whole budget."""
    from tolk_lint.diagnostics import Diagnostic, Severity
    from tolk_lint.ir.nodes import Span

    def stop(reason: str) -> Diagnostic:
        return Diagnostic("TL005", Severity.ERROR, "stopped", Span("k.ptx", 1, 1), data={"reason": reason})

    ran_out = stop("the kernel's time budget of 1 s ran out")
    assert engine.keepable([ran_out], whole_budget=True)
    assert not engine.keepable([ran_out], whole_budget=False)
    assert not engine.keepable([stop("cancelled")], whole_budget=True)
    assert not engine.keepable([stop("the memory budget of 10 MiB ran out (12 MiB in use)")], whole_budget=True)
    assert not engine.keepable([Diagnostic("TL004", Severity.ERROR, "crash", Span("k.ptx", 1, 1))], True)
    with budget.running(budget.Budget(10.0)):
        assert engine._whole_budget(DEFAULT_SETTINGS)
    spent = budget.Budget(10.0)
    spent.deadline -= 6.0  # more than half of it gone to the kernels before
    with budget.running(spent):
        assert not engine._whole_budget(DEFAULT_SETTINGS)
        assert engine._whole_budget(DEFAULT_SETTINGS.with_(kernel_time_budget=1.0))


def test_progress_reports_the_kernels_linted_so_far(tmp_path):
    """What a lint hands `progress` after each kernel but the last grows
    kernel by kernel, holds no TL003, and is part of what the lint reports."""

    def where(diags) -> list[tuple[str, int]]:
        return sorted((d.code, d.span.line) for d in diags)

    text = many_kernels(3)
    for path, src, kernels in ((tmp_path / "many.ptx", text, len(entry_lines(text))),
                               (tmp_path / "k.py", NUMBA_TWO, 2)):  # fmt: skip
        steps: list = []
        got = engine.lint_text(src, str(path), DEFAULT_SETTINGS, within=budget.Budget(),
                               progress=lambda found: steps.append(where(found())))  # fmt: skip
        assert len(steps) == kernels - 1
        final = where(d for d in got.diagnostics if d.code != "TL003")
        assert all(set(a) <= set(b) for a, b in zip(steps, steps[1:] + [final])), steps
        assert steps[0] != final, "the first step has the first kernel's findings only"


NUMBA_TWO = """from numba import cuda


@cuda.jit
def first(a):
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()


@cuda.jit
def second(a):  # tolk: noqa: TL101
    if cuda.threadIdx.x < 16:
        cuda.syncthreads()
"""


def test_an_edit_half_typed_keeps_the_entries(tmp_path, reads):
    """A PTX file that does not parse (TL001) leaves the kept entries: the
    edit that completes it reads only the entry it changed."""
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    lint(path, text, cache)
    name, new = edits(text)[1]  # a trailing comment in the middle kernel
    broken = new.replace("  // typing", "  %%%")
    assert [d.code for d in lint(path, broken, cache).diagnostics] == ["TL001"]
    reads.clear()
    assert as_json(lint(path, new, cache)) == as_json(lint(path, new))
    assert len(reads) == 1 + len(entry_lines(new)), reads  # the edited entry; then every one, uncached
