"""What a host launch's arguments say about the kernel's integer parameters.

``scan<<<1, 512, 2 * 512 * sizeof(float)>>>(out, in, 512)`` launches
``scan(float *g_odata, float *g_idata, int n)`` with ``n == 512``: the
kernel is right for that launch (its two buffers of ``n`` floats fill the
block), though it races for ``n = 2``. Without the argument the analyses
take ``n`` as any value and report that race. Here each launch is read for
the facts it fixes, per integer parameter of the kernel:

1. an argument that is a constant, read as the block is
   (`cuda_source.CudaSource.block_of`: literals, ``#define``, ``constexpr``,
   a local initialised once) and never assigned again in the launching
   function, nor its address taken: ``n == 512``;
2. an argument that is a name (a parameter or a local of the launching
   function, never assigned there after its declaration), bounded by what
   the code around the launch tests: the conjuncts of an enclosing ``if``
   (``if (arrayLength <= SHARED_SIZE_LIMIT)``), the negated comparison of
   an ``if`` whose ``else`` holds the launch, an ``assert(...)`` before the
   launch in a scope that holds it, and an early exit before it in such a
   scope (``if (arrayLength < 2) return 0;`` gives ``arrayLength >= 2``).
   The bound is in the host variable's type; it is kept only when that type
   is known and every value it allows is a value of the parameter's type.

A kernel launched from several places is analysed under what they all say:
per parameter, the smallest range holding every launch's (a launch that says
nothing of a parameter drops it). The facts reach the solver as bounds on the
parameter's value (`smt.contract_terms.argument_constraints`), and the
launch's words name them ("with n = 512").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tolk_lint.launch.c_syntax import Evaluator, Token, matching, split_args, split_top, statement_end

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource, Function, Launch

_ASSIGN = frozenset("= += -= *= /= %= &= |= ^= <<= >>= ++ --".split())
_COMPARE = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "=="}
_SIGNED_WORDS = {"char": 8, "int8_t": 8, "short": 16, "int16_t": 16, "int": 32, "int32_t": 32, "long": 64,
                 "int64_t": 64, "ptrdiff_t": 64, "ssize_t": 64, "longlong": 64}  # fmt: skip
_UNSIGNED_WORDS = {"bool": 8, "uint8_t": 8, "uint16_t": 16, "uint": 32, "uint32_t": 32, "uint64_t": 64,
                   "size_t": 64, "ulong": 64}  # fmt: skip
_MAX_CALLERS = 3  # host functions followed up through their callers (a launch wrapper's wrapper)
_QUALIFIERS = frozenset("const volatile register static __restrict__ restrict signed".split())


@dataclass(frozen=True)
class IntType:
    signed: bool
    bits: int

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1


INT64 = IntType(True, 64)  # a Python int, as Numba passes it


@dataclass(frozen=True)
class ArgFact:
    """The kernel's parameter number ``index`` (``name`` in the CUDA source)
    is in ``lo..hi`` at every launch, read as ``type`` (its C++ type)."""

    index: int
    name: str
    lo: int
    hi: int
    type: IntType

    def words(self) -> str:
        if self.lo == self.hi:
            return f"{self.name} = {self.lo}"
        if self.lo == self.type.lo:
            return f"{self.name} <= {self.hi}"
        if self.hi == self.type.hi:
            return f"{self.name} >= {self.lo}"
        return f"{self.lo} <= {self.name} <= {self.hi}"

    def to_json(self) -> dict:
        return {"param": self.name, "index": self.index, "min": self.lo, "max": self.hi}


def int_type(words: list[str]) -> IntType | None:
    """The integer type a declaration's words spell (``unsigned int``,
    ``uint32_t``, ``const long long``), or None (a pointer, a reference, a
    float, a class or template type)."""
    if any(w in ("*", "&", "&&", "<", ">", "::") for w in words):
        return None
    words = [w for w in words if w not in _QUALIFIERS]
    if words.count("long") == 2:
        words = [w for w in words if w != "long"] + ["longlong"]
    unsigned = "unsigned" in words
    rest = [w for w in words if w not in ("unsigned", "int")]
    if not rest:
        return IntType(not unsigned, 32) if words else None
    if len(rest) != 1:
        return None
    if rest[0] in _SIGNED_WORDS:
        return IntType(not unsigned, _SIGNED_WORDS[rest[0]])
    if rest[0] in _UNSIGNED_WORDS and not unsigned:
        return IntType(False, _UNSIGNED_WORDS[rest[0]])
    return None


def declared_params(toks: list[Token]) -> tuple[tuple[str, IntType | None], ...]:
    """A parameter list's names and integer types (None: not an integer)."""
    out = []
    for a in split_args(toks):
        if "=" in [t.text for t in a]:  # a default argument
            a = a[: [t.text for t in a].index("=")]
        if not a or a[-1].kind != "name":
            out.append(("", None))
            continue
        out.append((a[-1].text, int_type([t.text for t in a[:-1]])))
    return tuple(out)


