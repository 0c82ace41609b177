"""The uniformity analysis and its rules (TL101-TL103), through its API:
queries, reasons, witnesses, the solver's give-up, and the warp level."""

from __future__ import annotations

from pathlib import Path

from tolk_lint.analysis.uniform import uniformity
from tolk_lint.config import resolve_settings
from tolk_lint.engine import lint_text, parse, prepare

ACCEPTANCE = Path(__file__).resolve().parents[2] / "shared" / "acceptance"

TID_GUARD = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry guard(.param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, 16;
    @%p1 bar.sync 0;
    and.b32 %r3, %r2, 0;
    add.u32 %r3, %r3, %r1;
    setp.gt.u32 %p2, %r3, 4;
    @%p2 bar.sync 0;
    ret;
}
"""


def _lint(text: str, path: str, **settings):
    return lint_text(text, path, resolve_settings(**settings)).diagnostics


def test_queries_and_reasons():
    module = parse(TID_GUARD, "guard.ptx")
    prepare(module, resolve_settings(block=(256, 1, 1)))
    k = module.kernels[0]
    u = uniformity(k, module)
    values = {ins.text: ins.result for ins in k.instrs() if ins.results and ins.text}
    tid = values["mov.u32 %r2, %tid.x"]
    n = k.params[0].value
    assert u.workgroup.is_varying(tid) and u.workgroup.is_uniform(n)
    cond = values["setp.lt.u32 %p1, %r2, 16"]
    chain = [r.message for r in u.workgroup.why(cond)]
    assert chain[-1].endswith("differs between threads")
    # (tid & 0) + n > 4 names tid but Z3 proves it uniform
    uni = values["setp.gt.u32 %p2, %r3, 4"]
    assert uni in u.workgroup.forced_uniform and u.workgroup.is_uniform(uni)
    assert u.workgroup.z3_proved >= 1


def test_divergent_barrier_has_a_witness_that_splits_the_branch():
    diags = _lint(TID_GUARD, "guard.ptx", block=(256, 1, 1))
    assert [(d.code, d.span.line) for d in diags] == [("TL101", 12)]
    w = diags[0].witness
    a, b = w["threads"][0][0], w["threads"][1][0]
    assert (a < 16) != (b < 16), w
    assert "16" in diags[0].message or "threads" in diags[0].message
    assert any("differs between threads" in r.message for r in diags[0].related)


def test_solver_giving_up_keeps_the_conservative_verdict():
    src = (ACCEPTANCE / "cuda" / "shifted_loop.sm80.ptx")
    if not src.exists():
        import pytest

        pytest.skip("shared/acceptance is not beside the repository")
    text = src.read_text()
    proved = _lint(text, str(src), block=(256, 1, 1), select=("TL1",))
    assert proved == []  # Z3 proves both loops run n trips in every thread
    starved = _lint(text, str(src), block=(256, 1, 1), select=("TL1",), solver_rlimit=1)
    assert {d.code for d in starved} == {"TL102"}
    assert all("solver" in d.message and "gave up" in d.message for d in starved)


WARP_LEVEL = """
from numba import cuda, float32

@cuda.jit
def warp_level(a):
    v = a[cuda.threadIdx.x]
    if cuda.threadIdx.x // 32 == 0:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        cuda.syncthreads()
    a[cuda.threadIdx.x] = v
"""


def test_warp_uniform_branch_is_fine_for_collectives_not_for_barriers():
    diags = _lint(WARP_LEVEL, "warp_level.py", block=(128, 1, 1))
    assert [(d.code, d.span.line) for d in diags] == [("TL101", 9)]


def test_tensor_core_in_lane_dependent_loop_is_tl102():
    src = ACCEPTANCE / "cuda" / "wmma_ragged_k.sm80.ptx"
    if not src.exists():
        import pytest

        pytest.skip("shared/acceptance is not beside the repository")
    diags = _lint(src.read_text(), str(src), block=(32, 1, 1), select=("TL1",))
    assert diags and {d.code for d in diags} == {"TL102"}
    assert {d.origin.outermost().line for d in diags} == {37, 38, 39}
    assert all(d.data["level"] == "warp" for d in diags)


def _memory_order_kernels():
    from kernelgen import generate

    for seed in range(120):
        yield generate(seed, mode="shared").kernel
    for path in sorted(Path(__file__).parent.parent.joinpath("fixtures", "ptx").rglob("*.ptx")):
        module = parse(path.read_text(), str(path))
        yield from (k for k in module.kernels if k.blocks)


def _walk_reaches(mo, x, y) -> bool:
    """The reference: walk the CFG from just after ``x``, stopping at every
    barrier; whether ``y`` is met before one."""
    def barrier_in(b, lo, hi):
        return any(lo < i < hi for i in mo.barriers[b])

    xb, xi, yb, yi = x.block, mo.pos[x], y.block, mo.pos[y]
    if yb is xb and yi > xi and not barrier_in(xb, xi, yi):
        return True
    if barrier_in(xb, xi, len(xb.instrs)):
        return False
    seen, stack = set(), list(xb.succs)
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        if b is yb and not barrier_in(b, -1, yi):
            return True
        if not mo.barriers[b]:
            stack.extend(b.succs)
    return False


def test_barrier_free_reach_bitsets_agree_with_the_walk():
    """`MemoryOrder.unordered_sets` (two bit-set dataflows) answers exactly
    what a CFG walk per pair does, both ways."""
    from tolk_lint.analysis.buffers import MemoryOrder, is_write
    from tolk_lint.ir.opcodes import Opcode

    checked = 0
    for kernel in _memory_order_kernels():
        mo = MemoryOrder(kernel)
        instrs = list(kernel.instrs())
        writes = [i for i in instrs if is_write(i)]
        for r in (i for i in instrs if i.op in (Opcode.LOAD, Opcode.ATOMIC, Opcode.STORE)):
            before, after = mo.unordered_sets(r, writes)
            for n, w in enumerate(writes):
                if w is r:
                    continue
                assert bool(before >> n & 1) == _walk_reaches(mo, w, r), (kernel.name, w.text, r.text)
                assert bool(after >> n & 1) == _walk_reaches(mo, r, w), (kernel.name, r.text, w.text)
                checked += 1
    assert checked > 1000


WARP_SPLIT = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry warp_split(.param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    mov.u32 %r1, %warpid;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra SKIP;
    shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
SKIP:
    mov.u32 %r3, %tid.x;
    setp.lt.u32 %p2, %r3, 5;
    @%p2 bar.sync 0;
    ret;
}
"""


