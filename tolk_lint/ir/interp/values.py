"""How the interpreter represents values, converts them and encodes them
in memory.

Integers are Python ints wrapped to their type's width (signed types in
two's complement, held as negative ints); floats are Python floats
rounded to f32/f16/bf16 where the type says so; predicates are bools;
packed types (``f16x2``, ``e4m3x2``) are their bits. An operand whose
representation differs from what its op computes in (``add.f32`` of a
``.b32`` register) is reinterpreted bit for bit in PTX; in Python
kernels int <-> float is a numeric conversion. Division by zero gives 0
and a note. ``attrs["floor"]`` selects Python's floor division/modulo.

Memory elements are little-endian, as wide as their type (`_codec`); a
list given as a global array is packed and unpacked the same way
(`_pack_list`, `_unpack_list`). The float helpers (`_fdiv`, `_fmin`,
`_fmax`, `_fsafe`) give IEEE results where Python would raise."""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Callable
from typing import Any

from tolk_lint.ir.nodes import is_signed, type_bits


def _kind(t: str) -> str:
    """``pred``, ``float`` or ``int`` (packed types are their bits)."""
    if t == "pred":
        return "pred"
    if "x" in t:
        return "int"
    if t.startswith(("f", "bf", "tf")):
        return "float"
    if t.startswith(("e4", "e5", "e2", "e3")):
        return "int"
    return "int"


def _mask(bits: int) -> int:
    return (1 << bits) - 1


def _f32(x: float) -> float:
    return ctypes.c_float(x).value


_F16 = struct.Struct("<e")
_F32S = struct.Struct("<f")
_F64S = struct.Struct("<d")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def _f16(x: float) -> float:
    try:
        return _F16.unpack(_F16.pack(x))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, x) if not math.isnan(x) else x


def _f32_bits(x: float) -> int:
    return _U32.unpack(_F32S.pack(_f32(x)))[0]


def _bf16_bits(x: float) -> int:
    b = _f32_bits(x)
    if (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF):
        return 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _bf16(x: float) -> float:
    return _F32S.unpack(_U32.pack(_bf16_bits(x) << 16))[0]


def _float_round(t: str) -> Callable[[float], float]:
    if t in ("f32", "tf32"):
        return _f32
    if t == "f16":
        return _f16
    if t == "bf16":
        return _bf16
    return float


def _to_bits(t: str) -> Callable[[Any], int]:
    """Value of type ``t`` -> its bits."""
    k = _kind(t)
    if k == "pred":
        return lambda x: 1 if x else 0
    if k == "int":
        m = _mask(type_bits(t))
        return lambda x: x & m
    if t in ("f32", "tf32"):
        return _f32_bits
    if t == "f16":
        return lambda x: _U16.unpack(_F16.pack(_f16(x)))[0]
    if t == "bf16":
        return _bf16_bits
    return lambda x: _U64.unpack(_F64S.pack(x))[0]


def _from_bits(t: str) -> Callable[[int], Any]:
    """Bits -> value of type ``t``."""
    k = _kind(t)
    if k == "pred":
        return lambda b: b != 0
    if k == "int":
        return _canon(t)
    if t in ("f32", "tf32"):
        return lambda b: _F32S.unpack(_U32.pack(b & 0xFFFFFFFF))[0]
    if t == "f16":
        return lambda b: _F16.unpack(_U16.pack(b & 0xFFFF))[0]
    if t == "bf16":
        return lambda b: _F32S.unpack(_U32.pack((b & 0xFFFF) << 16))[0]
    return lambda b: _F64S.unpack(_U64.pack(b & 0xFFFFFFFFFFFFFFFF))[0]


_CANON: dict[str, Callable[[Any], Any]] = {}


def _canon(t: str) -> Callable[[Any], Any]:
    """The canonical representation of type ``t``."""
    f = _CANON.get(t)
    if f is not None:
        return f
    k = _kind(t)
    if k == "pred":
        f = bool
    elif k == "float":
        rnd = _float_round(t)

        def f(x, rnd=rnd):
            return rnd(float(x))

    else:
        bits = type_bits(t)
        m = _mask(bits)
        if is_signed(t):
            h = 1 << (bits - 1)
            f = eval(f"lambda x: ((int(x) + {h}) & {m}) - {h}")
        else:
            f = eval(f"lambda x: int(x) & {m}")
    _CANON[t] = f
    return f


def _signed_view(bits: int) -> Callable[[int], int]:
    h, m = 1 << (bits - 1), _mask(bits)
    return lambda x: ((x + h) & m) - h


def _unsigned_view(bits: int) -> Callable[[int], int]:
    m = _mask(bits)
    return lambda x: x & m


