"""The language server's reuse of Python kernels (`KernelCache.python_keys`):
a kernel whose text key is kept is not lowered again, what is reported is
exactly what a fresh lint reports, and the key sees everything the
kernel's findings depend on: the statements it reads from the module
(followed through aliases, wherever they are), and the project's modules
it imports from."""

from __future__ import annotations

import pytest
from test_engine_cache import NUMBA, full

from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import lint_text, parse
from tolk_lint.frontends.python import lower
from tolk_lint.kernel_cache import KernelCache, python_reach


@pytest.fixture
def lowered(monkeypatch):
    """The names of the functions the Python front end lowers, lint after lint."""
    seen: list[str] = []
    real = lower.lower_function

    def counted(ctx, fi, standalone_device=False):
        seen.append(fi.name)
        return real(ctx, fi, standalone_device)

    monkeypatch.setattr(lower, "lower_function", counted)
    return seen


def relint(cache: KernelCache, text: str, path: str) -> list[dict]:
    got = full(lint_text(text, path, DEFAULT_SETTINGS, kernel_cache=cache))
    assert got == full(lint_text(text, path, DEFAULT_SETTINGS))
    return got


def test_a_kept_kernel_is_not_lowered_again(lowered):
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    lowered.clear()
    edited = NUMBA.replace("if half(t) < 8:", "if half(t) < 4:")
    lint_text(edited, "k.py", DEFAULT_SETTINGS, kernel_cache=cache)
    # k2, the one edited; the device function `half` is lowered on its own each time (its own TL002s)
    assert sorted(lowered) == ["half", "k2"]
    assert (cache.hits, cache.misses) == (2, 4)


UNSUPPORTED = """\
from numba import cuda


@cuda.jit
def k1(x):
    t = cuda.threadIdx.x
    x[t] = some_unknown_call(t)


@cuda.jit
def k2(x):
    x[cuda.threadIdx.x] = 1.0
"""


def test_a_kept_kernel_keeps_what_reading_it_reported():
    cache = KernelCache()
    first = relint(cache, UNSUPPORTED, "k.py")
    assert [d["code"] for d in first if d["code"] == "TL002"] == ["TL002"]
    again = relint(cache, UNSUPPORTED.replace("= 1.0", "= 2.0"), "k.py")
    assert cache.hits == 1  # k1, with its TL002
    assert [d for d in again if d["code"] == "TL002"] == [d for d in first if d["code"] == "TL002"]


ALIASED = """\
from numba import cuda

@cuda.jit
def k1(x):
    x[cuda.threadIdx.x] = step(cuda.threadIdx.x)

@cuda.jit
def k2(x):
    x[cuda.threadIdx.x] = 1.0

step = later

x = 5

@cuda.jit(device=True)
def later(t):
    return t + 1
"""


def test_reach_follows_aliases_and_ignores_shadowed_names():
    reach = python_reach(parse(ALIASED, "k.py"))
    # k1 reads `step`, bound to `later` at line 11, defined down to line 17
    assert reach("k1") == 17
    # k2's `x` is its parameter, not the module's `x` at line 13
    assert reach("k2") == 9


def test_a_line_moving_an_inlined_alias_target_relints_the_kernel():
    cache = KernelCache()
    relint(cache, ALIASED, "k.py")
    moved = ALIASED.replace("step = later\n", "step = later\n\n")
    before = cache.hits
    relint(cache, moved, "k.py")
    assert cache.hits - before == 1  # k2 only: k1's findings may quote `later`'s lines


def test_an_edit_of_an_imported_module_relints_the_kernels(tmp_path):
    (tmp_path / "helpers.py").write_text(
        "from numba import cuda\n\n@cuda.jit(device=True)\ndef pick(t):\n    return t\n"
    )
    kernel = tmp_path / "kern.py"
    text = ("from numba import cuda, float32\nfrom helpers import pick\n\n"
            "# tolk: launch block=(64,1,1)\n@cuda.jit\ndef k(x):\n"
            "    s = cuda.shared.array(64, float32)\n    s[pick(cuda.threadIdx.x)] = 1.0\n"
            "    x[cuda.threadIdx.x] = s[cuda.threadIdx.x]\n")  # fmt: skip
    kernel.write_text(text)
    cache = KernelCache()
    clean = relint(cache, text, str(kernel))
    assert not [d for d in clean if d["code"] == "TL201"]
    (tmp_path / "helpers.py").write_text(
        "from numba import cuda\n\n@cuda.jit(device=True)\ndef pick(t):\n    return t // 2\n"
    )
    racy = relint(cache, text, str(kernel))
    assert cache.hits == 0
    assert [d for d in racy if d["code"] == "TL201"]


def test_an_edit_half_typed_keeps_the_kernels_for_the_next_one():
    """A syntax error (the file does not parse while a line is being typed)
    reports TL001 and keeps what the lint before it stored: the edit that
    completes the line lints only the kernel it changed."""
    cache = KernelCache()
    relint(cache, NUMBA, "k.py")
    broken = NUMBA.replace("if half(t) < 8:", "if half(t) < ")
    assert [d["code"] for d in relint(cache, broken, "k.py")] == ["TL001"]
    before = cache.hits
    relint(cache, NUMBA.replace("if half(t) < 8:", "if half(t) < 4:"), "k.py")
    assert cache.hits - before == 2  # k1 and k3; k2 is the one edited
