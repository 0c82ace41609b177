"""``// tolk: assume EXPR`` in a CUDA kernel's body, for the PTX compiled from it.

What a kernel needs of its parameters is often checked only by its host
code, out of the linted file's sight: NVIDIA's bitonic sort is right only
for a power-of-two ``arrayLength`` of at most 1024, which the host asserts
through a helper. The author says so where the kernel is written::

    __global__ void bitonicSortShared(uint *dst, uint *src, uint arrayLength, uint dir) {
        // tolk: assume arrayLength <= 1024 && (arrayLength & (arrayLength - 1)) == 0

and the solver assumes it in both threads of every question, as it assumes
a Numba kernel's ``# tolk: assume`` (`smt.questions._assume`). EXPR is a C
expression over the kernel's integer parameters (by their CUDA names) and
integer constants (``#define``, ``constexpr``, the kernel's template
arguments): ``+ - * / % << >> & | ^ ~ ! && || == != < <= > >= ?:``,
evaluated as 64-bit signed integers, each parameter converted from its C++
type. It becomes IR at the top of the kernel's entry block (after its
PARAMs), and its value joins ``kernel.assumptions``. One that does not read
(another name, a float, a call) is a TL002 at the kernel, naming the
``.cu`` line, and is ignored, as is one no values satisfy
(`choose.refuse_impossible`) (`Kernel.diagnostics`: reported with the
kernel's findings).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.nodes import Instr, Kernel, Module, Origin, Value
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.launch.c_syntax import BINARY_LEVELS, Evaluator, Token, lex

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource
    from tolk_lint.launch.mangled import Entry

O = Opcode
ASSUME = re.compile(r"//\s*tolk:\s*assume\s+(.+?)\s*(?://.*)?$")  # up to a comment after it
_ARITH = {"|": O.OR, "^": O.XOR, "&": O.AND, "<<": O.SHL, ">>": O.SHR, "+": O.ADD, "-": O.SUB, "*": O.MUL,
          "/": O.DIV, "%": O.REM}  # fmt: skip
_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


class Unreadable(Exception):
    pass


def attach(module: Module, k: Kernel, src: CudaSource, entry: Entry) -> None:
    """Read the ``tolk: assume`` comments in the body of the kernel ``entry``
    names in ``src`` into ``k.assumptions`` (once per kernel)."""
    if k._cache.get("source_assumptions"):
        return
    k._cache["source_assumptions"] = True
    body = _body_lines(src, entry, len(k.params))
    if body is None:
        return
    params, first, last = body
    for line, text in src.comments:
        m = ASSUME.match(text)
        if not m or not first <= line <= last:
            continue
        origin = Origin(src.path, line)
        try:
            tokens, _comments, _defines = lex(m.group(1))
            value = _Reader(k, params, src, tokens, origin, f"tolk: assume {m.group(1)}").read()
        except Unreadable as e:
            k.diagnostics.append(_unreadable(k, origin, m.group(1), str(e)))
            continue
        k.assumptions.append(value)


def _body_lines(src: CudaSource, entry: Entry, n_params: int) -> tuple[tuple, int, int] | None:
    """The kernel's declared parameters and the lines of its body."""
    kds = [kd for kd in src.kernels if kd.name == entry.name and len(kd.params) == n_params]
    if len(kds) != 1:
        return None
    kd = kds[0]
    for f in src.functions:
        if f.name == kd.name and src.tokens[f.start].line >= kd.name_line and f.param_list == kd.params:
            return kd.params, src.tokens[f.start].line, src.tokens[f.end].line
    return None


def _unreadable(k: Kernel, origin: Origin, text: str, why: str) -> Diagnostic:
    return Diagnostic(
        code="TL002", severity=Severity.WARNING, span=k.span, kernel=k.name, origin=origin, name="unsupported-construct",
        message=f"`tolk: assume {text}` is not modelled: {why}; it is ignored",
    )  # fmt: skip


