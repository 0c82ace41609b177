"""The semantics of the value ops: the values without operands (CONST,
UNDEF, PARAM, SPECIAL, ADDR), integer, float and predicate arithmetic, CMP
and SELECT. Each ``_h_*`` handler turns one instruction into its closure
(see `closures`). An integer division by zero gives 0 and a note."""

from __future__ import annotations

import math
from collections.abc import Callable

from tolk_lint.ir.interp.closures import (
    _fast,
    _fast_fn,
    _getter,
    _is_signed_op,
    _op_type,
    _pure,
    _view_expr,
    _wrap_expr,
)
from tolk_lint.ir.interp.results import NotSupported, _where
from tolk_lint.ir.interp.state import _CurrentRun
from tolk_lint.ir.interp.values import (
    _canon,
    _coercer,
    _const_value,
    _fdiv,
    _fmax,
    _fmin,
    _from_bits,
    _fsafe,
    _kind,
    _mask,
    _signed_view,
    _unsigned_view,
)
from tolk_lint.ir.nodes import is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode


_INT_TEMPLATES = {
    O.ADD: "x + y",
    O.SUB: "x - y",
    O.NEG: "-x",
    O.AND: "x & y",
    O.OR: "x | y",
    O.XOR: "x ^ y",
    O.NOT: "~x",
}
_LAMBDA_CACHE: dict[str, Callable] = {}


def _int_lambda(expr: str, nargs: int, t: str) -> Callable:
    bits = type_bits(t)
    m = _mask(bits)
    if is_signed(t):
        h = 1 << (bits - 1)
        body = f"((({expr}) + {h}) & {m}) - {h}"
    else:
        body = f"({expr}) & {m}"
    params = "x" if nargs == 1 else ("x, y" if nargs == 2 else "x, y, z")
    src = f"lambda {params}: {body}"
    f = _LAMBDA_CACHE.get(src)
    if f is None:
        f = _LAMBDA_CACHE[src] = eval(src)
    return f


# -- values without operands


def _h_const(ins, kernel, cblocks, numeric):
    v = _const_value(ins.attrs.get("value", 0), ins.results[0].type, numeric)
    return _fast("a0", ins.results[0], v)


def _h_undef(ins, kernel, cblocks, numeric):
    v = _const_value(0, ins.results[0].type, numeric)
    return _pure(ins, lambda env: v)


def _h_param(ins, kernel, cblocks, numeric):
    name = ins.attrs.get("name")
    r = ins.results[0]

    def item(th):
        x = th.m.param_value(name, r.type, numeric)
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


def _h_special(ins, kernel, cblocks, numeric):
    name = ins.attrs.get("name")
    r = ins.results[0]
    c = _canon(r.type)

    def item(th):
        x = c(th.m.special(th, name, ins))
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


def _h_addr(ins, kernel, cblocks, numeric):
    buf = ins.attrs.get("buffer")
    name = getattr(buf, "name", buf)
    r = ins.results[0]
    c = _canon(r.type)

    def item(th):
        x = c(th.m.address_of(name, ins))
        th.env[r] = x
        if th.log is not None:
            th.log.append((r, x))

    return item


# -- arithmetic


def _h_arith(ins, kernel, cblocks, numeric):
    op = ins.op
    t = _op_type(ins)
    k = _kind(t)
    args = ins.args
    attrs = ins.attrs
    if k == "float" and op in (O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR):
        # bitwise ops on a float register: work on its bits
        it = f"b{type_bits(t)}"
        inner = _int_arith(ins, op, it, args, attrs, numeric=False)
        if isinstance(inner, tuple):
            inner = _fast_fn(inner[1], inner[2])
        fb = _from_bits(t)
        return _pure(ins, lambda env: fb(inner(env)))
    if k == "float":
        return _pure(ins, _float_arith(ins, op, t, args, attrs, numeric))
    if k == "pred":
        return _pure(ins, _pred_arith(ins, op, args, numeric))
    f = _int_arith(ins, op, t, args, attrs, numeric)
    if isinstance(f, tuple):
        return _fast(f[1], ins.results[0], *f[2])
    return _pure(ins, f)


def _pred_arith(ins, op, args, numeric):
    gs = [_getter(a, "pred", numeric) for a in args]
    if op is O.AND:
        return lambda env: bool(gs[0](env) and gs[1](env))
    if op is O.OR:
        return lambda env: bool(gs[0](env) or gs[1](env))
    if op is O.XOR:
        return lambda env: bool(gs[0](env)) != bool(gs[1](env))
    if op is O.NOT:
        return lambda env: not gs[0](env)
    if op in (O.MIN,):
        return lambda env: bool(gs[0](env) and gs[1](env))
    if op in (O.MAX,):
        return lambda env: bool(gs[0](env) or gs[1](env))
    raise NotSupported(f"{op.value} on predicates", ins)


