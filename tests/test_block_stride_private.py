"""Block-stride loop counters (tolk_lint.analysis.memory.ranks): two threads'
``s[j]`` in ``for j in range(threadIdx.x, C, blockDim.x)`` never meet,
whatever their trips, and the race search settles that before any solver
question. Each case's answer is known by reasoning:

- ``j = tid + ntid * k`` with ``tid < ntid``: ``j0 == j1`` only for one
  thread at one trip, so a store of ``s[j]`` (4-byte words, ``j < 256``)
  by two threads never overlaps: apart, in Numba, hand-written PTX and
  nvcc's PTX of the same loop in CUDA C.
- ``j = 2 * tid + ntid * k``: threads 0 and 2 of a block of 4 meet at
  ``j = 4`` (thread 2 at trip 0, thread 0 at trip 1): not proved.
- a bound the launch does not fix (``j < n``): the counter's span is not
  known, so the word argument does not hold: not proved (the solver asks).
- a step of 32 (a warp's lanes, not the block): threads 0 and 32 of a
  block of 64 meet at ``j = 32``: not this proof (the counter is no
  block-stride counter).
- a kernel that also reads ``threadIdx.y``: the block is not flat, and
  ``tid.x`` alone repeats across rows: not proved.
- ``s[j]`` against ``s[j + 1]``: thread 1 at trip 0 and thread 0 at trip 0
  meet at word 1: not proved (not the same address polynomial).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tolk_lint import engine
from tolk_lint.analysis.memory.facts import memory_facts
from tolk_lint.analysis.memory.ranks import thread_private


def _facts(src: str, name: str):
    module = engine.parse(src, name)
    engine.prepare(module, engine.DEFAULT_SETTINGS)
    k = module.kernels[0]
    return memory_facts(k, module, engine.DEFAULT_SETTINGS)


def _stores(mf):
    return [a for a in sorted(mf.shared, key=lambda x: x.order) if a.kind == "write"]


NUMBA = """from numba import cuda, float32

@cuda.jit
def k(x, y, n):
    s = cuda.shared.array(256, float32)
{extra}    for j in range({start}, {bound}, {step}):
        s[{index}] = x[j]
    cuda.syncthreads()
    y[cuda.threadIdx.x] = s[0]
"""

NUMBA_CASES = {
    "tid_plus_block_stride": (dict(start="cuda.threadIdx.x", bound="256", step="cuda.blockDim.x", index="j"), True),
    "twice_tid": (dict(start="2 * cuda.threadIdx.x", bound="256", step="cuda.blockDim.x", index="j"), False),
    "runtime_bound": (dict(start="cuda.threadIdx.x", bound="n", step="cuda.blockDim.x", index="j"), False),
    "warp_stride": (dict(start="cuda.threadIdx.x", bound="256", step="32", index="j"), False),
    "not_flat": (dict(start="cuda.threadIdx.x", bound="256", step="cuda.blockDim.x", index="j",
                      extra="    y[cuda.threadIdx.y] = 0.0\n"), False),
}


@pytest.mark.parametrize("name", sorted(NUMBA_CASES))
def test_numba_block_stride_counter(name):
    kw, apart = NUMBA_CASES[name]
    kw.setdefault("extra", "")
    mf = _facts(NUMBA.format(**kw), "k.py")
    [a] = _stores(mf)
    assert thread_private(mf.ranks, a, a) is apart


def test_numba_neighbouring_words_are_not_apart():
    src = NUMBA.format(start="cuda.threadIdx.x", bound="255", step="cuda.blockDim.x", index="j", extra="")
    src = src.replace("        s[j] = x[j]\n", "        s[j] = x[j]\n        s[j + 1] = x[j]\n")
    mf = _facts(src, "k.py")
    first, second = _stores(mf)
    assert thread_private(mf.ranks, first, first)
    assert not thread_private(mf.ranks, first, second)


PTX = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u32 n)
{{
	.shared .align 4 .b8 s[1024];
	.reg .pred %p<4>;
	.reg .b32 %r<20>;
	ld.param.u32 %r5, [n];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r7, s;
	mov.u32 %r13, {start};
	setp.gt.s32 %p1, %r13, 255;
	@%p1 bra $L_done;
$L_loop:
	shl.b32 %r6, %r13, 2;
	add.s32 %r8, %r7, %r6;
	st.shared.u32 [%r8], 0;
	add.s32 %r13, %r13, {step};
	setp.lt.s32 %p3, %r13, {bound};
	@%p3 bra $L_loop;
$L_done:
	ret;
}}
"""


@pytest.mark.parametrize("start,step,bound,apart", [
    ("%r1", "%r2", "256", True),
    ("%r1", "%r2", "%r5", False),  # the bound is the parameter n
    ("%r1", "32", "256", False),  # a constant step: no block stride
])
def test_ptx_block_stride_counter(start, step, bound, apart):
    mf = _facts(PTX.format(start=start, step=step, bound=bound), "k.ptx")
    [a] = _stores(mf)
    assert thread_private(mf.ranks, a, a) is apart


CUDA = """__global__ void stage(const float *x, float *y, int n)
{
    __shared__ float xs[256];
    for (int j = threadIdx.x; j < 256; j += blockDim.x)
        xs[j] = j < n ? x[j] : 0.0f;
    __syncthreads();
    y[threadIdx.x] = xs[(threadIdx.x * 7) % 256];
}
"""


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_block_stride_staging_needs_no_solver(tmp_path):
    """nvcc's loop (``%r13 += %ntid.x`` while ``%r13 < 256``): the stores are
    apart by the counter's shape, and the kernel lints clean with no race
    question asked of the solver."""
    cu, ptx = tmp_path / "bs.cu", tmp_path / "bs.ptx"
    cu.write_text(CUDA)
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, timeout=300)
    text = ptx.read_text()
    mf = _facts(text, str(ptx))
    [a] = _stores(mf)
    assert thread_private(mf.ranks, a, a)
    assert not [r for r in mf.races() if r.code == "TL201"]
    assert mf.queries == 0
    diags = engine.lint_text(text, str(ptx)).diagnostics
    assert not [d for d in diags if d.code in ("TL201", "TL202")]


def test_numba_staging_loop_lints_without_a_race_question():
    """The whole lint of the block-stride staging kernel: clean (the barrier
    orders the staging before the reads), and the race search asks the
    solver nothing about the staging store."""
    src = NUMBA.format(start="cuda.threadIdx.x", bound="256", step="cuda.blockDim.x", index="j", extra="")
    mf = _facts(src, "k.py")
    races = mf.races()
    assert not [r for r in races if r.code == "TL201"]
    assert mf.queries == 0
