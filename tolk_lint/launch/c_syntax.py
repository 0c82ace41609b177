"""Just enough C and C++ to read a CUDA source's launches: tokens with their
lines, the comments beside them, ``#define`` lines, and integer constant
expressions.

Not a C parser (tolk-lint has no C parser dependency, and needs none): a
lexer that knows comments, strings, numbers, names and the punctuators
(``<<<`` and ``>>>`` are single tokens), and an evaluator for the
expressions a launch's block is written with: integers, names of constants,
``+ - * / % << >> & | ^ ~ !``, comparisons, ``?:``, casts, ``min``/``max``,
and ``dim3(x, y, z)`` (a tuple). Anything else is unknown (None), never a
guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\f\v\r]+)
      | (?P<nl>\n)
      | (?P<lc>//[^\n]*)
      | (?P<bc>/\*.*?\*/)
      | (?P<pp>\#)
      | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
      | (?P<num>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
      | (?P<name>[A-Za-z_]\w*)
      | (?P<op><<<|>>>|<<=|>>=|->\*|\.\.\.|::|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|->|[-+*/%&|^]=|[{}()\[\];,.?:~!<>=+\-*/%&|^])
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    kind: str  # "name" | "num" | "str" | "op" | "other"
    text: str
    line: int
    pos: int = -1  # offset of its first character in the source (-1: made up)


@dataclass(frozen=True)
class Define:
    name: str
    tokens: tuple[Token, ...]
    line: int


ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})  # what changes a variable


def lex(text: str) -> tuple[list[Token], list[tuple[int, str]], list[Define]]:
    """The code's tokens (preprocessor lines left out), the comments as
    ``(line, text)``, and the object-like ``#define`` lines."""
    tokens: list[Token] = []
    comments: list[tuple[int, str]] = []
    defines: list[Define] = []
    line = 1
    pp: list[Token] | None = None  # the tokens of the preprocessor line being read
    pp_line = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - `other` matches any character
            break
        kind = m.lastgroup or "other"
        s = m.group()
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "nl":
            if pp is not None and not (pp and pp[-1].text == "\\"):
                _preprocessor(pp, pp_line, defines)
                pp = None
            elif pp is not None:
                pp.pop()  # a continued line
            line += 1
            continue
        if kind in ("lc", "bc"):
            comments.append((line, s))
            line += s.count("\n")
            continue
        if kind == "pp" and pp is None and (not tokens or tokens[-1].line != line):
            pp, pp_line = [], line
            continue
        tok = Token("op" if kind == "op" else kind, s, line, m.start())
        if kind == "str":
            line += s.count("\n")
        if pp is not None:
            pp.append(tok)
        else:
            tokens.append(tok)
    if pp is not None:
        _preprocessor(pp, pp_line, defines)
    return tokens, comments, defines


def _preprocessor(toks: list[Token], line: int, defines: list[Define]) -> None:
    if len(toks) >= 2 and toks[0].text == "define" and toks[1].kind == "name":
        if len(toks) > 2 and toks[2].text == "(" and toks[2].pos == toks[1].pos + len(toks[1].text):
            return  # `#define F(x)`: a macro with parameters (`#define A (1 + 2)` has a space)
        defines.append(Define(toks[1].text, tuple(toks[2:]), line))


def split_args(toks: list[Token]) -> list[list[Token]]:
    """Split at the commas outside brackets."""
    out: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        if t.text == "," and depth == 0:
            out.append([])
            continue
        out[-1].append(t)
    return out if out != [[]] else []


# C's binary operators, loosest first (the ternary is looser still)
BINARY_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
                 ("+", "-"), ("*", "/", "%"))  # fmt: skip


def split_top(toks: list[Token], op: str) -> list[list[Token]]:
    """Split at ``op`` (``&&``, ``||``) outside parentheses and brackets; empty parts dropped."""
    out: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if t.text == op and depth == 0:
            out.append([])
            continue
        out[-1].append(t)
    return [c for c in out if c]


def statement_end(toks: list[Token], j: int) -> int:
    """The ``;`` ending the statement at token ``j``, or the bracket closing
    the one it is in (or len(toks))."""
    depth = 0
    for k in range(j, len(toks)):
        t = toks[k].text
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            if depth == 0:
                return k
            depth -= 1
        elif t == ";" and depth == 0:
            return k
    return len(toks)


def matching_open(toks: list[Token], i: int) -> int:
    """The index of the ``(`` opening the ``)`` at ``i`` (or -1)."""
    depth = 0
    for j in range(i, -1, -1):
        t = toks[j].text
        if t == ")":
            depth += 1
        elif t == "(":
            depth -= 1
            if depth == 0:
                return j
    return -1


def matching(toks: list[Token], i: int) -> int:
    """The index of the bracket closing the one at ``i`` (or len(toks))."""
    opening = toks[i].text
    closing = {"(": ")", "[": "]", "{": "}", "<<<": ">>>"}[opening]
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t == opening:
            depth += 1
        elif t == closing:
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


_INT = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uUlL]*\Z")
_TYPE_WORDS = frozenset(
    "int unsigned signed long short char size_t uint32_t int32_t uint64_t int64_t uint16_t int16_t "
    "uint8_t int8_t bool auto const constexpr volatile static".split()
)
_MAX_DEPTH = 16


