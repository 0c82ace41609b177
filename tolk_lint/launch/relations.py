"""An argument the launch computes from its other arguments and its block.

NVIDIA's postProcessGL launches

    cudaProcess<<<grid, block, sbytes>>>(g_odata, imgw, imgh,
                                         block.x + (2 * radius), radius, ...);

so the kernel's row pitch ``tilew`` is ``blockDim.x + 2 * r`` at every launch
(``r`` the parameter that gets ``radius``), whatever ``block`` and
``radius`` are. Its shared tile, ``sdata[(r + ty) * tilew + (r + tx)]``, has
one writer per cell under that relation; with ``tilew`` and ``r`` taken as
unrelated, any two threads collide for some pair (``tilew = 0``).

`relation_of` reads such an argument as a linear form over the launch's
block dimensions and the kernel's other integer parameters whose arguments
are plain names: ``c + sum(k * term)``, with ``+``, ``-``, and ``*`` or
``<<`` by a constant. Both sides are evaluated at the same call, so the
relation holds at any value; and C's integer arithmetic wraps as the
solver's bit-vectors do, so it holds exactly in the parameter's width
whenever every parameter it names has that width (truncation commutes with
``+``, ``-`` and ``*``; ``/`` and ``%`` do not, and are not read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint.launch import host_eval

if TYPE_CHECKING:
    from tolk_lint.launch.c_syntax import Token
    from tolk_lint.launch.c_types import IntType
    from tolk_lint.launch.cuda_structure import Launch

MAX_TOKENS = 40  # an argument longer than this is not read as a relation


@dataclass(frozen=True)
class Relation:
    """``const + sum(coeff * term)``: a term is ``("ntid", d)``, the
    launch's block dimension d, or ``("arg", j)``, the kernel's parameter
    number j (``names[j]`` in the CUDA source, for the words)."""

    const: int
    terms: tuple[tuple[int, str, int], ...]  # (coeff, "ntid" | "arg", index), sorted
    names: tuple[tuple[int, str], ...] = ()  # (j, the parameter's name) for the "arg" terms

    def words(self) -> str:
        """``blockDim.x + 2 * r``."""
        named = dict(self.names)
        out = ""
        for coeff, kind, j in self.terms:
            term = f"blockDim.{'xyz'[j]}" if kind == "ntid" else named.get(j, f"argument {j + 1}")
            text = term if abs(coeff) == 1 else f"{abs(coeff)} * {term}"
            out += (("-" if coeff < 0 else "") + text) if not out else (" - " if coeff < 0 else " + ") + text
        if self.const:
            out += (" - " if self.const < 0 else " + ") + str(abs(self.const))
        return out


def relation_of(launch: Launch, i: int, arg: list[Token], params: tuple[tuple[str, IntType | None], ...],
                constant) -> Relation | None:  # fmt: skip
    """The argument ``arg`` of parameter ``i`` as a `Relation`, or None.
    ``constant(tokens)``: the value of a name that is a constant of the
    file (``RADIUS``), else None."""
    ptype = params[i][1]
    if ptype is None or not 1 < len(arg) <= MAX_TOKENS or launch.args is None:
        return None
    plain = {}  # a name passed alone as another integer parameter of the same width -> that parameter
    for j, (a, (_n, t)) in enumerate(zip(launch.args, params)):
        if j != i and len(a) == 1 and a[0].kind == "name" and t is not None and t.bits == ptype.bits:
            plain.setdefault(a[0].text, j)
    block = [t.text for t in launch.block]
    form = _Linear(arg, plain, block, constant).parse()
    if form is None:
        return None
    const, coeffs = form
    mask = (1 << ptype.bits) - 1
    terms = tuple(sorted(((k, kind, j) for (kind, j), k in coeffs.items() if k & mask),
                         key=lambda t: (t[1] != "ntid", t[2])))  # fmt: skip
    if not terms:
        return None  # a constant: read as one elsewhere
    names = tuple(sorted((j, params[j][0] or f"argument {j + 1}") for _k, kind, j in terms if kind == "arg"))
    return Relation(const, terms, names)


def block_dimension(block: list[str], arg: list[str]) -> int | None:
    """Which dimension of the launch's own block (``block``, its tokens'
    texts) the argument ``arg`` is: the block expression itself
    (``<<<g, threads>>>(..., threads)``: x) or a member of it
    (``<<<g, block>>>(..., block.x)``), evaluated at the same point, so
    equal whatever its value (NVIDIA's dwtHaar1D passes ``block_size.x``)."""
    if not block:
        return None
    if arg == block and (len(block) > 1 or block[0][:1].isalpha() or block[0][:1] == "_"):
        return 0  # (a literal `256` is a constant argument, read as one)
    if len(arg) == len(block) + 2 and arg[: len(block)] == block and arg[-2] == "." and arg[-1] in ("x", "y", "z"):
        return "xyz".index(arg[-1])
    return None


class _Linear:
    """A recursive descent over ``+ -`` of ``*`` / ``<<`` of primaries,
    keeping a linear form (const, {term: coeff}); None when the argument is
    anything else (a product of two terms, a division, a call)."""

    def __init__(self, toks: list[Token], plain: dict[str, int], block: list[str], constant):
        self.toks, self.plain, self.block, self.constant = toks, plain, block, constant
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.toks[j].text if j < len(self.toks) else ""

    def parse(self):
        try:
            form = self.sum()
        except (ValueError, IndexError):
            return None
        return form if form is not None and self.i == len(self.toks) else None

    def sum(self):
        a = self.product()
        while a is not None and self.peek() in ("+", "-"):
            op = self.toks[self.i].text
            self.i += 1
            b = self.product()
            if b is None:
                return None
            a = _add(a, b if op == "+" else _scale(b, -1))
        return a

    def product(self):
        a = self.unary()
        while a is not None and self.peek() in ("*", "<<"):
            op = self.toks[self.i].text
            self.i += 1
            b = self.unary()
            if b is None:
                return None
            if op == "<<":
                if b[1] or not 0 <= b[0] < 64:
                    return None
                a = _scale(a, 1 << b[0])
            elif not a[1]:
                a = _scale(b, a[0])
            elif not b[1]:
                a = _scale(a, b[0])
            else:
                return None  # a product of two terms: not linear
        return a

    def unary(self):
        if self.peek() == "-":
            self.i += 1
            a = self.unary()
            return None if a is None else _scale(a, -1)
        if self.peek() == "+":
            self.i += 1
            return self.unary()
        return self.primary()

    def primary(self):
        tok = self.toks[self.i]
        if tok.text == "(":
            self.i += 1
            a = self.sum()
            if self.peek() != ")":
                return None
            self.i += 1
            return a
        if tok.kind == "num":
            self.i += 1
            try:
                return host_eval.literal(tok.text).v, {}
            except (host_eval.Unknown, ValueError):
                return None
        if tok.kind != "name":
            return None
        # the launch's block, or a member of it: `block.x`, `threads`
        n = len(self.block)
        for width in (n + 2, 1):
            d = block_dimension(self.block, [t.text for t in self.toks[self.i : self.i + width]])
            if d is not None and (width > 1 or self.peek(1) != "."):
                self.i += width
                return 0, {("ntid", d): 1}
        if self.peek(1) in (".", "(", "[", "->", "::"):
            return None
        self.i += 1
        if tok.text in self.plain:
            return 0, {("arg", self.plain[tok.text]): 1}
        v = self.constant([tok])
        return None if v is None else (v, {})



def _add(a, b):
    out = dict(a[1])
    for t, k in b[1].items():
        out[t] = out.get(t, 0) + k
    return a[0] + b[0], {t: k for t, k in out.items() if k}


def _scale(a, k: int):
    return a[0] * k, {t: c * k for t, c in a[1].items() if c * k}
