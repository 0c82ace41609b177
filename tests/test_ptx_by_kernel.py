"""PTX linted kernel by kernel (`tolk_lint.frontends.ptx.stream`, driven by
`tolk_lint.engine._check_by_kernel`) finds what the whole-module path
finds, and holds one kernel's IR at a time.

The whole-module path (`parse` a `Module` of every kernel, `prepare`,
`check_module`) is what the lint did before; it is still what `parse`,
``--dump-ir`` and the other commands use, and the lint falls back to it
for a file that cannot be read a piece at a time. Here it is forced by
making `_check_by_kernel` decline.

The lints run without a time budget (``within=Budget()``): the witness
search gives Z3 a timeout from the time left, and a timeout can change
which model Z3 returns, so two lints compare only when neither has one.
"""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from pathlib import Path

import pytest
from conftest import ACCEPTANCE, FIXTURES

from tolk_lint import budget, engine
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.frontends.ptx import parse_ptx, parse_tree
from tolk_lint.frontends.ptx.parser import parse_slice
from tolk_lint.frontends.ptx.source import strip_comments
from tolk_lint.frontends.ptx.split import find_functions
from tolk_lint.frontends.ptx.stream import NotStreamable, open_ptx
from tolk_lint.ir.printer import dump_kernel
from tolk_lint.kernel_cache import KernelCache
from tolk_lint.testing import parse_expectations, settings_from_flags

PTX_FIXTURES = sorted((FIXTURES / "ptx").rglob("*.ptx"))
ACCEPTANCE_PTX = sorted((ACCEPTANCE / "cuda").glob("*.ptx")) if (ACCEPTANCE / "cuda").is_dir() else []
CUDA_SOURCES = [FIXTURES / "cuda" / "memory" / name for name in (
    "tree_reduction_missing_barrier.cu", "cpasync_wrong_wait_count.cu", "warp_reduction_syncwarp.cu",
    "transpose_unpadded_conflict.cu")]  # fmt: skip


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES) else p.name


def settings_for(path: Path):
    text = path.read_text()
    try:
        flags = list(parse_expectations(text, "ptx").flags)
    except Exception:  # noqa: BLE001 - a file with no expectations: the defaults
        flags = []
    return settings_from_flags(flags)


def lint(
    path: Path, text: str | None = None, whole: bool = False, settings=None, monkeypatch=None, cache=None
):
    """``engine.lint_text``, kernel by kernel or (``whole``) the whole module at once."""
    text = path.read_text() if text is None else text
    settings = settings or settings_for(path)
    if whole:
        assert monkeypatch is not None
        with monkeypatch.context() as m:
            m.setattr(engine, "_check_by_kernel", lambda *a, **k: None)
            return engine.lint_text(text, str(path), settings, kernel_cache=cache, within=budget.Budget())
    return engine.lint_text(text, str(path), settings, kernel_cache=cache, within=budget.Budget())


def as_json(r) -> str:
    return json.dumps({"diagnostics": [d.to_json() for d in r.diagnostics],
                       "suppressed": [d.to_json() for d in r.suppressed],
                       "kernels": [(k.name, str(k.span)) for k in r.kernels]}, indent=1, sort_keys=True)  # fmt: skip


def read_by_pieces(text: str) -> list:
    """The items of ``text`` as the kernel-by-kernel reading parses them: each
    function and each stretch between two alone."""
    clean = strip_comments(text)
    items: list = []
    pos, line, column = 0, 1, 1
    for f in find_functions(clean):
        items += parse_slice(clean, pos, f.start, line, column)
        items += parse_slice(clean, f.start, f.end, f.line, f.column)
        pos, line, column = f.end, f.end_line, f.end_column
    return items + parse_slice(clean, pos, len(clean), line, column)


# -- the front end: the same items, the same kernels ----------------------------------------


@pytest.mark.parametrize("path", PTX_FIXTURES + ACCEPTANCE_PTX, ids=_id)
def test_the_pieces_parse_to_the_whole_files_items(path):
    text = path.read_text()
    assert repr(read_by_pieces(text)) == repr(parse_tree(text).items)


