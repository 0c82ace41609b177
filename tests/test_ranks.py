"""Thread-private addresses (tolk_lint.analysis.memory.ranks): which pairs of
two threads' accesses the scaled linear rank proves apart, and which it
must leave to the solver. Each case's answer is known by reasoning:

- ``base + 4 * rank`` stored as 4 bytes: two threads' words are at least
  4 bytes apart (rank is one-to-one over any block): apart.
- the rank built the way nvcc writes `thread_rank()` (``mad`` of the z
  and y indices with the block sizes): the same polynomial: apart.
- ``base + 4 * (tid.x + ntid.x * tid.y)`` with no ``tid.z`` term: threads
  (0,0,0) and (0,0,1) of a block 1x1x2 share a word: not proved.
- ``base + 2 * rank`` stored as 4 bytes: ranks 0 and 1 overlap by 2 bytes.
- ``base + 4 * rank + 4 * i`` with ``i`` a loop counter: two threads at
  different trips may meet: not proved.
- a 16-bit multiply in the rank wraps: not proved.

And which rank-indexed accesses stay inside their array for every block
(`rank_in_bounds`).
"""

from __future__ import annotations

import pytest

from tolk_lint import engine
from tolk_lint.analysis.memory.facts import memory_facts
from tolk_lint.analysis.memory.ranks import RankReader, rank_in_bounds, thread_private

HEAD = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u32 n)
{
	.shared .align 8 .b8 s[8192];
	.reg .pred %p;
	.reg .b16 %h<4>;
	.reg .b32 %r<40>;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %tid.y;
	mov.u32 %r3, %tid.z;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %ntid.y;
	mov.u32 %r6, s;
	ld.param.u32 %r7, [n];
"""
TAIL = """	ret;
}
"""

RANK = """	mul.lo.s32 %r10, %r5, %r3;
	add.s32 %r11, %r10, %r2;
	mad.lo.s32 %r12, %r11, %r4, %r1;
"""


def facts_of(body: str):
    module = engine.parse(HEAD + body + TAIL, "k.ptx")
    engine.prepare(module, engine.DEFAULT_SETTINGS)
    [k] = module.kernels
    return memory_facts(k, module, engine.DEFAULT_SETTINGS)


def accesses(body: str):
    mf = facts_of(body)
    return RankReader(mf), mf.shared


CASES = {
    "rank_times_4": (RANK + """	shl.b32 %r13, %r12, 2;
	add.s32 %r14, %r6, %r13;
	st.shared.u32 [%r14], 0;
""", True),
    "rank_as_nvcc_writes_it_with_a_uniform_offset": ("""	mad.lo.s32 %r10, %r3, %r5, %r2;
	mad.lo.s32 %r12, %r10, %r4, %r1;
	mul.wide.u32 %rd1, %r12, 8;
	cvt.u32.u64 %r13, %rd1;
	shl.b32 %r15, %r7, 3;
	add.s32 %r16, %r6, %r15;
	add.s32 %r14, %r16, %r13;
	st.shared.u64 [%r14], 0;
""", True),
    "no_z_term": ("""	mad.lo.s32 %r12, %r2, %r4, %r1;
	shl.b32 %r13, %r12, 2;
	add.s32 %r14, %r6, %r13;
	st.shared.u32 [%r14], 0;
""", False),
    "scale_below_width": (RANK + """	shl.b32 %r13, %r12, 1;
	add.s32 %r14, %r6, %r13;
	st.shared.u32 [%r14], 0;
""", False),
    "loop_counter_in_the_address": (RANK + """	shl.b32 %r13, %r12, 2;
	mov.u32 %r20, 0;
$L_loop:
	shl.b32 %r21, %r20, 2;
	add.s32 %r22, %r13, %r21;
	add.s32 %r14, %r6, %r22;
	st.shared.u32 [%r14], 0;
	add.s32 %r20, %r20, 1;
	setp.lt.u32 %p, %r20, %r7;
	@%p bra $L_loop;
