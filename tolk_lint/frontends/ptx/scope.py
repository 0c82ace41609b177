"""The ``{ }`` scopes of a function body, as name resolution sees them.

A `Scope` holds the ``.reg`` names declared in it (each mapped to the key the
SSA builder knows it by: a name already taken gets ``name'<scope id>``), the
call-site ``.param`` slots declared in it, and a cache of resolved names.
The function's top scope has id 0 and no parent.

What it may import: nothing of the front end.
"""

from __future__ import annotations


class Scope:
    __slots__ = ("id", "parent", "regs", "slots", "cache")

    def __init__(self, id: int, parent: Scope | None):
        self.id = id
        self.parent = parent
        self.regs: dict[str, tuple[str, str]] = {}  # name -> (key, type)
        self.slots: dict[str, tuple[str, str, int]] = {}  # call-site .param name -> (key, type, bytes)
        self.cache: dict[str, tuple] = {}
