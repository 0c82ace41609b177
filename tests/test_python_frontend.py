"""The Numba Python front end: kernels found under any alias, lowered to the IR
the analyses expect (canonical loops, byte addresses, origins of inlined
code), TL001/TL002 where the file cannot be read or a construct is not
modelled."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from conftest import ACCEPTANCE

from tolk_lint.frontends.python import parse_python
from tolk_lint.ir import Kernel, Module, Opcode, dump_kernel
from tolk_lint.ir.cfg import cfg_of


def lower(src: str, path: str = "k.py") -> Module:
    return parse_python(textwrap.dedent(src), path)


def kernel(mod: Module, name: str | None = None) -> Kernel:
    ks = [k for k in mod.kernels if name is None or k.name == name]
    assert ks, f"no kernel {name!r} in {[k.name for k in mod.kernels]}"
    return ks[0]


def ops(k: Kernel, op: Opcode) -> list:
    return [i for i in k.instrs() if i.op is op]


def codes(mod: Module) -> list[str]:
    return [d.code for d in mod.diagnostics]


def only_tl002(mod: Module) -> list:
    return [d for d in mod.diagnostics if d.code == "TL002"]


def const_of(v):
    d = v.defn
    return d.attrs.get("value") if d is not None and d.op is Opcode.CONST else None


# -- the acceptance kernels ------------------------------------------------------------


def _acceptance_files() -> list[Path]:
    folder = ACCEPTANCE / "numba"
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


@pytest.mark.skipif(not (ACCEPTANCE / "numba").is_dir(), reason="shared/acceptance/numba is not present")
@pytest.mark.parametrize("path", _acceptance_files(), ids=lambda p: p.name)
def test_acceptance_lowers_cleanly(path: Path) -> None:
    text = path.read_text()
    mod = parse_python(text, str(path))
    assert [d for d in mod.diagnostics if d.code in ("TL001", "TL002")] == []
    # kernel names: every decorated def, and the manifest's
    defs = re.findall(r"^@(?:cuda\.jit|njit)[^\n]*\ndef (\w+)", text, flags=re.MULTILINE)
    assert sorted(k.name for k in mod.kernels) == sorted(defs)
    manifest = ACCEPTANCE / "manifest.json"
    if manifest.is_file():
        entries = [
            e for e in json.loads(manifest.read_text())["kernels"] if e["file"] == f"numba/{path.name}"
        ]
        assert sorted(k.name for k in mod.kernels) == sorted(e["kernel"] for e in entries)
        for e in entries:
            k = kernel(mod, e["kernel"])
            assert k.span.line == e["kernel_line"]
            if e["launch"]:
                assert k.launch.block == tuple(e["launch"]["block"])
            else:
                assert k.host and k.target == "cpu"
    # one BARRIER per cuda.syncthreads() in the source
    assert sum(len(ops(k, Opcode.BARRIER)) for k in mod.kernels) == text.count("syncthreads()")
    for k in mod.kernels:
        dump_kernel(k)  # printable
        for lp in cfg_of(k).loops:
            assert lp.exits, f"{k.name}: loop at {lp.header.name} has no exit"


@pytest.mark.skipif(not (ACCEPTANCE / "numba").is_dir(), reason="shared/acceptance/numba is not present")
def test_acceptance_sgemm_ir() -> None:
    path = ACCEPTANCE / "numba" / "sgemm_tiled.py"
    k = kernel(parse_python(path.read_text(), str(path)))
    assert k.buffers["sA"].shape == (16, 16) and k.buffers["sA"].space == "shared"
    assert k.buffers["sA"].dtype == "f32" and k.buffers["sA"].bytes == 1024
    loops = cfg_of(k).loops
    outer = next(lp for lp in loops if lp.depth == 1)
    (iv,) = outer.ivs
    assert iv.step == 16 and const_of(iv.start) == 0
    (ex,) = outer.exits
    assert ex.iv is iv and ex.cmp == "lt" and ex.bound.defn.attrs["name"] == "A.shape[1]"
    stores = [i for i in ops(k, Opcode.STORE) if i.attrs["space"] == "shared"]
    assert [s.span.line for s in stores] == [20, 21]
    assert all(len(s.attrs["index"]) == 2 for s in stores)
    assert {p.name: p.written for p in k.params} == {"A": False, "B": False, "C": True}


@pytest.mark.skipif(not (ACCEPTANCE / "numba").is_dir(), reason="shared/acceptance/numba is not present")
def test_acceptance_host_decode_ir() -> None:
    path = ACCEPTANCE / "numba" / "host_decode.py"
    k = kernel(parse_python(path.read_text(), str(path)))
    assert k.host and k.target == "cpu"
    cvts = [i for i in ops(k, Opcode.CVT) if i.attrs.get("fn") == "float"]
    assert len(cvts) == 1 and cvts[0].span.line == 17
    assert cvts[0].args[0].defn.op is Opcode.LOAD and cvts[0].args[0].defn.attrs["buffer"] == "Bq"
    loops = cfg_of(k).loops
    assert sorted(const_of(lp.exits[0].bound) for lp in loops) == [64, 128, 256]


# -- finding kernels ---------------------------------------------------------------------

ALIASES = """
    import numba
    import numba as nb
    import numba.cuda as cu
    from numba import cuda as nc
    from numba.cuda import jit, syncthreads as sync
    from numba import njit, jit as njit2

    @numba.cuda.jit
    def k1(a):
        numba.cuda.syncthreads()

    @nb.cuda.jit("void(float32[:])")
    def k2(a):
        nb.cuda.syncthreads()

    @cu.jit(fastmath=True)
    def k3(a):
        cu.syncthreads()

    @nc.jit
    def k4(a):
        t = nc.threadIdx.x
        sync()

    @jit
    def k5(a):
        sync()

    @njit
    def h1(a):
        a[0] = 1

    @numba.njit(cache=True, parallel=True)
    def h2(a):
        a[0] = 1

    @njit2(nopython=True)
    def h3(a):
        a[0] = 1

    @numba.jit(nopython=True)
    def h4(a):
        a[0] = 1

    def not_a_kernel(a):
        return a
