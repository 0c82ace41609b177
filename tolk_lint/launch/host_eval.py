"""Host code run on integers: which values of a launch argument the host's
own checks let through.

NVIDIA's bitonic sort is right only for a power-of-two ``arrayLength``, and
its host code says so through a helper that returns the odd part::

    uint factorizationRemainder = factorRadix2(&log2L, arrayLength);
    assert(factorizationRemainder == 1);

`arguments` reads the comparisons around a launch (``2 <= arrayLength <=
1024``); a condition that is not a comparison of the argument with a
constant (a helper's result, ``(n & (n - 1)) == 0``, ``!isPow2(n)`` before a
``return``) is run here for every value those comparisons leave, at most
`arguments.MAX_SCANNED` of them, and the values it holds for are the
argument's (`arguments.ArgFact.values`). A helper the condition calls is
interpreted from its body in the file: this module is that interpreter.

What is run: blocks; declarations of integer and pointer locals; ``if`` /
``else``, ``for``, ``while``, ``do``; ``return``, ``break``, ``continue``;
expressions with ``= += ... >>=``, ``++``/``--``, the comma, ``?:``, the binary
operators, unary ``- + ~ !``, ``*p`` and ``&x`` (a pointer to a local),
casts to integer types, and calls of the file's functions, whose ``T &``
parameters are the caller's variables (NVIDIA's scan returns the exponent
of a length through ``uint &log2L``) and whose ``const T &`` parameters are
bound to a copy of any other value. Each value is an
`Int`, a value with its C type, and the arithmetic is C's: the integer
promotions and the usual arithmetic conversions, unsigned results wrapped,
division toward zero. What C leaves undefined (a signed overflow, a shift by
the width or more, a division by zero), a float, a name the code does not
define, a pointer read past its local, more than `MAX_STEPS` steps: the
condition is unknown and says nothing (never a guess).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tolk_lint.launch.c_syntax import BINARY_LEVELS, Token, int_of, matching
from tolk_lint.launch.c_types import IntType, int_type

if TYPE_CHECKING:
    from collections.abc import Callable

    from tolk_lint.launch.cuda_source import CudaSource
    from tolk_lint.launch.cuda_structure import Function

MAX_STEPS = 20_000  # per run of a condition, helpers included
MAX_CALL_DEPTH = 16
_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
TYPE_WORDS = frozenset(
    "unsigned signed int long short char bool const volatile register static uint uint8_t uint16_t uint32_t "
    "uint64_t int8_t int16_t int32_t int64_t size_t ptrdiff_t ssize_t ulong".split()
)  # fmt: skip


class Unknown(Exception):
    """The code leaves the subset this module runs, or its value its range."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


@dataclass
class _Return(Exception):
    value: Any


@dataclass
class Cell:
    """A variable: its value (an `Int`, a `Ref`, or `POISON` before it is set),
    its integer type (None: a pointer) and whether it is a ``bool``."""

    value: Any
    type: IntType | None
    is_bool: bool = False


@dataclass(frozen=True)
class Ref:
    """A pointer to a local: ``&x`` is ``Ref(x's cell, 0)``; ``p + 1`` points past it."""

    cell: Cell
    offset: int


POISON = object()  # a value never set (or read past a local): an error only when used


# -- parsing: tokens to tuples ---------------------------------------------------------------------------


