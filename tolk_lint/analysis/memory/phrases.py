"""Phrases the memory rules (TL201-TL204) share: how a message names an
access, what it does to the memory, and what the solver said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.analysis.memory.accesses import instr_text
from tolk_lint.diagnostics import where
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.race_findings import Race
    from tolk_lint.ir.nodes import Instr

O = Opcode


def access_text(a: Access) -> str:
    """How a message names the access it points at: the PTX statement, or
    the Python line (a Python statement is not worth quoting: its line is)."""
    ins = a.instr
    if _python(a):
        return f"{_KIND[a.kind]} at {where(ins)}"
    return f"`{instr_text(ins)}`"


def access_at(a: Access) -> str:
    """How a message names an access it does not point at (the other side
    of a race): the PTX statement and which file's line it is (``line 88 of
    matrixMul.cu``, or ``PTX line 57`` without ``.loc``), or the Python line."""
    if _python(a):
        return access_text(a)
    return f"`{instr_text(a.instr)}` at {where(a.instr)}"


_KIND = {"read": "the load", "write": "the store", "atomic": "the atomic", "copy": "the async copy"}


def _python(a: Access) -> bool:
    k = a.instr.block.kernel if a.instr.block is not None else None
    return k is not None and k.language == "python"


def verb(a: Access) -> str:
    """What the access does to the memory, as a message's verb."""
    if a.instr.op is O.WMMA_LOAD:
        return "loads a fragment from"
    if a.instr.op is O.WMMA_STORE:
        return "stores a fragment into"
    return {"read": "reads", "write": "writes", "atomic": "atomically updates", "copy": "copies into"}[a.kind]


def solver_note(r: Race) -> str:
    """The end of a race's message: its witness, or that the solver gave up."""
    if r.solver == "unknown":
        return (f"; the solver gave up ({r.reason or 'resource limit'}) before proving the two accesses apart "
                "or finding two threads that meet, so the pair is reported as a warning: the kernel is not "
                "known to be free of this race")  # fmt: skip
    if r.witness and r.witness.get("description"):
        return f"; for example {r.witness['description']}"
    return ""


def same_value_note() -> str:
    """Why two unordered stores of one value are a warning (TL201)."""
    return ("; both threads store the same value, so the word ends with that value whichever store lands last: "
            "a warning, not an error, though CUDA's memory model still calls it a data race (an atomic store, "
            "or one thread storing, says it is meant)")  # fmt: skip


def large_count_note(load: Instr) -> str:
    """Why a finding that needs a loop bounded by a loaded count to run long
    is a warning (`loaded_counts.needs_large_count`)."""
    return (f"; it needs a loop whose bound is read from shared memory ({access_text_of(load)}) to run more trips "
            "than a count of the block's threads or of a shared array's elements allows: a warning, not an error, "
            "since the analysis takes that count as any value and does not follow the algorithm that computes it")  # fmt: skip


def huge_grid_note() -> str:
    """Why a finding that needs a grid of 2**31 threads or more along x is a
    warning (`grid_size.needs_huge_grid`)."""
    return ("; it needs a grid of 2**31 threads or more along x, where `gridDim.x * blockDim.x` overflows a "
            "32-bit int: a warning, not an error, since the grid is not read from the host and code that indexes "
            "its threads with an int assumes fewer")  # fmt: skip


def factory_value_note(params: list[Instr]) -> str:
    """Why a finding that holds only for some values of a kernel factory's
    arguments is a warning (`factory_values.needs_factory_value`)."""
    names = ", ".join(f"`{p.attrs['name']}`" for p in params)
    factories = ", ".join(dict.fromkeys(f"`{p.attrs['factory']}`" for p in params))
    one = len(params) == 1
    return (f"; it holds only for some values of {names}, {'an argument' if one else 'arguments'} of {factories} "
            f"that the kernel reads as {'a constant' if one else 'constants'} (not when {'it is' if one else 'each is'} "
            "1), and no call in this file gives the value: a warning, not an error; a `# tolk: assume` line in the "
            "kernel's body states the values it is made for")  # fmt: skip


def shared_data_note(load: Instr, both: bool) -> str:
    """Why a finding whose address is computed from a loaded value is a
    warning: the loaded values are taken as any values (`MemoryCore.shared_data_of`)."""
    if both:
        return (f"; both addresses are computed from values loaded from shared memory ({access_text_of(load)}), "
                "which the analysis takes as any values: a warning, not an error, since ranks, offsets and counts "
                "that other threads computed are kept apart by the algorithm, which it does not follow")  # fmt: skip
    if load.attrs.get("space") == "shared":
        return (f"; the index is computed from a value loaded from shared memory ({access_text_of(load)}), which "
                "the analysis takes as any value: a warning, not an error, since offsets and counts that other "
                "threads computed are kept in range by the algorithm, which it does not follow")  # fmt: skip
    return (f"; the index is computed from a value loaded from memory ({access_text_of(load)}), which the analysis "
            "takes as any value: a warning, not an error, since it is in bounds when the data are (an index "
            "array's entries, a histogram's 8-bit samples)")  # fmt: skip


def access_text_of(ins: Instr) -> str:
    """An instruction as a message names it, with where it is."""
    k = ins.block.kernel if ins.block is not None else None
    if k is not None and k.language == "python":
        return f"the load at {where(ins)}"
    return f"`{instr_text(ins)}` at {where(ins)}"
