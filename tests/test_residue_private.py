"""Thread-private addresses modulo a power of two
(tolk_lint.analysis.memory.ranks.residue_private): two threads' accesses
whose addresses differ by ``c * (rank0 - rank1)`` modulo ``M``, every other
term a multiple of ``M``, never meet when no such difference lands within a
width of a multiple of ``M``. Each case's answer is known by reasoning:

- CUB's ``bins[pass][tid + 128 * k]`` (4-byte words, 256 bins a row), the
  bin loop unrolled into a copy 512 bytes on, a pointer stepped a row per
  pass, under ``.maxntid 128``: the addresses differ by 4 * (tid0 - tid1)
  modulo 512, between 4 and 508: apart, whatever each thread's pass.
- the same under ``.maxntid 256``: threads 0 and 128 meet at byte 512
  (thread 0's copy, thread 128's first store): not proved.
- ``s[tid + n]`` against ``s[tid]``, ``n`` a parameter: the uniform term's
  coefficients differ by one word, so thread 0 (``n = 1``) and thread 1
  meet: not proved.
- a value computed from itself around a loop (``x = 3 * x``), indexing
  ``s[x]``: read as a per-thread unknown times 4, which may be anything:
  not proved (and no polynomial is built from the value it defines).
- Numba's ``bins[p, b]`` over a block-stride loop with a constant step of
  128 under a 128-thread launch: apart; the same loop stepping 64: not.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_block_stride_private import _facts, _stores

from tolk_lint.analysis.memory.ranks import OPAQUE, residue_private, thread_private


def _apart(mf, a, b) -> bool:
    return residue_private(mf.residues, a, b, mf.k.launch.threads or 1024, mf.tid_dims <= {"x"})


PASS_ROWS = """.version 8.0
.target sm_80
.address_size 64

.visible .entry clear(.param .u32 n)
.maxntid {threads}, 1, 1
{{
	.shared .align 4 .b8 bins[4096];
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	shl.b32 %r3, %r2, 2;
	mov.u32 %r4, bins;
	add.s32 %r5, %r4, %r3;
	mov.u32 %r6, 0;
$L_pass:
	setp.ge.s32 %p1, %r6, %r1;
	@%p1 bra $L_done;
	st.shared.u32 [%r5], 0;
	st.shared.u32 [%r5+512], 0;
	add.s32 %r5, %r5, 1024;
	add.s32 %r6, %r6, 1;
	bra.uni $L_pass;
$L_done:
	bar.sync 0;
	ret;
}}
"""


@pytest.mark.parametrize("threads,apart", [(128, True), (256, False)])
def test_ptx_pass_rows_with_an_unrolled_copy(threads, apart):
    mf = _facts(PASS_ROWS.format(threads=threads), "k.ptx")
    first, second = _stores(mf)
    assert not thread_private(mf.ranks, first, second)  # the plain rank proof does not read a pointer counter
    assert _apart(mf, first, second) is apart
    assert _apart(mf, first, first) and _apart(mf, second, second)  # one store of two threads: 4 * (tid0 - tid1) apart


def test_ptx_race_search_asks_nothing_of_the_cleared_rows():
    mf = _facts(PASS_ROWS.format(threads=128), "k.ptx")
    assert not [r for r in mf.races() if r.code == "TL201"]
    assert mf.queries == 0


def test_ptx_race_between_the_rows_is_still_found():
    mf = _facts(PASS_ROWS.format(threads=256), "k.ptx")
    assert [r for r in mf.races() if r.code == "TL201"]


UNIFORM_OFFSET = """.version 8.0
.target sm_80
.address_size 64