def _taints(text: str):
    module = parse(text, "k.ptx")
    prepare(module, resolve_settings(block=(256, 1, 1)))
    k = module.kernels[0]
    u = uniformity(k, module)
    return k, u


def test_warp_level_reuses_the_workgroup_taint_only_when_the_seeds_agree():
    """`compute` copies the workgroup level's taint for the warp level when no
    special register or warp-uniform op tells the two apart: same verdicts,
    independent sets. With `%warpid` (uniform in a warp, varying in a block)
    the levels are computed apart and differ."""
    from tolk_lint.analysis.uniform import _levels_agree, compute

    k, _u = _taints(TID_GUARD)
    assert _levels_agree(k)
    warp, workgroup = compute(k, "warp"), compute(k, "workgroup")
    assert warp.varying == workgroup.varying and warp.varying is not workgroup.varying
    assert warp.reasons == workgroup.reasons and warp.divergent_branches == workgroup.divergent_branches
    assert warp.level == "warp" and workgroup.level == "workgroup"
    warp.varying.clear()  # the copy is the warp level's own
    assert workgroup.varying and compute(k, "warp").varying == workgroup.varying

    k, u = _taints(WARP_SPLIT)
    assert not _levels_agree(k)
    warpid = next(i.result for i in k.instrs() if i.op.value == "special" and i.attrs["name"] == "warpid")
    assert u.workgroup.is_varying(warpid) and u.warp.is_uniform(warpid)
    diags = _lint(WARP_SPLIT, "k.ptx", block=(256, 1, 1), select=("TL1",))
    assert {(d.code, d.span.line) for d in diags} == {("TL101", 16)}


def test_reasons_are_written_when_read():
    """A reason given as (function, arguments) is formatted on first read,
    and compares like the text it stands for."""
    from tolk_lint.analysis.uniformity_info import Reason

    calls = []

    def msg(x):
        calls.append(x)
        return f"computed from `{x}`"

    r = Reason((msg, "a"))
    assert calls == []
    assert r.message == "computed from `a`" and r.message == "computed from `a`"
    assert calls == ["a"]
    assert r == Reason("computed from `a`") and hash(r) == hash(Reason("computed from `a`"))


def test_launch_thread_bound_is_the_product_bound():
    """`Encoder._launch` bounds ntid.x * ntid.y * ntid.z with two narrow
    products (cheap to bit-blast); given each dimension in [1, 1024], Z3
    proves that the same as the 64-bit product's bound, for any limit up to
    1024 threads."""
    from tolk_lint.analysis import smt
    from tolk_lint.ir.nodes import LaunchBounds

    z3 = smt.z3mod()
    module = parse(TID_GUARD, "guard.ptx")
    k = module.kernels[0]
    for limit in (1024, 256, 96):
        k.launch = LaunchBounds(max_threads=limit)
        enc = smt.Encoder(k, None, "workgroup")
        x, y, z = enc.ntid
        wide = z3.ZeroExt(32, x) * z3.ZeroExt(32, y) * z3.ZeroExt(32, z)
        s = z3.Solver()
        s.add([z3.UGE(n, 1) for n in enc.ntid] + [z3.ULE(n, 1024) for n in enc.ntid])
        # the launch constraints on the block's size alone (no thread index)
        narrow = z3.And(*[c for c in enc.constraints if "ntid" in c.sexpr()
                          and "tid." not in c.sexpr().replace("ntid.", "")])  # fmt: skip
        s.add(narrow != z3.ULE(wide, limit))
        assert s.check() == z3.unsat, limit


def test_the_grid_is_within_cudas_limits():
    """`Encoder._launch`: at most 65535 blocks in y and z (every GPU since
    compute capability 3.0) for a kernel that reads its block index there,
    so no witness takes `blockIdx.y` past 65534 (where a 32-bit `blockIdx.y
    * blockDim.y` turns negative and `iy < imageH` holds for `imageH = 0`).
    x, and the dimensions the kernel does not read, are left unbounded (the
    bound would only slow unrelated questions)."""
    from tolk_lint.analysis import smt

    z3 = smt.z3mod()
    reads_y = TID_GUARD.replace("    mov.u32 %r2, %tid.x;", "    mov.u32 %r2, %tid.x;\n    mov.u32 %r3, %ctaid.y;")
    assert reads_y != TID_GUARD

    def possible(src, *goal):
        enc = smt.Encoder(parse(src, "guard.ptx").kernels[0], None, "workgroup")
        s = z3.Solver()
        s.add(*enc.constraints, *[g(enc) for g in goal])
        return s.check() == z3.sat

    assert possible(reads_y, lambda e: e.ctaid[1] == 65534) and possible(reads_y, lambda e: e.ctaid[0] == 70000)
    assert not possible(reads_y, lambda e: e.ctaid[1] == 65535)
    assert possible(TID_GUARD, lambda e: e.ctaid[1] == 65535)  # y not read: not bounded
