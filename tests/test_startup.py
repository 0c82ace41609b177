"""Start-up: what a process imports before and while it lints a small file,
the PTX grammar's cache, and the budget credit for imports made inside a
lint.

A small file's lint is mostly the interpreter starting and importing (see
bench/bench_startup.py), so: ``import tolk_lint.cli`` and the rule catalog
import no analysis, lark, Z3 or numpy; a file whose kernels ask the solver
nothing never imports Z3, and numpy, lark and libcst are imported only for
what needs them. The imports tested here run in a fresh interpreter each,
since this process has imported everything long ago.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, REPO
from test_bad_input import SMALL_PTX

from tolk_lint import budget

HEAVY = ("z3", "numpy", "lark", "libcst", "concurrent.futures.process")

SMALL_NUMBA = '''\
from numba import cuda


@cuda.jit
def scale(x, n):
    i = cuda.grid(1)
    if i < n:
        x[i] = 2.0 * x[i]
'''


def fresh_modules(code: str, env: dict | None = None) -> dict:
    """Run ``code`` in a new interpreter; what it leaves in ``OUT`` and the
    names of the modules it imported, as ``{"out": ..., "modules": [...]}``."""
    script = (
        "import sys\nOUT = None\n" + code +
        "\nMODULES = sorted(sys.modules)\nimport json\nprint(json.dumps({'out': OUT, 'modules': MODULES}))\n"
    )  # fmt: skip
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO,
                       env={**os.environ, **(env or {})})  # fmt: skip
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def lint_in_fresh_process(path, *flags: str, env: dict | None = None) -> dict:
    """``tolk-lint check --no-cache FLAGS PATH`` through the CLI's ``main``
    in a new interpreter: its exit status (``out``) and modules."""
    code = (
        "from tolk_lint.cli import main\n"
        "try:\n"
        f"    main(['check', '--no-cache', '-q', *{list(flags)!r}, {str(path)!r}])\n"
        "except SystemExit as e:\n"
        "    OUT = e.code\n"
    )  # fmt: skip
    return fresh_modules(code, env)


def analyses(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith("tolk_lint.analysis")]


# -- what is imported -------------------------------------------------------------------------


def test_importing_the_cli_imports_nothing_heavy():
    got = fresh_modules("import tolk_lint.cli")["modules"]
    assert not set(HEAVY) & set(got), set(HEAVY) & set(got)
    assert not analyses(got), analyses(got)
    assert not [m for m in got if m.startswith(("tolk_lint.rules", "tolk_lint.frontends"))]
    assert "tomllib" not in got and "json" not in got  # read only when a configuration is


def test_the_rule_catalog_imports_no_analysis():
    """Every rule module is imported, and none of the analyses they run."""
    got = fresh_modules(
        "from tolk_lint.catalog import all_rules\nOUT = [r.code for r in all_rules()]"
    )  # fmt: skip
    assert "TL101" in got["out"] and "TL201" in got["out"] and "TL301" in got["out"]
    assert not analyses(got["modules"]), analyses(got["modules"])
    assert not set(HEAVY) & set(got["modules"])


def test_a_ptx_file_that_needs_no_solver_loads_no_z3(tmp_path):
    f = tmp_path / "scale.ptx"
    f.write_text(SMALL_PTX)
    for flags in (("--select", "TL0,TL1"), ()):  # the engine's and the uniformity rules; every rule
        got = lint_in_fresh_process(f, *flags)
        assert got["out"] == 0, got["out"]
        mods = got["modules"]
        assert "z3" not in mods and "numpy" not in mods and "libcst" not in mods, flags
        assert "lark" in mods  # the PTX front end's
    tl1 = lint_in_fresh_process(f, "--select", "TL1")["modules"]
    assert "tolk_lint.analysis.placements" in tl1  # the uniformity rules' analysis ...
    for unused in ("tolk_lint.analysis.memory", "tolk_lint.analysis.stage"):  # ... and not the others'
        assert unused not in tl1, unused


def test_a_numba_file_that_needs_no_solver_loads_none_of_them(tmp_path):
    f = tmp_path / "scale.py"
    f.write_text(SMALL_NUMBA)
    got = lint_in_fresh_process(f)
    assert got["out"] == 0, got["out"]
    assert not {"z3", "numpy", "lark", "libcst"} & set(got["modules"])


def test_z3_is_loaded_when_the_solver_is_asked():
    """The check above is not vacuous: a divergent barrier's witness comes
    from Z3, in the same kind of run."""
    got = lint_in_fresh_process(FIXTURES / "ptx" / "uniformity" / "early_exit_barrier.ptx")
    assert got["out"] == 1 and "z3" in got["modules"]


def test_load_tool_imports_the_selected_rules_analyses_and_no_z3():
    code = (
        "from tolk_lint.config import DEFAULT_SETTINGS\n"
        "from tolk_lint.engine import load_tool\n"
        "load_tool(DEFAULT_SETTINGS.with_(select=('TL1',)), 'ptx')\n"
    )  # fmt: skip
    mods = fresh_modules(code)["modules"]
    assert "tolk_lint.analysis.placements" in mods and "lark" in mods
    assert "tolk_lint.analysis.memory" not in mods and "tolk_lint.analysis.stage" not in mods
    assert "z3" not in mods and "numpy" not in mods


def test_every_rules_analyses_are_modules():
    from importlib.util import find_spec

    from tolk_lint.catalog import all_rules

    for r in all_rules():
        for name in r.analyses:
            assert find_spec(name) is not None, (r.code, name)


# -- the budget credit ------------------------------------------------------------------------


def test_not_counted_gives_the_blocks_time_back_to_the_budget_chain():
    outer = budget.Budget(seconds=60.0)
    inner = outer.child(10.0, "the kernel's time budget")
    d_outer, d_inner = outer.deadline, inner.deadline
    with budget.running(inner):
        t = time.monotonic()
        with budget.not_counted():
            with budget.not_counted():  # nested: credited once, by the outermost
                time.sleep(0.05)
        spent = time.monotonic() - t
    assert inner.deadline - d_inner == pytest.approx(outer.deadline - d_outer)
    assert spent - 0.01 <= inner.deadline - d_inner <= spent
    assert inner.seconds == 10.0  # the message still names the budget as given


def test_not_counted_outside_a_lint_does_nothing():
    with budget.not_counted():
        pass
    assert budget.current() is None


def test_a_spent_budget_stays_spent_after_a_credit_smaller_than_its_overrun():
    b = budget.Budget(seconds=0.01)
    time.sleep(0.05)
    with budget.running(b):
        budget.credit(0.001)
        with pytest.raises(budget.BudgetExceeded):
            budget.check("x")


@pytest.mark.parametrize("loader", [
    "from tolk_lint.analysis.smt.solver import z3mod as load",
    "from tolk_lint.analysis.stage.polynomials import lazy_numpy as load",
])  # fmt: skip
def test_the_first_import_of_z3_and_numpy_is_credited(loader):
    """In a fresh process, importing Z3 (numpy) inside a lint's budget moves
    the deadline by the import's time: a small budget is not spent on it."""
    code = (
        "import time\n"
        "from tolk_lint import budget\n"
        f"{loader}\n"
        "b = budget.Budget(seconds=5.0)\n"
        "before = b.deadline\n"
        "with budget.running(b):\n"
        "    t = time.monotonic()\n"
        "    load()\n"
        "    took = time.monotonic() - t\n"
        "OUT = [b.deadline - before, took]\n"
    )  # fmt: skip
    moved, took = fresh_modules(code)["out"]
    assert took > 0.002, took  # it was imported here, not before
    assert 0.9 * took <= moved <= took, (moved, took)