class _Parser:
    """A function body's statements and expressions as nested tuples."""

    def __init__(self, toks: list[Token]):
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.toks[j].text if j < len(self.toks) else ""

    def take(self, text: str | None = None) -> Token:
        if self.i >= len(self.toks) or (text is not None and self.toks[self.i].text != text):
            raise Unknown
        self.i += 1
        return self.toks[self.i - 1]

    # statements

    def statement(self) -> tuple:
        t = self.peek()
        if t == "{":
            self.take("{")
            body = []
            while self.peek() != "}":
                body.append(self.statement())
            self.take("}")
            return ("block", body)
        if t == ";":
            self.take(";")
            return ("block", [])
        if t == "if":
            self.take("if")
            cond = self.paren()
            then = self.statement()
            other = None
            if self.peek() == "else":
                self.take("else")
                other = self.statement()
            return ("if", cond, then, other)
        if t == "while":
            self.take("while")
            return ("while", self.paren(), self.statement())
        if t == "do":
            self.take("do")
            body = self.statement()
            self.take("while")
            cond = self.paren()
            self.take(";")
            return ("do", body, cond)
        if t == "for":
            self.take("for")
            self.take("(")
            init = None if self.peek() == ";" else self.simple()
            if init is None or init[0] == "expr":
                self.take(";")
            cond = None if self.peek() == ";" else self.expression()
            self.take(";")
            step = None if self.peek() == ")" else self.expression()
            self.take(")")
            return ("for", init, cond, step, self.statement())
        if t == "return":
            self.take("return")
            value = None if self.peek() == ";" else self.expression()
            self.take(";")
            return ("return", value)
        if t in ("break", "continue"):
            self.take()
            self.take(";")
            return (t,)
        got = self.simple()
        if got[0] == "expr":
            self.take(";")
        return got

    def simple(self) -> tuple:
        """A declaration (its ``;`` taken) or an expression (not)."""
        if self.peek() not in TYPE_WORDS:
            return ("expr", self.expression())
        words = []
        while self.peek() in TYPE_WORDS:
            words.append(self.take().text)
        out = []
        while True:
            pointer = False
            while self.peek() == "*":
                self.take("*")
                pointer = True
            name = self.take()
            if name.kind != "name":
                raise Unknown
            init = None
            if self.peek() == "=":
                self.take("=")
                init = self.assignment()
            out.append((name.text, tuple(words), pointer, init))
            if self.peek() != ",":
                break
            self.take(",")
        self.take(";")
        return ("decl", out)

    def paren(self) -> tuple:
        self.take("(")
        e = self.expression()
        self.take(")")
        return e

    # expressions, lowest precedence first

    def expression(self) -> tuple:
        e = self.assignment()
        while self.peek() == ",":
            self.take(",")
            e = ("comma", e, self.assignment())
        return e

    def assignment(self) -> tuple:
        left = self.ternary()
        if self.peek() in _ASSIGN_OPS:
            op = self.take().text
            return ("assign", op, left, self.assignment())
        return left

    def ternary(self) -> tuple:
        c = self.binary(0)
        if self.peek() != "?":
            return c
        self.take("?")
        a = self.assignment()
        self.take(":")
        return ("cond", c, a, self.ternary())

    def binary(self, level: int) -> tuple:
        if level == len(BINARY_LEVELS):
            return self.unary()
        a = self.binary(level + 1)
        while self.peek() in BINARY_LEVELS[level]:
            op = self.take().text
            a = ("bin", op, a, self.binary(level + 1))
        return a

    def unary(self) -> tuple:
        t = self.peek()
        if t in ("-", "+", "~", "!"):
            self.take()
            return ("un", t, self.unary())
        if t == "*":
            self.take()
            return ("deref", self.unary())
        if t == "&":
            self.take()
            return ("addr", self.unary())
        if t in ("++", "--"):
            self.take()
            return ("pre", t, self.unary())
        if t == "(" and self.peek(1) in TYPE_WORDS:
            self.take("(")
            words = []
            while self.peek() != ")":
                words.append(self.take().text)
            self.take(")")
            return ("cast", tuple(words), self.unary())
        return self.postfix()

    def postfix(self) -> tuple:
        e = self.primary()
        while self.peek() in ("++", "--"):
            e = ("post", self.take().text, e)
        return e

    def primary(self) -> tuple:
        tok = self.take()
        if tok.kind == "num":
            return ("num", literal(tok.text))
        if tok.text == "(":
            e = self.expression()
            self.take(")")
            return e
        if tok.kind != "name" or tok.text in TYPE_WORDS:
            raise Unknown
        if tok.text in ("true", "false"):
            return ("num", Int(int(tok.text == "true"), INT))
        if self.peek() == "(":
            close = matching(self.toks, self.i)
            args = []
            self.take("(")
            while self.i < close:
                args.append(self.assignment())
                if self.peek() == ",":
                    self.take(",")
            self.take(")")
            return ("call", tok.text, args)
        return ("name", tok.text)


def parse_expression(toks: list[Token]) -> tuple:
    """``toks`` as one expression; `Unknown` when it is not one this module runs."""
    p = _Parser(toks)
    e = p.expression()
    if p.i != len(toks):
        raise Unknown
    return e


