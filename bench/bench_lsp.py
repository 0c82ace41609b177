"""How long from a `didChange` to its `publishDiagnostics`, through the real server.

Starts `tolk-lint lsp` over stdio with pygls's client, opens a generated
1,000-line Numba file and a 5,000-line PTX file (copies of the acceptance
kernels, renamed), then makes 50 edits to each, one at a time: each edit
rewrites the last line (a comment holding the edit number), or with
``--where middle`` a trailing comment on a line of code inside the kernel
in the middle of the file (typing in one kernel: the server re-analyses that
kernel and reuses the others' findings), and the time is taken from sending
the change until the diagnostics for that document version arrive.
Reported: p50 and p95, with the server's default (no debounce: an edit to
an idle document is linted at once) and with a 0.3 s debounce
(``--debounce``); and the opening: the time to the first diagnostics (the
server publishes a first lint's findings as it goes) and to the complete
ones (the last publish of version 1: a lint cut by the server's 5 s budget
is finished in the background and published again, and the edits start
once that is in).

    python bench/bench_lsp.py [--edits 50] [--only-default] [--baseline]
                              [--files both|numba|ptx] [--where end|middle]
                              [--debounce 0.3]

``--baseline`` also times `tolk_lint.engine.lint_text` on each file in this
process (median of 3): the part of the latency that is the lint itself.

A benchmark, not a test: it prints numbers and asserts nothing but that
diagnostics arrive.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import re
import statistics
import sys
import tempfile
import time

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCEPTANCE = os.path.join(os.path.dirname(REPO), "shared", "acceptance")


# ---------------------------------------------------------------- the files


def numba_file(lines: int = 1000) -> str:
    """Acceptance Numba kernels, renamed and repeated to ``lines`` lines."""
    sources = sorted(glob.glob(os.path.join(ACCEPTANCE, "numba", "*.py"))) or \
        sorted(glob.glob(os.path.join(REPO, "fixtures", "**", "*.py"), recursive=True))  # fmt: skip
    head = ["import math", "import numpy as np", "from numba import cuda, njit, float32, int32", ""]
    out = list(head)
    i = 0
    while len(out) < lines - 1:
        src = open(sources[i % len(sources)], encoding="utf-8").read()
        body = [ln for ln in src.splitlines() if not ln.startswith(("import ", "from "))]
        text = "\n".join(body)
        text = re.sub(r"\bdef (\w+)", lambda m: f"def {m.group(1)}_{i}", text)
        out += text.splitlines()
        i += 1
    out = out[: lines - 1]
    out.append("# edit 0")
    return "\n".join(out) + "\n"


def ptx_file(lines: int = 5000) -> str:
    """Entries of the acceptance PTX (sm_80), renamed and repeated to
    ``lines`` lines, under one header; ``.loc`` lines kept, pointing at the
    first file's ``.file`` table."""
    sources = sorted(glob.glob(os.path.join(ACCEPTANCE, "cuda", "*.sm80.ptx")))
    header: list[str] = []
    files: list[str] = []
    bodies: list[str] = []
    for path in sources:
        text = open(path, encoding="utf-8").read()
        lines_ = text.splitlines()
        first = next((k for k, ln in enumerate(lines_) if re.match(r"\s*(\.visible\s+|\.weak\s+)?\.(entry|func)", ln)),
                     len(lines_))  # fmt: skip
        if not header:
            header = [ln for ln in lines_[:first] if not ln.strip().startswith(".file")]
        rest = [ln for ln in lines_[first:]]
        files += [ln for ln in lines_ if ln.strip().startswith(".file")]
        body = "\n".join(ln for ln in rest if not ln.strip().startswith(".file"))
        # .loc names a file by number: keep the numbers the first file's table defines
        body = re.sub(r"\.loc\s+\d+", ".loc 1", body)
        bodies.append(body)
    table = [ln for ln in files if re.match(r"\s*\.file\s+1\b", ln)][:1]
    out = list(header)
    i = 0
    while len(out) < lines - len(table) - 1:
        b = bodies[i % len(bodies)]
        b = re.sub(r"(\.entry|\.func)(\s+)(\w+)", lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}_{i}", b)
        b = re.sub(r"\b(__local_depot|__cudart_\w*|_Z\w+)", lambda m: f"{m.group(1)}_{i}", b)
        out += b.splitlines()
        i += 1
    out += table
    out.append("// edit 0")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- the client


