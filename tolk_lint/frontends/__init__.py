"""The front ends: text in, `tolk_lint.ir.Module` out.

- `ptx`: NVIDIA PTX (a lark grammar for what the fast decoder cannot read),
  lowered into SSA with the `.loc` origin of every instruction;
- `python`: Numba Python, read with the standard library's `ast` (never
  imported, never run): kernels found by data flow, lowered into SSA.

A front end reports what it cannot read as TL001 and what the IR does not
model as TL002 with an opaque op. It imports the IR and the diagnostics,
nothing of the analyses or the rules.
"""
