"""The language server (``tolk-lint lsp``): pygls 2.x over stdio.

`tolk_lint.lsp.server` holds the pygls wiring, `tolk_lint.lsp.convert` the
conversions between tolk_lint's 1-based, code-point positions and LSP's
0-based, client-unit (UTF-16 by default) ones. Both import pygls or
lsprotocol, the optional ``lsp`` extra; nothing else in tolk_lint does, so the
command line works without it.
"""
