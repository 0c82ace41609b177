"""Messages a person can act on: one finding per source line and rule (the
copies nvcc unrolls are listed, not repeated), small witnesses, reason chains
that never loop, declared-here at the declaration, and SARIF / GitHub
annotations on the user's own CUDA C line, and line numbers that say which
file's they are (``line 5 of k.cu``, ``PTX line 13``).

The CUDA C kernels are compiled with ``nvcc -ptx -lineinfo -arch=sm_80`` at
test time (skipped when nvcc is missing); their answers follow from reading
them."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tolk_lint.config import resolve_settings
from tolk_lint.diagnostics import Diagnostic, Severity, is_toolkit_path, user_frame
from tolk_lint.engine import LintResult, lint_file, lint_text
from tolk_lint.ir.nodes import Origin, Span
from tolk_lint.testing import compile_cuda

UNROLLED = """\
__global__ void unrolled(float *out, const float *in)
{
    __shared__ float tile[256];
    int t = threadIdx.x;
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        if (in[t * 8 + i] > 0.0f) {
            __syncthreads();
        }
        acc += in[t * 8 + i];
    }
    tile[t] = acc;
    __syncthreads();
    out[t] = tile[t];
}

void launch(float *out, const float *in)
{
    unrolled<<<1, 256>>>(out, in);
}
"""

OOB = """\
// a shared tile read one past its end

__global__ void oob(float *out, const float *in)
{
    int t = threadIdx.x;
    __shared__ float tile[64];
    tile[t] = in[t];
    __syncthreads();
    out[t] = tile[t + 1];
}

