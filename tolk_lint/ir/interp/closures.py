"""How an instruction becomes a closure over its thread.

A closure ``item(th)`` reads its operands from ``th.env`` (the thread's
registers), stores its results there and appends them to ``th.log`` when
history is recorded. The common one-result forms are a Python expression
over the operands, compiled once per expression text (`_fast`); the others
compose a function of the registers (`_pure`) from getters (`_getter`: an
operand converted to the type its op computes in)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tolk_lint.ir.interp.results import NotSupported
from tolk_lint.ir.interp.values import _coercer, _kind, _mask
from tolk_lint.ir.nodes import Instr, Value, is_signed, type_bits


def _pure(ins: Instr, fn: Callable) -> Callable:
    """A one-result op ``fn(env) -> value``."""
    r = ins.results[0]

    def item(th):
        x = fn(th.env)
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


_FACTORIES: dict[tuple[str, int], Callable] = {}


def _fast_fn(expr: str, operands: list[Value]) -> Callable:
    """``expr`` over ``env`` and ``a0``, ``a1``, ... as a function of env."""
    ns: dict[str, Any] = {f"a{i}": v for i, v in enumerate(operands)}
    return eval(f"lambda env: {expr}", ns)


def _fast(expr: str, r: Value, *operands: Any) -> Callable:
    """A one-result op whose value is the Python expression ``expr`` over
    ``env`` and the operands ``a0``, ``a1``, ... (compiled once per
    expression text, then bound to each instruction's values)."""
    key = (expr, len(operands))
    make = _FACTORIES.get(key)
    if make is None:
        names = ", ".join(f"a{i}" for i in range(len(operands)))
        src = (
            f"def make(r{', ' if names else ''}{names}):\n"
            "    def item(th):\n"
            "        env = th.env\n"
            f"        x = {expr}\n"
            "        env[r] = x\n"
            "        log = th.log\n"
            "        if log is not None:\n"
            "            log.append((r, x))\n"
            "    return item\n"
        )
        ns: dict[str, Any] = {}
        exec(src, ns)  # noqa: S102 - the source is built here from fixed templates
        make = _FACTORIES[key] = ns["make"]
    return make(r, *operands)


def _wrap_expr(expr: str, t: str) -> str:
    bits = type_bits(t)
    m = _mask(bits)
    if is_signed(t):
        h = 1 << (bits - 1)
        return f"((({expr}) + {h}) & {m}) - {h}"
    return f"({expr}) & {m}"


def _view_expr(v: str, vt: str, bits: int, signed: bool) -> str:
    """``v`` (a value of type ``vt``) seen as a ``bits``-wide signed/unsigned int."""
    if _kind(vt) == "int" and type_bits(vt) == bits and is_signed(vt) == signed:
        return v
    m = _mask(bits)
    if signed:
        h = 1 << (bits - 1)
        return f"((({v}) + {h}) & {m}) - {h}"
    return f"(({v}) & {m})"


def _getter(v: Value, t: str, numeric: bool) -> Callable:
    c = _coercer(v.type, t, numeric)
    if c is None:
        return lambda env: env[v]
    return lambda env: c(env[v])


def _op_type(ins: Instr) -> str:
    t = ins.attrs.get("type")
    if isinstance(t, str):
        return t
    if ins.results:
        return ins.results[0].type
    return ins.args[0].type if ins.args else "b32"


def _is_signed_op(ins: Instr, t: str) -> bool:
    s = ins.attrs.get("signed")
    if s is not None:
        return bool(s)
    if is_signed(t):
        return True
    return t.startswith("b") and any(is_signed(a.type) for a in ins.args)


def _unsupported(ins: Instr, msg: str) -> Callable:
    def item(th):
        raise NotSupported(msg, ins)

    return item
