"""The Python front end's finder across lints of one process (the language
server's case): per-function facts that depend on a function's text alone
are remembered (`finder._by_text`), and each lint gets sets of its own."""

from __future__ import annotations

import ast
import textwrap

from tolk_lint.frontends.python import finder as finder_mod


def test_per_function_facts_are_reused_across_lints_of_an_edited_file(monkeypatch):
    # the language server's case: a comment edited, the functions as they
    # were; their text-only facts are not worked out again, and each lint
    # gets sets of its own
    text = textwrap.dedent('''
        from numba import cuda

        @cuda.jit
        def gather(idx, src, out):
            i = cuda.grid(1)
            if i < idx.shape[0]:
                out[i] = src[idx[i]]
        # edit 0
        ''')
    first = finder_mod.Finder(ast.parse(text), finder_mod.Source(text, "/tmp/reuse_a.py"))
    calls = []
    real = finder_mod.index_params
    monkeypatch.setattr(finder_mod, "index_params", lambda fi: calls.append(fi.name) or real(fi))
    edited = text.replace("# edit 0", "# edit 1")
    second = finder_mod.Finder(ast.parse(edited), finder_mod.Source(edited, "/tmp/reuse_a.py"))
    [a] = [f for f in first.funcs if f.name == "gather"]
    [b] = [f for f in second.funcs if f.name == "gather"]
    assert calls == [] and a.index_params == b.index_params == {"idx"}
    a.index_params.add("src")
    assert b.index_params == {"idx"}
    changed = edited.replace("src[idx[i]]", "src[idx[i] + 1]")
    finder_mod.Finder(ast.parse(changed), finder_mod.Source(changed, "/tmp/reuse_a.py"))
    assert calls == ["gather"]  # its text changed: worked out again
