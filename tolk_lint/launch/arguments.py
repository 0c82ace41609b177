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
   is known and every value it allows is a value of the parameter's type;
3. such a name, tested by a condition that is not a comparison with a
   constant (``assert(factorRadix2(&log2L, arrayLength) == 1)`` through a
   local, ``if (!is_pow2(n) || n > 1024) return false;``): when the
   comparisons leave at most `MAX_SCANNED` values, the condition is run for
   each (`host_eval`, which interprets the file's helper functions) and the
   values it lets through are listed (``arrayLength one of 2, 4, 8, ...,
   1024``). A value the condition cannot be run for is kept;
4. an argument linear in the launch's block and the other arguments
   (``block.x + (2 * radius)`` beside ``radius``): that relation
   (`relations`), whatever their values.

A kernel launched from several places is analysed under what they all say:
per parameter, the smallest range holding every launch's, and the union of
their values when each lists them (a launch that says nothing of a parameter
drops it). The facts reach the solver as bounds on the
parameter's value (`smt.contract_terms.argument_constraints`), and the
launch's words name them ("with n = 512").
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tolk_lint.launch import host_eval, host_ranges
from tolk_lint.launch.c_syntax import Evaluator, Token, matching, split_args, split_top, statement_end
from tolk_lint.launch.c_types import IntType, int_type
from tolk_lint.launch.cuda_structure import passed_by_reference, scope_holds
from tolk_lint.launch.relations import Relation, block_dimension, relation_of

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource
    from tolk_lint.launch.cuda_structure import Function, Launch

_ASSIGN = frozenset("= += -= *= /= %= &= |= ^= <<= >>= ++ --".split())
_COMPARE = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "=="}
MAX_SCANNED = 1 << 12  # the most values of an argument a condition is run for (`_values_of`)
MAX_VALUES = 64  # the most values a fact lists (more: only their range)
MAX_TOTAL_STEPS = 200_000  # the host interpreter's steps for one launch argument (`host_eval.MAX_STEPS` a run)
_MAX_CALLERS = 3  # host functions followed up through their callers (a launch wrapper's wrapper)


@dataclass(frozen=True)
class ArgFact:
    """The kernel's parameter number ``index`` (``name`` in the CUDA source)
    is in ``lo..hi`` at every launch, read as ``type`` (its C++ type), and
    one of ``values`` when the host's checks (`_values_of`) or a loop over
    literals list them."""

    index: int
    name: str
    lo: int
    hi: int
    type: IntType
    values: tuple[int, ...] | None = None  # the only values in lo..hi it takes (None: any)
    block_dim: int | None = None  # it is the launch's blockDim.x (0), .y (1) or .z (2)
    relation: Relation | None = None  # it is computed from the block and other parameters (`relations`)

    def words(self) -> str:
        if self.block_dim is not None:
            return f"{self.name} = blockDim.{'xyz'[self.block_dim]}"
        if self.relation is not None:
            return f"{self.name} = {self.relation.words()}"
        if self.values is not None:
            shown = self.values if len(self.values) <= 6 else (*self.values[:4], "...", self.values[-1])
            return f"{self.name} one of {', '.join(str(v) for v in shown)}"
        if self.lo == self.hi:
            return f"{self.name} = {self.lo}"
        if self.lo == self.type.lo:
            return f"{self.name} <= {self.hi}"
        if self.hi == self.type.hi:
            return f"{self.name} >= {self.lo}"
        return f"{self.lo} <= {self.name} <= {self.hi}"

    def listed(self) -> tuple[int, ...] | None:
        """The values it takes, when they are few: its list, or its one value."""
        return self.values if self.values is not None else (self.lo,) if self.lo == self.hi else None

    def to_json(self) -> dict:
        out = {"param": self.name, "index": self.index, "min": self.lo, "max": self.hi}
        if self.block_dim is not None:
            out["equals"] = f"blockDim.{'xyz'[self.block_dim]}"
        if self.relation is not None:
            out["equals"] = self.relation.words()
        if self.values is not None:
            out["values"] = list(self.values)
        return out