class Bench:
    def __init__(self) -> None:
        self.client = LanguageClient("tolk-lint-bench", "0")
        self.arrived: dict[tuple[str, int], float] = {}  # the first publish of each version
        self.last: dict[tuple[str, int], float] = {}  # its last (the complete one, after progress)
        self.counts: dict[tuple[str, int], int] = {}
        self.stopped: dict[tuple[str, int], bool] = {}  # whether its last publish held a TL005
        self.event = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(ls, params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version or 0)
            self.arrived.setdefault(key, time.perf_counter())
            self.last[key] = time.perf_counter()
            self.counts[key] = len(params.diagnostics)
            self.stopped[key] = any(d.code == "TL005" for d in params.diagnostics)
            self.event.set()

    async def start(self, debounce: float | None) -> None:
        await self.client.start_io(sys.executable, "-m", "tolk_lint", "lsp")
        opts = {"debounce": debounce} if debounce is not None else None
        caps = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)))  # fmt: skip
        await self.client.initialize_async(
            types.InitializeParams(capabilities=caps, initialization_options=opts)
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    async def wait(self, uri: str, version: int, timeout: float = 3600.0) -> float:
        end = time.perf_counter() + timeout
        while (uri, version) not in self.arrived:
            self.event.clear()
            left = end - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                await asyncio.wait_for(self.event.wait(), left)
            except TimeoutError:
                pass
        return self.arrived[(uri, version)]

    async def run(
        self, uri: str, text: str, language: str, edits: int, where: str = "end"
    ) -> tuple[list[float], tuple[float, float], int]:
        t0 = time.perf_counter()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        first = await self.wait(uri, 1) - t0
        await self.quiet(uri, 1)
        complete = self.last[(uri, 1)] - t0
        lines = text.splitlines()
        marker = "#" if language == "python" else "//"
        last, base = len(lines) - 1, ""
        if where == "middle":  # a line of code inside a kernel (indented), near the middle
            code = [i for i, ln in enumerate(lines) if ln[:1].isspace() and ln.strip()
                    and not ln.strip().startswith(marker)]  # fmt: skip
            last = next(i for i in code if i >= len(lines) // 2)
            base = lines[last] + "  "
        times = []
        for v in range(2, edits + 2):
            old = lines[last]
            new = f"{base}{marker} edit {v}"
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=last, character=0),
                                  end=types.Position(line=last, character=len(old))),
                text=new)  # fmt: skip
            lines[last] = new
            sent = time.perf_counter()
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=v),
                    content_changes=[change],
                )
            )
            got = await self.wait(uri, v)
            times.append(got - sent)
        return times, (first, complete), self.counts.get((uri, edits + 1), -1)

    async def quiet(self, uri: str, version: int, seconds: float = 5.5, stopped: float = 35.0) -> None:
        """Until the complete diagnostics of ``version`` are in: its last
        publish holds no TL005 and nothing came for ``seconds`` (a first lint
        publishes as it goes, for at most the 5 s budget), or one with
        a TL005 came ``stopped`` seconds ago (the server publishes a lint cut
        by its 5 s budget, then finishes it in rounds of the file's 30 s)."""
        key = (uri, version)
        while time.perf_counter() - self.last[key] < (stopped if self.stopped.get(key) else seconds):
            await asyncio.sleep(0.1)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, round(p / 100 * (len(xs) - 1))))
    return xs[k]


async def main(
    edits: int, debounces: list[float | None], which: str = "both", where: str = "end"
) -> None:
    tmp = tempfile.mkdtemp(prefix="tolk-bench-lsp-")
    docs = []
    todo = [("big_numba.py", numba_file, 1000, "python", "numba"), ("big.ptx", ptx_file, 5000, "ptx", "ptx")]
    for name, make, lines, language, key in todo:
        if which not in ("both", key):
            continue
        text = make(lines)
        path = os.path.join(tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        docs.append((path, text, language))
    print(
        f"files in {tmp}: "
        + ", ".join(f"{os.path.basename(p)} ({t.count(chr(10))} lines)" for p, t, _ in docs)
        + f"; edits at the {'last line' if where == 'end' else 'middle of the file'}"
    )
    for debounce in debounces:
        label = "default (no debounce)" if debounce is None else f"debounce {debounce:g} s"
        b = Bench()
        await b.start(debounce)
        try:
            for path, text, language in docs:
                uri = "file://" + path
                times, (first, complete), n = await b.run(uri, text, language, edits, where)
                ms = [t * 1000 for t in times]
                print(f"{label:>26} | {os.path.basename(path):>13}: open: first {first * 1000:6.0f} ms, "
                      f"complete {complete * 1000:6.0f} ms | "
                      f"didChange -> publishDiagnostics over {len(ms)} edits: p50 {statistics.median(ms):7.1f} ms, "
                      f"p95 {pct(ms, 95):7.1f} ms, max {max(ms):7.1f} ms ({n} diagnostics)")  # fmt: skip
        finally:
            await b.stop()


def baseline() -> None:
    from tolk_lint.engine import lint_text

    for name, text in (("big_numba.py", numba_file(1000)), ("big.ptx", ptx_file(5000))):
        path = os.path.join(tempfile.mkdtemp(prefix="tolk-bench-lsp-"), name)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            lint_text(text, path)
            times.append(time.perf_counter() - t0)
        print(
            f"{'lint_text in process':>26} | {name:>13}: median of 3 {statistics.median(times) * 1000:7.0f} ms"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--only-default", action="store_true", help="only the server's default")
    ap.add_argument("--debounce", type=float, default=0.3, help="the debounce timed beside the default")
    ap.add_argument("--baseline", action="store_true", help="also time lint_text in process")
    ap.add_argument("--files", choices=["both", "numba", "ptx"], default="both")
    ap.add_argument("--where", choices=["end", "middle"], default="end",
                    help="edit the last line (a comment), or a line of code in the middle kernel")  # fmt: skip
    a = ap.parse_args()
    if a.baseline:
        baseline()
    asyncio.run(main(a.edits, [None] if a.only_default else [None, a.debounce], a.files, a.where))
