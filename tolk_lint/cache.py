"""The result cache: a file whose bytes, settings and tool have not changed is
not linted again.

Layout, at the project root (ruff's shape)::

    .tolk_lint_cache/
        CACHEDIR.TAG              backup tools skip the folder (bford.info/cachedir)
        .gitignore                "*": git never sees it
        <tool-version>/<aa>/<key>.json

``key`` hashes the path as given (diagnostics carry it), the file's bytes,
`Settings.fingerprint` and the tool's own fingerprint. In a release that is
the version; in a source checkout the version does not move while rules
change, so the modification times and sizes of the package's own files are
hashed too, and editing a rule invalidates every entry.

A PTX file's result also depends on the CUDA C files its ``.file`` table names
(their ``tolk: noqa`` comments suppress, their host launches give the launch
shapes), or the ``.cu`` beside it the launch shapes were read from: each entry
stores those files' hashes and is discarded when one changed.

Entries are written whole to a temporary file and renamed into place, so
parallel workers and interrupted runs never leave half an entry. An entry
that cannot be read is a miss, never an error.
"""

from __future__ import annotations

import os
from typing import Any

from tolk_lint.config import Settings
from tolk_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Related, Severity
from tolk_lint.engine import LintResult, decode, lint_file, lint_text, read_source
from tolk_lint.fingerprint import tool_fingerprint
from tolk_lint.ir.nodes import Origin, Span
from tolk_lint.suppress import origin_dependencies


def cached_dependencies(module) -> list[str]:
    """The other files a module's result depends on: the CUDA sources its
    ``.file`` table names (noqa comments, host launches), and the ``.cu``
    the launch shapes were read from (`tolk_lint.launch.choose`)."""
    from tolk_lint.launch.choose import source_paths

    return sorted(set(origin_dependencies(module)) | {os.path.abspath(p) for p in source_paths(module)})


CACHE_DIR_NAME = ".tolk_lint_cache"
FORMAT = 1
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tolk-lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


# ---------------------------------------------------------------- serialisation


def span_to_json(s: Span | None) -> list[Any] | None:
    return None if s is None else [s.path, s.line, s.column, s.end_line, s.end_column]


def span_from_json(v: list[Any] | None) -> Span | None:
    return None if v is None else Span(*v)


def origin_to_json(o: Origin | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {"path": o.path, "line": o.line, "column": o.column, "inlined_at": origin_to_json(o.inlined_at)}


def origin_from_json(v: dict[str, Any] | None) -> Origin | None:
    if v is None:
        return None
    return Origin(v["path"], v["line"], v.get("column", 0), origin_from_json(v.get("inlined_at")))


def fix_to_json(f: Fix | None) -> dict[str, Any] | None:
    return None if f is None else f.to_json()


def fix_from_json(v: dict[str, Any] | None) -> Fix | None:
    if v is None:
        return None
    edits = tuple(Edit(e["path"], e["line"], e["column"], e["end_line"], e["end_column"], e["content"])
                  for e in v["edits"])  # fmt: skip
    return Fix(v["title"], edits, Applicability(v.get("applicability", "safe")))


def diagnostic_to_json(d: Diagnostic) -> dict[str, Any]:
    """Everything a `Diagnostic` holds (`Diagnostic.to_json` is the JSON
    output contract, which flattens the origin chain; this keeps it)."""
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "span": span_to_json(d.span),
        "kernel": d.kernel,
        "origin": origin_to_json(d.origin),
        "related": [
            {"message": r.message, "span": span_to_json(r.span), "origin": origin_to_json(r.origin)}
            for r in d.related
        ],  # fmt: skip
        "witness": d.witness,
        "data": d.data,
        "fix": fix_to_json(d.fix),
        "name": d.name,
    }


