"""The text as lark sees it, and positions in it.

Before lark sees the text, comments are blanked out (`//` to the end of the
line is removed, `/* */` becomes spaces with its newlines kept; string
literals are left alone), so every line and column of the remaining text is
where it was in the file. `line_col` turns an offset into that text into a
1-based (line, column).

What it may import: nothing of the front end.
"""

from __future__ import annotations

import re

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


def line_col(text: str, off: int) -> tuple[int, int]:
    line = text.count("\n", 0, off) + 1
    return line, off - (text.rfind("\n", 0, off) + 1) + 1