def launch_facts(src: CudaSource, launch: Launch, binding: dict[str, int] | None,
                 params: tuple[tuple[str, IntType | None], ...]) -> dict[int, ArgFact]:  # fmt: skip
    """What the launch fixes of each integer parameter of the kernel it
    launches (``params``: the kernel's declared parameters)."""
    args = launch.args
    if args is None or len(args) > len(params):  # fewer: the rest take their defaults, unread
        return {}
    out: dict[int, ArgFact] = {}

    def constant(toks: list[Token]) -> int | None:
        got = _arg_range(src, launch.func, launch.index, toks, binding, 0)
        return got[0] if got is not None and got[0] == got[1] else None

    for i, (arg, (pname, ptype)) in enumerate(zip(args, params)):
        if ptype is None or not arg:
            continue
        dim = block_dimension([t.text for t in launch.block], [t.text for t in arg])
        if dim is not None and ptype.lo <= 1 and 1024 <= ptype.hi:
            out[i] = ArgFact(i, pname or f"argument {i + 1}", 1, 1024, ptype, None, dim)
            continue
        fact = _range_fact(src, launch, binding, i, arg, pname, ptype)
        rel = relation_of(launch, i, arg, params, constant)
        if rel is not None:
            fact = replace(fact or ArgFact(i, pname or f"argument {i + 1}", ptype.lo, ptype.hi, ptype), relation=rel)
        if fact is not None:
            out[i] = fact
    return out


def _range_fact(src: CudaSource, launch: Launch, binding: dict[str, int] | None, i: int, arg: list[Token],
                pname: str, ptype: IntType) -> ArgFact | None:  # fmt: skip
    """The range (and values) the argument ``arg`` keeps parameter ``i`` in."""
    got = _arg_range(src, launch.func, launch.index, arg, binding, 0)
    values = None
    if got is None and launch.func is not None:
        derived = _derived(src, launch.func, launch.index, arg, binding)
        if derived is None:
            return None
        got, values = (derived[0], derived[1]), derived[2]
    if got is None:
        return None
    lo, hi = got
    if values is not None:
        pass  # the expression's values, each converted as the parameter's (checked below)
    elif lo == hi:  # a constant converts to the parameter's type as C converts it
        lo = hi = host_eval.wrap(lo, ptype)
    elif len(arg) == 1 and launch.func is not None:
        host = _host_type(src, launch.func, arg[0].text, launch.index)
        if host is not None:
            values = _values_of(src, launch.func, launch.index, arg[0].text, host, lo, hi)
        if values is not None:
            lo, hi = values[0], values[-1]
    if ptype.lo <= lo <= hi <= ptype.hi and (lo, hi) != (ptype.lo, ptype.hi):
        return ArgFact(i, pname or f"argument {i + 1}", lo, hi, ptype, values)
    return None


def _derived(src: CudaSource, func: Function, index: int, arg: list[Token],
             binding: dict[str, int] | None) -> tuple[int, int, tuple[int, ...] | None] | None:  # fmt: skip
    """The least and greatest values, and the values when they are few, of
    an argument that computes with the launching function's variables
    (``arrayLength / (4 * THREADBLOCK_SIZE)``), from what the code around
    the launch leaves each variable (`_arg_range`, `_values_of`): run for
    every combination of their values when there are at most `MAX_SCANNED`
    (`host_eval`; one that cannot be run gives nothing), else bounded by
    interval arithmetic (`host_ranges`). None: a variable with no bound."""
    try:
        expr = host_eval.parse_expression(arg)
    except (host_eval.Unknown, IndexError, RecursionError):
        return None
    variables: dict[str, tuple[IntType, int, int, tuple[int, ...] | None]] = {}
    for tok in arg:
        n = tok.text
        if tok.kind != "name" or n in variables or n in (binding or {}):
            continue
        host = _host_type(src, func, n, index)
        if host is None:
            if n in func.params or _declaration(src, func, n, index) is not None:
                return None  # a variable that is not an integer's
            continue  # the file's constant (or no value at all: the run says unknown)
        got = _arg_range(src, func, index, [tok], binding, 0)
        if got is None:
            return None
        variables[n] = (host, got[0], got[1], _values_of(src, func, index, n, host, got[0], got[1]))
    if not variables:
        return None  # a constant: `_arg_range` reads it
    current: dict[str, host_eval.Int] = {}
    fixed = {n: host_eval.Int(v, host_eval.INT) for n, v in (binding or {}).items()}
    machine = host_eval.Machine(src, lambda n: current.get(n) or fixed.get(n))
    choices = [vals if vals is not None else range(lo, hi + 1) for _t, lo, hi, vals in variables.values()]
    if math.prod(len(c) for c in choices) > MAX_SCANNED:
        current.update({n: host_eval.Int(lo, t) for n, (t, lo, _hi, _v) in variables.items()})
        bounds = host_ranges.interval(expr, {n: (lo, hi) for n, (_t, lo, hi, _v) in variables.items()}, machine)
        return None if bounds is None else (bounds[0], bounds[1], None)
    results = set()
    for combo in itertools.product(*choices):
        current.update({n: host_eval.Int(v, var[0]) for (n, var), v in zip(variables.items(), combo)})
        try:
            got = machine.value(expr, None)
        except (host_eval.Unknown, IndexError, RecursionError):
            return None  # a value not known: the argument may be anything
        if not isinstance(got, host_eval.Int) or machine.total > MAX_TOTAL_STEPS:
            return None
        machine.total += machine.steps
        machine.steps = 0
        results.add(got.v)
    listed = tuple(sorted(results))
    return listed[0], listed[-1], listed if 1 < len(listed) <= MAX_VALUES else None