@pytest.mark.parametrize("path", PTX_FIXTURES + ACCEPTANCE_PTX, ids=_id)
def test_each_kernel_is_the_one_the_whole_module_has(path):
    text = path.read_text()
    whole = parse_ptx(text, str(path))
    stream = open_ptx(text, str(path))
    got = [dump_kernel(k, with_locations=True) for k in stream.kernels()]
    assert got == [dump_kernel(k, with_locations=True) for k in whole.kernels]
    assert [(o.name, o.span) for o in stream.outline] == [(k.name, k.span) for k in whole.kernels]
    module = stream.finish()
    assert [(d.code, d.span, d.message) for d in module.diagnostics] == [
        (d.code, d.span, d.message) for d in whole.diagnostics]  # fmt: skip
    assert module.files == whole.files and module.target == whole.target


# -- the lint: the same findings ---------------------------------------------------------


@pytest.mark.parametrize("path", PTX_FIXTURES, ids=_id)
def test_the_fixtures_lint_the_same_both_ways(path, monkeypatch):
    assert as_json(lint(path)) == as_json(lint(path, whole=True, monkeypatch=monkeypatch))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("src", CUDA_SOURCES, ids=lambda p: p.name)
def test_nvcc_output_lints_the_same_both_ways(src, monkeypatch, tmp_path):
    from tolk_lint.testing import compile_cuda

    ptx = compile_cuda(src, out_dir=str(tmp_path))
    s = DEFAULT_SETTINGS
    assert as_json(lint(ptx, settings=s)) == as_json(
        lint(ptx, whole=True, settings=s, monkeypatch=monkeypatch)
    )