def int_of(text: str) -> int | None:
    t = text.replace("'", "")
    m = _INT.match(t)
    if not m:
        return None
    s = m.group(1)
    if s.lower().startswith("0x"):
        return int(s, 16)
    if s.lower().startswith("0b"):
        return int(s[2:], 2)
    if len(s) > 1 and s.startswith("0"):
        return int(s, 8)
    return int(s)


class Evaluator:
    """Integer constant expressions over tokens; ``name(text)`` gives a
    name's value (an int, a tuple for a ``dim3``, or None). ``dim3(...)``
    and ``dim3{...}`` give 3-tuples; ``v.x`` reads one of them."""

    def __init__(self, name: Callable[[str], Any], call: Callable[[str, list[int]], Any] | None = None):
        self.name = name
        self.call = call  # a call of a function the file defines, folded (`cuda_source`): None if unknown
        self.toks: list[Token] = []
        self.i = 0
        self.depth = 0

    def value(self, toks: list[Token]) -> Any:
        if not toks or self.depth > _MAX_DEPTH:
            return None
        saved = (self.toks, self.i)
        self.toks, self.i = list(toks), 0
        self.depth += 1
        try:
            v = self._ternary()
            return v if self.i == len(self.toks) else None
        except _Unknown:
            return None
        finally:
            self.depth -= 1
            self.toks, self.i = saved

    # -- the grammar ------------------------------------------------------------------------

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.toks[j].text if j < len(self.toks) else ""

    def _take(self, text: str | None = None) -> Token:
        if self.i >= len(self.toks) or (text is not None and self.toks[self.i].text != text):
            raise _Unknown
        self.i += 1
        return self.toks[self.i - 1]

    def _ternary(self) -> Any:
        c = self._binary(0)
        if self._peek() == "?":
            self._take("?")
            a = self._ternary()
            self._take(":")
            b = self._ternary()
            return a if _int(c) else b
        return c

    _LEVELS = BINARY_LEVELS

    def _binary(self, level: int) -> Any:
        if level == len(self._LEVELS):
            return self._unary()
        a = self._binary(level + 1)
        while self._peek() in self._LEVELS[level]:
            op = self._take().text
            b = self._binary(level + 1)
            a = _apply(op, _int(a), _int(b))
        return a

    def _unary(self) -> Any:
        t = self._peek()
        if t in ("-", "+", "~", "!"):
            self._take()
            v = _int(self._unary())
            return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[t]
        if t == "(" and self._is_cast():
            self._take("(")
            while self._peek() != ")":
                self._take()
            self._take(")")
            return self._unary()
        return self._postfix()

    def _is_cast(self) -> bool:
        j = self.i + 1
        words = []
        while j < len(self.toks) and self.toks[j].text != ")":
            words.append(self.toks[j].text)
            j += 1
        return bool(words) and all(w in _TYPE_WORDS or w in ("*", "::", "std") for w in words)

    def _postfix(self) -> Any:
        v = self._primary()
        while self._peek() == ".":
            self._take(".")
            member = self._take().text
            if not isinstance(v, tuple) or member not in ("x", "y", "z"):
                raise _Unknown
            v = v["xyz".index(member)]
        return v

    def _primary(self) -> Any:
        tok = self._take()
        if tok.kind == "num":
            v = int_of(tok.text)
            if v is None:
                raise _Unknown
            return v
        if tok.text == "(":
            v = self._ternary()
            self._take(")")
            return v
        if tok.kind != "name":
            raise _Unknown
        name = tok.text
        while self._peek() == "::":  # std::min, a namespace's constant
            self._take("::")
            name = self._take().text
        if name in ("static_cast", "int", "unsigned") and self._peek() in ("<", "("):
            if self._peek() == "<":
                while self._peek() != ">":
                    self._take()
                self._take(">")
            self._take("(")
            v = self._ternary()
            self._take(")")
            return v
        if name == "dim3" and self._peek() in ("(", "{"):
            args = self._call_args()
            if not 1 <= len(args) <= 3:
                raise _Unknown
            dims = [_int(a) for a in args] + [1] * (3 - len(args))
            return (dims[0], dims[1], dims[2])
        if name in ("min", "max") and self._peek() == "(":
            args = [_int(a) for a in self._call_args()]
            if len(args) != 2:
                raise _Unknown
            return min(args) if name == "min" else max(args)
        if name in ("true", "false"):
            return int(name == "true")
        if self.call is not None and self._peek() == "(":
            v = self.call(name, [_int(a) for a in self._call_args()])
            if v is None:
                raise _Unknown
            return v
        v = self.name(name)
        if v is None:
            raise _Unknown
        return v

    def _call_args(self) -> list[Any]:
        opening = self._take().text
        closing = ")" if opening == "(" else "}"
        start = self.i
        depth = 1
        while self.i < len(self.toks):
            t = self.toks[self.i].text
            if t in ("(", "{", "["):
                depth += 1
            elif t in (")", "}", "]"):
                depth -= 1
                if depth == 0:
                    break
            self.i += 1
        inner = self.toks[start : self.i]
        self._take(closing)
        out = []
        for arg in split_args(inner):
            v = Evaluator(self.name, self.call)
            v.depth = self.depth
            got = v.value(arg)
            if got is None:
                raise _Unknown
            out.append(got)
        return out


class _Unknown(Exception):
    pass


def _int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, int):
        raise _Unknown
    return v


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise _Unknown
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise _Unknown
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # C truncates toward zero
    if op == "%":
        return a - b * _apply("/", a, b)
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)), "|": lambda: a | b,
        "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
    }[op]()  # fmt: skip
