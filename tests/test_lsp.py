"""The language server end to end: pytest-lsp launches `tolk-lint lsp` over stdio.

The kernels have a divergent barrier (TL101) when that rule is in the
catalog, else a parse error (TL001): the tests check whichever the catalog
can report, at the line it must be on.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from tolk_lint.catalog import rule_by_code  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="function")

HAVE_TL101 = rule_by_code("TL101") is not None
SERVER = [sys.executable, "-m", "tolk_lint", "lsp"]

NUMBA_BAD = (
    "from numba import cuda\n"
    "\n"
    "\n"
    "@cuda.jit\n"
    "def k(a):\n"
    "    if cuda.threadIdx.x < 16:\n"
    "        cuda.syncthreads()\n"
) if HAVE_TL101 else (
    "from numba import cuda\n"
    "\n"
    "\n"
    "@cuda.jit\n"
    "def k(a:\n"
    "    pass\n"
    "        cuda.syncthreads()\n"
)  # fmt: skip
NUMBA_LINE = 7 if HAVE_TL101 else 5  # 1-based
NUMBA_CLEAN = (
    "from numba import cuda\n"
    "\n"
    "\n"
    "@cuda.jit\n"
    "def k(a):\n"
    "    if cuda.threadIdx.x < 16:\n"
    "        a[0] = 1.0\n"
    "    cuda.syncthreads()\n"
)
PTX_HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n\n"
PTX_BAD = PTX_HEAD + (
    ".visible .entry k(.param .u32 n)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<3>;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    setp.lt.u32 %p1, %r1, 16;\n"
    "    @%p1 bar.sync 0;\n"
    "    ret;\n"
    "}\n"
) if HAVE_TL101 else PTX_HEAD + ".visible .entry k(\n"  # fmt: skip
PTX_LINE = 11 if HAVE_TL101 else 5
PTX_CLEAN = PTX_HEAD + (
    ".visible .entry k(.param .u32 n)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<3>;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    setp.lt.u32 %p1, %r1, 16;\n"
    "    bar.sync 0;\n"
    "    ret;\n"
    "}\n"
)
CODE = "TL101" if HAVE_TL101 else "TL001"
STALE = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1.0  # tolk: noqa: TL102\n"


def make_client() -> LanguageClient:
    """pytest-lsp's client, also logging every publishDiagnostics."""
    client = LanguageClient()
    client.publish_log = []  # type: ignore[attr-defined]

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.publish_log.append((params.uri, params.version, [d.code for d in params.diagnostics]))  # type: ignore

    register_lsp_features(
        client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish}
    )
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


def capabilities(pull: bool) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, code_description_support=True, data_support=True),
            diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=False) if pull else None,
            code_action=types.CodeActionClientCapabilities(data_support=True),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        ))  # fmt: skip


async def start(client: LanguageClient, pull: bool = False, debounce: float | None = 0.05) -> None:
    opts = {"debounce": debounce} if debounce is not None else None
    await client.initialize_session(types.InitializeParams(capabilities=capabilities(pull),
                                                           initialization_options=opts))  # fmt: skip


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def pull_client(lsp_client: LanguageClient):
    await start(lsp_client, pull=True)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def slow_client(lsp_client: LanguageClient):
    await start(lsp_client, debounce=0.3)  # the `debounce` option: edits within it are linted once
    yield
    await lsp_client.shutdown_session()


async def until(predicate, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting for the server")


def codes(client: LanguageClient, uri: str) -> list | None:
    ds = client.diagnostics.get(uri)
    return None if ds is None else [d.code for d in ds]


def open_doc(client: LanguageClient, uri: str, text: str, language: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)))  # fmt: skip


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))  # fmt: skip


def apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def off(p: types.Position) -> int:
        return starts[p.line] + p.character if p.line < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: off(e.range.start)] + e.new_text + text[off(e.range.end) :]
    return text


