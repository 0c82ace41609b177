"""The block of a host launch that is not a constant but is bounded.

NVIDIA's FDTD3d picks its block at run time from a command-line size and
checks it before launching::

    dim3 dimBlock;
    dimBlock.x = k_blockDimX;                                   // 32
    dimBlock.y = ((userBlockSize / k_blockDimX) < (size_t)k_blockDimMaxY)
                     ? (userBlockSize / k_blockDimX) : (size_t)k_blockDimMaxY;
    if (dimBlock.x < RADIUS || dimBlock.y < RADIUS) exit(EXIT_FAILURE);
    FiniteDifferencesKernel<<<dimGrid, dimBlock>>>(...);

`cuda_source.CudaSource.block_of` reads only constant blocks, so without
this the kernel would be linted for any block and its 16-row tile reported
out of bounds. Here each dimension's range is read instead, and the launch
is linted under the box they make (a `shapes.Contract` with ``least``, the
lower bounds): ``blockDim.x = 32 and 4 <= blockDim.y <= 16``.

1. The block is a ``dim3`` variable of the launching function (declared
   ``dim3 b;``, ``dim3 b(x, y)`` or ``dim3 b = dim3(...)``, then given
   members by ``b.x = ...;``), a ``dim3(x, y, z)`` written in the launch, or
   an integer expression (``threads``, with ``int threads = min(n, 256);``).
   The variable must change only by those bindings, each on every path to
   the launch (`CudaSource.changes`, as for a constant block): a member
   set under an ``if``, or the variable assigned whole again, leaves the
   launch unread.
2. Each dimension's value is bounded where it is set (`host_ranges.bounded`):
   a constant is exact; otherwise a variable it reads is in the range the
   checks around it give (`arguments._arg_range`), or its initialiser's when
   it is never assigned after its declaration, or else any value of its C
   type; what bounds the value then is a minimum, a ``?:`` that is one, a
   mask. The value is converted to ``unsigned int`` (a ``dim3`` member's
   type): a negative ``int`` becomes at least 2**31, no block a launch can
   have, so only its non-negative values stay; a 64-bit value that may not
   fit in 32 bits is unbounded. Every dimension is in 1..1024 (64 for z):
   a launch outside that does not run the kernel.
3. The comparisons of a member with a constant that the launch runs under
   (`arguments._conditions_at`: an enclosing ``if``, an ``assert``, an
   early ``exit``/``return``), made after the member's last assignment,
   narrow it: FDTD3d's check gives ``dimBlock.y >= 4``.

The launch is read only when every dimension has an upper bound below its
maximum (or one value): a block one of whose dimensions could be as large as
any block's (a check ``dimBlock.y >= 4`` alone) stays an `shapes.UNREAD`
launch, and TL205 infers the kernel's contract. Every bound
is one the code enforces, never a guess: the kernel is linted for every
block in the box, each of which the host may launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.launch import host_eval, host_ranges
from tolk_lint.launch.arguments import (
    _arg_range,
    _assigned,
    _bounds_at,
    _conditions_at,
    _declaration,
    _declaration_at,
    _host_type,
)
from tolk_lint.launch.c_syntax import Token, matching, split_args, statement_end
from tolk_lint.launch.c_types import IntType
from tolk_lint.launch.cuda_structure import declaration_type, in_parens
from tolk_lint.launch.shapes import DIMS, MAX_DIMS, MAX_THREADS, Contract

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource
    from tolk_lint.launch.cuda_structure import Function, Launch

Range = tuple[int, int]
_UINT_MAX = (1 << 32) - 1
_MAX_DEPTH = 4  # initialisers followed through (`int by = min(n, 16); int threads = 32 * by;`)


def bounded_block(src: CudaSource, launch: Launch,
                  binding: dict[str, int] | None = None) -> tuple[Contract | tuple[int, int, int], str] | None:  # fmt: skip
    """The blocks the launch can have, as a box (a `Contract`; an exact
    block when the checks leave one value per dimension), and where the host
    code bounds them, in words; None when a dimension is not bounded."""
    func = launch.func
    if func is None or not launch.block:
        return None
    reader = _Reader(src, func, binding or {})
    dims = reader.block(launch.block, launch.index)
    if dims is None:
        return None
    dims = [(max(lo, 1), min(hi, m)) for (lo, hi), m in zip(dims, MAX_DIMS)]
    if any(lo > hi for lo, hi in dims) or any(hi == m and lo < hi for (lo, hi), m in zip(dims, MAX_DIMS)):
        return None  # no block the launch can run, or a dimension with no upper bound
    least = (dims[0][0], dims[1][0], dims[2][0])
    most = (dims[0][1], dims[1][1], dims[2][1])
    if least[0] * least[1] * least[2] > MAX_THREADS:
        return None
    lines = sorted(reader.lines)
    words = ", ".join(str(n) for n in lines[:-1]) + (" and " if len(lines) > 1 else "") + str(lines[-1])
    where = f"its block bounded by the host code at lines {words} of {src.label}"
    if least == most:
        return least, f"the launch `{launch.text}` at {src.label}:{launch.line} ({where})"
    return Contract(most, min(MAX_THREADS, most[0] * most[1] * most[2]), "box", least=least), where


class _Reader:
    """The ranges of the launching function ``func``'s expressions."""

    def __init__(self, src: CudaSource, func: Function, binding: dict[str, int]):
        self.src = src
        self.func = func
        self.binding = binding
        self.lines: set[int] = set()  # where the code that bounds the block is, for the message

    def block(self, toks: list[Token], index: int) -> list[Range] | None:
        """Each dimension's range for the launch's block expression ``toks``."""
        if len(toks) == 1 and toks[0].kind == "name":
            got = self._dim3_variable(toks[0].text, index)
            if got is not False:
                return got  # type: ignore[return-value]
        if len(toks) > 2 and toks[0].text == "dim3" and toks[1].text in ("(", "{") and \
                matching(toks, 1) == len(toks) - 1:  # fmt: skip
            self.lines.add(toks[0].line)
            return self._dim3_arguments(toks[2:-1], index)
        x = self.dimension(toks, index)
        self.lines.add(toks[0].line)
        return None if x is None else [x, (1, 1), (1, 1)]

    def _dim3_variable(self, name: str, index: int) -> list[Range] | None | bool:
        """A ``dim3`` local's members at token ``index``; False: ``name`` is
        no ``dim3`` declared in the function."""
        src, toks, func = self.src, self.src.tokens, self.func
        decl = self._dim3_declaration(name, index)
        if decl is None:
            return False
        if src.changes(func, name, index):
            return None
        self.lines.add(toks[decl].line)
        after = toks[decl + 1].text
        if after in ("(", "{"):
            dims = self._dim3_arguments(toks[decl + 2 : matching(toks, decl + 1)], decl)
        elif after == "=":
            init = toks[decl + 2 : statement_end(toks, decl)]
            dims = self.block(init, decl) if init else None
        else:  # `dim3 b;`: (1, 1, 1) until its members are set
            dims = [(1, 1), (1, 1), (1, 1)]
        if dims is None:
            return None
        last = {}
        for j in range(decl + 1, index):
            if toks[j].text != name or toks[j].kind != "name" or toks[j - 1].text in (".", "->", "::"):
                continue
            if toks[j + 1].text == "=":
                return None  # assigned whole: not read here
            if toks[j + 1].text == "." and j + 3 < index and toks[j + 3].text == "=":
                d = DIMS.find(toks[j + 2].text)
                if d < 0:
                    return None
                got = self.dimension(toks[j + 4 : statement_end(toks, j)], j)
                if got is None:
                    return None
                dims[d] = got
                last[f"{name}.{DIMS[d]}"] = j
                self.lines.add(toks[j].line)
        guards = _bounds_at(src, index, func, since=last)
        for d in range(3):
            lo, hi = guards.get(f"{name}.{DIMS[d]}", dims[d])
            if (lo, hi) != dims[d]:
                dims[d] = (max(lo, dims[d][0]), min(hi, dims[d][1]))
                self.lines.add(self._guard_line(f"{name}.{DIMS[d]}", index))
        return dims

    def _dim3_declaration(self, name: str, index: int) -> int | None:
        """The token of ``name`` in its ``dim3`` declaration before ``index``."""
        toks, func = self.src.tokens, self.func
        for j in range(index - 1, func.start, -1):
            if toks[j].text != name or toks[j].kind != "name":
                continue
            prev = toks[j - 1].text
            if prev == "," and not in_parens(toks, func.start, j):  # `dim3 dimGrid, dimBlock;`
                prev = declaration_type(toks, j, func.start) or prev
            if prev == "dim3":
                return j if toks[j + 1].text in (";", ",", "(", "{", "=") else None
        return None

    def _dim3_arguments(self, toks: list[Token], at: int) -> list[Range] | None:
        args = split_args(toks) if toks else []
        if not 1 <= len(args) <= 3:
            return None
        dims: list[Range] = []
        for arg in args:
            got = self.dimension(arg, at)
            if got is None:
                return None
            dims.append(got)
        return dims + [(1, 1)] * (3 - len(dims))

    def _guard_line(self, member: str, index: int) -> int:
        """The line of the last check before the launch that tests ``member`` (for the message)."""
        toks = self.src.tokens
        name, dim = member.split(".")
        line = toks[index].line
        for cond, _holds, at in _conditions_at(self.src, index, self.func):
            if any(a.text == name and b.text == "." and c.text == dim for a, b, c in zip(cond, cond[1:], cond[2:])):
                line = toks[at].line
        return line

    # -- one dimension ---------------------------------------------------------------------------------

    def dimension(self, toks: list[Token], at: int) -> Range | None:
        """The values the expression ``toks`` at token ``at`` gives a
        ``dim3`` member (an ``unsigned int``); None: any."""
        got = self.range_of(toks, at)
        if got is None:
            return None
        (lo, hi), t = got
        if t is None:  # a constant: as C converts it
            v = host_eval.wrap(lo, host_eval.UINT)
            return v, v
        if 0 <= lo and hi <= _UINT_MAX:
            return lo, hi
        if t.signed and t.bits <= 32 and hi >= 0:
            return max(lo, 0), hi  # (its negative values wrap to 2**31 and more: no block has them)
        return None

    def range_of(self, toks: list[Token], at: int, depth: int = 0) -> tuple[Range, IntType | None] | None:
        """The range of the expression ``toks`` at token ``at`` and its C
        type (None for a constant the evaluator reads, whatever its type)."""
        src, func = self.src, self.func
        v = src._evaluator(src._resolver(at, func, [], 1, self.binding, stable=True)).value(toks)
        if isinstance(v, int) and not isinstance(v, bool):
            return (v, v), None
        toks = _without_std(toks)
        try:
            e = host_eval.parse_expression(toks)
        except (host_eval.Unknown, IndexError, RecursionError):
            return None
        cells: dict[str, host_eval.Cell] = {}
        ranges: dict[str, Range] = {}
        for k, tok in enumerate(toks):
            n = tok.text
            if tok.kind != "name" or n in cells or n in self.binding or (k + 1 < len(toks) and toks[k + 1].text == "("):
                continue
            host = _host_type(src, func, n, at)
            if host is None:
                if n in func.params or _declaration(src, func, n, at) is not None:
                    return None  # a variable that is not an integer
                continue  # the file's constant (or a name of no value: the walk says unknown)
            cells[n] = host_eval.Cell(host_eval.POISON, host)
            got = self._variable(n, host, at, depth)
            if got is not None:
                ranges[n] = got
        fixed = {n: host_eval.Int(x, host_eval.INT) for n, x in self.binding.items()}
        machine = host_eval.Machine(src, lambda n: cells.get(n) or fixed.get(n))
        got = host_ranges.bounded(e, ranges, machine)
        if got is None:
            return None
        try:
            return got, machine.type_of(e, None)
        except (host_eval.Unknown, RecursionError):
            return None

    def _variable(self, n: str, host: IntType, at: int, depth: int) -> Range | None:
        """What the checks around ``at`` leave the variable ``n`` (of type
        ``host``), and, when the function never assigns it after declaring it,
        its initialiser's range; None: any value of its type."""
        src, func = self.src, self.func
        got = _arg_range(src, func, at, [Token("name", n, 0)], self.binding, 0)
        decl = _declaration_at(src, func, n, at)
        if decl is None or depth >= _MAX_DEPTH or _assigned(src, func, n, at):
            return got
        init = (_declaration(src, func, n, decl + 2) or ((), None))[1]
        r = self.range_of(init, decl, depth + 1) if init else None
        if r is None:
            return got
        (lo, hi), t = r
        if t is None:
            lo = hi = host_eval.wrap(lo, host)
        elif not host.lo <= lo <= hi <= host.hi:
            return got  # (converted to its type, it may wrap)
        self.lines.add(src.tokens[decl].line)
        return (lo, hi) if got is None else (max(lo, got[0]), min(hi, got[1]))


def _without_std(toks: list[Token]) -> list[Token]:
    """``std::min(a, b)`` read as ``min(a, b)``."""
    def qualifier(k: int) -> bool:  # the `std` or the `::` of `std::min`
        at = k if toks[k].text == "std" else k - 1
        return at >= 0 and at + 2 < len(toks) and toks[at].text == "std" and toks[at + 1].text == "::" and \
            toks[at + 2].text in ("min", "max")  # fmt: skip

    return [t for k, t in enumerate(toks) if t.text not in ("std", "::") or not qualifier(k)]
