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
from tolk_lint.diagnostics import NOT_ANALYSED, Diagnostic, Related, Severity, where_lines
from tolk_lint.ir.nodes import Kernel, Module
from tolk_lint.launch.choose import FOR_EVERY_BLOCK, definition_origin, forget, use
from tolk_lint.launch.contract import CODES, Inference, Need, box_constraints, inferred_shape, needs_of, user_line
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import MAX_THREADS, UNREAD, Contract, LaunchShape, block_text
from tolk_lint.registry import selected

log = logging.getLogger("tolk_lint.launch")

ROUNDS = 2  # contracts derived per kernel: the second adds the findings the first lint under one showed
SHOWN_LINES = 6  # the lines named in the message (the related notes say the rest)
EXAMPLES = 8  # the accesses shown as related notes, each with a block outside the contract that breaks it
MAX_PROBES = 4  # blocks asked about per access shown, for its example
# The note on a finding whose kernel's contract search ran out of budget: the
# finding stands as it is for every block, though a contract might remove it.
CUT_SHORT = ("the search for a launch contract under which this holds (TL205) ran out of the time budget: "
             "raise `time-budget`, or give the launch shape (--block, or a `tolk: launch` comment)")


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
        for d in diags:  # the findings stand, but the person learns why no contract was given
            if d.code in codes:
                d.related.append(Related(CUT_SHORT))
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
    below = races_below_arrays(inf, fixable)
    fixable = [n for n in fixable if n not in below]
    stays = {(n.code, n.line) for n in everywhere + below}
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
            return shape, diags + [tl205(module, k, shape, fixable, everywhere, inf, below)]
        more = needs_of(k._cache["memory"], codes)
        if more is None:
            return None
        fixable += [n for n in more if (n.code, n.line) not in stays]
    return None


def races_below_arrays(inf: Inference, fixable: list[Need]) -> list[Need]:
    """The races no contract may remove: those that hold for the block the
    kernel's shared arrays are sized for. When, in a kernel indexed in one
    dimension, the out-of-bounds findings alone give a bound that is one of
    the kernel's array sizes
    (``sm = cuda.shared.array(TPB)`` indexed by the thread: ``blockDim.x <=
    TPB``), that is the block it was written for; a race that needs a smaller
    contract (the tree reduction without its first barrier is race-free only
    up to ``TPB / 2`` threads) is a bug of that block, not a limit of the
    kernel, and is reported under the box."""
    bounds = [n for n in fixable if n.code == "TL202"]
    races = [n for n in fixable if n.code == "TL201"]
    if not bounds or not races or len(inf.dims) != 1:
        # a two-dimensional tile's flat PTX array admits many boxes: which block it is sized for is not known
        return []
    c = inf.derive(bounds)
    if not isinstance(c, Contract) or c.family != "box" or c.pow2 or c.threads not in inf.guesses:
        return []
    dims = c.dims
    keys = set()
    for n in races:
        if n.key not in keys and not inf.holds([n], ("box", dims), lambda z3, ntid: box_constraints(z3, ntid, dims)):
            keys.add(n.key)
    return [n for n in races if n.key in keys]


