"""``bmsk`` (the PTX ISA's bit-field mask, in CUB's radix digits) is lowered
to the shifts it is (`frontends.ptx.arith._bit_mask`): the lowering, run on
the reference interpreter, agrees with the ISA's definition on every corner
(a start of 32 or more, a width of 0 or of 32 or more, a field past bit 31)
in both modes."""

from __future__ import annotations

import itertools

from tolk_lint.frontends.ptx import parse_ptx
from tolk_lint.ir.interp.machine import run
from tolk_lint.ir.opcodes import Opcode

PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry bm(.param .u64 out, .param .u32 a, .param .u32 b)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    cvta.to.global.u64 %rd2, %rd1;
    bmsk.clamp.b32 %r3, %r1, %r2;
    bmsk.wrap.b32 %r4, %r1, %r2;
    st.global.v2.u32 [%rd2], {%r3, %r4};
    ret;
}
"""


def isa(a: int, b: int, mode: str) -> int:
    """The PTX ISA's semantics of bmsk, as it states them."""
    a1, b1 = a & 0x1F, b & 0x1F
    mask0 = (~0 << a1) & 0xFFFFFFFF
    total = a1 + b1
    mask1 = (~0 << total) & 0xFFFFFFFF
    overflow = total >= 32
    if mode == "clamp":
        if a >= 32:
            overflow, mask0 = True, 0
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = 0xFFFFFFFF
    return mask0 & ~mask1 & 0xFFFFFFFF


def test_bmsk_is_lowered_to_arithmetic():
    (k,) = parse_ptx(PTX, "bm.ptx").kernels
    assert not any(i.op is Opcode.PURE for i in k.instrs())


def test_bmsk_agrees_with_the_isa_everywhere():
    (k,) = parse_ptx(PTX, "bm.ptx").kernels
    values = [0, 1, 2, 5, 6, 8, 16, 26, 31, 32, 33, 40, 63, 64, 255, 0xFFFFFFFF]
    for a, b in itertools.product(values, values):
        r = run(k, (1, 1, 1), params={"a": a, "b": b}, global_mem={"out": [0, 0]}, global_dtypes={"out": "u32"})
        got = [x & 0xFFFFFFFF for x in r.memory["out"]]
        assert got == [isa(a, b, "clamp"), isa(a, b, "wrap")], (a, b, [hex(x) for x in got])