"""


def test_aliases_find_every_kernel() -> None:
    mod = lower(ALIASES)
    assert codes(mod) == []
    names = [k.name for k in mod.kernels]
    assert names == ["k1", "k2", "k3", "k4", "k5", "h1", "h2", "h3", "h4"]
    for k in mod.kernels[:5]:
        assert not k.host and k.target == "sm_80"
        assert [i.attrs["kind"] for i in ops(k, Opcode.BARRIER)] == ["sync"]
    for k in mod.kernels[5:]:
        assert k.host and k.target == "cpu"
    specials = [i.attrs["name"] for i in ops(kernel(mod, "k4"), Opcode.SPECIAL)]
    assert specials == ["tid.x"]


def test_fast_skip_without_numba() -> None:
    mod = parse_python("def f(x):\n    return x +\n", "plain.py")
    assert mod.kernels == [] and mod.diagnostics == [] and mod.language == "python"


def test_call_form_kernels_and_device_functions() -> None:
    mod = lower(
        """
        from numba import cuda

        def body(a):
            a[cuda.threadIdx.x] = 1.0

        def scale(x):
            cuda.syncthreads()
            return x * 2

        k = cuda.jit(body)
        k2 = cuda.jit("void(float32[:])")(body)
        twice = cuda.jit(device=True)(scale)

        @cuda.jit
        def user(a):
            a[0] = twice(a[1])
        """
    )
    assert codes(mod) == []
    assert [k.name for k in mod.kernels] == ["body", "user"]
    assert list(mod.functions) == ["scale"] and not mod.functions["scale"].is_entry
    user = kernel(mod, "user")
    assert len(ops(user, Opcode.BARRIER)) == 1  # inlined


def test_factory_kernels() -> None:
    mod = lower(
        """
        from numba import cuda, float32

        def make(n, dev):
            TILE = 32

            @cuda.jit(device=True)
            def twice(x):
                return x * 2

            @cuda.jit
            def inner(a):
                s = cuda.shared.array(TILE, float32)
                s[cuda.threadIdx.x] = twice(a[0])
                cuda.syncthreads()
                a[1] = s[0] * n

            helper = cuda.jit(device=True)(dev)
            return inner

        def make2():
            def k(a):
                a[0] = 1
            return cuda.jit(k)
        """
    )
    assert [k.name for k in mod.kernels] == ["inner", "k"]
    inner = kernel(mod, "inner")
    assert inner.buffers["s"].shape == (32,)
    # `n` is a closure variable: frozen by Numba at compile time, a uniform PARAM, no TL002
    assert codes(mod) == []
    (p,) = [i for i in ops(inner, Opcode.PARAM) if i.attrs.get("global")]
    assert p.attrs["name"] == "n" and p.block is inner.entry


# -- module constants and shared arrays ------------------------------------------------------


def test_module_constants_and_reassignment() -> None:
    mod = lower(
        """
        import numba
        from numba import cuda, float32, types
        import numpy as np

        TPB = 16
        ROWS = TPB * 2
        TPB = 64

        @cuda.jit
        def k1(a):
            s1 = cuda.shared.array(TPB, float32)
            s2 = cuda.shared.array((ROWS, TPB + 1), dtype=numba.int32)
            s3 = cuda.shared.array(shape=(2, 3), dtype=types.float64)
            s4 = cuda.shared.array(0, dtype=np.float32)
            s5 = cuda.local.array(4, np.uint8)
            s6 = cuda.shared.array(TPB // 2, float32, alignment=16)
            a[0] = s1[0] + s2[1, 2] + s3[1][2] + s4[0] + s5[3] + s6[0]

        TPB = 128

        @cuda.jit
        def k2(a):
            s = cuda.shared.array(TPB, float32)
            s[0] = a[0]
        """
    )
    assert codes(mod) == []
    b = kernel(mod, "k1").buffers
    assert (b["s1"].shape, b["s1"].dtype) == ((64,), "f32")
    assert (b["s2"].shape, b["s2"].dtype) == ((32, 65), "s32")
    assert (b["s3"].shape, b["s3"].dtype) == ((2, 3), "f64")
    assert b["s4"].dynamic and b["s4"].shape == (None,) and b["s4"].space == "shared"
    assert (b["s5"].space, b["s5"].shape, b["s5"].dtype) == ("local", (4,), "u8")
    assert b["s6"].shape == (32,) and b["s6"].align == 16
    assert kernel(mod, "k2").buffers["s"].shape == (128,)
    # byte addresses: s2[1, 2] -> ADDR + (1 * 65 + 2) * 4, folded; s3[1][2] -> (1 * 3 + 2) * 8
    k1 = kernel(mod, "k1")
    loads = {i.attrs["buffer"]: i for i in ops(k1, Opcode.LOAD)}
    addr = loads["s2"].args[0].defn
    assert addr.op is Opcode.ADD and addr.args[0].defn.op is Opcode.ADDR and const_of(addr.args[1]) == 268
    assert const_of(loads["s3"].args[0].defn.args[1]) == 40
    assert [const_of(v) for v in loads["s3"].attrs["index"]] == [1, 2]


def test_buffer_names_made_unique() -> None:
    mod = lower(
        """
        from numba import cuda, float32

        @cuda.jit(device=True)
        def stage(x):
            s = cuda.shared.array(8, float32)
            s[0] = x
            return s[1]

        @cuda.jit
        def k(a):
            s = cuda.shared.array(8, float32)
            a[0] = stage(a[1]) + stage(a[2]) + s[0]
        """
    )
    assert sorted(kernel(mod).buffers) == ["s", "s.1", "s.2"]


def test_shared_slice_is_a_view() -> None:
    mod = lower(
        """
        from numba import cuda, float32

        @cuda.jit(device=True)
        def first(v):
            return v[0]

        @cuda.jit
        def k(a):
            s = cuda.shared.array(64, float32)
            t = cuda.threadIdx.x
            a[t] = first(s[t * 2:])
        """
    )
    assert codes(mod) == []
    (ld,) = [i for i in ops(kernel(mod), Opcode.LOAD) if i.attrs["buffer"] == "s"]
    (idx,) = ld.attrs["index"]
    assert idx.defn.op is Opcode.ADD  # 0 + t * 2: the slice's offset is part of the index


# -- the vocabulary ------------------------------------------------------------------------------


def test_grid_and_special_registers() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, n):
            i = cuda.grid(1)
            x, y = cuda.grid(2)
            gx, gy, gz = cuda.gridsize(3)
            pos = cuda.grid(2)
            a[i] = x + y + gx + pos[1] + cuda.laneid + cuda.warpsize + cuda.blockDim.z + cuda.gridDim.y
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    names = [i.attrs["name"] for i in ops(k, Opcode.SPECIAL)]
    assert names[:3] == ["ctaid.x", "ntid.x", "tid.x"]
    assert {"tid.y", "ctaid.y", "nctaid.z", "laneid", "ntid.z", "nctaid.y"} <= set(names)
    # i = ctaid.x * ntid.x + tid.x
    st = next(iter(ops(k, Opcode.STORE)))
    i = st.attrs["index"][0]
    assert i.defn.op is Opcode.ADD and i.defn.args[1].defn.attrs["name"] == "tid.x"
    mul = i.defn.args[0].defn
    assert mul.op is Opcode.MUL and [a.defn.attrs["name"] for a in mul.args] == ["ctaid.x", "ntid.x"]
    # warpsize is the constant 32
    assert any(const_of(a) == 32 for ins in ops(k, Opcode.ADD) for a in ins.args)


def test_sync_warp_and_atomic_vocabulary() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, out):
            v = a[cuda.threadIdx.x]
            v = cuda.shfl_sync(0xffffffff, v, 0)
            v = cuda.shfl_up_sync(0xffffffff, v, 1)
            v = cuda.shfl_down_sync(0xffffffff, v, 1)
            v = cuda.shfl_xor_sync(0xffffffff, v, 1)
            p = cuda.all_sync(0xffffffff, v > 0) and cuda.any_sync(0xffffffff, v > 0)
            b = cuda.ballot_sync(0xffffffff, v > 0) + cuda.eq_sync(0xffffffff, v > 0)
            m = cuda.match_any_sync(0xffffffff, b)
            mm, ok = cuda.match_all_sync(0xffffffff, b)
            c = cuda.syncthreads_count(v > 0) + cuda.syncthreads_and(1) + cuda.syncthreads_or(0)
            cuda.syncwarp()
            cuda.syncwarp(mask=0xffff)
            cuda.threadfence()
            cuda.threadfence_block()
            cuda.threadfence_system()
            g = cuda.cg.this_grid()
            g.sync()
            cuda.cg.this_grid().sync()
            old = cuda.atomic.add(out, 0, v)
            cuda.atomic.max(out, (1,), v)
            cuda.atomic.cas(out, 2, old, v)
            cuda.atomic.compare_and_swap(out, old, v)
            am = cuda.activemask() + cuda.lanemask_lt()
            out[3] = cuda.selp(p, m, am) + c + mm + ok
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    sh = ops(k, Opcode.SHUFFLE)
    assert [i.attrs["mode"] for i in sh] == ["idx", "up", "down", "bfly"]
    assert [const_of(i.args[2]) for i in sh] == [31, 0, 31, 31]
    assert all(const_of(i.args[3]) == 0xFFFFFFFF for i in sh)
    # any_sync is the right operand of `and`: it runs under the short-circuit branch
    assert sorted(i.attrs["mode"] for i in ops(k, Opcode.VOTE)) == ["all", "any", "ballot", "uni"]
    (vote_any,) = [i for i in ops(k, Opcode.VOTE) if i.attrs["mode"] == "any"]
    assert cfg_of(k).control_deps(vote_any.block)
    assert [i.attrs["mode"] for i in ops(k, Opcode.MATCH)] == ["any", "all"]
    bars = ops(k, Opcode.BARRIER)
    assert [(i.attrs["kind"], i.attrs.get("op")) for i in bars] == [
        ("red", "popc"), ("red", "and"), ("red", "or"), ("grid", None), ("grid", None)
    ]  # fmt: skip
    assert [const_of(i.args[0]) for i in ops(k, Opcode.WARP_SYNC)] == [0xFFFFFFFF, 0xFFFF]
    assert [i.attrs["scope"] for i in ops(k, Opcode.FENCE)] == ["gl", "cta", "sys"]
    at = ops(k, Opcode.ATOMIC)
    assert [i.attrs["op"] for i in at] == ["add", "max", "cas", "cas"]
    assert all(i.attrs["space"] == "global" and i.attrs["buffer"] == "out" for i in at)
    assert [len(i.args) for i in at] == [2, 2, 3, 3]
    assert len(ops(k, Opcode.ACTIVEMASK)) == 1 and len(ops(k, Opcode.SELECT)) == 1
    assert k.param("out").written and not k.param("a").written


def test_pure_builtins_give_no_tl002() -> None:
    mod = lower(
        """
        import math
        import numpy as np
        from numba import cuda, float32, int32

        @cuda.jit
        def k(a, n):
            x = a[0]
            y = math.sqrt(x) + math.exp(x) + abs(x) + min(x, 1.0) + max(x, 2.0, 3.0)
            z = np.float32(n) + float(n) + int(x) + int32(x) + float32(1) + np.sqrt(x) + math.pi
            w = x ** 2 + n // 3 + n % 3 + len(a) + a.shape[0] + round(x) + cuda.fma(x, x, 1.0)
            h = cuda.fp16.hmul(x, x)
            a[1] = y + z + w + h + cuda.popc(n) + math.floor(x)
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    fns = {i.attrs["fn"] for i in ops(k, Opcode.PURE)}
    assert {"sqrt", "exp", "pow", "popc", "floor"} <= fns
    assert len(ops(k, Opcode.MIN)) == 1 and len(ops(k, Opcode.MAX)) == 2 and len(ops(k, Opcode.MAD)) == 1
    floors = [i for i in ops(k, Opcode.DIV) if i.attrs.get("floor")]
    assert len(floors) == 1 and [i.attrs.get("floor") for i in ops(k, Opcode.REM)] == [True]
    cvts = {i.attrs.get("fn") for i in ops(k, Opcode.CVT)}
    assert {"float32", "float", "int", "int32"} <= cvts
    # len(a) and a.shape[0] are the one uniform PARAM "a.shape[0]"
    shapes = [i for i in ops(k, Opcode.PARAM) if i.attrs["name"] == "a.shape[0]"]
    assert len(shapes) == 1 and shapes[0].block is k.entry


def test_tl002_once_per_kernel_per_construct() -> None:
    mod = lower(
        """
        from numba import cuda
        import math

        @cuda.jit
        def k(a):
            exec("x = 1")
            exec("y = 2")
            foo(a)
            foo(a)
            b = [i for i in range(3)]
            a[0] = math.sqrt(a[1]) + a.sum()

        @cuda.jit
        def k2(a):
            foo(a)
        """
    )
    ds = only_tl002(mod)
    assert [(d.kernel, d.span.line) for d in ds] == [("k", 7), ("k", 9), ("k", 11), ("k", 12), ("k2", 16)]
    assert all(d.severity.value == "warning" and d.name == "unsupported-construct" for d in ds)
    assert "is not modelled" in ds[0].message and "treated as varying and unknown" in ds[0].message
    assert ds[0].span.column == 5 and "exec" in ds[0].message
    k = kernel(mod, "k")
    assert len(ops(k, Opcode.OPAQUE)) >= 5


def test_invalid_python_is_tl001() -> None:
    mod = parse_python("from numba import cuda\n\n@cuda.jit\ndef k(a):\n    a[0] = = 1\n", "bad.py")
    assert mod.kernels == []
    (d,) = mod.diagnostics
    assert (d.code, d.name, d.severity.value) == ("TL001", "parse-error", "error")
    assert (d.span.line, d.span.column) == (5, 12)
    assert "found `=`" in d.message and "expected" in d.message
    mod = parse_python("import numba\ndef k(:\n  pass\n", "bad2.py")
    (d,) = mod.diagnostics
    assert d.code == "TL001" and d.span.line == 2


def test_never_raises_on_odd_input() -> None:
    for text in [
        "import numba\x00",
        "from numba import cuda\n" + "(" * 300 + ")" * 300,
        "numba = 1\n@numba\ndef f(): pass\n",
    ]:
        mod = parse_python(text, "odd.py")
        assert isinstance(mod, Module)


# -- control flow ---------------------------------------------------------------------------


def test_range_loops_are_canonical() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, n, s):
            for i in range(n):
                a[i] = 0
            for j in range(2, n, 4):
                a[j] = 1
            for m in range(10, 0, -2):
                a[m] = 2
            for q in range(0, n, s):
                a[q] = 3
        """
    )
    k = kernel(mod)
    loops = sorted(cfg_of(k).loops, key=lambda lp: lp.header.id)
    assert len(loops) == 4
    n = k.param("n").value
    (iv0,), (ex0,) = loops[0].ivs, loops[0].exits
    assert (const_of(iv0.start), iv0.step, ex0.cmp, ex0.bound) == (0, 1, "lt", n)
    (iv1,), (ex1,) = loops[1].ivs, loops[1].exits
    assert (const_of(iv1.start), iv1.step, ex1.cmp, ex1.bound) == (2, 4, "lt", n)
    (iv2,), (ex2,) = loops[2].ivs, loops[2].exits
    assert (const_of(iv2.start), iv2.step, ex2.cmp, const_of(ex2.bound)) == (10, -2, "gt", 0)
    # a step that is not a constant: ADD of the (loop-invariant) value
    nxt = next(iter(loops[3].header.phis())).args[1]
    assert nxt.defn.op is Opcode.ADD and nxt.defn.args[1] is k.param("s").value
    assert len(loops[3].exits) == 1 and loops[3].exits[0].bound is n
    for iv in loops[3].ivs:  # recognised when the CFG knows loop-invariant steps
        assert iv.step is None and getattr(iv, "step_value", None) is k.param("s").value
    for lp in loops:
        assert len(lp.latches) == 1 and lp.latches[0] is not lp.header


def test_while_break_continue_else() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, n):
            t = cuda.threadIdx.x
            v = a[t]
            while v > 1.0:
                v = v / 2
                if v < 0.25:
                    break
            for i in range(n):
                if i == t:
                    continue
                if a[i] < 0:
                    break
                cuda.syncthreads()
            else:
                a[0] = v
            a[t] = v
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    loops = cfg_of(k).loops
    assert len(loops) == 2
    wl = next(lp for lp in loops if not lp.ivs)
    assert len(wl.exits) == 2  # the test, and the break
    fl = next(lp for lp in loops if lp.ivs)
    assert len(fl.exits) == 2
    # continue jumps to the latch, which steps the induction variable
    (latch,) = fl.latches
    assert any(i.op is Opcode.ADD and i.args[0] is fl.ivs[0].phi for i in latch.instrs)
    assert len(latch.preds) == 2
    # the else block stores a[0] only when the loop ran out
    st = next(s for s in ops(k, Opcode.STORE) if s.span.line == 19)
    assert st.block in cfg_of(k).loops[0].exit_blocks or st.block.preds[0] in (fl.header,)


def test_early_return_and_divergent_barrier_structure() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, n):
            i = cuda.grid(1)
            if i >= n:
                return
            cuda.syncthreads()
            a[i] = 1
        """
    )
    k = kernel(mod)
    rets = ops(k, Opcode.RET)
    assert [r.span.line for r in rets] == [8, 10]
    (bar,) = ops(k, Opcode.BARRIER)
    (dep,) = cfg_of(k).control_deps(bar.block)
    cond = dep.terminator.args[0].defn
    assert cond.op is Opcode.CMP and cond.attrs["cmp"] == "ge"


