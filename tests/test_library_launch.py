"""CUB's and Thrust's kernels are linted under their `.maxntid` as the exact
block (`launch.library`): their dispatch launches each with exactly the
block of its `__launch_bounds__`. Any other kernel's `.maxntid` stays a bound."""

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
