"""Loops whose trips are the same in every thread by arithmetic alone:
``for i in range(t, n + t)`` runs ``n`` trips in every thread, though its
start and its bound both vary.

A loop exit that compares an induction variable with a bound,
``start + step*k CMP bound`` at trip ``k``, decides the same in two threads
at the same trip when ``step`` is uniform and ``start - bound`` is: the
comparison is ``step*k CMP bound - start``. The difference is taken as a
linear form over the IR's values (sums, differences, products by
constants), in which the thread-dependent terms the two sides share cancel;
what is left must be uniform by the taint (`UniformityInfo`). It holds only
where the arithmetic is exact: a Python kernel's integers (which Numba's
range loops never wrap, the encoder's own model), never PTX's wrapping
registers nor floats. When every exit of a loop is such a test on every
trip's path, the loop's trips are uniform without a solver question
(`tolk_lint.analysis.uniform.refine` asks this first; the same question
took Z3 0.8 s of 128-bit adders and comparators for the systolic loop
above).

Imports: `tolk_lint.ir` and `uniformity_info`'s `Proof`.
"""

from __future__ import annotations

from tolk_lint.analysis.uniformity_info import Proof
from tolk_lint.ir.cfg import CFG, Loop
from tolk_lint.ir.nodes import Kernel, Value, is_float
from tolk_lint.ir.opcodes import Opcode

O = Opcode
MAX_TERMS = 64  # a larger linear form is left to the solver


def exact_trips_proof(kernel: Kernel, cfg: CFG, lp: Loop, info) -> Proof | None:
    """The proof that ``lp``'s trips are uniform by arithmetic
    (`exact_trips_uniform`), or None: the solver is asked."""
    if not exact_trips_uniform(kernel, cfg, lp, info):
        return None
    return Proof("uniform", None, "its start and its bound differ by the same amount in every thread")


def exact_trips_uniform(kernel: Kernel, cfg: CFG, lp: Loop, info) -> bool:
    """Whether every exit of ``lp`` decides alike in two threads at the same
    trip, by the arithmetic of its induction variable and bound alone."""
    if kernel.language != "python" or not lp.exits:
        return False
    for ex in lp.exits:
        iv, bound = ex.iv, ex.bound
        if iv is None or bound is None or ex.cmp not in ("lt", "le", "gt", "ge", "eq", "ne"):
            return False
        if cfg.loop_of(ex.branch.block) is not lp or not all(cfg.dominates(ex.branch.block, b) for b in lp.latches):
            return False  # an exit some trips skip: its path decides too
        if iv.step is None and (iv.step_value is None or not info.is_uniform(iv.step_value)):
            return False
        start, end = _linear(iv.start), _linear(bound)
        if start is None or end is None:
            return False
        diff = dict(start)
        for v, c in end.items():
            diff[v] = diff.get(v, 0) - c
        if any(c and (v is iv.phi or not info.is_uniform(v)) for v, c in diff.items() if v is not None):
            return False
    return True


def _linear(v: Value) -> dict[Value | None, int] | None:
    """``v`` as ``{value: coefficient}`` plus a constant (key None), through
    exact integer sums, differences, negations and products by constants;
    None for a float, or past `MAX_TERMS`."""
    out: dict[Value | None, int] = {}
    todo = [(v, 1)]
    while todo:
        if len(out) > MAX_TERMS or len(todo) > MAX_TERMS:
            return None
        x, c = todo.pop()
        if is_float(x.type) or x.type == "pred":
            return None
        d = x.defn
        op = d.op if d is not None else None
        if op is O.CONST and isinstance(d.attrs.get("value"), int) and not isinstance(d.attrs.get("value"), bool):
            out[None] = out.get(None, 0) + c * d.attrs["value"]
        elif op is O.ADD and len(d.args) == 2:
            todo += [(d.args[0], c), (d.args[1], c)]
        elif op is O.SUB and len(d.args) == 2:
            todo += [(d.args[0], c), (d.args[1], -c)]
        elif op is O.NEG and len(d.args) == 1:
            todo.append((d.args[0], -c))
        elif op is O.MUL and len(d.args) == 2 and (k := _constant(d.args[1])) is not None:
            todo.append((d.args[0], c * k))
        elif op is O.MUL and len(d.args) == 2 and (k := _constant(d.args[0])) is not None:
            todo.append((d.args[1], c * k))
        else:
            out[x] = out.get(x, 0) + c
    return out


def _constant(v: Value) -> int | None:
    d = v.defn
    if d is not None and d.op is O.CONST:
        value = d.attrs.get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
