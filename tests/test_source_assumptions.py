"""``// tolk: assume EXPR`` in a CUDA kernel's body (`launch.source_assumptions`):
the solver assumes it, for the PTX compiled from that source. Checked on a
barrier whose divergence depends on a parameter: `if (threadIdx.x < n)
__syncthreads();` under a block of 256 is TL101 unless every thread passes,
which `n >= 256` says and `n >= 255` does not."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tolk_lint import lint_file

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

KERNEL = """
#define WIDE 256
__global__ void __launch_bounds__(256) k(float *x, int n, unsigned m) {
    ASSUME
    if (threadIdx.x < n) __syncthreads();
    x[threadIdx.x] = 1.0f;
}
int main() { k<<<1, 256>>>(0, 0, 0); }
""".replace("k<<<1, 256>>>(0, 0, 0)", "dim3 b(256); k<<<1, b>>>(0, arg_n(), arg_m())")


def _lint(tmp_path, assume: str, settings=None):
    cu = tmp_path / "k.cu"
    cu.write_text(KERNEL.replace("ASSUME", assume).replace("int main()", "int arg_n(); unsigned arg_m();\nint main()"))
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, capture_output=True)
    return lint_file(str(ptx), settings).diagnostics


@pytest.mark.parametrize(
    ("assume", "codes"),
    [
        ("", ["TL101"]),
        ("// tolk: assume n >= WIDE", []),
        ("// tolk: assume n >= 255", ["TL101"]),
        ("// tolk: assume (n > 300 ? 1 : 0) || (-n <= -256 && !(n < 0))", []),
        ("// tolk: assume ((m << 2) >> 2) == m && n == (int)(m | 256)", ["TL002", "TL101"]),  # a cast: not read
        ("// tolk: assume n * 2 >= 512 && (m & (m - 1)) == 0 && m % 4 == 0", []),
        ("// tolk: assume n >= 1.5", ["TL002", "TL101"]),
        # one that nothing satisfies would make every question UNSAT: refused
        ("// tolk: assume n < 0 && n > 0", ["TL002", "TL101"]),
        ("// tolk: assume (1 << 70) != 0", ["TL002", "TL101"]),
    ],
)
def test_the_solver_assumes_what_the_comment_says(tmp_path, assume, codes):
    got = sorted(d.code for d in _lint(tmp_path, assume))
    assert got == sorted(codes)


def test_an_unreadable_assumption_names_its_line_and_why(tmp_path):
    (bad,) = [d for d in _lint(tmp_path, "// tolk: assume n >= WIDTH") if d.code == "TL002"]
    assert bad.origin is not None and bad.origin.path.endswith("k.cu") and bad.origin.line == 4
    assert "`WIDTH` is neither a parameter of the kernel nor a constant; it is ignored" in bad.message


def test_the_assumption_is_read_whatever_gives_the_block(tmp_path):
    from tolk_lint.config import Settings

    given = Settings(block=(256, 1, 1))
    assert [d.code for d in _lint(tmp_path, "// tolk: assume n >= WIDE", given)] == []
    assert [d.code for d in _lint(tmp_path, "", given)] == ["TL101"]
