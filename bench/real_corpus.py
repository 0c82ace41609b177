#!/usr/bin/env python3
"""Benchmark: tolk-lint on kernels it was not written for (false alarms, planted bugs, time).

    python bench/real_corpus.py [-j 2] [--json out.json] [--examples 3] [FILE ...]

The corpus is ``fixtures/corpus/cuda/*.cu`` (CUDA C in the style of NVIDIA's
samples, CUB, Thrust and cooperative-groups code) and
``fixtures/corpus/numba_real/*.py`` (Numba in the style of its documentation,
tutorials and library code).  Most kernels are correct; some files hold a
twin of a kernel with one realistic bug, marked at the end of the line the
tool should report with ``// planted: TL201`` (``# planted: TL201``).  A
``latent:`` marker names a construct the original code really has, safe only
at the launches shown: a report there is defensible and counted apart.

1. Compiles every ``.cu`` to PTX in a temporary folder, ``-j`` at a time, with
   ``nvcc -ptx -lineinfo -arch=sm_80`` (the wall time of the whole step is
   printed).
2. Lints each PTX file and each Python file in its own process,
   ``python -m tolk_lint check --no-cache --output-format json --exit-zero
   --time-budget 120`` (``--time-budget`` changes it: the budget is wall time,
   so on a loaded machine more kernels end in TL005), and runs ``ptxas -arch=sm_80`` on the same PTX; both
   are timed (wall time, so with ``-j 2`` they share the machine).
3. Sorts the error-level diagnostics (TL0xx apart) of each file:
   - *planted found*: the code of a ``planted:`` marker, on its line (for PTX,
     the ``.cu`` line the diagnostic's ``origin`` names), or with that line
     among its related locations (a warp collective inside a device
     function is reported at the collective, the call as a related
     location: the marker sits at the call);
   - *latent*: the code of a ``latent:`` marker, on its line;
   - *twin extra*: anything else in a kernel that holds a planted marker;
   - *false alarm*: anything else, counted by code.  Thrust's and CUB's own
     kernels are correct, so every error-level report in them is one.
4. Prints a table per file and the totals, then the planted bugs that were
   missed; ``--json`` writes the same numbers, ``--examples N`` prints N
   false-alarm messages per file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUDA_DIR = REPO / "fixtures" / "corpus" / "cuda"
NUMBA_DIR = REPO / "fixtures" / "corpus" / "numba_real"
TIME_BUDGET_S = 120
FALSE_ALARM_COLUMNS = ("TL101", "TL102", "TL103", "TL201", "TL202", "TL204")
MARKER = re.compile(r"(?://|#)\s*(planted|latent):\s*(TL\d{3})\b")


@dataclass
class Marker:
    kind: str  # "planted" or "latent"
    code: str
    line: int


@dataclass
class FileReport:
    path: str
    kernels: int = 0
    twin_kernels: int = 0
    false_alarms: dict[str, int] = field(default_factory=dict)  # code -> count
    twin_extra: int = 0
    planted_total: int = 0
    planted_found: int = 0
    planted_missed: list[str] = field(default_factory=list)  # "CODE line N"
    latent_total: int = 0
    latent_reported: int = 0
    warnings: int = 0
    infos: int = 0
    tl002: int = 0
    tl005: int = 0
    tool_errors: int = 0  # TL001, TL004: the file was not analysed
    lint_s: float = 0.0
    ptxas_s: float | None = None
    failure: str | None = None  # nvcc, ptxas or tolk-lint did not run to the end
    examples: list[str] = field(default_factory=list)


# -- the source: markers and which kernel holds which lines ---------------------------


def markers_in(text: str) -> list[Marker]:
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        for kind, code in MARKER.findall(line):
            out.append(Marker(kind, code, n))
    return out


def cuda_kernel_spans(text: str) -> dict[str, tuple[int, int]]:
    """Each ``__global__`` function's name -> (first line, last line) of its
    definition, found by matching the braces of its body."""
    spans = {}
    for m in re.finditer(r"__global__", text):
        head = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", text[m.end():m.end() + 600])
        name = re.search(r"(\w+)\s*\(", head)
        if not name:
            continue
        body = text.find("{", m.end() + name.end())
        depth, i = 0, body
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        spans[name.group(1)] = (text.count("\n", 0, m.start()) + 1, text.count("\n", 0, i) + 1)
    return spans


def python_kernel_spans(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Every function (nested ones too: factories) -> its line span."""
    return {node.name: (node.lineno, node.end_lineno or node.lineno)
            for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def python_kernel_count(tree: ast.Module) -> int:
    """Functions decorated ``@cuda.jit`` (not device functions), plus those
    compiled as ``cuda.jit(signature)(fn)``."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                text = ast.unparse(dec)
                if "jit" in text and "device=True" not in text:
                    count += 1
                    break
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
              and "jit" in ast.unparse(node.func.func)):
            count += 1
    return count


def source_name(kernel: str | None) -> str:
    """The name a kernel has in its source: ``_Z13MatrixMulCUDAILi16EEvPf...``
    -> ``MatrixMulCUDA``; a name in a namespace (``_ZN3cub...``), an
    ``extern "C"`` name or a Python name is returned as it is."""
    if not kernel:
        return ""
    m = re.match(r"_Z(\d+)", kernel)
    if m:
        start = m.end()
        return kernel[start:start + int(m.group(1))]
    return kernel.rsplit(".", 1)[-1]


# -- running the tools -----------------------------------------------------------------


def timed(cmd: list[str], timeout: float | None = None) -> tuple[subprocess.CompletedProcess, float]:
    done, wall, _cpu = timed_cpu(cmd, timeout)
    return done, wall


def timed_cpu(cmd: list[str], timeout: float | None = None) -> tuple[subprocess.CompletedProcess, float, float]:
    """The finished command, its wall time and the CPU time (user + system)
    of it and of the processes it waited for (tolk-lint's kernel workers).
    The CPU time is exact only when no other child ends meanwhile: run one
    command at a time to read it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compile_ptx(cu: Path, ptx: Path) -> str | None:
    """nvcc's error text, or None when the PTX was written."""
    done, _ = timed(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)])
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["nvcc failed"])[-1]