.visible .entry shifted(.param .u32 n)
.maxntid 128, 1, 1
{
	.shared .align 4 .b8 s[2048];
	.reg .b32 %r<12>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	add.s32 %r3, %r2, %r1;
	shl.b32 %r4, %r3, 2;
	mov.u32 %r5, s;
	add.s32 %r6, %r5, %r4;
	st.shared.u32 [%r6], 0;
	shl.b32 %r7, %r2, 2;
	add.s32 %r8, %r5, %r7;
	st.shared.u32 [%r8], 1;
	ret;
}
"""


def test_ptx_uniform_terms_must_cancel():
    mf = _facts(UNIFORM_OFFSET, "k.ptx")
    shifted, plain = _stores(mf)
    assert not _apart(mf, shifted, plain)
    assert _apart(mf, shifted, shifted) and _apart(mf, plain, plain)


SELF_DEFINED = """.version 8.0
.target sm_80
.address_size 64

.visible .entry grows(.param .u32 n)
.maxntid 128, 1, 1
{
	.shared .align 4 .b8 s[4096];
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	mov.u32 %r5, s;
	mov.u32 %r6, 0;
$L_loop:
	setp.ge.s32 %p1, %r6, %r1;
	@%p1 bra $L_done;
	and.b32 %r7, %r2, 1023;
	shl.b32 %r8, %r7, 2;
	add.s32 %r9, %r5, %r8;
	st.shared.u32 [%r9], 0;
	mul.lo.s32 %r2, %r2, 3;
	add.s32 %r6, %r6, 1;
	bra.uni $L_loop;
$L_done:
	ret;
}
"""


def test_ptx_a_value_defined_by_itself_is_an_unknown():
    mf = _facts(SELF_DEFINED, "k.ptx")
    [store] = _stores(mf)
    poly = mf.residues.address_poly(store.addr)
    assert any(x.startswith(OPAQUE) for m in poly for x in m)
    assert not _apart(mf, store, store)  # thread 1 at its second trip and thread 3 at its first both clear word 3


NUMBA = """from numba import cuda, uint32

THREADS = 128


@cuda.jit
def clear(out, npass):
    bins = cuda.shared.array((4, 256), dtype=uint32)
    for b in range(cuda.threadIdx.x, 256, {step}):
        for p in range(min(npass, 4)):
            bins[p, b] = 0
    cuda.syncthreads()
    out[cuda.threadIdx.x] = bins[0, cuda.threadIdx.x]


def run(out):
    clear[1, THREADS](out, 4)
"""


@pytest.mark.parametrize("step,apart", [("THREADS", True), ("THREADS // 2", False)])
def test_numba_pass_rows(step, apart):
    mf = _facts(NUMBA.format(step=step), "k.py")
    [store] = _stores(mf)
    assert _apart(mf, store, store) is apart


CUDA = """template <int BLOCK_THREADS>
__global__ void __launch_bounds__(BLOCK_THREADS) clear(unsigned *out, int begin_bit, int end_bit)
{
    __shared__ unsigned bins[4][256][2];
    const int num_passes = min((end_bit - begin_bit + 7) / 8, 4);
#pragma unroll
    for (int bin = threadIdx.x; bin < 256; bin += BLOCK_THREADS)
        for (int pass = 0; pass < num_passes; ++pass)
#pragma unroll
            for (int part = 0; part < 2; ++part)
                bins[pass][bin][part] = 0;
    __syncthreads();
    out[threadIdx.x] = bins[0][threadIdx.x][0] + bins[1][threadIdx.x][1];
}

template __global__ void clear<128>(unsigned *, int, int);
"""


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_pass_rows_need_no_race_question(tmp_path):
    """nvcc's PTX of CUB's clearing loop (unrolled bins and parts, a pointer
    stepped per pass): every pair of stores is apart, and the race search
    asks the solver nothing."""
    cu, ptx = tmp_path / "clear.cu", tmp_path / "clear.ptx"
    cu.write_text(CUDA)
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, timeout=300)
    mf = _facts(ptx.read_text(), str(ptx))
    stores = _stores(mf)
    assert len(stores) >= 4
    assert all(_apart(mf, a, b) for a in stores for b in stores)
    assert not [r for r in mf.races() if r.code == "TL201"]
    assert mf.queries == 0
