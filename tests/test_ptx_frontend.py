"""The PTX front end (`tolk_lint.frontends.ptx`): real compiler output, every
grammar hazard of ``shared/research/ptx_corpus.md``, bad input, the CFG and
SSA shape of a small kernel, and PTX compiled at test time by nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ACCEPTANCE

from tolk_lint.frontends.ptx import PTX_GRAMMAR_PATH, parse_ptx
from tolk_lint.ir import Module, Opcode, dump_kernel
from tolk_lint.ir.cfg import cfg_of

O = Opcode
HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "ptx_samples"
ACCEPTANCE_PTX = sorted((ACCEPTANCE / "cuda").glob("*.ptx")) if ACCEPTANCE.is_dir() else []


# -- helpers ------------------------------------------------------------------------------------


def lower(src: str, path: str = "t.ptx") -> Module:
    m = parse_ptx(src, path)
    errors = [d for d in m.diagnostics if d.code == "TL001"]
    assert not errors, [f"{d.span.line}:{d.span.column} {d.message}" for d in errors]
    return m


def codes(m: Module) -> list[str]:
    return [d.code for d in m.diagnostics]


def kernel(m: Module, name: str | None = None):
    ks = m.all_kernels()
    if name is None:
        assert len(ks) == 1, [k.name for k in ks]
        return ks[0]
    return next(k for k in ks if k.name == name)


def ops(k) -> list[Opcode]:
    return [i.op for i in k.instrs()]


def of(k, op: Opcode):
    return [i for i in k.instrs() if i.op is op]


def wrap(body: str, params: str = ".param .u64 k_param_0", head: str = "") -> str:
    return f""".version 8.0
.target sm_80
.address_size 64
{head}
.visible .entry k(
\t{params}
)
{{
{body}
}}
"""


def check_ssa(k) -> None:
    """Every value is defined once, every use is defined, PHIs have one
    operand per predecessor, every block ends with one terminator."""
    defined = set()
    for p in k.params:
        assert p.value is not None and p.value.defn.op is O.PARAM and p.value.defn.block is k.entry
    for b in k.blocks:
        assert b.instrs and b.instrs[-1].is_terminator, f"{b.name} has no terminator"
        for i, ins in enumerate(b.instrs):
            assert ins.block is b
            if ins.is_terminator:
                assert i == len(b.instrs) - 1, f"terminator inside {b.name}"
            for r in ins.results:
                assert r not in defined, f"{r} defined twice"
                defined.add(r)
    for b in k.blocks:
        for ins in b.instrs:
            if ins.op is O.PHI:
                assert len(ins.args) == len(b.preds), f"phi {ins.result} in {b.name}"
            for a in ins.args:
                assert a in defined, f"{a} used by {ins} but not defined"
        for s in b.succs:
            assert b in s.preds


# -- the grammar -----------------------------------------------------------------------------------


def test_grammar_is_exported_and_lalr():
    from lark import Lark

    assert PTX_GRAMMAR_PATH.name == "ptx.lark" and PTX_GRAMMAR_PATH.is_file()
    # builds as LALR(1) with no conflicts (lark raises on a conflict)
    Lark(PTX_GRAMMAR_PATH.read_text(), parser="lalr", lexer="contextual", start=["start", "instruction"])


# -- real compiler output: the acceptance kernels ------------------------------------------------------


@pytest.mark.skipif(not ACCEPTANCE_PTX, reason=f"the acceptance set is not at {ACCEPTANCE}")
@pytest.mark.parametrize("path", ACCEPTANCE_PTX, ids=lambda p: p.name)
def test_acceptance_ptx_lowers_cleanly(path: Path):
    text = path.read_text()
    m = parse_ptx(text, path.name)
    assert not m.diagnostics, [f"{d.code} {d.span.line}: {d.message}" for d in m.diagnostics]
    entries = re.findall(r"\.entry\s+([\w$]+)", text)
    assert [k.name for k in m.kernels] == entries
    assert m.target == re.search(r"\.target\s+(\w+)", text).group(1)
    assert m.files, "the .file table (at the end of the module) is read"
    barriers = sum(1 for k in m.all_kernels() for i in k.instrs() if i.op is O.BARRIER)
    assert barriers == sum(1 for line in text.splitlines() if "bar.sync" in line)
    for k in m.all_kernels():
        check_ssa(k)
        assert k.launch.max_threads or not re.search(r"\.(maxntid|reqntid)", text)
        for ins in k.instrs():
            assert ins.span is not None and ins.span.path == path.name
            if ins.op not in (O.PHI, O.UNDEF, O.JUMP):
                assert ins.text, ins
        # every instruction after the first .loc carries an origin in a real file
        with_origin = [i for i in k.instrs() if i.origin is not None]
        assert with_origin
        assert all(not o.path.startswith("<file") for i in with_origin for o in i.origin.chain())


@pytest.mark.skipif(not ACCEPTANCE_PTX, reason=f"the acceptance set is not at {ACCEPTANCE}")
def test_acceptance_origins_reach_the_cu_file():
    """`.loc ... inlined_at` chains end in the kernel's own .cu file."""
    path = ACCEPTANCE / "cuda" / "cpasync_pipeline.sm80.ptx"
    if not path.exists():
        pytest.skip("cpasync_pipeline.sm80.ptx is not in the acceptance set")
    m = lower(path.read_text(), path.name)
    k = m.kernels[0]
    cps = of(k, O.CP_ASYNC)
    assert cps
    for cp in cps:
        assert cp.attrs["bytes"] == 4 and cp.attrs["cache"] == "ca"
        assert len(cp.args) == 3  # dst, src, src-size
        outer = cp.origin.outermost()
        assert outer.path.endswith("cpasync_pipeline.cu"), cp.origin.chain()
        assert len(cp.origin.chain()) >= 4  # inlined through the cuda_pipeline headers
    assert of(k, O.CP_ASYNC_COMMIT) and of(k, O.CP_ASYNC_WAIT)


# -- the grammar hazards of the corpus note ----------------------------------------------------------------


def test_multi_line_call_with_callseq_scopes():
    src = """.version 9.0
.target sm_80
.address_size 64
.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0,
\t.param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[4] = {104, 105, 10, 0};

.visible .entry k(
\t.param .u32 k_param_0
)
{
\t.reg .b32 \t%r<3>;
\t.reg .b64 \t%rd<3>;
\tld.param.u32 \t%r1, [k_param_0];
\tmov.u64 \t%rd1, $str;
\tcvta.global.u64 \t%rd2, %rd1;
\t{ // callseq 0, 0
\t.reg .b32 temp_param_reg;
\t.param .b64 param0;
\tst.param.b64 \t[param0+0], %rd2;
\t.param .b64 param1;
\tst.param.b64 \t[param1+0], %rd2;
\t.param .b32 retval0;
\tcall.uni (retval0),
\tvprintf,
\t(
\tparam0,
\tparam1
\t);
\tld.param.b32 \t%r2, [retval0+0];
\t} // callseq 0
\tst.global.u32 [%rd2], %r2;
\t{ // callseq 1, 0
\t.reg .b32 temp_param_reg;
\tcall.uni
\tvprintf,
\t(
\t);
\t} // callseq 1
\tret;
}
"""
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    calls = of(k, O.CALL)
    assert [c.attrs["callee"] for c in calls] == ["vprintf", "vprintf"]
    assert calls[0].attrs["uni"] is True
    first = calls[0]
    assert len(first.args) == 2 and all(a.defn.op is O.CVT for a in first.args)
    assert len(first.results) == 1
    # the value loaded from the return slot is the call's result
    st = of(k, O.STORE)[0]
    assert st.args[1] is first.results[0]
    call_line = src.splitlines().index("\tcall.uni (retval0),") + 1
    assert (first.span.line, first.span.column, first.span.end_line) == (call_line, 2, call_line + 5)
    assert first.text == "call.uni (retval0), vprintf, ( param0, param1 )"
    assert calls[1].args == [] and calls[1].results == []
    assert m.kernels[0].buffers["$str"].init == [104, 105, 10, 0]
    check_ssa(k)


