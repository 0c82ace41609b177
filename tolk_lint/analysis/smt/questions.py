"""The questions the uniformity analysis asks: can a value differ between
two threads (`value_uniform`), can two threads leave a loop at different
trips (`loop_trips_uniform`); and `witness_of`, the model as two threads
and inputs a person can read. (Whether a collective's mask names the lanes
that run it is `masks`.)"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tolk_lint.analysis.smt.encoder import Encoder
from tolk_lint.analysis.smt.solver import DEFAULT_RLIMIT, STATS, Verdict, solve, z3mod
from tolk_lint.analysis.uniformity_info import Proof
from tolk_lint.ir.cfg import Loop, cfg_of
from tolk_lint.ir.nodes import Block, Instr, Kernel, Value, is_float
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.uniformity_info import UniformityInfo

log = logging.getLogger("tolk_lint.smt")


def witness_of(enc: Encoder, model, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two threads and the inputs, from a model, as plain ints."""
    z3 = enc.z3

    def val(e):
        x = model.eval(e, model_completion=True)
        try:
            return x.as_long() if not z3.is_bool(x) else bool(z3.is_true(x))
        except Exception:  # noqa: BLE001
            return str(x)

    threads = [tuple(val(c) for c in enc.tid[t]) for t in (0, 1)]
    out: dict[str, Any] = {"threads": threads}
    block = tuple(val(n) if not z3.is_bv_value(n) else n.as_long() for n in enc.ntid)
    out["block"] = block
    inputs = {}
    floats = {p.name for p in enc.k.params if is_float(p.dtype)}
    unsigned = {p.name for p in enc.k.params if p.signed is False}  # `n = 4294967295`, not -1
    for name, sym in enc.shared_symbols.items():
        if name.startswith("param:"):
            x = val(sym)
            if isinstance(x, int) and name[6:] in floats and sym.size() in (32, 64):
                x = float_of_bits(x, sym.size())  # `eps = 0.5`, not its bits 1056964608
            elif isinstance(x, int):
                w = sym.size()
                if name[6:] not in unsigned and x >= 1 << (w - 1):
                    x = x - (1 << w)
            inputs[name[6:]] = x
    out["inputs"] = inputs
    for lp, (k0, _k1) in enc.trips.items():
        out.setdefault("trips", {})[f"loop@{lp.header.name}"] = val(k0)
    if extra:
        out.update(extra)

    def fmt_thread(th):
        return "(" + ",".join(str(x) for x in th) + ")" if th[1] or th[2] else str(th[0])

    desc = f"threads {fmt_thread(threads[0])} and {fmt_thread(threads[1])}"
    if enc.k.launch.block is None:
        desc += f" of a block of {block[0]}x{block[1]}x{block[2]}"
    if inputs:
        desc += " when " + inputs_text(enc.k, inputs)
    out["description"] = desc
    return out


def float_of_bits(bits: int, width: int) -> float:
    """The IEEE float whose bits a model gave a float parameter."""
    fmt = ("<I", "<f") if width == 32 else ("<Q", "<d")
    return struct.unpack(fmt[1], struct.pack(fmt[0], bits))[0]


def inputs_text(k, inputs: dict[str, Any]) -> str:
    """A witness's inputs in words, each parameter by the name its source
    gives it: ``n = 2`` for the PTX ``_Z4scanPfS_i_param_2``."""
    labels = {p.name: p.label for p in k.params if p.label}
    # a factory's parameter that is one of several functions: the function, not its number
    choices = {i.attrs["name"]: i.attrs["choices"] for i in k.entry.instrs if "choices" in i.attrs}

    def shown(name: str, v: Any) -> Any:
        c = choices.get(name)
        return c[v] if c and isinstance(v, int) and 0 <= v < len(c) else v

    return ", ".join(f"{labels.get(name, name)} = {shown(name, v)}" for name, v in sorted(inputs.items()))


def _proof(verdict: Verdict, enc: Encoder, detail: str = "") -> Proof:

    if verdict.status == "unsat":
        return Proof("uniform", None, detail)
    if verdict.status == "sat":
        return Proof("varying", witness_of(enc, verdict.small_model()), detail)
    return Proof("unknown", None, f"the solver gave up ({verdict.reason})")


