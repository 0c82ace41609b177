"""The registers a PTX rewrite adds: fresh names that collide with nothing
in the file, one family per type, and the ``.reg`` lines that declare them.

Names are ``%tolk_<type>_<n>`` (``%tolk_b32_3``, ``%tolk_pred_0``); where
the file already uses a name starting with ``%tolk``, the prefix gets a
number (``%tolk2_``). Each family is declared once, as ``.reg .b32
%tolk_b32_<N>;`` (PTX's parameterized names: ``%tolk_b32_0`` to
``%tolk_b32_{N-1}``), beside the kernel's own declarations.
"""

from __future__ import annotations

import re

# Types a fresh register may take; a type of the original program maps to the
# family its value needs (a ``.f32`` register stays ``.f32``: ``mov.f32`` needs it).
_FAMILY = {"b8": "b16", "u8": "b16", "s8": "b16"}


class RegisterPool:
    def __init__(self, text: str, prefix: str | None = None):
        self.prefix = prefix or _free_prefix(text)
        self.counts: dict[str, int] = {}

    def fresh(self, typ: str) -> str:
        """A new register of type ``typ`` (``b32``, ``b64``, ``pred``, ``f32``...)."""
        typ = _FAMILY.get(typ, typ)
        n = self.counts.get(typ, 0)
        self.counts[typ] = n + 1
        return f"{self.prefix}_{typ}_{n}"

    def declarations(self, indent: str = "\t") -> list[str]:
        """The ``.reg`` lines for every register handed out, in a stable order."""
        return [f"{indent}.reg .{t} \t{self.prefix}_{t}_<{n}>;" for t, n in sorted(self.counts.items())]

    def type_of(self, reg: str) -> str | None:
        """The type of a register this pool handed out (None for any other)."""
        if not self.owns(reg):
            return None
        return reg[len(self.prefix) + 1 :].rsplit("_", 1)[0]

    def owns(self, reg: str) -> bool:
        return reg.startswith(self.prefix + "_")


def _free_prefix(text: str) -> str:
    used = set(re.findall(r"%tolk\d*", text))
    if "%tolk" not in used:
        return "%tolk"
    n = 2
    while f"%tolk{n}" in used:
        n += 1
    return f"%tolk{n}"
