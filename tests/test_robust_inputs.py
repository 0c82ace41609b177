"""Inputs people actually have: unreachable code nvcc output can be edited
into, every spelling of a PTX integer, files nested deeply, and what the
front ends say when they fail (TL004, an error, never a TL002 warning).

Each answer here is known by reasoning (the PTX ISA's literal rules, checked
against ptxas where it is installed); the command-line cases run
`tolk-lint` in a subprocess with a timeout, so a hang fails the test
instead of stalling the run.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess

import pytest
from conftest import FIXTURES
from test_bad_input import SMALL_PTX, check_json, codes, tolk_lint

from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.diagnostics import REPORT_REQUEST
from tolk_lint.engine import lint_text
from tolk_lint.frontends.ptx import parse_ptx
from tolk_lint.frontends.ptx.literals import as_operand, parse_int, wrap64
from tolk_lint.ir.opcodes import Opcode

PTXAS = shutil.which("ptxas")

# -- the SSA builder on unreachable cycles ----------------------------------------------

CFG_FIXTURES = sorted((FIXTURES / "ptx" / "cfg").glob("*.ptx"))


@pytest.mark.parametrize("path", CFG_FIXTURES, ids=[p.stem for p in CFG_FIXTURES])
def test_unreachable_self_loop_lints_at_once(path):
    """SSA construction used to loop forever on these (a block whose only
    predecessor is itself, jumped over); the fixture test checks what they
    report, this one that the command line answers, well within the timeout
    (it takes a fraction of a second after start-up)."""
    p = tolk_lint("check", "--no-cache", "--output-format", "json", str(path), timeout=60)
    diags = json.loads(p.stdout)
    assert not codes(diags) & {"TL001", "TL004", "TL005"}, diags
    assert p.returncode == (1 if diags else 0), (p.returncode, diags)


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed")
@pytest.mark.parametrize("path", CFG_FIXTURES, ids=[p.stem for p in CFG_FIXTURES])
def test_unreachable_self_loop_fixtures_assemble(path, tmp_path):
    r = subprocess.run([PTXAS, "-arch=sm_80", str(path), "-o", str(tmp_path / "out.cubin")],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr


# -- PTX integer literals ---------------------------------------------------------------------


def test_parse_int_spellings():
    assert [parse_int(s) for s in ("64", "0x40", "0X40", "017", "0b101", "0B101", "7U", "7u", "-5", "0")] == [
        64, 64, 64, 15, 5, 5, 7, 7, -5, 0]  # fmt: skip


def test_wrap64_keeps_the_low_64_bits():
    """ptxas keeps a literal's low 64 bits (0x12345678123456789 assembles as
    0x2345678123456789: `test_literals_against_ptxas`)."""
    assert wrap64(0xFFFFFFFFFFFFFFFF) == 0xFFFFFFFFFFFFFFFF
    assert wrap64(9223372036854775807) == 9223372036854775807
    assert wrap64(-9223372036854775808) == -9223372036854775808
    assert wrap64(1 << 64) == 0
    assert wrap64(0x12345678123456789) == 0x2345678123456789
    assert wrap64(-9223372036854775809) == 0x7FFFFFFFFFFFFFFF


@pytest.mark.parametrize("value, type, expected", [
    (9223372036854775807, "s32", -1),  # `mul.wide.s32 %rd, %r, 9223372036854775807` multiplies by -1
    (0xFFFFFFFF, "s32", -1),
    (2147483648, "s32", -2147483648),
    (0x123456789, "u32", 0x23456789),
    (0xFFFFFFFF, "u32", 0xFFFFFFFF),
    (-1, "u32", -1),  # as written: `add.u32 %r, %r, -1` is the subtraction it reads as
    (-4, "b32", -4),
    (0x1FF, "u8", 0xFF),
    (0x18000, "s16", -32768),
    (1 << 64, "u64", 0),
    (0xFFFFFFFFFFFFFFFF, "s64", -1),
    (3, "pred", 3),
    (3, "f32", 3),
])  # fmt: skip
def test_as_operand(value, type, expected):
    assert as_operand(value, type) == expected


KERNEL = """\
.version 8.0
.target sm_80
.address_size {address_size}