def _syntactically_shared(enc: Encoder, e) -> bool:
    """No per-thread symbol occurs in ``e``: the same in both threads."""
    z3 = enc.z3
    seen = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if x.decl().name() in enc.per_thread_symbols:
                return False
        stack.extend(x.children())
    return True


def value_uniform(kernel: Kernel, value: Value, at: Instr, info: UniformityInfo, level: str,
                  rlimit: int = DEFAULT_RLIMIT) -> Proof:  # fmt: skip
    """Can ``value`` (computed where ``at`` runs) differ between two threads
    at the same trip of every loop around ``at``?"""
    try:
        enc = Encoder(kernel, info, level, point=at.block)
        _assume(enc)
        _reach_loops(enc, at.block)
        a, b = enc.enc(value, 0), enc.enc(value, 1)
        if _syntactically_shared(enc, a) and _syntactically_shared(enc, b) and a.eq(b):
            STATS["syntactic"] += 1
        
            return Proof("uniform", None, "same expression in every thread")
        goal = a != b
        return _proof(solve(enc, goal, rlimit), enc)
    except Exception as e:  # noqa: BLE001 - never let the solver crash a lint
        log.debug("smt: value query failed: %r", e, exc_info=True)
    
        return Proof("unknown", None, f"the solver could not encode it ({type(e).__name__})")


def loop_trips_uniform(kernel: Kernel, lp: Loop, info: UniformityInfo, level: str,
                       rlimit: int = DEFAULT_RLIMIT, hypothesis: Callable[[Encoder], Any] | None = None) -> Proof:  # fmt: skip
    """Can two threads that enter ``lp`` together leave it differently: at
    different trips, or through different exits (a ``return`` inside the
    loop that only some take)?

    With ``k`` a trip both reach (``k = 0``, or neither left at ``k - 1``),
    ask whether some exit's decision at ``k`` differs between them. Exits
    not on every trip's path carry their path condition from the header.

    A loop-carried value the taint calls varying only because its start
    is (``for (i = popc(mask) / 2; i > 0; i /= 2)``) is proved equal in
    both threads by induction on the trip, in the same question
    (`_carried`): at trip ``k`` it is one value for both, and the question
    also asks whether the two starts differ or, when both stay, the two
    values it carries to trip ``k + 1``. UNSAT proves all three parts of
    the induction at once.

    ``hypothesis`` (of the encoder, over values fixed before the loop: a
    warp collective's mask naming the other thread's lane) holds in both
    threads' run; UNSAT then proves the trips equal for the pairs of
    threads it admits."""

    try:
        z3 = z3mod()
        cfg = cfg_of(kernel)
        enc = Encoder(kernel, info, level, point=lp.header)
        _assume(enc)
        if lp.parent is not None:
            _reach_loops(enc, lp.parent.header)
        k = enc.trips[lp][0]
        for t in (0, 1):  # both threads enter the loop
            ent = enc.loop_entry_condition(lp, t)
            if ent is not None:
                enc.constraints.append(ent)
        if hypothesis is not None:
            enc.constraints.append(hypothesis(enc))
        carried = _carried(lp, info)
        enc.shared_carry.update(v for v, _, _ in carried)
        terms = []
        for ex in lp.exits:
            if cfg.loop_of(ex.branch.block) is not lp:
                return Proof("unknown", None, "an exit leaves several loops at once")
            always = all(cfg.dominates(ex.branch.block, latch) for latch in lp.latches)
            dec = []
            for t in (0, 1):
                pc = z3.BoolVal(True) if always else enc.path_condition(ex.branch.block, t)
                if pc is None:
                    return Proof("unknown", None, "the loop's exits are too complex to encode")
                c = enc.as_bool(enc.enc(ex.cond, t))
                dec.append(z3.And(pc, c if ex.exits_when else z3.Not(c)))
            terms.append(dec[0] != dec[1])
        if not terms:
            return Proof("uniform", None, "the loop has no exit")
        if carried:
            stays = enc.exits_at(lp, 0, k)
            stays = z3.BoolVal(True) if stays is None else z3.Not(stays)
            for _, start, nxt in carried:
                terms.append(enc.enc(start, 0) != enc.enc(start, 1))
                terms.append(z3.And(stays, enc.enc(nxt, 0) != enc.enc(nxt, 1)))
        prev = [enc.exits_at(lp, t, k - 1) for t in (0, 1)]
        reach = z3.BoolVal(True) if prev[0] is None else z3.Or(k == 0, z3.And(z3.Not(prev[0]), z3.Not(prev[1])))
        return _proof(solve(enc, z3.And(reach, z3.Or(*terms)), rlimit), enc)
    except Exception as e:  # noqa: BLE001
        log.debug("smt: loop query failed: %r", e, exc_info=True)
        return Proof("unknown", None, f"the solver could not encode it ({type(e).__name__})")


