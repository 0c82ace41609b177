"""Fixes: applying the text edits that diagnostics carry (`edits`), and the
rewrites that produce them.

- `edits`: applying fixes to a text (what ``tolk-lint fix`` does);
- `pipeline`: TL302's fix, a loop's tile copies pipelined with cp.async,
  dispatched by language; `outcome` (`NotFixable`, the title) and `proof`
  (what the rewritten text must lint to) are shared with the rewrites;
- the PTX rewrite, in reading order: `ptx_text` (the kernel's statements,
  blocks and register definitions), `ptx_slices` (values of another trip,
  cloned early), `ptx_chunks` (small elements regrouped into 16-byte
  chunks), `ptx_plan` (the loop, its copies and reads, and every reason the
  rewrite would not be exact), `ptx_registers` (fresh registers),
  `ptx_edits` (line edits), `ptx_pipeline` (the Form A schedule written out,
  and `pipeline_fix`).

Imports the diagnostics, the IR, the PTX parse tree (`frontends.ptx`) and
the staging analysis's polynomials (`analysis.stage`); never the engine or
the rules: a rule that offers a rewrite passes the engine's re-lint in as
``RuleContext.relint``.
"""
