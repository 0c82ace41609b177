"""TL205: inferring a kernel's launch contract, linting it under the
contract, and saying so (`contract` holds the questions and the families).

`infer` runs when a kernel has no launch shape at all and its lint found
TL201/TL202 (and TL205 is selected: with TL205 off, those findings stay
errors). It returns the contract's shape and what the lint under it
reports, with the TL205 warning added; or None, and the findings without
a shape stand: when no natural contract removes them, when a finding's
question is missing, when a rule crashed or a budget ran out on the way.
"""

from __future__ import annotations

import logging
import traceback

from tolk_lint import budget
from tolk_lint.diagnostics import NOT_ANALYSED, Diagnostic, Related, Severity
from tolk_lint.ir.nodes import Kernel, Module
from tolk_lint.launch.choose import FOR_EVERY_BLOCK, definition_origin, forget, use
from tolk_lint.launch.contract import CODES, Inference, Need, inferred_shape, needs_of, user_line
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import MAX_THREADS, UNREAD, Contract, LaunchShape, block_text
from tolk_lint.registry import selected

log = logging.getLogger("tolk_lint.launch")

ROUNDS = 2  # contracts derived per kernel: the second adds the findings the first lint under one showed


def infer(module: Module, k: Kernel, settings, run, diags: list[Diagnostic]) -> tuple[LaunchShape, list[Diagnostic]] | None:
    """The inferred contract of ``k`` and the lint under it, or None."""
    sel, ign = settings.effective_select, settings.ignore
    if k.host or not selected("TL205", sel, ign):
        return None
    codes = tuple(c for c in CODES if selected(c, sel, ign))
    if not any(d.code in codes for d in diags) or any(d.code in NOT_ANALYSED for d in diags):
        return None
    facts = k._cache.get("memory")
    if facts is None:
        return None
    saved_cache = dict(k._cache)
    saved = (k.launch.block, k.launch.contract, k.launch.source)
    try:
        got = _infer(module, k, facts, codes, run)
    except budget.BudgetExceeded:
        got = None
    except Exception:  # noqa: BLE001 - the lint without a contract stands: never fail it over one
        log.debug("launch contract of %s failed:\n%s", k.name, traceback.format_exc())
        got = None
    if got is None:
        k.launch.block, k.launch.contract, k.launch.source = saved
        k._cache.clear()
        k._cache.update(saved_cache)
    return got


def _infer(module: Module, k: Kernel, facts, codes: tuple[str, ...], run) -> tuple[LaunchShape, list[Diagnostic]] | None:
    needs = needs_of(facts, codes)
    if not needs:
        return None
    dims = [i for i, d in enumerate("xyz") if d in facts.tid_dims]
    if k.launch.maxntid and set(dims) <= {0}:
        # `__launch_bounds__(N)` of a kernel indexed in x alone declares its
        # contract, blockDim.x <= N: a finding within it is the kernel's own
        return None
    inf = Inference(k, dims, k.launch.threads or MAX_THREADS, facts.rlimit)
    everywhere = inf.wrong_everywhere(needs)
    fixable = [n for n in needs if n not in everywhere]
    stays = {(n.code, n.line) for n in everywhere}
    for _ in range(ROUNDS):
        if not fixable:
            return None
        choice = inf.derive(fixable)
        if choice is None:
            return None
        shape = inferred_shape(choice)
        use(k, shape)
        forget(k, FOR_EVERY_BLOCK)  # what was proved for every block holds under the contract
        diags = run()
        if any(d.code in NOT_ANALYSED for d in diags):
            return None
        if not any(d.code in codes and (d.code, d.span.line) not in stays for d in diags):
            log.debug("launch contract of %s: %s after %d questions", k.name, shape.what(), inf.questions)
            return shape, diags + [tl205(module, k, shape, fixable, everywhere)]
        more = needs_of(k._cache["memory"], codes)
        if more is None:
            return None
        fixable += [n for n in more if (n.code, n.line) not in stays]
    return None


def tl205(module: Module, k: Kernel, shape: LaunchShape, needs: list[Need], everywhere: list[Need]) -> Diagnostic:
    """TL205 at the kernel's header: the contract, which accesses need it, how to declare it."""
    c = shape.contract
    block = shape.block
    what = c.describe() if c is not None else f"blockDim.x == {block[0]} (blockDim.y = blockDim.z = 1)"  # type: ignore[index]
    largest = c.largest() if c is not None else block
    lines = sorted({user_line(n.instr) for n in needs})
    shown = ", ".join(str(x) for x in lines[:6]) + (" ..." if len(lines) > 6 else "")
    message = (f"kernel {_name(k)} is race-free and in bounds only for blocks with {what}: no launch shape is "
               f"given ({_nothing_gives(k)}), so it is linted under that contract; the shared or local accesses at "
               f"line{'s' if len(lines) > 1 else ''} {shown} need it; declare it with "
               f"{_declarations(k, largest, c)}")  # type: ignore[arg-type]  # fmt: skip
    if everywhere:
        message += f" ({len(everywhere)} finding(s) hold for every block and are still reported)"
    related = []
    for n in needs[:8]:
        ex = f" (for example {n.example})" if n.example else ""
        related.append(Related(f"{n.text} outside the contract{ex}", n.instr.span, n.instr.origin))
    data = {"contract": c.to_json() if c is not None else {"family": "exact", "block": list(block or ())},
            "needed_by": [{"code": n.code, "line": n.line} for n in needs],
            "suggested_block": list(largest) if largest else None}  # fmt: skip
    origin = definition_origin(module, k)  # a PTX entry's definition in its CUDA source
    return Diagnostic("TL205", Severity.WARNING, message, k.span, kernel=k.name, origin=origin,  # type: ignore[arg-type]
                      related=related, data=data, name="implicit-launch-contract")  # fmt: skip


def _nothing_gives(k: Kernel) -> str:
    """Why no shape is known, in words: what was looked for, and the launches found whose block is no constant."""
    if k.language == "python":
        looked = "no call site in the module, `tolk: launch` comment or configuration gives one"
    else:
        looked = "no host launch in its CUDA source, `.reqntid`, `tolk: launch` comment or configuration gives one"
    unread = [s.source for s in k.launch.found if s.kind == UNREAD]
    if unread:
        looked += "; the block of " + " and of ".join(unread[:3]) + " is not a constant"
    return looked


def _name(k: Kernel) -> str:
    """The kernel's name as its source spells it (a C++ entry demangled, with its PTX name)."""
    e = read_entry(k.name) if k.language == "ptx" else None
    return f"`{k.name}`" if e is None or str(e) == k.name else f"`{e}` (`{k.name}`)"


def _declarations(k: Kernel, block: tuple[int, int, int], contract: Contract | None) -> str:
    comment = "#" if k.language == "python" else "//"
    parts = [f"`{comment} tolk: launch block={block_text(block)}` above the kernel (the block it is launched with)",
             f"`\"{_config_key(k)}\" = [{block[0]}, {block[1]}, {block[2]}]` in [tool.tolk-lint.launch]"]  # fmt: skip
    if k.language == "ptx":
        threads = contract.threads if contract is not None else block[0] * block[1] * block[2]
        whole = contract is not None and not contract.pow2 and sum(1 for d in contract.dims if d > 1) == 1
        parts.append(f"`__launch_bounds__({threads})` on the kernel" + ("" if whole else " (it bounds the threads only)"))
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def _config_key(k: Kernel) -> str:
    return str(read_entry(k.name)) if k.language == "ptx" else k.name