""", False),
    "sixteen_bit_multiply": ("""	cvt.u16.u32 %h1, %r1;
	cvt.u16.u32 %h2, %r2;
	cvt.u16.u32 %h3, %r4;
	mad.lo.u16 %h0, %h2, %h3, %h1;
	cvt.u32.u16 %r12, %h0;
	mul.lo.s32 %r10, %r5, %r3;
	mul.lo.s32 %r11, %r10, %r4;
	add.s32 %r12, %r12, %r11;
	shl.b32 %r13, %r12, 2;
	add.s32 %r14, %r6, %r13;
	st.shared.u32 [%r14], 0;
""", False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_thread_private(name):
    body, apart = CASES[name]
    if "%rd1" in body:
        body = "\t.reg .b64 %rd<4>;\n" + body
    reader, shared = accesses(body)
    [a] = shared
    assert thread_private(reader, a, a) is apart


def test_two_accesses_need_the_same_base():
    """`s[r]` against `s[r + 1]` (4-byte words): threads of ranks 1 and 0 meet."""
    body = RANK + """	shl.b32 %r13, %r12, 2;
	add.s32 %r14, %r6, %r13;
	st.shared.u32 [%r14], 0;
	add.s32 %r15, %r14, 4;
	ld.shared.u32 %r16, [%r15];
"""
    reader, shared = accesses(body)
    store, load = sorted(shared, key=lambda x: x.order)
    assert thread_private(reader, store, store)
    assert not thread_private(reader, store, load)


def test_rank_indices_in_bounds_for_every_block():
    """``s + 8 * rank`` as 8-byte words: the last of 1,024 threads writes
    bytes 8184..8191 of the 8,192-byte `s` (in bounds); with 16-byte steps it
    would start at 16,368 (not proved); an offset of -8 leaves `s` for
    thread 0 (not proved); a `.maxntid` of 512 is the bound used."""
    def store(scale: int, offset: int) -> str:
        return RANK + f"""	mul.lo.s32 %r13, %r12, {scale};
	add.s32 %r14, %r6, %r13;
	add.s32 %r15, %r14, {offset};
	st.shared.u64 [%r15], 0;
"""
    for scale, offset, threads, inside in [(8, 0, 1024, True), (16, 0, 1024, False), (16, 0, 512, True),
                                           (8, -8, 1024, False), (8, 8, 1024, False), (8, 8, 1023, True)]:
        reader, [a] = accesses(store(scale, offset))
        assert rank_in_bounds(reader, a, threads) is inside, (scale, offset, threads)


def test_dimensions_read_only_for_the_rank():
    """nvcc tests `thread_rank() == 0` as `(tz * ny + ty) * nx != -tx`: tid.y
    and tid.z are read only for the rank, and the kernel is taken as flat
    (`MemoryCore.tid_dims` is x alone). A kernel that also indexes by tid.y
    keeps y (and a rank stored as an index keeps nothing out)."""
    rank_compare = """	mad.lo.s32 %r10, %r5, %r3, %r2;
	mul.lo.s32 %r11, %r10, %r4;
	neg.s32 %r12, %r1;
	setp.ne.s32 %p, %r11, %r12;
	shl.b32 %r13, %r1, 2;
	add.s32 %r14, %r6, %r13;
	@%p bra $L_done;
	st.shared.u32 [%r14], 0;
$L_done:
"""
    mf = facts_of(rank_compare)
    assert mf.rank_only == {"y", "z"} and mf.tid_dims == {"x"}
    also_y = rank_compare.replace("	shl.b32 %r13, %r1, 2;", "	add.s32 %r15, %r1, %r2;\n	shl.b32 %r13, %r15, 2;")
    mf = facts_of(also_y)
    assert mf.rank_only == {"z"} and mf.tid_dims == {"x", "y"}