def test_short_circuit_and_conditional_expressions() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a, n):
            t = cuda.threadIdx.x
            if t < n and a[t] > 0:
                a[t] = 0
            if 0 < t < 16 and t in (1, 3):
                a[0] = 1
            x = a[t] if t < n else 0.0
            y = 1 if t < n else 2
            a[1] = x + y
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    first_load = next(iter(ops(k, Opcode.LOAD)))
    # the load of a[t] runs only where t < n: it is control dependent on that branch
    (dep,) = cfg_of(k).control_deps(first_load.block)
    assert dep.terminator.args[0].defn.attrs["cmp"] == "lt"
    # pure operands: one AND/OR of comparisons, one branch
    ands = [i for i in ops(k, Opcode.AND) if i.span.line == 9]
    assert ands and ops(k, Opcode.OR)
    # side-effect-free arms: a SELECT; a load in an arm: control flow and a PHI
    assert [i.span.line for i in ops(k, Opcode.SELECT)] == [12]
    phis = [i for i in ops(k, Opcode.PHI) if i.result.type == "f32"]
    assert phis and all(a.type == "f32" for a in phis[0].args)


def test_assignment_forms() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a):
            x, y = a[0], a[1]
            x, y = y, x
            s: float = x - y
            a[2] += s
            a[3, ] = s
            a[4] = x
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    loads = ops(k, Opcode.LOAD)
    stores = ops(k, Opcode.STORE)
    l0, l1 = loads[0].result, loads[1].result
    sub = next(iter(ops(k, Opcode.SUB)))
    assert sub.args == [l1, l0]  # after the swap, s = a[1] - a[0]
    assert stores[-1].args[1] is l1
    aug = next(s for s in stores if s.span.line == 9)
    assert aug.args[1].defn.op is Opcode.ADD and aug.args[1].defn.args[0].defn.op is Opcode.LOAD
    assert aug.args[0] is aug.args[1].defn.args[0].defn.args[0]  # one address for load and store


