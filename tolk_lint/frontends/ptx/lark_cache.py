"""The PTX grammar's LALR tables, built once per machine, not once per process.

Building the `Lark` parser of ``ptx.lark`` (reading the grammar, the LALR(1)
tables, the contextual lexer's terminals) takes a twentieth of a second or
more each time a process starts, a large part of what linting a small PTX
file costs. lark can keep what it built in a file (its ``cache=`` option: a
pickle of the tables, with a hash of the grammar, the options, lark's and
Python's versions on its first line) and load it in about 10 ms. Callbacks
are never in the file: lark attaches the transformer it is given after
loading, and builds its callbacks then (ours, `transformer.ToTuples`, has
rule callbacks only, no terminal callbacks and no ``lexer_callbacks``), so
a changed transformer needs no new file.

The file lives in the user's cache folder, ``$XDG_CACHE_HOME/tolk-lint`` or
``~/.cache/tolk-lint``, named by a hash of the same things, so two versions
of tolk-lint (or of lark, or Python) on one machine keep a file each instead
of rebuilding over one another's. lark writes the file in place, so the
processes of a parallel run take turns (an advisory lock on a ``.lock``
file beside it, where the system has one): none reads half of a file
another is writing. A file lark cannot load (corrupt, truncated) it builds
again and rewrites; a folder that cannot be made or written, or a lock that
cannot be taken, means no cache or no lock, never an error.

What it may import: lark.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import lark
from lark import Lark

CACHE_FOLDER = "tolk-lint"


def cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/tolk-lint``, else ``~/.cache/tolk-lint`` (None
    when there is no home to find)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / CACHE_FOLDER
    try:
        return Path.home() / ".cache" / CACHE_FOLDER
    except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry
        return None


def cache_file(grammar: str, options: dict[str, Any]) -> Path | None:
    """Where the tables of ``grammar`` built with ``options`` are kept, or
    None when the folder cannot be made."""
    folder = cache_dir()
    if folder is None:
        return None
    # the options but the transformer (attached after loading) have stable reprs: strings, lists, flags
    key = repr(sorted((k, repr(v)) for k, v in options.items() if k != "transformer"))
    digest = hashlib.sha256(f"{grammar}\0{key}\0{lark.__version__}\0{sys.version_info[:2]}".encode()).hexdigest()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / f"ptx-grammar-{digest[:20]}.lark"


def cached_lark(grammar: str, **options: Any) -> Lark:
    """``Lark(grammar, **options)``, its tables read from the cache file
    when there is one, written there when not (see the module's doc)."""
    path = cache_file(grammar, options)
    if path is not None and path.exists() and not path.is_file():
        path = None  # a folder or a FIFO of that name: not ours to read
    if path is not None:
        try:
            with _locked(path.with_name(path.name + ".lock")):
                return Lark(grammar, cache=str(path), **options)
        except Exception:  # noqa: BLE001 - never fail a lint over the cache; a bad grammar fails again below
            pass
    return Lark(grammar, **options)


@contextlib.contextmanager
def _locked(lock: Path):
    """An exclusive advisory lock on ``lock`` for the block, where the
    system has one and the file can be opened (else none)."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        fcntl = None
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the lock
