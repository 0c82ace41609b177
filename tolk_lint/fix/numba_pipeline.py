"""TL302's fix for Numba kernels: the loop's synchronous tile copies made a
two-stage cp.async pipeline (Form A) with `tolk_lint.runtime`, as the user's
own source rewritten (`numba_source` reads it, `numba_rewrite` writes it).

`pipeline_fix(ctx, copies)` takes the `TileCopy`s of one loop and gives a
`Fix` (unsafe: the staged arrays double, which changes occupancy) or a
`NotFixable` saying why not:

- what the IR knows: two stages fit (TL303 otherwise), every staged array's
  element is 4 or 8 bytes (cp.async copies 4, 8 or 16; a 2-byte element
  would need its copies re-chunked, which this rewrite does not do), the
  value stored is the value loaded (no conversion), the kernel never writes
  a copy's source (the next tile is read a trip early), and the loop's trip
  count is the same in every thread (TL102 otherwise);
- what the source shows (`numba_source.Refused`): the loop's form, the
  copies' forms, the else-values of guarded copies;
- and then the proof: the rewritten file, linted again (``ctx.relint``),
  must show no TL1xx/TL2xx error in the kernel (TL204 proves every read
  waits for its copy and every copy for its slot's readers, symbolically in
  the trip), nothing new the analyses do not understand, and no TL302 left
  for the arrays it staged (`tolk_lint.fix.proof`).

The fix's edits replace the lines that changed, hunk by hunk.

Imports the IR, the diagnostics, `proof`, `outcome` and the two modules
above; the analyses come in through ``ctx``.
"""

from __future__ import annotations

import difflib
import logging
from typing import TYPE_CHECKING

from tolk_lint.diagnostics import Applicability, Edit, Fix
from tolk_lint.fix.numba_rewrite import rewrite
from tolk_lint.fix.numba_source import Refused, read_loop
from tolk_lint.fix.outcome import FIX_TITLE, NotFixable
from tolk_lint.fix.proof import PROOF_SELECT, problems
from tolk_lint.ir.nodes import type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.stage.copies import TileCopy
    from tolk_lint.registry import RuleContext

O = Opcode
log = logging.getLogger("tolk_lint.fix")
REPORT = "this is a bug in tolk-lint: please report it with this file"
COPY_BYTES = (4, 8)  # the element copies this rewrite emits (16-byte runs would need re-chunking)


def pipeline_fix(ctx: RuleContext, copies: list[TileCopy]) -> Fix | NotFixable:
    """The fix pipelining the loop of ``copies`` (TileCopys of one loop of
    ``ctx.kernel``), or why there is none."""
    try:
        fixed = pipelined_text(ctx, copies)
    except Exception as e:  # noqa: BLE001 - a rewrite that fails must not take TL302's finding down
        log.debug("the Numba rewrite failed on %s", ctx.kernel.name, exc_info=True)
        return NotFixable(f"the Numba rewrite failed ({type(e).__name__}: {e}); {REPORT}")
    if isinstance(fixed, NotFixable):
        return fixed
    if ctx.relint is None:
        return NotFixable("the rewrite is not proved here")
    module, kernel = ctx.module, ctx.kernel
    unsupported = sum(1 for d in module.diagnostics if d.code == "TL002" and d.kernel in (kernel.name, None))
    staged = {tc.buffer for tc in copies}
    found = problems(ctx.relint(fixed, PROOF_SELECT, kernel.name), kernel.name, staged, unsupported)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return NotFixable(f"the rewrite does not pass the static proof: {found[0]}{more}")
    return Fix(FIX_TITLE, tuple(text_edits(module.path, module.source, fixed)), Applicability.UNSAFE)


def pipelined_text(ctx: RuleContext, copies: list[TileCopy]) -> str | NotFixable:
    """The file's text with the loop pipelined (not proved yet), or why the
    rewrite would not be exact."""
    kernel = ctx.kernel
    if not copies:
        return NotFixable("no tile copies")
    loop = copies[0].loop
    if any(tc.loop is not loop for tc in copies):
        return NotFixable("the copies belong to more than one loop")
    for tc in copies:
        if tc.reason is not None:
            return NotFixable(tc.reason)
        if tc.depth != 2:
            return NotFixable(f"two stages of the loop's tiles do not fit ({tc.depth_why})")
    nbytes: dict[str, int] = {}
    for tc in copies:
        why = _copy_refusal(ctx, tc)
        if why is not None:
            return NotFixable(why)
        nbytes[tc.buffer] = type_bits(kernel.buffers[tc.buffer].dtype) // 8
    if loop in ctx.uniformity().workgroup.divergent_loops:
        return NotFixable("the loop's trip count may differ between the block's threads (TL102): the pipeline's "
                          "waits and barriers need every thread at every trip")  # fmt: skip
    loop_line = copies[0].loop_line
    if loop_line is None:
        return NotFixable("the loop has no source line")
    barriers = {i.span.line for i in kernel.instrs() if i.op is O.BARRIER and i.span is not None
                and i.attrs.get("kind", "sync") == "sync"}  # fmt: skip
    barrier = copies[0].barrier
    if barrier.span is None:
        return NotFixable("the barrier after the copies has no source line")
    steps = {iv.phi.source_name: iv.step for iv in loop.ivs if iv.step is not None}  # variable -> its step
    try:
        src = read_loop(ctx.module.source, kernel.name, loop_line, barrier.span.line, barriers,
                        [tc.buffer for tc in copies], steps)  # fmt: skip
        return rewrite(src, nbytes)
    except Refused as e:
        return NotFixable(e.reason)


def _copy_refusal(ctx: RuleContext, tc: TileCopy) -> str | None:
    """Why the IR says ``tc``'s copies cannot become cp.async copies of the
    same bytes, or None."""
    kernel = ctx.kernel
    buf = kernel.buffers.get(tc.buffer)
    if buf is None:
        return f"`{tc.buffer}` is not a shared array of the kernel"
    size = type_bits(buf.dtype) // 8
    if size not in COPY_BYTES:
        return (f"`{tc.buffer}` holds {size}-byte elements ({buf.dtype}): cp.async copies 4, 8 or 16 bytes, and "
                "copying this tile that way would need its copies re-chunked (each thread copying a run of "
                "elements), which the Numba rewrite does not do")  # fmt: skip
    for ld in tc.loads:
        if (ld.attrs.get("dtype") or ld.results[0].type) != buf.dtype:
            return f"the copy into `{tc.buffer}` converts its values (a converting copy is not a byte copy)"
        source = ld.attrs.get("buffer")
        param = kernel.param(source) if source else None
        if param is None:
            return f"the copy into `{tc.buffer}` does not read a kernel parameter's array"
        if param.written:
            return (f"the kernel writes `{source}`, the source of the copy into `{tc.buffer}`: the pipeline "
                    "reads the next tile a trip early")  # fmt: skip
    return None


def text_edits(path: str, old: str, new: str) -> list[Edit]:
    """The edits that turn ``old`` into ``new``: one per block of changed
    lines, each replacing whole lines."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        content = "".join(b[j1:j2])
        if i2 > len(a) - 1 and a and not a[-1].endswith("\n") and i2 == len(a):
            # the last line has no newline: end the edit at its end, not past it
            out.append(Edit(path, i1 + 1, 1, i2, len(a[-1]) + 1, content))
        else:
            out.append(Edit(path, i1 + 1, 1, i2 + 1, 1, content))
    return out