def _int_arith(ins, op, t, args, attrs, numeric):
    bits = type_bits(t)
    signed = _is_signed_op(ins, t)
    canon = _canon(t)
    view = _signed_view(bits) if signed else _unsigned_view(bits)
    direct = all(_coercer(a.type, t, numeric) is None or _kind(a.type) == "int" for a in args)
    if direct:
        gs = [(lambda env, a=a: env[a]) for a in args]
    else:
        gs = [_getter(a, t, numeric) if _kind(a.type) != "int" else (lambda env, a=a: env[a]) for a in args]
    if direct and op in (O.MUL, O.MAD) and not attrs.get("wide") and not attrs.get("hi"):
        tmpl = "env[a0] * env[a1]" + (" + env[a2]" if op is O.MAD else "")
        return ("fast", _wrap_expr(tmpl, t), args)
    if direct and op in (O.SHL, O.SHR) and args[1].defn is not None and args[1].defn.op is O.CONST:
        amt = min(int(args[1].defn.attrs.get("value", 0)) & 0xFFFFFFFF, bits)
        if op is O.SHL:
            return ("fast", _wrap_expr(f"env[a0] << {amt}", t), args[:1])
        return (
            "fast",
            _wrap_expr(_view_expr("env[a0]", args[0].type, bits, signed) + f" >> {amt}", t),
            args[:1],
        )
    if op in _INT_TEMPLATES and (op not in (O.ADD, O.SUB) or len(args) == 2) and direct:
        tmpl = _INT_TEMPLATES[op].replace("x", "env[a0]").replace("y", "env[a1]")
        return ("fast", _wrap_expr(tmpl, t), args)
    if op in _INT_TEMPLATES and (op not in (O.ADD, O.SUB) or len(args) == 2):
        f = _int_lambda(_INT_TEMPLATES[op], len(args), t)
        if len(args) == 1:
            if direct:
                a0 = args[0]
                return lambda env: f(env[a0])
            g0 = gs[0]
            return lambda env: f(g0(env))
        if direct:
            a0, a1 = args[0], args[1]
            return lambda env: f(env[a0], env[a1])
        g0, g1 = gs
        return lambda env: f(g0(env), g1(env))
    if op is O.MUL or op is O.MAD:
        g0, g1 = gs[0], gs[1]
        g2 = gs[2] if op is O.MAD else (lambda env: 0)
        if attrs.get("wide"):
            ob = type_bits(args[0].type)
            ov = _signed_view(ob) if signed else _unsigned_view(ob)
            return lambda env: canon(ov(g0(env)) * ov(g1(env)) + g2(env))
        if attrs.get("hi"):
            return lambda env: canon(((view(g0(env)) * view(g1(env))) >> bits) + g2(env))
        return lambda env: canon(g0(env) * g1(env) + g2(env))
    if op is O.DIV or op is O.REM:
        g0, g1 = gs
        floor = bool(attrs.get("floor"))
        is_div = op is O.DIV

        def divrem(env):
            a, b = view(g0(env)), view(g1(env))
            if b == 0:
                _note_div0(ins)
                return 0
            if floor:
                return canon(a // b if is_div else a % b)
            q = abs(a) // abs(b)
            if (a < 0) != (b < 0):
                q = -q
            return canon(q if is_div else a - q * b)

        return divrem
    if op is O.ABS:
        g0 = gs[0]
        return lambda env: canon(abs(view(g0(env))))
    if op is O.MIN or op is O.MAX:
        g0, g1 = gs
        mm = min if op is O.MIN else max
        return lambda env: canon(mm(view(g0(env)), view(g1(env))))
    if op is O.SHL or op is O.SHR:
        g0 = gs[0]
        a1 = args[1]
        amt_view = _unsigned_view(min(32, type_bits(a1.type)) if _kind(a1.type) == "int" else 32)
        g1 = (lambda env: amt_view(int(env[a1]))) if _kind(a1.type) != "float" else (lambda env: int(env[a1]))
        if op is O.SHL:
            return lambda env: canon(g0(env) << min(g1(env), bits))
        return lambda env: canon(view(g0(env)) >> min(g1(env), bits))
    if op in (O.ADD, O.SUB):  # n-ary forms
        return lambda env: canon(sum(g(env) for g in gs))
    raise NotSupported(f"{op.value} on {t}", ins)


def _note_div0(ins):
    # division by zero is recorded through the running machine (see _CurrentRun)
    m = _CurrentRun.machine
    if m is not None:
        m.note(f"division by zero at {_where(ins)} (result 0)")


def _float_arith(ins, op, t, args, attrs, numeric):
    c = _canon(t)
    gs = [_getter(a, t, numeric) for a in args]
    if op is O.ADD:
        g0, g1 = gs
        return lambda env: c(g0(env) + g1(env))
    if op is O.SUB:
        g0, g1 = gs
        return lambda env: c(g0(env) - g1(env))
    if op is O.MUL:
        g0, g1 = gs
        return lambda env: c(_fsafe(lambda a, b: a * b)(g0(env), g1(env)))
    if op is O.MAD:
        g0, g1, g2 = gs
        return lambda env: c(_fsafe(lambda a, b, d: a * b + d)(g0(env), g1(env), g2(env)))
    if op is O.DIV:
        g0, g1 = gs
        if attrs.get("floor"):
            return lambda env: c(_fsafe(lambda a, b: math.floor(_fdiv(a, b)))(g0(env), g1(env)))
        return lambda env: c(_fdiv(g0(env), g1(env)))
    if op is O.REM:
        g0, g1 = gs
        if attrs.get("floor"):
            return lambda env: c(_fsafe(lambda a, b: a % b)(g0(env), g1(env)))
        return lambda env: c(_fsafe(math.fmod)(g0(env), g1(env)))
    if op is O.NEG:
        g0 = gs[0]
        return lambda env: -g0(env)
    if op is O.ABS:
        g0 = gs[0]
        return lambda env: abs(g0(env))
    if op is O.MIN:
        g0, g1 = gs
        return lambda env: _fmin(g0(env), g1(env))
    if op is O.MAX:
        g0, g1 = gs
        return lambda env: _fmax(g0(env), g1(env))
    raise NotSupported(f"{op.value} on {t}", ins)


_CMP_INT = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}  # fmt: skip
_CMP_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def _fcmp(cmp: str) -> Callable[[float, float], bool]:
    nan = math.isnan
    if cmp == "num":
        return lambda a, b: not nan(a) and not nan(b)
    if cmp == "nan":
        return lambda a, b: nan(a) or nan(b)
    if cmp.endswith("u") and cmp[:-1] in _CMP_INT:
        base = _CMP_INT[cmp[:-1]]
        return lambda a, b: nan(a) or nan(b) or base(a, b)
    base = _CMP_INT.get(_CMP_UNSIGNED.get(cmp, cmp))
    if base is None:
        raise NotSupported(f"comparison {cmp}")
    return lambda a, b: not nan(a) and not nan(b) and base(a, b)