void launch(float *out, const float *in)
{
    oob<<<1, 64>>>(out, in);
}
"""

RACE = """\
__global__ void race(float *out, const float *in)
{
    __shared__ float buf[128];
    int t = threadIdx.x;
    buf[t] = in[t];
    out[t] = buf[(t + 1) % 128];
}
"""


def _ptx(tmp_path: Path, name: str, text: str) -> Path:
    cu = tmp_path / f"{name}.cu"
    cu.write_text(text)
    return compile_cuda(cu, "sm_80", str(tmp_path))


def _lint(path: Path) -> list[Diagnostic]:
    return list(lint_file(str(path)).diagnostics)


@pytest.mark.nvcc
def test_an_unrolled_divergent_barrier_is_one_finding_with_its_copies(tmp_path):
    ptx = _ptx(tmp_path, "unrolled", UNROLLED)
    tl101 = [d for d in _lint(ptx) if d.code == "TL101"]
    assert len(tl101) == 1, [d.span.line for d in tl101]
    d = tl101[0]
    assert d.origin.outermost().line == 9
    also = d.data["also_at"]
    assert len(also) == 7 and also == sorted(also) and d.span.line < also[0]
    ptx_lines = ptx.read_text().splitlines()
    assert all("bar.sync" in ptx_lines[n - 1] for n in also)
    # every output says so
    from tolk_lint.outputs import github, sarif, text

    res = LintResult(str(ptx), None, [d])
    assert "also at PTX lines " + ", ".join(map(str, also)) in text.render([res], show_source=False)
    assert "also at PTX lines" in github.render([res], root=str(tmp_path))
    [r] = sarif.sarif_log([res], root=str(tmp_path))["runs"][0]["results"]
    assert r["properties"]["data"]["also_at"] == also
    copies = [x for x in r["relatedLocations"] if "the same finding at PTX line" in x["message"]["text"]]
    assert [x["physicalLocation"]["region"]["startLine"] for x in copies] == also


@pytest.mark.nvcc
def test_a_witness_is_small(tmp_path):
    ptx = _ptx(tmp_path, "race", RACE)
    [d] = [d for d in _lint(ptx) if d.code == "TL201"]
    w = d.witness
    # two neighbours race: threads 0 and 1 (in either order) of a block of 2 are enough
    assert sorted(t[0] for t in w["threads"]) == [0, 1]
    assert all(t[1] == t[2] == 0 for t in w["threads"])
    assert tuple(w["block"]) == (2, 1, 1)


UNSIGNED_COUNT = """\
__global__ void halves(float *x, unsigned n)
{
    if (threadIdx.x < n) {
        x[threadIdx.x] *= 2.0f;
        __syncthreads();
    }
}
__global__ void halves_signed(float *x, int n)
{
    if (threadIdx.x + n < 16) {
        x[threadIdx.x] *= 2.0f;
        __syncthreads();
    }
}
"""


@pytest.mark.nvcc
def test_an_unsigned_parameter_is_shown_and_made_small_unsigned(tmp_path):
    # nvcc declares `int n` and `unsigned n` alike (`.param .u32`): the
    # witness reads the signedness from the CUDA source. `n` splits threads
    # 0 and 1 at n = 1 (unsigned), and at n = 15 or a small negative n (signed)
    ptx = _ptx(tmp_path, "unsigned", UNSIGNED_COUNT)
    found = {d.kernel: d for d in _lint(ptx) if d.code == "TL101"}
    assert found["_Z6halvesPfj"].witness["inputs"] == {"_Z6halvesPfj_param_1": 1}
    assert "n = 1" in found["_Z6halvesPfj"].message
    [n] = found["_Z13halves_signedPfi"].witness["inputs"].values()
    assert -16 < n <= 15


@pytest.mark.nvcc
def test_the_unrolled_witness_is_two_threads_of_a_block_of_two(tmp_path):
    ptx = _ptx(tmp_path, "unrolled", UNROLLED)
    [d] = [d for d in _lint(ptx) if d.code == "TL101"]
    threads = d.witness["threads"]
    assert all(0 <= x < 256 for t in threads for x in t)  # under the launch block=(256,1,1)
    assert sorted(t[0] for t in threads) == [0, 1]


def test_numba_witnesses_are_small_and_shapes_never_negative():
    src = textwrap.dedent("""\
        import numba
        from numba import cuda


        @cuda.jit
        def div(a):
            i = cuda.threadIdx.x
            if a[i] > 0:
                cuda.syncthreads()


        # tolk: launch block=(128,1,1)
        @cuda.jit
        def oob(a):
            tile = cuda.shared.array(64, dtype=numba.float32)
            i = cuda.threadIdx.x
            if i < a.shape[0]:
                tile[i] = a[i]
        """)
    diags = lint_text(src, "k.py").diagnostics
    [d101] = [d for d in diags if d.code == "TL101"]
    assert sorted(d101.witness["threads"]) == [(0, 0, 0), (1, 0, 0)]
    assert tuple(d101.witness["block"]) == (2, 1, 1)
    assert all(abs(v) <= 1 for v in d101.witness["inputs"].values())
    for d in diags:
        for name, v in ((d.witness or {}).get("inputs") or {}).items():
            if ".shape[" in name:
                assert 0 <= v < 1 << 31
    [d202] = [d for d in diags if d.code == "TL202"]
    # the smallest thread past the end, 64, with a.shape[0] just large enough to let it in
    assert d202.witness["threads"][0][0] == 64
    assert d202.witness["inputs"]["a.shape[0]"] == 65
    # declared here: the cuda.shared.array line
    [decl] = [r for r in d202.related if "declared here" in r.message]
    assert decl.span.line == 15


def test_a_reason_chain_never_loops():
    src = textwrap.dedent("""\
        from numba import cuda


        @cuda.jit
        def div(a):
            i = cuda.threadIdx.x
            if a[i] > 0:
                cuda.syncthreads()
        """)
    [d] = [d for d in lint_text(src, "k.py").diagnostics if d.code == "TL101"]
    notes = [r.message for r in d.related]
    assert len(notes) == len(set(notes))
    for m in notes:
        subject, _, rest = m.partition(" is ")
        assert not rest.endswith(f"from {subject}"), m  # `a[i]` is computed from `a[i]`
    assert any("tid.x" in m for m in notes)


LOOP_CARRIED = """\
__global__ void __launch_bounds__(128) carried(const int *__restrict__ a, int *__restrict__ out, int n)
{
    int v = threadIdx.x;
    for (int i = 0; i < n; ++i)
        v = v * 3 + a[i];
    if (v > 0)
        __syncthreads();
    out[threadIdx.x] = v;
}
"""


@pytest.mark.nvcc
def test_a_reason_chain_never_loops_through_a_ptx_loop(tmp_path):
    # nvcc's `%r17` for v is a phi of itself around the loop: the chain says
    # where it varies from (tid.x) once, and no register is computed from itself
    ptx = _ptx(tmp_path, "carried", LOOP_CARRIED)
    [d] = [d for d in _lint(ptx) if d.code == "TL101"]
    notes = [r.message for r in d.related]
    assert len(notes) == len(set(notes))
    for m in notes:
        subject, _, rest = m.partition(" is ")
        assert not rest.endswith(f"from {subject}"), m
        assert not re.search(r"(%\w+) is computed from \1\b", m), m
    assert any("tid.x" in m for m in notes)


@pytest.mark.nvcc
def test_declared_here_is_the_shared_declaration_in_the_cuda_source(tmp_path):
    ptx = _ptx(tmp_path, "oob", OOB)
    [d] = [d for d in _lint(ptx) if d.code == "TL202"]
    assert "`tile`" in d.message  # the C name, not `_ZZ3oobPfPKfE4tile`
    [decl] = [r for r in d.related if "declared here" in r.message]
    assert decl.origin.path.endswith("oob.cu")
    assert decl.origin.line == 6  # `__shared__ float tile[64];`, not the signature at line 3
    assert d.witness["threads"][0][0] == 63  # the last thread reads tile[64]


@pytest.mark.nvcc
def test_sarif_and_github_land_on_the_cuda_line(tmp_path):
    from tolk_lint.outputs import github, sarif

    ptx = _ptx(tmp_path, "oob", OOB)
    res = lint_file(str(ptx))
    [r] = sarif.sarif_log([res], root=str(tmp_path))["runs"][0]["results"]
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "oob.cu" and loc["region"]["startLine"] == 9
    first = r["relatedLocations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "oob.ptx"
    out = github.render([res], root=str(tmp_path))
    assert out.startswith("::error file=oob.cu,line=9,")
    assert "linted at: oob.ptx:" in out
    # without the .cu beside it, the PTX position stands
    (tmp_path / "oob.cu").unlink()
    [r] = sarif.sarif_log([res], root=str(tmp_path))["runs"][0]["results"]
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "oob.ptx"


def test_toolkit_headers_are_skipped(tmp_path):
    from tolk_lint.outputs import sarif

    assert is_toolkit_path("/usr/local/cuda-12.4/include/sm_30_intrinsics.hpp")
    assert is_toolkit_path("/opt/x/cub/block/block_reduce.cuh")
    assert not is_toolkit_path(str(tmp_path / "k.cu"))
    header = "/usr/local/cuda/include/cooperative_groups/details/sync.h"
    o = Origin(header, 120, 3, inlined_at=Origin("k.cu", 7, 5))
    assert user_frame(o).line == 7
    inner = Origin("k.cu", 7, 5, inlined_at=Origin(header, 9))
    assert user_frame(inner).line == 7
    (tmp_path / "k.cu").write_text("\n" * 10)
    (tmp_path / "k.ptx").write_text("\n" * 30)
    from tolk_lint.catalog import rule_by_code

    d = rule_by_code("TL103")().diagnostic(Span(str(tmp_path / "k.ptx"), 20, 2, 20, 9), "m", origin=o)
    [r] = sarif.sarif_log([LintResult(d.span.path, None, [d])], root=str(tmp_path))["runs"][0]["results"]
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k.cu"
    assert r["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert any(header.endswith(x["physicalLocation"]["artifactLocation"]["uri"].split("/")[-1])
               for x in r["relatedLocations"] if "physicalLocation" in x)


def test_merge_copies_keeps_findings_without_an_origin_and_different_arrays():
    from tolk_lint.copies import merge_copies

    def d(line, buffer=None, origin=True):
        return Diagnostic("TL201", Severity.ERROR, f"m{line}", Span("k.ptx", line, 1), kernel="k",
                          origin=Origin("k.cu", 5) if origin else None,
                          data={"buffer": buffer} if buffer else {})  # fmt: skip

    out = merge_copies([d(30, "sA"), d(10, "sA"), d(20, "sB"), d(40, origin=False), d(50, origin=False)])
    got = [(x.span.line, x.data.get("also_at")) for x in out]
    assert got == [(10, [30]), (20, None), (40, None), (50, None)]
    assert json.dumps(out[0].to_json())  # also_at is plain JSON


# -- which file's line a message names -----------------------------------------------------

LOOP_RACE = """\
__global__ void loop_war(const float *x, float *out, int n)
{
    __shared__ float s[128];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        s[t] = 2.0f * x[k * 128 + t];
        __syncthreads();
        acc += s[127 - t];
    }
    out[t] = acc;
}

