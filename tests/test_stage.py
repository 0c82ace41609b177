"""The staging analysis (tolk_lint/analysis/stage.py): `depth` on every branch
of tolk-stage's definition, `tile`, `core_threads`, the polynomial index
model, boxes (injective, dense, mixed), and the verdicts on real compiler
output: nvcc PTX of CUDA C kernels compiled at test time, Numba kernels, and
tinygrad's PTX renderer where it installs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tolk_lint.analysis import stage as S
from tolk_lint.analysis.stage import CoreShape, depth, depth_reason, limited_by_budget, tile
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.target import KIB, parse_target

REPO = Path(__file__).resolve().parents[1]
STAGING_CU = REPO / "fixtures" / "cuda" / "staging"
STAGING_PY = REPO / "fixtures" / "numba" / "staging"

SM75, SM80, SM90, CPU = (parse_target(t) for t in ("sm_75", "sm_80", "sm_90", "cpu"))

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


# -- depth: every branch of the seed's definition ---------------------------------------------


def test_depth_two_stages_with_async_copy():
    assert depth(SM80, [8 * KIB, 8 * KIB]) == 2  # 2 x 16 KiB = 32 KiB <= 48 KiB
    assert depth(SM90, [1024, 1024]) == 2


def test_depth_one_stage_without_async_copy():
    assert SM75.async_copy is False
    assert depth(SM75, [8 * KIB, 8 * KIB]) == 1  # fits twice, but no cp.async
    assert "no asynchronous copy" in depth_reason(SM75, [1024])[1]


def test_depth_one_stage_when_two_do_not_fit():
    assert depth(SM80, [8 * KIB, 32 * KIB]) == 1  # sgemm_deep_k: 2 x 40 KiB > 48 KiB
    assert depth(SM80, [16 * KIB, 16 * KIB]) == 1  # f32 128x32 tiles: 64 KiB for two stages
    assert "exceed" in depth_reason(SM80, [16 * KIB, 16 * KIB])[1]


def test_depth_exact_fit_is_inclusive():
    assert depth(SM80, [12 * KIB, 12 * KIB]) == 2  # exactly 48 KiB
    assert depth(SM80, [12 * KIB, 12 * KIB + 1]) == 1
    assert depth(SM80, [48 * KIB]) == 1
    assert depth(SM75, [48 * KIB]) == 1


def test_depth_zero_when_one_stage_does_not_fit():
    assert depth(SM80, [48 * KIB + 16]) == 0
    assert depth(SM75, [40 * KIB, 16 * KIB]) == 0
    assert "one stage" in depth_reason(SM80, [64 * KIB])[1]


def test_depth_zero_under_one_16_byte_copy():
    assert depth(SM80, [15]) == 0
    assert depth(SM80, [16]) == 2
    assert depth(SM80, [1024, 8]) == 0  # one small tile is enough to stage nothing
    assert "16-byte" in depth_reason(SM80, [4])[1]


def test_depth_zero_without_tiles():
    assert depth(SM80, []) == 0
    assert depth(SM80, ()) == 0


def test_depth_zero_on_the_host():
    assert CPU.has_shared is False and CPU.has_local is False
    assert depth(CPU, [1024]) == 0
    assert "no workgroup threads" in depth_reason(CPU, [1024])[1]


def test_depth_zero_without_shared_memory():
    import dataclasses

    no_shared = dataclasses.replace(SM80, has_shared=False)
    assert depth(no_shared, [1024]) == 0
    assert "no shared memory" in depth_reason(no_shared, [1024])[1]


def test_depth_zero_when_staging_is_off():
    assert depth(SM80, [1024], stage=False) == 0
    assert "turned off" in depth_reason(SM80, [1024], stage=False)[1]


def test_depth_counts_used_shared_memory():
    assert depth(SM80, [8 * KIB], used=32 * KIB) == 2  # 2 x 8 + 32 = 48: fits exactly
    assert depth(SM80, [8 * KIB], used=32 * KIB + 1) == 1
    assert depth(SM80, [8 * KIB], used=40 * KIB) == 1
    assert depth(SM80, [8 * KIB], used=40 * KIB + 1) == 0
    assert "beside" in depth_reason(SM80, [8 * KIB], used=32 * KIB)[1]


def test_depth_optin_budget():
    tiles = [8 * KIB, 32 * KIB]
    assert depth(SM80, tiles) == 1
    assert depth(SM80, tiles, optin=True) == 2  # 80 KiB <= 163 KiB
    assert depth(SM75, tiles, optin=True) == 1  # 64 KiB opt-in, no cp.async
    assert depth(SM90, [100 * KIB, 10 * KIB], optin=True) == 2  # 220 KiB <= 227 KiB
    assert limited_by_budget(SM80, tiles) is True
    assert limited_by_budget(SM75, tiles) is False  # the target, not the budget
    assert limited_by_budget(SM80, [1024]) is False
    assert limited_by_budget(SM80, [8]) is False  # the 16-byte rule, not the budget


# -- tile and core_threads ------------------------------------------------------------------------


def test_core_threads_definition():
    assert S.core_threads(SM80) == 108 * 4 * 2 * 32
    assert S.core_threads(SM90) == 132 * 4 * 2 * 32
    assert S.core_threads(SM80, sms=1) == 256
    assert S.core_threads(CPU) == 1


def _tile(core=CoreShape(8, 16, 16), sizes=(0, 0, 0), workgroups=None, stages=2, threads=27648, **kw):
    return tile(SM80, core, core_threads=threads, workgroups=workgroups, sizes=sizes, stages=stages, **kw)


def test_tile_default_warp_tile_and_2x2_warps_and_k32():
    splits, full = _tile()
    # m16n8k16: M upcast 4 (64), N upcast 8 (64), 2x2 warps, K unrolled 2 (32)
    assert splits == [(1, 4, "upcast"), (0, 8, "upcast"), (1, 2, "local"), (0, 2, "local"), (2, 2, "unroll")]
    assert S.tile_of_splits(CoreShape(8, 16, 16), splits) == (128, 128, 32)
    assert full is False  # workgroups unknown: cannot be shown


def test_tile_none_unless_admitted_and_staged():
    assert _tile(stages=0) is None
    assert _tile(admitted=False) is None
    assert tile(CPU, CoreShape(8, 16, 16), core_threads=1, workgroups=1, sizes=(0, 0, 0), stages=1) is None


def test_tile_upcasts_only_as_far_as_the_sizes_divide():
    splits, _ = _tile(sizes=(16, 48, 48))
    # N 16 = 8 x 2 (no room for a 2x local split after), M 48: upcast 1 (48 % 32 != 0)... K 48 % 32 != 0
    assert (0, 2, "upcast") in splits
    assert not any(a == 2 for a, _, _ in splits)  # K not unrolled
    assert not any(a == 1 and k == "upcast" for a, _, k in splits)


def test_tile_wmma_core_k_already_16():
    splits, _ = _tile(core=CoreShape(16, 16, 16))
    assert S.tile_of_splits(CoreShape(16, 16, 16), splits) == (128, 128, 32)


def test_tile_halves_m_then_n_when_too_few_threads():
    core = CoreShape(8, 16, 16)
    # 256 x 256 outputs, one workgroup of 128 threads a 128x128 tile: 4 x 128 = 512 threads
    # two stages need core_threads / 2 = 1024 threads: 4 workgroups keep 512, so M's warp tile
    # halves (8 workgroups, 1024 threads) and that is enough
    splits, full = _tile(sizes=(256, 256, 256), workgroups=1, threads=2048, stages=2)
    n, m, _ = S.tile_of_splits(core, splits)
    assert (m, n) == (64, 128)
    assert full is True
    # one stage needs all 2048: M halves, then N
    splits1, full1 = _tile(sizes=(256, 256, 256), workgroups=1, threads=2048, stages=1)
    n1, m1, _ = S.tile_of_splits(core, splits1)
    assert (m1, n1) == (64, 64)
    assert full1 is False  # not two stages
    # with plenty of workgroups nothing halves, and two stages keep core_threads / 2
    splits2, full2 = _tile(sizes=(4096, 4096, 4096), workgroups=8, threads=27648, stages=2)
    assert S.tile_of_splits(core, splits2)[:2] == (128, 128)
    assert full2 is True


def test_tile_halving_stops_at_32():
    core = CoreShape(8, 16, 16)
    splits, full = _tile(sizes=(128, 128, 64), workgroups=1, threads=10**9, stages=2)
    n, m, _ = S.tile_of_splits(core, splits)
    assert (m, n) == (64, 64)  # 2 warps of 32 on each side: no further
    assert full is False


def test_tile_in_run_drops_m_local_then_halves_m():
    splits, _ = _tile(in_run=lambda u: u <= 2)
    assert (1, 2, "local") not in splits
    assert (1, 2, "upcast") in splits


# -- the polynomial model and boxes on hand-built IR ------------------------------------------------


def _kernel(build, block=(128, 1, 1)):
    from tolk_lint.ir.builder import Builder
    from tolk_lint.ir.nodes import Kernel, LaunchBounds

    k = Kernel("k", "ptx", "k.ptx", launch=LaunchBounds(block=block))
    b = Builder(k)
    entry = b.block("entry")
    b.position(entry)
    out = build(b)
    b.ret()
    return k, out


def _special(b, name):
    from tolk_lint.ir.opcodes import Opcode as O

    return b.value_of(O.SPECIAL, [], "u32", attrs={"name": name})


def test_bit_fields_of_tid_and_uniform_terms():
    from tolk_lint.ir.opcodes import Opcode as O

    def build(b):
        tid = _special(b, "tid.x")
        warp = b.value_of(O.SHR, [tid, b.const(5, "u32")], "u32")
        lane4 = b.value_of(O.AND, [tid, b.const(3, "u32")], "u32")
        base = b.value_of(O.SHL, [_special(b, "ctaid.x"), b.const(7, "u32")], "u32")
        x = b.value_of(O.OR, [base, tid], "u32")  # disjoint bits: an add
        return warp, lane4, x

    k, (warp, lane4, x) = _kernel(build)
    ev = S.IndexEval(k, (128, 1, 1))
    assert S.tf_str(ev.poly(warp)[()]) == "(tid.x >> 5)"
    assert S.tf_str(ev.poly(lane4)[()]) == "(tid.x & 3)"
    px = ev.poly(x)
    assert px[("ctaid.x",)] == ("c", 128) and px[()] == ("v", "tid.x")


def test_mixed_bit_field_is_refused():
    from tolk_lint.ir.opcodes import Opcode as O

    def build(b):
        tid = _special(b, "tid.x")
        p = b.value_of(O.PARAM, [], "u32", attrs={"name": "n"})
        s = b.value_of(O.ADD, [tid, p], "u32")
        return b.value_of(O.AND, [s, b.const(15, "u32")], "u32")

    k, v = _kernel(build)
    with pytest.raises(S.Unstageable, match="mixes"):
        S.IndexEval(k, (128, 1, 1)).poly(v)


def _leaf_box(index_tf, block=(128, 1, 1), warp_level=False, lanes=None):
    from tolk_lint.ir.nodes import Instr
    from tolk_lint.ir.opcodes import Opcode as O

    k, _ = _kernel(lambda b: None, block)
    ev = S.IndexEval(k, block)
    ld = Instr(O.LOAD, [], [], {"space": "global"})
    lane_off = {}
    if lanes:
        lane_off = S.p_tf(("v", "frag.c"))
    leaf = S.Leaf(ld, S.p_tf(index_tf), lanes or {}, lane_off, 4)
    return S.box_of([leaf], ev, warp_level, 1)


def test_box_dense_and_injective():
    box = _leaf_box(("v", "tid.x"))
    assert box.injective and box.dense and box.shape == (128,) and box.rereads == 1
    assert box.proof == "z3"


def test_box_rereads_from_unread_thread_bits():
    box = _leaf_box(S.tf("shr", ("v", "tid.x"), ("c", 1)))  # pairs of threads share a value
    assert box.injective and box.dense and box.rereads == 2 and box.elements == 64


def test_box_not_injective():
    t = ("v", "tid.x")
    overlap = S.tf("add", S.tf("and", t, ("c", 3)), S.tf("mul", S.tf("and", S.tf("shr", t, ("c", 2)), ("c", 3)), ("c", 2)))
    box = _leaf_box(overlap, block=(16, 1, 1))
    assert not box.injective and not box.dense
    assert "read the same element" in box.witness


def test_box_not_separable():
    t = ("v", "tid.x")
    box = _leaf_box(S.tf("mul", t, t), block=(8, 1, 1))  # injective, but no box of strided dims
    assert box.injective and not box.dense


def test_box_strided_dimensions_are_a_box():
    t = ("v", "tid.x")
    # (t & 7) + 256 * (t >> 3): 8 contiguous elements in 16 rows of a pitch-256 matrix
    idx = S.tf("add", S.tf("and", t, ("c", 7)), S.tf("mul", S.tf("shr", t, ("c", 3)), ("c", 256)))
    box = _leaf_box(idx)
    assert box.injective and box.dense and box.elements == 128
    assert sorted(d.extent for d in box.dims) == [8, 16]


# -- real compiler output ----------------------------------------------------------------------------


_PTX_CACHE: dict[tuple[str, str], Path] = {}


def _ptx(cu: Path, arch: str, tmp_path: Path) -> Path:
    """nvcc's PTX of a fixture (compiled once per test session)."""
    key = (str(cu), arch)
    if key in _PTX_CACHE and _PTX_CACHE[key].is_file():
        return _PTX_CACHE[key]
    out = tmp_path / f"{cu.stem}.{arch}.ptx"
    _PTX_CACHE[key] = out
    subprocess.run(["nvcc", "-ptx", "-lineinfo", f"-arch={arch}", "-o", str(out), str(cu)], check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    return out


def _facts(path: Path, block=None, target=None, settings=None):
    from tolk_lint.engine import kernel_target, parse, prepare

    st = (settings or DEFAULT_SETTINGS).with_(block=block, target=target)
    m = parse(path.read_text(), str(path))
    prepare(m, st)
    return {k.name: S.staging_facts(k, m, st, kernel_target(k, m, st)) for k in m.kernels if k.blocks}


def _by_operand(facts):
    return {(v.operand, v.line): v for v, _ in S.group_by_line(facts.operands)}


@needs_nvcc
@pytest.mark.parametrize("arch,expect_depth", [("sm_80", 2), ("sm_90", 2), ("sm_75", 1)])
def test_wmma_fragments_from_global(tmp_path, arch, expect_depth):
    f = _facts(_ptx(STAGING_CU / "wmma_global_colmajor_b.cu", arch, tmp_path), block=(256, 1, 1))
    ops = _by_operand(f["wmma_global_colmajor_b"])
    a, b = ops[("a", 22)], ops[("b", 23)]
    for v in (a, b):
        assert v.stageable and v.depth == expect_depth and v.box.proof == "z3"
        assert v.depths == {"sm_75": 1, "sm_80": 2, "sm_90": 2}
    assert a.box.rereads == 2  # the 2 warps of a block row read the same A fragment
    assert b.box.rereads == 4  # the 4 warps of a block column read the same B fragment
    assert a.box.shape == (64, 16) and a.tile_bytes == 2048 and a.dtype == "f16"
    assert b.box.shape == (32, 16) and b.tile_bytes == 1024  # column-major: 32 columns of 16
    assert a.proposed is not None


@needs_nvcc
def test_mma_sync_lane_loads_from_global(tmp_path):
    f = _facts(_ptx(STAGING_CU / "mma_sync_global.cu", "sm_80", tmp_path), block=(128, 1, 1))
    ops = _by_operand(f["mma_sync_global"])
    a, b = ops[("a", 23)], ops[("b", 24)]
    assert a.stageable and a.depth == 2 and a.box.shape == (32, 16) and a.tile_bytes == 1024
    assert b.stageable and b.box.shape == (16, 16) and b.tile_bytes == 512
    assert a.box.rereads == 2 and b.box.rereads == 2
    names = {d.name for d in a.box.dims}
    assert {"tid.x&3", "(tid.x>>2)&7", "tid.x>>6"} <= names


@needs_nvcc
@pytest.mark.parametrize("cu,kernel,buffers", [
    ("mma_sync_staged_sync.cu", "mma_sync_staged_sync", {"sA": (32, 16), "sB": (16, 16)}),
    ("wmma_staged_sync_colmajor_b.cu", "wmma_staged_sync_colmajor_b", {"sA": (64, 16), "sB": (32, 16)}),
])  # fmt: skip
def test_synchronous_staging_tile_copies(tmp_path, cu, kernel, buffers):
    block = (128, 1, 1) if "mma_sync" in cu else (256, 1, 1)
    for arch, d in (("sm_80", 2), ("sm_90", 2), ("sm_75", 1)):
        f = _facts(_ptx(STAGING_CU / cu, arch, tmp_path), block=block)[kernel]
        assert all(not v.stageable for v in f.operands)  # fragments come from shared memory already
        got = {tc.buffer: tc for tc in f.copies}
        assert set(got) == set(buffers)
        for name, shape in buffers.items():
            tc = got[name]
            assert tc.depth == d and tc.reason is None
            assert tc.box is not None and tc.box.shape == shape and tc.box.rereads == 1


@needs_nvcc
def test_wide_tiles_do_not_fit(tmp_path):
    f = _facts(_ptx(STAGING_CU / "sgemm_wide_tiles_no_fit.cu", "sm_90", tmp_path), block=(32, 8, 1))
    got = {tc.buffer: tc for tc in f["sgemm_wide_tiles"].copies}
    assert set(got) == {"sA", "sB"}
    assert got["sA"].tile_bytes == 16 * KIB and got["sB"].tile_bytes == 32 * KIB
    for tc in got.values():
        assert tc.depth == 1 and tc.budget_limited and tc.optin_depth == 2
    assert got["sB"].box.shape == (128, 64)


@needs_nvcc
def test_already_shared_and_computed_copies(tmp_path):
    f = _facts(_ptx(STAGING_CU / "wmma_global_shared_epilogue.cu", "sm_80", tmp_path), block=(128, 1, 1))
    vs = f["wmma_global_shared_epilogue"].operands
    assert vs and all(not v.stageable and "already holds shared memory" in v.reason for v in vs)
    f = _facts(_ptx(STAGING_CU / "tile_copy_scaled.cu", "sm_80", tmp_path), block=(16, 16, 1))
    # the scaled copy of A is not a tile copy; the guarded copy of B is (zero stored when out of range)
    assert [tc.buffer for tc in f["sgemm_scaled_tiles"].copies] == ["sB"]


# -- Numba kernels ---------------------------------------------------------------------------------


def test_numba_sum_of_products_from_global():
    f = _facts(STAGING_PY / "naive_matmul_global.py")["matmul_global"]
    ops = {v.operand: v for v, _ in S.group_by_line(f.operands)}
    a, b = ops["A[i, k]"], ops["B[k, j]"]
    assert a.stageable and a.depth == 2 and a.box.shape == (16, 1) and a.k_unrolled_shape == (16, 32)
    assert b.stageable and b.box.shape == (1, 16) and b.k_unrolled_shape == (32, 16)
    assert a.box.rereads == 16 and a.tile_bytes == 64


def test_numba_single_value_tile_stages_nothing():
    f = _facts(STAGING_PY / "matvec_rows_global.py")["matvec_rows"]
    assert all(v.depth == 0 and "16-byte" in v.reason for v in f.operands)


def test_numba_mixed_terms_and_reductions():
    f = _facts(STAGING_PY / "rotated_dot_mixed.py")
    assert all("mixes" in v.reason for v in f["rotated_dot"].operands)
    assert all("reduces across threads" in v.reason for v in f["dot_warp_reduce"].operands)


def test_numba_tile_copies():
    f = _facts(STAGING_PY / "sgemm_tiled_sync.py")["fast_matmul"]
    assert sorted((tc.buffer, tc.depth, tc.tile_bytes) for tc in f.copies) == [("sA", 2, 1024), ("sB", 2, 1024)]
    f = _facts(STAGING_PY / "sgemm_deep_k_no_fit.py")["sgemm_deep_k"]
    assert sorted((tc.buffer, tc.depth, tc.tile_bytes) for tc in f.copies) == [("sA", 1, 8192), ("sB", 1, 32768)]


def test_host_decodes():
    f = _facts(STAGING_PY / "host_decode_rows.py")
    (d,) = f["dequant_matmul"].decodes
    assert d.stageable and d.redecodes == 32 and d.panel_shape == (512,) and d.panel_bytes == 2048
    assert f["dequant_matmul_panel"].decodes == []
    (d2,) = f["dequant_matvec"].decodes
    assert not d2.stageable and "decoded once" in d2.reason
    off = _facts(STAGING_PY / "host_decode_rows.py", settings=DEFAULT_SETTINGS.with_(stage=False))
    assert not off["dequant_matmul"].decodes[0].stageable


def test_staging_off_stages_nothing():
    f = _facts(STAGING_PY / "naive_matmul_global.py", settings=DEFAULT_SETTINGS.with_(stage=False))
    assert all(not v.stageable for v in f["matmul_global"].operands)


def test_admits():
    from tolk_lint.engine import parse, prepare

    m = parse((STAGING_PY / "naive_matmul_global.py").read_text(), "x.py")
    prepare(m, DEFAULT_SETTINGS)
    assert S.admits(m.kernels[0], SM80) is True
    m = parse((STAGING_PY / "rotated_dot_mixed.py").read_text(), "y.py")
    prepare(m, DEFAULT_SETTINGS)
    assert S.admits(m.kernels[0], SM80) is False


# -- tinygrad's PTX renderer (optional) ---------------------------------------------------------------

TINYGRAD_SCRIPT = r'''
import os, sys, json
os.environ["DEV"] = "MOCK+NULL:PTX:sm_80"; os.environ["PARALLEL"] = "0"; os.environ["CACHELEVEL"] = "0"
from tinygrad.runtime.support import compiler_cuda as cc
from tinygrad.runtime import ops_null
out, launches = [], {}
orig = cc.PTXCompiler.compile
def wrap(self, src):
    out.append(src); return orig(self, src)
cc.PTXCompiler.compile = wrap
orig_call = ops_null.NullProgram.__call__
def call(self, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), **kw):
    launches[self.name] = list(local_size)
    return orig_call(self, *bufs, global_size=global_size, local_size=local_size, **kw)
ops_null.NullProgram.__call__ = call
from tinygrad import Tensor, dtypes
a = Tensor.empty(256, 256, dtype=dtypes.half); b = Tensor.empty(256, 256, dtype=dtypes.half)
(a @ b).realize()
src = out[0].replace(".version VERSION", ".version 7.5").replace(".target TARGET", ".target sm_80")
open(sys.argv[1], "w").write(src)
print(json.dumps(launches))
'''


def test_tinygrad_tensor_core_matmul(tmp_path):
    pytest.importorskip("tinygrad")
    import json
    import sys

    script = tmp_path / "gen.py"
    script.write_text(TINYGRAD_SCRIPT)
    ptx = tmp_path / "tg.ptx"
    env = {k: v for k, v in os.environ.items() if k not in ("DEV", "CUDA", "PTX")}
    try:
        p = subprocess.run([sys.executable, str(script), str(ptx)], capture_output=True, text=True, timeout=600,
                           env=env)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.skip("tinygrad took too long to render")
    if p.returncode != 0 or not ptx.is_file():
        pytest.skip(f"tinygrad could not render PTX here: {p.stderr.strip().splitlines()[-1:] or p.returncode}")
    launches = json.loads(p.stdout.strip().splitlines()[-1])
    (name, local), = launches.items()
    block = tuple((list(local) + [1, 1, 1])[:3])
    f = _facts(ptx, block=block)[name]
    mma = [v for v in f.operands if "mma.sync" in v.op_desc]
    assert mma, "tinygrad's tensor-core matmul renders mma.sync"
    staged = [v for v in mma if v.stageable]
    assert staged, [v.reason for v in mma][:3]
    for v in staged:
        assert v.depth == 2 and v.box.injective and v.box.dense and v.tile_bytes >= 16
