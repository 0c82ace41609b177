"""What the tests of the TL302 fixer's Numba rewrite share: a kernel's
`RuleContext` as the engine builds it (with ``relint``, so a fix proves
itself), the tile copies TL302 hands the fixer, and the fix applied.

`guarded_copies` stands in for TL302 on guarded tile copies (``s[i] =
a[j] if ok else 0``, ``if``/``else`` storing 0, zero then copy), which it
does not report yet (the memory-precision work teaches it to): it gives the
fixer the `TileCopy` TL302 will give, so the rewrite of guarded copies is
tested now. Once TL302 reports them, `copies_for` finds them without it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tolk_lint import engine
from tolk_lint.analysis.stage.copies import TileCopy
from tolk_lint.config import DEFAULT_SETTINGS, Settings
from tolk_lint.diagnostics import Fix
from tolk_lint.fix.edits import apply_edits
from tolk_lint.fix.numba_pipeline import pipeline_fix
from tolk_lint.fix.outcome import NotFixable
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.registry import RuleContext

REPO = Path(__file__).resolve().parents[1]
FIXER = REPO / "fixtures" / "fixer" / "numba"
STAGED = FIXER / "staged"


def settings_for(block) -> Settings:
    return dataclasses.replace(DEFAULT_SETTINGS, block=tuple(block), unsafe_fixes=True)


def contexts(text: str, path: str, block) -> list[RuleContext]:
    """One context per kernel of the file, as `engine.check_kernel` makes them."""
    s = settings_for(block)
    module = engine.parse(text, path)
    engine.prepare(module, s)
    return [RuleContext(module, k, s, engine.kernel_target(k, module, s), relint=engine._relinter(module, s))
            for k in module.kernels]  # fmt: skip


def tl302_copies(ctx: RuleContext) -> list[TileCopy]:
    """The copies TL302 reports (and hands the fixer)."""
    return [tc for tc in ctx.staging().copies if tc.reason is None and tc.depth == 2]


def guarded_copies(ctx: RuleContext) -> list[TileCopy]:
    """TL302's copies for a loop of guarded copies: each shared array the
    loop stores into, its global loads on the same lines, the loop's first
    barrier (see the module docstring)."""
    k = ctx.kernel
    cfg = cfg_of(k)
    found: dict[str, tuple] = {}
    for ins in k.instrs():
        if ins.op is Opcode.STORE and ins.attrs.get("space") == "shared" and cfg.loops_around(ins.block):
            found.setdefault(ins.attrs["buffer"], (cfg.loops_around(ins.block)[0], []))[1].append(ins)
    out = []
    for buf, (lp, stores) in found.items():
        lines = {s.span.line for s in stores}
        loads = [i for i in k.instrs() if i.op is Opcode.LOAD and i.attrs.get("space") == "global"
                 and i.span.line in lines and i.block in lp.blocks]  # fmt: skip
        barrier = next(i for i in k.instrs() if i.op is Opcode.BARRIER and i.block in lp.blocks)
        b = k.buffers[buf]
        out.append(TileCopy(k.name, lp, buf, stores, loads, barrier, [], tile_bytes=b.bytes or 0, dtype=b.dtype,
                            depth=2))  # fmt: skip
    return out


def copies_for(ctx: RuleContext, guarded: bool) -> list[TileCopy]:
    found = tl302_copies(ctx)
    return found if found or not guarded else guarded_copies(ctx)


def fix_text(text: str, path: str, block, guarded: bool = False) -> tuple[str, Fix | NotFixable | None]:
    """The file's text after the fix of its first staged loop, and the fix
    (or why there is none; None: nothing to fix)."""
    for ctx in contexts(text, path, block):
        copies = copies_for(ctx, guarded)
        if not copies:
            continue
        loop = copies[0].loop
        outcome = pipeline_fix(ctx, [c for c in copies if c.loop is loop])
        if isinstance(outcome, Fix):
            new, applied = apply_edits(text, [outcome])
            assert applied == 1
            return new, outcome
        return text, outcome
    return text, None
