#!/usr/bin/env python3
"""Fuzz the whole lint pipeline for as long as you like, in parallel.

    python bench/fuzz.py [--cases 100000] [-j N] [--seed 1] [--budget 1.0] [--cuda]
                         [--log fuzz.jsonl] [--save fuzz_found/] [--start 0]

Runs the cases of `tests/fuzzer.py` (real kernels, mutated; each case fully
determined by ``(seed, index)``) in ``-j`` worker processes, each linting in
process through `tolk_lint.engine.lint_text` under a per-case time budget,
and prints how the cases ended: parse errors (TL001), unsupported
constructs (TL002), budgets run out (TL005), and what must never happen:
internal errors (TL004), exceptions, hangs (a lint past its budget by more
than `fuzzer.HANG_SLACK` seconds, or one a worker never came back from).

``--log FILE`` records every finished chunk of cases (and every bad case)
as a line of JSON; run the same command again and it resumes where it
stopped, adding to the counts (the seed, the budget and the seed files must
be the same: the log's first line says which). ``--save DIR`` writes each
bad case's input there, named by its index, for `tests/fuzz_regressions/`.
``--cuda`` adds the CUDA C fixtures compiled by ``nvcc -ptx`` to the seeds.

A script, not a test: ``tests/test_fuzz.py`` runs 2,000 cases in CI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import fuzzer  # noqa: E402 - tests/ is put on the path first

CHUNK = 250  # cases per worker run (a fresh process each: a hang leaves a thread behind)


def cuda_seeds(out_dir: Path) -> list[Path]:
    """The CUDA C fixtures compiled by nvcc (those that compile)."""
    from tolk_lint.testing import compile_cuda

    if shutil.which("nvcc") is None:
        raise SystemExit("--cuda: nvcc is not installed")
    out = []
    for cu in sorted((REPO / "fixtures" / "cuda").rglob("*.cu")):
        try:
            out.append(compile_cuda(cu, out_dir=str(out_dir)))
        except Exception as e:  # noqa: BLE001 - a fixture nvcc rejects is not a seed
            print(f"fuzz: {cu.name} does not compile ({e}); left out", file=sys.stderr)
    return out


def seeds_digest(seeds: list[fuzzer.Seed]) -> str:
    h = hashlib.sha256()
    for s in seeds:
        h.update(s.path.encode() + b"\0" + s.text.encode() + b"\0")
    return h.hexdigest()[:16]


# -- a worker: one chunk of cases, one line per case on stdout ------------------------------------


def worker(args) -> None:
    extra = tuple(Path(p) for p in args.extra)
    seeds = fuzzer.seed_files(extra)
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import load_tool

    load_tool(DEFAULT_SETTINGS, "ptx")
    load_tool(DEFAULT_SETTINGS, "python")
    for i in range(args.start, args.start + args.count):
        print(json.dumps({"start": i}), flush=True)
        case = fuzzer.make_case(seeds, args.seed, i)
        o = fuzzer.outcome(case, args.budget)
        rec = {"i": i, "kind": o.kind, "codes": sorted(o.codes), "s": round(o.seconds, 3)}
        if o.bad:
            rec.update(seed=case.seed.path, mutations=case.mutations, detail=o.detail[:2000],
                       data=case.data.decode("utf-8", "surrogateescape"))  # fmt: skip
        print(json.dumps(rec), flush=True)
        if o.kind == "hang":
            return  # its lint may still be running on another thread: a fresh process goes on


# -- the parent ---------------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.counts: Counter = Counter()
        self.seconds = 0.0
        self.bad: list[dict] = []

    def add(self, rec: dict) -> None:
        self.cases += 1
        self.seconds += rec.get("s", 0.0)
        if rec["kind"] != "ok":
            self.counts[rec["kind"]] += 1
        for c in rec["codes"]:
            self.counts[c] += 1
        if rec["kind"] != "ok" or "TL004" in rec["codes"]:
            self.bad.append(rec)

    def merge(self, chunk: dict) -> None:
        self.cases += chunk["cases"]
        self.seconds += chunk["seconds"]
        self.counts.update(chunk["counts"])

    def line(self, wall: float, earlier: int = 0) -> str:
        """The counts; the rate is of the cases run in ``wall`` (not the ``earlier`` ones of the log)."""
        c = self.counts
        rate = (self.cases - earlier) / wall if wall > 0 else 0.0
        return (f"{self.cases} cases: TL001 {c['TL001']}, TL002 {c['TL002']}, TL005 {c['TL005']}, "
                f"TL004 {c['TL004']}, exceptions {c['exception']}, hangs {c['hang']}; "
                f"{wall:.0f} s ({rate:.1f} cases/s)")  # fmt: skip


def save_case(save: Path, rec: dict) -> None:
    save.mkdir(parents=True, exist_ok=True)
    suffix = Path(rec.get("seed", "x.ptx")).suffix
    (save / f"case{rec['i']}{suffix}").write_bytes(rec["data"].encode("utf-8", "surrogateescape"))
    meta = {k: v for k, v in rec.items() if k != "data"}
    (save / f"case{rec['i']}.json").write_text(json.dumps(meta, indent=1) + "\n")


def run(args) -> int:
    tmp = None
    extra: list[Path] = []
    if args.cuda:
        tmp = tempfile.mkdtemp(prefix="tolk-fuzz-ptx-")
        extra = cuda_seeds(Path(tmp))
    seeds = fuzzer.seed_files(tuple(extra))
    header = {"seed": args.seed, "budget": args.budget, "seeds": len(seeds), "digest": seeds_digest(seeds)}
    recorded: dict[int, dict] = {}  # chunk start -> its counts, from the log
    tally = Tally()
    log = None
    if args.log:
        logp = Path(args.log)
        if logp.exists() and logp.stat().st_size:
            lines = logp.read_text().splitlines()
            first = json.loads(lines[0])
            if {k: first.get(k) for k in header} != header:
                raise SystemExit(f"{logp}: recorded for {first}, not {header}: use another --log")
            for ln in lines[1:]:
                rec = json.loads(ln)
                if "chunk" in rec:
                    recorded[rec["chunk"]] = rec
            log = open(logp, "a")
        else:
            log = open(logp, "w")
            log.write(json.dumps(header) + "\n")
    last = args.start + args.cases
    todo = []
    for s in range(args.start, last, CHUNK):
        n = min(CHUNK, last - s)
        if s in recorded and recorded[s]["cases"] == n:
            tally.merge(recorded[s])
        else:
            todo.append((s, n))
    done = tally.cases
    if done:
        print(f"fuzz: resuming {args.log}: {done} cases done, {sum(n for _, n in todo)} to go", flush=True)
    save = Path(args.save) if args.save else None
    base = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seed", str(args.seed),
            "--budget", str(args.budget)] + [a for p in extra for a in ("--extra", str(p))]  # fmt: skip
    case_timeout = args.budget + fuzzer.HANG_SLACK + 90  # the alarm inside the worker fires well before
    chunks = {s: {"chunk": s, "size": n, "cases": 0, "counts": Counter(), "seconds": 0.0} for s, n in todo}
    pending = [(s, s, n) for s, n in todo]  # (chunk, first case, count)
    running: dict = {}  # worker -> {"chunk", "next", "end", "current", "since"}
    sel = selectors.DefaultSelector()
    start_wall = last_print = time.monotonic()

    def launch(chunk: int, first: int, count: int) -> None:
        p = subprocess.Popen(base + ["--start", str(first), "--count", str(count)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, cwd=REPO)  # fmt: skip
        running[p] = {"chunk": chunk, "first": first, "next": first, "end": first + count, "current": None,
                      "since": 0.0}  # fmt: skip
        sel.register(p.stdout, selectors.EVENT_READ, p)

    def record(st: dict, rec: dict) -> None:
        ch = chunks[st["chunk"]]
        ch["cases"] += 1
        ch["seconds"] += rec.get("s", 0.0)
        if rec["kind"] != "ok":
            ch["counts"][rec["kind"]] += 1
        ch["counts"].update(rec["codes"])
        tally.add(rec)
        st["next"] = rec["i"] + 1
        if rec["kind"] == "ok" and "TL004" not in rec["codes"]:
            return
        print(f"fuzz: case {rec['i']} ({rec.get('seed')} {'+'.join(rec.get('mutations', []))}): "
              f"{rec['kind']} {' '.join(rec['codes'])} {rec.get('detail', '')[:300]}", flush=True)  # fmt: skip
        if save is not None and rec.get("data"):
            save_case(save, rec)
        if log is not None:
            log.write(json.dumps(rec) + "\n")
            log.flush()

    def finish(p, killed: bool) -> None:
        st = running.pop(p)
        sel.unregister(p.stdout)
        if killed:  # no answer within the case's timeout: that case hangs
            record(st, {"i": st["current"], "kind": "hang", "codes": [], "s": 0.0,
                        "detail": "the worker never answered", "seed": "", "mutations": []})  # fmt: skip
        if st["next"] < st["end"]:  # stopped early (after a hang): a fresh worker does the rest
            if st["next"] == st["first"] and not killed:
                raise SystemExit(f"fuzz: a worker died before its first case ({base[:2]} --start {st['next']}); "
                                 "run it alone to see why")  # fmt: skip
            pending.insert(0, (st["chunk"], st["next"], st["end"] - st["next"]))
            return
        ch = chunks[st["chunk"]]
        if log is not None and ch["cases"] == ch["size"]:
            log.write(json.dumps({k: v for k, v in ch.items() if k != "size"}) + "\n")
            log.flush()

    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                launch(*pending.pop(0))
            for key, _ in sel.select(timeout=1.0):
                p = key.data
                line = p.stdout.readline()
                if not line:
                    p.wait()
                    finish(p, killed=False)
                    continue
                rec = json.loads(line)
                st = running[p]
                if "start" in rec:
                    st["current"], st["since"] = rec["start"], time.monotonic()
                else:
                    st["current"] = None
                    record(st, rec)
            now = time.monotonic()
            for p, st in list(running.items()):
                if st["current"] is not None and now - st["since"] > case_timeout:
                    p.kill()
                    p.wait()
                    finish(p, killed=True)
            if now - last_print > 60:
                last_print = now
                print("fuzz: " + tally.line(now - start_wall, done), flush=True)
    except KeyboardInterrupt:
        print("fuzz: interrupted; run the same command to resume", flush=True)
    finally:
        for p in running:
            p.kill()
        if log is not None:
            log.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - start_wall
    print("fuzz: " + tally.line(wall, done) + (f" (the time is this run's; {done} cases came from the log)" if done else ""))
    c = tally.counts
    bad = c["TL004"] + c["exception"] + c["hang"]
    print(f"fuzz: {bad} bad cases" + (f" (saved in {save})" if bad and save else ""))
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--start", type=int, default=0, help="the first case index")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=1.0, help="each case's time budget, in seconds")
    ap.add_argument("--cuda", action="store_true", help="add the CUDA C fixtures, compiled by nvcc, as seeds")
    ap.add_argument("--log", help="record progress here; run again to resume")
    ap.add_argument("--save", default="fuzz_found", help="where bad cases' inputs are written")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=CHUNK, help=argparse.SUPPRESS)
    ap.add_argument("--extra", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
