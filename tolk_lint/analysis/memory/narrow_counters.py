"""Loop counters that nvcc keeps narrow: a ``short`` or ``char`` index.

C's ``short ib`` stepped by ``blockDim.x`` is a 16-bit value in 32-bit
registers, and nvcc keeps it in more than one form, each recomputed from
the sum every trip (NVIDIA's SobelFilter)::

    shl.b32      %r24, %r3, 16        // ib << 16, for the address 4 * ib
    cvt.s32.s16  %r23, %r3            // (int) ib, for the loop test
  L:
    shr.s32      %r14, %r24, 14       // 4 * ib
    ...
    add.s32      %r18, %r23, %r7      // ib += blockDim.x
    shl.b32      %r24, %r18, 16
    cvt.s32.s16  %r23, %r18

Neither header PHI is ``start + k * step``, so each was a free value per
trip, and two threads' addresses could meet anywhere (false TL201).

Both are functions of one wide counter ``X_k = a + k * s`` (``a`` the
value the forms are first taken of, ``s`` the loop-invariant step):

- ``Q = phi(ext_n(a), ext_n(Q + s))``, with ``ext_n`` a conversion from
  ``n`` bits (sign or zero extension of the low ``n`` bits), is
  ``ext_n(X_k)``: ``ext_n`` keeps the low ``n`` bits, and the low ``n``
  bits of ``ext_n(y) + s`` are those of ``y + s``;
- ``P = phi(g(a), g(Q + s))``, with the same ``Q + s`` and ``g`` reading
  only the low ``n`` bits of its operand (``shl`` by at least ``width -
  n``, or a conversion from at most ``n`` bits), is ``g(X_k)``.

`narrow_counters` finds them (header PHI -> how to compute it from the
trip); `MemoryEncoder` encodes them in that closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Kernel, Value, const_int, type_bits
from tolk_lint.ir.opcodes import Opcode as O


@dataclass(frozen=True)
class NarrowCounter:
    """``phi`` at trip k is ``form(start + k * step)``: ``form`` is
    ``("ext", n, signed)`` (the low ``n`` bits, extended) or ``("shl", c)``."""

    loop: Loop
    start: Value
    step: Value
    form: tuple


def _form(v: Value) -> tuple[tuple, Value] | None:
    """(form, operand) when ``v`` is a narrowing conversion or a constant
    left shift of ``operand``."""
    d = v.defn
    if d is None or len(d.args) < 1:
        return None
    if d.op is O.CVT:
        src = d.attrs.get("from_type")
        n = type_bits(str(src)) if src else 0
        if 0 < n < type_bits(v.type) and not str(src).startswith("f") and not str(v.type).startswith("f"):
            return ("ext", n, str(src).startswith("s")), d.args[0]
        return None
    if d.op is O.SHL and len(d.args) == 2:
        c = const_int(d.args[1])
        if c is not None and 0 < c < type_bits(v.type):
            return ("shl", c), d.args[0]
    return None


def _reads_low(form: tuple, width: int, n: int) -> bool:
    """Whether ``form`` reads only the low ``n`` bits of its operand."""
    return form[1] <= n if form[0] == "ext" else form[1] >= width - n


def narrow_counters(kernel: Kernel) -> dict[Value, NarrowCounter]:
    out: dict[Value, NarrowCounter] = {}
    cfg = cfg_of(kernel)
    for lp in cfg.loops:
        ivs = {iv.phi for iv in lp.ivs}
        edges = {}
        for phi in lp.header.phis():
            v = phi.result
            if v in ivs:
                continue
            outside = {a for p, a in zip(lp.header.preds, phi.args) if p not in lp.blocks}
            inside = {a for p, a in zip(lp.header.preds, phi.args) if p in lp.blocks}
            if len(outside) != 1 or len(inside) != 1:
                continue
            got_out, got_in = _form(next(iter(outside))), _form(next(iter(inside)))
            if got_out is None or got_in is None or got_out[0] != got_in[0]:
                continue
            edges[v] = (got_out[0], got_out[1], got_in[1])  # form, a, the latch's operand
        for q, (form, a, x) in edges.items():
            if form[0] != "ext" or type_bits(a.type) != type_bits(q.type):
                continue
            d = x.defn
            if d is None or d.op is not O.ADD or len(d.args) != 2 or type_bits(x.type) != type_bits(q.type):
                continue
            s = d.args[1] if d.args[0] is q else d.args[0] if d.args[1] is q else None
            if s is None or not cfg.invariant(s, lp):
                continue
            n, width = form[1], type_bits(q.type)
            out[q] = NarrowCounter(lp, a, s, form)
            for p, (pform, pa, px) in edges.items():  # the other forms of the same sum
                if p is not q and pa is a and px is x and _reads_low(pform, type_bits(p.type), n) \
                        and type_bits(p.type) == width:  # fmt: skip
                    out[p] = NarrowCounter(lp, a, s, pform)
    return out


def encode(enc, nc: NarrowCounter, v: Value, t: int):
    """The term of ``v`` at thread ``t``'s trip of ``nc.loop``."""
    z3 = enc.z3
    a, s = enc._bv(enc.enc(nc.start, t)), enc._bv(enc.enc(nc.step, t))
    w = enc.width(v.type)
    x = enc.fit(a, w) + enc.fit(s, w) * enc.fit(enc.trip_of(nc.loop, t), w)
    if nc.form[0] == "shl":
        return x << nc.form[1]
    n, signed = nc.form[1], nc.form[2]
    low = z3.Extract(n - 1, 0, x)
    return z3.SignExt(w - n, low) if signed else z3.ZeroExt(w - n, low)
