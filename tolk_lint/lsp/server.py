"""``tolk-lint lsp``: the language server (pygls 2.x, over stdio).

What it does, for ``.py`` and ``.ptx`` documents:

- Diagnostics. A client that supports pull diagnostics
  (``textDocument/diagnostic``) pulls them; any other client gets them
  pushed (``textDocument/publishDiagnostics``) on open, on change and on
  save. Never both, or an editor would show each diagnostic twice (ruff's
  choice). A change is linted at once when no lint of that document is
  running; changes that arrive while one runs stop it and coalesce: one
  lint is pending per document, always of its newest version, and a result
  is published only while its version is the document's newest (`schedule`).
  A document's first lint publishes as it goes (`PROGRESS_SECONDS`): the
  kernels already analysed, then all of them. Each carries its related locations (the
  chain of reasons; for PTX the CUDA C line), ``codeDescription.href`` (the
  rule's page) and its fix in ``data``.
- Code actions: per diagnostic a quick fix (when it has one) and "ignore with
  ``tolk: noqa: CODE``" (appended to the line's noqa, or a new ``#`` / ``//``
  comment); and ``source.fixAll.tolk``, every safe fix of the document that
  does not overlap another. An unsafe fix that a second lint proves (TL302's
  cp.async pipeline) is worked out when the editor asks for that
  diagnostic's actions, for its kernel alone (`fix_when_asked`), not at
  every lint.
- Hover over a code in a noqa comment, or over a flagged range: the rule's
  documentation.
- Settings: the nearest ``pyproject.toml`` with ``[tool.tolk-lint]`` above
  each document, re-read when it changes (watched when the client allows,
  else checked by modification time on every lint).
- Robustness: each document's text is linted in memory
  (`tolk_lint.engine.lint_text`) on a pool of worker threads, one lint per
  document at a time, so the event loop keeps answering and a slow document
  never holds up the others. Each lint runs under a budget
  (`LINT_TIME_BUDGET` seconds, ``initializationOptions.timeBudget``; past it
  the document shows TL005) and is cancelled when a newer version of its
  document arrives; results for an outdated version are dropped. Each
  thread has its own Z3 context. An exception while linting becomes a TL004
  diagnostic at the top of that document, and a bad configuration an error
  diagnostic naming the file. A malformed request gets a JSON-RPC error
  response (``InvalidParams``, ``InternalError``); a malformed notification
  is logged. The server goes on, and never shows pop-ups for its own
  errors (they go to the client's log).
- Speed: kernels an edit did not touch reuse their findings from the
  document's previous lint (`tolk_lint.engine.KernelCache`: keyed by the
  kernel's text and first line, the code around the kernels, the settings
  and the tool, from the text alone: a PTX entry is not even parsed, a
  Python kernel not lowered),
  so an edit re-analyses only the kernels it changed or moved. A kernel
  whose analysis ran out of all the time a lint gives it keeps its TL005
  until it changes or the document is saved, rather than spending every
  edit's budget again.
- Finishing in the background: a lint cut short by the server's budget is
  published as it stands (its TL005 say which kernels stopped), then the
  same version is linted again under the file's own budget (``time-budget``,
  30 s by default, as on the command line), with the finished kernels from
  the kernel cache, and published again when done (in rounds, while each
  finishes some kernel). So the kernels the first lint did not reach are
  analysed while the user reads, not by the next edits, each of which would
  otherwise spend its own budget on them. A newer version cancels it (and
  the solver question under way: `tolk_lint.budget.Cancel`); a pulling
  client gets no second answer.

``initializationOptions`` may hold ``{"debounce": seconds, "timeBudget": seconds}``:
``debounce`` (default 0) waits that long after the last edit before a lint.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from tolk_lint import __version__
from tolk_lint.budget import Budget, Cancel
from tolk_lint.config import DEFAULT_SETTINGS, ConfigError, Settings, SettingsResolver
from tolk_lint.diagnostics import Applicability, Diagnostic, Severity
from tolk_lint.ir.nodes import Span
from tolk_lint.lsp.convert import SOURCE, Positions, text_edits, to_lsp

log = logging.getLogger("tolk_lint.lsp")

FIX_ALL = "source.fixAll.tolk"
# Edits that arrive while a lint runs coalesce into one lint of the newest
# version, so no delay is needed to keep typing from queueing lints; a
# client may still ask for one (``initializationOptions.debounce``).
DEBOUNCE_SECONDS = 0.0
# A document's first lint (nothing published for it yet) publishes what it has
# found so far when it has run this long since its last publish.
PROGRESS_SECONDS = 0.25
# An edit must not wait long for its diagnostics: a lint stops after this
# many seconds (TL005 says so; `tolk-lint check` runs the full analysis).
LINT_TIME_BUDGET = 5.0
LINT_THREADS = 4
LANGUAGE_IDS = {"python": "python", "ptx": "ptx"}


@dataclass
class Linted:
    """The latest lint of one document version."""

    version: int | None
    diagnostics: list[Diagnostic]
    lsp: list[types.Diagnostic]
    # the server's budget of ``cut`` seconds ran out (some kernel got TL005 for
    # it): `finish` lints this version again under the file's budget
    cut: float | None = None
    finishing: bool = False  # `finish` has been started on it (once per lint)
    rounds: int = 0  # the rounds of `finish` it is the result of


class _Ignored:
    """A message that could not be read: `handle_message` passes over it."""

    jsonrpc = None


class TolkProtocol(LanguageServerProtocol):
    """pygls's protocol, answering a request it cannot read.

    pygls drops a request whose params do not match the protocol's types
    (and says so in a pop-up), so the client waits for an answer that never
    comes. Here such a request gets a JSON-RPC error response with its id
    (``InvalidParams`` for params of the wrong shape, ``InternalError``
    otherwise), and a notification is logged."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "method" in data and "id" in data:
                self._send_response(data["id"], None, e.to_response_error())
            else:
                log.warning("ignoring a message that cannot be read: %.200r", data)
            return _Ignored()

    def handle_message(self, message):
        if isinstance(message, _Ignored):
            return
        super().handle_message(message)


class TolkLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tolk-lint", __version__, protocol_cls=TolkProtocol)
        self.debounce = DEBOUNCE_SECONDS
        self.time_budget = LINT_TIME_BUDGET
        self.publishing: dict[str, asyncio.Task] = {}  # uri -> the task publishing its newest version
        self.quiet_until: dict[str, float] = {}  # uri -> loop time its debounce waits for
        self.linted: dict[str, Linted] = {}
        self.published: dict[str, Linted] = {}  # uri -> the lint last sent to the client
        self.running: dict[str, tuple[int | None, threading.Event]] = {}  # uri -> the lint under way
        self.busy: dict[str, asyncio.Lock] = {}  # one lint per document at a time
        self.executor = ThreadPoolExecutor(max_workers=LINT_THREADS, thread_name_prefix="tolk-lint")
        self.resolver = SettingsResolver()
        self._config_mtimes: dict[str, float] = {}
        self.kernel_cache = None  # tolk_lint.engine.KernelCache, made on the first lint
        self.linted_paths: dict[str, str] = {}  # uri -> the path it is linted as
        self.shown: set[str] = set()  # documents whose diagnostics were published since they opened
        self.lint_loop: asyncio.AbstractEventLoop | None = None  # the event loop, for progress from the threads
        self.asked_fixes: dict[tuple, list[types.Diagnostic]] = {}  # (uri, version, kernel) -> `kernel_fixes`

    def report_server_error(self, error: Exception, source) -> None:
        """The server's own errors go to the client's log, never a pop-up."""
        log.error("tolk-lint server error (%s): %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                           message=f"tolk-lint: {error}"))  # fmt: skip
        except Exception:  # noqa: BLE001 - reporting an error must not raise another
            pass

    # ------------------------------------------------------------ capabilities

    @property
    def pull_mode(self) -> bool:
        caps = getattr(self.protocol, "client_capabilities", None)
        td = caps.text_document if caps is not None else None
        return td is not None and td.diagnostic is not None

    # ------------------------------------------------------------ settings

    def settings_for(self, path: str) -> Settings:
        """The document's settings; a changed ``pyproject.toml`` is re-read."""
        for cfg, mtime in list(self._config_mtimes.items()):
            try:
                changed = os.path.getmtime(cfg) != mtime
            except OSError:
                changed = True
            if changed:
                self.reload_settings()
                break
        s = self.resolver.for_path(path)
        if s.config_path and s.config_path not in self._config_mtimes:
            try:
                self._config_mtimes[s.config_path] = os.path.getmtime(s.config_path)
            except OSError:
                pass
        # unsafe fixes (never in fix-all) are worked out when the editor asks
        # for a diagnostic's code actions (`fix_when_asked`), not at every lint
        return s

    def reload_settings(self) -> None:
        self.resolver = SettingsResolver()
        self._config_mtimes.clear()

    # ------------------------------------------------------------ linting

    def lint_now(self, uri: str, text: str, version: int | None, language_id: str | None,
                 cancel: threading.Event | None = None, progress=None, finish: int = 0) -> Linted:  # fmt: skip
        """Lint one document's text (on a worker thread), under the lint
        budget (with ``finish``, round ``finish`` of `finish`, the file's);
        ``cancel`` ends it early. ``progress(lsp)``, if given, is handed what
        was found so far every `PROGRESS_SECONDS` (at a kernel boundary).
        Never raises."""
        from tolk_lint.engine import KernelCache, lint_text

        if self.kernel_cache is None:
            self.kernel_cache = KernelCache()
        path = self.linted_paths[uri] = document_path(uri, language_id)
        language = None if path.endswith((".py", ".ptx")) else LANGUAGE_IDS.get(language_id or "")
        pos = Positions(text.splitlines(), self._codec())
        extra: list[types.Diagnostic] = []
        try:
            settings = self.settings_for(path)
        except ConfigError as e:
            settings = DEFAULT_SETTINGS
            extra.append(types.Diagnostic(
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)),
                message=f"tolk-lint: bad configuration, using the defaults: {e}",
                severity=types.DiagnosticSeverity.Error, source=SOURCE))  # fmt: skip
        label = "the language server's time budget"
        seconds = max(self.time_budget, settings.time_budget) if finish else min(self.time_budget, settings.time_budget)
        if finish == 1:  # the kernels an edit's lint stopped get the longer budget
            self.kernel_cache.forget_stops(path, f"{label} of {self.time_budget:g} s ran out")
        done = len(self.kernel_cache.entries.get(path, {}))
        try:
            within = Budget(seconds, settings.memory_budget * (1 << 20), cancel, label=label)
            step = None if progress is None else _every(PROGRESS_SECONDS, lambda found: progress(
                extra + [to_lsp(d, uri, pos) for d in found()]))  # fmt: skip
            diags = lint_text(text, path, settings, language, kernel_cache=self.kernel_cache, within=within,
                              progress=step).diagnostics  # fmt: skip
        except Exception as e:
            log.error("linting %s failed:\n%s", uri, traceback.format_exc())
            diags = [Diagnostic("TL004", Severity.ERROR,
                                f"tolk-lint failed on this file: {type(e).__name__}: {e}",
                                Span(path, 1, 1, 1, 2), name="internal-error")]  # fmt: skip
        lsp = extra + [to_lsp(d, uri, pos) for d in diags]
        ran_out = f"{within.label} of {seconds:g} s ran out"
        cut = any(d.code == "TL005" and str((d.data or {}).get("reason", "")) == ran_out for d in diags)
        if finish:  # another round only while each round finishes some kernel (its first one always does)
            cut = cut and len(self.kernel_cache.entries.get(path, {})) > done
        else:
            cut = cut and seconds < settings.time_budget
        return Linted(version, diags, lsp, seconds if cut else None, rounds=finish)

    async def fix_when_asked(self, uri: str, d: types.Diagnostic) -> dict | None:
        """The fix of ``d``, a diagnostic whose lint left its unsafe fix out
        (``data["when_asked"]``): its kernel linted alone with unsafe fixes
        on, for the document's current version; kept per version and
        kernel, so the editor asking again as the cursor moves costs
        nothing. None when the rewrite is not proved."""
        doc = self.workspace.text_documents.get(uri)
        kernel = d.data.get("kernel") if isinstance(d.data, dict) else None
        if doc is None or not kernel:
            return None
        key = (uri, doc.version, kernel)
        found = self.asked_fixes.get(key)
        if found is None:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self.executor, self.kernel_fixes, uri, doc.source,
                                               doc.language_id, kernel)  # fmt: skip
            self.asked_fixes = {k: v for k, v in self.asked_fixes.items() if k[0] != uri or k[1] == doc.version}
            self.asked_fixes[key] = found
        return next((f.data["fix"] for f in found if f.code == d.code and f.range == d.range), None)

    def kernel_fixes(self, uri: str, text: str, language_id: str | None, kernel: str) -> list[types.Diagnostic]:
        """The diagnostics with fixes of one kernel of the document, unsafe
        fixes worked out, under the file's budget (on a worker thread)."""
        from tolk_lint.engine import lint_text

        path = document_path(uri, language_id)
        language = None if path.endswith((".py", ".ptx")) else LANGUAGE_IDS.get(language_id or "")
        try:
            settings = self.settings_for(path).with_(unsafe_fixes=True)
            diags = lint_text(text, path, settings, language, kernel=kernel).diagnostics
        except Exception:  # noqa: BLE001 - no fix is offered, and the server goes on
            log.error("working out the fixes of %s in %s failed:\n%s", kernel, uri, traceback.format_exc())
            return []
        pos = Positions(text.splitlines(), self._codec())
        return [to_lsp(x, uri, pos) for x in diags if x.fix is not None]

    def _codec(self):
        try:
            return self.workspace.position_codec
        except Exception:
            return None

    async def lint(self, uri: str) -> Linted | None:
        """The current version's lint, from the cache or a worker thread;
        None if the document is closed. Lints of one document run one at a
        time, each cancelled when a newer version arrives (`cancel_outdated`),
        so stale lints never pile up behind a slow one; other documents'
        lints run beside it."""
        loop = self.lint_loop = asyncio.get_running_loop()
        lock = self.busy.setdefault(uri, asyncio.Lock())
        while True:
            doc = self.workspace.text_documents.get(uri)
            if doc is None:
                return None
            cached = self.linted.get(uri)
            if cached is not None and cached.version == doc.version:
                return cached
            async with lock:
                doc = self.workspace.text_documents.get(uri)
                if doc is None:
                    return None
                cached = self.linted.get(uri)
                if cached is not None and cached.version == doc.version:
                    return cached
                version, text, language_id = doc.version, doc.source, doc.language_id
                cancel = Cancel()
                self.running[uri] = (version, cancel)
                try:
                    result = await loop.run_in_executor(
                        self.executor, self._lint_if_current, uri, text, version, language_id, cancel
                    )
                finally:
                    if self.running.get(uri, (None, None))[1] is cancel:
                        del self.running[uri]
            current = self.workspace.text_documents.get(uri)
            if result is not None and current is not None and current.version == version:
                self.linted[uri] = result
                return result
            if current is None:
                return None
            # edited while it ran: lint the newer version

    def cancel_outdated(self, uri: str) -> None:
        """A newer version of ``uri`` arrived: stop the lint of the old one."""
        running = self.running.get(uri)
        doc = self.workspace.text_documents.get(uri)
        if running is not None and (doc is None or doc.version != running[0]):
            running[1].set()

    def _lint_if_current(self, uri: str, text: str, version: int | None, language_id: str | None,
                         cancel: threading.Event) -> Linted | None:  # fmt: skip
        doc = self.workspace.text_documents.get(uri)
        if doc is None or doc.version != version or cancel.is_set():
            return None
        progress = None
        if not self.pull_mode and uri not in self.shown:
            loop = self.lint_loop

            def progress(lsp: list[types.Diagnostic]) -> None:
                loop.call_soon_threadsafe(self._publish_progress, uri, version, lsp)

        result = self.lint_now(uri, text, version, language_id, cancel, progress)
        return None if cancel.is_set() else result

    async def finish(self, uri: str, cut: Linted) -> None:
        """Lint the version ``cut`` was of again, under the file's budget
        (`lint_now` with ``finish``), and publish it, while that version is
        the newest and ``cut`` is what the client shows; a newer version
        cancels it (`cancel_outdated`), as it does any lint. A round cut
        short again is followed by another (`_publisher`) while each makes
        headway: the kernel that starts a round has the whole budget, and
        ends it finished or kept as stopped (`KernelCache`), so the rounds
        end within one per kernel."""
        cut.finishing = True
        loop = asyncio.get_running_loop()
        lock = self.busy.setdefault(uri, asyncio.Lock())
        async with lock:
            doc = self.workspace.text_documents.get(uri)
            if doc is None or doc.version != cut.version or self.published.get(uri) is not cut:
                return
            text, language_id = doc.source, doc.language_id
            cancel = Cancel()
            self.running[uri] = (cut.version, cancel)
            try:
                result = await loop.run_in_executor(self.executor, self._finish_if_current, uri, text, cut.version,
                                                    language_id, cancel, cut.rounds + 1)  # fmt: skip
            finally:
                if self.running.get(uri, (None, None))[1] is cancel:
                    del self.running[uri]
        doc = self.workspace.text_documents.get(uri)
        if result is None or doc is None or doc.version != cut.version or self.published.get(uri) is not cut:
            return
        self.linted[uri] = self.published[uri] = result
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=result.version, diagnostics=result.lsp)
        )

    def _finish_if_current(self, uri: str, text: str, version: int | None, language_id: str | None,
                           cancel: threading.Event, round_: int) -> Linted | None:  # fmt: skip
        doc = self.workspace.text_documents.get(uri)
        if doc is None or doc.version != version or cancel.is_set():
            return None
        result = self.lint_now(uri, text, version, language_id, cancel, finish=round_)
        return None if cancel.is_set() else result

    def _publish_progress(self, uri: str, version: int | None, lsp: list[types.Diagnostic]) -> None:
        """On the event loop: publish a first lint's findings so far, while
        its version is the newest and nothing was published for the document."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or doc.version != version or uri in self.shown:
            return
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=version,
                                                                              diagnostics=lsp))  # fmt: skip

    async def publish(self, uri: str) -> None:
        """Lint the newest version (`lint`) and publish its diagnostics,
        unless the document was edited or closed meanwhile (a newer publish
        is on its way) or this lint is on the client already."""
        result = await self.lint(uri)
        doc = self.workspace.text_documents.get(uri)
        if result is None or doc is None or doc.version != result.version:
            return
        if self.published.get(uri) is result:
            return
        self.published[uri] = result
        self.shown.add(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=result.version, diagnostics=result.lsp)
        )

    def schedule(self, uri: str, delay: float) -> None:
        """Publish ``uri``'s newest version, ``delay`` seconds after the last
        call for it. One task per document does it (`_publisher`): a call
        while that task lints only moves its target to the newest version,
        so edits made during a lint coalesce into one lint after it."""
        loop = asyncio.get_running_loop()
        self.quiet_until[uri] = loop.time() + delay
        task = self.publishing.get(uri)
        if task is None or task.done():
            self.publishing[uri] = loop.create_task(self._publisher(uri))

    async def _publisher(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                wait = self.quiet_until.get(uri, 0.0) - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue  # an edit during the wait moved the deadline
                await self.publish(uri)
                doc = self.workspace.text_documents.get(uri)
                sent = self.published.get(uri)
                if doc is not None and sent is not None and sent.version == doc.version and sent.cut is not None \
                        and not sent.finishing:  # fmt: skip
                    await self.finish(uri, sent)  # then once more: an edit during it is published next
                    continue
                if doc is None or (sent is not None and sent.version == doc.version):
                    return
                # edited after its lint ended, before it could be published: once more
        finally:
            if self.publishing.get(uri) is asyncio.current_task():
                del self.publishing[uri]

    def relint_all(self) -> None:
        self.linted.clear()
        if self.pull_mode:
            caps = self.protocol.client_capabilities.workspace
            if caps is not None and caps.diagnostics is not None and caps.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)
            return
        self.published.clear()
        for uri in list(self.workspace.text_documents):
            self.schedule(uri, 0)


def _every(seconds: float, report):
    """The ``progress`` a lint calls at each kernel boundary with a function
    giving its findings so far: ``report`` is handed them (worked out only
    then) when ``seconds`` have passed since the lint started or last reported."""
    import time

    last = [time.monotonic()]

    def step(found) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            report(found)
            last[0] = time.monotonic()

    return step


def document_path(uri: str, language_id: str | None = None) -> str:
    """A file path for the document: its own, or for an unsaved buffer a
    made-up name whose suffix says the language."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return path
    suffix = {"python": ".py", "ptx": ".ptx"}.get(language_id or "", "")
    name = re.sub(r"[^\w.-]", "_", uri.rsplit("/", 1)[-1]) or "untitled"
    return name if name.endswith((".py", ".ptx")) else name + suffix


