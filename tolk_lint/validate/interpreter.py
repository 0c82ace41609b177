"""Stage (c) of `tolk-lint validate`: both kernels on the reference
interpreter (`tolk_lint.ir.interp`), on the same random inputs, compared
bit for bit.

The launch's arguments are made once (`inputs.make_arguments`, the spec's
CPU sizes) and given, in the kernel's parameter order, to the original and
to the fixed kernel. A few blocks of the grid run (all of them up to
``MAX_BLOCKS``; otherwise the first, the last and some between), one after
another on the same memory, as a GPU may run them. The fixed kernel runs
twice, under both of the interpreter's cp.async policies: each copy lands at
the latest legal moment (the wait that retires it) and at the earliest (at
once); a pipeline whose result depends on when copies land fails one of
them. The stage fails when an output differs, when a run hangs, races or
reports a cp.async hazard, and is unavailable when the interpreter cannot
run an instruction of the kernel.
"""

from __future__ import annotations

import time

import numpy as np

from tolk_lint.validate.inputs import first_difference, make_arguments
from tolk_lint.validate.result import FAIL, PASS, UNAVAILABLE, StageResult
from tolk_lint.validate.spec import Launch

MAX_BLOCKS = 4
POLICIES = ("latest", "earliest")
MAX_STEPS = 2_000_000  # per thread


def chosen_blocks(grid: tuple[int, int, int], most: int = MAX_BLOCKS) -> list[tuple[int, int, int]]:
    """The blocks that run: all of a small grid, else the first, the last and some evenly between."""
    gx, gy, gz = grid
    n = gx * gy * gz
    picks = list(range(n)) if n <= most else sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})
    return [(i % gx, (i // gx) % gy, i // (gx * gy)) for i in picks]


def _kernel(text: str, path: str, name: str, block):
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import parse, prepare

    module = parse(text, path)
    prepare(module, DEFAULT_SETTINGS.with_(block=tuple(block)))
    for k in module.kernels:
        if k.name == name:
            return k
    raise LookupError(f"no kernel `{name}` in {path}")


def run_once(kernel, launch: Launch, args: list, policy: str, blocks) -> tuple[dict[str, np.ndarray], list[str]]:
    """The kernel's outputs after running ``blocks``, and what went wrong on the way."""
    from tolk_lint.ir.interp import run

    if len(kernel.params) != len(launch.args):
        raise ValueError(f"`{kernel.name}` takes {len(kernel.params)} parameters, the spec gives {len(launch.args)}")
    memory: dict[str, np.ndarray] = {}
    scalars: dict[str, object] = {}
    for p, a, v in zip(kernel.params, launch.args, args):
        if a.is_array:
            memory[p.name] = np.array(v, copy=True)
        else:
            scalars[p.name] = v.item() if hasattr(v, "item") else v
    problems: list[str] = []
    for ctaid in blocks:
        r = run(kernel, block=launch.block, params=scalars, global_mem=memory, ctaid=ctaid, grid=launch.grid,
                cp_async_policy=policy, record_history=False, max_steps=MAX_STEPS)  # fmt: skip
        if r.hang is not None:
            problems.append(f"block {ctaid}: {r.hang.message if hasattr(r.hang, 'message') else r.hang}")
        for race in r.races[:3]:
            problems.append(f"block {ctaid}: shared-memory race: {race}")
        for h in r.async_hazards[:3]:
            problems.append(f"block {ctaid}: cp.async hazard: {h}")
        for o in r.oob[:3]:
            problems.append(f"block {ctaid}: out of bounds: {o}")
        memory = {name: np.asarray(r.memory[name]).reshape(memory[name].shape) for name in memory}
    outs = {a.name: memory[p.name] for p, a in zip(kernel.params, launch.args) if a.output}
    return outs, problems


def run_interpreter(original: str, fixed: str, path: str, kernel: str, launch: Launch, fixed_path: str = "",
                    max_blocks: int = MAX_BLOCKS, seed: int | None = None) -> StageResult:  # fmt: skip
    from tolk_lint.ir.interp import InterpError, NotSupported

    args = make_arguments(launch) if seed is None else make_arguments(launch, seed)
    blocks = chosen_blocks(launch.grid, max_blocks)
    figures: dict = {"blocks": [list(b) for b in blocks], "sizes": dict(launch.sizes), "policies": list(POLICIES)}
    t0 = time.perf_counter()
    try:
        k0 = _kernel(original, path, kernel, launch.block)
        k1 = _kernel(fixed, fixed_path or path, kernel, launch.block)
        want, bad = run_once(k0, launch, args, "latest", blocks)
        details = [f"original: {b}" for b in bad]
        verdicts = []
        for policy in POLICIES:
            got, bad = run_once(k1, launch, args, policy, blocks)
            details += [f"fixed ({policy}): {b}" for b in bad]
            for name in want:
                same = first_difference(want[name], got[name])
                verdicts.append((policy, name, same))
    except NotSupported as e:
        return StageResult("interpreter", UNAVAILABLE, f"the interpreter cannot run this kernel: {e}", figures)
    except (InterpError, LookupError, ValueError) as e:
        return StageResult("interpreter", FAIL, f"the run failed: {e}", figures)
    figures["seconds"] = round(time.perf_counter() - t0, 2)
    figures["outputs"] = {f"{n} ({p})": s for p, n, s in verdicts}
    differ = [f"`{n}` under the {p} policy: {s}" for p, n, s in verdicts if s != "identical"]
    if differ or details:
        return StageResult("interpreter", FAIL, (differ or details)[0], figures, differ + details)
    return StageResult("interpreter", PASS, f"outputs bit-identical on {len(blocks)} block(s), under both cp.async "
                       f"policies ({', '.join(f'{k}={v}' for k, v in launch.sizes.items())})", figures)  # fmt: skip