# -- the PTX grammar's cache ------------------------------------------------------------------

@pytest.fixture
def grammar(monkeypatch, tmp_path):
    """The PTX parser module with no parser built yet and the cache folder
    under ``tmp_path``; ``build()`` makes the parser as the first parse of a
    process does, ``built_tables`` counts the LALR tables built (not loaded)."""
    import lark

    from tolk_lint.frontends.ptx import lark_cache, parser

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(parser, "_PARSER", None)
    counts = {"built": 0}
    real = lark.Lark._build_parser

    def counting(self):
        counts["built"] += 1
        return real(self)

    monkeypatch.setattr(lark.Lark, "_build_parser", counting)

    class G:
        module = parser
        built_tables = counts

        @staticmethod
        def build():
            parser._PARSER = None
            lk = parser._lark()
            assert parser.parse_tree(SMALL_PTX).version == "8.0"
            return lk

        @staticmethod
        def files():
            folder = lark_cache.cache_dir()
            return sorted(p for p in folder.iterdir() if p.suffix == ".lark") if folder.is_dir() else []

    return G


def test_the_second_parser_of_a_machine_loads_the_tables(grammar):
    grammar.build()
    assert grammar.built_tables["built"] == 1
    [f] = grammar.files()
    assert f.stat().st_size > 1000
    grammar.build()
    grammar.build()
    assert grammar.built_tables["built"] == 1  # loaded from the file twice, not built


def test_a_corrupt_cache_file_is_rebuilt_not_fatal(grammar):
    grammar.build()
    [f] = grammar.files()
    for junk in (b"", b"not a pickle\n", f.read_bytes()[: f.stat().st_size // 2], os.urandom(4096)):
        f.write_bytes(junk)
        before = grammar.built_tables["built"]
        grammar.build()
        assert grammar.built_tables["built"] == before + 1  # rebuilt ...
        grammar.build()
        assert grammar.built_tables["built"] == before + 1  # ... and written back whole


def test_an_unusable_cache_folder_means_no_cache(grammar, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # tolk-lint/ cannot be made under a file
    grammar.build()
    grammar.build()
    assert grammar.built_tables["built"] == 2


def test_a_folder_where_the_cache_file_goes_is_left_alone(grammar):
    from tolk_lint.frontends.ptx import lark_cache

    grammar.build()
    [f] = grammar.files()
    f.unlink()
    f.mkdir()
    grammar.build()
    assert f.is_dir() and grammar.built_tables["built"] == 2
    assert lark_cache.cache_dir() is not None


def test_the_command_line_writes_and_then_uses_the_cache(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(SMALL_PTX)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = (
        "import lark\n"
        "built = []\n"
        "real = lark.Lark._build_parser\n"
        "lark.Lark._build_parser = lambda self: built.append(1) or real(self)\n"
        "from tolk_lint.cli import main\n"
        "try:\n"
        f"    main(['check', '--no-cache', '-q', {str(f)!r}])\n"
        "except SystemExit as e:\n"
        "    OUT = [e.code, len(built)]\n"
    )  # fmt: skip
    assert fresh_modules(code, env)["out"] == [0, 1]  # the first run on this machine builds the tables
    assert list((tmp_path / "cache" / "tolk-lint").glob("*.lark"))
    assert fresh_modules(code, env)["out"] == [0, 0]  # the next one loads them
