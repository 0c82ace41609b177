"""Soundness of the uniformity analysis, measured against execution.

Random kernels (``tests/kernelgen.py``) run one workgroup in the reference
interpreter (``tolk_lint.ir.interp``). For each, the analysis must never be
caught wrong:

- every value it calls uniform (workgroup level) is equal across the threads
  that computed it, trip by trip;
- every barrier, collective or tensor-core op the rules TL101-TL103 pass is
  reached by all the threads it needs (no hang, no partial arrival, the same
  number of times in every thread).

At least 1,000 kernels run per CI run (``SOUNDNESS_KERNELS`` raises it). The
test prints how many kernels needed Z3 to be called clean.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor

import pytest
from kernelgen import generate

from tolk_lint.analysis.placements import placements
from tolk_lint.analysis.uniform import uniformity
from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.ir.interp import NotSupported
from tolk_lint.ir.nodes import Module

N_KERNELS = int(os.environ.get("SOUNDNESS_KERNELS", "1000"))


def _uniform_mismatch(result, info, kernel) -> list[str]:
    """Values called uniform that two threads computed differently in the
    same dynamic instance (the same trips of every loop around them)."""
    bad = []
    for ins in kernel.instrs():
        for v in ins.results:
            if v not in info.varying and result.differs(v, by="instance"):
                bad.append(v.name)
    return bad


def _missed(result, reported: set) -> list:
    """Ops this run showed some needed threads skip, that no rule reported.

    A hang involves every op a thread waits at: one of them must be
    reported (the others wait only because of it). A barrier completed while
    some threads had exited, or run a different number of times by threads
    that finished, must be reported itself."""
    if result.hang is not None and result.hang.kind != "step-limit":
        involved = {result.hang.instr} | {i for i in result.hang.elsewhere.values() if i is not None}
        involved.discard(None)
        return [] if involved & reported else sorted(involved, key=lambda i: i.id)
    missed = [p.instr for p in result.partial if p.instr not in reported]
    if result.hang is None:
        for ins, counts in result.barrier_counts.items():
            if len({counts.get(t, 0) for t in result.exits}) > 1 and ins not in reported:
                missed.append(ins)
    return missed


def _check_seeds(seeds: range) -> tuple[int, int, int, int, list[str]]:
    """Run and analyse the kernels of ``seeds``: (checked, skipped, flagged,
    needed Z3, failures)."""
    checked = z3_kernels = skipped = flagged = 0
    failures: list[str] = []
    for seed in seeds:
        g = generate(seed=seed)
        kernel = g.kernel
        try:
            result = g.run()
        except NotSupported:
            skipped += 1
            continue
        module = Module("gen.ptx", kernel.language, "", kernels=[kernel])
        # cached on the kernel: `placements` reads the same analysis
        u = kernel.cached("uniformity", lambda k: uniformity(k, module, DEFAULT_SETTINGS))
        if u.workgroup.z3_proved or u.warp.z3_proved:
            z3_kernels += 1
        bad = _uniform_mismatch(result, u.workgroup, kernel)
        reported = {p.op for p in placements(kernel, module, DEFAULT_SETTINGS)}
        missed = _missed(result, reported)
        flagged += bool(reported)
        if bad or missed:
            failures.append(
                f"seed {seed}: uniform but differs: {bad[:3]}; divergent but passed: "
                f"{[i.text or i.op.value for i in missed][:3]}\n{g.source}\n{result.summary()}"
            )
        checked += 1
    return checked, skipped, flagged, z3_kernels, failures


@pytest.mark.slow
def test_uniformity_is_sound_on_generated_kernels():
    start = time.perf_counter()
    workers = max(1, min(4, os.cpu_count() or 1))
    chunk = 50
    chunks = [range(i, min(i + chunk, N_KERNELS)) for i in range(0, N_KERNELS, chunk)]
    totals = [0, 0, 0, 0]
    failures: list[str] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for *counts, fails in pool.map(_check_seeds, chunks):
            totals = [a + b for a, b in zip(totals, counts)]
            failures += fails
    checked, skipped, flagged, z3_kernels = totals
    elapsed = time.perf_counter() - start
    print(
        f"\nsoundness: {checked} kernels run ({skipped} skipped: unsupported op), {flagged} with a TL101-TL103 "
        f"finding, {z3_kernels} needed Z3 to prove something uniform, {elapsed:.1f} s on {workers} processes"
    )
    assert checked >= N_KERNELS * 0.95
    assert not failures, f"{len(failures)} unsound verdicts; first:\n" + "\n\n".join(failures[:2])