# ---------------------------------------------------------------- code actions, hover


def _wants(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def noqa_action(server: TolkLanguageServer, uri: str, d: types.Diagnostic) -> types.CodeAction | None:
    from tolk_lint.suppress import comment_marker, noqa_insertion

    doc = server.workspace.get_text_document(uri)
    line0 = d.range.start.line
    if line0 >= len(doc.lines) or not isinstance(d.code, str):
        return None
    text = doc.lines[line0].rstrip("\r\n")
    marker = comment_marker(document_path(uri, doc.language_id), LANGUAGE_IDS.get(doc.language_id or ""))
    ins = noqa_insertion(text, d.code, marker)
    if ins is None:
        return None
    start, end, new = ins
    pos = Positions([text], server.workspace.position_codec)
    rng = pos.edit_range(1, start + 1, 1, end + 1)
    rng = types.Range(start=types.Position(line=line0, character=rng.start.character),
                      end=types.Position(line=line0, character=rng.end.character))  # fmt: skip
    return types.CodeAction(
        title=f"Ignore {d.code} for this line (`tolk: noqa: {d.code}`)",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[d],
        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=rng, new_text=new)]}),
    )


def fix_all_edit(uri: str, linted: Linted, unsafe: bool = False) -> list[types.TextEdit]:
    """Every safe fix (and unsafe ones if asked) that touches this document
    only and does not overlap a fix taken before it, in document order."""
    taken: list[types.TextEdit] = []
    for d in linted.lsp:
        fix = (d.data or {}).get("fix") if isinstance(d.data, dict) else None
        if not fix:
            continue
        if fix["applicability"] != Applicability.SAFE.value and not (
            unsafe and fix["applicability"] == "unsafe"
        ):
            continue
        by_uri = text_edits(fix)
        if set(by_uri) != {uri}:
            continue
        edits = by_uri[uri]
        if any(_overlaps(e.range, t.range) for e in edits for t in taken):
            continue
        taken += edits
    return sorted(taken, key=lambda e: (e.range.start.line, e.range.start.character))


