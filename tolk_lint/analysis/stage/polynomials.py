"""Thread functions and the polynomials whose coefficients they are: the
arithmetic an address is put in when the staging analysis reads it.

A thread function (TF) is a tuple tree: ``("c", int)`` | ``("v", name)`` |
``(op, a, b)`` with ``op`` in ``_TF_OPS``, or ``("sel", c, a, b)``. Names are
``tid.x``, ``tid.y``, ``tid.z`` and lane variables (``frag.r``, ``frag.c``,
``vec``). A TF is built folded (`tf`), evaluated over every thread at once
with numpy (`tf_eval`) or as a Z3 bit-vector term (`tf_z3`).

A polynomial (`Poly`) maps a monomial (a sorted tuple of atom keys) to its
TF coefficient; the ``p_*`` functions add, multiply, split and print them.
`Unstageable` is the exception every step of the analysis raises with the
reason an operand cannot be staged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tolk_lint import budget

_TF_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "shl": lambda a, b: a << b,
    "shr": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "div": lambda a, b: a // b,
    "rem": lambda a, b: a % b,
    "min": lambda a, b: lazy_numpy().minimum(a, b),
    "max": lambda a, b: lazy_numpy().maximum(a, b),
    "lt": lambda a, b: (a < b).astype("int64") if hasattr(a < b, "astype") else int(a < b),
    "le": lambda a, b: (a <= b).astype("int64") if hasattr(a <= b, "astype") else int(a <= b),
    "eq": lambda a, b: (a == b).astype("int64") if hasattr(a == b, "astype") else int(a == b),
    "ne": lambda a, b: (a != b).astype("int64") if hasattr(a != b, "astype") else int(a != b),
}
ZERO = ("c", 0)
ONE = ("c", 1)


_numpy = None


def lazy_numpy():
    """numpy, imported on first use rather than when the analysis is
    imported (a tenth of a second of start-up that most small files never
    need), its import time given back to the lint's budget
    (`tolk_lint.budget.not_counted`)."""
    global _numpy
    if _numpy is None:
        with budget.not_counted():
            import numpy
        _numpy = numpy
    return _numpy


def tf_const(tf) -> int | None:
    return tf[1] if tf[0] == "c" else None


def tf(op: str, a, b):
    """Build a TF node, folding constants and the identities of + and *."""
    ca, cb = tf_const(a), tf_const(b)
    if op in ("shl", "shr") and cb is not None and not 0 <= cb < 63:
        raise Unstageable(f"a shift by {cb} in the index")
    if ca is not None and cb is not None:
        if op in ("div", "rem") and cb == 0:
            raise Unstageable("division by zero in the index")
        return ("c", int(_TF_OPS[op](ca, cb)))
    if op == "sub" and cb is not None:
        op, b, cb = "add", ("c", -cb), -cb
    if op == "add" and ca is not None and cb is None:
        a, b, ca, cb = b, a, None, ca  # constants to the right
    if op == "add":
        if ca == 0:
            return b
        if cb == 0:
            return a
        if cb is not None and a[0] == "add" and tf_const(a[2]) is not None:
            return tf("add", a[1], ("c", tf_const(a[2]) + cb))  # (x + c1) + c2
    if op == "mul" and ca is not None and cb is None:
        a, b, ca, cb = b, a, None, ca
    if op == "mul" and cb is not None and a[0] == "mul" and tf_const(a[2]) is not None:
        return tf("mul", a[1], ("c", tf_const(a[2]) * cb))  # (x * c1) * c2
    if op == "mul":
        if ca == 0 or cb == 0:
            return ZERO
        if ca == 1:
            return b
        if cb == 1:
            return a
    if op in ("shl", "shr") and cb == 0:
        return a
    return (op, a, b)


def tf_vars(t) -> set[str]:
    if t[0] == "c":
        return set()
    if t[0] == "v":
        return {t[1]}
    out: set[str] = set()
    for x in t[1:]:
        out |= tf_vars(x)
    return out


def tf_eval(t, env: dict[str, Any], memo: dict | None = None):
    """Evaluate over numpy arrays (broadcasting) or ints."""
    if memo is None:
        memo = {}
    if t[0] == "c":
        return t[1]
    if t[0] == "v":
        return env[t[1]]
    got = memo.get(t)
    if got is not None:
        return got
    if t[0] == "sel":
        np = lazy_numpy()
        c, a, b = (tf_eval(x, env, memo) for x in t[1:])
        out = np.where(np.asarray(c) != 0, a, b)
    else:
        a, b = tf_eval(t[1], env, memo), tf_eval(t[2], env, memo)
        if t[0] in ("div", "rem"):
            np = lazy_numpy()
            if np.any(np.asarray(b) == 0):
                raise Unstageable("a division by zero in the index")
        out = _TF_OPS[t[0]](a, b)
    memo[t] = out
    return out


def tf_values(t, env: dict[str, Any]):
    """`tf_eval` as an int64 numpy array; `Unstageable` when it reads a
    name ``env`` does not give, or a value does not fit 64 bits (a literal
    like ``0xFFFFFFFFFFFFFFFF`` in the index: no tile of a real array is
    addressed so)."""
    np = lazy_numpy()
    unknown = tf_vars(t) - env.keys()
    if unknown:  # a coefficient that is not a function of the threads alone (an inner loop's value)
        raise Unstageable(f"the index depends on `{sorted(unknown)[0]}`, which the tile cannot name")
    try:
        out = np.asarray(tf_eval(t, env))
        if out.dtype == object:
            raise OverflowError
        return out.astype("int64", copy=False)
    except OverflowError:
        raise Unstageable("an index value does not fit 64 bits") from None


Z3_BITS = 32  # index arithmetic as 32-bit two's complement bit-vectors (64 when values need it)


def tf_z3(t, env: dict[str, Any], bits: int = Z3_BITS):
    """The TF as a Z3 bit-vector term of ``bits`` bits (signed division and
    modulo agree with Python's floor semantics on the non-negative values
    indices take)."""
    from tolk_lint.analysis.smt.solver import z3mod  # the seeded z3 (`z3mod`), never a bare import

    z3 = z3mod()

    if t[0] == "c":
        return z3.BitVecVal(t[1], bits)
    if t[0] == "v":
        return env[t[1]]
    one, zero = z3.BitVecVal(1, bits), z3.BitVecVal(0, bits)
    if t[0] == "sel":
        c, a, b = (tf_z3(x, env, bits) for x in t[1:])
        return z3.If(c != 0, a, b)
    a, b = tf_z3(t[1], env, bits), tf_z3(t[2], env, bits)
    op = t[0]
    if op in ("lt", "le", "eq", "ne"):
        cond = {"lt": a < b, "le": a <= b, "eq": a == b, "ne": a != b}[op]
        return z3.If(cond, one, zero)
    if op == "min":
        return z3.If(a < b, a, b)
    if op == "max":
        return z3.If(a > b, a, b)
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "div": lambda: a / b,
        "rem": lambda: z3.SRem(a, b),
        "shl": lambda: a << b,
        "shr": lambda: a >> b,
        "and": lambda: a & b,
        "or": lambda: a | b,
        "xor": lambda: a ^ b,
    }[op]()


def tf_str(t) -> str:
    if t[0] == "c":
        return str(t[1])
    if t[0] == "v":
        return t[1]
    if t[0] == "sel":
        return f"({tf_str(t[1])} ? {tf_str(t[2])} : {tf_str(t[3])})"
    sym = {"add": "+", "sub": "-", "mul": "*", "shl": "<<", "shr": ">>", "and": "&", "or": "|", "xor": "^",
           "div": "/", "rem": "%", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}.get(t[0])  # fmt: skip
    if sym is None:
        return f"{t[0]}({tf_str(t[1])}, {tf_str(t[2])})"
    return f"({tf_str(t[1])} {sym} {tf_str(t[2])})"


class Unstageable(Exception):
    """An index the analysis cannot put in box form: the message says why."""


@dataclass(frozen=True)
class Atom:
    key: str
    name: str
    kind: str  # "uniform" | "range" (a loop's trip, or a value that depends on one)


Poly = dict  # tuple[str, ...] -> TF


def p_const(c: int) -> Poly:
    return {(): ("c", int(c))} if c else {}


def p_tf(t) -> Poly:
    return {} if t == ZERO else {(): t}


def p_atom(key: str) -> Poly:
    return {(key,): ONE}


def p_add(p: Poly, q: Poly) -> Poly:
    out = dict(p)
    for m, c in q.items():
        s = tf("add", out[m], c) if m in out else c
        if s == ZERO:
            out.pop(m, None)
        else:
            out[m] = s
    return out


def p_scale(p: Poly, t) -> Poly:
    if t == ZERO:
        return {}
    return {m: tf("mul", c, t) for m, c in p.items()}


def p_neg(p: Poly) -> Poly:
    return p_scale(p, ("c", -1))


def p_sub(p: Poly, q: Poly) -> Poly:
    return p_add(p, p_neg(q))


MAX_MONOMIALS = 64


def p_mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            out = p_add(out, {tuple(sorted(m1 + m2)): tf("mul", c1, c2)})
    if len(out) > MAX_MONOMIALS:
        raise Unstageable("the index expands into too many terms")
    return out


def p_const_value(p: Poly) -> int | None:
    if not p:
        return 0
    if set(p) == {()}:
        return tf_const(p[()])
    return None


def p_thread_only(p: Poly) -> bool:
    return set(p) <= {()}


def p_thread_free(p: Poly) -> bool:
    return all(c[0] == "c" for c in p.values())


def p_split(p: Poly) -> tuple[Poly, Poly]:
    """(the part without thread terms, the thread-only part) or raise."""
    free: Poly = {}
    thread: Poly = {}
    for m, c in p.items():
        if c[0] == "c":
            free[m] = c
        elif m == ():
            # a constant monomial mixing thread terms and constants
            thread[()] = c
        else:
            raise Unstageable("a thread term multiplies a uniform value inside a bit-field or division")
    return free, thread


def p_tz(p: Poly) -> int:
    """Trailing zero bits every value of a thread-free polynomial has."""
    tz = 64
    for c in p.values():
        v = tf_const(c)
        if v is None:
            return 0
        if v:
            tz = min(tz, (v & -v).bit_length() - 1)
    return tz


def _short(name: str) -> str:
    """``wmma_gemm_global_param_4`` -> ``param_4`` (nvcc's parameter names)."""
    mt = re.search(r"_(param_\d+)$", name)
    return mt.group(1) if mt else name


def p_str(p: Poly, atoms: dict[str, Atom], unit: int = 1) -> str:
    if not p:
        return "0"
    parts = []
    for m in sorted(p, key=lambda m: (len(m), m)):
        c = p[m]
        cv = tf_const(c)
        names = "·".join(_short(atoms[a].name if a in atoms else a) for a in m)
        if cv is not None:
            cv = cv // unit if unit and cv % unit == 0 else cv
            if not m:
                parts.append(str(cv))
            elif cv == 1:
                parts.append(names)
            else:
                parts.append(f"{cv}·{names}")
        else:
            parts.append(tf_str(c) + (f"·{names}" if names else ""))
    return " + ".join(parts).replace("+ -", "- ")


def p_subst(p: Poly, key: str, q: Poly) -> Poly:
    """``p`` with atom ``key`` replaced by ``q``."""
    out: Poly = {}
    for m, c in p.items():
        n = m.count(key)
        if not n:
            out = p_add(out, {m: c})
            continue
        rest = tuple(a for a in m if a != key)
        term: Poly = {rest: c}
        for _ in range(n):
            term = p_mul(term, q)
        out = p_add(out, term)
    return out


def is_pow2(n: int) -> bool:
    """Whether ``n`` is a positive power of two."""
    return n > 0 and n & (n - 1) == 0