def test_scoped_blocks_rename_their_registers():
    src = wrap(
        """\t.reg .pred p;
\t.reg .b32 %r<4>;
\tmov.u32 %r1, %tid.x;
\tsetp.eq.u32 p, %r1, 0;
\t{ .reg .pred p; setp.ne.u32 p, %r1, 5; @p add.u32 %r1, %r1, 1; }
\t{
\t.reg .pred p;
\t.reg .b32 %r1;
\tmov.u32 %r1, 7;
\t}
\t@p bra DONE;
\tst.global.u32 [%rd1], %r1;
DONE:
\tret;""",
        head="",
    ).replace("{\n", "{\n\t.reg .b64 %rd<2>;\n", 1)
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    cmps = of(k, O.CMP)
    assert [c.attrs["cmp"] for c in cmps] == ["eq", "ne"]
    # the outer `p` decides the final branch, not the scoped one
    br = [i for i in k.instrs() if i.op is O.BRANCH][-1]
    assert br.args[0] is cmps[0].result
    # the scoped `%r1 = 7` does not leak out: the store reads the outer %r1
    st = of(k, O.STORE)[0]
    assert st.args[1].defn.op is O.PHI  # the guarded add merged with the old value
    names = {r.source_name for i in k.instrs() for r in i.results}
    assert "p" in names
    check_ssa(k)


def test_dual_destinations_and_guards_without_percent():
    src = wrap(
        """\t.reg .b32 %r<10>;
\t.reg .pred %p<5>;
\tmov.u32 %r1, %tid.x;
\tshfl.sync.bfly.b32 %r9|%p4, %r1, 2, 31, -1;
\tsetp.lt.s32 %p1|%p2, %r1, %r9;
\t{ .reg .pred q; .reg .b32 r0; shfl.sync.up.b32 r0|q, %r1, 1, 0, -1; @!q mov.u32 %r3, r0; }
\tret;"""
    )
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    sh = of(k, O.SHUFFLE)
    assert [s.attrs["mode"] for s in sh] == ["bfly", "up"]
    assert [r.type for r in sh[0].results] == ["b32", "pred"]
    assert len(sh[0].args) == 4  # value, lane, clamp, mask
    cmp = of(k, O.CMP)[0]
    nots = [i for i in of(k, O.NOT) if i.args == [cmp.result]]
    assert nots, "the second destination of setp is the negation"
    # @!q: the guarded mov sits in its own block, reached when q is false
    br = [i for i in k.instrs() if i.op is O.BRANCH][0]
    assert br.args[0] is sh[1].results[1]
    check_ssa(k)


def test_negative_offsets_and_spaced_addresses():
    src = wrap(
        """\t.reg .b64 %rd<4>;
\t.reg .b32 %r<4>;
\tld.param.u64 %rd1, [k_param_0];
\tld.global.u32 %r1, [%rd1+-8];
\tld.global.u32 %r2, [ %rd1 + 16 ];
\tld.global.u32 %r3, [%rd1];
\tst.global.u32 [%rd1+4], %r1;
\tret;"""
    )
    m = lower(src)
    k = kernel(m)
    loads = of(k, O.LOAD)
    assert [ld.attrs["offset"] for ld in loads] == [-8, 16, 0]
    a0 = loads[0].args[0].defn
    assert a0.op is O.ADD and a0.args[1].defn.attrs["value"] == -8
    assert loads[2].args[0] is k.params[0].value  # no offset: the base itself
    st = of(k, O.STORE)[0]
    assert st.attrs["offset"] == 4 and st.args[1] is loads[0].results[0]
    assert k.params[0].kind == "pointer" and k.params[0].space == "global" and k.params[0].written is True


def test_sink_operand_and_double_colon_opcodes():
    src = """.version 9.4
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
.visible .entry k(
\t.param .u64 .ptr .global .align 1 k_param_0
)
.reqntid 128
{
\t.reg .b32 %r<10>;
\t.reg .pred %p<3>;
\tmov.u32 %r9, global_smem;
\tmbarrier.init.shared::cta.b64 [%r9], 1;
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], 4096;
\tfence.proxy.async.shared::cta;
\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [%r9], %r1;
\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r9], [%rd1, {%r2, %r3}], [%r9];
\tfence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;
\tret;
}
"""
    m = lower(src)
    k = kernel(m)
    assert m.target == "sm_90a"
    assert k.launch.block == (128, 1, 1) and k.launch.source == ".reqntid" and k.launch.max_threads == 128
    assert k.params[0].kind == "pointer" and k.params[0].space == "global"
    assert k.buffers["global_smem"].dynamic and k.buffers["global_smem"].shape == (None,)
    opaque = of(k, O.OPAQUE)
    assert len(opaque) == 1
    tl002 = [d for d in m.diagnostics if d.code == "TL002"]
    assert [d.message.split("`")[1] for d in tl002] == [
        "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes",
    ]
    assert all(d.severity.value == "warning" and d.kernel == "k" and d.name == "unsupported-construct" for d in tl002)
    mbar = of(k, O.MBARRIER)
    assert [i.attrs["kind"] for i in mbar] == ["init", "arrive", "try_wait"]
    assert mbar[1].results == [] and mbar[1].attrs.get("tx")  # `_` is not written
    assert [r.type for r in mbar[2].results] == ["pred"] and mbar[2].attrs.get("parity")
    assert [f.attrs.get("proxy") for f in of(k, O.FENCE)] == [True, True]


def test_opcode_glued_to_brace_and_u_suffix():
    src = wrap(
        """\t.reg .b32 %r<8>;
\t.reg .f32 %f<5>;
\tmov.b32 %r5, 7U;
\tmma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32{%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
\tret;"""
    )
    m = lower(src)
    k = kernel(m)
    c = of(k, O.CONST)[0]
    assert c.attrs["value"] == 7 and c.results[0].type == "b32"
    mma = of(k, O.MMA)[0]
    assert mma.attrs["shape"] == "m16n8k8" and mma.attrs["layouts"] == ("row", "col")
    assert mma.attrs["dtypes"] == ("f32", "tf32", "tf32", "f32") and mma.attrs["counts"] == (4, 2, 4)
    assert mma.attrs["kind"] == "mma" and len(mma.args) == 10 and len(mma.results) == 4
    assert mma.args[4] is c.results[0]


