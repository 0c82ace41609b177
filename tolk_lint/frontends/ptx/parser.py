"""PTX text -> a light syntax tree of tuples (no lark `Tree` is built).

The grammar (`ptx.lark`) is LALR(1) with lark's contextual lexer; a
`Transformer` passed to the `Lark` constructor turns every rule into plain
tuples while parsing, so parsing is one linear pass over the tokens.

Before lark sees the text, comments are blanked out (`//` to the end of the
line is removed, `/* */` becomes spaces with its newlines kept), so every
line and column of the remaining text is where it was in the file.

The tree (all positions are 1-based lines/columns of the file):

- `PtxFile`: ``items`` in file order: `FuncDecl`, `VarDecl`, ``("version", s)``,
  ``("target", [names])``, ``("file", index, path)``, ``("loc", ...)``, ...
- `FuncDecl`: header facts, and ``body`` (list of statements, or None for a
  declaration).
- statements are tuples tagged by their first element:
  ``("I", guard, opcode, operands, pos)`` instruction (``guard`` is None or
  ``(negated, name)``; ``pos`` is ``(line, col, end_line, end_col, start,
  end)`` with ``start``/``end`` offsets into the text);
  ``("L", name, line, col)`` label; ``("R", type, [(name, count|None)])``
  ``.reg``; ``("V", VarDecl)``; ``("C", file, line, col, inlined_at|None)``
  ``.loc``; ``("B", [statements])`` a ``{ }`` scope; ``("X", ProtoDecl)``
  ``.callprototype``; ``("P",)`` pragma and other ignorable directives.
- operands: ``("r", name)`` register or symbol; ``("d", a, b)`` ``a|b``;
  ``("!", name)``; ``("i", int)``; ``("f", float, "f32"|"f64"|None)``;
  ``("m", base, offset, extras)`` a ``[...]`` address (``base`` is an operand
  tuple or None); ``("v", [operands])`` ``{...}``; ``("g", [operands])``
  ``(...)``; ``("x", name, index)`` ``sym[i]``; ``("o", name, offset)``
  ``sym+off``.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lark import Lark, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

PTX_GRAMMAR_PATH = Path(__file__).with_name("ptx.lark")


@dataclass
class ParamDecl:
    name: str
    dtype: str  # "u64", "b8", ... ("" when only an array of bytes)
    attrs: list[str]
    align: int = 0
    shape: tuple[int | None, ...] = ()
    space: str | None = None  # .ptr .global -> "global"


@dataclass
class VarDecl:
    name: str
    space: str  # global shared const local param tex
    dtype: str
    attrs: list[str]
    linkage: list[str]
    align: int = 0
    shape: tuple[int | None, ...] = ()
    init: list[Any] | None = None
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass
class ProtoDecl:
    name: str
    rets: list[ParamDecl]
    params: list[ParamDecl]


@dataclass
class FuncDecl:
    kind: str  # "entry" | "func"
    name: str
    linkage: list[str]
    rets: list[ParamDecl]
    params: list[ParamDecl]
    perf: list[tuple[str, list[int]]]
    body: list[tuple] | None
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass
class PtxFile:
    items: list[Any] = field(default_factory=list)
    clean: str = ""  # the text parsed: comments blanked, every line and column in place
    files: dict[int, str] = field(default_factory=dict)
    target: str | None = None
    target_flags: list[str] = field(default_factory=list)
    version: str | None = None


class PtxSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int, end_line: int | None = None, end_column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.end_line = end_line if end_line is not None else line
        self.end_column = end_column if end_column is not None else column + 1


# -- comment stripping -----------------------------------------------------------

_COMMENT_RE = re.compile(r'"[^"\n]*"|//[^\n]*|/\*.*?\*/', re.S)
_FAST_LINE_COMMENT = re.compile(r"//[^\n]*")


def _blank(m: re.Match) -> str:
    s = m.group()
    if s[0] == '"':
        return s
    if s[1] == "/":
        return ""
    return re.sub(r"[^\n]", " ", s)


def strip_comments(text: str) -> str:
    """Remove comments, keeping every other character at its line and column."""
    if '"' not in text and "/*" not in text:
        return _FAST_LINE_COMMENT.sub("", text)
    return _COMMENT_RE.sub(_blank, text)


# -- numbers --------------------------------------------------------------------------


def parse_int(s: str) -> int:
    if s[-1] in "uU":
        s = s[:-1]
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    if s[:2] in ("0x", "0X"):
        v = int(s[2:], 16)
    elif s[:2] in ("0b", "0B"):
        v = int(s[2:], 2)
    elif len(s) > 1 and s[0] == "0" and s.isdigit() and all(c in "01234567" for c in s):
        v = int(s, 8)
    else:
        v = int(s)
    return -v if neg else v


def hexf(s: str) -> float:
    return struct.unpack(">f", bytes.fromhex(s[2:]))[0]


def hexd(s: str) -> float:
    return struct.unpack(">d", bytes.fromhex(s[2:]))[0]


# -- the transformer ----------------------------------------------------------------


def _type_of(attrs: list[str]) -> str:
    """The element type among declaration attributes (``.v4 .f32`` -> f32)."""
    t = ""
    for a in attrs:
        w = a[1:]
        if w in _DECL_TYPES or (w[:1] in "bsuf" and w[1:].isdigit()):
            t = w
    return t


_DECL_TYPES = frozenset(
    "pred b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64 tf32 "
    "texref surfref samplerref e4m3 e5m2 e4m3x2 e5m2x2".split()
)


def _vec_of(attrs: list[str]) -> int:
    for a in attrs:
        if a in (".v2", ".v4", ".v8"):
            return int(a[2:])
    return 1


class _ToTuples(Transformer):
    """Rule callbacks, run by the LALR parser as it reduces (no tree)."""

    def __init__(self):
        super().__init__(visit_tokens=False)

    # module-level
    def start(self, c):
        return c

    def alias(self, c):
        return ("alias", str(c[0]), str(c[1]))

    def version(self, c):
        return ("version", str(c[0]))

    def target(self, c):
        return ("target", [str(x) for x in c])

    def address_size(self, c):
        return ("address_size", int(c[0]))

    def file(self, c):
        return ("file", parse_int(c[0]), c[1][1:-1])

    def linkages(self, c):
        return list(c)

    def function(self, c):
        i = 0
        linkage: list[str] = []
        if isinstance(c[0], list):
            linkage = c[0]
            i = 1
        kind_tok = c[i]
        i += 1
        rets: list[ParamDecl] = []
        if isinstance(c[i], tuple) and c[i][0] == "rets":
            rets = c[i][1]
            i += 1
        name_tok = c[i]
        i += 1
        params: list[ParamDecl] = []
        if i < len(c) and isinstance(c[i], tuple) and c[i][0] == "params":
            params = c[i][1]
            i += 1
        perf = []
        body = None
        for x in c[i:]:
            if isinstance(x, tuple) and x[0] == "perf":
                perf.append((x[1], x[2]))
            elif isinstance(x, tuple) and x[0] == "tail":
                body = x[1]
        first = linkage[0] if linkage else kind_tok
        return FuncDecl(
            kind=kind_tok[1:],
            name=str(name_tok),
            linkage=[str(x) for x in linkage],
            rets=rets,
            params=params,
            perf=perf,
            body=body,
            line=first.line,
            column=first.column,
            end_line=name_tok.end_line,
            end_column=name_tok.end_column,
        )

    def func_rets(self, c):
        return ("rets", c[0] if c else [])

    def func_params(self, c):
        return ("params", c[0] if c else [])

    def func_tail(self, c):
        x = c[0]
        if isinstance(x, tuple):
            return ("tail", x[1])
        return ("tail", None)

    def param_list(self, c):
        return c

    def param_decl(self, c):
        attrs = [str(c[0])]
        align = 0
        shape: list[int | None] = []
        name = ""
        for x in c[1:]:
            if isinstance(x, tuple):
                if x[0] == "align":
                    align = x[1]
                elif x[0] == "array":
                    shape.append(x[1])
            elif x.type == "IDENT":
                name = str(x)
            else:
                attrs.append(str(x))
        space = None
        if ".ptr" in attrs:
            for a in attrs:
                if a in (".global", ".shared", ".const", ".local"):
                    space = a[1:]
        return ParamDecl(name, _type_of(attrs), attrs, align, tuple(shape), space)

    def perf(self, c):
        return ("perf", str(c[0]), c[1] if len(c) > 1 else [])

    def perf_pragma(self, c):
        return ("perf", ".pragma", [str(x)[1:-1] for x in c if getattr(x, "type", "") == "STRING"])

    def int_list(self, c):
        return [parse_int(x) for x in c]

    def body(self, c):
        out = []
        for x in c[1:-1]:
            if type(x) is list:
                out.extend(x)
            else:
                out.append(x)
        return ("B", out)

    # declarations
    def reg_decl(self, c):
        attrs = [str(x) for x in c if getattr(x, "type", None) == "DOTWORD"]
        names = [x for x in c if isinstance(x, tuple)]
        return ("R", _type_of(attrs) or "b32", names, _vec_of(attrs))

    def reg_name(self, c):
        return (str(c[0]), parse_int(c[1]) if len(c) > 1 else None)

    def var_decl(self, c):
        linkage: list[str] = []
        attrs: list[str] = []
        align = 0
        shape: list[int | None] = []
        init = None
        name = ""
        space = ""
        first = None
        semi = c[-1]
        for x in c:
            if isinstance(x, list):
                linkage = x
            elif isinstance(x, tuple):
                if x[0] == "align":
                    align = x[1]
                elif x[0] == "array":
                    shape.append(x[1])
                elif x[0] == "init":
                    init = x[1]
            else:
                t = x.type
                if t == "SPACE":
                    space = x[1:]
                    first = x
                elif t == "IDENT":
                    name = str(x)
                elif t == "DOTWORD":
                    attrs.append(str(x))
        if linkage:
            first = linkage[0]
        line = first.line if first is not None else semi.line
        col = first.column if first is not None else semi.column
        d = VarDecl(name, space, _type_of(attrs) or "b8", attrs, [str(x) for x in linkage], align, tuple(shape), init,
                    line, col, semi.end_line, semi.end_column)  # fmt: skip
        return ("V", d)

    def attr(self, c):
        return c[0]

    def align(self, c):
        return ("align", parse_int(c[0]))

    def array(self, c):
        return ("array", parse_int(c[0]) if c else None)

    def init_list(self, c):
        body = str(c[0])
        return ("init", _parse_init_list(body))

    def init_scalar(self, c):
        v = c[0]
        if isinstance(v, tuple):
            if v[0] in ("i", "f"):
                return ("init", [v[1]])
            return ("init", [v])
        return ("init", [str(v)])

    def init_symoff(self, c):
        return ("o", str(c[0]), parse_int(c[1]))

    def init_generic(self, c):
        return ("r", str(c[1]))

    def callprototype(self, c):
        rets: list[ParamDecl] = []
        params: list[ParamDecl] = []
        name = ""
        for x in c:
            if isinstance(x, tuple):
                if x[0] == "rets":
                    rets = x[1]
                elif x[0] == "params":
                    params = x[1]
            elif x.type == "IDENT":
                name = str(x)
        return ("X", ProtoDecl(name, rets, params))

    def targets(self, c):
        return ("P",)

    def loc(self, c):
        f, line, col = parse_int(c[0]), parse_int(c[1]), parse_int(c[2])
        inl = None
        for x in c[3:]:
            if isinstance(x, tuple) and x[0] == "inl":
                inl = x[1]
        return ("C", f, line, col, inl, c[0].line)

    def loc_name(self, c):
        return ("name", str(c[1]))

    def loc_inlined(self, c):
        return ("inl", (parse_int(c[1]), parse_int(c[2]), parse_int(c[3])))

    def pragma(self, c):
        return ("P",)

    def label(self, c):
        t = c[0]
        name = t.value.rstrip()[:-1].rstrip()
        return ("L", name, t.line, t.column)

    def run(self, c):
        return decode_run(c[0])

    def loc_token(self, c):
        t = c[0]
        m = _LOC_RE.match(t.value)
        inl = None
        if m.group(5) is not None:
            inl = (int(m.group(5)), int(m.group(6)), int(m.group(7)))
        return ("C", int(m.group(1)), int(m.group(2)), int(m.group(3)), inl, t.line)

    # instructions
    def instruction(self, c):
        n = len(c)
        semi = c[-1]
        if c[0].type == "GUARD":
            g = c[0].value
            guard = (True, g[2:]) if g[1] == "!" else (False, g[1:])
            op = c[1]
            ops = c[2] if n == 4 else []
            first = c[0]
        else:
            guard = None
            op = c[0]
            ops = c[1] if n == 3 else []
            first = op
        return ("I", guard, op.value, ops, (first.line, first.column, semi.end_line, semi.end_column,
                                            first.start_pos, semi.end_pos))  # fmt: skip

    def operands(self, c):
        return c

    def ref(self, c):
        return ("r", c[0].value)

    def dual(self, c):
        return ("d", c[0].value, c[1].value)

    def notref(self, c):
        return ("!", c[0].value)

    def int(self, c):
        return ("i", parse_int(c[0].value))

    def hexf(self, c):
        return ("f", hexf(c[0].value), "f32")

    def hexd(self, c):
        return ("f", hexd(c[0].value), "f64")

    def float(self, c):
        return ("f", float(c[0].value), None)

    def mem(self, c):
        return c[0]

    def address(self, c):
        # `[base]`, `[base+off]` (`+-8`), `[base, {coords}]`
        base = c[0]
        off = 0
        i = 1
        if len(c) > 1 and c[1][0] == "i":
            off = c[1][1]
            i = 2
        return ("m", base, off, list(c[i:]))

    def vec(self, c):
        return ("v", c[0] if c else [])

    def group(self, c):
        return ("g", c[0] if c else [])

    def indexed(self, c):
        return ("x", c[0].value, parse_int(c[1].value))

    def symoff(self, c):
        return ("o", c[0].value, c[1][1])


_LOC_RE = re.compile(
    r"\.loc[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)(?:[ \t]*,[ \t]*function_name[ \t]+([A-Za-z_$][\w$]*)(?:[ \t]*\+[ \t]*\d+)?)?"
    r"(?:[ \t]*,[ \t]*inlined_at[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+))?"
)

# -- the fast decoder of RUN tokens --------------------------------------------------
#
# Equivalent to the `instruction` and `loc` rules of the grammar for the shapes
# compilers emit; anything else goes to the `instruction` rule (slow, exact,
# with error positions).

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


_ATOMS: dict[str, tuple] = {}


def _atom(a: str) -> tuple:
    r = _ATOMS.get(a)
    if r is not None:
        return r
    r = _atom_uncached(a)
    _ATOMS[a] = r
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
        get = _ATOMS.get
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


def decode_run(tok) -> list:
    """A RUN token -> its statements: ``("I", ...)`` and ``("C", ...)`` tuples."""
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
                out.append(_slow_instruction(s[a:b], p))
        pos = b
    return out


def decode_instruction(tok) -> tuple:
    """One instruction token (tests, tools) -> ``("I", guard, opcode, operands, pos)``."""
    return decode_run(tok)[0]


def _slow_instruction(text: str, pos: tuple) -> tuple:
    try:
        r = _lark().parse(text, start="instruction")
    except UnexpectedInput as e:
        err = _syntax_error(e, text)
        line = pos[0] + err.line - 1
        col = err.column + pos[1] - 1 if err.line == 1 else err.column
        end_col = err.end_column + pos[1] - 1 if err.end_line == 1 else err.end_column
        raise PtxSyntaxError(err.message, line, col, line, end_col) from None
    return ("I", r[1], r[2], r[3], pos)


def _parse_init_list(body: str) -> list[Any]:
    inner = body.strip()[1:-1]
    if "{" in inner:
        inner = inner.replace("{", ",").replace("}", ",")
    out: list[Any] = []
    for part in inner.split(","):
        p = part.strip()
        if not p:
            continue
        try:
            out.append(parse_int(p))
        except ValueError:
            if p[:2] in ("0f", "0F") and len(p) == 10:
                out.append(hexf(p))
            elif p[:2] in ("0d", "0D") and len(p) == 18:
                out.append(hexd(p))
            else:
                try:
                    out.append(float(p))
                except ValueError:
                    out.append(p)
    return out


# -- driver ----------------------------------------------------------------------------

_PARSER: Lark | None = None


def _lark() -> Lark:
    global _PARSER
    if _PARSER is None:
        _PARSER = Lark(
            PTX_GRAMMAR_PATH.read_text(),
            parser="lalr",
            lexer="contextual",
            maybe_placeholders=False,
            propagate_positions=False,
            start=["start", "instruction"],
            transformer=_ToTuples(),
        )
    return _PARSER


def parse_tree(text: str) -> PtxFile:
    """Parse PTX text into a `PtxFile`. Raises `PtxSyntaxError`."""
    clean = strip_comments(text)
    lk = _lark()
    if len(_ATOMS) > 100_000:
        _ATOMS.clear()
    try:
        items = _parse_with(lk, clean)
    except UnexpectedInput as e:
        raise _syntax_error(e, clean) from None
    out = PtxFile(items=items, clean=clean)
    for it in items:
        if isinstance(it, tuple):
            if it[0] == "file":
                out.files[it[1]] = it[2]
            elif it[0] == "target":
                names = it[1]
                out.target = names[0] if names else None
                out.target_flags = names[1:]
            elif it[0] == "version":
                out.version = it[1]
    return out


def _parse_with(lk: Lark, text: str):
    return lk.parse(text, start="start")


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


def _anonymous_terminals() -> dict[str, str]:
    global _ANON
    if _ANON is None:
        from lark.lexer import PatternStr

        _ANON = {t.name: t.pattern.value for t in _lark().terminals if isinstance(t.pattern, PatternStr)}
    return _ANON


def _human_expected(names) -> str:
    names = set(names)
    hum = []
    order = [n for n in _PREFERRED if n in names] + sorted(n for n in names if n not in _PREFERRED)
    anon = _anonymous_terminals()
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


def _line_col(text: str, off: int) -> tuple[int, int]:
    line = text.count("\n", 0, off) + 1
    return line, off - (text.rfind("\n", 0, off) + 1) + 1


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
    l2, c2 = _line_col(text, stop)
    if end >= len(text) or not text[end:].strip():
        return PtxSyntaxError(f"the file ends inside `{_short(stmt)}` (truncated PTX?); expected `;`", l2, c2, l2, c2 + 1)
    if text[end] in "{}":
        nl = stmt.find("\n")
        if nl >= 0:
            # it should most likely have ended on its first line
            stmt = stmt[:nl].rstrip()
            l2, c2 = _line_col(text, pos + len(stmt))
            return PtxSyntaxError(f"missing `;` after `{_short(stmt)}`", l2, c2, l2, c2 + 1)
        return PtxSyntaxError(f"missing `;` after `{_short(stmt)}`; found `{text[end]}`", l2, c2, l2, c2 + 1)
    return None


def _syntax_error(e: UnexpectedInput, text: str) -> PtxSyntaxError:
    if isinstance(e, UnexpectedCharacters):
        line, col = e.line, e.column
        pos = e.pos_in_stream
        u = _unterminated(text, pos) if "RUN" in (e.allowed or ()) else None
        if u is not None:
            return u
        m = re.compile(r"\S+").match(text, pos)
        found = m.group() if m else text[pos : pos + 1]
        exp = _human_expected(e.allowed or [])
        end_col = col + max(1, min(len(found), 40) if m else 1)
        return PtxSyntaxError(f"unexpected {_describe_found(found)}; expected {exp}", line, col, line, end_col)
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        exp = _human_expected(getattr(e, "expected", None) or getattr(e, "accepts", None) or [])
        stripped = text.rstrip()
        line, col = _line_col(text, len(stripped))
        return PtxSyntaxError(f"unexpected end of file (truncated PTX?); expected {exp}", line, col)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = set(e.accepts or e.expected or [])
        if "RUN" in expected and isinstance(getattr(tok, "start_pos", None), int) and tok.type in ("OPCODE", "IDENT"):
            u = _unterminated(text, tok.start_pos)
            if u is not None:
                return u
        exp = _human_expected(expected)
        start = getattr(tok, "start_pos", None)
        if "SEMI" in expected and isinstance(start, int) and 0 < start <= len(text):
            j = start - 1
            while j >= 0 and text[j] in " \t\r\n":
                j -= 1
            if j >= 0 and "\n" in text[j + 1 : start]:
                l2, c2 = _line_col(text, j + 1)
                return PtxSyntaxError(
                    f"missing `;` at the end of the line; found {_describe_found(_short(str(tok), 20))} "
                    "on the next line",
                    l2, c2, l2, c2 + 1,
                )  # fmt: skip
        end_col = tok.end_column if tok.end_line == tok.line and tok.end_column else tok.column + len(str(tok))
        return PtxSyntaxError(f"unexpected {_describe_found(str(tok))}; expected {exp}", tok.line, tok.column,
                              tok.line, end_col)  # fmt: skip
    return PtxSyntaxError(str(e).splitlines()[0], getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)
