"""Suppressions: ``tolk: noqa`` comments, file-level exemptions, per-file ignores,
and the unused-noqa check (TL003).

The grammar is ruff's, so the two tools read each other's comments the same way:

- ``# tolk: noqa`` (blanket) or ``# tolk: noqa: TL101, TL203`` on the line a
  diagnostic points at; ``// tolk: noqa: TL101`` in PTX and CUDA C. Codes are
  ASCII letters then digits, separated by commas and/or spaces; matching is
  case-insensitive; a code also matches as a prefix (``TL1``).
- A PTX diagnostic whose origin (``.loc``) is a line of a readable CUDA C,
  Triton or Python file honours a noqa on that line (or on the line of any
  call it was inlined into; a barrier reported at the call of the function
  holding it, on its own line too), so users suppress where they wrote the
  code.
- ``tolk: noqa-file`` (optionally ``: CODES``) on a line of its own exempts
  the whole file (or, in a ``.cu`` file, every diagnostic that comes from it).
- ``per-file-ignores`` in the configuration: glob (gitignore syntax, relative
  to the configuration's folder; a leading ``!`` negates) -> codes. These are
  deselection, not suppression: such diagnostics are dropped, not listed as
  suppressed.

TL003 (unused-noqa, ruff's RUF100) reports a line noqa that suppressed
nothing, or names codes that did not fire (unused), rules that are not
selected (non-enabled), codes no rule has (unknown) or a code twice
(duplicated), with a safe fix removing the comment or the stale codes. It is
only reported for files checked completely: a parse error (TL001) or an
internal error (TL004) means some rules did not run, so "nothing fired" would
not be evidence.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from tolk_lint.config import Settings
from tolk_lint.diagnostics import NOT_ANALYSED, Diagnostic, Edit, Fix, Severity
from tolk_lint.ir.nodes import Module, Span
from tolk_lint.registry import selected

_CODE = r"[A-Z]+[0-9]+"
_CODES = rf"{_CODE}(?:[\s,]+{_CODE})*"
NOQA = re.compile(rf"(?P<marker>#|//)\s*tolk:\s*noqa(?![-\w])(?::\s*(?P<codes>{_CODES}))?", re.I)
NOQA_FILE = re.compile(rf"^\s*(?:#|//)\s*tolk:\s*noqa-file(?![-\w])(?::\s*(?P<codes>{_CODES}))?", re.I)

UNUSED_NOQA = "TL003"
INCOMPLETE = NOT_ANALYSED  # a file with these was not checked completely


@dataclass(frozen=True)
class Noqa:
    """One line noqa comment. Columns are 0-based offsets into the line."""

    line: int  # 1-based
    start: int  # the comment marker
    end: int  # end of the directive (after the codes)
    codes: tuple[str, ...]  # upper-case, in written order; empty = blanket
    codes_start: int | None = None
    codes_end: int | None = None
    marker: str = "#"

    def matches(self, code: str) -> str | None:
        """The written code that covers ``code`` ("" for a blanket), or None."""
        if not self.codes:
            return ""
        for c in self.codes:
            if code.startswith(c):
                return c
        return None


def _split_codes(text: str) -> tuple[str, ...]:
    return tuple(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def parse_noqa(text: str, line: int = 0) -> Noqa | None:
    m = NOQA.search(text)
    if not m:
        return None
    codes = m.group("codes")
    if codes is None:
        return Noqa(line, m.start(), m.end(), (), marker=m.group("marker"))
    return Noqa(
        line, m.start(), m.end(), _split_codes(codes), m.start("codes"), m.end("codes"), m.group("marker")
    )


def noqa_codes(line: str) -> frozenset[str] | None:
    """None: no noqa; empty set: a blanket noqa; else the codes named."""
    n = parse_noqa(line)
    if n is None:
        return None
    return frozenset(n.codes)


def file_noqa(lines: tuple[str, ...] | list[str]) -> frozenset[str] | None:
    """The file-level exemption: None (none), an empty set (everything), or codes."""
    found: set[str] | None = None
    for text in lines:
        if "noqa-file" not in text.lower():
            continue
        m = NOQA_FILE.match(text)
        if not m:
            continue
        if not m.group("codes"):
            return frozenset()
        found = (found or set()) | set(_split_codes(m.group("codes")))
    return None if found is None else frozenset(found)


def _file_covers(exempt: frozenset[str] | None, code: str) -> bool:
    return exempt is not None and (not exempt or any(code.startswith(c) for c in exempt))


@lru_cache(maxsize=64)
def _file_lines(path: str, mtime: float) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(f.read().splitlines())
    except OSError:
        return ()


def _lines_of(path: str) -> tuple[str, ...]:
    if not os.path.isfile(path):  # a `.file` naming a FIFO would block the read
        return ()
    try:
        return _file_lines(path, os.path.getmtime(path))
    except OSError:
        return ()


def origin_path(module_path: str, origin: str) -> str:
    """An origin's file, resolved against the linted file's folder."""
    if os.path.isabs(origin):
        return origin
    return os.path.join(os.path.dirname(os.path.abspath(module_path)), origin)


def _suppressed_at(lines, line: int, code: str) -> bool:
    if not (1 <= line <= len(lines)):
        return False
    n = parse_noqa(lines[line - 1])
    return n is not None and n.matches(code) is not None


# ---------------------------------------------------------------- per-file ignores


def _rel_to_root(path: str, settings: Settings) -> str:
    root = settings.project_root or os.getcwd()
    rel = os.path.relpath(os.path.abspath(path), root)
    return rel.replace(os.sep, "/")


@lru_cache(maxsize=256)
def _glob(pattern: str):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def per_file_ignored(path: str, settings: Settings) -> tuple[str, ...]:
    """The codes ``per-file-ignores`` turns off for ``path``."""
    if not settings.per_file_ignores:
        return ()
    rel = _rel_to_root(path, settings)
    out: list[str] = []
    for pattern, codes in settings.per_file_ignores:
        negate = pattern.startswith("!")
        hit = _glob(pattern[1:] if negate else pattern).match_file(rel)
        if hit != negate:
            out += codes
    return tuple(out)


def enabled(code: str, settings: Settings, ignored_here: tuple[str, ...] = ()) -> bool:
    return selected(code, settings.effective_select, tuple(settings.ignore) + ignored_here)


# ---------------------------------------------------------------- applying them


def apply_suppressions(
    diags: list[Diagnostic], module: Module | None, settings: Settings
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split ``diags`` into (kept, suppressed), after dropping what the
    selection and per-file ignores turn off; add TL003 to ``kept``."""
    path = module.path if module is not None else (diags[0].span.path if diags else "")
    ignored_here = per_file_ignored(path, settings) if path else ()
    diags = [d for d in diags if d.code in NOT_ANALYSED or enabled(d.code, settings, ignored_here)]
    own = tuple(module.lines()) if module is not None else ()
    exempt = file_noqa(own)
    noqas: dict[int, Noqa] = {}
    for i, text in enumerate(own, start=1):
        if "noqa" in text.lower():
            n = parse_noqa(text, i)
            if n is not None:
                noqas[i] = n
    used: dict[int, set[str]] = {}  # line of a directive -> its codes that matched ("" if blanket)
    kept: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    for d in diags:
        if d.code in NOT_ANALYSED:  # what was not analysed is never silenced
            kept.append(d)
            continue
        hit = _file_covers(exempt, d.code)
        n = noqas.get(d.span.line)
        if not hit and n is not None:
            c = n.matches(d.code)
            if c is not None:
                used.setdefault(n.line, set()).add(c)
                hit = True
        if not hit and d.origin is not None and module is not None:
            hit = _origin_suppressed(d, module.path)
        (suppressed if hit else kept).append(d)
    if module is not None and noqas and not any(d.code in INCOMPLETE for d in diags):
        if enabled(UNUSED_NOQA, settings, ignored_here) and not _file_covers(exempt, UNUSED_NOQA):
            kept += unused_noqa(module.path, own, noqas, used, settings, ignored_here)
    return kept, suppressed