def test_callprototype_label_and_indirect_call():
    src = """.version 9.0
.target sm_80
.address_size 64
.func  (.param .b32 func_retval0) _Z1ff(
\t.param .b32 _Z1ff_param_0
)
{
\t.reg .f32 %f<3>;
\tld.param.f32 %f1, [_Z1ff_param_0];
\tadd.f32 %f2, %f1, %f1;
\tst.param.f32 [func_retval0+0], %f2;
\tret;
}
.visible .global .align 8 .u64 fptr = _Z1ff;
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<4>;
\tld.global.u64 %rd9, [fptr];
\tmov.f32 %f4, 0f3F800000;
\t{ // callseq 2, 0
\t.param .b32 param0;
\tst.param.f32 [param0+0], %f4;
\t.param .b32 retval0;
\tprototype_2 : .callprototype (.param .b32 _) _ (.param .b32 _);
\tcall (retval0),
\t%rd9,
\t(
\tparam0
\t)
\t, prototype_2;
\tld.param.f32 %f5, [retval0+0];
\t} // callseq 2
\tst.global.f32 [%rd9], %f5;
\tret;
}
"""
    m = lower(src)
    assert codes(m) == []
    k = kernel(m, "k")
    assert [b.name for b in k.blocks] == ["entry"], "a prototype label is not a block"
    call = of(k, O.CALL)[0]
    assert call.attrs["indirect"] and call.attrs["callee"] is None and call.attrs["prototype"] == "prototype_2"
    assert call.args[0].defn.attrs["value"] == 1.0 and call.args[-1].defn.op is O.LOAD
    assert of(k, O.STORE)[0].args[1] is call.results[0]
    f = m.functions["_Z1ff"]
    assert not f.is_entry and [p.name for p in f.params] == ["_Z1ff_param_0"]
    assert [p.name for p in f.returns] == ["func_retval0"]
    ret = f.blocks[-1].instrs[-1]
    assert ret.op is O.RET and ret.args[0].defn.op is O.ADD
    add = ret.args[0].defn
    assert add.args == [f.params[0].value, f.params[0].value]
    assert m.kernels[0].buffers["fptr"].init == ["_Z1ff"]


def test_file_table_after_use_and_inlined_at_chains():
    src = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k()
{
\t.reg .b32 %r<4>;
\t.loc\t1 20 5
\tmov.u32 %r1, %tid.x;
\t.loc\t1 23 5
\t.loc\t2 103 9, function_name $L__info_string0, inlined_at 1 23 5
\t.loc\t3 292 5, function_name $L__info_string1, inlined_at 2 103 9
\tadd.s32 %r2, %r1, 1;
\t.loc\t1 0 3
\tadd.s32 %r3, %r1, 2;
\t.loc 1 30 1 // a trailing comment
\tret;
}
\t.file\t1 "/home/u/k.cu"
\t.file\t2 "/usr/local/cuda/include/cuda_pipeline.h"
\t.file\t3 "/usr/local/cuda/include/cuda_pipeline_primitives.h"
\t.section\t.debug_str
\t{
$L__info_string0:
.b8 95,90,51,0
$L__info_string1:
.b8 95,90,52
.b8 0
\t}
"""
    m = lower(src)
    assert m.files == {
        1: "/home/u/k.cu",
        2: "/usr/local/cuda/include/cuda_pipeline.h",
        3: "/usr/local/cuda/include/cuda_pipeline_primitives.h",
    }
    k = kernel(m)
    special = of(k, O.SPECIAL)[0]
    assert special.attrs["name"] == "tid.x"
    assert (special.origin.path, special.origin.line, special.origin.column) == ("/home/u/k.cu", 20, 5)
    add1, add2 = of(k, O.ADD)
    chain = [(o.path.rsplit("/", 1)[-1], o.line, o.column) for o in add1.origin.chain()]
    assert chain == [("cuda_pipeline_primitives.h", 292, 5), ("cuda_pipeline.h", 103, 9), ("k.cu", 23, 5)]
    assert add1.origin.outermost().line == 23
    assert add2.origin is None  # `.loc 1 0 3`: no source line
    ret = k.blocks[-1].instrs[-1]
    assert ret.origin.line == 30


def test_loc_function_name_offsets_and_alias():
    src = """.version 8.0
.target sm_80
.func g()
{
\tret;
}
.alias f, g;
.visible .entry k()
{
\t.reg .b32 %r<3>;
\t.loc 1 5 3
\t.loc 2 7 1, function_name $L__info_string0+12, inlined_at 1 5 3
\tadd.s32 %r1, %r2, 1;
\tret;
}
\t.file 1 "a.cu"
\t.file 2 "b.cuh", 1700000000, 2048
"""
    m = lower(src)
    k = kernel(m, "k")
    add = of(k, O.ADD)[0]
    assert [(o.path, o.line) for o in add.origin.chain()] == [("b.cuh", 7), ("a.cu", 5)]


def test_debug_sections_label_values_and_giant_initialisers():
    big = ", ".join(str(i % 256) for i in range(100_000))
    src = f""".version 9.0
.target sm_80, debug
.address_size 64
.global .align 1 .b8 table[100000] = {{{big}}};
.const .align 4 .b8 short_init[8] = {{1, 2}};
.visible .entry k()
{{
$L__func_begin0:
\tret;
$L__func_end0:
}}
\t.file\t1 "k.cu"
\t.section\t.debug_info
\t{{
.b32 120
.b8 2
.b8 104,105,0
.b64 $L__func_begin0
.b32 .debug_abbrev
.b32 .debug_loc+120
.b64 k
$L__info_string9:
.b8 0 // DW_AT_name
\t}}
\t.section\t.debug_macinfo {{ }}
"""
    t = time.perf_counter()
    m = lower(src)
    assert time.perf_counter() - t < 5
    assert m.target == "sm_80"
    buf = kernel(m).buffers["table"]
    assert buf.shape == (100000,) and len(buf.init) == 100000 and buf.init[257] == 1
    assert kernel(m).buffers["short_init"].init == [1, 2]


def test_several_statements_on_one_line_have_their_own_columns():
    src = wrap(
        """\t.reg .b32 %r<5>;
\t.reg .pred p;
\tmov.u32 %r1, %tid.x;
\tand.b32 %r1, %r2, %r3;    setp.ne.u32 p, %r1, 0;
\tret;"""
    )
    m = lower(src)
    k = kernel(m)
    line = src.splitlines().index("\tand.b32 %r1, %r2, %r3;    setp.ne.u32 p, %r1, 0;") + 1
    a = of(k, O.AND)[0]
    c = of(k, O.CMP)[0]
    assert (a.span.line, a.span.column, a.span.end_column) == (line, 2, 24)
    assert (c.span.line, c.span.column, c.span.end_column) == (line, 28, 50)
    assert a.text == "and.b32 %r1, %r2, %r3" and c.text == "setp.ne.u32 p, %r1, 0"


def test_tinygrad_style_ptx():
    src = """.version 7.5
.target sm_80
.address_size 64
.visible .entry r_4_4(
\t.param .u64 data0,
\t.param .u64 data1
)
.maxntid 128
{
\t.reg .u64 %dat_u64_<2>;
\t.reg .s32 %alu_s32_<3>;
\t.reg .f32 %acc_f32_<1>;
\t.reg .pred %alu_pred_<1>;
\t.reg .s32 %ridx_s32_<1>;
\tld.param.u64 %dat_u64_0, [data0+0];
\tld.param.u64 %dat_u64_1, [data1+0];
\tmov.b32 %ridx_s32_0, 0U;
\tmov.b32 %acc_f32_0, 0f00000000;
LOOP_ridx_s32_0:
\t.shared .align 16 .b8 smem0[64];
\tmov.u64 %dat_u64_1, smem0[0];
\tadd.s32 %ridx_s32_0, %ridx_s32_0, 1U;
\tsetp.lt.s32 %alu_pred_0, %ridx_s32_0, 4U;
\t@%alu_pred_0 bra LOOP_ridx_s32_0;
END_ridx_s32_0:
\tst.global.f32 [%dat_u64_0+0], %acc_f32_0;
\tret;
}
"""
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    assert k.launch.maxntid == (128,) and k.launch.max_threads == 128 and k.launch.block is None
    assert k.launch.source == ".maxntid"
    assert k.buffers["smem0"].space == "shared" and k.buffers["smem0"].shape == (64,)
    [loop] = cfg_of(k).loops
    assert loop.header.name == "LOOP_ridx_s32_0"
    assert loop.ivs and loop.ivs[0].step == 1
    assert of(k, O.ADDR)[0].attrs["buffer"] == "smem0"


def test_special_registers_and_constants():
    src = wrap(
        """\t.reg .b32 %r<12>;
