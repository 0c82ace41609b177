"""The fast decoder of RUN tokens: a run of instructions and ``.loc`` lines
-> their statement tuples, by regular expressions instead of the grammar.

The grammar's lexer reads a whole run of ordinary statements as one RUN
token; `decode_run` splits it into ``("I", ...)`` and ``("C", ...)`` tuples
(the shapes in `tree`), tracking each statement's line and column. It is
equivalent to the `instruction` and `loc` rules of the grammar for the
shapes compilers emit; anything else goes to the ``slow_instruction``
callback the caller passes (the `instruction` rule: slow, exact, with
error positions). Decoded operands are cached by their text.

What it may import: `literals`, `errors` (`PtxSyntaxError`), and
`tolk_lint.budget` (a run at a time: the budget stops a parse too).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tolk_lint import budget

from .errors import PtxSyntaxError
from .literals import hexd, hexf, parse_int

_LOC_SRC = (
    r"\.loc[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)(?:[ \t]*,[ \t]*function_name[ \t]+[A-Za-z_$][\w$]*(?:[ \t]*\+[ \t]*\d+)?)?"
    r"(?:[ \t]*,[ \t]*inlined_at[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+))?(?![\w$])"
)
_INSTR_SRC = (
    r"(?:@(!?)(%?[A-Za-z_$][\w$]*)[ \t]*)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*)*)"
    r"(?![\w$:])(?![ \t]*:)((?:[^;{}\"]|\{[^{};]*\})*);"
)
# group 1: the statement; 2-7: .loc; 8-11: instruction (neg, guard, opcode, operands)
_STMT_RE = re.compile(r"\s*((?:" + _LOC_SRC + r")|(?:" + _INSTR_SRC + r"))")
_SPLIT_RE = re.compile(
    r"\s*(?:(\[[^\[\]]*\])|(\{[^{}]*\})|(\([^()]*\))|([^,\[\]{}()\s][^,\[\]{}()]*?(?:\[[^\[\]]*\])?))\s*(?:,|\Z)"
)
_IDENT_RE = re.compile(r"%?[A-Za-z_$][\w$]*(?:\.[xyzw](?![\w$]))?\Z")
_INT_RE = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[Uu]?\Z")
_ADDR_RE = re.compile(
    r"\s*(%?[A-Za-z_$][\w$]*|-?(?:0[xX][0-9a-fA-F]+|\d+)[Uu]?)\s*(?:(\+)?\s*(-?\s*(?:0[xX][0-9a-fA-F]+|\d+))[Uu]?)?\s*\Z"
)
_SIMPLE_OPERANDS = re.compile(r"[^\[\]{}()]*\Z")


class _Slow(Exception):
    pass


ATOM_CACHE: dict[str, tuple] = {}


def _atom(a: str) -> tuple:
    r = ATOM_CACHE.get(a)
    if r is not None:
        return r
    r = _atom_uncached(a)
    ATOM_CACHE[a] = r
    return r


def _atom_uncached(a: str) -> tuple:
    if not a:
        raise _Slow
    c = a[0]
    if c == "%" or c.isalpha() or c == "_" or c == "$":
        if _IDENT_RE.match(a):
            return ("r", a)
        if "|" in a:
            x, _, y = a.partition("|")
            x, y = x.strip(), y.strip()
            if _IDENT_RE.match(x) and _IDENT_RE.match(y):
                return ("d", x, y)
        elif "+" in a:
            x, _, y = a.partition("+")
            x, y = x.strip(), y.strip()
            if _IDENT_RE.match(x) and _INT_RE.match(y):
                return ("o", x, parse_int(y))
        elif a.endswith("]"):
            x, _, y = a[:-1].partition("[")
            x, y = x.strip(), y.strip()
            if _IDENT_RE.match(x) and _INT_RE.match(y):
                return ("x", x, parse_int(y))
        raise _Slow
    if c.isdigit() or c == "-":
        if _INT_RE.match(a):
            return ("i", parse_int(a))
        if len(a) == 10 and a[1] in "fF":
            try:
                return ("f", hexf(a), "f32")
            except ValueError:
                raise _Slow from None
        if len(a) == 18 and a[1] in "dD":
            try:
                return ("f", hexd(a), "f64")
            except ValueError:
                raise _Slow from None
        if _FLOAT_RE.match(a):
            return ("f", float(a), None)
        raise _Slow
    if c == "!":
        b = a[1:].strip()
        if _IDENT_RE.match(b):
            return ("!", b)
    raise _Slow


_FLOAT_RE = re.compile(r"-?\d+\.\d*(?:[eE][-+]?\d+)?\Z|-?\d+[eE][-+]?\d+\Z")


def _split(s: str) -> list:
    if _SIMPLE_OPERANDS.match(s):
        get = ATOM_CACHE.get
        out = []
        for x in s.split(","):
            x = x.strip()
            r = get(x)
            out.append(r if r is not None else _atom(x))
        return out
    out = []
    pos = 0
    n = len(s)
    while pos < n:
        m = _SPLIT_RE.match(s, pos)
        if m is None or m.end() == pos:
            if s[pos:].isspace():
                break
            raise _Slow
        br, vec, grp, atom = m.groups()
        if atom is not None:
            out.append(_atom(atom))
        elif br is not None:
            out.append(_address(br[1:-1]))
        elif vec is not None:
            inner = vec[1:-1]
            out.append(("v", [_atom(x.strip()) for x in inner.split(",")] if inner.strip() else []))
        else:
            inner = grp[1:-1]
            out.append(("g", [_atom(x.strip()) for x in inner.split(",")] if inner.strip() else []))
        pos = m.end()
    if s.rstrip().endswith(","):
        raise _Slow
    return out


def _address(inner: str) -> tuple:
    head, comma, rest = inner.partition(",")
    m = _ADDR_RE.match(head)
    if m is None:
        raise _Slow
    b = m.group(1)
    base = ("r", b) if not (b[0].isdigit() or b[0] == "-") else ("i", parse_int(b))
    off = 0
    if m.group(3) is not None:
        if base[0] == "i" and m.group(2) is None:
            raise _Slow
        off = parse_int(m.group(3).replace(" ", "").replace("\t", ""))
    extras = _split(rest) if comma else []
    if comma and not extras:
        raise _Slow
    return ("m", base, off, extras)


def decode_run(tok, slow_instruction: Callable[[str, tuple], tuple]) -> list:
    """A RUN token -> its statements: ``("I", ...)`` and ``("C", ...)`` tuples.

    ``slow_instruction(text, pos)`` reads a statement the regular expressions
    do not (``pos`` as in the tuple it returns)."""
    budget.check("parsing the file (line %d)", tok.line)
    s = tok.value
    n = len(s)
    out: list = []
    line = tok.line
    line_start = -(tok.column - 1)  # offset (in s) where the current line starts
    base = tok.start_pos
    last = 0
    pos = 0
    match = _STMT_RE.match
    while pos < n:
        if len(out) & 4095 == 4095:  # a straight-line run of a million instructions: check now and then
            budget.check("parsing the file (line %d)", line)
        m = match(s, pos)
        if m is None:
            if s[pos:].isspace():
                break
            raise PtxSyntaxError("internal: cannot split a statement run", line, pos - line_start + 1)
        a, b = m.span(1)
        if "\n" in s[last:a]:
            line += s.count("\n", last, a)
            line_start = s.rfind("\n", last, a) + 1
        last = a
        col = a - line_start + 1
        _, lf, ll, lc, i5, i6, i7, neg, g, opc, rest = m.groups()
        if lf is not None:  # .loc
            inl = None if i5 is None else (int(i5), int(i6), int(i7))
            out.append(("C", int(lf), int(ll), int(lc), inl, line))
        else:
            if "\n" in rest:
                end_line = line + s.count("\n", a, b)
                end_col = b - (s.rfind("\n", a, b) + 1) + 1
            else:
                end_line = line
                end_col = b - line_start + 1
            p = (line, col, end_line, end_col, base + a, base + b)
            guard = None if g is None else (neg == "!", g)
            try:
                ops = _split(rest) if rest and not rest.isspace() else []
                out.append(("I", guard, opc, ops, p))
            except _Slow:
                out.append(slow_instruction(s[a:b], p))
        pos = b
    return out
