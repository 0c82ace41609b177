"""PTX text -> a light syntax tree of tuples (`tree`; no lark `Tree` is built).

`parse_tree` blanks the comments (`source`), then parses with the one
`Lark` parser of the grammar (`ptx.lark`: LALR(1), lark's contextual
lexer), built once per process from tables kept in the user's cache folder
(`lark_cache`), whose `transformer.ToTuples` callbacks build the tree as
the parser reduces; runs of ordinary statements are read by the fast
decoder (`decoder`), which hands what it cannot read back to the grammar's
`instruction` rule (`_slow_instruction`, here). A syntax error is raised as
`PtxSyntaxError`, its message and span made by `errors`; the module-level
facts (``.version``, ``.target``, ``.file``) are collected on the
`PtxFile`.

`parse_slice` parses a piece of the text alone (one function, or the
declarations between two), with every position as in the whole text: what
the kernel-by-kernel reading (`stream`) parses one function at a time with.
It needs lark's `TextSlice` (lark 1.2 and later; `SLICES` says whether this
lark has it).

The tree's dataclasses and `PtxSyntaxError` are re-exported here, where
callers have always imported them from.

What it may import: `tree`, `source`, `errors`, `decoder`, `transformer`,
`lark_cache`, and lark. Of the lowering, only `lower` imports it.
"""

from __future__ import annotations

from pathlib import Path

from lark import Lark
from lark.exceptions import UnexpectedInput
from lark.lexer import LexerState, LexerThread, LineCounter

try:
    from lark.utils import TextSlice
except ImportError:  # lark before 1.2: no slices, so files are parsed whole
    TextSlice = None  # type: ignore[assignment,misc]

from .decoder import ATOM_CACHE, decode_run
from .errors import PtxSyntaxError, syntax_error
from .lark_cache import cached_lark
from .source import line_col, strip_comments
from .transformer import ToTuples
from .tree import FuncDecl, ParamDecl, ProtoDecl, PtxFile, VarDecl

__all__ = [
    "PTX_GRAMMAR_PATH", "FuncDecl", "ParamDecl", "ProtoDecl", "PtxFile", "PtxSyntaxError", "VarDecl",
    "decode_instruction", "parse_slice", "parse_tree",
]  # fmt: skip

PTX_GRAMMAR_PATH = Path(__file__).with_name("ptx.lark")
SLICES = TextSlice is not None

_PARSER: Lark | None = None


def _lark() -> Lark:
    """The one parser of the grammar, made on first use; its tables come
    from the user's cache folder after the first run on a machine
    (`lark_cache`)."""
    global _PARSER
    if _PARSER is None:
        _PARSER = cached_lark(
            PTX_GRAMMAR_PATH.read_text(),
            parser="lalr",
            lexer="contextual",
            maybe_placeholders=False,
            propagate_positions=False,
            start=["start", "instruction"],
            transformer=ToTuples(_slow_instruction),
        )
    return _PARSER


def parse_tree(text: str) -> PtxFile:
    """Parse PTX text into a `PtxFile`. Raises `PtxSyntaxError`."""
    clean = strip_comments(text)
    lk = _lark()
    if len(ATOM_CACHE) > 100_000:
        ATOM_CACHE.clear()
    try:
        items = _parse_with(lk, clean)
    except UnexpectedInput as e:
        raise syntax_error(e, clean, lk) from None
    if not starts_with_version(items):
        raise _no_version(clean, bool(items))
    return ptx_file(items, clean)


def starts_with_version(items: list) -> bool:
    return bool(items) and isinstance(items[0], tuple) and items[0][0] == "version"


def ptx_file(items: list, clean: str) -> PtxFile:
    """The `PtxFile` of ``items``, with the module-level facts they hold."""
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


def parse_slice(clean: str, start: int, end: int, line: int, column: int) -> list:
    """The items of ``clean[start:end]`` (comments blanked, as `parse_tree`
    parses), which starts at ``line`` and ``column`` of ``clean``: every
    token's line, column and offset is the one it has in the whole text, so
    the items are those `parse_tree` would give for that stretch of the
    file. Raises lark's `UnexpectedInput` on a syntax error (the caller
    reads the file whole to report it). Needs `SLICES`.

    lark counts lines from the start of the text it is given; a slice
    starting at offset ``start`` would make it count the newlines before
    ``start`` first, for every piece of a file. The lexer's line counter is
    set to where the slice starts instead, and the parser driven with it as
    `Lark.parse` drives it."""
    lk = _lark()
    if len(ATOM_CACHE) > 100_000:
        ATOM_CACHE.clear()
    counter = LineCounter("\n")
    counter.char_pos = start
    counter.line = line
    counter.column = column
    counter.line_start_pos = start - (column - 1)
    lexer = LexerThread(lk.parser.lexer, LexerState(TextSlice(clean, start, end), counter))
    return lk.parser.parser.parse(lexer, "start")


def _no_version(clean: str, has_items: bool) -> PtxSyntaxError:
    """A file that does not open with ``.version``: ptxas stops there
    ("Missing .version directive at start of file"), an empty file too."""
    stripped = clean.lstrip()
    if not stripped:
        return PtxSyntaxError("not a PTX module: the file has no `.version` directive (it is empty or only "
                              "comments; ptxas rejects it)", 1, 1)  # fmt: skip
    line, col = line_col(clean, len(clean) - len(stripped))
    where = "does not start with" if has_items else "has no"
    return PtxSyntaxError(f"not a PTX module: the file {where} a `.version` directive (ptxas rejects it)", line, col)


def _parse_with(lk: Lark, text: str):
    return lk.parse(text, start="start")


def _slow_instruction(text: str, pos: tuple) -> tuple:
    """One statement the fast decoder does not read, by the grammar's
    `instruction` rule; a syntax error is placed at its position in the file."""
    lk = _lark()
    try:
        r = lk.parse(text, start="instruction")
    except UnexpectedInput as e:
        err = syntax_error(e, text, lk)
        line = pos[0] + err.line - 1
        col = err.column + pos[1] - 1 if err.line == 1 else err.column
        end_col = err.end_column + pos[1] - 1 if err.end_line == 1 else err.end_column
        raise PtxSyntaxError(err.message, line, col, line, end_col) from None
    return ("I", r[1], r[2], r[3], pos)


def decode_instruction(tok) -> tuple:
    """One instruction token (tests, tools) -> ``("I", guard, opcode, operands, pos)``."""
    return decode_run(tok, _slow_instruction)[0]
