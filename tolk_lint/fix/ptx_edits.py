"""Line edits of a text: lines inserted before or after a line, a line
replaced or deleted, everything else kept byte for byte.

A rewrite records what it changes by line (`LineEdits`), then either
applies it (`apply`, the new text the proof lints) or turns it into the
`Edit`s of a `Fix` (`to_edits`): one edit per run of changed lines, each
replacing whole lines, so a diff shows exactly the lines that changed.
New lines take the file's own line ending.
"""

from __future__ import annotations

from tolk_lint.diagnostics import Edit


class LineEdits:
    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self._before: dict[int, list[str]] = {}
        self._after: dict[int, list[str]] = {}
        self._replace: dict[int, str | None] = {}

    def insert_before(self, line: int, new: list[str]) -> None:
        self._before.setdefault(line, []).extend(new)

    def insert_after(self, line: int, new: list[str]) -> None:
        self._after.setdefault(line, []).extend(new)

    def replace(self, line: int, new: str) -> None:
        if self._replace.get(line, "") is None:
            raise ValueError(f"line {line} is deleted and replaced")
        self._replace[line] = new

    def delete(self, line: int) -> None:
        self._replace[line] = None

    def current(self, line: int) -> str:
        """Line ``line`` as it will read (its replacement, if any), without its end of line."""
        got = self._replace.get(line)
        if got is not None:
            return got
        return self.lines[line - 1].rstrip("\r\n")

    def _chunk(self, n: int) -> str:
        """What line ``n`` (1-based) becomes, with the lines around it."""
        nl = self.newline
        out = "".join(x + nl for x in self._before.get(n, []))
        original = self.lines[n - 1]
        if n in self._replace:
            new = self._replace[n]
            if new is not None:
                ending = original[len(original.rstrip("\r\n")) :] or nl
                out += new + ending
        else:
            out += original
        after = self._after.get(n, [])
        if after:
            if not out.endswith(("\n", "\r")):
                out += nl
            out += "".join(x + nl for x in after)
        return out

    def apply(self) -> str:
        return "".join(self._chunk(n) for n in range(1, len(self.lines) + 1))

    def changed_lines(self) -> list[int]:
        """The lines something is inserted at, replaced or deleted."""
        return sorted(set(self._before) | set(self._after) | set(self._replace))

    def to_edits(self, path: str) -> tuple[Edit, ...]:
        changed = self.changed_lines()
        edits: list[Edit] = []
        i = 0
        while i < len(changed):
            a = b = changed[i]
            while i + 1 < len(changed) and changed[i + 1] == b + 1:
                i += 1
                b = changed[i]
            content = "".join(self._chunk(n) for n in range(a, b + 1))
            edits.append(Edit(path, a, 1, b + 1, 1, content))
            i += 1
        return tuple(edits)