\t.reg .b64 %rd<3>;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, %ntid.y;
\tmov.u32 %r3, %ctaid.z;
\tmov.u32 %r4, %laneid;
\tmov.u32 %r5, %warpid;
\tmov.u64 %rd1, %clock64;
\tmov.u32 %r6, %lanemask_lt;
\tmov.u32 %r7, %dynamic_smem_size;
\tmov.u32 %r8, %envreg2;
\tmov.u32 %r9, WARP_SZ;
\tmov.u32 start, %reserved_smem_offset_1;
\tmov.u32 %r10, %r1;
\tmov.u32 %r11, 0x1F;
\tret;""",
    ).replace("{\n", "{\n\t.reg .u32 start;\n", 1)
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    names = [i.attrs["name"] for i in of(k, O.SPECIAL)]
    assert names == ["tid.x", "ntid.y", "ctaid.z", "laneid", "warpid", "clock64", "lanemask_lt",
                     "dynamic_smem_size", "envreg2", "reserved_smem_offset_1"]  # fmt: skip
    assert of(k, O.SPECIAL)[5].results[0].type == "u64"
    consts = [i.attrs["value"] for i in of(k, O.CONST)]
    assert consts == [32, 31]
    # mov of a register is an alias: no instruction
    assert len(of(k, O.SPECIAL)) + len(of(k, O.CONST)) + 1 == len(k.entry.instrs) - 1


def test_predicated_ops_get_their_own_block():
    src = wrap(
        """\t.reg .b32 %r<6>;
\t.reg .pred %p<3>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [k_param_0];
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, 16;
\t@%p1 bar.sync 0;
\t@!%p1 st.global.u32 [%rd1], %r1;
\t@%p1 mov.u32 %r2, 5;
\tst.global.u32 [%rd1], %r2;
\t@%p1 ret;
\tbar.sync 1, 64;
\tret;"""
    )
    m = lower(src)
    k = kernel(m)
    check_ssa(k)
    bars = of(k, O.BARRIER)
    assert [(b.attrs["kind"], b.attrs["id"], b.attrs.get("count"), b.attrs["aligned"]) for b in bars] == [
        ("sync", 0, None, True),
        ("sync", 1, 64, True),
    ]
    cfg = cfg_of(k)
    guarded = bars[0].block
    [br] = cfg.control_deps(guarded)
    t = br.terminator
    assert t.op is O.BRANCH and t.attrs["targets"][0] is guarded
    assert guarded.instrs[-1].op is O.JUMP and len(guarded.instrs) == 3  # const, barrier, jump
    st = of(k, O.STORE)[0]
    tb = st.block.preds[0].terminator
    assert tb.attrs["targets"][1] is st.block  # @!p: taken when p is false
    # the guarded mov merges with the undefined old %r2 at the join
    st2 = of(k, O.STORE)[1]
    assert st2.args[1].defn.op is O.PHI
    # `@%p1 ret` returns in its own block; the second barrier is under the other edge
    rets = [b for b in k.blocks if b.instrs[-1].op is O.RET]
    assert len(rets) == 2


def test_memory_atomics_and_async_copies():
    src = wrap(
        """\t.reg .b32 %r<12>;
\t.reg .b64 %rd<6>;
\t.reg .f32 %f<6>;
\t.reg .pred %p<2>;
\t.shared .align 16 .b8 sbuf[512];
\tld.param.u64 %rd1, [k_param_0];
\tld.global.nc.v4.u32 {%r1, %r2, _, %r4}, [%rd1];
\tld.volatile.shared.f32 %f1, [sbuf+8];
\tld.weak.global.ca.v4.u32 {%r5, %r6, %r7, %r8}, [%rd1+16];
\tatom.global.add.u32 %r9, [%rd1], 1;
\tatom.shared.cas.b32 %r10, [sbuf], %r1, %r2;
\tred.global.add.f32 [%rd1], %f1;
\tmov.u32 %r11, sbuf;
\tcp.async.cg.shared.global [%r11], [%rd1], 16;
\tcp.async.ca.shared.global [%r11+16], [%rd1+16], 16, %r3;
\tsetp.eq.u32 %p1, %r1, 0;
\tcp.async.cg.shared.global.L2::128B [%r11], [%rd1], 16, %p1;
\tcp.async.commit_group;
\tcp.async.wait_group 1;
\tcp.async.wait_all;
\tmembar.gl;
\tfence.acq_rel.gpu;
\tst.shared.v2.f32 [sbuf+32], {%f1, %f1};
\tst.global.u32 [%rd1], 0;
\tprefetch.global.L2 [%rd1];
\tret;"""
    )
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    loads = of(k, O.LOAD)
    assert loads[0].attrs["nc"] and loads[0].attrs["vec"] == 4 and len(loads[0].results) == 3 + 1
    assert loads[1].attrs["volatile"] and loads[1].attrs["buffer"] == "sbuf" and loads[1].attrs["offset"] == 8
    assert loads[1].args[0].defn.op is O.ADD and loads[1].args[0].defn.args[0].defn.op is O.ADDR
    assert not loads[2].attrs["volatile"] and loads[2].attrs["cache"] == "ca"
    atoms = of(k, O.ATOMIC)
    assert [(a.attrs["op"], a.attrs["space"], len(a.args), len(a.results)) for a in atoms] == [
        ("add", "global", 2, 1),
        ("cas", "shared", 3, 1),
        ("add", "global", 2, 0),
    ]
    cps = of(k, O.CP_ASYNC)
    assert [(c.attrs["bytes"], c.attrs["cache"], len(c.args)) for c in cps] == [(16, "cg", 2), (16, "ca", 3), (16, "cg", 3)]
    assert cps[2].args[2].defn.op is O.SELECT and cps[2].attrs["ignore_src"]
    assert [w.attrs for w in of(k, O.CP_ASYNC_WAIT)] == [{"n": 1}, {"n": 0, "all": True}]
    assert len(of(k, O.CP_ASYNC_COMMIT)) == 1
    assert [f.attrs["scope"] for f in of(k, O.FENCE)] == ["gpu", "gpu"]
    stores = of(k, O.STORE)
    assert len(stores[0].args) == 3 and stores[0].attrs["vec"] == 2
    assert stores[1].args[1].defn.op is O.CONST
    assert of(k, O.PURE)[-1].attrs["fn"] == "prefetch"
    assert k.buffers["sbuf"].bytes == 512 and k.buffers["sbuf"].align == 16


def test_warp_collectives_and_tensor_cores():
    src = wrap(
        """\t.reg .b32 %r<40>;