void launch(const float *x, float *out, int n)
{
    loop_war<<<1, 128>>>(x, out, n);
}
"""

NO_LAUNCH = """\
__global__ void nolaunch(float *out, const float *in)
{
    __shared__ float buf[128];
    int t = threadIdx.x;
    buf[t] = in[t];
    __syncthreads();
    out[t] = buf[127 - t];
}
"""

HAND_RACE = """\
.version 8.0
.target sm_80
.address_size 64
// tolk: launch block=(128,1,1)
.visible .entry neighbour()
{
    .shared .align 4 .b8 s[512];
    .reg .b32 %r<9>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.s32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    add.s32 %r5, %r1, 1;
    and.b32 %r6, %r5, 127;
    shl.b32 %r7, %r6, 2;
    add.s32 %r8, %r3, %r7;
    ld.shared.u32 %r5, [%r8];
    ret;
}
"""

# "line 5" with nothing saying which file's: what the messages must no longer say about PTX
BARE_LINE = re.compile(r"(?<!PTX )\blines? \d+(?:, \d+)*(?!\d|, \d| of )")


def test_where_says_which_files_line():
    from types import SimpleNamespace

    from tolk_lint.diagnostics import where, where_lines

    cu = SimpleNamespace(span=Span("k.ptx", 40, 2), origin=Origin("/src/k.cu", 9, 5))
    cu2 = SimpleNamespace(span=Span("k.ptx", 52, 2), origin=Origin("/src/k.cu", 7, 5))
    ptx = SimpleNamespace(span=Span("k.ptx", 57, 2), origin=None)
    py = SimpleNamespace(span=Span("k.py", 12, 5), origin=None)
    assert where(cu) == "line 9 of k.cu"
    assert where(ptx) == "PTX line 57"
    assert where(py) == "line 12"
    assert where(None) == "?"
    assert where_lines([cu, cu2, ptx]) == "lines 7, 9 of k.cu and PTX line 57"
    # a toolkit header's frame is passed over for the user's line that reaches it
    header = SimpleNamespace(span=Span("k.ptx", 60, 2),
                             origin=Origin("/usr/local/cuda/include/sm_30_intrinsics.hpp", 120, 3,
                                           inlined_at=Origin("/src/k.cu", 11, 5)))  # fmt: skip
    assert where(header) == "line 11 of k.cu"


@pytest.mark.nvcc
def test_a_race_names_the_other_access_and_its_cuda_line(tmp_path):
    [d] = [d for d in _lint(_ptx(tmp_path, "race", RACE)) if d.code == "TL201"]
    assert "writes with `st.shared.f32 " in d.message and "at line 5 of race.cu," in d.message, d.message
    assert not BARE_LINE.search(d.message), d.message
    [d] = [d for d in _lint(_ptx(tmp_path, "loopwar", LOOP_RACE)) if d.code == "TL201"]
    # the trips of the witness name the loop by its line in the CUDA source
    assert re.search(r"trip \d+ of the loop at line \d+ of loopwar\.cu", d.witness["description"]), d.witness
    assert not BARE_LINE.search(d.message), d.message


def test_hand_written_ptx_names_ptx_lines(tmp_path):
    path = tmp_path / "hand.ptx"
    path.write_text(HAND_RACE)
    [d] = [d for d in _lint(path) if d.code == "TL201"]
    assert "writes with `st.shared.u32 [%r4], %r1` at PTX line 13," in d.message, d.message
    assert "comment at hand.ptx:4" in d.message, d.message


@pytest.mark.nvcc
def test_the_contract_names_the_cuda_lines_and_the_first_block_past_it(tmp_path):
    [d] = [d for d in _lint(_ptx(tmp_path, "nolaunch", NO_LAUNCH)) if d.code == "TL205"]
    assert "the shared or local accesses at lines 5, 7 of nolaunch.cu need it" in d.message, d.message
    assert not BARE_LINE.search(d.message), d.message
    assert [r.message.endswith("(for example a block of 129x1x1)") for r in d.related] == [True, True], d.related


def test_the_contract_examples_are_the_smallest_blocks_past_it():
    # a tiled matmul, 16x16: the solver's first blocks were 609x1x1 and 1x640x1
    path = Path(__file__).parent.parent / "fixtures" / "numba" / "launch" / "matmul_docs_no_call_site.py"
    [d] = [d for d in _lint(path) if d.code == "TL205"]
    blocks = [re.search(r"a block of (\d+)x(\d+)x(\d+)\)$", r.message) for r in d.related]
    assert blocks and all(b is not None for b in blocks), [r.message for r in d.related]
    assert {tuple(int(x) for x in b.groups()) for b in blocks} <= {(17, 1, 1), (1, 17, 1)}


def test_sarif_and_github_land_on_the_numba_line_a_ptx_loc_names(tmp_path):
    # numba-cuda's PTX names the `.py` it compiled in its `.file` table: with
    # that file beside the PTX, the annotation lands on the Python line
    from tolk_lint.outputs import github, sarif

    here = Path(__file__).resolve().parent.parent
    ptx = tmp_path / "numba_form_c_no_war_barrier.ptx"
    ptx.write_text((here / "fixtures/ptx/memory/numba_form_c_no_war_barrier.ptx").read_text())
    py = (here / "fixtures/fixer/numba/mutants/sgemm_form_c_no_war_barrier.py").read_text()
    (tmp_path / "sgemm_form_c_no_war_barrier.py").write_text(py)
    res = lint_file(str(ptx), settings=resolve_settings(block=(16, 16, 1)))
    results = sarif.sarif_log([res], root=str(tmp_path))["runs"][0]["results"]
    tl204 = [r for r in results if r["ruleId"] == "TL204"]
    assert tl204
    for r in tl204:  # each at one of the in-loop `cp_async(...)` lines of the .py
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "sgemm_form_c_no_war_barrier.py"
        assert "cp_async(" in py.splitlines()[loc["region"]["startLine"] - 1]
    assert github.render([res], root=str(tmp_path)).startswith("::error file=sgemm_form_c_no_war_barrier.py,line=")


@pytest.mark.nvcc
def test_a_collective_in_a_device_function_names_its_call(tmp_path):
    # reported at the collective, in the function, with the kernel's call of
    # it as a related location: inlined by nvcc, or kept as a `.func`
    src = Path(__file__).resolve().parent.parent / "fixtures/cuda/collectives/collective_in_device_function.cu"
    ptx = _ptx(tmp_path, "coll", src.read_text())
    lines = src.read_text().splitlines()
    found = {}
    for d in _lint(ptx):
        if d.code != "TL103":
            continue
        assert "__shfl_xor_sync" in lines[d.origin.line - 1]  # the collective's own line
        calls = [r for r in d.related if r.origin is not None and r.origin.path.endswith("coll.cu")
                 and "pair_sum" in lines[r.origin.line - 1] and "return" not in lines[r.origin.line - 1]]
        assert calls, [r.message for r in d.related]
        found[d.kernel] = calls[0].origin.line
    assert set(found) == {"pairs_odd_lanes_inlined", "pairs_odd_lanes_called"}
    assert found["pairs_odd_lanes_inlined"] == 30 and found["pairs_odd_lanes_called"] == 39


def test_a_files_witnesses_do_not_depend_on_the_other_files_in_the_run():
    # each file linted alone, then all in one run (in the other order): the
    # same findings with the same messages, witnesses included
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent / "fixtures/ptx/memory"
    files = [str(p) for p in sorted(root.glob("*.ptx"))[:5]]

    def run(paths: list[str]) -> dict[str, list]:
        out = subprocess.run([sys.executable, "-m", "tolk_lint", "check", "--no-cache", "-j", "1", "--output-format",
                              "json", "--exit-zero", *paths], capture_output=True, text=True, check=True).stdout
        by: dict[str, list] = {}
        for d in json.loads(out):
            by.setdefault(str(Path(d["path"]).resolve()), []).append((d["line"], d["code"], d["message"]))
        return {k: sorted(v) for k, v in by.items()}

    together = run(files[::-1])
    alone: dict[str, list] = {}
    for f in files:
        alone.update(run([f]))
    assert any("for example" in m for v in alone.values() for _l, _c, m in v)  # witnesses are compared
    assert together == alone


def test_a_branch_inside_a_device_function_is_named_by_its_own_line():
    # the `if` that decides the finding is in `finish` (line 6), which the
    # kernel calls at line 16: the message names both, not only the call
    src = textwrap.dedent(
        """\
        from numba import cuda, float32


        @cuda.jit(device=True)
        def finish(sm, tid):
            if tid < 2:
                sm[tid] += sm[tid + 2]
                cuda.syncwarp()


        @cuda.jit
        def k(out):
            sm = cuda.shared.array(4, float32)
            tid = cuda.threadIdx.x
            cuda.syncthreads()
            finish(sm, tid)
            out[0] = sm[0]
        """
    )
    [d] = [d for d in lint_text(src, "inlined.py").diagnostics if d.code == "TL103"]
    assert "the branch at line 6 (in a function called at line 16) on `tid < 2`" in d.message


RACE_IN_HELPERS = """\
__device__ float right_of(const float *s)
{
    return s[(threadIdx.x + 1) % 256];
}

