"""Small witnesses: a model with the fewest, smallest threads, trips and inputs.

Z3 answers SAT with whatever model it reaches first: threads (122,5,0) and
(2,4,0) of a block of 128x8x1, ``a = -9223372036854775808``. A person reads
a witness to replay it, so `shrink` asks again, under the same assertions,
for a model whose *witness symbols* -- the block size (``ntid.*``), the two
threads (``tid.*@t0``, ``tid.*@t1``), the block index (``ctaid.*``), the
loop trips (``k_*``, ``g_*``, ``s_*``) and the kernel's parameters
(``param:*``, by magnitude: they are shown signed) -- are all at most a
bound ``B``, searching ``B`` (first 1,
then by bisection on a log scale between the bounds known to fail and to
hold); then it tries to pin each symbol to its least value (a one-
dimensional block first, then thread 0, trip 0, parameters 0, the block
just large enough for the two threads), keeping each pin that holds.
A bound the solver gives up on (its resource limit) ends the bisection:
the bounds after it are only weaker, as hard to decide as the question
itself. What makes it hard is most often a division or a product by a
runtime extent (``sc[idx // d, idx % d]``), so then the parameters are
pinned first, one at a time, each to the first of a few small values
(least, 1, 2, 3, 5, 9, 17, ...: the just-past-a-power-of-two sizes where
bounds break) that still gives a model; with them constants the question
is easy, and the bisection over the other symbols is asked again.

Every model it returns satisfies everything the first did (the assertions
are kept; only bounds are added), so callers that read other terms from the
model (which accesses race, which bytes) are answered as before. It costs at
most `MAX_QUERIES` further checks, each under `SHRINK_RLIMIT` (deterministic,
like every query), and stops early when the lint's budget runs out, keeping
the smallest model found so far. A kernel gets at most
`solver.MAX_SHRINKS` small witnesses and `solver.MAX_SHRINK_QUERIES`
checks for all of them together (the first asked for, in the analyses'
deterministic order); later ones are Z3's first models.
"""

from __future__ import annotations

from typing import Any

from tolk_lint import budget

MAX_QUERIES = 14
SHRINK_RLIMIT = 400_000
# questions pinning symbols the solver may give up on before the shrink
# stops: each one spends its whole limit, and the next ones, as hard, mostly
# give up too (NVIDIA's bisectKernelLarge: 12 of a witness's 20 questions, 5.4 s)
MAX_GIVE_UPS = 2
_LADDER = (1, 2, 3, 5, 9, 17, 33, 65, 129)  # values tried for a symbol that cannot take its least one
_PREFIXES = ("ntid.", "tid.", "ctaid.", "k_", "g_", "s_", "param:")


def witness_symbols(z3, assertions, prefixes: tuple[str, ...] = _PREFIXES) -> list[Any]:
    """The bit-vector constants of the assertions whose names start with
    one of ``prefixes`` (by default, those a witness shows), in name order."""
    try:
        found = _constants_raw(z3, assertions, prefixes)
    except (AttributeError, TypeError, IndexError):  # another z3 build's bindings: the portable walk
        found = _constants(z3, assertions, prefixes)
    return [found[n] for n in sorted(found)]


def _raw_calls() -> tuple:
    """Z3's C functions themselves (the ctypes handles behind `z3.z3core`),
    without the Python wrappers' error check and reference counting per
    call: a walk over a large formula's nodes makes millions of calls, and
    the wrappers were three quarters of a lint's time in witnesses."""
    from z3 import z3core

    names = ("Z3_get_ast_id", "Z3_get_ast_kind", "Z3_to_app", "Z3_get_app_num_args", "Z3_get_app_arg",
             "Z3_get_app_decl", "Z3_get_decl_kind", "Z3_get_decl_name", "Z3_get_symbol_string")  # fmt: skip
    return tuple(getattr(z3core, n).__defaults__[0].f for n in names)


