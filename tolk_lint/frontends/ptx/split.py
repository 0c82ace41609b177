"""Where a PTX file's functions are, found in its text before lark reads it.

The kernel-by-kernel reading (`stream`) parses one function at a time, so
it first needs to know where each ``.entry`` and ``.func`` definition
starts and ends. `find_functions` scans the comment-blanked text
(`source.strip_comments`) for the top-level ``{ }`` blocks that follow an
``.entry`` or ``.func`` keyword in the same statement: a function starts
at its first token (a linkage such as ``.visible``, or the keyword) and
ends at the brace that closes its body. The other top-level blocks
(initialiser lists, DWARF ``.section``s) and the ``.func`` prototypes that
end with ``;`` stay in the text around the functions.

The scan is a guess made by regular expressions, not a parse: it never has
to be right. The pieces it cuts are each parsed with the grammar
(`parser.parse_slice`) and checked against what it predicted (one function
of that name, starting there); a piece that does not parse, or parses to
something else, makes the caller read the file whole. What it must be is
cheap: one regex match per brace of a body, whatever the length of the
body between them.

What it may import: `tolk_lint.budget` (a 50 MB file takes a second).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tolk_lint import budget

# At the top level: strings (skipped whole: a brace in a `.file` name is not one),
# braces, the `;` that ends a statement, and the keywords that open a function.
_TOP = re.compile(r'"[^"\n]*"|[{};]|(?<![\w$.%])\.(?:entry|func)(?![\w$])')
# Inside a block: only braces count (and strings, which may hold them).
_BRACES = re.compile(r'"[^"\n]*"|[{}]')
# The linkages right before the keyword (`.visible .entry`), read backwards from it.
_LINKAGES = re.compile(r"(?<![\w$.%])(?:\.(?:visible|extern|weak|common)\s+)+\Z")
# The name after the keyword, past the `.func`'s return parameters `( ... )`.
_NAME = re.compile(r"\s*(?:\([^()]*\)\s*)?(%?[A-Za-z_$][\w$]*)")
LINKAGE_LOOKBACK = 100  # characters: a few linkage words, with the blanks between them


class NoFunctions(Exception):
    """The text does not split (a brace closes nothing, a body never closes):
    it is read whole, and the grammar says what is wrong."""


@dataclass(frozen=True, slots=True)
class FunctionText:
    """One function definition in the text: ``text[start:end]``. Lines and
    columns are 1-based, as lark counts them: (``line``, ``column``) is
    where it starts, (``name_line``, ``name_end_column``) where its name
    ends (the kernel's span), (``end_line``, ``end_column``) where it ends,
    which is where the text after it starts."""

    kind: str  # "entry" | "func"
    name: str
    start: int
    end: int
    line: int
    column: int
    name_line: int
    name_end_column: int
    end_line: int
    end_column: int


class _Lines:
    """Line and column of offsets visited in increasing order: the newlines
    are counted once over the whole text, not from its start each time."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0

    def at(self, off: int) -> tuple[int, int]:
        n = self.text.count("\n", self.pos, off)
        if n:
            self.line += n
            self.line_start = self.text.rfind("\n", self.pos, off) + 1
        self.pos = off
        return self.line, off - self.line_start + 1


def find_functions(clean: str) -> list[FunctionText]:
    """Every function definition of ``clean`` (comments blanked), in order.
    Raises `NoFunctions` when the braces do not balance."""
    out: list[FunctionText] = []
    lines = _Lines(clean)
    statement = 0  # where the current top-level statement starts
    keyword: re.Match | None = None  # the `.entry` / `.func` of the current statement
    pos = 0
    while True:
        m = _TOP.search(clean, pos)
        if m is None:
            return out
        tok = m.group()
        pos = m.end()
        if tok == ";":
            statement, keyword = pos, None  # a prototype, or any other declaration
        elif tok == "}":
            raise NoFunctions("a `}` closes no block")
        elif tok == "{":
            end = _block_end(clean, m.start())
            if keyword is not None:
                out.append(_function(clean, lines, statement, keyword, end))
                budget.check("reading the file (line %d)", out[-1].line)
                statement, keyword = end, None
            pos = end  # an initialiser list or a `.section` goes on to its `;` or the next item
        elif tok[0] == ".":
            keyword = m
    return out


def _block_end(clean: str, open_at: int) -> int:
    """The offset just past the brace that closes the block opened at ``open_at``."""
    depth = 0
    for m in _BRACES.finditer(clean, open_at):
        tok = m.group()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    raise NoFunctions("a block is never closed")


def _function(clean: str, lines: _Lines, statement: int, keyword: re.Match, end: int) -> FunctionText:
    kw = keyword.start()
    before = _LINKAGES.search(clean, max(statement, kw - LINKAGE_LOOKBACK), kw)
    start = before.start() if before is not None else kw
    name = _NAME.match(clean, keyword.end())
    if name is None:
        raise NoFunctions("a function without a name")
    line, column = lines.at(start)
    name_line, name_end_column = lines.at(name.end(1))
    end_line, end_column = lines.at(end)
    return FunctionText(keyword.group()[1:], name.group(1), start, end, line, column, name_line, name_end_column,
                        end_line, end_column)  # fmt: skip