def test_two_level_indexing_and_shapes() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(A, B):
            i, j = cuda.grid(2)
            if i < A.shape[0] and j < A.shape[1]:
                B[i][j] = A[i, j] * len(B)
        """
    )
    k = kernel(mod)
    assert k.param("A").ndim == 2 and k.param("B").ndim == 2 and k.param("B").written
    (ld,) = ops(k, Opcode.LOAD)
    (st,) = ops(k, Opcode.STORE)
    assert len(ld.attrs["index"]) == 2 and len(st.attrs["index"]) == 2
    assert ld.attrs["index"][0] is st.attrs["index"][0]
    shape_params = sorted(i.attrs["name"] for i in ops(k, Opcode.PARAM) if "shape" in i.attrs["name"])
    assert shape_params == ["A.shape[0]", "A.shape[1]", "B.shape[0]", "B.shape[1]"]
    assert all(i.block is k.entry for i in ops(k, Opcode.PARAM))


# -- device functions ---------------------------------------------------------------------------


DEVICE = """
from numba import cuda, float32


@cuda.jit(device=True)
def tile_sum(s, t):
    cuda.syncthreads()
    return s[t] + s[t + 1]


@cuda.jit(device=True)
def outer(s, t):
    return tile_sum(s, t) * 2


@cuda.jit
def k(a, n):
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    if t < n:
        a[t] = outer(s, t)