def _constants_raw(z3, assertions, prefixes: tuple[str, ...]) -> dict[str, Any]:
    if not len(assertions):
        return {}
    ast_id, kind, to_app, num_args, arg, app_decl, decl_kind, decl_name, symbol_string = _raw_calls()
    ctx = assertions[0].ctx
    c = ctx.ref()
    app_ast, uninterpreted = z3.Z3_APP_AST, z3.Z3_OP_UNINTERPRETED
    seen: set[int] = set()
    found: dict[str, Any] = {}
    stack = [x.as_ast() for x in assertions]  # the assertions own every node below them while we walk
    while stack:
        x = stack.pop()
        i = ast_id(c, x)
        if i in seen:
            continue
        seen.add(i)
        if kind(c, x) != app_ast:
            continue
        app = to_app(c, x)
        n = num_args(c, app)
        if n:
            stack.extend(arg(c, app, j) for j in range(n))
            continue
        d = app_decl(c, app)
        if decl_kind(c, d) != uninterpreted:
            continue
        name = symbol_string(c, decl_name(c, d))
        name = name.decode() if isinstance(name, bytes) else name
        if name.startswith(prefixes) and name not in found:
            e = z3.z3._to_expr_ref(x, ctx)  # a counted reference, kept past the walk
            if z3.is_bv(e):
                found[name] = e
    return found


def _constants(z3, assertions, prefixes: tuple[str, ...]) -> dict[str, Any]:
    seen: set[int] = set()
    found: dict[str, Any] = {}
    stack = list(assertions)
    while stack:
        x = stack.pop()
        i = x.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            name = x.decl().name()
            if z3.is_bv(x) and name.startswith(prefixes):
                found[name] = x
            continue
        stack.extend(x.children())
    return found


def _signed(x, unsigned: frozenset[str]) -> bool:
    name = x.decl().name()
    return name.startswith("param:") and name not in unsigned


def _size(z3, model, x, unsigned: frozenset[str] = frozenset()) -> int:
    v = model.eval(x, model_completion=True)
    if not z3.is_bv_value(v):
        return 0
    n = v.as_long()
    if _signed(x, unsigned) and n >= 1 << (x.size() - 1):
        n = (1 << x.size()) - n
    if x.decl().name().startswith("ntid."):
        n -= 1  # a block is at least 1 wide
    return max(0, n)


def _within(z3, x, bound: int, unsigned: frozenset[str] = frozenset()):
    w = x.size()
    if x.decl().name().startswith("ntid."):
        bound += 1
    if _signed(x, unsigned):
        b = min(bound, (1 << (w - 1)) - 1)
        return z3.And(x >= -b, x <= b)
    if bound >= (1 << w) - 1:
        return z3.BoolVal(True)
    return z3.ULE(x, z3.BitVecVal(bound, w))


def _least(x) -> int:
    return 1 if x.decl().name().startswith("ntid.") else 0


def _pin_order(x) -> tuple:
    """Which symbols to pin first: z and y of the block and the threads, then
    the parameters, the trips, and x. A parameter pinned to a constant makes
    a division or a product by it one by a constant, which the solver
    decides at once; the trips and threads are easy to pin after it."""
    name = x.decl().name()
    dim = name.split("@")[0][-1] if name.startswith(("ntid.", "tid.")) else ""
    group = {"z": 0, "y": 1}.get(dim, 4 if dim == "x" else 2 if name.startswith("param:") else 3)
    return (group, name.startswith("tid."), name)


def _next_bound(lo: int, hi: int) -> int:
    """The bisection's next bound between one known to fail and one known to hold (log scale when far apart)."""
    mid = (lo + hi) // 2 if hi <= 4 * max(lo, 1) else int((max(lo, 1) * hi) ** 0.5)
    return min(max(mid, lo + 1), hi - 1)