\t.reg .f32 %f<20>;
\t.reg .pred %p<4>;
\t.reg .b64 %rd<4>;
\tmov.u32 %r1, %laneid;
\tsetp.ne.u32 %p1, %r1, 0;
\tvote.sync.ballot.b32 %r2, %p1, -1;
\tvote.sync.all.pred %p2, !%p1, %r2;
\tmatch.all.sync.b32 %r3|%p3, %r1, -1;
\tredux.sync.add.s32 %r4, %r1, -1;
\tactivemask.b32 %r5;
\tbar.warp.sync -1;
\tshfl.down.b32 %r6, %r1, 1, 31;
\tbar.red.popc.u32 %r7, 0, %p1;
\tbarrier.sync 2, 128;
\tbarrier.sync.aligned 3;
\tbar.arrive 4, 64;
\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17}, [%rd1], 16;
\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, {%r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17}, {%r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17}, {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};
\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, 16;
\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r20, %r21, %r22, %r23}, [%r1];
\tstmatrix.sync.aligned.m8n8.x2.shared.b16 [%r1], {%r20, %r21};
\tmovmatrix.sync.aligned.m8n8.trans.b16 %r24, %r20;
\tret;"""
    )
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    votes = of(k, O.VOTE)
    assert [(v.attrs["mode"], v.results[0].type) for v in votes] == [("ballot", "b32"), ("all", "pred")]
    assert votes[1].args[0].defn.op is O.NOT
    mt = of(k, O.MATCH)[0]
    assert mt.attrs["mode"] == "all" and [r.type for r in mt.results] == ["b32", "pred"]
    assert of(k, O.REDUX)[0].attrs["op"] == "add"
    assert len(of(k, O.ACTIVEMASK)) == 1 and len(of(k, O.WARP_SYNC)) == 1
    assert of(k, O.SHUFFLE)[0].attrs == {"mode": "down", "sync": False}
    bars = of(k, O.BARRIER)
    assert [(b.attrs["kind"], b.attrs["aligned"], b.attrs.get("id"), b.attrs.get("count")) for b in bars] == [
        ("red", True, 0, None),
        ("sync", False, 2, 128),
        ("sync", True, 3, None),
        ("arrive", True, 4, 64),
    ]
    assert bars[0].results[0].type == "u32" and len(bars[0].args) == 2
    wl = of(k, O.WMMA_LOAD)[0]
    assert wl.attrs["matrix"] == "a" and wl.attrs["space"] == "global" and wl.attrs["layout"] == "row"
    assert wl.attrs["shape"] == "m16n16k16" and len(wl.results) == 8 and len(wl.args) == 2
    mma = of(k, O.MMA)[0]
    assert mma.attrs["kind"] == "wmma" and mma.attrs["counts"] == (8, 8, 8) and len(mma.results) == 8
    ws = of(k, O.WMMA_STORE)[0]
    assert len(ws.args) == 10 and ws.args[1] is mma.results[0]
    lm = of(k, O.LDMATRIX)[0]
    assert lm.attrs["num"] == 4 and lm.attrs["trans"] and lm.attrs["space"] == "shared" and len(lm.results) == 4
    sm = of(k, O.STMATRIX)[0]
    assert sm.attrs["num"] == 2 and len(sm.args) == 3
    assert of(k, O.MOVMATRIX)[0].args[0] is lm.results[0]


def test_arithmetic_compare_select_convert():
    src = wrap(
        """\t.reg .b32 %r<20>;
\t.reg .b64 %rd<6>;
\t.reg .f32 %f<6>;
\t.reg .pred %p<6>;
\t.reg .b16 %rs<3>;
\tmov.u32 %r1, %tid.x;
\tmul.wide.s32 %rd1, %r1, 4;
\tmul.hi.u32 %r2, %r1, 7;
\tmad.lo.s32 %r3, %r1, %r2, %r1;
\tfma.rn.f32 %f1, %f2, %f3, %f4;
\tshr.s32 %r4, %r1, 31;
\tshr.u32 %r5, %r1, 3;
\tsetp.lt.and.s32 %p1, %r1, 8, %p2;
\tsetp.gt.f32 %p3, %f1, 0f00000000;
\tselp.b32 %r6, %r1, %r2, %p1;
\tset.lt.u32.s32 %r7, %r1, 5;
\tslct.s32.s32 %r8, %r1, %r2, %r3;
\tcvt.rn.f32.s32 %f5, %r1;
\tcvt.rn.satfinite.e4m3x2.f16x2 %rs1, %r1;
\tcvt.rn.f16x2.f32 %r9, %f1, %f2;
\tmov.b64 %rd2, {%r1, %r2};
\tmov.b64 {%r10, %r11}, %rd2;
\tbfe.u32 %r12, %r1, 4, 3;
\tlop3.b32 %r13, %r1, %r2, %r3, 0x96;
\tpopc.b32 %r14, %r1;
\ttestp.finite.f32 %p4, %f1;
\tnot.pred %p5, %p4;
\tret;"""
    )
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    mul = of(k, O.MUL)
    assert mul[0].attrs == {"signed": True, "wide": True} and mul[0].results[0].type == "s64"
    assert mul[1].attrs == {"signed": False, "hi": True}
    assert of(k, O.MAD)[0].attrs["signed"] is True and len(of(k, O.MAD)) == 2
    shr = of(k, O.SHR)
    assert [s.attrs["signed"] for s in shr] == [True, False, False]  # the third: bfe's shift
    assert not of(k, O.PURE) or all(p.attrs["fn"] != "bfe" for p in of(k, O.PURE))  # bfe: shift and mask
    cmps = of(k, O.CMP)
    assert (cmps[0].attrs["cmp"], cmps[0].attrs["signed"], cmps[0].attrs["type"]) == ("lt", True, "s32")
    assert cmps[1].attrs["signed"] is None  # floats
    assert of(k, O.AND)[0].args[0] is cmps[0].result  # setp.lt.and: CMP then AND
    sels = of(k, O.SELECT)
    assert len(sels) == 3  # selp, set, slct
    assert sels[0].args[0] is of(k, O.AND)[0].result
    cvts = of(k, O.CVT)
    assert [(c.attrs["from_type"], c.results[0].type, len(c.args)) for c in cvts] == [
        ("s32", "f32", 1),
        ("f16x2", "e4m3x2", 1),
        ("f32", "f16x2", 2),
    ]
    assert of(k, O.PACK)[0].results[0].type == "b64"
    ex = of(k, O.EXTRACT)
    assert [e.attrs["index"] for e in ex] == [0, 1]
    assert [p.attrs["fn"] for p in of(k, O.PURE)] == ["lop3", "popc", "testp"]  # bfe with constants: shift, mask
    assert of(k, O.PURE)[-1].results[0].type == "pred"


def test_textures_and_surfaces():
    src = wrap(
        """\t.reg .b32 %r<8>;
\t.reg .f32 %f<12>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [k_param_0];
\tmov.u32 %r1, %tid.x;
\ttex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];
\ttex.1d.v4.f32.s32 {%f7, %f8, %f9, %f10}, [%rd1, {%r1}];
\tsust.b.2d.b32.trap [%rd1, {%r1, %r1}], {%r2};
\tsuld.b.2d.b32.trap {%r3}, [%rd1, {%r1, %r1}];
\tret;"""
    )
    m = lower(src)
    assert codes(m) == []
    k = kernel(m)
    loads = of(k, O.LOAD)
    assert [(x.attrs["space"], len(x.results)) for x in loads] == [("texture", 4), ("texture", 4), ("surface", 1)]
    # the address depends on the coordinates
    addr = loads[1].args[0].defn
    assert addr.op is O.PURE and of(k, O.SPECIAL)[0].result in addr.args
    st = of(k, O.STORE)[0]
    assert st.attrs["space"] == "surface"


def test_struct_params_and_param_windows():
    src = wrap(
        """\t.reg .b64 %rd<8>;