def _coercer(src: str, dst: str, numeric: bool) -> Callable[[Any], Any] | None:
    """A function from the representation of ``src`` to that of ``dst``, or
    None when they are the same. PTX reinterprets bits between ints and
    floats; Python (``numeric``) converts the number."""
    if src == dst:
        return None
    ks, kd = _kind(src), _kind(dst)
    if ks == kd == "int":
        if type_bits(src) == type_bits(dst) and is_signed(src) == is_signed(dst):
            return None
        return _canon(dst)
    if kd == "pred":
        return lambda x: x != 0
    if ks == "pred":
        return (lambda x: 1.0 if x else 0.0) if kd == "float" else (lambda x: 1 if x else 0)
    if ks == kd == "float":
        return _canon(dst)
    if ks == "float":  # float -> int
        c = _canon(dst)
        if numeric:
            return lambda x: c(_float_to_int(x, dst, "rzi"))
        tb = _to_bits(src)
        return lambda x: c(tb(x))
    # int -> float
    if numeric:
        c = _canon(dst)
        sv = _signed_view(type_bits(src)) if is_signed(src) else (lambda x: x)
        return lambda x: c(float(sv(x)))
    fb = _from_bits(dst)
    m = _mask(type_bits(dst))
    return lambda x: fb(x & m)


def _float_to_int(x: float, t: str, rnd: str | None) -> int:
    """PTX float -> int conversion: rounded, saturated, NaN -> 0."""
    if math.isnan(x):
        return 0
    bits = type_bits(t)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(t) else (0, _mask(bits))
    if math.isinf(x):
        return hi if x > 0 else lo
    r = (rnd or "rzi").rstrip("i")
    if r == "rn":
        v = round(x)  # Python rounds half to even, as PTX .rni
    elif r == "rm":
        v = math.floor(x)
    elif r == "rp":
        v = math.ceil(x)
    else:
        v = math.trunc(x)
    return max(lo, min(hi, v))


def _const_value(value: Any, t: str, numeric: bool) -> Any:
    k = _kind(t)
    if k == "pred":
        return bool(value)
    if k == "float":
        return _canon(t)(float(value))
    if isinstance(value, float):
        if numeric:  # Python: the number, truncated
            return _canon(t)(int(value)) if math.isfinite(value) else 0
        # PTX: the bits of a float literal (the front end already converts them)
        bits = type_bits(t)
        src = "f64" if bits == 64 else ("f16" if bits == 16 else "f32")
        return _canon(t)(_to_bits(src)(value))
    return _canon(t)(int(value))


# encoding of memory elements


def _codec(dtype: str) -> tuple[int, Callable[[Any], bytes], Callable[[bytes], Any]]:
    """(width in bytes, encode, decode) for memory element ``dtype``."""
    width = max(1, type_bits(dtype) // 8)
    k = _kind(dtype)
    if k == "float":
        tb, fb = _to_bits(dtype), _from_bits(dtype)

        def enc(x, tb=tb, w=width):
            return tb(float(x)).to_bytes(w, "little")

        def dec(b, fb=fb):
            return fb(int.from_bytes(b, "little"))

        return width, enc, dec
    if k == "pred":
        return width, (lambda x: b"\x01" if x else b"\x00"), (lambda b: b[0] != 0)
    signed = is_signed(dtype) and "x" not in dtype
    m = _mask(width * 8)

    def ienc(x, m=m, w=width):
        return (int(x) & m).to_bytes(w, "little")

    def idec(b, s=signed):
        return int.from_bytes(b, "little", signed=s)

    return width, ienc, idec


def _fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _fmin(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return min(a, b)


def _fmax(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return max(a, b)


def _fsafe(f: Callable) -> Callable:
    def g(*xs):
        try:
            return f(*xs)
        except OverflowError:
            return math.inf
        except (ValueError, ZeroDivisionError):
            return math.nan

    return g


_STRUCT_CODES = {
    "s8": "b", "u8": "B", "b8": "B", "s16": "h", "u16": "H", "b16": "H", "s32": "i", "u32": "I",
    "b32": "I", "s64": "q", "u64": "Q", "b64": "Q", "f32": "f", "f64": "d", "f16": "e",
}  # fmt: skip


def _pack_list(dt: str, data: list) -> bytes:
    code = _STRUCT_CODES.get(dt)
    if code is not None:
        try:
            return struct.pack(f"<{len(data)}{code}", *data)
        except (struct.error, OverflowError, TypeError):
            pass
    _w, enc, _ = _codec(dt)
    return b"".join(enc(x) for x in data)


def _unpack_list(dt: str, raw: bytes, n: int) -> list:
    code = _STRUCT_CODES.get(dt)
    width, _enc, dec = _codec(dt)
    if code is not None and dt != "f32":
        return list(struct.unpack_from(f"<{n}{code}", raw))
    if dt == "f32":
        return [float(x) for x in struct.unpack_from(f"<{n}f", raw)]
    return [dec(raw[i * width : (i + 1) * width]) for i in range(n)]


def _numpy_type(dt: Any) -> str:
    kind, size = dt.kind, dt.itemsize * 8
    if kind == "f":
        return f"f{size}"
    if kind == "i":
        return f"s{size}"
    if kind == "u":
        return f"u{size}"
    if kind == "b":
        return "u8"
    return f"b{size}"