"""


def test_device_function_inlined_with_origins() -> None:
    mod = parse_python(DEVICE, "dev.py")
    assert codes(mod) == []
    k = kernel(mod, "k")
    (bar,) = ops(k, Opcode.BARRIER)
    assert bar.span.line == 7 and bar.text == "cuda.syncthreads()"
    chain = bar.origin.chain()
    assert [(o.path, o.line) for o in chain] == [("dev.py", 7), ("dev.py", 13), ("dev.py", 22)]
    assert bar.origin.outermost().line == 22 and bar.origin.outermost().column == 16
    # the barrier in the inlined function is under the kernel's `t < n`
    deps = cfg_of(k).control_deps(bar.block)
    assert any(d.terminator.args[0].defn.attrs.get("cmp") == "lt" for d in deps)
    # code of the kernel itself has no origin
    assert all(i.origin is None for i in k.instrs() if i.span is not None and i.span.line >= 17)
    # the device functions are functions of their own, parameters varying
    assert set(mod.functions) == {"tile_sum", "outer"}
    f = mod.functions["tile_sum"]
    assert not f.is_entry and [p.kind for p in f.params] == ["pointer", "scalar"]
    assert all(i.attrs.get("varying") for i in ops(f, Opcode.PARAM) if i.attrs["name"] in ("s", "t"))
    assert all(i.origin is None for i in f.instrs())
    assert f.returns and len([i for i in ops(f, Opcode.RET) if i.args]) == 1
    # the kernel's parameter `a` is an array (subscripted), `n` a scalar
    assert [(p.name, p.kind) for p in k.params] == [("a", "pointer"), ("n", "scalar")]


def test_recursion_stops_at_the_inlining_limit() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit(device=True)
        def walk(a, i):
            if a[i] > 0:
                return walk(a, i + 1)
            return i

        @cuda.jit(device=True)
        def fact(n):
            if n <= 1:
                return 1
            return n * fact(n - 1)

        @cuda.jit
        def k(a):
            a[0] = walk(a, 0) + fact(5)
        """
    )
    k = kernel(mod, "k")
    calls = ops(k, Opcode.CALL)
    assert len(calls) == 1 and calls[0].attrs["callee"] == "walk"
    assert calls[0].origin is not None and len(calls[0].origin.chain()) == 9
    ds = [d for d in only_tl002(mod) if d.kernel == "k"]
    assert len(ds) == 1 and ds[0].span.line == 7
    # fact(5) with a constant argument unrolls to 120 statically
    assert any(const_of(v) == 120 for ins in ops(k, Opcode.ADD) for v in ins.args)