\t.reg .b32 %r<4>;
\tld.param.u64 %rd1, [k_param_0+40];
\tld.param.v2.u32 {%r1, %r2}, [k_param_0+8];
\tld.param.u64 %rd2, [k_param_0+40];
\tmov.u64 %rd3, k_param_0;
\tld.param.u64 %rd4, [%rd3+16];
\tret;""",
        params=".param .align 8 .b8 k_param_0[64]",
    )
    m = lower(src)
    k = kernel(m)
    params = of(k, O.PARAM)
    assert [p.attrs.get("offset") for p in params] == [None, 40, 8, 12]
    assert params[0].attrs["bytes"] == 64
    assert all(p.block is k.entry for p in params)
    ld = of(k, O.LOAD)[0]
    assert ld.attrs["space"] == "param" and ld.args[0].defn.op is O.ADD


def test_declarations_and_module_buffers():
    src = """.version 9.5
.target sm_90
.address_size 64
.common .global .align 8 .u64 _ZN08NumbaEnv5a[1];
.visible .shared .align 4 .b8 _cudapy_smem_1[1024];
.const .align 4 .f32 cst[4] = {0f3F800000, 0f40000000, 0f40400000, 0f40800000};
.weak .global .align 4 .u32 wk = 3;
.weak .func _Z1gv()
.noreturn
{
\ttrap;
}
.visible .entry a(
\t.param .u64 .ptr .align 1 a_param_0
)
.maxntid 128, 2, 1
.minnctapersm 2
{
\t.local .align 8 .b8 __local_depot0[32];
\t.reg .b64 %SP;
\t.reg .b64 %SPL;
\t.pragma "nounroll";
\tmov.u64 %SPL, __local_depot0;
\tret;
}
.visible .entry b()
{
\tret;
}
"""
    m = lower(src)
    assert codes(m) == []
    a = kernel(m, "a")
    assert a.launch.maxntid == (128, 2, 1) and a.launch.max_threads == 256 and a.launch.minnctapersm == 2
    assert set(a.buffers) == {"_ZN08NumbaEnv5a", "_cudapy_smem_1", "cst", "wk", "__local_depot0"}
    assert set(kernel(m, "b").buffers) == {"_ZN08NumbaEnv5a", "_cudapy_smem_1", "cst", "wk"}
    assert a.buffers["cst"].init == [1.0, 2.0, 3.0, 4.0] and a.buffers["cst"].space == "const"
    assert a.buffers["_cudapy_smem_1"].space == "shared"
    assert a.buffers["__local_depot0"].space == "local"
    assert a.params[0].kind == "pointer"
    assert [k.name for k in m.kernels] == ["a", "b"] and list(m.functions) == ["_Z1gv"]
    g = m.functions["_Z1gv"]
    assert g.blocks[-1].instrs[-1].op is O.EXIT
    assert a.span.line == 13 and a.span.column == 1


def test_loop_branch_barrier_mma_structure():
    """A loop with a predicated barrier and an mma.sync: the loop, its
    induction variable and exit, the guarded barrier in a block of its own
    under a BRANCH, and PHIs at the joins."""
    src = """.version 8.0
.target sm_80
.address_size 64
.visible .entry loopk(
\t.param .u64 loopk_param_0,
\t.param .u32 loopk_param_1
)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<20>;
\t.reg .f32 %f<9>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [loopk_param_0];
\tld.param.u32 %r1, [loopk_param_1];
\tmov.u32 %r2, %tid.x;
\tsetp.lt.u32 %p2, %r2, 32;
\tmov.f32 %f1, 0f00000000;
\tmov.f32 %f2, 0f00000000;
\tmov.f32 %f3, 0f00000000;
\tmov.f32 %f4, 0f00000000;
\tmov.u32 %r3, 0;
$L__BB0_1:
\t@%p2 bar.sync 0;
\tld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [%r2];
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r7, %r8, %r9, %r10}, {%r11, %r12}, {%f1, %f2, %f3, %f4};
\tadd.s32 %r3, %r3, 1;
\tsetp.lt.s32 %p1, %r3, %r1;
\t@%p1 bra $L__BB0_1;
\tsetp.ne.s32 %p3, %r2, 0;
\t@%p3 bra $L__BB0_3;
\tcvta.to.global.u64 %rd2, %rd1;
\tst.global.f32 [%rd2], %f1;
$L__BB0_3:
\tret;
}
"""
    m = lower(src)
    k = kernel(m)
    check_ssa(k)
    dump = dump_kernel(k)
    cfg = cfg_of(k)
    [loop] = cfg.loops
    assert loop.header.name == "$L__BB0_1"
    [iv] = loop.ivs
    assert iv.step == 1 and iv.start.defn.attrs["value"] == 0
    [ex] = loop.exits
    assert ex.iv is iv and ex.cmp == "lt" and ex.uses_next and ex.bound is k.params[1].value
    assert re.search(r"iv %r3\.\d+ = 0 step 1 exit %r3\.\d+ lt loopk_param_1\.0", dump), dump
    [bar] = of(k, O.BARRIER)
    assert bar.block is not loop.header and bar.block in loop.blocks
    assert [i.op for i in bar.block.instrs] == [O.CONST, O.BARRIER, O.JUMP]
    [dep] = cfg.control_deps(bar.block)
    assert dep is loop.header and dep.terminator.op is O.BRANCH
    assert dep.terminator.args[0].defn.attrs["cmp"] == "lt"
    # PHIs: the accumulators and the counter at the loop header
    phis = list(loop.header.phis())
    assert {p.result.source_name for p in phis} == {"%f1", "%f2", "%f3", "%f4", "%r3"}
    mma = of(k, O.MMA)[0]
    assert mma.args[6:] == [p.result for p in phis if p.result.source_name.startswith("%f")]
    assert mma.block in loop.blocks
    # the join after the store has two predecessors and no PHI (nothing merges)
    end = k.blocks[-1]
    assert end.name == "$L__BB0_3" and len(end.preds) == 2
    assert "phi" in dump and "br %p2" in dump


# -- bad input -------------------------------------------------------------------------------------------


def one_tl001(m: Module):
    assert m.kernels == [] and m.functions == {}
    [d] = m.diagnostics
    assert d.code == "TL001" and d.severity.value == "error" and d.name == "parse-error"
    return d


def test_not_ptx_at_all():
    d = one_tl001(parse_ptx("import numpy as np\n\ndef f(x):\n    return x\n", "t.ptx"))
    assert (d.span.line, d.span.column) == (1, 1)
    assert "`import`" in d.message and "expected" in d.message


def test_truncated_ptx():
    path = ACCEPTANCE / "cuda" / "sgemm_tiled.sm80.ptx"
    text = path.read_text() if path.exists() else lower_source_fallback()
    half = text[: len(text) // 2]
    d = one_tl001(parse_ptx(half, "half.ptx"))
    assert "end" in d.message and "truncated" in d.message
    assert d.span.line >= half.count("\n") - 1


def lower_source_fallback() -> str:
    return wrap("\t.reg .b32 %r<3>;\n" + "\tadd.s32 %r1, %r1, 1;\n" * 50 + "\tret;")


def test_binary_junk():
    junk = "".join(chr(c) for c in [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0] + list(range(0, 32)) * 3)
    d = one_tl001(parse_ptx(junk, "t.ptx"))
    assert d.span.line >= 1 and len(d.message) < 300


def test_unbalanced_braces():
    src = wrap("\t.reg .b32 %r<3>;\n\t{\n\tadd.s32 %r1, %r1, 1;\n\tret;")
    d = one_tl001(parse_ptx(src, "t.ptx"))
    assert "end of file" in d.message


def test_syntax_error_inside_an_instruction_points_at_it():
    src = wrap("\t.reg .b32 %r<3>;\n\tadd.s32 %r1, , %r2;\n\tret;")
    d = one_tl001(parse_ptx(src, "t.ptx"))
    line = src.splitlines().index("\tadd.s32 %r1, , %r2;") + 1
    assert (d.span.line, d.span.column) == (line, 15)
    assert "`,`" in d.message and "expected" in d.message
    assert d.message.count(",") <= 8  # a short list of expectations


def test_missing_semicolon():
    src = wrap("\t.reg .b32 %r<3>;\n\tadd.s32 %r1, %r1, 1\n\tret;")
    d = one_tl001(parse_ptx(src, "t.ptx"))
    line = src.splitlines().index("\tadd.s32 %r1, %r1, 1") + 1
    assert (d.span.line, d.span.column) == (line, 21)
    assert "missing `;`" in d.message and "`ret" in d.message
    d = one_tl001(parse_ptx(src.replace("\tret;", "}"), "t.ptx"))
    assert (d.span.line, d.span.column) == (line, 21) and "missing `;`" in d.message


def test_unknown_instruction_is_opaque_not_a_parse_error():
    src = wrap(
        """\t.reg .b32 %r<4>;