def parse_statements(toks: list[Token]) -> tuple:
    """``toks`` as a run of whole statements (a block); `Unknown` when they
    are not statements this module runs, or not whole (a brace left open)."""
    p = _Parser(toks)
    body = []
    while p.i < len(toks):
        body.append(p.statement())
    return ("block", body)


# -- values: C's integers ---------------------------------------------------------------------------------------

INT = IntType(True, 32)
UINT = IntType(False, 32)
LONG = IntType(True, 64)
ULONG = IntType(False, 64)
BOOL = IntType(False, 8)  # its values are 0 and 1 (`Cell.is_bool`)


@dataclass(frozen=True)
class Int:
    """An integer value of the C type ``t`` (``v`` within its range)."""

    v: int
    t: IntType


def wrap(v: int, t: IntType) -> int:
    """``v`` converted to ``t`` as C converts (modulo its width)."""
    w = v % (1 << t.bits)
    return w - (1 << t.bits) if t.signed and w > t.hi else w


def literal(text: str) -> Int:
    """An integer literal with its type: ``int``, or the first of ``long``
    / the unsigned types that holds it, as its suffix allows."""
    v = int_of(text)
    if v is None:
        raise Unknown  # a float
    suffix = text[len(text.rstrip("uUlL")) :].lower()
    decimal = not text.lower().startswith("0") or text == "0"
    if "u" in suffix:
        order = (UINT, ULONG) if "l" not in suffix else (ULONG,)
    elif "l" in suffix:
        order = (LONG,) if decimal else (LONG, ULONG)
    else:
        order = (INT, LONG) if decimal else (INT, UINT, LONG, ULONG)
    for t in order:
        if t.lo <= v <= t.hi:
            return Int(v, t)
    raise Unknown


def _promote(t: IntType) -> IntType:
    return INT if t.bits < 32 else t


def common_type(a: IntType, b: IntType) -> IntType:
    """The usual arithmetic conversions' type for ``a`` and ``b``."""
    a, b = _promote(a), _promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.bits > b.bits else b
    u, s = (a, b) if not a.signed else (b, a)
    return u if u.bits >= s.bits else s


def _exact(v: int, t: IntType) -> Int:
    """``v`` of type ``t``: an unsigned result wraps; a signed one that does not fit is undefined."""
    if not t.signed:
        return Int(wrap(v, t), t)
    if not t.lo <= v <= t.hi:
        raise Unknown
    return Int(v, t)


def _int(x: Any) -> Int:
    if not isinstance(x, Int):
        raise Unknown  # a pointer or a value never set
    return x


def _truth(x: Any) -> bool:
    return _int(x).v != 0


def _flag(b: bool) -> Int:
    return Int(int(b), INT)


def binary(op: str, x: Any, y: Any) -> Any:
    """``x op y`` as C computes it (not ``&&``/``||``, which short-circuit)."""
    if isinstance(x, Ref) and op in ("+", "-"):
        return Ref(x.cell, x.offset + (_int(y).v if op == "+" else -_int(y).v))
    x, y = _int(x), _int(y)
    if op in ("<<", ">>"):
        t = _promote(x.t)
        if not 0 <= y.v < t.bits or (op == "<<" and x.v < 0):
            raise Unknown
        return _exact(x.v << y.v, t) if op == "<<" else Int(x.v >> y.v, t)
    t = common_type(x.t, y.t)
    a, b = wrap(x.v, t), wrap(y.v, t)
    if op in _COMPARE:
        return _flag(_COMPARE[op](a, b))
    if op in ("/", "%"):
        if b == 0:
            raise Unknown
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # toward zero
        return _exact(q if op == "/" else a - b * q, t)
    return _exact(_ARITH[op](a, b), t)


_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}  # fmt: skip
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "&": lambda a, b: a & b,
          "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}  # fmt: skip


def unary(op: str, x: Any) -> Int:
    x = _int(x)
    if op == "!":
        return _flag(x.v == 0)
    t = _promote(x.t)
    v = wrap(x.v, t)
    if op == "~":
        return Int(wrap(~v, t), t)
    return _exact(-v if op == "-" else v, t)


def type_of(words: tuple[str, ...]) -> tuple[IntType, bool]:
    """The integer type declaration words spell, and whether it is ``bool``."""
    t = int_type(list(words))
    if t is None:
        raise Unknown
    return t, "bool" in words


