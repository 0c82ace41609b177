"""The C++ names nvcc gives PTX entries, read back: ``_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii``
is ``MatrixMulCUDA<32>``, ``_ZN3foo3nskEPfi`` is ``foo::nsk``.

A small reader of the Itanium C++ ABI's mangling, only as far as a kernel's
name goes: its qualified name (nested names, ``std``) and its template
arguments (integer literals such as ``Li32E`` and ``Lj16E``, builtin types,
class types by name). What it does not know (an expression argument, a
substitution inside the arguments) makes the argument unknown, never a
wrong one. An ``extern "C"`` name is not mangled and is returned as is.
"""

from __future__ import annotations

from dataclasses import dataclass

BUILTIN_TYPES = {
    "v": "void", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char", "s": "short",
    "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long", "m": "unsigned long", "x": "long long",
    "y": "unsigned long long", "n": "__int128", "o": "unsigned __int128", "f": "float", "d": "double",
    "e": "long double", "w": "wchar_t",
}  # fmt: skip
_TWO_LETTER = {"Dh": "__half", "DF16_": "_Float16", "Dn": "decltype(nullptr)", "Di": "char32_t", "Ds": "char16_t"}

UNKNOWN_ARG = object()  # a template argument this reader cannot spell


@dataclass(frozen=True)
class Entry:
    """An entry's source name: the qualified parts (``("foo", "nsk")``) and
    the template arguments (ints, type names, or `UNKNOWN_ARG`); ``args``
    is None for a name that is not a template."""

    parts: tuple[str, ...]
    args: tuple | None = None

    @property
    def name(self) -> str:
        return self.parts[-1]

    def __str__(self) -> str:
        out = "::".join(self.parts)
        if self.args is not None:
            out += "<" + ", ".join("?" if a is UNKNOWN_ARG else str(a) for a in self.args) + ">"
        return out


def read_entry(name: str) -> Entry:
    """The source name a PTX entry stands for."""
    if not name.startswith("_Z"):
        return Entry((name,))
    try:
        r = _Reader(name, 2)
        return r.name()
    except (_Unreadable, IndexError):
        return Entry((name,))


class _Unreadable(Exception):
    pass


class _Reader:
    def __init__(self, s: str, i: int):
        self.s = s
        self.i = i

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def take(self, n: int = 1) -> str:
        out = self.s[self.i : self.i + n]
        if len(out) < n:
            raise _Unreadable
        self.i += n
        return out

    def name(self) -> Entry:
        if self.peek() == "N":
            self.take()
            while self.peek() in ("r", "V", "K"):  # cv-qualifiers of a member function
                self.take()
            parts: list[str] = []
            args = None
            while self.peek() != "E":
                if self.peek() == "I":
                    args = self.template_args()
                elif self.peek(2) == "St":
                    self.take(2)
                    parts.append("std")
                elif self.peek().isdigit():
                    parts.append(self.source_name())
                    args = None
                else:
                    raise _Unreadable
            self.take()
            if not parts:
                raise _Unreadable
            return Entry(tuple(parts), args)
        if self.peek(2) == "St":
            self.take(2)
            parts = ["std", self.source_name()]
        else:
            parts = [self.source_name()]
        args = self.template_args() if self.peek() == "I" else None
        return Entry(tuple(parts), args)

    def source_name(self) -> str:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        if j == self.i:
            raise _Unreadable
        n = int(self.s[self.i : j])
        self.i = j
        return self.take(n)

    def template_args(self) -> tuple:
        self.take()  # I
        out = []
        while self.peek() != "E":
            out.append(self.template_arg())
        self.take()
        return tuple(out)

    def template_arg(self):
        c = self.peek()
        if c == "L":
            self.take()
            t = self.type_name()
            negative = self.peek() == "n"
            if negative:
                self.take()
            j = self.i
            while j < len(self.s) and self.s[j] != "E":
                j += 1
            digits = self.s[self.i : j]
            self.i = j + 1
            if not digits.isdigit():
                return UNKNOWN_ARG
            v = int(digits)
            if t == "bool":
                return bool(v)
            return -v if negative else v
        if c == "X":  # an expression: skip to its end
            depth = 0
            while True:
                ch = self.take()
                if ch in ("X", "I", "L"):
                    depth += 1
                elif ch == "E":
                    depth -= 1
                    if depth == 0:
                        return UNKNOWN_ARG
        if c == "J":  # a pack
            self.take()
            while self.peek() != "E":
                self.template_arg()
            self.take()
            return UNKNOWN_ARG
        return self.type_name()

    def type_name(self):
        c = self.peek()
        if c in BUILTIN_TYPES:
            self.take()
            return BUILTIN_TYPES[c]
        for code, t in _TWO_LETTER.items():
            if self.s.startswith(code, self.i):
                self.i += len(code)
                return t
        if c.isdigit():
            return self.source_name()
        if c in ("P", "R", "K", "V"):
            self.take()
            inner = self.type_name()
            return UNKNOWN_ARG if inner is UNKNOWN_ARG else inner + {"P": "*", "R": "&", "K": " const",
                                                                      "V": " volatile"}[c]  # fmt: skip
        if c == "N":
            e = self.name()
            return "::".join(e.parts)
        raise _Unreadable


_TYPE_SPELLINGS = {
    "unsigned": "unsigned int", "signed": "int", "signed int": "int", "half": "__half", "uint": "unsigned int",
    "uint32_t": "unsigned int", "int32_t": "int", "int64_t": "long", "uint64_t": "unsigned long",
    "size_t": "unsigned long", "nv_bfloat16": "__nv_bfloat16", "bfloat16": "__nv_bfloat16",
}  # fmt: skip


def same_type(source: str, mangled: str) -> bool:
    """Whether a type as the source spells it is the one the mangled name holds."""
    a = " ".join(source.replace("const", "").split())
    return _TYPE_SPELLINGS.get(a, a) == _TYPE_SPELLINGS.get(mangled, mangled) or a.split("::")[-1] == mangled


_KNOWN_TYPES = frozenset(BUILTIN_TYPES.values()) | frozenset(_TWO_LETTER.values()) | frozenset(_TYPE_SPELLINGS) | {
    "__nv_bfloat16", "float2", "float4", "int2", "int4", "half2", "__half2"}  # fmt: skip


def is_type_name(text: str) -> bool:
    """A type the source names itself (not a template parameter of the launching function)."""
    return " ".join(text.replace("const", "").split()) in _KNOWN_TYPES