\tfrobnicate.sync.b32 %r1, %r2, 7;
\tfrobnicate.sync.b32 %r3, %r1, 7;
\tadd.s32 %r2, %r3, 1;
\tret;"""
    )
    m = parse_ptx(src, "t.ptx")
    assert codes(m) == ["TL002"]
    [d] = m.diagnostics
    assert d.message == "`frobnicate.sync.b32` is not modelled; analyses treat it conservatively"
    assert d.span.line == src.splitlines().index("\tfrobnicate.sync.b32 %r1, %r2, 7;") + 1 and d.kernel == "k"
    k = kernel(m)
    op1, op2 = of(k, O.OPAQUE)
    assert op1.attrs["text"] == "frobnicate.sync.b32 %r1, %r2, 7"
    assert op2.args == [op1.results[0]]  # results are written to the destination register
    assert of(k, O.ADD)[0].args[0] is op2.results[0]


def test_empty_and_comment_only_files():
    """ptxas rejects a file without `.version` ("Missing .version directive at start of file")."""
    d = one_tl001(parse_ptx("", "t.ptx"))
    assert "`.version`" in d.message and (d.span.line, d.span.column) == (1, 1)
    d = one_tl001(parse_ptx("// nothing here\n/* nor\n here */\n", "t.ptx"))
    assert "`.version`" in d.message
    d = one_tl001(parse_ptx("\n.target sm_80\n.version 8.0\n", "t.ptx"))
    assert "does not start with a `.version`" in d.message and d.span.line == 2
    m = parse_ptx(".version 8.0\n.target sm_80\n", "t.ptx")
    assert m.diagnostics == [] and m.kernels == []


def test_never_raises_on_random_mutations():
    path = ACCEPTANCE / "cuda" / "warp_reduce.sm80.ptx"
    text = path.read_text() if path.exists() else lower_source_fallback()
    import random

    rnd = random.Random(7)
    for _ in range(150):
        chars = list(text)
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(chars))
            op = rnd.random()
            if op < 0.4:
                del chars[i]
            elif op < 0.7:
                chars.insert(i, rnd.choice("{}[]();,.%@!|:+-_ \n0123456789abcxyz\x00"))
            else:
                chars[i] = rnd.choice("{}[]();,.%@!|:+-_ \n0123456789abcxyz")
        m = parse_ptx("".join(chars), "t.ptx")
        assert all(d.code in ("TL001", "TL002") for d in m.diagnostics)
        if any(d.code == "TL001" for d in m.diagnostics):
            assert len(m.diagnostics) == 1 and not m.kernels


# -- speed ---------------------------------------------------------------------------------------------------


def test_big_file_is_linear():
    body = []
    for i in range(4000):
        body.append(f"\t.loc 1 {i + 1} 5")
        body.append(f"\tld.global.f32 %f{i % 50}, [%rd1+{4 * i}];")
        body.append(f"\tsetp.gt.f32 %p1, %f{i % 50}, %f60;")
        body.append(f"\t@%p1 bra $L__BB0_{i};")
        body.append(f"\tfma.rn.f32 %f60, %f{i % 50}, 0f3FC00000, %f60;")
        body.append(f"$L__BB0_{i}:")
    src = wrap(
        "\t.reg .pred %p<2>;\n\t.reg .f32 %f<64>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [k_param_0];\n"
        + "\n".join(body)
        + "\n\tst.global.f32 [%rd1], %f60;\n\tret;"
    )
    src += '\t.file 1 "k.cu"\n'
    small = src.replace("4000", "4000")
    t = time.perf_counter()
    m = lower(small)
    dt = time.perf_counter() - t
    k = kernel(m)
    assert len(k.blocks) > 4000
    assert dt < 30, f"{small.count(chr(10))} lines took {dt:.1f}s"


# -- PTX compiled now by nvcc --------------------------------------------------------------------------------

CUDA_SNIPPETS = {
    "wmma_async": r"""
