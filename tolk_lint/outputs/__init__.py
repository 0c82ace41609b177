"""Renderers: each turns a list of `LintResult`s into text for one audience.

What they share lives here: the rule documentation URL scheme, a rule's
documentation as markdown (SARIF ``help``, LSP hover), and the repository
root that SARIF and GitHub annotations make paths relative to.

Rule documentation URLs are ``DOCS_URL.format(code=...)``, e.g.
``https://tolk-lint.invalid/rules/TL101``: one stable scheme (the ``.invalid``
host until the project publishes its docs; only this constant changes then).
The page for a code is what ``tolk-lint rule CODE`` prints.
"""

from __future__ import annotations

import os

DOCS_URL = "https://tolk-lint.invalid/rules/{code}"
INFORMATION_URL = "https://tolk-lint.invalid/"


def rule_url(code: str) -> str:
    return DOCS_URL.format(code=code)


def rule_markdown(rule) -> str:
    """The rule's docstring as markdown: a ``# name (CODE)`` title (ruff's
    ``ruff rule`` shape), then the body under its fixed headings."""
    doc = rule.doc()
    body = doc.split("\n", 1)[1].strip() if "\n" in doc else ""
    fix = "Fix is available." if getattr(rule, "fixable", False) else "Fix is not available."
    return f"# {rule.name} ({rule.code})\n\n{fix}\n\n{body}\n"


def section(doc: str, heading: str) -> str:
    """The text under ``## heading`` in a rule's doc ("" when absent)."""
    out: list[str] = []
    inside = False
    for line in doc.splitlines():
        if line.startswith("## "):
            if inside:
                break
            inside = line[3:].strip().lower() == heading.lower()
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def repo_root(start: str | None = None) -> str:
    """Where repository-relative paths start: the git work tree holding the
    current folder, else the current folder."""
    from tolk_lint.walk import git_root

    cwd = os.path.abspath(start or os.getcwd())
    return git_root(cwd) or cwd


def relative_path(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` with ``/`` separators, or None when it is
    outside."""
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def source_location(d):
    """Where an annotation of ``d`` lands when it comes from PTX with line
    info: ``(path, line, column)`` of the user's own source line (`user_frame`:
    toolkit headers are skipped; they stay related locations), when that file
    exists; None otherwise (the linted position stands)."""
    from tolk_lint.diagnostics import user_frame
    from tolk_lint.suppress import origin_path

    f = user_frame(d.origin)
    if f is None or f.line < 1:
        return None
    path = origin_path(d.span.path, f.path)
    if not os.path.isfile(path) or os.path.abspath(path) == os.path.abspath(d.span.path):
        return None
    return path, f.line, f.column or 0
