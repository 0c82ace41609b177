"""Per-kernel reuse (`tolk_lint.engine.KernelCache`, what the language server
uses between edits): after an edit, the kernels it did not touch reuse their
findings, and what is reported is exactly what a fresh lint reports.

The comparison leaves the witness out (see `full`)."""

from __future__ import annotations

import re

import pytest

from tolk_lint.cache import diagnostic_to_json
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import KernelCache, kernel_units, lint_text, parse

NUMBA = """\
from numba import cuda, float32

N = 64


@cuda.jit(device=True)
def half(t):
    return t // 2


# tolk: launch block=(64,1,1)
@cuda.jit
def k1(x):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
    s[t] = x[t]


# tolk: launch block=(64,1,1)
@cuda.jit
def k2(x):
    s = cuda.shared.array(N, float32)
    t = cuda.threadIdx.x
    if half(t) < 8:
        cuda.syncthreads()
    s[t] = x[t]


# tolk: launch block=(32,1,1)
@cuda.jit
def k3(x):
    t = cuda.threadIdx.x
    if t < 4:
        cuda.syncthreads()
    x[t] = 0.0
# the end
"""

PTX_ENTRY = """\
.visible .entry {name}(.param .u64 p)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, {limit};
    @%p1 bra DONE;
    bar.sync 0;
DONE:
    ret;
}}
"""
PTX = (
    ".version 8.0\n.target sm_80\n.address_size 64\n\n"
    + PTX_ENTRY.format(name="e1", limit=16)
    + "\n"
    + PTX_ENTRY.format(name="e2", limit=8)
    + "// the end\n"
)


def full(result) -> list[dict]:
    """Everything a diagnostic holds, origin chain and related spans included,
    but the witness: the threads Z3 picks for it can differ between two lints
    in one process, cache or not."""
    return [_plain(d) for d in result.diagnostics + result.suppressed]


def _plain(d) -> dict:
    v = diagnostic_to_json(d)
    if v.pop("witness"):
        v["message"] = re.sub(r"for example [^;]*", "for example <witness>", v["message"])
    return v


def relint(
    cache: KernelCache, text: str, path: str, settings=DEFAULT_SETTINGS
) -> tuple[list[dict], int, int]:
    """Lint through ``cache``: (findings, hits, misses) of this lint, after
    checking the findings against a fresh lint without the cache."""
    h0, m0 = cache.hits, cache.misses
    got = full(lint_text(text, path, settings, kernel_cache=cache))
    assert got == full(lint_text(text, path, settings))
    return got, cache.hits - h0, cache.misses - m0


def test_units_cover_every_kernel():
    m = parse(NUMBA, "k.py")
    units, context = kernel_units(m)
    assert sorted(units) == ["k1", "k2", "k3"]
    assert units["k1"][0] == 11  # the launch comment above the decorator belongs to k1
    ctx = dict(context)
    assert ctx[3] == "N = 64" and ctx[13] == "def k1(x):"  # code and the def lines around the kernels
    assert 16 not in ctx and "# the end" not in ctx.values()  # kernel bodies; a comment-only line


def test_an_edit_in_one_kernel_reuses_the_others():
    cache = KernelCache()
    first, hits, misses = relint(cache, NUMBA, "k.py")
    assert (hits, misses) == (0, 3)
    assert {d["code"] for d in first} >= {"TL101"}
    # same number of lines: only k2 is analysed again
    edited = NUMBA.replace("if half(t) < 8:", "if half(t) < 4:")
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (2, 1)
    # an edit outside any code (a comment line) reuses everything
    _, hits, misses = relint(cache, edited.replace("# the end", "# the end, edited"), "k.py")
    assert (hits, misses) == (3, 0)


def test_lines_added_in_the_last_kernel_keep_the_ones_above():
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    edited = NUMBA.replace("    x[t] = 0.0\n", "    x[t] = 0.0\n    x[t + 1] = 1.0\n")
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (2, 1)


def test_lines_added_in_a_kernel_keep_the_ones_above():
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    edited = NUMBA.replace("    if half(t) < 8:\n", "    if half(t) < 8:\n\n")  # in k2
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (1, 2)  # k1 reused; k2 edited, k3 moved


LATE = """\
from numba import cuda


# tolk: launch block=(64,1,1)
@cuda.jit
def k1(x):
    t = cuda.threadIdx.x
    if late(t) < 16:
        cuda.syncthreads()
    x[t] = 0.0


# tolk: launch block=(64,1,1)
@cuda.jit
def k2(x):
    t = cuda.threadIdx.x
    x[t] = 1.0


@cuda.jit(device=True)
def late(t):
    return t + 1
"""


def test_a_kernel_inlining_code_below_an_edit_is_linted_again():
    """k1 inlines `late`, below k2: lines added in k2 move what k1's findings
    point at, so k1 must not be reused."""
    cache = KernelCache()
    first, _, _ = relint(cache, LATE, "k.py")
    assert any(r["span"] and r["span"][1] == 22 for d in first for r in d["related"])  # in `late`
    edited = LATE.replace("    x[t] = 1.0\n", "\n    x[t] = 1.0\n")  # in k2
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (0, 2)
    # below k2, a line moves `late` again: k2 reaches no further than its end, and is reused
    _, hits, misses = relint(cache, edited.replace("    x[t] = 1.0\n", "    x[t] = 1.0\n\n"), "k.py")
    assert (hits, misses) == (1, 1)


def test_lines_added_above_move_the_kernels_below():
    """k2 and k3 move down a line: their findings (lines, and line numbers in
    messages) must not come from the cache."""
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    edited = NUMBA.replace(
        "    t = cuda.threadIdx.x\n    if t < 16:", "    t = cuda.threadIdx.x\n\n    if t < 16:"
    )
    got, hits, misses = relint(cache, edited, "k.py")
    assert hits == 0 and misses == 3
    assert any(d["code"] == "TL101" and d["span"][1] == 18 for d in got)


