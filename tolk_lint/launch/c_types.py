"""The integer types of C and C++ declarations, as the host code's readers
(`arguments`, `host_eval`) need them: a width and a signedness."""

from __future__ import annotations

from dataclasses import dataclass

_SIGNED_WORDS = {"char": 8, "int8_t": 8, "short": 16, "int16_t": 16, "int": 32, "int32_t": 32, "long": 64,
                 "int64_t": 64, "ptrdiff_t": 64, "ssize_t": 64, "longlong": 64}  # fmt: skip
_UNSIGNED_WORDS = {"bool": 8, "uint8_t": 8, "uint16_t": 16, "uint": 32, "uint32_t": 32, "uint64_t": 64,
                   "size_t": 64, "ulong": 64}  # fmt: skip
_QUALIFIERS = frozenset("const volatile register static __restrict__ restrict signed".split())


@dataclass(frozen=True)
class IntType:
    signed: bool
    bits: int

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1


INT64 = IntType(True, 64)  # a Python int, as Numba passes it


def int_type(words: list[str]) -> IntType | None:
    """The integer type a declaration's words spell (``unsigned int``,
    ``uint32_t``, ``const long long``), or None (a pointer, a reference, a
    float, a class or template type)."""
    if any(w in ("*", "&", "&&", "<", ">", "::") for w in words):
        return None
    words = [w for w in words if w not in _QUALIFIERS]
    if words.count("long") == 2:
        words = [w for w in words if w != "long"] + ["longlong"]
    unsigned = "unsigned" in words
    rest = [w for w in words if w not in ("unsigned", "int")]
    if not rest:
        return IntType(not unsigned, 32) if words else None
    if len(rest) != 1:
        return None
    if rest[0] in _SIGNED_WORDS:
        return IntType(not unsigned, _SIGNED_WORDS[rest[0]])
    if rest[0] in _UNSIGNED_WORDS and not unsigned:
        return IntType(False, _UNSIGNED_WORDS[rest[0]])
    return None
