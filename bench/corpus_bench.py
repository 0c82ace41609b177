"""The real-corpus and Numba modes of bench/bench_ptx.py: the whole corpus, each
file as a user lints it, beside ptxas.

    python bench/bench_ptx.py --corpus [DIR] [--repeat 3] [--time-budget 120] [--largest 3] [-j 2] [--json OUT]
    python bench/bench_ptx.py --numba [DIR ...] [--repeat 3] [--time-budget 60] [--json OUT]

The default mode of bench_ptx.py times one synthetic 31,000-line sgemm; a user
believes numbers on code like theirs. The CUDA mode (``--corpus``, default
``fixtures/corpus/cuda``):

1. Compiles every ``.cu`` of the folder with ``nvcc -ptx -lineinfo
   -arch=sm_80`` into a temporary folder, ``-j`` at a time (the compiles are
   not timed against anything, so they may share the machine).
2. Per file, one after the other, ``--repeat`` rounds of: ``tolk-lint check
   --no-cache --output-format json --exit-zero --time-budget B FILE`` in a
   fresh process (``-j N`` with ``--lint-jobs N``; by default tolk-lint shares
   a large file's kernels among one worker per CPU, and its CPU time, the
   workers' included, is printed beside the wall time), then ``ptxas
   -arch=sm_80 -o /dev/null FILE`` (wall times).
   The two alternate so that a slow spell of the shared machine slows both
   sides of the ratio alike; the **median** of the rounds is reported (a fresh
   process's best run is a lucky one, its median what a user sees).
   Printed: lines, kernels (``.entry`` count), lint s, ptxas s, the ratio, and
   the kernels whose analysis ran out of budget (TL005; the goal is none;
   those the memory budget stopped, not the clock, are counted apart).
3. The totals: the slowest ratio (the one that counts), the median ratio, the
   kernels over budget.
4. Scaling: for the ``--largest`` N files, the file with every kernel and
   device function copied twice and four times under new names, linted with
   k times the budget (so a tool that scales linearly has the same room) in
   the same interleaved rounds as the original; the ratios x2/x1 and x4/x1 of
   tolk-lint's time beside ptxas's (about 2 and 4 for a linear tool).

The Numba mode (``--numba``, default ``fixtures/corpus/numba_real`` and
``fixtures/corpus/numba``) lints every ``.py`` the same way (no ptxas: there
is no PTX) and prints lines, kernels, lint s, TL005, and the files that take
more than 2 s (the goal is none). Most of these kernels have no call site the
tool can read, so no launch shape: the case where the analyses work hardest.

``--json OUT`` writes every round's times, the diagnostics' codes, the
machine's load before, after and as each file starts, and the tool versions.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# real_corpus.py (beside this file) already compiles the corpus and lints a file
# in a fresh process; its helpers are used as they are, so the two scripts
# measure the same command.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_corpus as rc

NUMBA_DIRS = (rc.NUMBA_DIR, rc.REPO / "fixtures" / "corpus" / "numba")
SLOW_NUMBA_FILE_S = 2.0  # the goal for one Numba file from the command line
SCALES = (2, 4)  # the copies of the scaling runs


# -- k copies of a PTX module ---------------------------------------------------------

# A function's first line: `.visible .entry name(`, `.func (.param .b32 r) name(`,
# `.extern .func ...`, `.weak .func ...`.
_FUNC_HEAD = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\b")
# Its name: after the directive and an optional return-parameter list.
_FUNC_NAME = re.compile(r"\.(?:entry|func)\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_ENTRY = re.compile(r"^\s*(?:\.(?:visible|weak)\s+)*\.entry\s+[A-Za-z_$]", re.MULTILINE)


@dataclass
class Piece:
    """A run of top-level lines of a PTX module: one function (its
    declaration, or its definition up to the closing brace), or the lines
    between functions (the header, variables, ``.file``, DWARF sections)."""

    lines: list[str]
    name: str | None = None  # the function's name; None between functions
    body: bool = False  # a definition, not a prototype


def split_module(text: str) -> list[Piece]:
    """``text`` cut into functions and what lies between them, in order
    (joining the pieces' lines gives ``text`` back)."""
    lines = text.splitlines()
    pieces: list[Piece] = []
    between: list[str] = []
    i = 0
    while i < len(lines):
        if not _FUNC_HEAD.match(lines[i]):
            between.append(lines[i])
            i += 1
            continue
        if between:
            pieces.append(Piece(between))
            between = []
        start, parens, braces, opened, declared = i, 0, 0, False, False
        while not declared and not (opened and braces == 0):
            if i == len(lines):
                raise ValueError(f"the function at line {start + 1} does not end")
            for ch in lines[i].split("//", 1)[0]:  # a comment's braces are not the body's
                if ch == "(":
                    parens += 1
                elif ch == ")":
                    parens -= 1
                elif ch == "{":
                    braces, opened = braces + 1, True
                elif ch == "}":
                    braces -= 1
                elif ch == ";" and not opened and parens == 0:
                    declared = True  # a prototype: `.func name(...);`
            i += 1
        head = "\n".join(lines[start:i])
        name = _FUNC_NAME.search(head)
        if name is None:
            raise ValueError(f"no name in the function at line {start + 1}")
        pieces.append(Piece(lines[start:i], name.group(1), body=opened))
    if between:
        pieces.append(Piece(between))
    return pieces


def copy_name(name: str, j: int) -> str:
    return f"{name}_copy{j}"


def renamed_copies(text: str, k: int) -> str:
    """The module with k copies of every function it defines (kernels and
    device functions): copy j (1 <= j < k) of ``f`` is ``f_copyj``, and each
    copy calls the copies of its own number, so the k call graphs are
    disjoint, as k separate kernels are. A function's prototype is copied
    with it and every copy sits right after its original, so each name is
    still declared before it is used. Functions only declared (``.extern``:
    ``vprintf``) and everything between functions (variables, ``.file``,
    DWARF sections) are kept once: the copies share them, and a second
    definition of a variable would not assemble."""
    if k < 1:
        raise ValueError("k must be at least 1")
    pieces = split_module(text)
    defined = {p.name for p in pieces if p.body}
    if not _ENTRY.search(text):
        raise ValueError("no .entry in the module")
    for name in defined:
        for j in range(1, k):
            if re.search(rf"(?<![\w$]){re.escape(copy_name(name, j))}(?![\w$])", text):
                raise ValueError(f"{copy_name(name, j)} is already a name in the module")
    # A whole name only: `_Z6kernelPf` but not its parameters `_Z6kernelPf_param_0`
    # nor a shared array `_ZZ6kernelPfE4smem`; `$` is part of a PTX name.
    uses = re.compile(
        r"(?<![\w$])("
        + "|".join(re.escape(n) for n in sorted(defined, key=len, reverse=True))
        + r")(?![\w$])"
    )
    out: list[str] = []
    for p in pieces:
        out.extend(p.lines)
        if p.name in defined:
            chunk = "\n".join(p.lines)
            for j in range(1, k):
                out.append("")
                out.extend(uses.sub(lambda m, j=j: copy_name(m.group(1), j), chunk).splitlines())
    return "\n".join(out) + "\n"


def kernel_count(ptx_text: str) -> int:
    return len(_ENTRY.findall(ptx_text))


# -- reading tolk-lint's JSON -----------------------------------------------------------


def budget_hits(diags: list[dict]) -> int:
    """Kernels whose analysis ran out of budget: each kernel a TL005 names
    counts once (one analysed under several launches may have several), and
    a TL005 with no kernel (the file was not read to the end) once."""
    named = {d.get("kernel") for d in diags if d.get("code") == "TL005" and d.get("kernel")}
    unnamed = sum(1 for d in diags if d.get("code") == "TL005" and not d.get("kernel"))
    return len(named) + unnamed


def budget_kinds(diags: list[dict]) -> dict[str, int]:
    """The kernels of `budget_hits` by the budget that ran out: "time" (the
    file's or the kernel's), "memory" (the process's resident memory), or
    "other" (cancelled)."""
    kinds: dict[str, str] = {}
    for n, d in enumerate(diags):
        if d.get("code") == "TL005":
            reason = str((d.get("data") or {}).get("reason", ""))
            kind = "memory" if "memory budget" in reason else "time" if "time budget" in reason else "other"
            kinds[d.get("kernel") or f"#{n}"] = kind
    return {k: list(kinds.values()).count(k) for k in sorted(set(kinds.values()))}


def code_counts(diags: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in diags:
        counts[d["code"]] = counts.get(d["code"], 0) + 1
    return dict(sorted(counts.items()))


# -- one file, interleaved ---------------------------------------------------------------


@dataclass
class Timing:
    """One file's rounds: tolk-lint's wall times, ptxas's (none for Python),
    the most kernels over budget in any round, and the last round's codes."""

    lint_s: list[float] = field(default_factory=list)
    lint_cpu_s: list[float] = field(default_factory=list)  # with the kernel workers' (`-j`)
    ptxas_s: list[float] = field(default_factory=list)
    tl005: int = 0
    tl005_kinds: dict[str, int] = field(default_factory=dict)  # of the round with the most
    codes: dict[str, int] = field(default_factory=dict)
    failure: str | None = None

    @property
    def lint(self) -> float:
        return statistics.median(self.lint_s)

    @property
    def ptxas(self) -> float | None:
        return statistics.median(self.ptxas_s) if self.ptxas_s else None

    @property
    def ratio(self) -> float | None:
        return self.lint / self.ptxas if self.ptxas else None


LINT_JOBS: int | None = None  # `--lint-jobs`: tolk-lint's own -j (default: its default, one per CPU)


def lint_round(path: Path, budget_s: float, t: Timing) -> None:
    diags, wall, cpu, failure = rc.lint_cpu(path, budget_s, LINT_JOBS)
    t.lint_s.append(wall)
    t.lint_cpu_s.append(cpu)
    if diags is None:
        t.failure = failure
    else:
        if budget_hits(diags) >= t.tl005:
            t.tl005, t.tl005_kinds = budget_hits(diags), budget_kinds(diags)
        t.codes = code_counts(diags)


def ptxas_round(ptx: Path, t: Timing) -> None:
    wall = rc.ptxas_seconds(ptx)
    if wall is None:
        t.failure = t.failure or "ptxas rejected the file"
    else:
        t.ptxas_s.append(wall)


def assembles(ptx: Path) -> str | None:
    """ptxas's last error line, or None when the file assembles."""
    done = subprocess.run(
        ["ptxas", "-arch=sm_80", "-o", os.devnull, str(ptx)], capture_output=True, text=True, check=False
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["ptxas failed"])[-1]


# -- the tables ------------------------------------------------------------------------


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table whose columns also line up in a terminal."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return (
            "| "
            + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
            + " |"
        )

    rule = (
        "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    )
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def seconds(s: float | None) -> str:
    return "-" if s is None else f"{s:.2f}"


def tl005_cell(rec: dict) -> str:
    """The kernels over budget; those stopped by the memory budget, not the clock, said apart."""
    memory = rec.get("tl005_kinds", {}).get("memory", 0)
    return str(rec["tl005"]) + (f" ({memory} memory)" if memory else "")


def times(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


# -- the CUDA corpus -------------------------------------------------------------------


def run_corpus(folder: Path, args) -> dict:
    if not (shutil.which("nvcc") and shutil.which("ptxas")):
        sys.exit("bench_ptx --corpus: nvcc and ptxas must be on PATH")
    sources = sorted(folder.glob("*.cu"))
    if not sources:
        sys.exit(f"bench_ptx --corpus: no .cu file in {folder}")
    with tempfile.TemporaryDirectory(prefix="tolk-bench-corpus-") as tmp:
        ptx_of = {cu: Path(tmp) / (cu.stem + ".ptx") for cu in sources}
        start = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            errors = dict(zip(sources, pool.map(lambda cu: rc.compile_ptx(cu, ptx_of[cu]), sources)))
        compile_s = time.perf_counter() - start
        print(f"nvcc -ptx -lineinfo -arch=sm_80: {len(sources)} files in {compile_s:.1f} s (-j {args.jobs})",
              file=sys.stderr, flush=True)  # fmt: skip

        files = []
        for cu in sources:  # one at a time: the timings must not share the machine with each other
            rec = {"file": cu.name}
            if errors[cu]:
                rec["failure"] = f"nvcc: {errors[cu]}"
                files.append(rec)
                continue
            text = ptx_of[cu].read_text()
            # the 1-minute load average as the file starts: a slow row on a busy machine says so
            rec.update(lines=len(text.splitlines()), kernels=kernel_count(text), load=os.getloadavg()[0])
            t = Timing()
            for _ in range(args.repeat):
                lint_round(ptx_of[cu], args.time_budget, t)
                ptxas_round(ptx_of[cu], t)
            rec.update(timing_record(t))
            files.append(rec)
            print(f"  {cu.name}: {rec['lines']:,} lines, {rec['kernels']} kernels, lint {t.lint:.2f} s, "
                  f"ptxas {seconds(t.ptxas)} s, ratio {times(t.ratio)}, TL005 {t.tl005}"
                  + (f" ({t.failure})" if t.failure else ""), file=sys.stderr, flush=True)  # fmt: skip

        measured = [f for f in files if "lines" in f]
        largest = sorted(measured, key=lambda f: f["lines"], reverse=True)[: args.largest]
        scaling = [scale(ptx_of[folder / f["file"]], args) for f in largest]

    ratios = [f["ratio"] for f in files if f.get("ratio") is not None]
    slowest = max((f for f in files if f.get("ratio") is not None), key=lambda f: f["ratio"], default=None)
    totals = {
        "files": len(files), "lines": sum(f.get("lines", 0) for f in files),
        "kernels": sum(f.get("kernels", 0) for f in files),
        "lint_s": sum(f.get("lint_s", 0.0) for f in files), "ptxas_s": sum(f.get("ptxas_s") or 0.0 for f in files),
        "lint_cpu_s": sum(f.get("lint_cpu_s") or 0.0 for f in files),
        "slowest_ratio": slowest and slowest["ratio"], "slowest_file": slowest and slowest["file"],
        "median_ratio": statistics.median(ratios) if ratios else None,
        "kernels_over_budget": sum(f.get("tl005", 0) for f in files),
        "failures": [f"{f['file']}: {f['failure']}" for f in files if f.get("failure")],
    }  # fmt: skip
    return {"compile_s": compile_s, "files": files, "totals": totals, "scaling": scaling}


def timing_record(t: Timing) -> dict:
    return {"lint_s": t.lint, "lint_cpu_s": statistics.median(t.lint_cpu_s) if t.lint_cpu_s else None,
            "ptxas_s": t.ptxas, "ratio": t.ratio, "tl005": t.tl005, "tl005_kinds": t.tl005_kinds,
            "lint_rounds_s": t.lint_s, "lint_cpu_rounds_s": t.lint_cpu_s, "ptxas_rounds_s": t.ptxas_s, "codes": t.codes,
            **({"failure": t.failure} if t.failure else {})}  # fmt: skip


def scale(ptx: Path, args) -> dict:
    """The file and its x2, x4 copies, linted (with k times the budget) and
    assembled in the same interleaved rounds."""
    text = ptx.read_text()
    paths = {1: ptx}
    rec: dict = {"file": ptx.stem + ".cu", "lines": {1: len(text.splitlines())}}
    for k in SCALES:
        paths[k] = ptx.with_suffix(f".x{k}.ptx")
        paths[k].write_text(renamed_copies(text, k))
        rec["lines"][k] = len(paths[k].read_text().splitlines())
        error = assembles(paths[k])
        if error:  # the copies are wrong, not the tool: say so instead of timing them
            rec["failure"] = f"x{k} does not assemble: {error}"
            print(f"  scaling {rec['file']}: {rec['failure']}", file=sys.stderr, flush=True)
            return rec
    timing = {k: Timing() for k in paths}
    for _ in range(args.repeat):
        for k, path in paths.items():
            lint_round(path, args.time_budget * k, timing[k])
            ptxas_round(path, timing[k])
    rec["runs"] = {k: timing_record(t) for k, t in timing.items()}
    base = timing[1]
    for k in SCALES:
        t = timing[k]
        rec[f"lint_x{k}"] = t.lint / base.lint
        rec[f"ptxas_x{k}"] = t.ptxas / base.ptxas if t.ptxas and base.ptxas else None
    print(f"  scaling {rec['file']}: lint " + ", ".join(f"{timing[k].lint:.2f} s" for k in paths)
          + " ; ptxas " + ", ".join(f"{seconds(timing[k].ptxas)} s" for k in paths), file=sys.stderr, flush=True)  # fmt: skip
    return rec


def print_corpus(res: dict, args) -> None:
    print(f"\nCUDA corpus: tolk-lint --time-budget {args.time_budget:g} beside ptxas -arch=sm_80, "
          f"median of {args.repeat} interleaved round(s), wall seconds\n")  # fmt: skip
    rows = []
    for f in res["files"]:
        if "lines" not in f:
            rows.append([f["file"] + " (" + f["failure"] + ")", *["-"] * 7])
            continue
        mark = " !" if f.get("failure") else ""
        rows.append([f["file"] + mark, f"{f['lines']:,}", str(f["kernels"]), seconds(f["lint_s"]),
                     seconds(f.get("lint_cpu_s")), seconds(f["ptxas_s"]), times(f["ratio"]), tl005_cell(f)])  # fmt: skip
    t = res["totals"]
    rows.append(["**total**", f"{t['lines']:,}", str(t["kernels"]), seconds(t["lint_s"]), seconds(t.get("lint_cpu_s")),
                 seconds(t["ptxas_s"]), times(t["lint_s"] / t["ptxas_s"] if t["ptxas_s"] else None),
                 str(t["kernels_over_budget"])])  # fmt: skip
    print(markdown(["file", "lines", "kernels", "lint s", "lint CPU s", "ptxas s", "lint/ptxas", "TL005"], rows))
    print(f"\nslowest ratio: {times(t['slowest_ratio'])} ({t['slowest_file']}); median ratio: "
          f"{times(t['median_ratio'])}; kernels over budget: {t['kernels_over_budget']} (goal: none)")  # fmt: skip
    for failure in t["failures"]:
        print(f"  not measured to the end: {failure}")

    if res["scaling"]:
        print(f"\nscaling: every kernel copied k times, linted with k x {args.time_budget:g} s of budget\n")
        rows = []
        for s in res["scaling"]:
            if "runs" not in s:
                rows.append([s["file"] + f" ({s['failure']})", *["-"] * 8])
                continue
            r = s["runs"]
            rows.append([s["file"], " / ".join(f"{s['lines'][k]:,}" for k in (1, *SCALES)),
                         *(seconds(r[k]["lint_s"]) for k in (1, *SCALES)),
                         *(f"{s[f'lint_x{k}']:.2f}" for k in SCALES),
                         *("-" if s[f"ptxas_x{k}"] is None else f"{s[f'ptxas_x{k}']:.2f}" for k in SCALES),
                         " / ".join(tl005_cell(r[k]) for k in (1, *SCALES))])  # fmt: skip
        print(markdown(["file", "lines x1 / x2 / x4", "lint x1 s", "x2 s", "x4 s", "lint x2/x1", "x4/x1",
                        "ptxas x2/x1", "x4/x1", "TL005 x1/x2/x4"], rows))  # fmt: skip


# -- the Numba files -------------------------------------------------------------------


def run_numba(folders: list[Path], args) -> dict:
    sources = [py for folder in folders for py in sorted(folder.glob("*.py"))]
    if not sources:
        sys.exit("bench_ptx --numba: no .py file in " + ", ".join(map(str, folders)))
    files = []
    for py in sources:
        text = py.read_text(encoding="utf-8")
        rec = {"file": str(py.relative_to(rc.REPO)) if py.is_relative_to(rc.REPO) else str(py),
               "lines": len(text.splitlines()), "kernels": rc.python_kernel_count(ast.parse(text)),
               "load": os.getloadavg()[0]}  # fmt: skip
        t = Timing()
        for _ in range(args.repeat):
            lint_round(py, args.time_budget, t)
        rec.update(timing_record(t))
        for key in ("ptxas_s", "ratio", "ptxas_rounds_s"):
            del rec[key]
        files.append(rec)
        print(f"  {rec['file']}: {rec['lines']} lines, {rec['kernels']} kernels, lint {t.lint:.2f} s, TL005 {t.tl005}"
              + (f" ({t.failure})" if t.failure else ""), file=sys.stderr, flush=True)  # fmt: skip
    slowest = max(files, key=lambda f: f["lint_s"])
    totals = {
        "files": len(files), "lines": sum(f["lines"] for f in files), "kernels": sum(f["kernels"] for f in files),
        "lint_s": sum(f["lint_s"] for f in files), "median_s": statistics.median(f["lint_s"] for f in files),
        "slowest_s": slowest["lint_s"], "slowest_file": slowest["file"],
        "files_over_2s": [f["file"] for f in files if f["lint_s"] > SLOW_NUMBA_FILE_S],
        "kernels_over_budget": sum(f["tl005"] for f in files),
        "failures": [f"{f['file']}: {f['failure']}" for f in files if f.get("failure")],
    }  # fmt: skip
    return {"files": files, "totals": totals}


def print_numba(res: dict, args) -> None:
    print(f"\nNumba files: tolk-lint --time-budget {args.time_budget:g}, a fresh process each, "
          f"median of {args.repeat} round(s), wall seconds\n")  # fmt: skip
    rows = [[f["file"] + (" !" if f.get("failure") else ""), str(f["lines"]), str(f["kernels"]),
             seconds(f["lint_s"]), seconds(f.get("lint_cpu_s")), tl005_cell(f)] for f in res["files"]]  # fmt: skip
    t = res["totals"]
    cpu = sum(f.get("lint_cpu_s") or 0.0 for f in res["files"])
    rows.append(["**total**", str(t["lines"]), str(t["kernels"]), seconds(t["lint_s"]), seconds(cpu),
                 str(t["kernels_over_budget"])])  # fmt: skip
    print(markdown(["file", "lines", "kernels", "lint s", "lint CPU s", "TL005"], rows))
    print(f"\nfiles over {SLOW_NUMBA_FILE_S:g} s: {len(t['files_over_2s'])} of {t['files']} (goal: none); "
          f"median {t['median_s']:.2f} s, slowest {t['slowest_s']:.2f} s ({t['slowest_file']}); "
          f"kernels over budget: {t['kernels_over_budget']}")  # fmt: skip
    for failure in t["failures"]:
        print(f"  not measured to the end: {failure}")


# -- main ------------------------------------------------------------------------------


def environment() -> dict:
    """What the numbers were measured on: they mean little without it."""

    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip().splitlines()
            return out[-1] if out else None
        except OSError:
            return None

    from tolk_lint import __version__

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cpus": os.cpu_count(), "python": platform.python_version(),
        "tolk_lint": __version__, "commit": first_line(["git", "-C", str(rc.REPO), "rev-parse", "--short", "HEAD"]),
        "nvcc": first_line(["nvcc", "--version"]), "load_before": os.getloadavg(),
    }  # fmt: skip


def main(args) -> int:
    global LINT_JOBS
    LINT_JOBS = getattr(args, "lint_jobs", None)
    """``args``: bench_ptx.py's parsed options (corpus, numba, repeat,
    time_budget, largest, jobs, json)."""
    out: dict = {"command": " ".join(["python", *sys.argv]), "environment": environment(),
                 "repeat": args.repeat, "time_budget_s": args.time_budget,
                 "timing": "median of the rounds; wall time of a fresh process"}  # fmt: skip
    print(f"load average before: {' '.join(f'{x:.2f}' for x in out['environment']['load_before'])} "
          f"on {os.cpu_count()} cores", file=sys.stderr)  # fmt: skip
    if args.corpus is not None:
        out["cuda"] = run_corpus(Path(args.corpus).resolve(), args)
    if args.numba is not None:
        out["numba"] = run_numba([Path(d).resolve() for d in args.numba] or list(NUMBA_DIRS), args)
    out["environment"]["load_after"] = os.getloadavg()
    if "cuda" in out:
        print_corpus(out["cuda"], args)
    if "numba" in out:
        print_numba(out["numba"], args)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in out['environment']['load_after'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0