@pytest.mark.parametrize(
    "name, bad, clean, line, language",
    [("k.py", NUMBA_BAD, NUMBA_CLEAN, NUMBA_LINE, "python"), ("k.ptx", PTX_BAD, PTX_CLEAN, PTX_LINE, "ptx")],
)
async def test_diagnostic_on_open_then_gone_when_clean(client: LanguageClient, tmp_path, name, bad, clean, line,
                                                      language):  # fmt: skip
    uri = (tmp_path / name).as_uri()
    open_doc(client, uri, bad, language)
    found = await until(lambda: codes(client, uri))
    assert found == [CODE]
    [d] = client.diagnostics[uri]
    assert d.range.start.line == line - 1
    assert d.source == "tolk-lint"
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.code_description.href.endswith(f"/rules/{CODE}")
    assert d.data["code"] == CODE
    if HAVE_TL101 and language == "python":
        # `cuda.syncthreads()` on line 7, columns 9-26 (1-based)
        assert (d.range.start.character, d.range.end.line, d.range.end.character) == (8, 6, 26)
        assert d.related_information, "the chain of reasons is carried as related information"
        assert all(r.location.uri == uri for r in d.related_information)
    if HAVE_TL101:
        line_text = bad.splitlines()[line - 1]
        assert (
            d.range.end.character <= len(line_text) and "bar.sync" in line_text or "syncthreads" in line_text
        )
    change(client, uri, clean, 2)
    assert await until(lambda: codes(client, uri) == [] or None) is True


async def test_debounced_change_publishes_once(slow_client: LanguageClient, tmp_path):
    client = slow_client
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, NUMBA_CLEAN, "python")
    await until(lambda: codes(client, uri) == [] or None)
    before = len(client.publish_log)
    for v, text in enumerate([NUMBA_BAD, NUMBA_CLEAN, NUMBA_BAD], start=2):
        change(client, uri, text, v)
    await until(lambda: len(client.publish_log) > before)
    await asyncio.sleep(0.8)  # longer than the debounce: nothing else may come
    after = client.publish_log[before:]
    assert len(after) == 1, after
    assert after[0][1] == 4 and after[0][2] == [CODE]


async def test_save_publishes(client: LanguageClient, tmp_path):
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, NUMBA_BAD, "python")
    await until(lambda: codes(client, uri))
    before = len(client.publish_log)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await until(lambda: len(client.publish_log) > before)
    assert client.publish_log[-1][2] == [CODE]


async def test_pull_diagnostics(pull_client: LanguageClient, tmp_path):
    client = pull_client
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, NUMBA_BAD, "python")
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert report.kind == "full"
    assert [d.code for d in report.items] == [CODE]
    assert report.items[0].range.start.line == NUMBA_LINE - 1
    change(client, uri, NUMBA_CLEAN, 2)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert list(report.items) == []
    assert uri not in client.diagnostics  # a pulling client is never pushed to


async def code_actions(client: LanguageClient, uri: str, only=None) -> list[types.CodeAction]:
    diags = list(client.diagnostics[uri])
    rng = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=999, character=0))
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=diags, only=only)))  # fmt: skip


async def test_quick_fix_removes_a_stale_noqa(client: LanguageClient, tmp_path):
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, STALE, "python")
    assert await until(lambda: codes(client, uri)) == ["TL003"]
    actions = await code_actions(client, uri)
    [fix] = [a for a in actions if a.title.startswith("Remove the unused")]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    fixed = apply(STALE, fix.edit.changes[uri])
    assert fixed.endswith("a[cuda.grid(1)] = 1.0\n")
    change(client, uri, fixed, 2)
    assert await until(lambda: codes(client, uri) == [] or None) is True


@pytest.mark.parametrize("name, bad, language, marker", [("k.py", NUMBA_BAD, "python", "#"),
                                                         ("k.ptx", PTX_BAD, "ptx", "//")])  # fmt: skip
async def test_ignore_with_noqa(client: LanguageClient, tmp_path, name, bad, language, marker):
    uri = (tmp_path / name).as_uri()
    open_doc(client, uri, bad, language)
    await until(lambda: codes(client, uri))
    actions = await code_actions(client, uri, only=[types.CodeActionKind.QuickFix])
    [noqa] = [a for a in actions if a.title.startswith(f"Ignore {CODE}")]
    fixed = apply(bad, noqa.edit.changes[uri])
    [line] = [ln for ln in fixed.splitlines() if "tolk: noqa" in ln]
    assert line.endswith(f"  {marker} tolk: noqa: {CODE}")
    change(client, uri, fixed, 2)
    assert await until(lambda: codes(client, uri) == [] or None) is True


async def test_fix_all(client: LanguageClient, tmp_path):
    uri = (tmp_path / "k.py").as_uri()
    text = STALE + "\n\n@cuda.jit\ndef j(a):\n    a[0] = 2.0  # tolk: noqa\n"
    open_doc(client, uri, text, "python")
    assert await until(lambda: codes(client, uri)) == ["TL003", "TL003"]
    actions = await code_actions(client, uri, only=["source.fixAll"])
    [fix_all] = actions
    assert fix_all.kind == "source.fixAll.tolk"
    [doc_edit] = fix_all.edit.document_changes
    fixed = apply(text, doc_edit.edits)
    assert "tolk: noqa" not in fixed
    change(client, uri, fixed, 2)
    assert await until(lambda: codes(client, uri) == [] or None) is True