def test_array_params_through_device_calls() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit(device=True)
        def put(dst, i, v):
            dst[i] = v

        @cuda.jit
        def k(out, x):
            put(out, cuda.threadIdx.x, x)
        """
    )
    k = kernel(mod)
    assert [(p.name, p.kind, p.written) for p in k.params] == [
        ("out", "pointer", True),
        ("x", "scalar", False),
    ]


# -- directives ------------------------------------------------------------------------------------


def test_launch_comments_and_assumptions() -> None:
    mod = lower(
        """
        from numba import cuda

        # tolk: launch block=(128,2,1)
        @cuda.jit
        def k1(a, n):
            # tolk: assume n % cuda.blockDim.x == 0
            # tolk: assume n > 0 and n < 4096
            a[0] = n

        # launch: block=(64,1,1)
        @cuda.jit
        def k2(a):  # tolk: assume a.shape[0] >= 64
            a[0] = 1

        @cuda.jit
        def k3(a):
            a[0] = 1
        """
    )
    assert codes(mod) == []
    k1, k2, k3 = mod.kernels
    assert k1.launch.block == (128, 2, 1) and k1.launch.source == "the `tolk: launch` comment at line 4"
    assert k2.launch.block == (64, 1, 1) and k3.launch.block is None
    assert len(k1.assumptions) == 2 and len(k2.assumptions) == 1
    a0 = k1.assumptions[0].defn
    assert a0.op is Opcode.CMP and a0.attrs["cmp"] == "eq" and a0.block is k1.entry
    rem = a0.args[0].defn
    assert rem.op is Opcode.REM and rem.args[0] is k1.param("n").value
    assert rem.args[1].defn.attrs["name"] == "ntid.x"
    assert k1.assumptions[1].defn.op is Opcode.AND  # no control flow in an assumption
    assert a0.span.line == 7 and all(v.type == "pred" for v in k1.assumptions)


# -- spans, params, host kernels ---------------------------------------------------------------------


def test_spans_point_at_the_source() -> None:
    src = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    if a[0] > 0:\n        cuda.syncthreads()  # here\n"
    mod = parse_python(src, "s.py")
    k = kernel(mod)
    assert (k.span.line, k.span.column) == (5, 1)
    (bar,) = ops(k, Opcode.BARRIER)
    assert (bar.span.path, bar.span.line, bar.span.column, bar.span.end_line, bar.span.end_column) == (
        "s.py", 7, 9, 7, 27
    )  # fmt: skip
    assert bar.text == "cuda.syncthreads()" and bar.origin is None


def test_unicode_columns_are_characters() -> None:
    src = "from numba import cuda\n\n@cuda.jit\ndef k(a):\n    é = 1; cuda.syncthreads()\n"
    (bar,) = ops(kernel(parse_python(src, "u.py")), Opcode.BARRIER)
    assert bar.span.column == 12


def test_params_kinds_and_signatures() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit("void(int32[:, :], float64[::1], int32, float32)")
        def k(a, b, n, g):
            a[0, 0] = n
            b[0] = g

        @cuda.jit
        def k2(a, n, g):
            x = a.shape[0] + n * g
        """
    )
    k = kernel(mod, "k")
    assert [(p.name, p.kind, p.dtype, p.ndim) for p in k.params] == [
        ("a", "pointer", "s32", 2), ("b", "pointer", "f64", 1), ("n", "scalar", "s32", 0), ("g", "scalar", "f32", 0)
    ]  # fmt: skip
    assert all(p.value is not None and p.value.defn.op is Opcode.PARAM for p in k.params)
    assert [i.attrs["name"] for i in ops(k, Opcode.PARAM)][:4] == ["a", "b", "n", "g"]
    (st,) = [s for s in ops(k, Opcode.STORE) if s.attrs["buffer"] == "a"]
    assert st.attrs["dtype"] == "s32" and st.args[1].type == "s32"
    k2 = kernel(mod, "k2")
    assert [(p.name, p.kind, p.dtype, p.written) for p in k2.params] == [
        ("a", "pointer", "f32", False), ("n", "scalar", "s64", False), ("g", "scalar", "s64", False)
    ]  # fmt: skip