def _origin_suppressed(d: Diagnostic, module_path: str) -> bool:
    frames = [(o.path, o.line) for o in d.origin.chain()]  # type: ignore[union-attr]
    # a barrier reported at the call of the function holding it: its own lines too
    frames += [(f["path"], f["line"]) for f in (d.data or {}).get("inside", ())]
    for path, line in frames:
        lines = _lines_of(origin_path(module_path, path))
        if _suppressed_at(lines, line, d.code) or _file_covers(file_noqa(lines), d.code):
            return True
    return False


def origin_dependencies(module: Module) -> list[str]:
    """The files whose noqa comments can change this module's result (the
    CUDA C sources a PTX file's ``.file`` table names), for the cache."""
    return sorted({origin_path(module.path, p) for p in module.files.values()})


# ---------------------------------------------------------------- TL003


def _known_prefix(code: str) -> bool:
    from tolk_lint.catalog import all_rules

    return any(r.code.startswith(code) for r in all_rules())


def unused_noqa(
    path: str,
    lines: tuple[str, ...],
    noqas: dict[int, Noqa],
    used: dict[int, set[str]],
    settings: Settings,
    ignored_here: tuple[str, ...] = (),
) -> list[Diagnostic]:
    from tolk_lint.catalog import all_rules

    out = []
    for line, n in sorted(noqas.items()):
        hits = used.get(line, set())
        if n.matches(UNUSED_NOQA) not in (None, ""):
            continue  # `noqa: TL003` keeps the directive from being reported
        if not n.codes:
            if hits:
                continue
            out.append(_tl003(path, lines, n, "Unused blanket `tolk: noqa` directive", keep=()))
            continue
        unused, disabled, unknown, dup, keep = [], [], [], [], []
        seen: set[str] = set()
        for c in n.codes:
            if c in seen:
                dup.append(c)
                continue
            seen.add(c)
            if c in hits:
                keep.append(c)
            elif not _known_prefix(c):
                unknown.append(c)
            elif not any(
                enabled(r.code, settings, ignored_here) for r in all_rules() if r.code.startswith(c)
            ):
                disabled.append(c)
            else:
                unused.append(c)
        if not (unused or disabled or unknown or dup):
            continue
        parts = [f"{label}: {', '.join(f'`{c}`' for c in cs)}"
                 for label, cs in (("unused", unused), ("non-enabled", disabled), ("unknown", unknown),
                                   ("duplicated", dup)) if cs]  # fmt: skip
        out.append(_tl003(path, lines, n, f"Unused `tolk: noqa` directive ({'; '.join(parts)})", tuple(keep)))
    return out


