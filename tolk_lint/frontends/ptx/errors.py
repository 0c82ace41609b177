"""Syntax errors (TL001): `PtxSyntaxError`, and lark's exceptions said in
words a PTX author reads.

`syntax_error` turns lark's `UnexpectedInput` into a `PtxSyntaxError` with
a message and a span: the unexpected text and what the grammar expected
there (terminal names said in words: "`;`", "an instruction", "a state space",
...); the file ending early ("truncated PTX?"); an instruction that never
reaches its ``;`` (the file ends, or a brace comes first); a ``;`` missing
at the end of a line. The lowering turns the exception into the TL001
diagnostic.

What it may import: `source` (line and column of an offset), and lark.
"""

from __future__ import annotations

import re

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from .source import line_col


class PtxSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int, end_line: int | None = None, end_column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.end_line = end_line if end_line is not None else line
        self.end_column = end_column if end_column is not None else column + 1


_HUMAN = {
    "SEMI": "`;`",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "COMMA": "`,`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "VBAR": "`|`",
    "BANG": "`!`",
    "PLUS": "`+`",
    "EQUAL": "`=`",
    "LESSTHAN": "`<`",
    "MORETHAN": "`>`",
    "IDENT": "an identifier",
    "OPCODE": "an instruction",
    "LABEL": "a label",
    "GUARD": "a guard `@%p`",
    "INT": "an integer",
    "HEXF": "a number",
    "HEXD": "a number",
    "FLOAT": "a number",
    "STRING": "a string",
    "DOTWORD": "a type or qualifier",
    "SPACE": "a state space (`.global`, `.shared`, ...)",
    "FUNC_KIND": "`.entry` or `.func`",
    "LINKAGE": "`.visible`/`.extern`/`.weak`",
    "PERF": "a performance directive",
    "SECTION": "a `.section`",
    "INIT_LIST": "an initialiser `{...}`",
    "VERSION_NUM": "a version number",
    "PARAM_KW_OR_REG": "`.param`",
    "TARGETS_KW": "`.branchtargets`",
    "$END": "end of file",
    "RUN": "an instruction",
    "LOC": "`.loc`",
}
_PREFERRED = ["RUN", "OPCODE", "SEMI", "RBRACE", "LBRACE", "IDENT", "LABEL", "INT", "COMMA", "RSQB", "FUNC_KIND", "SPACE"]


_ANON: dict[str, str] | None = None


def _anonymous_terminals(lk: Lark) -> dict[str, str]:
    """The terminals the grammar spells inline (``".version"``): name -> text."""
    global _ANON
    if _ANON is None:
        _ANON = {t.name: t.pattern.value for t in lk.terminals if isinstance(t.pattern, PatternStr)}
    return _ANON


def _human_expected(names, lk: Lark) -> str:
    names = set(names)
    hum = []
    order = [n for n in _PREFERRED if n in names] + sorted(n for n in names if n not in _PREFERRED)
    anon = _anonymous_terminals(lk)
    if any(anon.get(n) == ".version" for n in names):
        return "a PTX directive (`.version`, `.target`, `.entry`, `.func`, `.global`, ...)"
    for n in order:
        h = _HUMAN.get(n)
        if h is None and n in anon:
            h = f"`{anon[n]}`"
        if h is None:
            if n.startswith("_"):
                continue
            h = "`" + n.lower().replace("_", "") + "`" if not n.isupper() else f"`.{n.lower()}`"
        if h not in hum:
            hum.append(h)
    if len(hum) > 6:
        hum = hum[:6] + ["..."]
    return ", ".join(hum) if hum else "nothing"


def _describe_found(s: str) -> str:
    s = s.replace("\n", " ")
    if len(s) > 30:
        s = s[:30] + "..."
    if any(ord(ch) < 32 and ch not in "\t" or 0x7F <= ord(ch) < 0xA0 or ch == "\ufffd" for ch in s):
        return "binary data " + repr(s[:12])
    return f"`{s}`"