def test_host_kernel_local_arrays() -> None:
    mod = lower(
        """
        import numpy as np
        from numba import njit, prange

        K = 32

        @njit(parallel=True)
        def h(A, out):
            panel = np.empty(K, dtype=np.float32)
            acc = np.zeros((2, K), np.float64)
            for k in prange(K):
                panel[k] = np.float32(A[k])
                acc[1, k] = panel[k]
            out[0] = acc[1, 3]
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    assert k.host and k.target == "cpu" and k.launch.block is None
    assert (k.buffers["panel"].space, k.buffers["panel"].shape, k.buffers["panel"].dtype) == (
        "local",
        (32,),
        "f32",
    )
    assert (k.buffers["acc"].shape, k.buffers["acc"].dtype) == ((2, 32), "f64")
    (lp,) = cfg_of(k).loops
    assert lp.ivs and const_of(lp.exits[0].bound) == 32


def test_unknown_iteration_is_an_opaque_loop() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a):
            for x in a.flat:
                cuda.syncthreads()
            for y in (1, 2, 4):
                a[y] = y
        """
    )
    ds = only_tl002(mod)
    assert len(ds) == 1 and ds[0].span.line == 6
    k = kernel(mod)
    assert len(cfg_of(k).loops) == 1  # the tuple loop is unrolled
    assert [const_of(s.attrs["index"][0]) for s in ops(k, Opcode.STORE)] == [1, 2, 4]


def test_long_constant_tuple_loop_reads_a_const_table() -> None:
    mod = lower(
        """
        from numba import cuda

        @cuda.jit
        def k(a):
            for s in (16, 8, 4, 2, 1, 16, 8, 4, 2, 1, 16, 8, 4, 2, 1, 16, 8, 4, 2, 1):
                a[s] += 1
        """
    )
    assert codes(mod) == []
    k = kernel(mod)
    (lp,) = cfg_of(k).loops
    assert lp.ivs and const_of(lp.exits[0].bound) == 20
    (table,) = [b for b in k.buffers.values() if b.space == "const"]
    assert table.shape == (20,) and table.init[:5] == [16, 8, 4, 2, 1]
    ld = next(i for i in ops(k, Opcode.LOAD) if i.attrs["buffer"] == table.name)
    assert ld.attrs["index"] == (lp.ivs[0].phi,)


def test_module_level_aliases_and_late_constants() -> None:
    mod = lower(
        """
        import numpy as np
        from numba import cuda

        sync = cuda.syncthreads
        DT = np.float64
        COEFFS = np.arange(4)

        @cuda.jit
        def k(a):
            s = cuda.shared.array(LATE, DT)
            c = cuda.const.array_like(COEFFS)
            s[0] = c[1]
            sync()
            a[0] = s[0] + later(a[1])

        LATE = 48

        @cuda.jit(device=True)
        def later(x):
            return x + 1
        """
    )
    k = kernel(mod)
    assert (k.buffers["s"].shape, k.buffers["s"].dtype) == ((48,), "f64")
    assert k.buffers["c"].space == "const" and k.buffers["c"].shape == (None,)
    assert len(ops(k, Opcode.BARRIER)) == 1
    # const.array_like of a module array is modelled (contents unknown, like any array's)
    assert codes(mod) == []
    # `later` is defined below the kernel: inlined all the same
    assert not ops(k, Opcode.CALL) and not ops(k, Opcode.OPAQUE)


