"""The semantics of the conversions and the bit-level ops: CVT (scalar
and packed), PURE functions (the ones whose semantics are easy to state
computed, the others a deterministic hash of their operands), PACK and
EXTRACT."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import Any

from tolk_lint.ir.interp.closures import _getter, _pure
from tolk_lint.ir.interp.values import (
    _canon,
    _coercer,
    _float_to_int,
    _fmax,
    _fmin,
    _from_bits,
    _fsafe,
    _kind,
    _mask,
    _signed_view,
    _to_bits,
    _unsigned_view,
)
from tolk_lint.ir.nodes import Value, is_signed, type_bits


def _h_cvt(ins, kernel, cblocks, numeric):
    if len(ins.args) > 1:
        return _h_cvt_packed(ins, numeric)
    a = ins.args[0]
    src = ins.attrs.get("from_type") or a.type
    dst = ins.results[0].type
    ks, kd = _kind(src), _kind(dst)
    rnd = ins.attrs.get("rnd") or ins.attrs.get("round") or ins.attrs.get("rounding")
    sat = bool(ins.attrs.get("sat"))
    get = _getter(a, src, numeric) if _kind(a.type) != ks else (lambda env: env[a])
    cd = _canon(dst)
    if ks == "int" and kd == "int":
        sb = type_bits(src)
        view = _signed_view(sb) if is_signed(src) else _unsigned_view(sb)
        if sat:
            db = type_bits(dst)
            lo, hi = (-(1 << (db - 1)), (1 << (db - 1)) - 1) if is_signed(dst) else (0, _mask(db))
            return _pure(ins, lambda env: max(lo, min(hi, view(get(env)))))
        return _pure(ins, lambda env: cd(view(get(env))))
    if ks == "int" and kd == "float":
        sb = type_bits(src)
        view = _signed_view(sb) if is_signed(src) else _unsigned_view(sb)
        return _pure(ins, lambda env: cd(float(view(get(env)))))
    if ks == "float" and kd == "int":
        return _pure(ins, lambda env: cd(_float_to_int(float(get(env)), dst, rnd)))
    if ks == "float" and kd == "float":
        if rnd in ("rzi", "rni", "rmi", "rpi"):
            f = {"rzi": math.trunc, "rni": round, "rmi": math.floor, "rpi": math.ceil}[rnd]

            def integral(env):
                x = get(env)
                return cd(float(f(x))) if math.isfinite(x) else x

            return _pure(ins, integral)
        if sat:
            return _pure(ins, lambda env: cd(min(1.0, max(0.0, get(env)))))
        return _pure(ins, lambda env: cd(get(env)))
    if kd == "pred":
        return _pure(ins, lambda env: get(env) != 0)
    # pred -> int/float
    return _pure(ins, lambda env: cd(1 if get(env) else 0))


def _h_cvt_packed(ins, numeric):
    """``cvt.rn.f16x2.f32 d, a, b``: a converted into the upper half, b into
    the lower. Element types the interpreter cannot encode (fp8) get a
    deterministic stand-in."""
    dst = ins.results[0].type
    head, _, count = dst.partition("x")
    elem = head if head in ("f16", "bf16", "f32") else None
    n = len(ins.args)
    if elem is None or count != str(n):
        fn = f"cvt.{dst}"
        args = list(ins.args)
        return _pure(ins, lambda env: _hash_value(fn, tuple(env[a] for a in args), dst))
    src = ins.attrs.get("from_type") or ins.args[0].type
    gets = [_getter(a, src, numeric) for a in ins.args]
    w = type_bits(elem)
    to_elem = _coercer(src, elem, True) or (lambda x: x)
    tb = _to_bits(elem)

    def pack(env):
        bits = 0
        for g in gets:  # the first operand lands in the highest part
            bits = (bits << w) | (tb(to_elem(g(env))) & _mask(w))
        return bits

    return _pure(ins, pack)


def _hash_value(fn: str, xs: tuple, t: str) -> Any:
    h = zlib.crc32(repr((fn, xs)).encode())
    h = (h << 32) | zlib.crc32(repr((xs, fn)).encode())
    k = _kind(t)
    if k == "pred":
        return bool(h & 1)
    if k == "float":
        return _canon(t)((h % 2000003) / 1000.0 - 1000.0)
    return _canon(t)(h)


def _pure_fn(fn: str, args: list[Value], t: str) -> Callable[..., Any] | None:
    """Real semantics of the PURE functions that are easy to state."""
    bits = type_bits(args[0].type) if args else 32
    m = _mask(bits)
    fl = {
        "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp,
        "log": math.log, "tanh": math.tanh, "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
        "fabs": abs, "abs": abs, "erf": math.erf, "atan": math.atan, "log2": math.log2,
        "log10": math.log10, "exp2": lambda x: 2.0**x, "ex2": lambda x: 2.0**x, "lg2": math.log2,
        "rsqrt": lambda x: 1.0 / math.sqrt(x), "rcp": lambda x: 1.0 / x, "round": round,
        "pow": math.pow, "atan2": math.atan2, "copysign": math.copysign, "fmod": math.fmod,
        "hypot": math.hypot, "fma": lambda a, b, c: a * b + c, "min": min, "max": max,
        "fmin": _fmin, "fmax": _fmax, "isnan": math.isnan, "isinf": math.isinf,
    }  # fmt: skip
    if fn in fl and (
        _kind(t) == "float" or fn in ("isnan", "isinf") or any(_kind(a.type) == "float" for a in args)
    ):
        return _fsafe(fl[fn])
    if fn == "popc":
        return lambda x: (x & m).bit_count()
    if fn == "clz":
        return lambda x: bits - (x & m).bit_length()
    if fn == "brev":
        return lambda x: int(format(x & m, f"0{bits}b")[::-1], 2)
    if fn == "bfe":
        signed = is_signed(t)

        def bfe(a, pos, ln):
            pos, ln = pos & 0xFF, ln & 0xFF
            a &= m
            field = (a >> pos) & _mask(ln) if pos < bits else 0
            if signed and ln > 0:
                sb = min(pos + ln - 1, bits - 1)
                if (a >> sb) & 1:
                    field |= ~_mask(ln)
            return field

        return bfe
    if fn == "bfi":

        def bfi(a, b, pos, ln):
            pos, ln = pos & 0xFF, ln & 0xFF
            fm = _mask(ln) << pos
            return (b & ~fm) | ((a << pos) & fm)

        return bfi
    if fn == "prmt":

        def prmt(a, b, c):
            src = ((b & 0xFFFFFFFF) << 32) | (a & 0xFFFFFFFF)
            out = 0
            for i in range(4):
                sel = (c >> (4 * i)) & 0xF
                byte = (src >> (8 * (sel & 7))) & 0xFF
                if sel & 8 and byte & 0x80:
                    byte = 0xFF
                elif sel & 8:
                    byte = 0
                out |= byte << (8 * i)
            return out

        return prmt
    if fn == "sad":
        return lambda a, b, c: abs(a - b) + c
    if fn in ("min", "max"):
        return min if fn == "min" else max
    if fn in ("abs",):
        return abs
    return None


def _h_pure(ins, kernel, cblocks, numeric):
    fn = str(ins.attrs.get("fn", "?"))
    rs = ins.results
    t = rs[0].type if rs else "b32"
    args = list(ins.args)
    real = _pure_fn(fn, args, t)
    gets = [(lambda env, a=a: env[a]) for a in args]
    cs = [_canon(r.type) for r in rs]

    def item(th):
        env = th.env
        xs = tuple(g(env) for g in gets)
        if real is not None and len(rs) == 1:
            try:
                x = cs[0](real(*xs))
            except (TypeError, ValueError, OverflowError, ZeroDivisionError):
                x = _hash_value(fn, xs, rs[0].type)
            outs = [x]
        else:
            outs = [_hash_value(f"{fn}#{i}", xs, r.type) for i, r in enumerate(rs)]
        for r, x in zip(rs, outs):
            env[r] = x
            if th.log is not None:
                th.log.append((r, x))

    return item


def _h_pack(ins, kernel, cblocks, numeric):
    t = ins.results[0].type
    parts = [(a, _to_bits(a.type), max(1, type_bits(a.type))) for a in ins.args]
    fb = _from_bits(t)
    m = _mask(type_bits(t))

    def pack(env):
        bits, off = 0, 0
        for a, tb, w in parts:
            bits |= (tb(env[a]) & _mask(w)) << off
            off += w
        return fb(bits & m)

    return _pure(ins, pack)


def _h_extract(ins, kernel, cblocks, numeric):
    a = ins.args[0]
    t = ins.results[0].type
    w = type_bits(t)
    idx = int(ins.attrs.get("index", 0))
    tb, fb = _to_bits(a.type), _from_bits(t)
    m = _mask(w)
    return _pure(ins, lambda env: fb((tb(env[a]) >> (idx * w)) & m))