def _arg_range(src: CudaSource, func: Function | None, index: int, arg: list[Token],
               binding: dict[str, int] | None, depth: int) -> tuple[int, int] | None:  # fmt: skip
    """The values the argument ``arg`` at token ``index`` of ``func`` can
    have (a constant: one), in its host type; None: unknown."""
    name_at = src._resolver(index, func, [], 0, binding)

    def stable(name: str) -> object:
        if func is not None and _assigned(src, func, name, index):
            return None
        return name_at(name)

    v = src._evaluator(stable).value(arg)
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    if len(arg) != 1 or arg[0].kind != "name" or func is None:
        return None
    name = arg[0].text
    host = _host_type(src, func, name, index)
    if host is None:
        return None
    if _assigned(src, func, name, index):
        # changed (assigned, passed by reference): only the checks made
        # after its last change, with none after the use (NVIDIA's
        # eigenvalues: `getMatrixSize(argc, argv, mat_size, ...)`, then
        # `if (mat_size <= MAX_SMALL_MATRIX) { computeEigenvaluesSmallMatrix(...) }`)
        last = _last_change(src, func, name)
        if last is None or last > index:
            return None
        lo, hi = _bounds_at(src, index, func, since={name: last}).get(name, (host.lo, host.hi))
        lo, hi = max(lo, host.lo), min(hi, host.hi)
        return None if lo > hi or (lo, hi) == (host.lo, host.hi) else (lo, hi)
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
    """What every call of ``func`` passes for its parameter ``name`` (the
    smallest range holding each, in ``host``, the parameter's type); None
    when a call passes something unknown, or no call is seen. The calls are
    the file's; when it has none and ``func`` is not ``static``, those of
    the C++ sources beside it (NVIDIA's eigenvalue sample launches from
    `bisect_small.cu`'s ``computeEigenvaluesSmallMatrix``, which `main.cu`
    calls only under ``if (mat_size <= MAX_SMALL_MATRIX)``)."""
    order = [n for n, _t in func.param_list]
    if name not in order:
        return None
    pos = order.index(name)
    ranges = _calls_range(src, func.name, pos, host, depth, own=func)
    if ranges == [] and not _file_local(src, func):
        for sibling in src.beside_mentioning(func.name + "("):
            got = _calls_range(sibling, func.name, pos, host, depth)
            if got is None:
                return None
            ranges += got
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def _calls_range(src: CudaSource, fname: str, pos: int, host: IntType, depth: int,
                 own: Function | None = None) -> list[tuple[int, int]] | None:  # fmt: skip
    """The range each call of ``fname`` in ``src`` passes as its argument
    ``pos`` (``own``: the function itself, whose body is skipped); None when
    one passes something unknown."""
    toks = src.tokens
    ranges = []
    for i in range(1, len(toks) - 1):
        if toks[i].text != fname or toks[i + 1].text != "(" or (own is not None and own.start <= i <= own.end):
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
            got = (host_eval.wrap(got[0], host), host_eval.wrap(got[0], host))
        if not host.lo <= got[0] <= got[1] <= host.hi:
            return None
        ranges.append(got)
    return ranges