async def test_hover(client: LanguageClient, tmp_path):
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, STALE, "python")
    await until(lambda: codes(client, uri))
    line = STALE.splitlines()[5]
    at_code = types.Position(line=5, character=line.index("TL102") + 2)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at_code))  # fmt: skip
    assert h is not None and h.contents.kind == types.MarkupKind.Markdown
    assert h.contents.value.startswith("# barrier-in-divergent-loop (TL102)") or rule_by_code("TL102") is None
    # over the flagged range (the noqa comment itself is TL003's range)
    at_comment = types.Position(line=5, character=line.index("# tolk") + 1)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at_comment))  # fmt: skip
    assert h is not None and "**TL003**" in h.contents.value and "# unused-noqa (TL003)" in h.contents.value
    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=1)
        )
    )
    assert nothing is None


async def test_workspace_settings(client: LanguageClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.tolk-lint]\nignore = ["{CODE}"]\n')
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, NUMBA_BAD, "python")
    assert await until(lambda: codes(client, uri) == [] or None) is True
    # a broken configuration is an error diagnostic, and the server lints on with the defaults
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.tolk-lint]\nselct = []\n")
    uri2 = (tmp_path / "sub" / "k.py").as_uri()
    open_doc(client, uri2, NUMBA_BAD, "python")
    await until(lambda: codes(client, uri2))
    msgs = [d.message for d in client.diagnostics[uri2]]
    assert any("bad configuration" in m and "selct" in m for m in msgs)
    assert CODE in codes(client, uri2)


async def test_unsaved_buffer_and_unknown_language(client: LanguageClient):
    uri = "untitled:Untitled-1"
    open_doc(client, uri, NUMBA_BAD, "python")
    assert await until(lambda: codes(client, uri)) == [CODE]
    # a file the linter cannot read is a diagnostic, not a crash; the server still answers
    uri2 = "file:///tmp/notes.txt"
    open_doc(client, uri2, "hello\n", "plaintext")
    assert await until(lambda: codes(client, uri2)) == ["TL001"]
    uri3 = "untitled:Untitled-2"
    open_doc(client, uri3, STALE, "python")
    assert await until(lambda: codes(client, uri3)) == ["TL003"]


async def test_a_crash_while_linting_becomes_a_diagnostic(monkeypatch):
    """In process: whatever the engine raises, `lint_now` answers with TL004."""
    import tolk_lint.engine
    from tolk_lint.lsp.server import TolkLanguageServer

    def boom(*args, **kwargs):
        raise RuntimeError("analysis exploded")

    monkeypatch.setattr(tolk_lint.engine, "lint_text", boom)
    result = TolkLanguageServer().lint_now("untitled:x", NUMBA_BAD, 3, "python")
    [d] = result.lsp
    assert d.code == "TL004" and "analysis exploded" in d.message and result.version == 3
    assert d.range.start.line == 0


SGEMM_PTX = Path(__file__).resolve().parent.parent.parent / "shared" / "acceptance" / "cuda" / "sgemm_tiled.sm80.ptx"


async def test_pipeline_code_action(client: LanguageClient, tmp_path):
    """TL302's fix as the editor's quick fix "Pipeline this loop with cp.async"
    (unsafe, so not preferred and not in fix-all); applied, it leaves no TL302."""
    if not SGEMM_PTX.exists():
        pytest.skip("the acceptance set is not beside the repository")
    text = SGEMM_PTX.read_text().replace(".maxntid 256, 1, 1", ".reqntid 16, 16, 1")
    uri = (tmp_path / "sgemm.ptx").as_uri()
    open_doc(client, uri, text, "ptx")
    assert await until(lambda: codes(client, uri), timeout=120) == ["TL302", "TL302"]
    actions = await code_actions(client, uri, only=[types.CodeActionKind.QuickFix])
    pipeline = [a for a in actions if a.title.startswith("Pipeline this loop with cp.async")]
    assert pipeline and not pipeline[0].is_preferred
    fixed = apply(text, pipeline[0].edit.changes[uri])
    assert "cp.async.commit_group" in fixed
    [fix_all] = await code_actions(client, uri, only=["source.fixAll"]) or [None]
    assert fix_all is None or not fix_all.edit.changes.get(uri)
    change(client, uri, fixed, 2)
    assert await until(lambda: codes(client, uri) == [] or None, timeout=120) is True
