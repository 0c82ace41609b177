"""The PTX front end: `parse_ptx(text, path) -> Module`.

Parsing (text -> a light tree of tuples):

- `ptx.lark`: the grammar (LALR(1), lark's contextual lexer);
- `parser`: `parse_tree`, the one lark parser, `parse_slice` (a piece of
  the file alone, positions as in the whole), and the slow path for one
  instruction; `tree`: the tree's dataclasses and tuple shapes;
- `split`: where each function is in the text, found before lark reads it;
- `lark_cache`: the parser's tables kept in the user's cache folder, so a
  process loads them instead of building them;
- `transformer`: the rule callbacks that build the tree while lark reduces;
- `decoder`: the fast regex decoder of runs of ordinary statements;
- `errors`: `PtxSyntaxError` and lark's exceptions in words (TL001);
- `source`: comments blanked with every line and column kept;
  `literals`: PTX's number spellings.

Lowering (the tree -> the IR):

- `lower`: `parse_ptx` and `lower_module` (TL001 and TL002 diagnostics);
- `stream`: `open_ptx`, the same file read one kernel at a time (what the
  engine lints PTX with: one kernel's IR in memory at a time);
- `function`: `FunctionLowering`, the per-function driver (flatten, split,
  fill) and the dispatch table from opcode family to handler;
- `core`: the state and helpers the families share (emission, names,
  operands); `scope`: ``{ }`` scopes; `vocabulary`: opcode strings decoded;
  `specials`: ``%tid``, ``%ntid``, ... ;
- `flatten` (step 1: declarations, ``.loc``, labels), `cfg` (step 2: basic
  blocks and dominators), `params` (PARAM values);
- the instruction families: `arith` (arithmetic, logic, compare, select,
  convert, move), `memory` (ld/st/atom/red/cp.async/fence, textures and
  surfaces), `control` (terminators, barriers, calls), `warp` (shfl, vote,
  match, redux, activemask), `tensor_cores` (mma, wmma, ldmatrix,
  stmatrix, movmatrix), `opaque` (the OPAQUE fallback and TL002).

Imports go one way: parsing modules never import lowering ones; in the
lowering, `stream` -> `lower` -> `function` -> the families -> `core` ->
`cfg`/`scope`/`vocabulary`/`specials`. Outside the package, only
`parse_ptx`, `parse_tree`, `PTX_GRAMMAR_PATH` and `PtxSyntaxError` are
meant to be used, and `stream.open_ptx` by the engine.
"""

from tolk_lint.frontends.ptx.lower import parse_ptx
from tolk_lint.frontends.ptx.parser import PTX_GRAMMAR_PATH, PtxSyntaxError, parse_tree

__all__ = ["PTX_GRAMMAR_PATH", "PtxSyntaxError", "parse_ptx", "parse_tree"]
