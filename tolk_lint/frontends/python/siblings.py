"""The modules of the linted file's own project that it imports from:
``from .utils import dot``, ``from utils import dot``, ``from pkg.vec
import vec3``.

When the imported module's file lies next to the linted file (a plain
import is looked for in the file's folder and in the folders of the
packages above it, a relative one from the file's package), it is READ as
text and walked by a `Finder` of its own, never imported or run. What the
import takes from it is then what the module defines: its device functions
(any function a jit reaches: a kernel it calls is compiled as a device
function there) and its constants (numbers, tuples of them, Numba names),
as if defined in the linted file; the lowering inlines such a function,
its instructions on the line of the call and their origin in the module's
own file. Anything else, a module that is missing, unreadable, too large
or does not parse, and an import cycle, leave the name unknown, as before
(TL002 where a kernel uses it).

A module is read once per process while its file is unchanged (its path,
size and modification time), at most ``MAX_DEPTH`` imports deep.

Imports: `consts`, `scope` (the `Finder` class is handed in: it imports this module).
"""

from __future__ import annotations

import ast
import io
import os
import threading
import tokenize
from collections import OrderedDict
from typing import Any

from tolk_lint.frontends.python.consts import UNKNOWN
from tolk_lint.frontends.python.scope import Binding, FuncInfo

MAX_DEPTH = 4  # modules importing modules, the linted file's siblings at depth 1
MAX_BYTES = 1 << 20  # a sibling larger than this is not read
_KEPT = 64  # modules kept read (the language server runs for hours)
_cache: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()


def module_path(importer: str, module: str, level: int) -> str | None:
    """The file of ``module`` as ``importer`` imports it (``level``: the
    dots of a relative import), or None when it is not beside it."""
    if not module:
        return None  # `from . import utils`: the names are modules
    here = os.path.dirname(os.path.abspath(importer))
    if not os.path.isdir(here):
        return None
    parts = module.split(".")
    if level:
        base = here
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        bases = [here]  # the script's folder, then the package roots' parents
        d = here
        while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.dirname(d) != d:
            d = os.path.dirname(d)
            bases.append(d)
    for base in bases:
        stem = os.path.join(base, *parts)
        for cand in (stem + ".py", os.path.join(stem, "__init__.py")):
            if os.path.isfile(cand):
                return cand
    return None


def imported(finder_class, importer: str, chain: tuple[str, ...], module: str, level: int, name: str
             ) -> tuple[Binding | None, frozenset[str]]:  # fmt: skip
    """What ``from module import name`` binds, read from the module's file
    (see the module's docstring), and the files that was read from; (None,
    files) when the name is left unknown."""
    path = module_path(importer, module, level)
    if path is None:
        return None, frozenset()
    got = _read(finder_class, path, chain + (os.path.abspath(importer),))
    if got is None:
        return None, frozenset({path})
    finder = got
    b = finder.module.own(name, 1 << 30)  # the module has run to its end when a kernel compiles
    files = frozenset({path}) | finder.sibling_files
    if b is None:
        return None, files
    if b.kind == "func" and isinstance(b.value, FuncInfo) and b.value.kind in ("device", "kernel", "host"):
        return Binding(0, "func", b.value), files
    if b.kind == "const" and _plain_constant(b.value):
        return Binding(0, "const", b.value), files
    if b.kind == "alias" and b.value.split(".", 1)[0] in ("numba", "numpy", "math", "cmath"):
        return Binding(0, "alias", b.value), files
    return None, files


def _plain_constant(v: Any) -> bool:
    if isinstance(v, tuple):
        return bool(v) and all(_plain_constant(x) for x in v)
    return isinstance(v, (int, float)) and v is not UNKNOWN


def _read(finder_class, path: str, chain: tuple[str, ...]):
    """The `Finder` of the module at ``path``, or None (unreadable, too
    large, no parse, a cycle, too deep)."""
    path = os.path.abspath(path)
    if path in chain or len(chain) > MAX_DEPTH:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > MAX_BYTES:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    finder = _walk(finder_class, path, chain)
    with _lock:
        _cache[key] = finder
        while len(_cache) > _KEPT:
            _cache.popitem(last=False)
    return finder


def _walk(finder_class, path: str, chain: tuple[str, ...]):
    try:
        with open(path, "rb") as f:
            data = f.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        if text.startswith("\ufeff"):
            text = text[1:]
        tree = ast.parse(text, filename=path)
        return finder_class.of_module(tree, text, path, chain)
    except RecursionError:
        return None
    except Exception:  # noqa: BLE001 - a sibling that cannot be read leaves its names unknown
        return None