def _overlaps(a: types.Range, b: types.Range) -> bool:
    a0, a1 = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b0, b1 = (b.start.line, b.start.character), (b.end.line, b.end.character)
    if a0 == a1 and b0 == b1:
        return a0 == b0
    return a0 < b1 and b0 < a1


def _contains(r: types.Range, p: types.Position) -> bool:
    return (r.start.line, r.start.character) <= (p.line, p.character) <= (r.end.line, r.end.character)


def noqa_code_at(line: str, character: int) -> str | None:
    """The code written under a code-point column in a noqa comment."""
    from tolk_lint.suppress import parse_noqa

    n = parse_noqa(line)
    if n is None or n.codes_start is None or not (n.codes_start <= character <= (n.codes_end or 0)):
        return None
    for m in re.finditer(r"[A-Za-z]+[0-9]+", line[n.codes_start : n.codes_end]):
        if m.start() <= character - n.codes_start <= m.end():
            return m.group().upper()
    return None


def rule_hover(code: str) -> str | None:
    from tolk_lint.catalog import rule_by_code
    from tolk_lint.outputs import rule_markdown

    rule = rule_by_code(code)
    return rule_markdown(rule) if rule is not None else None


# ---------------------------------------------------------------- the server


def create_server() -> TolkLanguageServer:
    server = TolkLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TolkLanguageServer, params: types.InitializeParams) -> None:
        opts = params.initialization_options
        if isinstance(opts, dict) and isinstance(opts.get("debounce"), (int, float)):
            ls.debounce = max(0.0, float(opts["debounce"]))
        if isinstance(opts, dict) and isinstance(opts.get("timeBudget"), (int, float)) and opts["timeBudget"] > 0:
            ls.time_budget = float(opts["timeBudget"])

    @server.feature(types.INITIALIZED)
    def initialized(ls: TolkLanguageServer, params: types.InitializedParams) -> None:
        caps = ls.protocol.client_capabilities.workspace
        watch = caps.did_change_watched_files if caps is not None else None
        if watch is not None and watch.dynamic_registration:
            reg = types.Registration(
                id="tolk-lint-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]))  # fmt: skip
            ls.client_register_capability(types.RegistrationParams(registrations=[reg]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TolkLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        if not ls.pull_mode:
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TolkLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri not in ls.workspace.text_documents:
            log.warning("didChange for a document that is not open: %s", uri)
            return
        ls.cancel_outdated(uri)
        if not ls.pull_mode:
            ls.schedule(uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TolkLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            ls.reload_settings()
            ls.relint_all()
            return
        path = ls.linted_paths.get(uri)
        if ls.kernel_cache is not None and path is not None:
            ls.kernel_cache.forget_stops(path)  # a save retries the kernels that ran out of time
        ls.linted.pop(uri, None)
        if not ls.pull_mode and uri in ls.workspace.text_documents:
            ls.published.pop(uri, None)  # a save always answers
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TolkLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.quiet_until.pop(uri, None)  # its publisher, if any, finds the document closed and ends
        ls.shown.discard(uri)
        ls.cancel_outdated(uri)
        ls.linted.pop(uri, None)
        ls.published.pop(uri, None)
        ls.busy.pop(uri, None)
        path = ls.linted_paths.pop(uri, None)
        if ls.kernel_cache is not None and path is not None:
            ls.kernel_cache.forget(path)
        if not ls.pull_mode:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: TolkLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("pyproject.toml") for c in params.changes):
            ls.reload_settings()
            ls.relint_all()

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="tolk-lint", inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    async def pull(ls: TolkLanguageServer, params: types.DocumentDiagnosticParams):
        result = await ls.lint(params.text_document.uri)
        return types.RelatedFullDocumentDiagnosticReport(items=result.lsp if result else [])

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    async def code_action(ls: TolkLanguageServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wants(types.CodeActionKind.QuickFix, only):
            for d in params.context.diagnostics:
                if d.source != SOURCE:
                    continue
                fix = d.data.get("fix") if isinstance(d.data, dict) else None
                if not fix and isinstance(d.data, dict) and d.data.get("when_asked"):
                    fix = await ls.fix_when_asked(uri, d)
                if fix:
                    actions.append(types.CodeAction(
                        title=f"{fix['title']} ({d.code})", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[d], is_preferred=fix["applicability"] == Applicability.SAFE.value,
                        edit=types.WorkspaceEdit(changes=text_edits(fix))))  # fmt: skip
                noqa = noqa_action(ls, uri, d)
                if noqa is not None:
                    actions.append(noqa)
        if _wants(FIX_ALL, only):
            linted = await ls.lint(uri)
            doc = ls.workspace.text_documents.get(uri)
            edits = fix_all_edit(uri, linted) if linted is not None else []
            if edits and doc is not None:
                actions.append(types.CodeAction(
                    title="tolk-lint: fix all auto-fixable problems", kind=FIX_ALL,
                    edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                        edits=edits)])))  # fmt: skip
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TolkLanguageServer, params: types.HoverParams):
        uri = params.text_document.uri
        doc = ls.workspace.text_documents.get(uri)
        if doc is None or params.position.line >= len(doc.lines):
            return None
        text = doc.lines[params.position.line].rstrip("\r\n")
        pos = Positions([text], ls.workspace.position_codec)
        _, col = pos.from_client(types.Position(line=0, character=params.position.character))
        code = noqa_code_at(text, col)
        if code is not None:
            md = rule_hover(code)
            if md is None:
                return None
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md))
        linted = await ls.lint(uri)
        if linted is None:
            return None
        parts, seen = [], set()
        for d in linted.lsp:
            if d.source == SOURCE and isinstance(d.code, str) and _contains(d.range, params.position):
                parts.append(f"**{d.code}**: {d.message}")
                if d.code not in seen:
                    seen.add(d.code)
                    md = rule_hover(d.code)
                    if md:
                        parts.append(md)
        if not parts:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value="\n\n---\n\n".join(parts)))  # fmt: skip

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    create_server().start_io()
