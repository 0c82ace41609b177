"""The one IR both front ends produce: see `nodes` (the data), `opcodes`
(the closed opcode set and its semantics tables), `builder` (SSA
construction), `cfg` (dominance, loops, control dependence), `inline`
(calls replaced by their callees' bodies) and `printer`."""

from tolk_lint.ir.builder import Builder
from tolk_lint.ir.nodes import (
    Block,
    Buffer,
    Instr,
    Kernel,
    LaunchBounds,
    Module,
    Origin,
    Param,
    Span,
    Value,
    is_float,
    is_signed,
    type_bits,
)
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.ir.printer import dump_kernel

__all__ = [
    "Block", "Buffer", "Builder", "Instr", "Kernel", "LaunchBounds", "Module", "Opcode", "Origin",
    "Param", "Span", "Value", "dump_kernel", "is_float", "is_signed", "type_bits",
]  # fmt: skip
