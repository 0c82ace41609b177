"""The PTX front end: `parse_ptx(text, path) -> Module`.

`ptx.lark` is the grammar (LALR(1), lark's contextual lexer), `parser.py`
turns text into a light tree of tuples, `lower.py` turns that into the IR.
"""

from tolk_lint.frontends.ptx.lower import parse_ptx
from tolk_lint.frontends.ptx.parser import PTX_GRAMMAR_PATH, PtxSyntaxError, parse_tree

__all__ = ["PTX_GRAMMAR_PATH", "PtxSyntaxError", "parse_ptx", "parse_tree"]
