"""The text as lark sees it, and positions in it.

Before lark sees the text, comments are blanked out (`//` to the end of the
line is removed, `/* */` becomes spaces with its newlines kept; string
literals are left alone), so every line and column of the remaining text is
where it was in the file. `line_col` turns an offset into that text into a
1-based (line, column).

What it may import: nothing of the front end; `tolk_lint.budget` (stripping
a 50 MB file takes seconds).
"""

from __future__ import annotations

import re

from tolk_lint import budget

_COMMENT_RE = re.compile(r'"[^"\n]*"|//[^\n]*|/\*.*?\*/', re.S)
_FAST_LINE_COMMENT = re.compile(r"//[^\n]*")


def _blank(m: re.Match) -> str:
    s = m.group()
    if s[0] == '"':
        return s
    if s[1] == "/":
        return ""
    return re.sub(r"[^\n]", " ", s)


# Text is stripped this many characters at a time (cut at a newline), with
# a budget check between: 50 MB of PTX takes seconds.
CHUNK = 1 << 20


def strip_comments(text: str) -> str:
    """Remove comments, keeping every other character at its line and column."""
    if "/*" in text:  # a block comment may span lines: the whole text at once
        return _COMMENT_RE.sub(_blank, text)
    parts = []
    start, line = 0, 1
    while start < len(text):
        if start:
            budget.check("reading the file (line %d)", line)
        end = text.find("\n", min(start + CHUNK, len(text) - 1))
        end = len(text) if end < 0 else end + 1
        chunk = text[start:end]
        # a `//` inside a string is not a comment: the slower pattern only where a string is
        parts.append(_COMMENT_RE.sub(_blank, chunk) if '"' in chunk else _FAST_LINE_COMMENT.sub("", chunk))
        line += parts[-1].count("\n")
        start = end
    return "".join(parts)


def line_col(text: str, off: int) -> tuple[int, int]:
    line = text.count("\n", 0, off) + 1
    return line, off - (text.rfind("\n", 0, off) + 1) + 1
