"""A witness shows a float parameter as the float its bits are
(`smt.questions.float_of_bits`): `scale = 0.5`, not `scale = 1056964608`."""

from __future__ import annotations

import re

from tolk_lint import lint_text
from tolk_lint.analysis.smt.questions import float_of_bits

PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .f32 scale, .param .u64 out)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<4>;
    ld.param.f32 %f1, [scale];
    mov.u32 %r1, %tid.x;
    cvt.rn.f32.u32 %f2, %r1;
    setp.lt.f32 %p1, %f2, %f1;
    @%p1 bra $L_done;
    bar.sync 0;
$L_done:
    ret;
}
"""


def test_float_bits_read_back():
    assert float_of_bits(0x3F000000, 32) == 0.5
    assert float_of_bits(0xC000000000000000, 64) == -2.0


def test_a_float_parameter_is_printed_as_a_float():
    diags = lint_text(PTX, "k.ptx").diagnostics
    (tl101,) = [d for d in diags if d.code == "TL101"]
    m = re.search(r"scale = (\S+?)(,|\)|$)", tl101.message)
    assert m is not None, tl101.message
    float(m.group(1))  # a float's text: `0.5`, `inf`, `1.5e-07`
    assert "." in m.group(1) or "e" in m.group(1) or m.group(1) in ("inf", "-inf", "nan")
