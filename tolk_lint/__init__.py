"""tolk_lint: a linter, analyser and fixer for GPU kernels.

Kernels written as Numba Python or NVIDIA PTX are parsed into one IR
(`tolk_lint.ir`), analysed (`tolk_lint.analysis`: uniformity, staging, shared
memory, with Z3 in `analysis.smt`), checked by the rules of `tolk_lint.rules`,
and reported through `tolk_lint.outputs`, the CLI and the language server.

    from tolk_lint import lint_text
    result = lint_text(source, "kernel.ptx")
    for d in result.diagnostics: print(d.code, d.message)
"""

from tolk_lint.version import __version__

__all__ = ["__version__", "lint_file", "lint_text"]


def lint_text(text, path, settings=None):
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import lint_text as _lint

    return _lint(text, path, settings or DEFAULT_SETTINGS)


def lint_file(path, settings=None):
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import lint_file as _lint

    return _lint(path, settings or DEFAULT_SETTINGS)