def lint(path: Path, budget_s: float) -> tuple[list[dict] | None, float, str | None]:
    diags, seconds, _cpu, failure = lint_cpu(path, budget_s)
    return diags, seconds, failure


def lint_cpu(path: Path, budget_s: float, jobs: int | None = None) -> tuple[list[dict] | None, float, float, str | None]:
    """``tolk-lint check`` on ``path`` in a fresh process (with ``-j jobs``
    when given): its diagnostics, wall and CPU seconds, and why it failed."""
    cmd = [sys.executable, "-m", "tolk_lint", "check", "--no-cache", "--output-format", "json",
           "--exit-zero", "--time-budget", str(budget_s), *(["-j", str(jobs)] if jobs else []), str(path)]
    try:
        done, seconds, cpu = timed_cpu(cmd, timeout=budget_s * 5)
    except subprocess.TimeoutExpired:
        return None, budget_s * 5, 0.0, "tolk-lint did not finish"
    try:
        return json.loads(done.stdout), seconds, cpu, None
    except json.JSONDecodeError:
        return None, seconds, cpu, f"tolk-lint exit {done.returncode}: {done.stderr.strip()[-200:]}"


def ptxas_seconds(ptx: Path) -> float | None:
    done, seconds = timed(["ptxas", "-arch=sm_80", "-o", os.devnull, str(ptx)])
    return seconds if done.returncode == 0 else None


# -- sorting the diagnostics ----------------------------------------------------------


def source_line(diag: dict, source: Path) -> int | None:
    """The line of ``source`` a diagnostic lands on: its origin's (PTX with
    ``.loc``) or its own (Python); None when it lands in another file (a
    header) or nowhere."""
    where = diag.get("origin") or {"path": diag["path"], "line": diag["line"]}
    try:
        same = Path(where["path"]).resolve() == source.resolve()
    except (OSError, TypeError):
        same = False
    return where["line"] if same else None


def diagnostic_lines(diag: dict, source: Path) -> list[int]:
    """The lines of ``source`` a diagnostic names: its own (`source_line`),
    then its related locations' (the JSON output's ``related``: each with
    the ``path`` and ``line`` of its origin, or of its span without one),
    each once."""
    out = []
    own = source_line(diag, source)
    if own is not None:
        out.append(own)
    for rel in diag.get("related") or []:
        if rel.get("line") is None:
            continue
        n = source_line({"path": rel.get("path"), "line": rel["line"]}, source)
        if n is not None and n not in out:
            out.append(n)
    return out