def _tl003(path: str, lines: tuple[str, ...], n: Noqa, message: str, keep: tuple[str, ...]) -> Diagnostic:
    text = lines[n.line - 1]
    span = Span(path, n.line, n.start + 1, n.line, n.end + 1)
    if keep:
        assert n.codes_start is not None and n.codes_end is not None
        edit = Edit(path, n.line, n.codes_start + 1, n.line, n.codes_end + 1, ", ".join(keep))
        fix = Fix("Remove the unused codes from the `noqa` directive", (edit,))
    else:
        fix = Fix("Remove the unused `noqa` directive", (_removal(path, lines, n, text),))
    return Diagnostic(UNUSED_NOQA, Severity.WARNING, message, span, data={"codes": list(n.codes)},
                      fix=fix, name="unused-noqa")  # fmt: skip


def _removal(path: str, lines: tuple[str, ...], n: Noqa, text: str) -> Edit:
    before, after = text[: n.start], text[n.end :]
    if not before.strip() and not after.strip():
        # the comment is the whole line: delete the line
        if n.line < len(lines):
            return Edit(path, n.line, 1, n.line + 1, 1, "")
        return Edit(path, n.line, 1, n.line, len(text) + 1, "")
    if not after.strip():
        # trailing comment: delete it and the blanks before it
        return Edit(path, n.line, len(before.rstrip()) + 1, n.line, len(text) + 1, "")
    # something follows (another comment): delete up to it, keep the spacing before
    rest = len(after) - len(after.lstrip())
    return Edit(path, n.line, n.start + 1, n.line, n.end + rest + 1, "")


# ---------------------------------------------------------------- adding one


def noqa_insertion(line_text: str, code: str, marker: str = "#") -> tuple[int, int, str] | None:
    """How to make the noqa on this line cover ``code``: replace
    ``line_text[start:end]`` (0-based code points) with the returned text.
    None when a noqa there already covers it. An existing directive gets the
    code appended; otherwise ``  # tolk: noqa: CODE`` (``//`` for PTX) goes at
    the end of the line."""
    body = line_text.rstrip("\r\n")
    n = parse_noqa(body)
    if n is not None:
        if n.matches(code) is not None:
            return None
        assert n.codes_end is not None
        return (n.codes_end, n.codes_end, f", {code}")
    stripped = body.rstrip()
    return (len(stripped), len(body), f"  {marker} tolk: noqa: {code}")


def comment_marker(path: str, language: str | None = None) -> str:
    """``#`` for Python, ``//`` for PTX and CUDA C."""
    if language == "python" or (language is None and path.endswith((".py", ".pyi"))):
        return "#"
    return "//"