__device__ void put(float *s, float v)
{
    s[threadIdx.x] = v;
}

__device__ void stage(float *s, const float *x, int i)
{
    s[threadIdx.x] = x[i];
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(256) helpers_race(const float *x, float *y, int n)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    put(s, x[i]);
    y[i] = right_of(s);
}

extern "C" __global__ void __launch_bounds__(256) helpers_barrier(const float *x, float *y, int n)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    stage(s, x, i);
    y[i] = s[255 - threadIdx.x];
}
"""


@pytest.mark.nvcc
def test_a_finding_inside_a_device_function_lands_on_its_line_with_the_call_as_a_note(tmp_path):
    # the race's read is line 3 (in `right_of`, called at 22), its write line 8
    # (in `put`, called at 21): JSON, SARIF, GitHub and the message all say so;
    # the divergent barrier inside `stage` stays at its call (line 30)
    from tolk_lint.outputs import github, sarif

    ptx = _ptx(tmp_path, "helpers", RACE_IN_HELPERS)
    res = lint_file(str(ptx), settings=resolve_settings(block=(256, 1, 1)))
    [race] = [d for d in res.diagnostics if d.code == "TL201"]
    assert race.to_json()["origin"]["line"] == 3
    assert "at line 8 of helpers.cu (in a function called at line 21)" in race.message
    notes = [(r["line"], r["message"]) for r in race.to_json()["related"]]
    assert notes[0] == (22, "called from here")
    [barrier] = [d for d in res.diagnostics if d.code == "TL101"]
    assert barrier.to_json()["origin"]["line"] == 30 and barrier.data["inside"][0]["line"] == 14
    results = sarif.sarif_log([res], root=str(tmp_path))["runs"][0]["results"]
    lines = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results}
    assert lines == {"TL201": 3, "TL101": 30}
    [tl201] = [r for r in results if r["ruleId"] == "TL201"]
    assert any(x["message"]["text"] == "called from here" and x["physicalLocation"]["region"]["startLine"] == 22
               for x in tl201["relatedLocations"])  # fmt: skip
    assert "::error file=helpers.cu,line=3," in github.render([res], root=str(tmp_path))


@pytest.mark.nvcc
def test_a_noqa_at_the_call_or_at_the_line_itself_silences_a_finding_inside_a_device_function(tmp_path):
    def codes(text: str) -> list[str]:
        (tmp_path / "helpers.ptx").unlink(missing_ok=True)
        ptx = _ptx(tmp_path, "helpers", text)
        return sorted(d.code for d in lint_file(str(ptx), settings=resolve_settings(block=(256, 1, 1))).diagnostics)

    assert codes(RACE_IN_HELPERS) == ["TL101", "TL201"]
    at_call = RACE_IN_HELPERS.replace("y[i] = right_of(s);", "y[i] = right_of(s);  // tolk: noqa: TL201")
    at_line = RACE_IN_HELPERS.replace("return s[(threadIdx.x + 1) % 256];",
                                      "return s[(threadIdx.x + 1) % 256];  // tolk: noqa: TL201")
    in_stage = RACE_IN_HELPERS.replace("    __syncthreads();\n", "    __syncthreads();  // tolk: noqa: TL101\n")
    assert codes(at_call) == ["TL101"] and codes(at_line) == ["TL101"] and codes(in_stage) == ["TL201"]


def test_a_python_finding_inside_a_device_function_names_its_call(tmp_path):
    from tolk_lint.outputs import text

    py = tmp_path / "helpers.py"
    py.write_text(textwrap.dedent("""\
        from numba import cuda, float32


        @cuda.jit(device=True)
        def right_of(s):
            return s[(cuda.threadIdx.x + 1) % 256]


        @cuda.jit(device=True)
        def put(s, v):
            s[cuda.threadIdx.x] = v


        @cuda.jit
        def k(x, y):
            s = cuda.shared.array(256, float32)
            i = cuda.grid(1)
            put(s, x[i])
            y[i] = right_of(s)
        """))
    res = lint_file(str(py), settings=resolve_settings(block=(256, 1, 1)))
    [d] = [d for d in res.diagnostics if d.code == "TL201"]
    assert d.span.line == 6
    assert "the load at line 6 (in a function called at line 19)" in d.message
    assert "the store at line 11 (in a function called at line 18)" in d.message
    out = text.render([res])
    assert "called from here" in out and "in source" not in out  # the Python line is the source line
