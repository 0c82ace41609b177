"""PTX's special registers (``%tid.x``, ``%ntid.y``, ``%laneid``, ``%clock64``,
``%envreg3``, ...): which names are one, and the type of the SPECIAL value a
read of one becomes (the IR's `SPECIAL_REGISTERS` says how each varies
between threads).

What it may import: `vocabulary` only.
"""

from __future__ import annotations

import re

from .vocabulary import int_like

SPECIAL_PREFIXES = (
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt", "clock", "clock64", "clock_hi",
    "globaltimer", "globaltimer_lo", "globaltimer_hi", "pm", "envreg", "dynamic_smem_size", "total_smem_size",
    "aggr_smem_size", "reserved_smem_offset", "current_graph_exec", "is_explicit_cluster", "clusterid",
    "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank", "cluster_nctarank", "warpsize",
)  # fmt: skip
SPECIAL_RE = re.compile(
    r"%(?:" + "|".join(sorted(SPECIAL_PREFIXES, key=len, reverse=True)) + r")(?:\d+(?:_64)?|_\d+|_begin|_end)?(?:\.[xyz])?\Z"
)


def special_type(name: str, t: str | None) -> str:
    """The type of a read of special register ``name`` (without its ``%``)
    where the instruction expects ``t``: that type when it is an integer,
    else u64 for the 64-bit registers and u32 for the others."""
    return t if int_like(t) else ("u64" if "64" in name else "u32")
