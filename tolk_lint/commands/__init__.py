"""The subcommands, one module each, each holding one click command named
``command`` (`tolk_lint.cli` lists them and imports one when it runs):
`check`, `fix`, `stage`, `validate`, `rules`, `rule`, `lsp`; `options` holds
what they share (rule selectors, block shapes, targets, settings).

A command may import anything below it (the engine, the analyses, the
outputs); nothing but `tolk_lint.cli` imports a command.
"""