class _Reader:
    """A C expression's tokens, read into IR values at the top of ``k``'s entry block."""

    def __init__(self, k: Kernel, params: tuple, src: CudaSource, tokens: list[Token], origin: Origin, text: str):
        self.k = k
        self.origin, self.text = origin, text
        self.toks = tokens
        self.i = 0
        self.by_name = {name: (p, t) for (name, t), p in zip(params, k.params) if name}
        self.const = Evaluator(src._resolver(0, None, [], 1))
        entry = k.blocks[0]
        self.entry = entry
        self.at = next((j for j, ins in enumerate(entry.instrs) if ins.op is not O.PARAM), len(entry.instrs))
        self.next_id = 1 + max([r.id for ins in k.instrs() for r in ins.results] +
                               [p.value.id for p in k.params if p.value is not None] + [0])  # fmt: skip

    def read(self) -> Value:
        v = self._ternary()
        if self.i != len(self.toks):
            raise Unreadable(f"`{self.toks[self.i].text}` is not part of an expression it reads")
        return v if v.type == "pred" else self._cmp("ne", v, self._const(0))

    # -- IR ------------------------------------------------------------------------------------

    def _emit(self, op: Opcode, args: list[Value], t: str, attrs: dict[str, Any]) -> Value:
        res = Value(self.next_id, t, f"assume.{self.next_id}")
        self.next_id += 1
        ins = Instr(op, args, [res], attrs, self.k.span, self.origin, self.text)
        ins.block = self.entry
        self.entry.instrs.insert(self.at, ins)
        self.at += 1
        return res

    def _const(self, c: int) -> Value:
        return self._emit(O.CONST, [], "s64", {"value": c})

    def _int(self, v: Value) -> Value:
        if v.type == "pred":
            return self._emit(O.SELECT, [v, self._const(1), self._const(0)], "s64", {})
        return v

    def _pred(self, v: Value) -> Value:
        return v if v.type == "pred" else self._cmp("ne", v, self._const(0))

    def _cmp(self, cmp: str, a: Value, b: Value) -> Value:
        return self._emit(O.CMP, [self._int(a), self._int(b)], "pred", {"cmp": cmp, "signed": True, "type": "s64"})

    # -- the grammar -----------------------------------------------------------------------------

    def _peek(self) -> str:
        return self.toks[self.i].text if self.i < len(self.toks) else ""

    def _take(self) -> Token:
        if self.i >= len(self.toks):
            raise Unreadable("the expression ends too early")
        self.i += 1
        return self.toks[self.i - 1]

    def _ternary(self) -> Value:
        c = self._binary(0)
        if self._peek() != "?":
            return c
        self._take()
        a = self._ternary()
        if self._take().text != ":":
            raise Unreadable("`?` without `:`")
        b = self._ternary()
        return self._emit(O.SELECT, [self._pred(c), self._int(a), self._int(b)], "s64", {})

    def _binary(self, level: int) -> Value:
        if level == len(BINARY_LEVELS):
            return self._unary()
        a = self._binary(level + 1)
        while self._peek() in BINARY_LEVELS[level]:
            op = self._take().text
            b = self._binary(level + 1)
            if op in ("&&", "||"):
                a = self._emit(O.AND if op == "&&" else O.OR, [self._pred(a), self._pred(b)], "pred", {"signed": False})
            elif op in _CMP:
                a = self._cmp(_CMP[op], a, b)
            else:
                a = self._emit(_ARITH[op], [self._int(a), self._int(b)], "s64", {"signed": True})
        return a

    def _unary(self) -> Value:
        t = self._peek()
        if t in ("-", "+", "~", "!"):
            self._take()
            v = self._unary()
            if t == "-":
                return self._emit(O.SUB, [self._const(0), self._int(v)], "s64", {"signed": True})
            if t == "~":
                return self._emit(O.XOR, [self._int(v), self._const(-1)], "s64", {"signed": True})
            if t == "!":
                return self._emit(O.NOT, [self._pred(v)], "pred", {"signed": False})
            return v
        return self._primary()

    def _primary(self) -> Value:
        tok = self._take()
        if tok.text == "(":
            v = self._ternary()
            if self._take().text != ")":
                raise Unreadable("an unclosed `(`")
            return v
        if tok.kind == "name" and tok.text in self.by_name:
            p, t = self.by_name[tok.text]
            if t is None or p.value is None:
                raise Unreadable(f"`{tok.text}` is not an integer parameter")
            return self._emit(O.CVT, [p.value], "s64", {"from_type": f"{'s' if t.signed else 'u'}{t.bits}"})
        c = self.const.value([tok])
        if isinstance(c, int) and not isinstance(c, bool):
            return self._const(c)
        raise Unreadable(f"`{tok.text}` is neither a parameter of the kernel nor a constant")
