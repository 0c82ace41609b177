"""The language server's contract under bad input and slow documents.

- A request whose params cannot be read gets a JSON-RPC error response with
  its id (a client would otherwise wait for it forever), a notification
  about a document that is not open is ignored, and the server goes on; its
  own errors go to the client's log, never into pop-ups.
- A document whose lint is slow (it runs into the server's time budget and
  gets TL005) never holds up another document's diagnostics, and a newer
  version of a document stops the lint of the older one.

The first part speaks raw JSON-RPC over the server's stdio (a typed client
cannot send malformed params); the second uses pytest-lsp's client.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402
from test_lsp import CONFIG, NUMBA_BAD, capabilities, codes, open_doc, until  # noqa: E402

SERVER = [sys.executable, "-m", "tolk_lint", "lsp"]
# A real kernel file whose full analysis takes far longer than the budget
# the tests give the server (seconds without a launch shape: its indices are
# divided by runtime extents; matvec_warp.py was this file until the rank
# proof of block-stride counters made it fast).
SLOW = (Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "numba" / "kmeans_assign.py").read_text()


class RawClient:
    """JSON-RPC over the server's stdin/stdout, messages as plain dicts."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.received: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif not line.strip():
                    break
            self.received.append(json.loads(out.read(length)))

    def wait_for(self, predicate, timeout: float = 60.0) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in list(self.received):
                if predicate(m):
                    return m
            time.sleep(0.02)
        raise AssertionError(f"no such message; got {self.received}")

    def close(self) -> int:
        self.send({"id": 999, "method": "shutdown"})
        self.wait_for(lambda m: m.get("id") == 999)
        self.send({"method": "exit"})
        return self.proc.wait(timeout=30)


def test_malformed_requests_get_error_responses():
    c = RawClient()
    try:
        c.send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        c.wait_for(lambda m: m.get("id") == 1 and "result" in m)
        c.send({"method": "initialized", "params": {}})
        # params of the wrong shape: a hover without a position, a code action whose params are a string
        c.send({"id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///x.py"}}})
        c.send({"id": 3, "method": "textDocument/codeAction", "params": "garbage"})
        # a change to a document that was never opened
        c.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///never-opened.py", "version": 2}, "contentChanges": [{"text": "x"}]}})
        for i in (2, 3):
            err = c.wait_for(lambda m, i=i: m.get("id") == i)
            assert err["error"]["code"] == -32602, err  # InvalidParams
        # the server goes on: a well-formed document still gets its diagnostics
        c.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///t.py", "languageId": "python", "version": 1, "text": NUMBA_BAD}}})
        pub = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == "file:///t.py")  # fmt: skip
        assert [d["code"] for d in pub["params"]["diagnostics"]] == ["TL101"]
        c.send({"id": 4, "method": "textDocument/hover",
                "params": {"textDocument": {"uri": "file:///t.py"}, "position": {"line": 6, "character": 10}}})
        assert "TL101" in c.wait_for(lambda m: m.get("id") == 4)["result"]["contents"]["value"]
        assert not any(m.get("method") == "window/showMessage" for m in c.received), "no pop-ups"
    finally:
        rc = c.close()
    assert rc == 0


# SLOW (kmeans_assign.py) takes about 3 s to lint here: well past this budget,
# while NUMBA_BAD takes a tenth of a second
@pytest_lsp.fixture(config=CONFIG)
async def budget_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities(False), initialization_options={"debounce": 0.05, "timeBudget": 1.5}))  # fmt: skip
    yield
    await lsp_client.shutdown_session()


def _order(client: LanguageClient) -> list[str]:
    return [uri for uri, _version, _codes in client.publish_log]


@pytest.mark.asyncio(loop_scope="function")
async def test_a_slow_document_does_not_hold_up_another(budget_client: LanguageClient, tmp_path):
    client = budget_client
    slow, fast = (tmp_path / "slow.py").as_uri(), (tmp_path / "fast.py").as_uri()
    open_doc(client, slow, SLOW, "python")
    open_doc(client, fast, NUMBA_BAD, "python")
    assert await until(lambda: codes(client, fast)) == ["TL101"]
    # the slow one may have shown the kernels it finished (a first lint publishes
    # as it goes), but not its end: its budget runs out, and it says so
    assert "TL005" not in (codes(client, slow) or []), "the fast document waited for the slow one"
    # the budget ran out, and the document says so (until the lint is finished in the background)
    assert await until(lambda: any(u == slow and "TL005" in c for u, _v, c in client.publish_log), timeout=120)


@pytest.mark.asyncio(loop_scope="function")
async def test_a_cut_lint_is_finished_in_the_background(budget_client: LanguageClient, tmp_path):
    """A lint cut by the server's budget is published with its TL005, then
    the same version is linted again under the file's budget, reusing the
    kernels that finished, and published again: the complete findings, the
    command line's, with no TL005; an edit after it reuses every kernel."""
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import lint_text

    client = budget_client
    path = tmp_path / "slow.py"
    uri = path.as_uri()
    open_doc(client, uri, SLOW, "python")

    def finished():
        log = [c for u, v, c in client.publish_log if u == uri and v == 1]
        cut = next((i for i, c in enumerate(log) if "TL005" in c), None)
        return cut is not None and next((c for c in log[cut + 1:] if "TL005" not in c), None)

    final = await until(finished, timeout=120)
    expected = lint_text(SLOW, str(path), DEFAULT_SETTINGS.with_(unsafe_fixes=True)).diagnostics
    assert sorted(final) == sorted(d.code for d in expected)
    edited = SLOW + "\n# an edit below every kernel\n"
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))  # fmt: skip
    got = await until(lambda: next((c for u, v, c in client.publish_log if u == uri and v == 2), None))
    assert sorted(got) == sorted(final), "a kernel analysed again would have stopped at the 1.5 s budget"


@pytest.mark.asyncio(loop_scope="function")
async def test_a_newer_version_stops_the_old_lint(budget_client: LanguageClient, tmp_path):
    client = budget_client
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, SLOW, "python")
    await asyncio.sleep(0.3)  # its lint is under way
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=NUMBA_BAD)]))  # fmt: skip
    assert await until(lambda: codes(client, uri)) == ["TL101"]
    versions = [v for u, v, _c in client.publish_log if u == uri]
    assert versions == [2], versions  # version 1's lint was stopped, never published
