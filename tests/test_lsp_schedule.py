"""When the language server lints, in process, with the lint replaced by one
the test holds and releases: the order of lints and publishes is decided by
events, never by timing.

- An edit to an idle document is linted at once (the default debounce is 0).
- Edits that arrive while a lint runs stop it and coalesce: the next lint
  is of the newest version, the versions between are never linted, and the
  stopped lint's result is never published.
- A first lint's progress is published only while its version is the newest
  and nothing else was published for the document.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra")

from lsprotocol import types  # noqa: E402
from pygls.workspace import Workspace  # noqa: E402

from tolk_lint.lsp import server as server_module  # noqa: E402
from tolk_lint.lsp.server import DEBOUNCE_SECONDS, Linted, create_server  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="function")

URI = "file:///tmp/k.py"
_sleep = asyncio.sleep  # the tests' own waits: some tests replace asyncio.sleep to see the server's


class Harness:
    """A server whose lints wait for the test: `release(v)` lets the lint of version ``v`` end."""

    def __init__(self, debounce: float | None = None) -> None:
        self.ls = create_server()
        self.ls.protocol._workspace = Workspace(None)
        if debounce is not None:
            self.ls.debounce = debounce
        self.published: list[int | None] = []
        self.started: list[int | None] = []
        self.cancels: dict[int | None, threading.Event | None] = {}
        self.gates: dict[int | None, threading.Event] = {}
        self.ls.text_document_publish_diagnostics = lambda p: self.published.append(p.version)
        self.ls.lint_now = self.lint_now

    def lint_now(self, uri, text, version, language_id, cancel=None, progress=None) -> Linted:
        self.cancels[version] = cancel
        gate = self.gates.setdefault(version, threading.Event())
        self.started.append(version)
        gate.wait(60)
        return Linted(version, [], [])

    def release(self, version: int) -> None:
        self.gates.setdefault(version, threading.Event()).set()

    def feature(self, method: str, params) -> None:
        self.ls.protocol.fm.features[method](params)  # pygls binds the server

    def open(self, text: str = "v1") -> None:
        item = types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)
        self.ls.workspace.put_text_document(item)
        self.feature(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(text_document=item))

    def change(self, version: int) -> None:
        ident = types.VersionedTextDocumentIdentifier(uri=URI, version=version)
        self.ls.workspace.update_text_document(ident, types.TextDocumentContentChangeWholeDocument(text=f"v{version}"))
        self.feature(types.TEXT_DOCUMENT_DID_CHANGE,
                     types.DidChangeTextDocumentParams(text_document=ident, content_changes=[]))  # fmt: skip

    async def idle(self) -> None:
        """Until no publisher task is left for the document."""
        while URI in self.ls.publishing:
            await _sleep(0.01)


async def until(predicate) -> None:
    for _ in range(6000):
        if predicate():
            return
        await _sleep(0.01)
    raise AssertionError("timed out waiting for the server")


async def test_edits_during_a_lint_coalesce_into_one_lint_of_the_newest():
    h = Harness()
    h.open()
    await until(lambda: h.started == [1])
    for v in (2, 3, 4):
        h.change(v)
    assert h.cancels[1] is not None and h.cancels[1].is_set(), "the superseded lint is told to stop"
    h.release(1)
    await until(lambda: h.started == [1, 4])
    h.change(5)  # while 4 runs: 4 is stopped, 5 is next
    h.release(4)
    await until(lambda: h.started == [1, 4, 5])
    h.release(5)
    await h.idle()
    assert h.started == [1, 4, 5], "versions 2, 3 were never linted"
    assert h.published == [5], "results of superseded versions are never published"
    h.change(6)
    h.release(6)
    await h.idle()
    assert h.published == [5, 6]


async def test_an_edit_to_an_idle_document_is_linted_at_once(monkeypatch):
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds, *args):
        slept.append(seconds)
        await real_sleep(0)

    assert DEBOUNCE_SECONDS == 0
    h = Harness()
    h.release(1)
    h.release(2)
    monkeypatch.setattr(server_module.asyncio, "sleep", sleep)
    h.open()
    await until(lambda: h.published == [1])
    h.change(2)
    await until(lambda: h.published == [1, 2])
    assert slept == [], "no timer stands between an edit and its lint"


async def test_a_debounce_waits_after_the_last_edit(monkeypatch):
    """With ``debounce``, the lint waits; edits during the wait move it, and
    only the newest version is linted."""
    h = Harness(debounce=0.05)
    h.release(1)
    h.open()
    await until(lambda: h.published == [1])
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds, *args):
        waits.append(seconds)
        if len(waits) == 1:
            h.change(3)  # an edit arrives during the wait
        await real_sleep(0)

    monkeypatch.setattr(server_module.asyncio, "sleep", sleep)
    h.release(3)
    h.change(2)
    await until(lambda: h.published == [1, 3])
    assert h.started == [1, 3] and len(waits) >= 2, (h.started, waits)


async def test_progress_is_published_for_the_newest_first_lint_only():
    h = Harness()
    h.open()
    await until(lambda: h.started == [1])
    h.ls._publish_progress(URI, 1, [])
    assert h.published == [1], "a first lint's progress"
    h.change(2)
    h.ls._publish_progress(URI, 1, [])
    assert h.published == [1], "not for a version that is no longer the newest"
    h.release(1)
    h.release(2)
    await h.idle()
    assert h.published == [1, 2]
    h.ls._publish_progress(URI, 2, [])
    assert h.published == [1, 2], "not once the document's diagnostics were published"
