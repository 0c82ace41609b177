"""`launch.host_eval` computes what a C++ compiler computes.

The host interpreter decides which launch arguments a host check lets
through; a value it computes wrongly would assume a launch away. Random
integer expressions over an ``int``, an ``unsigned``, an ``unsigned char``
and a ``long`` (the operators, casts, ``?:``, literals with and without
suffixes, of a seeded generator) are compiled by the machine's ``g++`` and
run for a few inputs; wherever the interpreter gives a value (it says
Unknown for what C leaves undefined: a signed overflow, a shift past the
width, a division by zero), it is the compiled program's.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from tolk_lint.launch import host_eval
from tolk_lint.launch.c_syntax import lex
from tolk_lint.launch.c_types import IntType
from tolk_lint.launch.cuda_source import scan

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

UCHAR = IntType(False, 8)
VARS = {"a": host_eval.INT, "u": host_eval.UINT, "c": UCHAR, "l": host_eval.LONG}
DECL = {"a": "int", "u": "unsigned", "c": "unsigned char", "l": "long"}
INPUTS = [(0, 0, 0, 0), (1, 1, 1, 1), (-1, 4294967295, 255, -1), (7, 3, 200, 1 << 40), (-100, 65536, 17, -(1 << 33)),
          (2147483647, 2147483648, 128, 9), (-2147483648, 12, 0, 123456789)]  # fmt: skip
BINARY = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
CASTS = ["(int)", "(unsigned)", "(unsigned char)", "(long)", "(bool)"]
LITERALS = ["0", "1", "2", "3", "7", "31", "32", "255", "4294967295u", "2147483647", "1u", "16u", "5l", "0x10"]


def _expr(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth == 0 or roll < 0.2:
        return rng.choice(list(VARS)) if rng.random() < 0.6 else rng.choice(LITERALS)
    if roll < 0.3:
        return f"{rng.choice(['-', '~', '!'])}({_expr(rng, depth - 1)})"
    if roll < 0.38:
        return f"{rng.choice(CASTS)}({_expr(rng, depth - 1)})"
    if roll < 0.44:
        return f"(({_expr(rng, depth - 1)}) ? ({_expr(rng, depth - 1)}) : ({_expr(rng, depth - 1)}))"
    return f"(({_expr(rng, depth - 1)}) {rng.choice(BINARY)} ({_expr(rng, depth - 1)}))"


def _interpret(expr: str, inputs: tuple[int, ...]) -> int | None:
    values = {n: host_eval.Int(host_eval.wrap(v, VARS[n]), VARS[n]) for n, v in zip(VARS, inputs)}
    toks, _c, _d = lex(expr)
    m = host_eval.Machine(scan("", "x.cu"), lambda n: values[n])
    try:
        got = m.value(host_eval.parse_expression(toks), None)
    except host_eval.Unknown:
        return None
    return host_eval.wrap(got.v, host_eval.LONG)


def test_the_interpreter_agrees_with_gcc(tmp_path):
    rng = random.Random(20261202)
    exprs = [_expr(rng, 3) for _ in range(150)]
    # each expression in its own function: C++ evaluates it as written, only for the inputs where the
    # interpreter found no undefined behaviour (so the compiled program has none either)
    wanted = {(i, j): _interpret(e, x) for i, e in enumerate(exprs) for j, x in enumerate(INPUTS)}
    lines = ["#include <cstdio>"]
    for i, e in enumerate(exprs):
        params = ", ".join(f"{DECL[n]} {n}" for n in VARS)
        lines.append(f"long long f{i}({params}) {{ return (long long)({e}); }}")
    lines.append("int main() {")
    for (i, j), want in wanted.items():
        if want is not None:
            args = ", ".join(f"({DECL[n]}){v}LL" for n, v in zip(VARS, INPUTS[j]))
            lines.append(f'  printf("{i} {j} %lld\\n", f{i}({args}));')
    lines.append("  return 0;\n}")
    src = tmp_path / "exprs.cpp"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "exprs"
    subprocess.run(["g++", "-O0", "-w", "-o", str(exe), str(src)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    got = {(int(i), int(j)): int(v) for i, j, v in (ln.split() for ln in out.splitlines())}
    known = {k: v for k, v in wanted.items() if v is not None}
    assert len(known) > len(wanted) // 2  # most are defined: the comparison says something
    wrong = {k: (exprs[k[0]], INPUTS[k[1]], v, got[k]) for k, v in known.items() if got[k] != v}
    assert not wrong, list(wrong.values())[:5]


HELPERS = """
typedef unsigned int uint;
unsigned char wrap_add(unsigned char x) { x += 250; return x; }
int skip_sum(int n) { int s = 0; for (int i = 0; i < n; i++) { if (i % 3 == 0) continue; s += i; if (s > 50) break; } return s; }
unsigned reverse_bits(unsigned n) { unsigned r = 0; do { r = r * 2 + (n & 1); n >>= 1; } while (n); return r; }
long widen_shift(int a) { long x = a; x <<= 3; return x - a; }
bool is_pow2(unsigned x) { return x && !(x & (x - 1)); }
uint factorRadix2(uint *log2L, uint L) {
  if (!L) { *log2L = 0; return 0; }
  for (*log2L = 0; (L & 1) == 0; L >>= 1, *log2L++) ;
  return L;
}
uint odd_part(uint L) { uint lg; return factorRadix2(&lg, L); }
int magnitude(int a) { return a < 0 ? -a : a; }
int quarter(int a) { return a >> 2; }
int char_steps(unsigned char c, int a) { c++; c -= 3; return c * a; }
int count_down(int n) { int k = 0; while (n-- > 0) k += 2; return k + n; }
"""
CALLS = ["wrap_add(x)", "skip_sum(x)", "reverse_bits(x)", "widen_shift(x)", "is_pow2(x)", "odd_part(x)",
         "magnitude(x)", "quarter(x)", "char_steps(x, 3)", "count_down(x)", "is_pow2(x) ? odd_part(x) : -1"]


def test_helper_functions_run_as_gcc_runs_them(tmp_path):
    src = scan(HELPERS, "h.cu")
    inputs = list(range(-5, 70)) + [255, 256, 1024, 4096, 65535]
    wanted = {}
    for i, call in enumerate(CALLS):
        toks, _c, _d = lex(call)
        expr = host_eval.parse_expression(toks)
        for x in inputs:
            m = host_eval.Machine(src, lambda n, x=x: host_eval.Int(x, host_eval.INT) if n == "x" else None)
            try:
                wanted[(i, x)] = host_eval.wrap(m.value(expr, None).v, host_eval.LONG)
            except host_eval.Unknown:
                wanted[(i, x)] = None
    lines = ["#include <cstdio>", HELPERS, "int main() {"]
    for (i, x), want in wanted.items():
        if want is not None:
            lines.append(f'  {{ int x = {x}; printf("{i} {x} %lld\\n", (long long)({CALLS[i]})); }}')
    lines.append("  return 0;\n}")
    (tmp_path / "helpers.cpp").write_text("\n".join(lines) + "\n")
    subprocess.run(["g++", "-O0", "-w", "-o", str(tmp_path / "helpers"), str(tmp_path / "helpers.cpp")], check=True,
                   capture_output=True)  # fmt: skip
    out = subprocess.run([str(tmp_path / "helpers")], check=True, capture_output=True, text=True).stdout
    got = {(int(i), int(x)): int(v) for i, x, v in (ln.split() for ln in out.splitlines())}
    known = {k: v for k, v in wanted.items() if v is not None}
    assert len(known) > 0.8 * len(wanted)
    wrong = [(CALLS[i], x, v, got[(i, x)]) for (i, x), v in known.items() if got[(i, x)] != v]
    assert not wrong, wrong[:5]
