"""The grammar's rule callbacks: lark's reductions -> the light tree (`tree`).

`ToTuples` is the `Transformer` passed to the `Lark` constructor, so the
LALR parser calls it as it reduces each rule and no lark `Tree` is ever
built: parsing is one linear pass over the tokens. Declarations become the
dataclasses of `tree` (their element type and vector width read from their
attributes), statements and operands the tagged tuples; a RUN token (a run
of ordinary statements) goes to the fast decoder.

What it may import: `tree`, `literals`, `decoder`, and lark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lark import Transformer

from .decoder import decode_run
from .literals import hexd, hexf, parse_int
from .tree import FuncDecl, ParamDecl, ProtoDecl, VarDecl


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


class ToTuples(Transformer):
    """Rule callbacks, run by the LALR parser as it reduces (no tree).

    ``slow_instruction(text, pos)`` reads one statement with the grammar's
    `instruction` rule, for what the fast decoder of RUN tokens does not."""

    def __init__(self, slow_instruction: Callable[[str, tuple], tuple]):
        super().__init__(visit_tokens=False)
        self._slow_instruction = slow_instruction

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
        return ("address_size", parse_int(c[0]))

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
        return decode_run(c[0], self._slow_instruction)

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