def shrink(z3, solver, model, rlimit: int = SHRINK_RLIMIT, keep=(), max_queries: int = MAX_QUERIES,
           unsigned: frozenset[str] = frozenset()):
    """A model of ``solver``'s assertions whose witness symbols are small
    (``model`` itself when none smaller is found); with ``keep``, of those
    too (each holds in ``model``); and the checks it took (at most
    ``max_queries``). Parameters are small by magnitude, as signed numbers,
    except the ``unsigned`` ones (symbol names)."""
    try:
        syms = witness_symbols(z3, solver.assertions())
    except z3.Z3Exception:
        return model, 0
    if not syms:
        return model, 0
    best = model
    asked = 0
    gave_up = 0

    def ask(*extra):
        """True (a model, now `best`), False (none), None (the solver gave
        up); after `MAX_GIVE_UPS` give-ups, None without asking."""
        nonlocal asked, best, gave_up
        if gave_up >= MAX_GIVE_UPS:
            return None
        asked += 1
        solver.push()
        try:
            solver.add(*keep, *extra)
            solver.set("rlimit", rlimit)
            budget.check("making a witness small")
            left = budget.remaining_seconds()
            if left is not None:
                solver.set("timeout", max(1, int(left * 1000)))
            r = solver.check()
            if r == z3.sat:
                best = solver.model()
                return True
            if r == z3.unsat:
                return False
            gave_up += 1
            return None
        finally:
            solver.pop()

    def bisect(pins, free) -> tuple[int, bool]:
        """The least bound B found for every symbol of ``free`` at once, under
        ``pins``, and whether the solver gave up on one."""
        nonlocal asked
        hi = max(_size(z3, best, x, unsigned) for x in free)
        if hi <= 1:
            return hi, False
        limit = min(max_queries, asked + max_queries * 2 // 3)
        got = ask(*pins, *[_within(z3, x, 1, unsigned) for x in free])
        if got:
            return 1, False
        lo = 1  # a bound known to fail (0 is never tried: two threads differ)
        while hi - lo > 1 and asked < limit:
            if got is None:
                # The solver gave up under a bound. The bisection would go on
                # to weaker bounds only, each as hard as the question it just
                # gave up on (most of a shrink's time went to such answers).
                return hi, True
            mid = _next_bound(lo, hi)
            got = ask(*pins, *[_within(z3, x, mid, unsigned) for x in free])
            if got:
                hi = max(_size(z3, best, x, unsigned) for x in free)
            else:
                lo = mid
        return hi, got is None

    try:
        pins: list = []
        hi, too_hard = bisect(pins, syms)
        gave_up = 0  # that bound was the hardest question: the cap counts the pins' questions
        pinned = set()
        if too_hard:
            # All the symbols bounded at once was too hard (a division by a
            # runtime extent, say). Pin the parameters first, one at a time,
            # each to the first value of a short ladder that still gives a
            # model: with its divisors and factors constants, the rest of the
            # question is easy, and the bisection over the others is asked again.
            for x in sorted((x for x in syms if x.decl().name().startswith("param:")), key=_pin_order):
                for value in (_least(x), *_LADDER):
                    if asked >= max_queries or value >= _size(z3, best, x, unsigned):
                        break
                    got = ask(*pins, x == value)
                    if got:
                        pins.append(x == value)
                        pinned.add(x.decl().name())
                    if got is not False:  # pinned, or the solver gave up: it would on the next value too
                        break
            free = [x for x in syms if x.decl().name() not in pinned]
            if free and pinned:
                hi, _ = bisect(pins, free)
        pins += [_within(z3, x, hi, unsigned) for x in syms if x.decl().name() not in pinned]
        for x in sorted(syms, key=_pin_order):
            if asked >= max_queries or gave_up >= MAX_GIVE_UPS:
                break
            if x.decl().name() in pinned:
                continue
            v = best.eval(x, model_completion=True)
            least = _least(x)
            if z3.is_bv_value(v) and v.as_long() == least:
                pins.append(x == least)
                continue
            if ask(*pins, x == least):
                pins.append(x == least)
        for d in "xyz":  # the block just large enough for the two threads
            if asked >= max_queries or gave_up >= MAX_GIVE_UPS:
                break
            n = next((x for x in syms if x.decl().name() == f"ntid.{d}"), None)
            tids = [x for x in syms if x.decl().name() in (f"tid.{d}@t0", f"tid.{d}@t1")]
            if n is None or not tids:
                continue
            need = max(best.eval(t, model_completion=True).as_long() for t in tids) + 1
            if best.eval(n, model_completion=True).as_long() > need and ask(*pins, n == need):
                pins.append(n == need)
    except budget.BudgetExceeded:
        pass  # the lint's budget is spent: the smallest model so far
    except z3.Z3Exception:
        pass
    return best, asked