#include <mma.h>
#include <cuda_pipeline.h>
using namespace nvcuda;
extern "C" __global__ void k_wmma(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < 4; ++k) {
    wmma::load_matrix_sync(fa, a + k * 16, 64);
    wmma::load_matrix_sync(fb, b + k * 16, 64);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
extern "C" __global__ void k_async(const float4* g, float* out, int n) {
  __shared__ float4 s[2][128];
  for (int i = 0; i < n; ++i) {
    __pipeline_memcpy_async(&s[i & 1][threadIdx.x], &g[i * 128 + threadIdx.x], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[i * 128 + threadIdx.x] = s[i & 1][(threadIdx.x + 1) % 128].x;
    __syncthreads();
  }
}
""",
    "warp_atomics": r"""
extern "C" __global__ void k_warp(int* x, unsigned long long* y, float* f) {
  int v = x[threadIdx.x];
  v += __shfl_xor_sync(0xffffffff, v, 1);
  v += __shfl_up_sync(0xffffffff, v, 1);
  unsigned m = __ballot_sync(0xffffffff, v > 0);
  int a = __all_sync(m, v > 1), b = __any_sync(m, v > 2);
  unsigned mm = __match_any_sync(0xffffffff, v);
  int r = __reduce_add_sync(0xffffffff, v);
  __syncwarp(0xffff);
  atomicAdd(&x[0], v); atomicMax(&x[1], v); atomicCAS(&x[2], v, 3); atomicExch(&x[3], 1);
  atomicAdd(y, 1ull); atomicAdd(f, 1.0f);
  int c = __syncthreads_count(v > 0);
  x[threadIdx.x] = v + m + a + b + mm + r + c + __popc(v) + __clz(v) + __brev(v) + __byte_perm(v, m, 0x3210);
  f[threadIdx.x] = __expf(f[threadIdx.x]) + sqrtf(f[1]) + rsqrtf(f[2]) + __sinf(f[3]) + tanhf(f[6]);
  y[threadIdx.x] = clock64();
}
""",
    "calls_printf": r"""
#include <cstdio>
__device__ __noinline__ float helper(float x, int y) { __syncthreads(); return x * y; }
__device__ float (*fptr)(float, int) = helper;
extern "C" __global__ void k_call(float* o, int n) {
  printf("hi %d %f\n", n, o[0]);
  o[threadIdx.x] = helper(o[threadIdx.x], n) + fptr(o[1], n);
  if (threadIdx.x == 0 && n < 0) __trap();
  __threadfence();
  volatile float* vo = o; vo[2] = vo[3];
}
extern "C" __global__ void __launch_bounds__(128, 2) k_lb(cudaTextureObject_t t, float* o) {
  o[threadIdx.x] = tex2D<float>(t, threadIdx.x, threadIdx.y) + tex1Dfetch<float>(t, threadIdx.x);
}
""",
}


def _nvcc() -> str | None:
    return shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(_nvcc() is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", sorted(CUDA_SNIPPETS))
@pytest.mark.parametrize("flags", [["-lineinfo"], ["-G"]], ids=["lineinfo", "debug"])
def test_nvcc_output_lowers_cleanly(name: str, flags: list[str], tmp_path: Path):
    cu = tmp_path / f"{name}.cu"
    cu.write_text(CUDA_SNIPPETS[name])
    ptx = tmp_path / f"{name}.ptx"
    cmd = [_nvcc(), "-ptx", "-arch=sm_80", "-rdc=true", *flags, str(cu), "-o", str(ptx)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"nvcc failed: {r.stderr[-500:]}")
    text = ptx.read_text()
    m = parse_ptx(text, ptx.name)
    assert not m.diagnostics, [f"{d.code} {d.span.line}: {d.message}" for d in m.diagnostics]
    entries = re.findall(r"\.entry\s+([\w$]+)", text)
    assert [k.name for k in m.kernels] == entries
    for k in m.all_kernels():
        check_ssa(k)
    # each barrier once: where a .func is inlined into a kernel, its copy is not counted again
    n_bar = sum(1 for k in m.all_kernels() for i in k.instrs() if i.op is O.BARRIER and "call_site" not in i.attrs)
    assert n_bar == len(re.findall(r"\b(?:bar|barrier)\.(?:sync|red|arrive)\b", text))
    if "-lineinfo" in flags:
        assert any(i.origin is not None and i.origin.outermost().path.endswith(cu.name)
                   for k in m.all_kernels() for i in k.instrs())  # fmt: skip


# -- samples kept beside the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.ptx")), ids=lambda p: p.name)
def test_samples(path: Path):
    text = path.read_text()
    m = parse_ptx(text, path.name)
    assert not [d for d in m.diagnostics if d.code == "TL001"], m.diagnostics
    expected_tl002 = re.findall(r"// expect-tl002: (\S+)", text)
    got = [d.message.split("`")[1] for d in m.diagnostics if d.code == "TL002"]
    assert got == expected_tl002
    for k in m.all_kernels():
        check_ssa(k)


def test_labels_of_scoped_blocks_are_local():
    path = SAMPLES / "scoped_labels_numba.ptx"
    m = lower(path.read_text(), path.name)
    k = m.kernels[0]
    done = [b for b in k.blocks if b.name.startswith("DONE")]
    assert [b.name for b in done] == ["DONE", "DONE'3"]
    # (the callee is inlined: a compare on the value it returns, also named %r1 there, is not one of them)
    cmps = [i for i in of(k, O.CMP) if i.attrs["cmp"] in ("ne", "lt") and i.args[0].source_name == "%r1"
            and i.args[0].defn.op is O.SPECIAL]
    assert [c.result.source_name for c in cmps] == ["p", "p"]
    assert cmps[0].result.name != cmps[1].result.name
    # each `@p bra DONE` jumps to the DONE of its own block
    assert cmps[0].block.terminator.attrs["targets"][0] is done[0]
    assert cmps[1].block.terminator.attrs["targets"][0] is done[1]
    # the call is inlined: the callee's instructions carry the call site
    assert not of(k, O.CALL)
    callees = {i.attrs["call_site"][0] for i in k.instrs() if "call_site" in i.attrs}
    [callee] = callees
    assert callee in m.functions
    f = m.functions[callee]
    assert f.blocks[-1].instrs[-1].args[0].defn.attrs["value"] == 0


def _all_statements(items):
    from tolk_lint.frontends.ptx.parser import FuncDecl

    stack = [it.body for it in items if isinstance(it, FuncDecl) and it.body]
    while stack:
        for st in stack.pop():
            if st[0] == "I":
                yield st
            elif st[0] == "B":
                stack.append(st[1])


def test_fast_decoder_agrees_with_the_instruction_rule():
    """Every instruction the regex decoder reads, the grammar's `instruction`
    rule reads the same way (the rule is the fallback and the reference)."""
    from tolk_lint.frontends.ptx.parser import _lark, parse_tree

    # the acceptance kernels when they are beside the clone, and always the
    # repository's own: the compiler samples and the PTX fixtures
    fixtures = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "ptx").rglob("*.ptx"))
    paths = ACCEPTANCE_PTX[:8] + sorted(SAMPLES.glob("*.ptx")) + fixtures[:40]
    extra = wrap(
        "\tmov.u64 %rd3, smem0[0];\n\tmov.u32 %r1, sym+20;\n\tld.global.u32 %r1, [%rd1+-8];\n"
        "\tst.global.u32 [ %r3 + 0 ], 0f3F800000;\n\tsetp.lt.s32 %p1|%p2, %r1, -1;\n"
        "\tvote.sync.any.pred %p1, !%p2, 0xffffffff;\n\tmov.b32 %r5, 7U;\n\tcall.uni f, ();\n"
        "\tmov.f64 %fd1, 0d3FF0000000000000;\n\tcreatepolicy.fractional.L2::evict_last.b64 %rd1, 1.0;\n"
    )
    texts = [p.read_text() for p in paths] + [extra]
    lk = _lark()
    n = 0
    for text in texts:
        pf = parse_tree(text)
        for st in _all_statements(pf.items):
            stmt = pf.clean[st[4][4] : st[4][5]]
            ref = lk.parse(stmt, start="instruction")
            assert (ref[1], ref[2], ref[3]) == (st[1], st[2], st[3]), stmt
            n += 1
    assert n > 500


def test_register_params_and_returns_of_old_style_funcs():
    src = """.version 8.0
.target sm_80
.func (.reg .b32 %ret) twice(.reg .b32 %a)
{
\tadd.s32 %a, %a, %a;
\tmov.b32 %ret, %a;
\tret;
}
.visible .entry k()
{
\tret;
}
"""
    m = lower(src)
    f = m.functions["twice"]
    check_ssa(f)
    [p] = f.params
    add = of(f, O.ADD)[0]
    assert add.args == [p.value, p.value]
    ret = f.blocks[-1].instrs[-1]
    assert ret.op is O.RET and ret.args == [add.result]


def test_calls_to_funcs_are_inlined():
    """A kernel's calls to .func bodies are replaced by copies of them: SSA
    holds, the call's result is the callee's returned value, the callee's
    instructions keep their spans and carry the call site, and a callee
    called twice is copied twice (its own .func is still linted alone)."""
    path = HERE.parent / "fixtures" / "ptx" / "collectives" / "func_calls.ptx"
    m = lower(path.read_text(), path.name)
    k = kernel(m, "neighbours_synced")
    check_ssa(k)
    assert not of(k, O.CALL)
    sites = [i.attrs["call_site"] for i in k.instrs() if "call_site" in i.attrs]
    assert {s[0] for s in sites} == {"_Z3putPfif", "first_slot", "right_neighbour"}
    loads = [i for i in of(k, O.LOAD) if i.attrs.get("space") == "shared"]
    assert len(loads) == 2 and all("call_site" in i.attrs for i in loads)
    store = [i for i in of(k, O.STORE) if i.attrs.get("space") == "global"][0]
    assert store.args[1] is loads[-1].results[0]  # the value right_neighbour returns
    assert set(m.functions) == {"_Z3putPfif", "right_neighbour", "first_slot", "block_barrier"}
    k2 = kernel(m, "lower_half_barrier_call")
    [bar] = of(k2, O.BARRIER)
    assert bar.attrs["call_site"][0] == "block_barrier" and bar.attrs["call_site"][1].line > bar.span.line