def tl205(module: Module, k: Kernel, shape: LaunchShape, needs: list[Need], everywhere: list[Need],
          inf: Inference, below: list[Need] = ()) -> Diagnostic:  # type: ignore[assignment]
    """TL205 at the kernel's header: the contract, which accesses need it, how to declare it."""
    c = shape.contract
    block = shape.block
    what = c.describe() if c is not None else f"blockDim.x == {block[0]} (blockDim.y = blockDim.z = 1)"  # type: ignore[index]
    largest = c.largest() if c is not None else block
    # one access per source line, in line order: the message names the lines, which file's they are
    by_line = {user_line(n.instr): n.instr for n in sorted(needs, key=lambda n: user_line(n.instr))}
    shown = where_lines(list(by_line.values())[:SHOWN_LINES]) + (" ..." if len(by_line) > SHOWN_LINES else "")
    message = (f"kernel {_name(k)} is race-free and in bounds only for blocks with {what}: no launch shape is "
               f"given ({_nothing_gives(k)}), so it is linted under that contract; the shared or local accesses at "
               f"{shown} need it; declare it with "
               f"{_declarations(k, largest, c)}")  # type: ignore[arg-type]  # fmt: skip
    if everywhere:
        message += f" ({len(everywhere)} finding(s) hold for every block and are still reported)"
    if below:
        races = len({n.key for n in below})
        message += (f" ({races} race(s) hold for the block its shared arrays are sized for, and are reported "
                    "under the contract)")  # fmt: skip
    related = []
    for n in needs[:EXAMPLES]:
        example = _smallest_example(inf, n, shape)
        ex = "a block of {}x{}x{}".format(*example) if example else n.example
        related.append(Related(f"{n.text} outside the contract" + (f" (for example {ex})" if ex else ""),
                               n.instr.span, n.instr.origin))  # fmt: skip
    data = {"contract": c.to_json() if c is not None else {"family": "exact", "block": list(block or ())},
            "needed_by": [{"code": n.code, "line": n.line} for n in needs],
            "suggested_block": list(largest) if largest else None}  # fmt: skip
    origin = definition_origin(module, k)  # a PTX entry's definition in its CUDA source
    return Diagnostic("TL205", Severity.WARNING, message, k.span, kernel=k.name, origin=origin,  # type: ignore[arg-type]
                      related=related, data=data, name="implicit-launch-contract")  # fmt: skip


def _smallest_example(inf: Inference, n: Need, shape: LaunchShape) -> tuple[int, int, int] | None:
    """A small block outside the contract for which the finding ``n`` holds:
    the first size past a bound (``129x1x1`` for ``blockDim.x <= 128``, not
    the solver's first ``213x1x1``), else a round one (`_candidates`).
    Each is asked with the block a constant, which the solver settles
    quickly, and at most `MAX_PROBES` are asked; None when none holds (the
    finding's own witness is shown instead)."""
    from tolk_lint.analysis.memory.query import solve_bv  # the memory analysis: only when inferring

    q = n.query
    z3, ntid = q.z3, q.enc.ntid
    for block in _candidates(shape, inf.dims, inf.limit)[:MAX_PROBES]:
        inf.questions += 1
        fixed = [ntid[d] == block[d] for d in range(3)]
        try:
            v = solve_bv(q.enc, z3.And(*fixed, n.expr), max(1, inf.rlimit // 4))
        except budget.BudgetExceeded:
            return None  # the contract is proved: an example is not worth losing it over
        if v.status == "sat":
            return block
        if v.status != "unsat":
            return None  # too hard with the block given: it will be no easier with the next
    return None


def _candidates(shape: LaunchShape, dims: list[int], limit: int) -> list[tuple[int, int, int]]:
    """Blocks outside the contract worth showing, fewest threads first:
    one past each bound with the other dimensions at 1, then at their
    bounds; for a power-of-two contract the sizes 3 * 2**k below its bound;
    for an exact size, half and twice it."""
    c = shape.contract
    bounds = c.dims if c is not None else shape.block
    out: list[tuple[int, int, int]] = []
    for d in dims:
        for others in (1, None):  # None: the other dimensions the kernel reads at their bounds
            b = [1, 1, 1]
            for e in dims:
                if e != d and others is None:
                    b[e] = bounds[e]  # type: ignore[index]
            b[d] = bounds[d] + 1  # type: ignore[index]
            out.append((b[0], b[1], b[2]))
    if c is not None and c.pow2:
        out += [(3 << k, 1, 1) for k in range(10) if 3 << k < c.dims[0]]
    if c is None and shape.block is not None:
        size = shape.block[0]
        out += [(size // 2, 1, 1), (size * 2, 1, 1)]
    if c is not None and c.family == "product":
        x, y, z = c.largest()
        out.append((x, y + 1, z) if y > 1 else (x + 1, y, z))
    inside = c.admits if c is not None else (lambda b: b == shape.block)
    keep = {b for b in out if not inside(b) and all(x >= 1 for x in b) and b[0] * b[1] * b[2] <= limit}
    return sorted(keep, key=lambda b: (b[0] * b[1] * b[2], b[::-1]))  # x first among equals


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