@pytest.mark.parametrize(
    "old, new",
    [
        ("N = 64", "N = 32"),  # a module constant every kernel reads
        ("return t // 2", "return t // 4"),  # a device function k2 inlines
    ],
)
def test_an_edit_around_the_kernels_relints_them_all(old, new):
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    _, hits, misses = relint(cache, NUMBA.replace(old, new), "k.py")
    assert (hits, misses) == (0, 3)


def test_a_launch_comment_belongs_to_its_kernel():
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    edited = NUMBA.replace(
        "# tolk: launch block=(64,1,1)\n@cuda.jit\ndef k2", "# tolk: launch block=(32,1,1)\n@cuda.jit\ndef k2"
    )
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (2, 1)


def test_settings_path_and_noqa():
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    # other settings or another path: nothing is reused
    _, hits, _ = relint(cache, NUMBA, "k.py", DEFAULT_SETTINGS.with_(block=(128, 1, 1)))
    assert hits == 0
    _, hits, _ = relint(cache, NUMBA, "other.py")
    assert hits == 0
    relint(cache, NUMBA, "k.py")
    # a noqa comment is applied after the cache, on the whole file
    silenced = NUMBA.replace("    if t < 4:\n        cuda.syncthreads()",
                             "    if t < 4:\n        cuda.syncthreads()  # tolk: noqa: TL101")  # fmt: skip
    _, hits, misses = relint(cache, silenced, "k.py")
    assert (hits, misses) == (2, 1)


def test_ptx_entries():
    cache = KernelCache()
    _, hits, misses = relint(cache, PTX, "k.ptx")
    assert (hits, misses) == (0, 2)
    _, hits, misses = relint(cache, PTX.replace("// the end", "// edited"), "k.ptx")
    assert (hits, misses) == (2, 0)
    second = PTX.replace("%r1, 8;", "%r1, 4;")
    assert second != PTX
    _, hits, misses = relint(cache, second, "k.ptx")
    assert (hits, misses) == (1, 1)
    # the header is around every entry
    _, hits, misses = relint(cache, second.replace(".target sm_80", ".target sm_90"), "k.ptx")
    assert (hits, misses) == (0, 2)


def test_the_language_server_reuses_unchanged_kernels():
    pytest.importorskip("pygls", reason="the language server needs the `lsp` extra")
    from tolk_lint.lsp.server import TolkLanguageServer

    server = TolkLanguageServer()
    uri = "untitled:kernels"
    server.lint_now(uri, NUMBA, 1, "python")
    edited = NUMBA.replace("if half(t) < 8:", "if half(t) < 4:")
    again = server.lint_now(uri, edited, 2, "python")
    assert (server.kernel_cache.hits, server.kernel_cache.misses) == (2, 4)
    fresh = TolkLanguageServer().lint_now(uri, edited, 2, "python")
    assert [_plain(d) for d in again.diagnostics] == [_plain(d) for d in fresh.diagnostics]
    assert [(d.code, d.range) for d in again.lsp] == [(d.code, d.range) for d in fresh.lsp] != []


def test_a_kernel_naming_another_is_never_reused():
    """k3 calls k1 (inlined, as numba-cuda compiles it there): what the front end
    learns of k1's parameters flows into k3, so k3 is linted every time."""
    calls = NUMBA.replace("    x[t] = 0.0\n", "    x[t] = 0.0\n    k1(x)\n")
    units, _ = kernel_units(parse(calls, "k.py"))
    assert sorted(units) == ["k1", "k2"]
    cache = KernelCache()
    relint(cache, calls, "k.py")
    k2 = "\n\n\n# tolk: launch block=(64,1,1)\n@cuda.jit\ndef k2"
    edited = calls.replace("s[t] = x[t]" + k2, "s[t] = x[t] + 1" + k2)  # the end of k1
    assert edited != calls
    _, hits, misses = relint(cache, edited, "k.py")
    assert (hits, misses) == (1, 1)  # k2 reused, k1 linted again, k3 never cached


def test_lint_raises_the_collector_thresholds_only_while_it_runs():
    """`engine.fewer_collections`: larger collection steps during a lint (the
    IR's many small cyclic objects), the caller's thresholds back afterwards,
    even when the linted text does not parse."""
    import gc

    from tolk_lint import engine

    seen = []
    before = gc.get_threshold()
    real_parse = engine.parse

    def spy(*a, **k):
        seen.append(gc.get_threshold())
        return real_parse(*a, **k)

    engine.parse = spy
    try:
        lint_text(NUMBA, "k.py", DEFAULT_SETTINGS)
        lint_text("\x00\x01 not ptx", "k.ptx", DEFAULT_SETTINGS)
    finally:
        engine.parse = real_parse
    assert len(seen) == 2
    assert all(t[0] >= engine.LINT_GC_THRESHOLD[0] for t in seen)
    assert gc.get_threshold() == before


def test_collector_thresholds_survive_nested_and_overlapping_lints():
    """Two lints that overlap (nested here; threads in the language server)
    leave the caller's thresholds as they were, whatever order they end in."""
    import gc

    from tolk_lint.engine import LINT_GC_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    outer, inner = fewer_collections(), fewer_collections()
    outer.__enter__()
    inner.__enter__()
    assert gc.get_threshold()[0] >= LINT_GC_THRESHOLD[0]
    outer.__exit__(None, None, None)  # the first to start ends first
    assert gc.get_threshold()[0] >= LINT_GC_THRESHOLD[0]  # the other still runs
    inner.__exit__(None, None, None)
    assert gc.get_threshold() == before