def diagnostic_from_json(v: dict[str, Any]) -> Diagnostic:
    """The inverse of `diagnostic_to_json` (``Diagnostic.from_json``)."""
    return Diagnostic(
        code=v["code"],
        severity=Severity(v["severity"]),
        message=v["message"],
        span=span_from_json(v["span"]),  # type: ignore[arg-type]
        kernel=v.get("kernel"),
        origin=origin_from_json(v.get("origin")),
        related=[
            Related(r["message"], span_from_json(r.get("span")), origin_from_json(r.get("origin")))
            for r in v.get("related", [])
        ],  # fmt: skip
        witness=v.get("witness"),
        data=v.get("data") or {},
        fix=fix_from_json(v.get("fix")),
        name=v.get("name", ""),
    )


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _file_sha(path: str) -> str | None:
    if not os.path.isfile(path):  # a `.file` naming a FIFO would block the read
        return None
    try:
        with open(path, "rb") as f:
            return _sha(f.read())
    except OSError:
        return None


# ---------------------------------------------------------------- the store


class Cache:
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.dir = os.path.join(self.root, CACHE_DIR_NAME)

    def key(self, path: str, data: bytes, settings: Settings) -> str:
        import hashlib

        h = hashlib.sha256()
        for part in (tool_fingerprint(), settings.fingerprint(), path):
            h.update(part.encode("utf-8", "surrogateescape") + b"\0")
        h.update(data)
        return h.hexdigest()

    def _entry(self, key: str) -> str:
        import tolk_lint

        return os.path.join(self.dir, tolk_lint.__version__, key[:2], key + ".json")

    def get(self, key: str) -> tuple[list[Diagnostic], list[Diagnostic]] | None:
        import json

        try:
            with open(self._entry(key), encoding="utf-8") as f:
                v = json.load(f)
            if v.get("format") != FORMAT:
                return None
            for dep, sha in v.get("deps", {}).items():
                if _file_sha(dep) != sha:
                    return None
            return ([diagnostic_from_json(d) for d in v["diagnostics"]],
                    [diagnostic_from_json(d) for d in v["suppressed"]])  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(
        self, key: str, diagnostics: list[Diagnostic], suppressed: list[Diagnostic], deps: list[str]
    ) -> bool:
        """Store an entry; False when it cannot be (unserialisable data, a
        read-only folder): the run goes on uncached."""
        import json
        import tempfile

        try:
            text = json.dumps({
                "format": FORMAT,
                "deps": {d: _file_sha(d) for d in deps},
                "diagnostics": [diagnostic_to_json(d) for d in diagnostics],
                "suppressed": [diagnostic_to_json(d) for d in suppressed],
            })  # fmt: skip
        except (TypeError, ValueError):
            return False
        try:
            self._init_dir()
            entry = self._entry(key)
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(entry), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, entry)
            return True
        except OSError:
            return False

    def _init_dir(self) -> None:
        if os.path.isfile(os.path.join(self.dir, "CACHEDIR.TAG")):
            return
        os.makedirs(self.dir, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
            with open(os.path.join(self.dir, name), "w", encoding="utf-8") as f:
                f.write(content)


# ---------------------------------------------------------------- linting through it


def lint_cached(path: str, settings: Settings, cache: Cache | None):
    """`tolk_lint.engine.lint_file`, answered from ``cache`` when it can be.

    Returns ``(LintResult, hit)``. A hit has ``module=None``."""

    if cache is None:
        return lint_file(path, settings), False
    data, err = read_source(path)
    if data is None:  # missing, unreadable, too large, not a file: never cached
        return LintResult(path, None, [err]), False  # type: ignore[list-item]
    key = cache.key(path, data, settings)
    got = cache.get(key)
    if got is not None:
        return LintResult(path, None, got[0], got[1]), True
    text, err = decode(data, path)
    if err is not None:
        result = LintResult(path, None, [err])
    else:
        result = lint_text(text, path, settings)
    deps = cached_dependencies(result.module) if result.module is not None else []
    if not any(d.code in ("TL004", "TL005") for d in result.diagnostics):  # never cache a crash or a cut-off
        cache.put(key, result.diagnostics, result.suppressed, deps)
    return result, False