def _file_local(src: CudaSource, func: Function) -> bool:
    """Whether ``func`` is declared ``static`` (or in an unnamed namespace:
    not looked for; only ``static`` is read), so no other file calls it."""
    toks = src.tokens
    i = func.start - 1
    while i > 0 and toks[i].text not in (";", "}", "{"):
        if toks[i].text == "static":
            return True
        i -= 1
    return False




def hull(per_launch: list[dict[int, ArgFact]]) -> tuple[ArgFact, ...]:
    """What every launch says, per parameter: the smallest range holding each."""
    if not per_launch:
        return ()
    out = []
    for i, first in sorted(per_launch[0].items()):
        facts = [d.get(i) for d in per_launch]
        if any(f is None for f in facts):
            continue
        dims = {f.block_dim for f in facts if f is not None}
        if dims != {None}:
            if len(dims) == 1:  # every launch passes the same dimension of its block
                out.append(first)
            continue
        lo = min(f.lo for f in facts if f is not None)
        hi = max(f.hi for f in facts if f is not None)
        listed = [f.listed() for f in facts if f is not None]
        union = sorted({v for vs in listed if vs is not None for v in vs})
        values = tuple(union) if None not in listed and 1 < len(union) <= MAX_VALUES else None
        relations = {f.relation for f in facts if f is not None}
        relation = first.relation if len(relations) == 1 else None  # the same at every launch
        if (lo, hi) != (first.type.lo, first.type.hi) or relation is not None:
            out.append(ArgFact(i, first.name, lo, hi, first.type, values, relation=relation))
    return tuple(out)


# -- the host code around a launch ------------------------------------------------------------------------


def _assigned(src: CudaSource, func: Function, name: str, index: int) -> bool:
    """Whether the launching function assigns ``name`` anywhere but at its
    declaration, takes its address (``cudaMemcpy(&n, ...)``) or passes it to
    a reference (``factorRadix2(log2L, n)``)."""
    return _last_change(src, func, name) is not None


def _last_change(src: CudaSource, func: Function, name: str) -> int | None:
    """The token of the function's last change of ``name`` (see `_assigned`);
    None when there is none."""
    toks = src.tokens
    last = None
    for j in range(func.start + 1, func.end):
        t = toks[j]
        if t.text != name or t.kind != "name":
            continue
        prev, nxt = toks[j - 1].text, toks[j + 1].text if j + 1 < len(toks) else ""
        if prev in ("++", "--", "&") or nxt in ("++", "--") or passed_by_reference(src, j):
            last = j
        elif nxt in _ASSIGN and nxt not in ("++", "--"):
            declared = toks[j - 1].kind == "name" and prev not in ("return", "case")
            if nxt != "=" or not declared:
                last = j
    return last


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


def _bounds_at(src: CudaSource, index: int, func: Function,
               since: dict[str, int] | None = None) -> dict[str, tuple[int, int]]:  # fmt: skip
    """Name -> the range the code around token ``index`` keeps it in (see the
    module's docstring), as far as constants bound it; a name may be a
    member, ``dimBlock.y``. ``since``: a name's bounds are taken only from
    the conditions after that token (its last assignment)."""
    out: dict[str, tuple[int, int]] = {}
    const = Evaluator(src._resolver(func.start, None, [], 1))
    for cond, holds, at in _conditions_at(src, index, func):
        facts = [f for c in split_top(cond, "&&") for f in _comparison(c, const)] if holds else _negated(cond, const)
        for name, op, c in facts:
            if since is not None and at < since.get(name, -1):
                continue  # (tested before its value was set)
            lo, hi = out.get(name, (-(1 << 64), 1 << 64))
            if op in ("<", "<="):
                hi = min(hi, c - (op == "<"))
            elif op in (">", ">="):
                lo = max(lo, c + (op == ">"))
            elif op == "==":
                lo, hi = max(lo, c), min(hi, c)
            out[name] = (lo, hi)
    return out


