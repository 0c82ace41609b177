"""The language server works out TL302's unsafe fix (a cp.async pipeline,
proved by a second lint) when the editor asks for the diagnostic's code
actions, for that kernel alone: a lint never proves a rewrite, so opening
and editing a file cost what the analyses cost."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra")

from test_fixer_numba import TWO_KERNELS

from tolk_lint import engine
from tolk_lint.lsp.convert import text_edits
from tolk_lint.lsp.server import TolkLanguageServer


class _Docs:
    """The one document the server holds, as the workspace would."""

    def __init__(self, uri: str, text: str):
        self.doc = type("Doc", (), {"uri": uri, "source": text, "version": 1, "language_id": "python"})()

    def get(self, uri: str):
        return self.doc if uri == self.doc.uri else None


def test_a_lint_proves_no_rewrite_and_the_code_action_does(monkeypatch, tmp_path):
    uri = (tmp_path / "two.py").as_uri()
    server = TolkLanguageServer()
    proofs: list[str] = []
    real = engine.relint_text
    monkeypatch.setattr(engine, "relint_text", lambda *a, **k: proofs.append(a[4] if len(a) > 4 else k.get("kernel"))
                        or real(*a, **k))  # fmt: skip
    linted = server.lint_now(uri, TWO_KERNELS, 1, "python")
    tl302 = [d for d in linted.lsp if d.code == "TL302"]
    assert tl302 and proofs == []
    assert all(d.data["fix"] is None and d.data["when_asked"] for d in tl302)

    first = next(d for d in tl302 if d.data["kernel"] == "first")
    monkeypatch.setattr(type(server), "workspace", property(lambda s: type("W", (), {
        "text_documents": _Docs(uri, TWO_KERNELS), "position_codec": None})()))  # fmt: skip
    fix = asyncio.run(server.fix_when_asked(uri, first))
    assert fix is not None and fix["title"].startswith("Pipeline this loop with cp.async")
    assert set(proofs) == {"first"}  # the one kernel
    asked = len(proofs)
    assert "cp_async(" in "".join(e.new_text for e in text_edits(fix)[uri])
    again = asyncio.run(server.fix_when_asked(uri, first))  # the editor asks again: kept
    assert again == fix and len(proofs) == asked