def _h_cmp(ins, kernel, cblocks, numeric):
    cmp = str(ins.attrs.get("cmp", "eq"))
    a0, a1 = ins.args[0], ins.args[1]
    t = ins.attrs.get("type")
    if not isinstance(t, str):
        t = a0.type
        if (
            a0.defn is not None
            and a0.defn.op is O.CONST
            and not (a1.defn is not None and a1.defn.op is O.CONST)
        ):
            t = a1.type
        if _kind(a0.type) == "float" or _kind(a1.type) == "float":
            t = a0.type if _kind(a0.type) == "float" else a1.type
    k = _kind(t)
    g0, g1 = _getter(a0, t, numeric), _getter(a1, t, numeric)
    if k == "float":
        f = _fcmp(cmp)
        return _pure(ins, lambda env: f(g0(env), g1(env)))
    if k == "pred":
        f = _CMP_INT[_CMP_UNSIGNED.get(cmp, cmp)]
        return _pure(ins, lambda env: f(bool(g0(env)), bool(g1(env))))
    bits = type_bits(t)
    signed = ins.attrs.get("signed")
    if signed is None:
        signed = is_signed(t)
    if cmp in _CMP_UNSIGNED:
        signed = False
        cmp = _CMP_UNSIGNED[cmp]
    if cmp.endswith("u") and cmp[:-1] in _CMP_INT:
        cmp = cmp[:-1]
    f = _CMP_INT.get(cmp)
    if f is None:
        raise NotSupported(f"integer comparison {cmp}", ins)
    if _kind(a0.type) == "int" and _kind(a1.type) == "int":
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[cmp]
        e0 = _view_expr("env[a0]", a0.type, bits, bool(signed))
        e1 = _view_expr("env[a1]", a1.type, bits, bool(signed))
        return _fast(f"{e0} {sym} {e1}", ins.results[0], a0, a1)
    view = _signed_view(bits) if signed else _unsigned_view(bits)
    return _pure(ins, lambda env: f(view(g0(env)), view(g1(env))))


def _h_select(ins, kernel, cblocks, numeric):
    t = ins.results[0].type
    c = ins.args[0]
    a, b = ins.args[1], ins.args[2]
    if _coercer(a.type, t, numeric) is None and _coercer(b.type, t, numeric) is None:
        return _fast("env[a1] if env[a0] else env[a2]", ins.results[0], c, a, b)
    ga, gb = _getter(a, t, numeric), _getter(b, t, numeric)
    return _pure(ins, lambda env: ga(env) if env[c] else gb(env))
