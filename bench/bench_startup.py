#!/usr/bin/env python3
"""Benchmark: start-up, a small file linted from the command line, beside ptxas.

    python bench/bench_startup.py [--ptx FILE] [--py FILE] [--arch sm_80] [--repeat 21] [--baseline DIR] [--json OUT]

A user who runs ``tolk-lint check`` on one small kernel waits for the
interpreter, the imports and the front end far more than for the analysis.
This times, each a new process, their runs interleaved (a, b, c, d, a, b,
...) so that a slow spell of a shared machine slows all of them alike, the
median of ``--repeat`` runs each:

- ``tolk-lint check --no-cache -q --exit-zero`` on a 27-line PTX file
  (`fixtures/ptx/uniformity/early_exit_barrier.ptx`: a barrier some threads
  skip, which the solver gives a witness for);
- the same on a ~20-line Numba file (`examples/divergent_barrier.py`);
- ``ptxas -arch=sm_80 -o /dev/null`` on the PTX file (skipped without ptxas);
- ``python -c pass``: the interpreter's own start-up, the floor;
- with ``--baseline DIR``, the same two lints by the source tree in ``DIR``
  (an earlier version: ``mkdir DIR && git archive REV | tar -x -C DIR``),
  in the same rounds: a before/after on one machine at one time;

and prints each median wall time, the fastest run, its ratio to ptxas's
and to the floor, and the median CPU time (user + system: what the process itself used, which
a loaded machine disturbs less than the wall time). The target: each lint
within 4x ptxas's time.

``tolk-lint`` is the console script beside this interpreter (else
``python -m tolk_lint``). Run it with ``PYTHONDONTWRITEBYTECODE`` unset: with
it set no bytecode is written, so every start of an editable install
compiles tolk-lint's modules again, which measures the compiler, not
tolk-lint. The script says when it is set, and makes one warm-up run of
each command first (the bytecode, the grammar cache, the page cache).

A script, not a test: the numbers depend on the machine. bench/README.md
keeps the last ones.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PTX = REPO / "fixtures" / "ptx" / "uniformity" / "early_exit_barrier.ptx"
NUMBA = REPO / "examples" / "divergent_barrier.py"


def tolk_lint_command() -> list[str]:
    """The console script of this interpreter's environment, as a user runs it."""
    script = Path(sys.executable).with_name("tolk-lint")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tolk_lint"]


def commands(ptx: Path, py: Path, arch: str, baseline: Path | None) -> list[tuple[str, list[str]]]:
    """(name, argv) of each timed command; ptxas only where it is on PATH.
    With ``baseline`` (a source tree of another version), its lints too."""
    lint = tolk_lint_command() + ["check", "--no-cache", "-q", "--exit-zero"]
    out = [
        (f"tolk-lint check {ptx.name}", lint + [str(ptx)]),
        (f"tolk-lint check {py.name}", lint + [str(py)]),
    ]
    if baseline is not None:
        # that tree first on the path; its rules/ folder is tolk_lint.rules as installed
        rules = baseline / "tolk_lint" / "rules"
        if not rules.exists():
            rules.symlink_to(baseline / "rules", target_is_directory=True)
        old = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(baseline)!r}); "
               "from tolk_lint.cli import main; sys.argv[0] = 'tolk-lint'; main()",
               "check", "--no-cache", "-q", "--exit-zero"]  # fmt: skip
        out += [(f"baseline: check {ptx.name}", old + [str(ptx)]), (f"baseline: check {py.name}", old + [str(py)])]
    ptxas = shutil.which("ptxas")
    if ptxas:
        out.append((f"ptxas -arch={arch} {ptx.name}", [ptxas, f"-arch={arch}", "-o", os.devnull, str(ptx)]))
    out.append(("python -c pass", [sys.executable, "-c", "pass"]))
    return out


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"bench_startup: `{' '.join(argv)}` exited {p.returncode}:\n{p.stderr.decode(errors='replace')}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(cmds: list[tuple[str, list[str]]], repeat: int) -> dict[str, list[tuple[float, float]]]:
    """Every command's (wall, CPU) times, ``repeat`` rounds of one run of each in turn."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cmds}
    for _ in range(repeat):
        for name, argv in cmds:
            times[name].append(run_once(argv))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptx", type=Path, default=PTX, help=f"the PTX file (default: {PTX.relative_to(REPO)})")
    ap.add_argument("--py", type=Path, default=NUMBA, help=f"the Numba file (default: {NUMBA.relative_to(REPO)})")
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--repeat", type=int, default=21, help="runs of each command; the median is kept")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="also time the source tree DIR (another version: `git archive REV | tar -x -C DIR`)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    a = ap.parse_args()

    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: every start compiles tolk-lint's modules again; "
              "run with `env -u PYTHONDONTWRITEBYTECODE` to measure tolk-lint")  # fmt: skip
    cmds = commands(a.ptx, a.py, a.arch, a.baseline.resolve() if a.baseline else None)
    for path in (a.ptx, a.py):
        print(f"file: {path} ({len(path.read_text().splitlines())} lines)")
    print(f"python: {sys.version.split()[0]}; {os.cpu_count()} CPUs; median of {a.repeat} interleaved runs")
    for _, argv in cmds:  # warm-up: bytecode, the grammar cache, the page cache
        run_once(argv)
    times = interleaved(cmds, a.repeat)
    wall = {name: statistics.median(w for w, _ in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(c for _, c in ts) for name, ts in times.items()}
    ptxas = next((n for n in times if n.startswith("ptxas")), None)
    lints = [n for n in times if n.startswith("tolk-lint")]
    floor = "python -c pass"

    print()
    print(f"  {'command':<44} {'wall':>7} {'min':>7} {'CPU':>7} {'/ ptxas':>8} {'/ python':>9}")
    for name, ts in times.items():
        ratio = f"{wall[name] / wall[ptxas]:8.1f}" if ptxas else f"{'-':>8}"
        print(f"  {name:<44} {wall[name]:6.3f}s {min(w for w, _ in ts):6.3f}s {cpu[name]:6.3f}s {ratio} "
              f"{wall[name] / wall[floor]:9.1f}")  # fmt: skip
    print("  (wall: median; min: the fastest run; CPU: median user + system time; ratios of the medians)")
    if ptxas:
        worst = max(wall[n] for n in lints)
        print(f"\nslowest lint / ptxas: {worst / wall[ptxas]:.1f} (target: <= 4.0)")
    if a.json:
        a.json.write_text(json.dumps({"wall_median_s": wall, "cpu_median_s": cpu, "runs_s": times}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