def launch_facts(src: CudaSource, launch: Launch, binding: dict[str, int] | None,
                 params: tuple[tuple[str, IntType | None], ...]) -> dict[int, ArgFact]:  # fmt: skip
    """What the launch fixes of each integer parameter of the kernel it
    launches (``params``: the kernel's declared parameters)."""
    args = launch.args
    if args is None or len(args) > len(params):  # fewer: the rest take their defaults, unread
        return {}
    out: dict[int, ArgFact] = {}
    for i, (arg, (pname, ptype)) in enumerate(zip(args, params)):
        if ptype is None or not arg:
            continue
        got = _arg_range(src, launch.func, launch.index, arg, binding, 0)
        if got is None:
            continue
        lo, hi = got
        if lo == hi:  # a constant converts to the parameter's type as C converts it
            lo = hi = _wrap(lo, ptype)
        if ptype.lo <= lo <= hi <= ptype.hi and (lo, hi) != (ptype.lo, ptype.hi):
            out[i] = ArgFact(i, pname or f"argument {i + 1}", lo, hi, ptype)
    return out


def _wrap(v: int, t: IntType) -> int:
    w = v % (1 << t.bits)
    return w - (1 << t.bits) if t.signed and w > t.hi else w


def _arg_range(src: CudaSource, func: Function | None, index: int, arg: list[Token],
               binding: dict[str, int] | None, depth: int) -> tuple[int, int] | None:  # fmt: skip
    """The values the argument ``arg`` at token ``index`` of ``func`` can
    have (a constant: one), in its host type; None: unknown."""
    name_at = src._resolver(index, func, [], 0, binding)

    def stable(name: str) -> object:
        if func is not None and _assigned(src, func, name, index):
            return None
        return name_at(name)

    v = Evaluator(stable).value(arg)
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    if len(arg) != 1 or arg[0].kind != "name" or func is None:
        return None
    name = arg[0].text
    host = _host_type(src, func, name, index)
    if host is None or _assigned(src, func, name, index):
        return None
    lo, hi = _bounds_at(src, index, func).get(name, (host.lo, host.hi))
    lo, hi = max(lo, host.lo), min(hi, host.hi)
    if name in func.params and depth < _MAX_CALLERS:
        got = _callers_range(src, func, name, host, depth + 1)
        if got is not None:
            lo, hi = max(lo, got[0]), min(hi, got[1])
    if lo > hi or (lo, hi) == (host.lo, host.hi):
        return None
    return lo, hi


def _callers_range(src: CudaSource, func: Function, name: str, host: IntType, depth: int) -> tuple[int, int] | None:
    """What every call of ``func`` in the file passes for its parameter
    ``name`` (the smallest range holding each, in ``host``, the parameter's
    type); None when a call passes something unknown, or no call is seen."""
    order = [n for n, _t in func.param_list]
    if name not in order:
        return None
    pos = order.index(name)
    toks = src.tokens
    ranges = []
    for i in range(1, len(toks) - 1):
        if toks[i].text != func.name or toks[i + 1].text != "(" or func.start <= i <= func.end:
            continue
        prev = toks[i - 1]
        if (prev.kind == "name" and prev.text != "return") or prev.text in (".", "->", "::", "~", "*", "&"):
            continue  # a declaration, a member or another scope's function
        caller = next((f for f in sorted(src.functions, key=lambda f: -f.start) if f.start < i < f.end), None)
        call = split_args(toks[i + 2 : matching(toks, i + 1)])
        if caller is None or pos >= len(call):
            return None
        got = _arg_range(src, caller, i, call[pos], None, depth)
        if got is None:
            return None
        if got[0] == got[1]:
            got = (_wrap(got[0], host), _wrap(got[0], host))
        if not host.lo <= got[0] <= got[1] <= host.hi:
            return None
        ranges.append(got)
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def hull(per_launch: list[dict[int, ArgFact]]) -> tuple[ArgFact, ...]:
    """What every launch says, per parameter: the smallest range holding each."""
    if not per_launch:
        return ()
    out = []
    for i, first in sorted(per_launch[0].items()):
        facts = [d.get(i) for d in per_launch]
        if any(f is None for f in facts):
            continue
        lo = min(f.lo for f in facts if f is not None)
        hi = max(f.hi for f in facts if f is not None)
        if (lo, hi) != (first.type.lo, first.type.hi):
            out.append(ArgFact(i, first.name, lo, hi, first.type))
    return tuple(out)


# -- the host code around a launch ------------------------------------------------------------------------


def _assigned(src: CudaSource, func: Function, name: str, index: int) -> bool:
    """Whether the launching function assigns ``name`` anywhere but at its
    declaration, or takes its address (``cudaMemcpy(&n, ...)``)."""
    toks = src.tokens
    for j in range(func.start + 1, func.end):
        t = toks[j]
        if t.text != name or t.kind != "name":
            continue
        prev, nxt = toks[j - 1].text, toks[j + 1].text if j + 1 < len(toks) else ""
        if prev in ("++", "--", "&") or nxt in ("++", "--"):
            return True
        if nxt in _ASSIGN and nxt not in ("++", "--"):
            declared = toks[j - 1].kind == "name" and prev not in ("return", "case")
            if nxt != "=" or not declared:
                return True
    return False


