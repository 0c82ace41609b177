"""Decoded panels on the host (TL401): in a host kernel (target ``cpu``), a
sum of products whose one decoded operand (an integer code converted to a
float) is decoded again at every trip of an output loop that does not read
it; `decodes` gives each such operand the panel that would hold it decoded
once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tolk_lint import budget
from tolk_lint.analysis.stage.index import IndexEval
from tolk_lint.analysis.stage.polynomials import Unstageable
from tolk_lint.analysis.stage.source import loop_trips, source_line
from tolk_lint.analysis.stage.stages import kib_str
from tolk_lint.analysis.stage.trace import dtype_bytes, factor_name, sums_of_products
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.target import KIB, Target

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.ir.cfg import Loop

O = Opcode

PANEL_MAX = 64 * KIB  # a decoded panel lives on the host thread's stack


@dataclass
class DecodeVerdict:
    kernel: str
    sum: Instr
    loop: Loop
    decode: Instr  # the conversion of an integer code into a float
    operand: str
    loads: list[Instr]
    output_loops: list[Loop] = field(default_factory=list)
    reading: list[Loop] = field(default_factory=list)  # output loops the operand reads
    others: list[Loop] = field(default_factory=list)  # output loops it does not read (re-decoding)
    redecodes: int = 0  # times each value is decoded again (trips of the other loops)
    panel_shape: tuple[int, ...] = ()
    panel_bytes: int = 0
    stageable: bool = False
    reason: str | None = None

    @property
    def line(self) -> int | None:
        return source_line(self.decode)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "operand": self.operand,
            "line": self.line,
            "sum_line": source_line(self.sum),
            "redecodes": self.redecodes,
            "panel_shape": list(self.panel_shape),
            "panel_bytes": self.panel_bytes,
            "stageable": self.stageable,
            "reason": self.reason,
        }


def _reads_code(v: Value, depth_: int = 0) -> bool:
    """Whether an integer expression reads a loaded value (``q``, ``q - zero``,
    ``(q >> 4) & 15``), not counting the loads inside an address."""
    d = v.defn
    if d is None or depth_ > 6:
        return False
    if d.op is O.LOAD:
        return True
    if d.op in (O.ADD, O.SUB, O.MUL, O.AND, O.OR, O.XOR, O.SHR, O.SHL, O.CVT, O.NEG, O.SELECT, O.MIN, O.MAX):
        return any(_reads_code(a, depth_ + 1) for a in d.args)
    return False


def _decodes_in(v: Value, out: list[Instr], loads: list[Instr], depth_: int = 0) -> None:
    """Conversions of loaded integers into floats in ``v``'s expression (not
    inside any address), and every load the expression reads."""
    d = v.defn
    if d is None or depth_ > 32:
        return
    if d.op is O.LOAD:
        if d not in loads:
            loads.append(d)
        return
    if d.op is O.CVT:
        src = str(d.attrs.get("from_type") or d.args[0].type)
        # float(q), np.float32(q): an explicit conversion of a code decodes it, whatever its type
        explicit = bool(d.attrs.get("fn"))
        if is_float(d.result.type) and (explicit or not is_float(src)) and _reads_code(d.args[0]) and d not in out:
            out.append(d)
    if d.op in (O.PHI, O.CONST, O.PARAM, O.SPECIAL):
        return
    for a in d.args:
        _decodes_in(a, out, loads, depth_ + 1)


def decodes(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[DecodeVerdict]:
    """Host kernels (target ``cpu``): the sums of products whose one decoded
    operand is decoded again at every trip of an output loop that does not
    read it, with the panel that would stage it."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    if not target.is_host:
        return []
    cfg = cfg_of(kernel)
    ev = IndexEval(kernel, None)
    out: list[DecodeVerdict] = []
    sums = sums_of_products(kernel)
    decoded_ops = []
    for ins, lp, factors in sums:
        for f in factors:
            dec: list[Instr] = []
            lds: list[Instr] = []
            _decodes_in(f, dec, lds)
            if dec:
                decoded_ops.append((ins, lp, f, dec, lds))
    for ins, lp, f, dec, lds in decoded_ops:
        budget.check("the staging analysis (the decoded operands)")
        name = ", ".join(factor_name(ld) for ld in lds)
        v = DecodeVerdict(kernel.name, ins, lp, dec[0], name, lds)
        out.append(v)
        if not settings.stage:
            v.reason = "staging is turned off (`stage = false`)"
            continue
        if len(decoded_ops) != 1:
            v.reason = "more than one operand of the kernel's sums of products is decoded"
            continue
        outputs = [x for x in cfg.loops_around(lp.header) if x is not lp]
        v.output_loops = outputs
        trips = {x: loop_trips(x) for x in outputs}
        if any(t is None for t in trips.values()):
            v.reason = "an output loop has no constant bound"
            continue
        try:
            atoms = set()
            for ld in lds:
                for p in ev.address(ld):
                    atoms |= {a for m in p for a in m}
        except Unstageable as e:
            v.reason = str(e)
            continue
        reads = {a[5:] for a in atoms if a.startswith("trip:")}
        v.reading = [x for x in outputs if x.header.name in reads]
        v.others = [x for x in outputs if x.header.name not in reads]
        if not any((trips[x] or 0) >= 2 for x in v.others):
            v.reason = "every output loop of two trips or more reads the operand: each value is decoded once"
            continue
        own = {x.header.name for x in cfg.loops_around(lp.header) if x not in outputs}
        stray = reads - own - {x.header.name for x in v.reading}
        if stray or any(not (a.startswith(("trip:", "param:", "axis:")) or ev.atoms[a].kind == "uniform") for a in atoms):
            v.reason = "the operand reads ranges other than its sum's"
            continue
        sum_trips = [loop_trips(x) for x in cfg.loops_around(lp.header) if x not in outputs]
        if any(t is None for t in sum_trips):
            v.reason = "the sum's loop has no constant bound"
            continue
        v.panel_shape = tuple(t for t in sum_trips if t is not None)
        v.panel_bytes = int(math.prod(v.panel_shape)) * dtype_bytes(dec[0].result.type)
        v.redecodes = int(math.prod(trips[x] or 1 for x in v.others))
        if v.panel_bytes > PANEL_MAX:
            v.reason = f"the panel takes {kib_str(v.panel_bytes)}, more than the {kib_str(PANEL_MAX)} a stack may hold"
            continue
        v.stageable = True
    return out
