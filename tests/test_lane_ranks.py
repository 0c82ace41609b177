"""Solver encodings that keep bit-vector circuits small (`smt.Encoder`),
checked against the arithmetic they stand for:

- Python's ``//`` and ``%`` by a power of two (``tid // 32``, ``i % 2``)
  are a shift and a mask; for every sign of the dividend they equal
  Python's floor division and its remainder.
- ``popc(bits & ((1 << lane) - 1))``, a lane's rank among the lanes whose
  bit is set (`smt.lane_ranks`): the facts added about it hold for every
  value (checked exhaustively on 6-bit values), and the pattern is found in
  the forms Numba and nvcc write it, and not in a mask that is not the
  bits below the lane.
"""

from __future__ import annotations

import itertools
import textwrap

import pytest

from tolk_lint.analysis import smt
from tolk_lint.analysis.smt import lane_ranks
from tolk_lint.engine import parse
from tolk_lint.ir.opcodes import Opcode as O

FLOOR = textwrap.dedent(
    """\
    from numba import cuda

    @cuda.jit
    def k(y, n):
        y[0] = n // 8
        y[1] = n % 8
        y[2] = n // 6
    """
)


def _instrs(k, op):
    return [i for b in k.blocks for i in b.instrs if i.op is op]


@pytest.mark.parametrize("n", [-17, -16, -9, -8, -1, 0, 1, 7, 8, 9, 63, -(1 << 63), (1 << 63) - 1])
def test_floor_division_by_a_power_of_two_is_pythons(n):
    z3 = smt.z3mod()
    smt.fresh_context()
    [k] = parse(FLOOR, "floor.py").kernels
    enc = smt.Encoder(k, None, "workgroup")
    (div8, div6), [rem8] = _instrs(k, O.DIV), _instrs(k, O.REM)
    got = {}
    for name, ins in (("div8", div8), ("rem8", rem8), ("div6", div6)):
        term = enc.enc(ins.results[0], 0)
        sym = [s for s in z3.z3util.get_vars(term) if "n" in str(s)]
        assert len(sym) == 1, sym
        v = z3.simplify(z3.substitute(term, (sym[0], z3.BitVecVal(n, sym[0].size()))))
        got[name] = v.as_signed_long()
    assert got == {"div8": n // 8, "rem8": n % 8, "div6": n // 6}
    # the power of two is a shift and a mask: no division circuit left
    assert (
        "bvsdiv" not in enc.enc(div8.results[0], 0).sexpr()
        and "bvsmod" not in enc.enc(rem8.results[0], 0).sexpr()
    )


def test_rank_facts_hold_for_every_value():
    """For 6-bit ``bits`` and lanes below 6: the rank lemma and the bound
    `note` adds are true of ``popc(bits & ((1 << lane) - 1))``."""

    def rank(bits, lane):
        return (bits & ((1 << lane) - 1)).bit_count()

    for bits, l0, l1 in itertools.product(range(64), range(6), range(6)):
        assert rank(bits, l0) <= l0
        if l0 < l1 and bits >> l0 & 1:
            assert rank(bits, l0) < rank(bits, l1)


PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<20>;
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	setp.gt.u32 %p, %r1, 7;
	vote.sync.ballot.b32 %r3, %p, -1;
	mov.u32 %r4, 1;
	shl.b32 %r5, %r4, %r2;
	add.s32 %r6, %r5, -1;
	and.b32 %r7, %r3, %r6;
	popc.b32 %r8, %r7;
	mov.u32 %r9, %lanemask_lt;
	and.b32 %r10, %r9, %r3;
	popc.b32 %r11, %r10;
	shl.b32 %r12, %r4, %r2;
	add.s32 %r13, %r12, -2;
	and.b32 %r14, %r3, %r13;
	popc.b32 %r15, %r14;
	ret;
}
"""


def test_the_pattern_in_the_forms_compilers_write():
    [k] = parse(PTX, "k.ptx").kernels
    popcs = [i for i in _instrs(k, O.PURE) if i.attrs.get("fn") == "popc"]
    assert len(popcs) == 3, popcs

    def lane_of(popc):
        a = popc.args[0].defn
        found = [lane_ranks.low_mask_lane(x) for x in a.args]
        return [f for f in found if f is not None]

    shifted, special, not_below = (lane_of(p) for p in popcs)
    assert len(shifted) == 1 and shifted[0][0].defn.op is O.AND and shifted[0][1] == 32  # (1 << lane) - 1
    assert special == [(None, 32)]  # %lanemask_lt: the thread's own lane
    assert not_below == []  # (1 << lane) - 2 is not the bits below the lane
