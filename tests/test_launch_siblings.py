"""Launches and callers in the C++ sources beside a kernel's own file.

A kernel defined in one `.cu` and launched from another that declares it
by prototype (NVIDIA's cdpBitonicSort: `big_bitonicsort` is launched only
from `cdpAdvancedQuicksort.cu`, under `if (len > 1024)`) is linted under
that launch; with no such file beside it, for any launch. The kernel
returns early for the threads past the length rounded up to a power of two
(`if (threadIdx.x >= len2) return;`), then syncs the block: for every
length over 1024 launched with 1024 threads no thread returns (clean); for
a length the launcher allows down to 1, threads 2.. return (TL101)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tolk_lint import lint_file
from tolk_lint.launch.choose import _launching_siblings

KERNEL = """\
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void big_sort(unsigned *data, unsigned *backbuf, unsigned int len)
{
    cg::thread_block cta = cg::this_thread_block();
    unsigned int len2 = 1;
    while (len2 < len)
        len2 <<= 1;
    if (threadIdx.x >= len2)
        return;
    if (threadIdx.x >= len)
        backbuf[threadIdx.x - len] = 0xffffffffu;
    cg::sync(cta);
    if (threadIdx.x < len)
        data[threadIdx.x] += backbuf[0];
}
"""

LAUNCHER = """\
__global__ void big_sort(unsigned *data, unsigned *backbuf, unsigned int len);

void sort_large(unsigned *data, unsigned *backbuf, unsigned int len)
{
    if (len > LIMIT) {
        big_sort<<<1, 1024>>>(data, backbuf, len);
    }
}
"""


def _lint(tmp_path, limit: int | None):
    cu = tmp_path / "bitonic.cu"
    cu.write_text(KERNEL)
    if limit is not None:
        (tmp_path / "quicksort.cu").write_text("#define LIMIT " + str(limit) + "\n" + LAUNCHER)
    ptx = tmp_path / "bitonic.ptx"
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True,
                   capture_output=True)  # fmt: skip
    return [d for d in lint_file(str(ptx)).diagnostics if d.severity.value == "error"]


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_kernel_launched_only_from_the_file_beside_it_is_linted_under_that_launch(tmp_path):
    assert _lint(tmp_path, 1024) == []
    found = _lint(tmp_path, 0)
    assert [d.code for d in found] and {d.code for d in found} == {"TL101"}, found


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_with_no_launch_beside_it_any_launch_is_assumed(tmp_path):
    assert {d.code for d in _lint(tmp_path, None)} == {"TL101"}


def test_only_files_that_launch_one_of_the_kernels_are_read(tmp_path):
    (tmp_path / "bitonic.cu").write_text(KERNEL)
    (tmp_path / "quicksort.cu").write_text("#define LIMIT 1024\n" + LAUNCHER)
    (tmp_path / "other.cu").write_text("__global__ void other(int *x);\nvoid f(int *x) { other<<<1, 32>>>(x); }\n")
    (tmp_path / "mentions.cu").write_text("// big_sort is launched elsewhere\nint big_sort_count;\n")
    (tmp_path / "spaced.cu").write_text("__global__ void big_sort(unsigned *, unsigned *, unsigned);\n"
                                        "void g(unsigned *d) { big_sort <<<2, 64>>>(d, d, 5u); }\n")
    # another program of the folder with a kernel of the same name: its own, not this one
    (tmp_path / "own.cu").write_text("__global__ void big_sort(unsigned *d, unsigned *b, unsigned n) { }\n"
                                     "void h(unsigned *d) { big_sort<<<1, 32>>>(d, d, 1u); }\n")
    got = sorted(p.rsplit("/", 1)[1] for p in _launching_siblings([str(tmp_path / "bitonic.cu")]))
    assert got == ["quicksort.cu", "spaced.cu"]


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_kernel_kept_in_a_c_header_is_linted_under_the_launch_of_its_includer(tmp_path):
    """NVIDIA's interval sample keeps its kernel in `cuda_interval.h`; the
    `.cu` that includes it launches it and has no device code, so nvcc's
    `.file` table names only the header. The includer's launch (1024
    threads, every length over 1024) is read: clean, where any launch
    gives TL101."""
    (tmp_path / "sort_kernel.h").write_text(KERNEL)
    main = tmp_path / "main.cu"
    main.write_text('#include "sort_kernel.h"\n#define LIMIT 1024\n' + LAUNCHER.split("\n", 2)[2])
    ptx = tmp_path / "main.ptx"
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(main)], check=True,
                   capture_output=True)  # fmt: skip
    assert "main.cu" not in ptx.read_text()  # the table names the header alone
    assert [d for d in lint_file(str(ptx)).diagnostics if d.severity.value == "error"] == []
    main.write_text('#include "sort_kernel.h"\n')  # no launch: any block
    assert {d.code for d in lint_file(str(ptx)).diagnostics} == {"TL101"}
