"""Renderers: each turns a list of `LintResult`s into text for one audience."""
