"""Cold versus warm `tolk-lint check` over a folder of 200 kernels.

Copies the fixture and acceptance kernels (.py and .ptx, not the corpus; the CUDA C sources
next to the PTX too, so `.loc` origins and their noqa comments resolve) into
a temporary folder until it holds 200 kernel files, then times, each as a
fresh `tolk-lint check` process:

1. cold: no cache folder;
2. warm: the same command again, every file answered from `.tolk_lint_cache`;
3. warm after touching one file's content: one file linted again;
4. with ``--no-cache-too``, a `--no-cache` run, for reference.

    python bench/bench_cache.py [--files 200] [--jobs N] [--no-cache-too]

A benchmark, not a test: it prints the times and the speed-up, and says
whether the cold and warm runs printed the same report. It runs a copy
of the package (`snapshot`), so edits to the checkout meanwhile do not count.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCEPTANCE = os.path.join(os.path.dirname(REPO), "shared", "acceptance")


def sources() -> list[str]:
    """Fixture, acceptance and example kernels; not fixtures/corpus, whose
    largest files take minutes each and would make the cold run about them."""
    found = sorted(p for p in glob.glob(os.path.join(REPO, "fixtures", "**", "*"), recursive=True)
                   if p.endswith((".py", ".ptx")) and os.sep + "corpus" + os.sep not in p)  # fmt: skip
    found += sorted(glob.glob(os.path.join(ACCEPTANCE, "numba", "*.py")))
    found += sorted(glob.glob(os.path.join(ACCEPTANCE, "cuda", "*.ptx")))
    found += sorted(glob.glob(os.path.join(REPO, "examples", "*.py")))
    found += sorted(glob.glob(os.path.join(REPO, "examples", "*.ptx")))
    return found


def make_tree(dst: str, n: int) -> int:
    srcs = sources()
    if not srcs:
        raise SystemExit("no kernels to copy (fixtures/, examples/, the acceptance set beside the clone)")
    count = 0
    round_ = 0
    while count < n:
        folder = os.path.join(dst, f"copy{round_:02d}")
        os.makedirs(folder, exist_ok=True)
        for src in srcs:
            if count >= n:
                break
            name = os.path.basename(src)
            shutil.copy2(src, os.path.join(folder, name))
            if name.endswith(".ptx"):  # the CUDA C it came from, for origins (not linted)
                cu = os.path.join(os.path.dirname(src), name.split(".")[0] + ".cu")
                if os.path.exists(cu):
                    shutil.copy2(cu, os.path.join(folder, os.path.basename(cu)))
            count += 1
        round_ += 1
    return count


def snapshot(dst: str) -> str:
    """A copy of the package (tolk_lint with its rules) to run from, so that
    edits made to the checkout during the benchmark do not change the tool's
    fingerprint between the cold and the warm run."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(os.path.join(REPO, "tolk_lint"), os.path.join(dst, "tolk_lint"), ignore=ignore)
    shutil.copytree(os.path.join(REPO, "rules"), os.path.join(dst, "tolk_lint", "rules"), ignore=ignore,
                    dirs_exist_ok=True)  # fmt: skip
    return dst


ENV = dict(os.environ)


def timed(cmd: list[str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
    dt = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return dt, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--no-cache-too", action="store_true", help="also time a --no-cache run (as long as cold)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tolk-bench-cache-")
    n = make_tree(os.path.join(tmp, "kernels"), a.files)
    ENV["PYTHONPATH"] = snapshot(os.path.join(tmp, "tool"))
    tmp = os.path.join(tmp, "kernels")
    base = [sys.executable, "-m", "tolk_lint", "check", "--output-format", "json", "--exit-zero", "."]
    if a.jobs:
        base[4:4] = ["-j", str(a.jobs)]
    print(f"{n} kernel files in {tmp} ({os.cpu_count()} CPUs)")
    cold, c = timed(base, tmp)
    warm, w = timed(base, tmp)
    first = sorted(glob.glob(os.path.join(tmp, "copy00", "*.py")))[0]
    with open(first, "a", encoding="utf-8") as f:
        f.write("\n# touched\n")
    one, _ = timed(base, tmp)
    nocache = timed(base + ["--no-cache"], tmp)[0] if a.no_cache_too else None
    found = c.stdout.count('"code":')
    print(f"cold (no cache):          {cold:8.2f} s   ({found} diagnostics)")
    print(f"warm (all cached):        {warm:8.2f} s   speed-up {cold / warm:6.1f}x")
    print(f"warm, one file changed:   {one:8.2f} s")
    if nocache is not None:
        print(f"--no-cache:               {nocache:8.2f} s")
    same = "the same report" if c.stdout == w.stdout else "DIFFERENT reports (a bug)"
    print(f"cold and warm runs printed {same}")
    shutil.rmtree(os.path.dirname(tmp), ignore_errors=True)


if __name__ == "__main__":
    main()
