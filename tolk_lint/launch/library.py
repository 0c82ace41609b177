"""CUB's and Thrust's kernels: the launch is exactly their ``__launch_bounds__``.

CUB's device-wide algorithms (``cub::DeviceRadixSort``, ``DeviceReduce``,
``DeviceScan``, ``DeviceFor``, and Thrust's CUDA back end, which calls
them) declare each kernel ``__launch_bounds__(Policy::BLOCK_THREADS)`` and
launch it, from their dispatch code in the headers, with exactly that block:
the kernel's shared ``TempStorage``, its tiles and its warp counts are sized
for it, and no other block is ever used. The PTX states the bound as
``.maxntid N, 1, 1``; for an entry whose C++ name is in namespace ``cub`` or
``thrust`` it is the exact block, as Triton's ``.maxntid`` is for Triton
(`triton`). Without it (``DeviceRadixSortExclusiveSumKernel`` has no launch
bounds) there is no shape, and the analyses assume any block within 1024
threads, as for any kernel.

A finding in such a kernel whose every line is in the library's headers (no
frame of the user's own: a functor the user passed to ``thrust::transform``
is inlined at the user's line, and its findings stay as they are) is a
warning, not an error (`library_findings`): the kernel's parameters come
from the library's dispatch code, in the headers, which the analyses do not
read (CUB's onesweep radix sort is right for ``num_bits <= RADIX_BITS`` and
``begin_bit < end_bit``, which its dispatch passes), and the user can
neither see nor change that code. clang-tidy keeps its checks out of
non-user code for the same reason; here they are still shown.
"""

from __future__ import annotations

import dataclasses

from tolk_lint.diagnostics import Diagnostic, Severity, user_frame
from tolk_lint.ir.nodes import Kernel, Module
from tolk_lint.launch.shapes import LaunchShape, valid_block

NAMESPACES = ("cub", "thrust")


def library_shape(module: Module, k: Kernel) -> LaunchShape | None:
    """The exact block of a CUB or Thrust kernel, from its ``.maxntid``."""
    dims = tuple(k.launch.maxntid or ())
    if not dims or module.language != "ptx" or not k.name.startswith("_ZN"):
        return None
    parts = nested_name(k.name)
    if len(parts) < 2 or parts[0] not in NAMESPACES:
        return None
    block = (tuple(dims) + (1, 1, 1))[:3]
    if not valid_block(block):  # type: ignore[arg-type]
        return None
    words = ",".join(str(d) for d in block)
    return LaunchShape(block, f".maxntid {words} (`{parts[0]}::{parts[-1]}` is launched by "  # type: ignore[arg-type]
                       "its dispatch with exactly the block of its __launch_bounds__)", "library",
                       path=module.path, line=k.span.line if k.span else None)  # fmt: skip


def nested_name(mangled: str) -> list[str]:
    """The names that open a mangled nested name, up to its first template
    arguments: ``_ZN3cub17CUB_300001_SM_8006detail10radix_sort29DeviceRadixSortOnesweepKernelI...``
    is ``cub``, ``CUB_300001_SM_800``, ``detail``, ``radix_sort``,
    ``DeviceRadixSortOnesweepKernel`` (`mangled.read_entry` reads the whole
    name, and gives up on substitutions in the arguments CUB's names have)."""
    out: list[str] = []
    i = 3 if mangled.startswith("_ZN") else len(mangled)
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        out.append(mangled[j : j + n])
        i = j + n
    return out


def library_findings(k: Kernel, found: list[Diagnostic]) -> list[Diagnostic]:
    """``found`` with the errors of a CUB or Thrust kernel that lie wholly in
    the library's headers made warnings, each saying why."""
    parts = nested_name(k.name) if k.language == "ptx" else []
    if len(parts) < 2 or parts[0] not in NAMESPACES:
        return found
    library = "CUB" if parts[0] == "cub" else "Thrust"
    out = []
    for d in found:
        origins = [d.origin] + [r.origin for r in d.related if r.origin is not None]
        if d.severity is not Severity.ERROR or d.origin is None or any(user_frame(o) is not None for o in origins):
            out.append(d)
            continue
        note = (f" (in the library's own code: `{parts[0]}::{parts[-1]}` is {library}'s kernel and every line of "
                "this finding is in its headers: a warning, since the arguments its dispatch code passes it are "
                "not read)")  # fmt: skip
        out.append(dataclasses.replace(d, severity=Severity.WARNING, message=d.message + note,
                                       data={**d.data, "library": True}))  # fmt: skip
    return out