def _host_type(src: CudaSource, func: Function, name: str, index: int) -> IntType | None:
    """The type of ``name`` in the launching function: a parameter's, or the
    last local declaration's before ``index``."""
    toks = src.tokens
    for j in range(index - 1, func.start, -1):
        if toks[j].text == name and toks[j].kind == "name" and toks[j - 1].kind == "name" and \
                toks[j + 1].text in ("=", ";", "(", "{", ","):  # fmt: skip
            words = []
            k = j - 1
            while k > func.start and toks[k].kind == "name" and toks[k].text not in ("return", "case", "else"):
                words.insert(0, toks[k].text)
                k -= 1
            if words:
                return int_type(words)
    return dict(func.param_list).get(name)


def _bounds_at(src: CudaSource, index: int, func: Function) -> dict[str, tuple[int, int]]:
    """Name -> the range the code around token ``index`` keeps it in (see the
    module's docstring), as far as constants bound it."""
    toks = src.tokens
    out: dict[str, tuple[int, int]] = {}
    const = Evaluator(src._resolver(func.start, None, [], 1))

    def add(facts: list[tuple[str, str, int]]) -> None:
        for name, op, c in facts:
            lo, hi = out.get(name, (-(1 << 64), 1 << 64))
            if op in ("<", "<="):
                hi = min(hi, c - (op == "<"))
            elif op in (">", ">="):
                lo = max(lo, c + (op == ">"))
            elif op == "==":
                lo, hi = max(lo, c), min(hi, c)
            out[name] = (lo, hi)

    for j in range(func.start + 1, index):
        t = toks[j].text
        if t == "assert" and toks[j + 1].text == "(" and _scope_holds(toks, j, index, func.start):
            close = matching(toks, j + 1)
            if close < index:
                add([f for c in split_top(toks[j + 2 : close], "&&") for f in _comparison(c, const)])
            continue
        if t != "if" or toks[j + 1].text != "(":
            continue
        close = matching(toks, j + 1)
        cond = toks[j + 2 : close]
        body = close + 1
        if body >= index:
            continue
        end = matching(toks, body) if toks[body].text == "{" else statement_end(toks, body)
        if body <= index <= end:
            add([f for c in split_top(cond, "&&") for f in _comparison(c, const)])
        elif end < index and end + 1 < len(toks) and toks[end + 1].text == "else":
            other = end + 2
            other_end = matching(toks, other) if toks[other].text == "{" else statement_end(toks, other)
            if other <= index <= other_end:
                add(_negated(cond, const))
        elif end < index and _exits(toks, body, end) and _scope_holds(toks, j, index, func.start):
            add(_negated(cond, const))
    return out


def _comparison(toks: list[Token], const: Evaluator) -> list[tuple[str, str, int]]:
    """``name op constant`` (or ``constant op name``) as ``(name, op, c)``."""
    while len(toks) > 2 and toks[0].text == "(" and matching(toks, 0) == len(toks) - 1:
        toks = toks[1:-1]
    depth = 0
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.text in _COMPARE:
            left, right = toks[:k], toks[k + 1 :]
            if len(left) == 1 and left[0].kind == "name":
                c = const.value(right)
                return [(left[0].text, t.text, c)] if isinstance(c, int) else []
            if len(right) == 1 and right[0].kind == "name":
                c = const.value(left)
                return [(right[0].text, _COMPARE[t.text], c)] if isinstance(c, int) else []
            return []
    return []


def _negated(cond: list[Token], const: Evaluator) -> list[tuple[str, str, int]]:
    """What holds when ``cond`` is false: each comparison of a disjunction, negated."""
    out = []
    for c in split_top(cond, "||"):
        got = _comparison(c, const)
        if len(got) != 1 or got[0][1] not in _NEGATE:
            return out if len(split_top(cond, "||")) == 1 else []
        name, op, v = got[0]
        out.append((name, _NEGATE[op], v))
    return out


def _exits(toks: list[Token], body: int, end: int) -> bool:
    """Whether the statement ``body..end`` always leaves the function: ``return
    ...;``, ``exit(...)``, or a braced block whose last statement does."""
    if toks[body].text == "{":
        last = end - 1
        if last <= body or toks[last].text != ";":
            return False
        k = last - 1
        while k > body and toks[k].text not in (";", "{", "}"):
            k -= 1
        return toks[k + 1].text in ("return", "exit", "abort", "throw")
    return toks[body].text in ("return", "exit", "abort", "throw")


def _scope_holds(toks: list[Token], j: int, index: int, start: int) -> bool:
    """Whether the innermost braces around token ``j`` also hold ``index``
    (the statement at ``j`` runs before the launch on every path to it)."""
    depth = 0
    for k in range(j - 1, start - 1, -1):
        t = toks[k].text
        if t == "}":
            depth += 1
        elif t == "{":
            if depth == 0:
                return matching(toks, k) > index
            depth -= 1
    return False
