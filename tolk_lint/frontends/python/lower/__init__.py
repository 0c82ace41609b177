"""Lowering one Python kernel (its statements and expressions) to the IR.

The walk is over the stdlib `ast` tree; SSA form comes from `ir.Builder`
(variables are written and read by name, blocks sealed as soon as their
predecessors are known: a loop header after its back edge).

One class, `Lowerer`, does the walk. It is assembled here from one mixin
per part of the language, each in its own module; a mixin's methods run on
the assembled lowerer and reach the other parts through ``self``
(``self.expr``, ``self.suite``, ``self.bind``), so no mixin imports another
mixin's class.
Read top to bottom:

- `values`: what an expression lowers to (``LV``): an SSA `Value` or a
  compile-time thing kept symbolic (`PyConst`, `TupleLV`, `ArrayRef`, ...).
- `context`: what the kernels of one file share (`ModuleCtx`) and one
  function being lowered, the kernel or an inlined call (`Frame`).
- `limits`: the bounds on the work lowering one kernel may do.
- `ssa`: the two fixes this front end needs of `ir.Builder`.
- `core`: the lowerer's state, instruction emission, TL002 reports.
- `kernel`: one kernel from its ``def``: parameters, launch comment,
  ``# tolk: assume`` lines, the entry and body blocks.
- `environment`: variables and names (statics beside the SSA variables,
  globals, qualified names, ``cuda.threadIdx.x``).
- `conversion`: Python/Numba typing: constants, promotion, conversions.
- `statements`: assignments, ``if``, ``return`` and the other statements.
- `loops`: ``while`` and ``for`` (the canonical range loop, unrolled and
  table loops), ``break`` and ``continue``.
- `iteration`: ``for`` over ``enumerate`` and ``zip`` (index loops).
- `expressions`: the expression dispatch; names, attributes, tuples.
- `operators`: arithmetic, unary operators and comparisons.
- `conditions`: branch conditions, ``and``/``or``, ``x if c else y``.
- `arrays`: subscripts, byte addresses, views, stores, new buffers.
- `calls`: what a call is a call of, and the opaque fallbacks.
- `intrinsics`: ``numba.cuda`` (thread indices, barriers, warp operations,
  atomics, shared/local arrays).
- `async_copy`: ``tolk_lint.runtime`` (cp.async, its commit and wait groups).
- `library`: ``math``, NumPy and the Python builtins.
- `inlining`: calls of the file's device functions.

Imports: this ``__init__`` imports every mixin (and nothing in the package
imports it back); the mixins import only the layers listed above them
(`values`, `context`, `limits`, `ssa`, and `conversion`'s type helpers), the
rest of the front end (`finder`, `vocabulary`, `consts`) and `tolk_lint.ir`.
"""

from __future__ import annotations

from tolk_lint.frontends.python.finder import FuncInfo
from tolk_lint.frontends.python.lower.arrays import ArrayAccess
from tolk_lint.frontends.python.lower.async_copy import AsyncCopies
from tolk_lint.frontends.python.lower.calls import Calls
from tolk_lint.frontends.python.lower.conditions import Conditions
from tolk_lint.frontends.python.lower.context import ModuleCtx
from tolk_lint.frontends.python.lower.conversion import Conversions
from tolk_lint.frontends.python.lower.core import LowererCore
from tolk_lint.frontends.python.lower.environment import Environment
from tolk_lint.frontends.python.lower.expressions import Expressions
from tolk_lint.frontends.python.lower.inlining import Inlining
from tolk_lint.frontends.python.lower.intrinsics import CudaIntrinsics
from tolk_lint.frontends.python.lower.iteration import Iteration
from tolk_lint.frontends.python.lower.kernel import KernelLowering
from tolk_lint.frontends.python.lower.library import LibraryCalls
from tolk_lint.frontends.python.lower.loops import Loops
from tolk_lint.frontends.python.lower.operators import Operators
from tolk_lint.frontends.python.lower.statements import Statements
from tolk_lint.ir.nodes import Kernel

__all__ = ["Lowerer", "ModuleCtx", "lower_function"]


class Lowerer(
    KernelLowering,
    Statements,
    Loops,
    Iteration,
    Expressions,
    Operators,
    Conditions,
    ArrayAccess,
    Calls,
    CudaIntrinsics,
    AsyncCopies,
    LibraryCalls,
    Inlining,
    Environment,
    Conversions,
    LowererCore,
):
    """Lowers one function of the file: a kernel, or a device function on
    its own (``standalone_device``). Call `run` once."""


def lower_function(ctx: ModuleCtx, fi: FuncInfo, standalone_device: bool = False) -> Kernel:
    return Lowerer(ctx, fi, standalone_device).run()
