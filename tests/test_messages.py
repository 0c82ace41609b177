"""Messages a person can act on: one finding per source line and rule (the
copies nvcc unrolls are listed, not repeated), small witnesses, reason chains
that never loop, declared-here at the declaration, and SARIF / GitHub
annotations on the user's own CUDA C line.

The CUDA C kernels are compiled with ``nvcc -ptx -lineinfo -arch=sm_80`` at
test time (skipped when nvcc is missing); their answers follow from reading
them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

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
    d = Diagnostic("TL103", Severity.ERROR, "m", Span(str(tmp_path / "k.ptx"), 20, 2, 20, 9), origin=o)
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
