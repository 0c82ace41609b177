"""CUB's and Thrust's kernels are linted under their `.maxntid` as the exact
block (`launch.library`): their dispatch launches each with exactly the
block of its `__launch_bounds__`. Any other kernel's `.maxntid` stays a bound.
A CUB kernel's errors whose every line is in the library's headers are
warnings; one with a line of the user's own (an inlined functor) stays an error."""

from __future__ import annotations

from pathlib import Path

from tolk_lint import lint_text
from tolk_lint.launch.library import nested_name

PTX = (Path(__file__).parent / "data" / "cub_shift_kernel.ptx").read_text()


def test_nested_names_are_read_up_to_the_template_arguments():
    name = "_ZN3cub17CUB_300001_SM_8006detail10radix_sort29DeviceRadixSortOnesweepKernelINS1_5radix10policy_hubIiNS0_"
    assert nested_name(name) == ["cub", "CUB_300001_SM_800", "detail", "radix_sort", "DeviceRadixSortOnesweepKernel"]
    assert nested_name("_ZN6thrust23THRUST_300001_SM_800_NS8cuda_cub4core13_kernel_agentINS")[0] == "thrust"
    assert nested_name("_Z4scanPfS_i") == [] and nested_name("reduce") == []


def test_a_cub_kernel_is_linted_under_its_launch_bounds():
    (race,) = lint_text(PTX, "cub.ptx").diagnostics
    assert race.code == "TL201"
    assert "under the launch block=(128,1,1) from .maxntid 128,1,1 (`cub::ShiftKernel`" in race.message
    assert race.data["launch"][0]["kind"] == "library"


def test_the_same_kernel_outside_cub_keeps_its_bound():
    text = PTX.replace("_ZN3cub6detail11ShiftKernelEPf", "_ZN4mine6detail11ShiftKernelEPf")
    (race,) = lint_text(text, "mine.ptx").diagnostics
    assert "assuming a block of at most 128 threads" in race.message


def test_a_cub_kernel_without_launch_bounds_gets_no_shape():
    text = PTX.replace(".maxntid 128, 1, 1\n", "")
    diags = lint_text(text, "cub.ptx").diagnostics
    race = next(d for d in diags if d.code == "TL201")
    assert all(s["kind"] != "library" for s in race.data["launch"])


def _with_lines(text: str, name: str, path: str) -> str:
    """The kernel with its accesses' `.loc` in ``path`` (a CUB header, or the user's file)."""
    text = text.replace("_ZN3cub6detail11ShiftKernelEPf", name)
    text = text.replace("\tst.shared.f32 \t[%r4+4], %f1;", "\t.loc\t1 40 5\n\tst.shared.f32 \t[%r4+4], %f1;")
    text = text.replace("\tld.shared.f32 \t%f2, [%r4];", "\t.loc\t1 41 5\n\tld.shared.f32 \t%f2, [%r4];")
    return text + f'\n.file 1 "{path}"\n'


def test_a_cub_kernels_own_finding_in_its_headers_is_a_warning():
    header = "/usr/local/cuda/include/cccl/cub/agent/agent_shift.cuh"
    (race,) = lint_text(_with_lines(PTX, "_ZN3cub6detail11ShiftKernelEPf", header), "cub.ptx").diagnostics
    assert race.code == "TL201" and race.severity.value == "warning" and race.data["library"] is True
    assert "in the library's own code: `cub::ShiftKernel` is CUB's kernel" in race.message


def test_a_cub_kernel_with_a_line_of_the_users_stays_an_error():
    (race,) = lint_text(_with_lines(PTX, "_ZN3cub6detail11ShiftKernelEPf", "/home/me/shift.cu"), "cub.ptx").diagnostics
    assert race.severity.value == "error" and "library" not in race.data


def test_a_users_kernel_in_cub_headers_stays_an_error():
    header = "/usr/local/cuda/include/cccl/cub/agent/agent_shift.cuh"
    (race,) = lint_text(_with_lines(PTX, "_ZN4mine6detail11ShiftKernelEPf", header), "mine.ptx").diagnostics
    assert race.severity.value == "error"
