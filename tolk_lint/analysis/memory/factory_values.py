"""Findings that hold only for some values of a kernel factory's argument.

A kernel nested in a function (``def make_rolling_mean(window): ...
@cuda.jit def rolling_mean(values, out)``) reads that function's parameters
as constants: Numba freezes them when it compiles each kernel the factory
makes, as nvcc compiles a C++ template once per instantiation. When the
file does not say which values the factory is called with, the analysis
takes each such parameter (a ``PARAM`` with attrs ``factory``) as any value,
and a finding may hold only for some of them: a halo of ``window - 1``
staged into an array with room for 64 more elements is out of bounds for
``window > 65`` and in bounds below. The author chose the window; the
analysis cannot see the choice.

So a race or an out-of-bounds access that holds is asked once more with
every factory argument set to 1 (the smallest window, stride, radius or
count). When it no longer holds, the finding depends on the argument's value:
a warning that names the argument and the value of the witness, since an
uninstantiated template gives no code at all, and ``# tolk: assume`` in the
kernel's body states the range it is meant for. When it still holds, the
kernel is wrong whatever the factory is called with: it stays an error. One
more solver question, only in kernels that read a factory argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.ir.nodes import Instr
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.analysis.memory.query import Query

PIN_BUDGET = 4  # the pinned question is asked with rlimit / this


def factory_arguments(mf: MemoryCore) -> list[Instr]:
    """The kernel's PARAMs that are a factory's arguments, in order."""
    cache = mf.__dict__
    if "_factory_arguments" not in cache:
        cache["_factory_arguments"] = [
            ins for ins in mf.k.entry.instrs if ins.op is Opcode.PARAM and ins.attrs.get("factory")
        ]
    return cache["_factory_arguments"]


def needs_factory_value(mf: MemoryCore, q: Query, goal, threads: int) -> list[Instr]:
    """The factory arguments a finding needs other values of: ``goal`` (its
    question in ``q``, over ``threads`` threads) has no model once each of
    them is 1 (see the module's docstring). Empty when the kernel reads
    none, or when the finding still holds."""
    params = factory_arguments(mf)
    if not params or goal is None:
        return []
    z3 = q.z3
    enc = q.enc
    try:
        pins = []
        for p in params:
            for t in range(threads):
                x = enc._bv(enc.enc(p.result, t))
                pins.append(x == z3.BitVecVal(1, x.size()))
        v = mf.solve(q, z3.And(goal, *pins), mf.rlimit // PIN_BUDGET, fallback=False)
    except Exception:  # noqa: BLE001 - only the severity depends on it: an error it stays
        return []
    if v.status != "unsat":
        return []
    return params
