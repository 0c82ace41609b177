"""What a launch's grid says by its form when its value is not known.

``kernel<<<(n + 511) / 512, 512>>>`` launches ``n`` blocks along x and one
along y and z: an integer grid is ``dim3(g, 1, 1)``. Reading only the value
(`cuda_source.CudaSource.grid_of`) leaves all three dimensions unknown, and a
kernel that reads ``blockIdx.y`` or ``gridDim.z`` is then checked for grids
no launch of it has. `grid_parts` reads the form instead, one part per
dimension:

- an integer literal, arithmetic (``dim3`` has no operators), or a call of
  one of the file's functions declared to return an integer (``iDivUp``):
  the expression itself along x, 1 along y and z;
- ``dim3(a, b)``, ``dim3{a}``: each argument, 1 past them;
- a variable: an integer declaration or parameter is x alone; ``dim3 g(a,
  b)`` gives its arguments (read where it is declared), when nothing after
  the declaration assigns it or a member of it, takes its address or passes
  it by reference;
- anything else (a ternary, a member, a ``dim3`` parameter): None, nothing
  said.

The caller values each part it can; a part it cannot is any number of blocks.
"""

from __future__ import annotations

from tolk_lint.launch.c_syntax import ASSIGN_OPS, Token, matching, split_args
from tolk_lint.launch.c_types import int_type
from tolk_lint.launch.cuda_structure import (
    Function,
    Launch,
    changed_in_place,
    innermost,
    open_paren,
    paren_before,
)

_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~"})
_FUNCTION_WORDS = frozenset({"__host__", "__device__", "__forceinline__", "inline", "static", "constexpr", "extern"})


ONE = "one"  # a dimension the form fixes at 1 block


def grid_parts(src, launch: Launch) -> list | None:
    """The three dimensions of the launch's grid as its form gives them
    (see the module docstring): each an ``(expression, token index)`` to
    value, `ONE`, or None; None when the form says nothing."""
    toks = launch.grid or []
    while len(toks) >= 2 and toks[0].text == "(" and matching(toks, 0) == len(toks) - 1:
        toks = toks[1:-1]
    if not toks:
        return None
    here = launch.index
    if len(toks) == 1:
        t = toks[0]
        if t.kind == "num":
            return [(toks, here), ONE, ONE]
        return _variable_parts(src, t.text, here) if t.kind == "name" else None
    if toks[0].text == "dim3" and toks[1].text in ("(", "{") and matching(toks, 1) == len(toks) - 1:
        return _dims(split_args(toks[2:-1]), here)
    if _top_level(toks) & _ARITHMETIC:
        return [(toks, here), ONE, ONE]
    if toks[0].kind == "name" and toks[1].text == "(" and matching(toks, 1) == len(toks) - 1 \
            and _returns_integer(src, toks[0].text):  # fmt: skip
        return [(toks, here), ONE, ONE]
    return None


def _dims(args: list[list[Token]], index: int) -> list | None:
    if not 1 <= len(args) <= 3:
        return None
    return [(a, index) for a in args] + [ONE] * (3 - len(args))


def _top_level(toks: list[Token]) -> set[str]:
    """The operator tokens outside brackets (a unary minus counts: it is arithmetic too)."""
    out, depth = set(), 0
    for t in toks:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and t.kind == "op":
            out.add(t.text)
    if "?" in out or "." in out or "->" in out:  # a choice or a member: the form says nothing
        return set()
    return out


def _returns_integer(src, name: str) -> bool:
    """Whether the file defines a function ``name`` whose return type is an integer."""
    toks = src.tokens
    for f in src.functions:
        if f.name != name:
            continue
        close = paren_before(toks, f.start)
        open_ = open_paren(toks, close) if close is not None else None
        if open_ is None:
            continue
        words = []
        k = open_ - 2  # before the name
        while k >= 0 and toks[k].text not in (";", "}", "{", ">") and toks[k].kind == "name":
            words.append(toks[k].text)
            k -= 1
        words = [w for w in reversed(words) if w not in _FUNCTION_WORDS]
        if words and int_type(words) is not None:
            return True
    return False


def _variable_parts(src, name: str, index: int) -> list | None:
    """The parts of the variable ``name`` at the launch (token ``index``):
    its declaration in the launching function, else its parameter's type."""
    toks = src.tokens
    func: Function | None = innermost(src.functions, index)
    if func is None:
        return None
    for j in range(index - 1, func.start, -1):
        if toks[j].text != name or toks[j].kind != "name" or toks[j - 1].text in (".", "->", "::"):
            continue
        prev = toks[j - 1].text
        if int_type([prev]) is not None and prev != "bool":
            return [([toks[j]], index), ONE, ONE]  # `int blocks = ...;`: whatever it holds later, a scalar
        if prev != "dim3":
            continue
        nxt = toks[j + 1].text if j + 1 < len(toks) else ""
        if nxt not in ("(", "{") or _written_after(src, name, j, func):
            return None
        return _dims(split_args(toks[j + 2 : matching(toks, j + 1)]), j)
    types = dict(func.param_list)
    return [([Token("name", name, toks[index].line)], index), ONE, ONE] if types.get(name) is not None else None


def _written_after(src, name: str, decl: int, func: Function) -> bool:
    """Whether anything in ``func`` after ``decl`` may change the ``dim3``
    ``name``: an assignment to it or a member, an increment, its address."""
    toks = src.tokens
    for j in range(decl + 1, func.end):
        if toks[j].text != name or toks[j].kind != "name" or toks[j - 1].text in (".", "->", "::"):
            continue
        if changed_in_place(src, j):
            return True
        nxt = toks[j + 1].text if j + 1 < len(toks) else ""
        k = j + 3 if nxt == "." else j + 1
        if k < len(toks) and toks[k].text in ASSIGN_OPS:
            return True
    return False
