"""The tool's identity, for the caches: a lint result is reused only by the
same tool.

In a release the version names it; in a source checkout the version does not
move while rules change, so the modification times and sizes of the
package's own files are hashed too, and editing a rule invalidates every
cached result.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

from tolk_lint.version import __version__


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The version, plus the mtimes and sizes of the package's own sources
    (``tolk_lint`` and its rules), so a source checkout's edits count."""
    spec = importlib.util.find_spec("tolk_lint.rules")  # where the rules are, without importing them
    rules = list(spec.submodule_search_locations or []) if spec is not None else []
    import hashlib

    h = hashlib.sha256(__version__.encode())
    roots = [os.path.dirname(os.path.abspath(__file__)), *rules]
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".lark")):
                    st = os.stat(os.path.join(dirpath, f))
                    h.update(
                        f"{os.path.relpath(os.path.join(dirpath, f), root)}:{st.st_mtime_ns}:{st.st_size}".encode()
                    )
    return h.hexdigest()[:16]