_HEAD_RE = re.compile(
    r"(?:@!?%?[A-Za-z_$][\w$]*[ \t]*)?[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*)*(?![\w$:])(?![ \t]*:)"
)
_STMT_BODY_RE = re.compile(r'(?:[^;{}"]|\{[^{};]*\})*')


def _short(s: str, n: int = 40) -> str:
    s = " ".join(s[: 4 * n].split())
    return s if len(s) <= n else s[: n - 3] + "..."


def _unterminated(text: str, pos: int) -> PtxSyntaxError | None:
    """An instruction at ``pos`` that never reaches its `;`: the file ends
    (truncated), or a brace comes first."""
    head = _HEAD_RE.match(text, pos)
    if head is None or head.end() == pos:
        return None
    end = _STMT_BODY_RE.match(text, head.end()).end()
    stmt = text[pos:end].rstrip()
    stop = pos + len(stmt)
    l2, c2 = line_col(text, stop)
    if end >= len(text) or not text[end:].strip():
        return PtxSyntaxError(f"the file ends inside `{_short(stmt)}` (truncated PTX?); expected `;`", l2, c2, l2, c2 + 1)
    if text[end] in "{}":
        nl = stmt.find("\n")
        if nl >= 0:
            # it should most likely have ended on its first line
            stmt = stmt[:nl].rstrip()
            l2, c2 = line_col(text, pos + len(stmt))
            return PtxSyntaxError(f"missing `;` after `{_short(stmt)}`", l2, c2, l2, c2 + 1)
        return PtxSyntaxError(f"missing `;` after `{_short(stmt)}`; found `{text[end]}`", l2, c2, l2, c2 + 1)
    return None


def syntax_error(e: UnexpectedInput, text: str, lk: Lark) -> PtxSyntaxError:
    """lark's exception ``e`` while parsing ``text`` with ``lk``, as a `PtxSyntaxError`."""
    if isinstance(e, UnexpectedCharacters):
        line, col = e.line, e.column
        pos = e.pos_in_stream
        u = _unterminated(text, pos) if "RUN" in (e.allowed or ()) else None
        if u is not None:
            return u
        m = re.compile(r"\S+").match(text, pos)
        found = m.group() if m else text[pos : pos + 1]
        exp = _human_expected(e.allowed or [], lk)
        end_col = col + max(1, min(len(found), 40) if m else 1)
        return PtxSyntaxError(f"unexpected {_describe_found(found)}; expected {exp}", line, col, line, end_col)
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        exp = _human_expected(getattr(e, "expected", None) or getattr(e, "accepts", None) or [], lk)
        stripped = text.rstrip()
        line, col = line_col(text, len(stripped))
        return PtxSyntaxError(f"unexpected end of file (truncated PTX?); expected {exp}", line, col)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = set(e.accepts or e.expected or [])
        if "RUN" in expected and isinstance(getattr(tok, "start_pos", None), int) and tok.type in ("OPCODE", "IDENT"):
            u = _unterminated(text, tok.start_pos)
            if u is not None:
                return u
        exp = _human_expected(expected, lk)
        start = getattr(tok, "start_pos", None)
        if "SEMI" in expected and isinstance(start, int) and 0 < start <= len(text):
            j = start - 1
            while j >= 0 and text[j] in " \t\r\n":
                j -= 1
            if j >= 0 and "\n" in text[j + 1 : start]:
                l2, c2 = line_col(text, j + 1)
                return PtxSyntaxError(
                    f"missing `;` at the end of the line; found {_describe_found(_short(str(tok), 20))} "
                    "on the next line",
                    l2, c2, l2, c2 + 1,
                )  # fmt: skip
        end_col = tok.end_column if tok.end_line == tok.line and tok.end_column else tok.column + len(str(tok))
        return PtxSyntaxError(f"unexpected {_describe_found(str(tok))}; expected {exp}", tok.line, tok.column,
                              tok.line, end_col)  # fmt: skip
    return PtxSyntaxError(str(e).splitlines()[0], getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)