def _carried(lp: Loop, info: UniformityInfo) -> list[tuple[Value, Value, Value]]:
    """``(phi, start, next)`` for the header phis of ``lp`` that its exit
    tests read, through the values computed in the loop (and the values
    those phis carry, and the branches a join in the loop merges on): the
    ones the taint calls varying that are not induction variables (closed
    forms of the trip already) and have one value from outside the loop
    and one along its back edges. A phi left out stays one symbol per
    thread; the induction holds for any choice, this one is what the exits
    need (a value the loop sums is not asked to be equal)."""
    ivs = {iv.phi for iv in lp.ivs}
    branch_conds = [b.terminator.args[0] for b in lp.blocks
                    if b.terminator is not None and b.terminator.op is Opcode.BRANCH and b.terminator.args]  # fmt: skip
    out = []
    seen: set[Value] = set()
    stack = [ex.cond for ex in lp.exits]
    while stack:
        v = stack.pop()
        d = v.defn
        if v in seen or d is None or d.block not in lp.blocks:
            continue
        seen.add(v)
        if d.op is not Opcode.PHI:
            stack.extend(d.args)
            continue
        if d.block is not lp.header:
            stack.extend(list(d.args) + branch_conds)  # a join: its args and what decides between them
            continue
        if v in ivs or not info.is_varying(v):
            stack.extend(a for p, a in zip(lp.header.preds, d.args) if p in lp.blocks)
            continue
        preds = list(zip(lp.header.preds, d.args))
        outside = {a for p, a in preds if p not in lp.blocks}
        inside = {a for p, a in preds if p in lp.blocks}
        if len(outside) == 1 and len(inside) == 1:
            out.append((v, next(iter(outside)), next(iter(inside))))
            stack.extend(inside)
    return out


def never_holds(k: Kernel, fact: Value) -> bool:
    """Whether the assumption ``fact`` (a pred value over ``k``'s parameters)
    holds for no values at all: assumed, it would make every question
    UNSAT and the kernel look clean (`tolk: assume 1 << 70`, `n < 0 && n > 0`)."""
    enc = Encoder(k, None)
    try:
        return solve(enc, enc.as_bool(enc.enc(fact, 0))).status == "unsat"
    except Exception:  # noqa: BLE001 - an assumption the solver cannot read is not refused for it
        return False


def _assume(enc: Encoder) -> None:
    """The kernel's ``tolk: assume`` facts hold in both threads."""
    for a in enc.k.assumptions:
        for t in (0, 1):
            enc.constraints.append(enc.as_bool(enc.enc(a, t)))


def _reach_loops(enc: Encoder, block: Block) -> None:
    """Both threads really reach trip ``k`` of each loop around ``block``:
    they entered it, and neither left at ``k - 1`` (rules out trips past an
    overflow)."""
    z3 = enc.z3
    for lp in enc.cfg.loops_around(block):
        for t in (0, 1):
            ent = enc.loop_entry_condition(lp, t)
            if ent is not None:
                enc.constraints.append(ent)
        k = enc.trips[lp][0]
        prev = [enc.exits_at(lp, t, k - 1) for t in (0, 1)]
        if prev[0] is None:
            continue
        enc.constraints.append(z3.Or(k == 0, z3.And(z3.Not(prev[0]), z3.Not(prev[1]))))