def _conditions_at(src: CudaSource, index: int, func: Function) -> list[tuple[list[Token], bool, int]]:
    """The conditions the launch at token ``index`` runs under, as
    ``(tokens, holds, at)``: true there (an ``assert`` before it in a scope
    that holds it, an enclosing ``if``), or false (an ``if`` whose ``else``
    holds it, an early exit before it); ``at`` is the token of the
    ``assert`` or the ``if``."""
    toks = src.tokens
    out: list[tuple[list[Token], bool, int]] = []
    for j in range(func.start + 1, index):
        t = toks[j].text
        if t == "assert" and toks[j + 1].text == "(" and scope_holds(toks, j, index, func.start):
            close = matching(toks, j + 1)
            if close < index:
                out.append((toks[j + 2 : close], True, j))
            continue
        if t != "if" or toks[j + 1].text != "(":
            continue
        close = matching(toks, j + 1)
        cond = toks[j + 2 : close]
        body = close + 1
        if body > index:  # (== index: the if's one statement is the call itself, `if (n <= 512) launch(n);`)
            continue
        end = matching(toks, body) if toks[body].text == "{" else statement_end(toks, body)
        if body <= index <= end:
            out.append((cond, True, j))
        elif end < index and end + 1 < len(toks) and toks[end + 1].text == "else":
            other = end + 2
            other_end = matching(toks, other) if toks[other].text == "{" else statement_end(toks, other)
            if other <= index <= other_end:
                out.append((cond, False, j))
        elif end < index and _exits(toks, body, end) and scope_holds(toks, j, index, func.start):
            out.append((cond, False, j))
    return out


# -- conditions that are not comparisons, run (`host_eval`) -------------------------------------------------


def _values_of(src: CudaSource, func: Function, index: int, name: str, host: IntType, lo: int,
               hi: int) -> tuple[int, ...] | None:  # fmt: skip
    """The values in ``lo..hi`` of ``name`` (a variable of ``func`` of type
    ``host``, not assigned there) for which each condition around the launch at token
    ``index`` that reads more than a comparison with a constant holds, or
    cannot be run (`host_eval.Unknown`); None when every value passes, none
    does, or more than `MAX_VALUES` do."""
    if hi - lo + 1 > MAX_SCANNED:
        return None
    simple = Evaluator(src._resolver(func.start, None, [], 1))
    exprs = []
    for cond, holds, at in _conditions_at(src, index, func):
        if holds and all([f[0] for f in _comparison(c, simple)] == [name] for c in split_top(cond, "&&")):
            continue  # already in lo..hi
        try:
            exprs.append((host_eval.parse_expression(cond), holds, _prelude(src, func, cond, at, name)))
        except (host_eval.Unknown, IndexError, RecursionError):  # not C this module runs
            continue
    if not exprs:
        return None
    current: dict[str, Any] = {}
    known: dict[str, Any] = {}  # name -> how `_host_name` reads it, the same for every value
    machine = host_eval.Machine(src, lambda n: _host_name(src, func, index, n, current, known, machine))
    passing = set(range(lo, hi + 1))
    for expr, holds, prelude in exprs:
        for v in sorted(passing):
            if machine.total > MAX_TOTAL_STEPS:
                break  # the values not run yet are kept
            current.clear()
            current[name] = host_eval.Int(v, host)
            try:
                got = machine.run(expr) if prelude is None else machine.run_after(prelude[0], expr, prelude[1])
                if got != holds:
                    passing.discard(v)
            except (host_eval.Unknown, IndexError, RecursionError):
                pass  # not known to fail: kept
    if not passing or len(passing) == hi - lo + 1 or len(passing) > MAX_VALUES:
        return None  # no value passes: an impossible launch, left to the ranges
    return tuple(sorted(passing))


def _prelude(src: CudaSource, func: Function, cond: list[Token], at: int,
             name: str) -> tuple[tuple, set[str]] | None:  # fmt: skip
    """What runs before the condition at token ``at`` when it reads a local
    that the function changes after declaring it (``unsigned r = len; while
    ((r & 1) == 0) r >>= 1; assert(r == 1);``): the statements from the
    first such declaration to the condition, parsed, and the names they and
    the condition read. None: the condition reads no such local. `Unknown`
    when those statements are not a run of whole statements of one scope
    (the declaration in another block than the condition) or not C that
    `host_eval` runs: the condition then says nothing."""
    toks = src.tokens
    starts = []
    for n in {t.text for t in cond if t.kind == "name" and t.text != name}:
        decl = _declaration_at(src, func, n, at)
        if decl is not None and _assigned(src, func, n, at):
            starts.append(decl)
    if not starts:
        return None
    first = min(starts)
    while first > func.start + 1 and toks[first - 1].text not in (";", "{", "}"):
        first -= 1  # the declaration's type words
    run = toks[first:at]
    names = {t.text for t in run + cond if t.kind == "name"}
    return host_eval.parse_statements(run), names


