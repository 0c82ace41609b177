"""The semantics of the memory ops: LOAD, STORE and ATOMIC (through the
machine's `read`/`write`, see `memory`), the cp.async family (CP_ASYNC,
its COMMIT and WAIT: see `async_copy`), and FENCE, which does nothing (the
interpreter runs one access at a time)."""

from __future__ import annotations

from tolk_lint.ir.interp.results import NotSupported
from tolk_lint.ir.interp.values import (
    _canon,
    _codec,
    _coercer,
    _const_value,
    _fmax,
    _fmin,
    _kind,
    _mask,
    _signed_view,
    _unsigned_view,
)
from tolk_lint.ir.nodes import Instr, is_signed, type_bits


def _elem_type(ins: Instr) -> str:
    dt = ins.attrs.get("dtype")
    if isinstance(dt, str):
        return dt
    if ins.results:
        return ins.results[0].type
    if len(ins.args) > 1:
        return ins.args[1].type
    return "b32"


def _h_load(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    dtype = _elem_type(ins)
    width, _enc, dec = _codec(dtype)
    addr_v = ins.args[0]
    gate = ins.args[1] if len(ins.args) > 1 else None
    rs = ins.results
    convs = [_coercer(dtype, r.type, numeric) for r in rs]
    zeros = [_const_value(0, r.type, numeric) for r in rs]

    def item(th):
        env = th.env
        log = th.log
        if gate is not None and not env[gate]:
            for r, z in zip(rs, zeros):
                env[r] = z
                if log is not None:
                    log.append((r, z))
            return
        addr = int(env[addr_v])
        m = th.m
        for i, r in enumerate(rs):
            x = dec(m.read(th, ins, space, addr + i * width, width))
            c = convs[i]
            if c is not None:
                x = c(x)
            env[r] = x
            if log is not None:
                log.append((r, x))

    return item


def _h_store(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    dtype = _elem_type(ins)
    width, enc, _dec = _codec(dtype)
    addr_v = ins.args[0]
    vals = list(ins.args[1:])
    gate = None
    if ins.attrs.get("gate") is True or ins.attrs.get("gated") is True:
        gate = vals.pop()
    convs = [_coercer(v.type, dtype, numeric) for v in vals]

    def item(th):
        env = th.env
        if gate is not None and not env[gate]:
            return
        addr = int(env[addr_v])
        m = th.m
        for i, v in enumerate(vals):
            x = env[v]
            c = convs[i]
            if c is not None:
                x = c(x)
            m.write(th, ins, space, addr + i * width, enc(x))

    return item


def _h_atomic(ins, kernel, cblocks, numeric):
    space = ins.attrs.get("space", "generic")
    aop = str(ins.attrs.get("op", "add"))
    dtype = ins.attrs.get("dtype")
    if not isinstance(dtype, str):
        dtype = ins.results[0].type if ins.results else (ins.args[1].type if len(ins.args) > 1 else "b32")
    width, enc, dec = _codec(dtype)
    k = _kind(dtype)
    canon = _canon(dtype)
    bits = type_bits(dtype)
    view = _signed_view(bits) if is_signed(dtype) else _unsigned_view(bits)
    addr_v = ins.args[0]
    vals = list(ins.args[1:])
    convs = [_coercer(v.type, dtype, numeric) for v in vals]
    rs = ins.results
    rconv = _coercer(dtype, rs[0].type, numeric) if rs else None

    def combine(old, xs):
        if aop == "cas":
            return xs[1] if old == xs[0] else old
        if aop in ("exch", "xchg", "exchange"):
            return xs[0]
        x = xs[0] if xs else 0
        if k == "float":
            if aop == "add":
                return canon(old + x)
            if aop == "sub":
                return canon(old - x)
            if aop == "min":
                return _fmin(old, x)
            if aop == "max":
                return _fmax(old, x)
            raise NotSupported(f"atomic {aop} on {dtype}", ins)
        if aop == "add":
            return canon(old + x)
        if aop == "sub":
            return canon(old - x)
        if aop == "min":
            return canon(min(view(old), view(x)))
        if aop == "max":
            return canon(max(view(old), view(x)))
        if aop == "and":
            return canon(old & x)
        if aop == "or":
            return canon(old | x)
        if aop == "xor":
            return canon(old ^ x)
        if aop == "inc":
            return 0 if (old & _mask(bits)) >= (x & _mask(bits)) else canon(old + 1)
        if aop == "dec":
            o, xx = old & _mask(bits), x & _mask(bits)
            return canon(x) if (o == 0 or o > xx) else canon(old - 1)
        raise NotSupported(f"atomic {aop}", ins)

    def item(th):
        env = th.env
        addr = int(env[addr_v])
        xs = []
        for v, c in zip(vals, convs):
            x = env[v]
            xs.append(c(x) if c is not None else x)
        m = th.m
        old = dec(m.read(th, ins, space, addr, width, atomic=True, check=False))
        new = combine(old, xs)
        m.write(th, ins, space, addr, enc(new), atomic=True)
        if rs:
            x = rconv(old) if rconv is not None else old
            env[rs[0]] = x
            if th.log is not None:
                th.log.append((rs[0], x))

    return item


def _h_cp_async(ins, kernel, cblocks, numeric):
    nbytes = ins.attrs.get("bytes") or ins.attrs.get("size") or 16
    nbytes = int(nbytes)
    dst_v, src_v = ins.args[0], ins.args[1]
    size_v = ins.args[2] if len(ins.args) > 2 else None

    def item(th):
        env = th.env
        src_size = nbytes if size_v is None else int(env[size_v])
        th.m.cp_async(th, ins, int(env[dst_v]), int(env[src_v]), nbytes, max(0, min(src_size, nbytes)))

    return item


def _h_commit(ins, kernel, cblocks, numeric):
    def item(th):
        th.groups.append(th.pending)
        th.pending = []

    return item


def _h_wait(ins, kernel, cblocks, numeric):
    n = int(ins.attrs.get("n", 0) or 0)
    wait_all = bool(ins.attrs.get("all"))

    def item(th):
        if wait_all:
            th.groups.append(th.pending)
            th.pending = []
        groups = th.groups
        keep = 0 if wait_all else n
        done = groups[: max(0, len(groups) - keep)]
        th.groups = groups[len(done) :]
        m = th.m
        for g in done:
            for cp in g:
                m.retire(th, cp)

    return item


def _h_nop(ins, kernel, cblocks, numeric):
    def item(th):
        return None

    return item
