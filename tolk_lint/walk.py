"""Which files a run lints: the paths given, and folders walked for *.py and *.ptx.

A folder is walked in sorted order, skipping what a user never means to lint:
version-control and tool folders (`SKIP_DIRS`, hidden folders), paths the
``.gitignore`` files of the repository ignore (every level, plus
``.git/info/exclude``; turned off by ``respect-gitignore = false``), and the
configuration's ``exclude`` / ``extend-exclude`` patterns (gitignore syntax,
relative to the configuration's folder).

A file named on the command line is linted whatever its suffix and whatever
``exclude`` says, unless ``force_exclude`` is set: pre-commit passes every
staged file by name, and ``--force-exclude`` lets ``exclude`` still apply
(ruff's flag, same meaning).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

from tolk_lint.config import Settings

SUFFIXES = (".py", ".ptx")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
             ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tolk_lint_cache", "build", "dist"}  # fmt: skip


def git_root(start: str) -> str | None:
    """The work tree holding ``start`` (the folder with ``.git``), if any."""
    d = os.path.abspath(start)
    if not os.path.isdir(d):
        d = os.path.dirname(d)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


@lru_cache(maxsize=1024)
def _spec(path: str, mtime: float):
    import pathspec

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())
    except OSError:
        return None


def _spec_of(path: str):
    try:
        return _spec(path, os.path.getmtime(path))
    except OSError:
        return None


class GitIgnores:
    """Answers "does git ignore this path?" from the ``.gitignore`` files
    between the repository root and the path: a deeper file's verdict wins,
    and within one file the last matching pattern wins (git's rule)."""

    def __init__(self, top: str):
        self.top = os.path.abspath(top)

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        path = os.path.abspath(path)
        rel_top = os.path.relpath(path, self.top)
        if rel_top.startswith(".."):
            return False
        verdict: bool | None = None
        specs = [(self.top, os.path.join(self.top, ".git", "info", "exclude"))]
        d = self.top
        parts = rel_top.split(os.sep)[:-1]
        specs.append((d, os.path.join(d, ".gitignore")))
        for p in parts:
            d = os.path.join(d, p)
            specs.append((d, os.path.join(d, ".gitignore")))
        for base, file in specs:
            spec = _spec_of(file) if os.path.isfile(file) else None
            if spec is None:
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
            r = spec.check_file(rel)
            if r.include is not None:
                verdict = r.include
        return bool(verdict)


class Excludes:
    """The configuration's ``exclude`` patterns, relative to its folder."""

    def __init__(self, settings: Settings):
        import pathspec

        self.root = settings.project_root or os.getcwd()
        pats = settings.all_excludes
        self.spec = pathspec.GitIgnoreSpec.from_lines(list(pats)) if pats else None

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        if self.spec is None:
            return False
        rel = os.path.relpath(os.path.abspath(path), self.root)
        if rel.startswith(".."):
            rel = os.path.basename(os.path.abspath(path))
        rel = rel.replace(os.sep, "/") + ("/" if is_dir else "")
        return self.spec.match_file(rel)


def iter_files(
    paths: Iterable[str],
    settings: Settings | None = None,
    settings_for: Callable[[str], Settings] | None = None,
    force_exclude: bool = False,
    on_error: Callable[[str, str], None] | None = None,
) -> Iterator[str]:
    """Every file to lint, each once, in a deterministic order: the given
    paths in order, each folder's files sorted. ``settings_for(path)`` gives
    the settings whose excludes apply there (default: ``settings``).
    ``on_error(path, message)`` hears of each folder that could not be read
    (a path that does not exist is yielded: linting it reports it)."""
    from tolk_lint.config import DEFAULT_SETTINGS

    def settings_at(p: str) -> Settings:
        return settings_for(p) if settings_for else (settings or DEFAULT_SETTINGS)

    excludes: dict[int, Excludes] = {}

    def excluded(p: str, is_dir: bool) -> bool:
        s = settings_at(p)
        ex = excludes.get(id(s))
        if ex is None:
            ex = excludes[id(s)] = Excludes(s)
        return ex.excluded(p, is_dir)

    seen: set[str] = set()
    for p in paths:
        if os.path.isdir(p):
            top = git_root(p)
            gi = GitIgnores(top) if top else None
            for f in _walk(p, gi, excluded, settings_at, on_error):
                key = os.path.normpath(os.path.abspath(f))
                if key not in seen:
                    seen.add(key)
                    yield f
        else:
            if force_exclude and os.path.exists(p):
                top = git_root(p)
                if excluded(p, False) or any(excluded(a, True) for a in _ancestors(p)):
                    continue
                if top and settings_at(p).respect_gitignore and GitIgnores(top).ignored(p):
                    continue
            key = os.path.normpath(os.path.abspath(p))
            if key not in seen:
                seen.add(key)
                yield p


def _ancestors(p: str) -> list[str]:
    """The folders between the project (cwd) and ``p``, for folder patterns."""
    out = []
    d = os.path.dirname(os.path.normpath(p))
    while d and d not in (".", os.sep):
        out.append(d)
        d = os.path.dirname(d)
    return out


def _walk(root: str, gi: GitIgnores | None, excluded, settings_at, on_error=None) -> Iterator[str]:
    def unreadable(e: OSError) -> None:
        if on_error is not None:
            on_error(e.filename or root, f"cannot read the folder: {e.strerror or e}")

    for dirpath, dirs, files in os.walk(root, onerror=unreadable):
        s = settings_at(dirpath)
        use_gi = gi is not None and s.respect_gitignore
        keep = []
        for d in sorted(dirs):
            full = os.path.join(dirpath, d)
            if d in SKIP_DIRS or d.startswith("."):
                continue
            if excluded(full, True) or (use_gi and gi.ignored(full, is_dir=True)):  # type: ignore[union-attr]
                continue
            keep.append(d)
        dirs[:] = keep
        for f in sorted(files):
            if not f.endswith(SUFFIXES):
                continue
            full = os.path.normpath(os.path.join(dirpath, f))
            if excluded(full, False) or (use_gi and gi.ignored(full)):  # type: ignore[union-attr]
                continue
            yield full