def planted_match(diag: dict, source: Path, planted: set[tuple[str, int]]) -> tuple[str, int] | None:
    """The planted marker ``(code, line)`` a diagnostic finds: one of its
    code on its own line or on one of its related locations' lines."""
    for n in diagnostic_lines(diag, source):
        if (diag["code"], n) in planted:
            return (diag["code"], n)
    return None


def twin_names(marks: list[Marker], spans: dict[str, tuple[int, int]]) -> set[str]:
    """The kernels that hold a planted marker."""
    lines = [m.line for m in marks if m.kind == "planted"]
    return {name for name, (first, last) in spans.items() if any(first <= n <= last for n in lines)}


def sort_diagnostics(report: FileReport, diags: list[dict], source: Path, marks: list[Marker],
                     twins: set[str], examples: int) -> None:
    planted = {(m.code, m.line) for m in marks if m.kind == "planted"}
    latent = {(m.code, m.line) for m in marks if m.kind == "latent"}
    found, latent_hit = set(), set()
    alarms: Counter[str] = Counter()
    for d in diags:
        code, severity = d["code"], d["severity"]
        report.tl002 += code == "TL002"
        report.tl005 += code == "TL005"
        if code in ("TL001", "TL004"):
            report.tool_errors += 1
        if severity == "warning":
            report.warnings += 1
        elif severity == "info":
            report.infos += 1
        if severity != "error" or code.startswith("TL0"):
            continue
        key = (code, source_line(d, source))
        hit = planted_match(d, source, planted)
        if hit is not None:
            found.add(hit)
        elif key in latent:
            latent_hit.add(key)
        elif source_name(d.get("kernel")) in twins:
            report.twin_extra += 1
        else:
            alarms[code] += 1
            if len(report.examples) < examples:
                report.examples.append(f"{code} line {key[1]}: {d['message']}")
    report.false_alarms = dict(sorted(alarms.items()))
    report.planted_total, report.planted_found = len(planted), len(found)
    report.planted_missed = [f"{c} line {n}" for c, n in sorted(planted - found, key=lambda k: k[1])]
    report.latent_total, report.latent_reported = len(latent), len(latent_hit)


def measure_cuda(cu: Path, ptx: Path, compile_error: str | None, budget_s: float,
                 examples: int) -> FileReport:
    text = cu.read_text(encoding="utf-8")
    report = FileReport(str(cu.relative_to(REPO)))
    if compile_error:
        report.failure = f"nvcc: {compile_error}"
        return report
    marks = markers_in(text)
    twins = twin_names(marks, cuda_kernel_spans(text))
    entries = re.findall(r"\.entry\s+(\w+)", ptx.read_text())
    report.kernels = len(entries)
    report.twin_kernels = sum(source_name(e) in twins for e in entries)  # every instantiation
    diags, report.lint_s, report.failure = lint(ptx, budget_s)
    report.ptxas_s = ptxas_seconds(ptx)
    if diags is not None:
        sort_diagnostics(report, diags, cu, marks, twins, examples)
    return report


def measure_python(py: Path, budget_s: float, examples: int) -> FileReport:
    text = py.read_text(encoding="utf-8")
    tree = ast.parse(text)
    marks = markers_in(text)
    twins = twin_names(marks, python_kernel_spans(tree))
    report = FileReport(str(py.relative_to(REPO)), kernels=python_kernel_count(tree), twin_kernels=len(twins))
    diags, report.lint_s, report.failure = lint(py, budget_s)
    if diags is not None:
        sort_diagnostics(report, diags, py, marks, twins, examples)
    return report


# -- the table ------------------------------------------------------------------------

HEADER = ("file", "kern", "twin", *(c[2:] for c in FALSE_ALARM_COLUMNS), "oth", "twin+", "planted",
          "latent", "warn", "info", "TL002", "TL005", "lint s", "ptxas s")


def row(r: FileReport) -> list[str]:
    other = sum(n for c, n in r.false_alarms.items() if c not in FALSE_ALARM_COLUMNS)
    name = Path(r.path).name + (" !" if r.failure or r.tool_errors else "")
    return [name, str(r.kernels), str(r.twin_kernels),
            *(str(r.false_alarms.get(c, 0)) for c in FALSE_ALARM_COLUMNS), str(other), str(r.twin_extra),
            f"{r.planted_found}/{r.planted_total}", f"{r.latent_reported}/{r.latent_total}",
            str(r.warnings), str(r.infos), str(r.tl002), str(r.tl005), f"{r.lint_s:.1f}",
            "-" if r.ptxas_s is None else f"{r.ptxas_s:.2f}"]


