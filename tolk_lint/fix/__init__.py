"""Fixes: applying the text edits that diagnostics carry (`edits`), and the
rewrites that produce them.

Imports the diagnostics and the IR; the analyses a rewrite needs are passed
in by the rule that offers it.
"""