def test_unknown_names_and_calls_of_free_variables_are_tl002() -> None:
    mod = lower(
        """
        from numba import cuda

        def make(fn, cfg):
            @cuda.jit
            def k(a):
                a[0] = fn(a[1]) + cfg.scale + undefined_name
            return k
        """
    )
    ds = only_tl002(mod)
    assert sorted(d.message.split("`")[1] for d in ds) == ["cfg", "fn(...)", "undefined_name"]
    assert all(d.span.line == 7 for d in ds)


# -- tolk_lint.runtime: the cp.async calls of the fixer's kernels ----------------------

RUNTIME_KERNEL = """
from numba import cuda, float32
{imports}

@cuda.jit
def k(A, out):
    s = cuda.shared.array((2, 64), float32)
    t = cuda.threadIdx.x
    {copy}(s, (1, t), A, t, 4)
    {zfill}(s, (0, t), A, (t if t < 3 else 0), 4, 4 if t < 3 else 0)
    {commit}()
    {wait}(0)
    cuda.syncthreads()
    out[t] = s[1, t] + s[0, t]
"""

RUNTIME_ALIASES = {
    "from-import": ("from tolk_lint.runtime import commit_group, cp_async, cp_async_zfill, wait_group",
                    "cp_async", "cp_async_zfill", "commit_group", "wait_group"),
    "renamed": ("from tolk_lint.runtime import commit_group as c, cp_async as cp, cp_async_zfill as z, "
                "wait_group as w", "cp", "z", "c", "w"),
    "module alias": ("import tolk_lint.runtime as rt", "rt.cp_async", "rt.cp_async_zfill", "rt.commit_group",
                     "rt.wait_group"),
    "dotted": ("import tolk_lint.runtime", "tolk_lint.runtime.cp_async", "tolk_lint.runtime.cp_async_zfill",
               "tolk_lint.runtime.commit_group", "tolk_lint.runtime.wait_group"),
    "its GPU module": ("from tolk_lint.runtime.intrinsics import commit_group, cp_async, cp_async_zfill, "
                       "wait_group", "cp_async", "cp_async_zfill", "commit_group", "wait_group"),
}  # fmt: skip


@pytest.mark.parametrize("form", list(RUNTIME_ALIASES))
def test_runtime_calls_are_the_irs_cp_async_ops_under_any_alias(form) -> None:
    imports, copy, zfill, commit, wait = RUNTIME_ALIASES[form]
    mod = lower(RUNTIME_KERNEL.format(imports=imports, copy=copy, zfill=zfill, commit=commit, wait=wait))
    assert codes(mod) == []
    k = kernel(mod)
    copies = ops(k, Opcode.CP_ASYNC)
    assert [(c.attrs["bytes"], c.attrs["cache"], c.attrs["buffer"], c.attrs["src_buffer"], len(c.args))
            for c in copies] == [(4, "ca", "s", "A", 2), (4, "ca", "s", "A", 3)]  # fmt: skip
    assert [len(c.attrs["index"]) for c in copies] == [2, 2]
    assert len(ops(k, Opcode.CP_ASYNC_COMMIT)) == 1
    assert [w.attrs["n"] for w in ops(k, Opcode.CP_ASYNC_WAIT)] == [0]
    assert not ops(k, Opcode.OPAQUE)


RUNTIME_REFUSED = {
    "computed size": "cp_async(s, t, A, t, n)",
    "size 2": "cp_async(s, t, A, t, 2)",
    "global destination": "cp_async(A, t, A, t, 4)",
    "shared source": "cp_async(s, t, s, t, 4)",
    "dtype mismatch": "cp_async(s, t, D, t, 4)",
    "a view, not an element": "cp_async(s2, t, A, t, 4)",
    "computed wait count": "wait_group(n)",
    "wait count 8": "wait_group(8)",
}


@pytest.mark.parametrize("case", list(RUNTIME_REFUSED))
def test_runtime_calls_it_cannot_read_are_tl002(case) -> None:
    src = f"""
    from numba import cuda, float32
    from tolk_lint.runtime import cp_async, wait_group

    @cuda.jit("void(float32[::1], float64[::1], int64)")
    def k(A, D, n):
        s = cuda.shared.array(64, float32)
        s2 = cuda.shared.array((2, 64), float32)
        t = cuda.threadIdx.x
        {RUNTIME_REFUSED[case]}
    """
    mod = lower(src)
    assert codes(mod) == ["TL002"], case
    assert not ops(kernel(mod), Opcode.CP_ASYNC) and not ops(kernel(mod), Opcode.CP_ASYNC_WAIT)


def test_the_reference_interpreter_runs_the_runtime_calls() -> None:
    """The IR the runtime's calls lower to is the PTX front end's: the
    interpreter (the property tests' ground truth) models its group queue,
    and sees the hazards of the pipeline without its wait."""
    from tolk_lint.ir.interp import run

    root = Path(__file__).resolve().parents[1] / "fixtures" / "numba" / "memory"
    found = {}
    for name in ("cp_async_pipeline_1d.py", "cp_async_pipeline_1d_no_wait.py"):
        k = kernel(parse_python((root / name).read_text(), name))
        r = run(k, block=(128, 1, 1), params={"ntiles": 3}, global_mem={"x": [float(i) for i in range(384)],
                                                                         "out": [0.0] * 128})  # fmt: skip
        assert r.ok
        found[name] = {h.kind for h in r.async_hazards}
    assert found["cp_async_pipeline_1d.py"] == set()
    assert {"read-before-wait", "copy-over-inflight"} <= found["cp_async_pipeline_1d_no_wait.py"]