def totals(reports: list[FileReport]) -> FileReport:
    t = FileReport("TOTAL")
    alarms: Counter[str] = Counter()
    for r in reports:
        alarms.update(r.false_alarms)
        for name in ("kernels", "twin_kernels", "twin_extra", "planted_total", "planted_found",
                     "latent_total", "latent_reported", "warnings", "infos", "tl002", "tl005", "tool_errors",
                     "lint_s"):
            setattr(t, name, getattr(t, name) + getattr(r, name))
        if r.ptxas_s is not None:
            t.ptxas_s = (t.ptxas_s or 0.0) + r.ptxas_s
    t.false_alarms = dict(sorted(alarms.items()))
    return t


def print_table(reports: list[FileReport]) -> None:
    rows = [list(HEADER)] + [row(r) for r in reports] + [row(totals(reports))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    for n, r in enumerate(rows):
        cells = [cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))]
        print("  ".join(cells))
        if n == 0 or n == len(rows) - 2:
            print("  ".join("-" * w for w in widths))


def print_notes(reports: list[FileReport]) -> None:
    t = totals(reports)
    print(f"\nfalse alarms (error level, correct kernels): {sum(t.false_alarms.values())} "
          + " ".join(f"{c}:{n}" for c, n in t.false_alarms.items()))
    print(f"planted bugs found: {t.planted_found}/{t.planted_total}; "
          f"other errors in twin kernels: {t.twin_extra}; "
          f"latent constructs reported: {t.latent_reported}/{t.latent_total}")
    for r in reports:
        for miss in r.planted_missed:
            print(f"  missed: {r.path} {miss}")
        if r.failure:
            print(f"  not measured: {r.path}: {r.failure}")
        if r.tool_errors:
            print(f"  TL001/TL004: {r.path}: {r.tool_errors}")
    for r in reports:
        if r.examples:
            print(f"\n{r.path}:")
            for e in r.examples:
                print(f"  {e[:400]}")


# -- main -----------------------------------------------------------------------------


def corpus_files(paths: list[str]) -> tuple[list[Path], list[Path]]:
    if paths:
        files = [Path(p).resolve() for p in paths]
    else:
        files = sorted(CUDA_DIR.glob("*.cu")) + sorted(NUMBA_DIR.glob("*.py"))
    return [f for f in files if f.suffix == ".cu"], [f for f in files if f.suffix == ".py"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="corpus files to measure (default: the whole corpus)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="files compiled and linted at once")
    ap.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH ('-': stdout)")
    ap.add_argument("--time-budget", type=float, default=TIME_BUDGET_S, metavar="S",
                    help=f"tolk-lint's --time-budget per file (default {TIME_BUDGET_S}); wall time: "
                         "a loaded machine finishes less (TL005)")
    ap.add_argument("--examples", type=int, default=0, metavar="N",
                    help="print N false-alarm messages per file")
    args = ap.parse_args()

    cu_files, py_files = corpus_files(args.files)
    if cu_files and not (shutil.which("nvcc") and shutil.which("ptxas")):
        print("nvcc and ptxas are needed for the CUDA corpus; measuring the Python files only",
              file=sys.stderr)
        cu_files = []

    with (tempfile.TemporaryDirectory(prefix="tolk-real-corpus-") as tmp,
          ThreadPoolExecutor(args.jobs) as pool):
        ptx_of = {cu: Path(tmp) / (cu.stem + ".ptx") for cu in cu_files}
        start = time.perf_counter()
        compile_errors = dict(zip(cu_files, pool.map(lambda cu: compile_ptx(cu, ptx_of[cu]), cu_files)))
        compile_s = time.perf_counter() - start
        if cu_files:
            print(f"nvcc -ptx -lineinfo -arch=sm_80: {len(cu_files)} files in {compile_s:.1f} s "
                  f"(-j {args.jobs})", file=sys.stderr)
        budget, n = args.time_budget, args.examples
        jobs = [pool.submit(measure_cuda, cu, ptx_of[cu], compile_errors[cu], budget, n) for cu in cu_files]
        jobs += [pool.submit(measure_python, py, budget, n) for py in py_files]
        reports = [j.result() for j in jobs]

    print_table(reports)
    print_notes(reports)
    if args.json:
        out = {"compile_s": round(compile_s, 2), "jobs": args.jobs, "time_budget_s": args.time_budget,
               "files": [asdict(r) for r in reports], "total": asdict(totals(reports))}
        text = json.dumps(out, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
