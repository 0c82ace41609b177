"""Linting one kernel under its launch shapes, and saying which in each message.

`lint_under_launches` runs the rules once per shape `choose` found (two
call sites with different blocks: two lints) and merges what they report:
a finding is kept once, and a finding that depends on the shape (TL1xx,
TL2xx, TL3xx) says the shapes it holds for ("under the launch block=(16,16,1)
from the call site at line 88"); every diagnostic's ``data["launch"]``
lists the shapes it was found under and where they came from (JSON,
SARIF): ``block`` (None when no shape is known), ``source``, ``kind``, a
``contract`` when the shape is a set of blocks, ``assumed`` when none is. A kernel with no shape at all that gets TL201/TL202 findings has
its launch contract inferred (`contract`, when TL205 is selected): the
kernel is linted again under it, and TL205 says what the contract is,
which accesses need it and how to declare it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from tolk_lint.diagnostics import Diagnostic
from tolk_lint.ir.nodes import Kernel, Module
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.launch.choose import SHAPE_FREE, forget, use
from tolk_lint.launch.shapes import MAX_THREADS, LaunchShape

log = logging.getLogger("tolk_lint.launch")

# The rules whose findings depend on the block shape: their messages name it.
# (Whether threads diverge depends on it too: `i < n` splits a block of 256
# threads only when n is not a multiple of 256.)
SHAPE_CODES = frozenset({"TL101", "TL102", "TL103", "TL201", "TL202", "TL203", "TL204", "TL301", "TL302", "TL303"})


def lint_under_launches(module: Module, k: Kernel, settings, run: Callable[[], list[Diagnostic]]) -> list[Diagnostic]:
    """What ``run`` reports on ``k`` under each of its launch shapes, merged."""
    shapes: list[LaunchShape] = list(k.launch.shapes)
    if len(shapes) > 1:
        runs = []
        for s in shapes:
            use(k, s)
            forget(k, SHAPE_FREE)
            runs.append((s, run()))
        use(k, shapes[0])
        return merge(k, runs)
    diags = run()
    shape = shapes[0] if shapes else None
    if shape is None and k.launch.block is None and k.launch.contract is None:
        from tolk_lint.launch.inference import infer

        inferred = infer(module, k, settings, run, diags)
        if inferred is not None:
            shape, diags = inferred
    return merge(k, [(shape, diags)])


def merge(k: Kernel, runs: list[tuple[LaunchShape | None, list[Diagnostic]]]) -> list[Diagnostic]:
    """One diagnostic per code and position, naming the shapes it was found under."""
    order: list[tuple] = []
    found: dict[tuple, list[tuple[LaunchShape | None, Diagnostic]]] = {}
    for shape, diags in runs:
        for d in diags:
            key = (d.code, d.span.path, d.span.line, d.span.column)
            if key not in found:
                found[key] = []
                order.append(key)
            if not any(s is shape for s, _ in found[key]):
                found[key].append((shape, d))
    out = []
    every = len(runs)
    for key in order:
        under = found[key]
        d = under[0][1]
        shapes = [s for s, _ in under]
        message = d.message
        exact = [s for s in shapes if s is not None and s.block is not None]
        if not reads_grid(k):  # the grid changes nothing for it: not named
            exact = [dataclasses.replace(s, grid=None) for s in exact]
        fixed = any(s.arguments or s.grid_told() for s in exact)  # the finding may hang on what the arguments or grid fix
        if d.code != "TL205" and exact and (d.code in SHAPE_CODES or len(under) < every or fixed):
            message += f" (under {_launches_text(exact)})"
        data = dict(d.data)
        data["launch"] = [launch_json(k, s) for s in shapes]  # the launches it was found under
        out.append(dataclasses.replace(d, message=message, data=data))
    return out


def reads_grid(k: Kernel) -> bool:
    """Whether the launch's grid can matter to ``k``: it reads ``blockIdx``
    or ``gridDim`` (``ctaid``, ``nctaid``), or calls a function that may."""
    def reads(k: Kernel) -> bool:
        return any((i.op is Opcode.SPECIAL and i.attrs.get("name", "").startswith(("ctaid.", "nctaid.")))
                   or i.op is Opcode.CALL for i in k.instrs())  # fmt: skip

    return k.cached("reads_grid", reads)


def _launches_text(shapes: list[LaunchShape]) -> str:
    parts = [s.words() for s in shapes]
    if len(parts) == 1:
        return f"the launch {parts[0]}"
    return "the launches " + ", ".join(parts[:-1]) + " and " + parts[-1]


def launch_json(k: Kernel, shape: LaunchShape | None) -> dict:
    """The launch a diagnostic assumed, for JSON and SARIF."""
    if shape is not None:
        return shape.to_json()
    lb = k.launch
    bound = lb.threads or MAX_THREADS
    src = ".maxntid" if lb.maxntid else "no launch shape given"
    return {"block": None, "source": src, "kind": "none", "assumed": f"any block of at most {bound} threads"}
