"""The version of tolk-lint, in one place (the package and the caches read it)."""

__version__ = "0.1.0"