def many_kernels(copies: int) -> str:
    """One module of ``copies`` renamed copies of the functions of two
    fixtures (one of them with device functions that its kernels call)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from big_ptx import build

    texts = [(FIXTURES / "ptx" / "memory" / "shared_race_no_barrier.ptx").read_text(),
             (FIXTURES / "ptx" / "collectives" / "func_calls.ptx").read_text()]  # fmt: skip
    return build(texts, copies=copies)


def test_a_file_of_many_kernels_lints_the_same_both_ways(monkeypatch, tmp_path):
    text = many_kernels(6)
    path = tmp_path / "many.ptx"
    path.write_text(text)
    streamed = lint(path, text, settings=DEFAULT_SETTINGS)
    assert len(streamed.kernels) >= 6
    assert as_json(streamed) == as_json(
        lint(path, text, whole=True, settings=DEFAULT_SETTINGS, monkeypatch=monkeypatch)
    )


def test_a_syntax_error_in_the_last_kernel_means_no_kernel_is_analysed(monkeypatch, tmp_path):
    text = many_kernels(4)
    cut = text.rindex("ret;")
    broken = text[:cut] + "ret %%;" + text[cut + 4 :]
    path = tmp_path / "broken.ptx"
    got = lint(path, broken, settings=DEFAULT_SETTINGS)
    assert [d.code for d in got.diagnostics] == ["TL001"] and got.kernels == []
    assert as_json(got) == as_json(
        lint(path, broken, whole=True, settings=DEFAULT_SETTINGS, monkeypatch=monkeypatch)
    )


@pytest.mark.parametrize("text", [
    ".version 8.0\n.target sm_80\n.visible .entry k() {\n  ret;\n}\n}\n",  # a brace that closes nothing
    ".version 8.0\n.target sm_80\n.visible .entry k() {\n  ret;\n",  # a body never closed
    ".target sm_80\n.visible .entry k() {\n  ret;\n}\n",  # no .version
    "",
])  # fmt: skip
def test_what_does_not_split_is_read_whole(text, monkeypatch, tmp_path):
    path = tmp_path / "k.ptx"
    with pytest.raises(NotStreamable):
        open_ptx(text, str(path))
    assert as_json(lint(path, text, settings=DEFAULT_SETTINGS)) == as_json(
        lint(path, text, whole=True, settings=DEFAULT_SETTINGS, monkeypatch=monkeypatch))  # fmt: skip


# -- one kernel's IR at a time -------------------------------------------------------------


def test_one_kernel_in_memory_at_a_time(monkeypatch, tmp_path):
    """Each kernel the rules see is the only one alive: the ones before it
    were let go (their IR with them: every instruction knows its block, and
    every block its kernel), and the result holds none."""
    text = many_kernels(3)
    path = tmp_path / "many.ptx"
    seen: list[weakref.ref] = []
    alive_at_each: list[int] = []
    real = engine.check_kernel

    def check_kernel(module, k, settings, rules):
        gc.collect()
        alive_at_each.append(sum(r() is not None for r in seen))
        seen.append(weakref.ref(k))
        return real(module, k, settings, rules)

    monkeypatch.setattr(engine, "check_kernel", check_kernel)
    result = lint(path, text, settings=DEFAULT_SETTINGS)
    gc.collect()
    assert len(seen) == 12 and alive_at_each == [0] * len(seen)
    assert not any(r() is not None for r in seen)
    assert result.module is not None and not result.module.kernels and not result.module.functions
    assert [k.name for k in result.kernels] == [o.name for o in open_ptx(text, str(path)).outline]


def test_a_budget_that_runs_out_between_kernels_keeps_what_was_found(monkeypatch, tmp_path):
    """The budget runs out while the third kernel is read: the findings of
    the two before it stay, and one TL005 says where reading stopped."""
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    outline = open_ptx(text, str(path)).outline
    third = outline[2]
    checked = []
    real_check, real_check_kernel = budget.check, engine.check_kernel

    def check(what, *args):
        if len(checked) == 2 and what.startswith("parsing the file"):
            raise budget.BudgetExceeded(what % args, "the test's budget ran out")
        real_check(what, *args)

    def check_kernel(module, k, settings, rules):
        found = real_check_kernel(module, k, settings, rules)
        checked.append(k.name)
        return found

    monkeypatch.setattr(budget, "check", check)
    monkeypatch.setattr(engine, "check_kernel", check_kernel)
    got = lint(path, text, settings=DEFAULT_SETTINGS)
    stops = [d for d in got.diagnostics if d.code == "TL005"]
    assert [k.name for k in got.kernels] == [o.name for o in outline[:2]]
    assert len(stops) == 1 and stops[0].span.line == third.span.line, stops
    assert (
        f"the kernels from `{third.name}` (line {third.span.line}) on were not analysed" in stops[0].message
    )
    assert any(d.code == "TL201" and d.kernel == outline[0].name for d in got.diagnostics)


# -- the language server's cache ---------------------------------------------------------


def test_a_cache_filled_by_the_whole_module_path_changes_no_result(monkeypatch, tmp_path):
    """A document linted whole (its IR keys) and then kernel by kernel (its
    text keys, `KernelCache.ptx_keys`) gets from the second lint what an
    uncached lint gives; a second kernel-by-kernel lint reuses every kernel."""
    text = many_kernels(4)
    path = tmp_path / "many.ptx"
    cache = KernelCache()
    lint(path, text, whole=True, settings=DEFAULT_SETTINGS, monkeypatch=monkeypatch, cache=cache)
    assert cache.hits == 0 and cache.misses >= 4
    again = lint(path, text, settings=DEFAULT_SETTINGS, cache=cache)
    assert as_json(again) == as_json(lint(path, text, settings=DEFAULT_SETTINGS))
    hits = cache.hits
    assert as_json(lint(path, text, settings=DEFAULT_SETTINGS, cache=cache)) == as_json(again)
    assert cache.hits - hits == len(again.kernels)


def test_a_released_kernel_is_freed_without_the_cyclic_collector():
    """`Kernel.release` cuts the IR's cycles (instruction and block, value
    and definition, block and kernel): reference counting alone frees the
    kernel and its blocks' instructions. (What is left for the collector:
    the calls the inliner replaced, cut out of their blocks before.)"""
    from tolk_lint.ir.nodes import Instr
    from tolk_lint.ir.opcodes import Opcode

    text = (FIXTURES / "ptx" / "collectives" / "func_calls.ptx").read_text()
    gc.collect()
    old = {id(o) for o in gc.get_objects() if isinstance(o, Instr)}
    gc.disable()
    try:
        module = parse_ptx(text, "k.ptx")
        kernels = [weakref.ref(k) for k in module.all_kernels()]
        assert sum(isinstance(o, Instr) and id(o) not in old for o in gc.get_objects()) > 100
        for k in module.all_kernels():
            k.release()
        del module, k
        assert all(r() is None for r in kernels)
        left = [o for o in gc.get_objects() if isinstance(o, Instr) and id(o) not in old]
        assert left and all(
            o.op is Opcode.CALL and o not in (o.block.instrs if o.block else []) for o in left
        )
    finally:
        gc.enable()