def _declaration_at(src: CudaSource, func: Function, n: str, at: int) -> int | None:
    """The token of the local ``n``'s name in its last declaration in
    ``func`` before token ``at`` that `_declaration` reads."""
    toks = src.tokens
    for j in range(at - 1, func.start, -1):
        if toks[j].text == n and toks[j].kind == "name" and toks[j - 1].text in host_eval.TYPE_WORDS:
            return j if _declaration(src, func, n, j + 2) is not None else None
    return None


def _host_name(src: CudaSource, func: Function, index: int, n: str, current: dict[str, Any], known: dict[str, Any],
               machine: host_eval.Machine) -> Any:  # fmt: skip
    """What the name ``n`` is at the launch (token ``index`` of ``func``),
    given the values in ``current``: a local's value (one assigned only at
    its declaration), a `host_eval.Cell` (a local declared without a value,
    which the code passes by its address), or None (a constant of the file).
    ``known`` keeps what does not depend on the values (`_host_reading`)."""
    if n in current:
        return current[n]
    if n not in known:
        known[n] = _host_reading(src, func, index, n)
    how = known[n]
    if how is None:
        raise host_eval.Unknown
    if how == "constant":
        return None
    t, is_bool, init = how
    cell = host_eval.Cell(host_eval.POISON, t, is_bool)
    current[n] = cell if init is None else machine.store(cell, machine.value(init, None))
    return current[n]


def _host_reading(src: CudaSource, func: Function, index: int, n: str) -> Any:
    """How `_host_name` reads ``n``: ``(type, is_bool, parsed initialiser or
    None)`` for a local, "constant" for a name the function does not
    declare (the file's, `host_eval.Machine` reads it), or None (a parameter
    but the argument, a local assigned again, a declaration not read)."""
    decl = _declaration(src, func, n, index)
    if decl is None:
        return None if n in func.params else "constant"
    words, init = decl
    try:
        t, is_bool = host_eval.type_of(words)
        if init is not None and _assigned(src, func, n, index):
            return None
        return t, is_bool, None if init is None else host_eval.parse_expression(init)
    except (host_eval.Unknown, IndexError, RecursionError):
        return None


def _declaration(src: CudaSource, func: Function, n: str, index: int) -> tuple[tuple[str, ...], list[Token] | None] | None:
    """The type words and the initialiser (None: none) of the last
    declaration of the local ``n`` in ``func`` before token ``index``, when
    it declares only ``n``."""
    toks = src.tokens
    for j in range(index - 1, func.start, -1):
        if toks[j].text != n or toks[j].kind != "name" or toks[j - 1].text not in host_eval.TYPE_WORDS:
            continue
        if toks[j + 1].text not in ("=", ";"):
            return None
        k = j - 1
        while k > func.start and toks[k].text in host_eval.TYPE_WORDS:
            k -= 1
        if toks[k].text not in (";", "{", "}"):
            return None
        words = tuple(t.text for t in toks[k + 1 : j])
        if toks[j + 1].text == ";":
            return words, None
        init = toks[j + 2 : statement_end(toks, j)]
        return (words, init) if len(split_args(init)) == 1 else None
    return None


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
            if _operand(left) is not None:
                c = const.value(right)
                return [(_operand(left), t.text, c)] if isinstance(c, int) else []
            if _operand(right) is not None:
                c = const.value(left)
                return [(_operand(right), _COMPARE[t.text], c)] if isinstance(c, int) else []
            return []
    return []


def _operand(toks: list[Token]) -> str | None:
    """The variable a comparison tests: a name, or a block's member (``dimBlock.y``)."""
    if len(toks) == 1 and toks[0].kind == "name":
        return toks[0].text
    if len(toks) == 3 and toks[0].kind == "name" and toks[1].text == "." and toks[2].text in ("x", "y", "z"):
        return f"{toks[0].text}.{toks[2].text}"
    return None


def _negated(cond: list[Token], const: Evaluator) -> list[tuple[str, str, int]]:
    """What holds when ``cond`` is false: each comparison of a disjunction,
    negated (every part of a false ``||`` is false; a part that is not a
    comparison, ``!is_pow2(n)``, says nothing here: `_values_of` runs it)."""
    out = []
    for c in split_top(cond, "||"):
        got = _comparison(c, const)
        if len(got) == 1 and got[0][1] in _NEGATE:
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