def convert(x: Any, t: IntType, is_bool: bool = False) -> Int:
    """``x`` assigned to (or cast to) a ``t``."""
    x = _int(x)
    if is_bool:
        return Int(int(x.v != 0), BOOL)
    return Int(wrap(x.v, t), t)


# -- running ------------------------------------------------------------------------------------------------


class Machine:
    """Runs expressions of the launching function (names resolved by
    ``outer``: an `Int`, a `Cell` whose address the code passes, or None for
    a file constant) and the file's functions they call."""

    def __init__(self, src: CudaSource, outer: Callable[[str], Any]):
        self.src = src
        self.outer = outer
        self.steps = 0
        self.total = 0  # steps over every run, for the caller's limit (`arguments.MAX_TOTAL_STEPS`)
        self.depth = 0
        self._bodies: dict[int, tuple] = {}

    def run(self, expr: tuple) -> bool:
        """Whether the condition ``expr`` holds."""
        self.steps = 0
        try:
            return _truth(self.value(expr, None))
        finally:
            self.total += self.steps

    def run_after(self, prelude: tuple, expr: tuple, names: set[str]) -> bool:
        """Whether ``expr`` holds once the launching function's statements
        ``prelude`` have run (``unsigned r = len; while ((r & 1) == 0) r >>=
        1;`` before ``assert(r == 1)``): in a frame of their own, where each
        of ``names`` that ``outer`` knows starts as it gives it. Leaving the
        run (``return``, ``break``) is unknown."""
        self.steps = 0
        try:
            frame: dict[str, Cell] = {}
            for n in names:
                try:
                    got = self.outer(n)
                except Unknown:
                    continue  # read, it is unknown: `_constant` finds no such constant
                if isinstance(got, Cell):
                    frame[n] = got
                elif got is not None:
                    frame[n] = Cell(_int(got), _int(got).t)
            self._exec(prelude, frame)
            return _truth(self.value(expr, frame))
        except (_Return, _Break, _Continue):
            raise Unknown from None
        finally:
            self.total += self.steps

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unknown

    # variables

    def _cell(self, name: str, frame: dict | None) -> Cell:
        got = frame.get(name) if frame is not None else self.outer(name)
        if not isinstance(got, Cell):
            raise Unknown  # a file constant, or a name of another scope: not a variable here
        return got

    def _read(self, name: str, frame: dict | None) -> Any:
        """A name's value: a local's (a variable of the function running, or
        a value of the launching function's), else a file constant's."""
        got = frame.get(name) if frame is not None else self.outer(name)
        if isinstance(got, Cell):
            if frame is None:
                raise Unknown  # a local the host sets by its address: its value here is not known
            return got.value
        return _int(got) if got is not None else self._constant(name)

    def _constant(self, name: str) -> Int:
        """A ``#define`` or a ``constexpr``/``const`` outside functions, with
        the type its expression has (``#define WARP 32U``: unsigned)."""
        decls = self.src.globals_.get(name)
        toks = decls[-1][1] if decls else self.src.defines[name][-1] if name in self.src.defines else None
        if toks is None or self.depth >= MAX_CALL_DEPTH:
            raise Unknown
        self.depth += 1
        try:
            return _int(self.value(parse_expression(list(toks)), {}))
        finally:
            self.depth -= 1

    def store(self, cell: Cell, v: Any) -> Any:
        if cell.type is None:
            if not isinstance(v, Ref):
                raise Unknown
        else:
            v = convert(v, cell.type, cell.is_bool)
        cell.value = v
        return v

    def _place(self, e: tuple, frame: dict | None) -> Cell:
        """The cell an lvalue names."""
        if e[0] == "name":
            if frame is None:
                raise Unknown  # the launching function's variables are only read
            return self._cell(e[1], frame)
        if e[0] == "deref":
            p = self.value(e[1], frame)
            if not isinstance(p, Ref) or p.offset != 0:
                raise Unknown
            return p.cell
        raise Unknown

    # expressions

    def value(self, e: tuple, frame: dict | None) -> Any:
        self._step()
        kind = e[0]
        if kind == "num":
            return e[1]
        if kind == "name":
            return self._read(e[1], frame)
        if kind == "bin":
            if e[1] == "&&":
                return _flag(_truth(self.value(e[2], frame)) and _truth(self.value(e[3], frame)))
            if e[1] == "||":
                return _flag(_truth(self.value(e[2], frame)) or _truth(self.value(e[3], frame)))
            return binary(e[1], self.value(e[2], frame), self.value(e[3], frame))
        if kind == "un":
            return unary(e[1], self.value(e[2], frame))
        if kind == "cond":  # of the arms' common type, whichever runs (`2 ? a : l` is a long)
            t = common_type(self.type_of(e[2], frame), self.type_of(e[3], frame))
            return convert(self.value(e[2] if _truth(self.value(e[1], frame)) else e[3], frame), t)
        if kind == "comma":
            self.value(e[1], frame)
            return self.value(e[2], frame)
        if kind == "cast":
            t, is_bool = type_of(e[1])
            return convert(self.value(e[2], frame), t, is_bool)
        if kind == "addr":
            if e[1][0] != "name":
                raise Unknown
            return Ref(self._cell(e[1][1], frame), 0)
        if kind == "deref":
            p = self.value(e[1], frame)
            if not isinstance(p, Ref):
                raise Unknown
            return p.cell.value if p.offset == 0 else POISON
        if kind == "assign":
            cell = self._place(e[2], frame)
            v = self.value(e[3], frame)
            if e[1] != "=":
                v = binary(e[1][:-1], cell.value, v)
            return self.store(cell, v)
        if kind in ("pre", "post"):
            cell = self._place(e[2], frame)
            old = cell.value
            new = self.store(cell, binary("+" if e[1] == "++" else "-", old, Int(1, INT)))
            return new if kind == "pre" else old
        if kind == "call":
            return self._call(e[1], e[2], frame)
        raise Unknown

    def type_of(self, e: tuple, frame: dict | None) -> IntType:
        """The C type of the expression ``e``, without running it."""
        kind = e[0]
        if kind == "num":
            return e[1].t
        if kind == "name":
            got = frame.get(e[1]) if frame is not None else self.outer(e[1])
            if isinstance(got, Cell):
                if got.type is None:
                    raise Unknown  # a pointer
                return BOOL if got.is_bool else got.type
            return _int(got).t if got is not None else self._constant(e[1]).t
        if kind == "bin":
            if e[1] in _COMPARE or e[1] in ("&&", "||"):
                return INT
            if e[1] in ("<<", ">>"):
                return _promote(self.type_of(e[2], frame))
            return common_type(self.type_of(e[2], frame), self.type_of(e[3], frame))
        if kind == "un":
            return INT if e[1] == "!" else _promote(self.type_of(e[2], frame))
        if kind == "cond":
            return common_type(self.type_of(e[2], frame), self.type_of(e[3], frame))
        if kind == "comma":
            return self.type_of(e[2], frame)
        if kind == "cast":
            t, is_bool = type_of(e[1])
            return BOOL if is_bool else t
        if kind in ("assign", "pre", "post") and e[2][0] == "name":
            return self.type_of(e[2], frame)
        if kind == "call":
            funcs = [f for f in self.src.functions if f.name == e[1] and len(f.param_list) == len(e[2])]
            if not funcs and e[1] in ("min", "max") and len(e[2]) == 2 and \
                    not any(f.name == e[1] for f in self.src.functions):  # fmt: skip
                # CUDA's and std::'s (not run here: `host_ranges.bounded` bounds them)
                return common_type(self.type_of(e[2][0], frame), self.type_of(e[2][1], frame))
            returns = self._returns(funcs[0]) if len(funcs) == 1 else None
            if returns is None:
                raise Unknown
            return BOOL if returns[1] else returns[0]
        raise Unknown  # a pointer's target, an address

    # functions

    def _call(self, name: str, arg_exprs: list[tuple], frame: dict | None) -> Any:
        funcs = [f for f in self.src.functions if f.name == name and len(f.param_list) == len(arg_exprs)]
        if len(funcs) != 1 or self.depth >= MAX_CALL_DEPTH:
            raise Unknown
        func = funcs[0]
        callee: dict[str, Cell] = {}
        for (pname, ptype), arg in zip(func.param_list, arg_exprs):
            if pname in func.references:
                callee[pname] = self._bound(func.references[pname], arg, frame)
                continue
            v = self.value(arg, frame)
            if not pname or (ptype is None and not isinstance(v, Ref)):
                raise Unknown  # a float, a struct: not run
            cell = Cell(POISON, ptype, ptype is not None and self._is_bool_param(func, pname))
            self.store(cell, v)
            callee[pname] = cell
        frame = callee
        returns = self._returns(func)
        self.depth += 1
        try:
            self._exec(self._body(func), frame)
        except _Return as r:
            if returns is None or r.value is POISON:
                return POISON  # a void function's, or one whose type is not an integer's
            return convert(r.value, *returns)
        finally:
            self.depth -= 1
        return POISON  # fell off its end

    def _bound(self, ref: tuple[IntType, bool], arg: tuple, frame: dict | None) -> Cell:
        """What a reference parameter (``uint &log2L``) is bound to: the
        caller's variable itself, so that the callee's stores reach it (a
        local the launching function declares without a value, as for
        ``&log2L``), when its type is the parameter's; a ``const T &`` bound
        to any other value gets a copy of it (C++'s temporary)."""
        t, const = ref
        if arg[0] == "name":
            try:
                cell = self._cell(arg[1], frame)
            except Unknown:
                cell = None  # a constant, or a value of the launching function: a temporary if `const`
            if cell is not None and cell.type == t and not cell.is_bool:
                return cell
        if not const:
            raise Unknown  # a reference to a variable of another type, or to a place not run here
        cell = Cell(POISON, t)
        self.store(cell, self.value(arg, frame))
        return cell

    def _body(self, func: Function) -> tuple:
        if func.start not in self._bodies:
            p = _Parser(self.src.tokens[func.start : func.end + 1])
            self._bodies[func.start] = p.statement()
        return self._bodies[func.start]

    def _returns(self, func: Function) -> tuple[IntType, bool] | None:
        """The function's return type: the type words before its name."""
        toks = self.src.tokens
        j = func.start - 1
        while j > 0 and not (toks[j].text == func.name and toks[j + 1].text == "("):
            j -= 1
        words = []
        k = j - 1
        while k >= 0 and (toks[k].text in TYPE_WORDS or toks[k].text in _FUNCTION_WORDS):
            if toks[k].text in TYPE_WORDS:
                words.insert(0, toks[k].text)
            k -= 1
        try:
            return type_of(tuple(words)) if words else None
        except Unknown:
            return None

    def _is_bool_param(self, func: Function, pname: str) -> bool:
        toks = self.src.tokens
        for j in range(func.start - 1, 0, -1):
            if toks[j].text == pname and toks[j - 1].text == "bool":
                return True
            if toks[j].text == func.name:
                return False
        return False

    def _exec(self, s: tuple, frame: dict) -> None:
        self._step()
        kind = s[0]
        if kind == "block":
            for x in s[1]:
                self._exec(x, frame)
        elif kind == "expr":
            self.value(s[1], frame)
        elif kind == "decl":
            for name, words, pointer, init in s[1]:
                if pointer:
                    cell = Cell(POISON, None)
                else:
                    t, is_bool = type_of(words)
                    cell = Cell(POISON, t, is_bool)
                if init is not None:
                    self.store(cell, self.value(init, frame))
                frame[name] = cell
        elif kind == "if":
            if _truth(self.value(s[1], frame)):
                self._exec(s[2], frame)
            elif s[3] is not None:
                self._exec(s[3], frame)
        elif kind in ("while", "do", "for"):
            self._loop(s, frame)
        elif kind == "return":
            raise _Return(POISON if s[1] is None else self.value(s[1], frame))
        elif kind == "break":
            raise _Break
        elif kind == "continue":
            raise _Continue
        else:
            raise Unknown

    def _loop(self, s: tuple, frame: dict) -> None:
        kind = s[0]
        if kind == "for" and s[1] is not None:
            self._exec(s[1], frame)
        cond = s[1] if kind == "while" else s[2]
        body = s[{"while": 2, "do": 1, "for": 4}[kind]]
        first = True
        while True:
            if not (kind == "do" and first) and cond is not None and not _truth(self.value(cond, frame)):
                return
            first = False
            try:
                self._exec(body, frame)
            except _Break:
                return
            except _Continue:
                pass
            if kind == "for" and s[3] is not None:
                self.value(s[3], frame)


_FUNCTION_WORDS = frozenset("inline __inline__ __forceinline__ __host__ __device__ extern constexpr".split()) | {'"C"'}
