"""``tolk: launch block=(X,Y,Z)`` comments, in any of the three languages.

The comment stands on its own line above the kernel (Python: above its
decorators, or between them and the ``def``; PTX: above the ``.entry``;
CUDA C: above the ``__global__`` definition, its ``template`` line and
``extern "C"`` included), with nothing but other comments, blank lines or
those header lines between. ``launch: block=(...)`` (without ``tolk:``) is
read too: the acceptance kernels' spelling. ``Y`` and ``Z`` default to 1.
"""

from __future__ import annotations

import re

from tolk_lint.launch.shapes import LaunchShape, valid_block

_BODY = r"(?:tolk:\s*launch:?|launch:)\s*block\s*=\s*\(?\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?,?\s*\)?"
LAUNCH = {"#": re.compile(r"#\s*" + _BODY), "//": re.compile(r"//\s*" + _BODY)}


def block_in(text: str, marker: str) -> tuple[int, int, int] | None:
    """The block a launch comment on this line states, or None."""
    m = LAUNCH[marker].search(text)
    if not m:
        return None
    x, y, z = (int(g) if g else 1 for g in m.groups())
    return (x, y, z)


def comment_above(lines: list[str], first: int, marker: str, skip=None) -> tuple[int, tuple[int, int, int]] | None:
    """``(line, block)`` of the launch comment on the comment lines right
    above line ``first`` (1-based), looking through blank lines and the
    lines ``skip(text)`` says belong to the header; None when there is none."""
    ln = first - 1
    while ln >= 1:
        text = lines[ln - 1].strip()
        if text.startswith(marker):
            block = block_in(text, marker)
            if block is not None:
                return ln, block
        elif text and not (skip is not None and skip(text)):
            return None
        ln -= 1
    return None


def comment_shape(line: int, block: tuple[int, int, int], path: str | None, file_label: str = "") -> LaunchShape | None:
    """The shape a comment found at ``line`` gives (``file_label``: the
    file's name, when it is not the linted file)."""
    if not valid_block(block):
        return None
    where = f"{file_label}:{line}" if file_label else f"line {line}"
    return LaunchShape(block, f"the `tolk: launch` comment at {where}", "comment", path=path, line=line)
