"""What a PTX opcode string and an operand tuple say, for the lowering.

`OpInfo` decodes an opcode string once (``ld.global.v4.f32``: family ``ld``,
modifiers, types, state space); `opinfo` caches it per distinct string. Also
here: the exception a handler raises for operands it cannot interpret
(`Unmodelled`: the statement becomes OPAQUE), the sink register ``_``, and
small helpers on PTX type names.

What it may import: `tolk_lint.ir` only (nothing else of the front end).
"""

from __future__ import annotations

from tolk_lint.ir.nodes import type_bits

TYPES = frozenset(
    """pred b1 b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 tf32 f32 f64
    e4m3 e5m2 e4m3x2 e5m2x2 e4m3x4 e5m2x4 e2m1 e2m1x2 e2m1x4 e2m3 e3m2 e2m3x2 e3m2x2 e2m3x4 e3m2x4 ue8m0x2
    ue8m0 s4 u4 s2 u2 s32x2 u32x2 f32x2 f64x2""".split()
)

SPACE_OF = {
    "global": "global",
    "shared": "shared",
    "shared::cta": "shared",
    "shared::cluster": "shared",
    "local": "local",
    "const": "const",
    "param": "param",
    "param::entry": "param",
    "param::func": "param",
}

SINK = "_"  # the `_` destination: a result nobody reads


class Unmodelled(Exception):
    """An instruction whose operands cannot be interpreted: lower it as OPAQUE."""


class OpInfo:
    """What an opcode string says, decoded once per distinct string."""

    __slots__ = ("text", "fam", "mods", "modset", "types", "t", "space")

    def __init__(self, text: str):
        self.text = text
        parts = text.split(".")
        self.fam = parts[0]
        self.mods = parts[1:]
        self.modset = frozenset(self.mods)
        self.types = [p for p in self.mods if p in TYPES]
        self.t = self.types[-1] if self.types else None
        sp = None
        for p in self.mods:
            s = SPACE_OF.get(p)
            if s is not None:
                sp = s
                break
        self.space = sp


OPINFO_CACHE: dict[str, OpInfo] = {}


def opinfo(text: str) -> OpInfo:
    oi = OPINFO_CACHE.get(text)
    if oi is None:
        oi = OPINFO_CACHE[text] = OpInfo(text)
    return oi


def int_like(t: str | None) -> bool:
    return t is not None and t[0] in "bsu" and t != "pred"


def wide(t: str) -> str:
    """The type twice as wide (``.wide`` results: s32 -> s64)."""
    b = type_bits(t)
    return f"{t[0]}{2 * b}" if t[0] in "bsuf" and b <= 64 else t


def show_operand(o: tuple) -> str:
    """An operand tuple as a message shows it."""
    tag = o[0]
    if tag == "r":
        return f"`{o[1]}`"
    if tag in ("i", "f"):
        return f"`{o[1]}`"
    if tag == "m":
        return "an address"
    if tag == "v":
        return "a vector"
    if tag == "g":
        return "a list `( )`"
    if tag == "d":
        return f"`{o[1]}|{o[2]}`"
    return "an operand"
