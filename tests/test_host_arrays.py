"""Arrays the module builds on the host with a stated size
(`frontends.python.consts.HostArray`): their shapes fold, their values stay
unknown, and nothing of the file runs. Numba's documentation sizes a shared
array with `nelem = len(a)` of `a = cuda.to_device(np.arange(1024))`."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tolk_lint import lint_file
from tolk_lint.config import Settings
from tolk_lint.frontends.python.consts import UNKNOWN, evaluate
from tolk_lint.frontends.python.finder import Finder, Source

ROOT = Path(__file__).resolve().parent.parent / "fixtures"

MODULE = """
import numpy as np
from numba import cuda
a = cuda.to_device(np.arange(1024))
b = np.zeros((16, 4), dtype=np.float32)
c = cuda.device_array(32, np.int32)
d = np.arange(2, 20, 3)
e = np.empty_like(b)
n = int(input())
f = np.zeros(n)
"""


@pytest.mark.parametrize("expr, value", [
    ("len(a)", 1024), ("a.shape", (1024,)), ("a.size", 1024), ("b.shape", (16, 4)), ("b.shape[1]", 4),
    ("b.size", 64), ("b.ndim", 2), ("len(c)", 32), ("len(d)", 6), ("e.shape[-2]", 16), ("len(b) // 4", 4),
])
def test_shapes_fold(expr, value):
    assert _value(expr) == value


@pytest.mark.parametrize("expr", ["len(f)", "f.shape", "a[0]", "b.shape[2]", "len(n)"])
def test_what_the_module_does_not_state_stays_unknown(expr):
    assert _value(expr) is UNKNOWN


def _value(expr: str):
    src = MODULE + f"x = {expr}\n"
    finder = Finder(ast.parse(src), Source(src, "m.py"))
    line = src.count("\n") + 1
    return evaluate(ast.parse(expr, mode="eval").body, finder.module.const_lookup(line),
                    lambda node: finder.module.qual(node, line))  # fmt: skip


def test_a_shared_array_sized_from_a_host_array_is_bounds_checked():
    diags = lint_file(str(ROOT / "numba" / "memory" / "host_sized_shared.py"), Settings(block=(128, 1, 1))).diagnostics
    assert not [d for d in diags if d.code == "TL002"], [d.message for d in diags]
    (d,) = [d for d in diags if d.code == "TL202"]
    assert d.span.line == 38 and "(shape (128,))" in d.message, d.message


def test_the_documentation_example_has_no_tl002(tmp_path):
    text = textwrap.dedent('''
        import numpy as np
        from numba import cuda
        from numba.types import int32

        a = cuda.to_device(np.arange(1024))
        nelem = len(a)

        @cuda.jit
        def array_sum(data):
            tid = cuda.threadIdx.x
            size = len(data)
            if tid < size:
                i = cuda.grid(1)
                shr = cuda.shared.array(nelem, int32)
                shr[tid] = data[i]
        ''')
    p = tmp_path / "docs.py"
    p.write_text(text)
    assert not [d for d in lint_file(str(p)).diagnostics if d.code in ("TL002", "TL202")]