.visible .entry k(.param .u64 p)
{{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<5>;
\tld.param.u64 %rd1, [p];
\tcvta.to.global.u64 %rd2, %rd1;
\t{instruction}
\tst.global.{st} [%rd2], {stored};
\tret;
}}
"""


def kernel_text(instruction: str, stored: str = "%r2", st: str = "u32", address_size: str = "64") -> str:
    return KERNEL.format(instruction=instruction, stored=stored, st=st, address_size=address_size)


LITERALS = [  # (instruction, the value the IR holds, the register stored)
    ("mov.u32 %r2, 0x40;", 64, "%r2"),
    ("mov.u32 %r2, 017;", 15, "%r2"),
    ("mov.u32 %r2, 0b101;", 5, "%r2"),
    ("mov.u32 %r2, 7U;", 7, "%r2"),
    ("mov.s32 %r2, -5;", -5, "%r2"),
    ("mov.u32 %r2, 0x123456789;", 0x23456789, "%r2"),
    ("mov.s32 %r2, 0xFFFFFFFF;", -1, "%r2"),
    ("mov.u32 %r2, 9223372036854775807;", 0xFFFFFFFF, "%r2"),
    ("mov.u64 %rd3, 0xFFFFFFFFFFFFFFFF;", 0xFFFFFFFFFFFFFFFF, "%rd3"),
    ("mov.u64 %rd3, 18446744073709551616;", 0, "%rd3"),
    ("mov.s64 %rd3, -9223372036854775809;", 0x7FFFFFFFFFFFFFFF, "%rd3"),
    ("mov.u64 %rd3, 0x12345678123456789;", 0x2345678123456789, "%rd3"),
    ("mov.u32 %r1, %tid.x; mul.wide.s32 %rd3, %r1, 9223372036854775807;", -1, "%rd3"),
    ("mov.u32 %r1, %tid.x; mul.wide.s32 %rd3, %r1, 0xFFFFFFFFFFFFFFFF;", -1, "%rd3"),
]


def _consts(text: str) -> list:
    m = parse_ptx(text, "lit.ptx")
    assert not [d for d in m.diagnostics if d.code in ("TL001", "TL004")], [d.message for d in m.diagnostics]
    [k] = m.kernels
    return [i.attrs["value"] for i in k.instrs() if i.op is Opcode.CONST]


@pytest.mark.parametrize("instruction, value, stored", LITERALS, ids=[x[0] for x in LITERALS])
def test_literal_values_in_the_ir(instruction, value, stored):
    text = kernel_text(instruction, stored, "u64" if stored.startswith("%rd") else "u32")
    assert value in _consts(text)


@pytest.mark.parametrize("instruction, value, stored", LITERALS, ids=[x[0] for x in LITERALS])
def test_literals_lint_without_internal_errors(instruction, value, stored):
    text = kernel_text(instruction, stored, "u64" if stored.startswith("%rd") else "u32")
    r = lint_text(text, "lit.ptx", DEFAULT_SETTINGS.with_(time_budget=60))
    assert not {d.code for d in r.diagnostics} & {"TL001", "TL004", "TL005"}, [d.message for d in r.diagnostics]


def test_address_size_in_hex():
    """`.address_size 0x40` lost the whole file as a TL001 "internal error"."""
    assert 64 in _consts(kernel_text("mov.u32 %r2, 64;", address_size="0x40"))


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed")
@pytest.mark.parametrize("instruction, value, stored", LITERALS, ids=[x[0] for x in LITERALS])
def test_literals_against_ptxas(instruction, value, stored, tmp_path):
    """ptxas assembles each form; where the value is distinctive, the
    machine code holds it (as 32-bit immediates: ptxas folds the literal
    to the operand's width, as `as_operand` does)."""
    text = kernel_text(instruction, stored, "u64" if stored.startswith("%rd") else "u32")
    src, out = tmp_path / "lit.ptx", tmp_path / "lit.cubin"
    src.write_text(text)
    r = subprocess.run([PTXAS, "-arch=sm_80", str(src), "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    if "%tid" in instruction:
        return  # a product: no immediate to find
    v = value % (1 << 64)
    words = [w for w in (v & 0xFFFFFFFF, v >> 32) if w > 0xFFFF and w != 0xFFFFFFFF]
    code = out.read_bytes()
    for w in words:
        assert struct.pack("<I", w) in code, hex(w)


def test_staging_with_a_wrapping_immediate():
    """TL301-TL303 raised OverflowError on `mul.wide.s32` by 9223372036854775807."""
    from conftest import ACCEPTANCE

    src = ACCEPTANCE / "cuda" / "sgemm_tiled.sm80.ptx"
    if not src.is_file():
        pytest.skip("the acceptance set is not beside the repository")
    import re

    text = re.sub(r"(mul\.wide\.s32\s+[^,]+,\s*[^,]+,\s*)\d+;", r"\g<1>9223372036854775807;", src.read_text())
    r = lint_text(text, "sgemm.ptx", DEFAULT_SETTINGS.with_(time_budget=120))
    assert "TL004" not in {d.code for d in r.diagnostics}, [d.message for d in r.diagnostics if d.code == "TL004"]


def test_cp_async_size_ptxas_rejects_is_tl001():
    text = SMALL_PTX.replace("\tret;", "\tcp.async.ca.shared.global [%rd4], [%rd4], 12;\n\tret;")
    m = parse_ptx(text, "t.ptx")
    assert [d.code for d in m.diagnostics] == ["TL001"] and "4, 8 or 16" in m.diagnostics[0].message


# -- launch shapes no launch can have ----------------------------------------------------------


@pytest.mark.parametrize("reqntid", ["2048", "32, 32, 2", "4294967295", "128, 0, 1"])
def test_impossible_reqntid_is_not_used(reqntid):
    text = SMALL_PTX.replace(".param .u32 scale_param_1)", f".param .u32 scale_param_1)\n.reqntid {reqntid}")
    m = parse_ptx(text, "t.ptx")
    [k] = m.kernels
    assert k.launch.block is None and not k.launch.reqntid
    assert [d.code for d in m.diagnostics] == ["TL002"] and "not a launch shape" in m.diagnostics[0].message


def test_impossible_launch_comment_is_not_used():
    text = ("from numba import cuda\n\n# tolk: launch block=(16,16,4294967295)\n@cuda.jit\ndef k(a):\n"
            "    a[cuda.threadIdx.x] = 1\n")  # fmt: skip
    r = lint_text(text, "k.py", DEFAULT_SETTINGS.with_(time_budget=60))
    assert [(d.code, d.span.line) for d in r.diagnostics] == [("TL002", 3)], [d.message for d in r.diagnostics]
    assert "not a launch shape" in r.diagnostics[0].message


# -- deep nesting -------------------------------------------------------------------------------


def _elif_chain(n: int) -> str:
    lines = ["from numba import cuda", "", "# tolk: launch block=(256,1,1)", "@cuda.jit", "def k(a, n):",
             "    t = cuda.threadIdx.x"]  # fmt: skip
    for i in range(n):
        lines += [f"    {'if' if i == 0 else 'elif'} n == {i}:", f"        a[{i}] = {i}"]
    lines += ["    else:", "        a[0] = 0", "    if t < 16:", "        cuda.syncthreads()  # TL101"]
    return "\n".join(lines) + "\n"


def _sum_of(n: int) -> str:
    terms = " + ".join(f"a[{i % 7}]" for i in range(n))
    return (f"from numba import cuda\n\n# tolk: launch block=(256,1,1)\n@cuda.jit\ndef k(a):\n    a[0] = {terms}\n"
            "    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()  # TL101\n")  # fmt: skip


def _nested_ifs(n: int) -> str:
    lines = ["from numba import cuda", "", "# tolk: launch block=(256,1,1)", "@cuda.jit", "def k(a):"]
    for i in range(n):
        lines.append("    " + " " * i + f"if a[{i % 5}] > {i}:")
    lines.append("    " + " " * n + "a[0] = 1")
    lines += ["    if cuda.threadIdx.x < 16:", "        cuda.syncthreads()  # TL101"]
    return "\n".join(lines) + "\n"


def _parens(n: int) -> str:
    e = "(" * n + "a[1]" + ")" * n
    return (f"from numba import cuda\n\n# tolk: launch block=(256,1,1)\n@cuda.jit\ndef k(a):\n    a[0] = {e}\n"
            "    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()  # TL101\n")  # fmt: skip


DEEP = {
    "elif-500": _elif_chain(500),  # 500 nested `If` nodes
    "sum-1990": _sum_of(1990),  # near the deepest expression CPython compiles
    "nested-ifs-98": _nested_ifs(98),  # CPython allows 100 levels of indentation
    "parens-180": _parens(180),  # and 200 nested parentheses
}


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_python_is_linted(tmp_path, name):
    """A valid file nested deeply is analysed like any other: the barrier
    under `t < 16` is TL101, and `--ignore TL002` hides nothing."""
    text = DEEP[name]
    compile(text, name, "exec")  # valid Python
    f = tmp_path / f"{name}.py"
    f.write_text(text)
    rc, diags = check_json(f, "--no-cache", "--ignore", "TL002", timeout=300)
    line = text.splitlines().index(next(x for x in text.splitlines() if x.endswith("# TL101"))) + 1
    assert rc == 1 and [(d["code"], d["line"]) for d in diags] == [("TL101", line)], diags


def test_deep_ptx_scopes_are_linted(tmp_path):
    """200 nested `{ }` scopes, each declaring a register, then a barrier
    only threads below 16 reach: TL101."""
    n = 200
    body = "\t.reg .b32 %r<4>;\n\tmov.u32 %r1, %tid.x;\n" + "{\n\t.reg .b32 %q;\n\tadd.s32 %q, %r1, 1;\n" * n
    body += "\tsetp.lt.u32 %p1, %r1, 16;\n" + "}\n" * n
    text = (".version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry deep()\n{\n\t.reg .pred %p<2>;\n"
            f"{body}\t@!%p1 bra $L_done;\n\tbar.sync 0;\n$L_done:\n\tret;\n}}\n")  # fmt: skip
    f = tmp_path / "deep.ptx"
    f.write_text(text)
    rc, diags = check_json(f, "--no-cache", timeout=300)
    line = text.splitlines().index("\tbar.sync 0;") + 1
    assert rc == 1 and [(d["code"], d["line"]) for d in diags] == [("TL101", line)], diags


def test_nesting_past_the_limit_is_tl001_naming_it(monkeypatch):
    """What nests deeper than the lint's recursion limit is TL001 naming
    the limit (an error: the divergent barrier in it does not pass)."""
    import sys

    import tolk_lint.deep

    old = sys.getrecursionlimit()
    monkeypatch.setattr(tolk_lint.deep, "RECURSION_LIMIT", 2_000)
    try:
        sys.setrecursionlimit(2_000)
        r = lint_text(_elif_chain(1500), "deep.py", DEFAULT_SETTINGS.with_(time_budget=60, ignore=("TL002",)))
    finally:
        sys.setrecursionlimit(old)
    assert [d.code for d in r.diagnostics] == ["TL001"], [d.message for d in r.diagnostics]
    assert "2,000 levels" in r.diagnostics[0].message


# -- front-end failures are TL004 ---------------------------------------------------------------


PY_BARRIER = "from numba import cuda\n\n@cuda.jit\ndef k(a):\n    if cuda.threadIdx.x < 16:\n        cuda.syncthreads()\n"


def _boom(*_a, **_k):
    raise ValueError("boom")


@pytest.mark.parametrize("where, text, path", [
    ("tolk_lint.frontends.python.lower.lower_function", PY_BARRIER, "k.py"),
    ("tolk_lint.frontends.python.finder.Finder.__init__", PY_BARRIER, "k.py"),
    ("tolk_lint.frontends.ptx.function.FunctionLowering.lower", SMALL_PTX, "k.ptx"),
    # the parser of a whole file, and of one function at a time (a file read
    # kernel by kernel falls back to the whole file when a piece fails)
    (("tolk_lint.frontends.ptx.lower.parse_tree", "tolk_lint.frontends.ptx.stream.parse_slice"), SMALL_PTX, "k.ptx"),
])  # fmt: skip
def test_front_end_failure_is_tl004(monkeypatch, where, text, path):
    """A bug of ours in a front end is TL004, an error naming the exception
    with the request to report it; `--ignore TL002`/`TL004` hide nothing."""
    for target in (where,) if isinstance(where, str) else where:
        monkeypatch.setattr(target, _boom)
    r = lint_text(text, path, DEFAULT_SETTINGS.with_(time_budget=60, ignore=("TL002", "TL004")))
    assert [d.code for d in r.diagnostics] == ["TL004"], [(d.code, d.message) for d in r.diagnostics]
    d = r.diagnostics[0]
    assert d.severity.value == "error" and "ValueError: boom" in d.message and d.message.endswith(REPORT_REQUEST)
