"""Small witnesses: a model with the fewest, smallest threads, trips and inputs.

Z3 answers SAT with whatever model it reaches first: threads (122,5,0) and
(2,4,0) of a block of 128x8x1, ``a = -9223372036854775808``. A person reads
a witness to replay it, so `shrink` asks again, under the same assertions,
for a model whose *witness symbols* -- the block size (``ntid.*``), the two
threads (``tid.*@t0``, ``tid.*@t1``), the block index (``ctaid.*``), the
loop trips (``k_*``, ``g_*``, ``s_*``) and the kernel's parameters
(``param:*``, by magnitude: they are shown signed) -- are small: mostly by
questions that pin every symbol to a value, which the solver answers at
once, and only where those cannot move a pair of symbols that must stay
apart, by bounding them all at once (see `shrink`).

Every model it returns satisfies everything the first did (the assertions
are kept; only bounds and pins are added), so callers that read other terms
from the model (which accesses race, which bytes) are answered as before.
Each question is under a deterministic resource limit (`SHRINK_RLIMIT`,
`PINNED_RLIMIT`), so the witness is the same on every machine, and the
shrink stops early when the lint's budget runs out, keeping the smallest
model found so far. A kernel gets at most `solver.MAX_SHRINKS` small
witnesses and `solver.MAX_SHRINK_QUERIES` questions for all of them
together (the first asked for, in the analyses' deterministic order); later
ones are Z3's first models.
"""

from __future__ import annotations

from typing import Any

from tolk_lint import budget

MAX_QUERIES = 14
SHRINK_RLIMIT = 400_000
# a question with every witness symbol pinned to a value: the constants fold
# through the formula and the answer is at once (about 0.01 s), so these are
# many and small; the resource limit only stops one that is not
PINNED_RLIMIT = 60_000
MAX_PINNED = 96  # pinned questions per witness
LARGE = 1  # a symbol still over this after the descent: bound them all at once
# a first bound (every symbol at most 1) that cost more than this: the formula is
# hard (a tiled matmul's races: 0.15-0.35 s a question), so pinned questions
# (`by_pins`); under it each question is a few milliseconds, and the bounds
# (`by_bounds`) need fewer of them
EASY_RLIMIT = 100_000
LARGE_PARAMETER = 64  # a parameter still over this at the end: the values of `_LADDER`, one question each
_LADDER = (1, 2, 3, 5, 9, 17, 33)  # the just-past-a-power-of-two sizes where bounds break
# questions pinning symbols the solver may give up on before the shrink
# stops: each one spends its whole limit, and the next ones, as hard, mostly
# give up too (NVIDIA's bisectKernelLarge: 12 of a witness's 20 questions, 5.4 s)
MAX_GIVE_UPS = 2
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


def _next_bound(lo: int, hi: int) -> int:
    """The bisection's next bound between one known to fail and one known to hold (log scale when far apart)."""
    mid = (lo + hi) // 2 if hi <= 4 * max(lo, 1) else int((max(lo, 1) * hi) ** 0.5)
    return min(max(mid, lo + 1), hi - 1)


def _descent_order(x) -> tuple:
    """Which symbols the descent lowers first: the trips, the block index and
    the threads, then the block size (it can shrink only once the threads in
    it have), the parameters last (an extent can shrink only to what the
    trips and threads still need: `n > tx + 16 * i`)."""
    name = x.decl().name()
    group = 0 if name[:2] in ("k_", "g_", "s_") else 1 if name.startswith("ctaid.") else \
        2 if name.startswith("tid.") else 3 if name.startswith("ntid.") else 4
    return (group, name)


def shrink(z3, solver, model, rlimit: int = SHRINK_RLIMIT, keep=(), max_queries: int = MAX_QUERIES,
           unsigned: frozenset[str] = frozenset(), hint: dict[str, int] | None = None):
    """A model of ``solver``'s assertions whose witness symbols are small
    (``model`` itself when none smaller is found); with ``keep``, of those
    too (each holds in ``model``); and the questions it cost, counted as
    `MAX_QUERIES` counts them (a pinned question is a sixteenth of one).
    Parameters are small by magnitude, as signed numbers, except the
    ``unsigned`` ones (symbol names).

    Two kinds of question. One that pins every witness symbol to a value is
    cheap: the solver's preprocessing folds the constants through the
    formula, so even a division by a runtime extent becomes one by a
    constant (about 0.01 s, under `PINNED_RLIMIT`). One that only bounds
    symbols costs what the formula costs: a few milliseconds for most, as
    much as the finding's own question for some (a tiled matmul's races
    with no launch shape: 0.15-0.35 s each). So:

    1. ``hint``, the values the kernel's previous small witness gave its
       symbols (`hint_of`), in one question: a kernel's findings mostly
       share their smallest launch;
    2. the bound ``B = 1`` on every symbol at once. What it cost (the
       solver's resource count, deterministic) says which way goes on:
    3. an easy formula, `by_bounds`: ``B`` bisected, then each symbol pinned
       to its least value, then the block to just hold the two threads
       (about a dozen questions);
    4. a hard one, `by_pins`: each symbol in turn to the least value that,
       with every other symbol at its value, still gives a model (pinned
       questions), the two threads moved down together; then, where a
       symbol is still large, the bound on the threads and trips at once
       with the parameters pinned, and a parameter still large asked at a
       few small values.
    """
    try:
        syms = witness_symbols(z3, solver.assertions())
    except z3.Z3Exception:
        return model, 0
    if not syms:
        return model, 0
    best = model
    asked = pinned_asked = 0
    gave_up = 0
    settled: dict[str, tuple] = {}  # a symbol's name -> every value when its descent last ended

    cost = 0  # the last question's resource count

    def ask(*extra, limit: int = rlimit):
        """True (a model, now `best`), False (none), None (the solver gave
        up); after `MAX_GIVE_UPS` give-ups, None without asking."""
        nonlocal best, gave_up, cost
        if gave_up >= MAX_GIVE_UPS:
            return None
        before = _resources(solver)
        solver.push()
        try:
            solver.add(*keep, *extra)
            solver.set("rlimit", limit)
            budget.check("making a witness small")
            left = budget.remaining_seconds()
            if left is not None:
                solver.set("timeout", max(1, int(left * 1000)))
            r = solver.check()
            cost = _resources(solver) - before
            if r == z3.sat:
                best = solver.model()
                return True
            if r == z3.unsat:
                return False
            gave_up += 1
            return None
        finally:
            solver.pop()

    def ask_bounded(*extra):
        nonlocal asked
        asked += 1
        return ask(*extra)

    def ask_pinned(*extra):
        nonlocal pinned_asked
        pinned_asked += 1
        return ask(*extra, limit=min(rlimit, PINNED_RLIMIT))

    def value(x) -> int:
        v = best.eval(x, model_completion=True)
        return v.as_long() if z3.is_bv_value(v) else 0

    def descend(order) -> None:
        """Each symbol of ``order`` in turn to its least size (`_size`) that,
        with every other witness symbol at its value in `best`, gives a model."""
        for x in order:
            size = _size(z3, best, x, unsigned)
            now = tuple(value(y) for y in order)
            if size == 0 or settled.get(x.decl().name()) == now:
                continue  # least already, or no lower when every value was as now
            least = _least(x)
            # lowering the first thread, the second's index along the same axis
            # is left free below its value (at least 1): thread 0 may be the one
            # the other holds (not the other way round: they would swap back)
            name = x.decl().name()
            partner = name.replace("@t0", "@t1") if name.endswith("@t0") else None
            others = [(y == value(y)) if y.decl().name() != partner or y is x
                      else _within(z3, y, max(1, _size(z3, best, y, unsigned)), unsigned) for y in syms if y is not x]
            got = ask_pinned(*others, x == least)
            lo = 0  # a size known to fail
            while got is False and size - lo > 1 and pinned_asked < MAX_PINNED:
                # a bound, not a value: the model may land below it
                got = ask_pinned(*others, _within(z3, x, _next_bound(lo, size), unsigned))
                if got:
                    size, got = _size(z3, best, x, unsigned), False  # go on below it
                elif got is False:
                    lo = _next_bound(lo, size)
            settled[name] = tuple(value(y) for y in order)
            if gave_up >= MAX_GIVE_UPS or pinned_asked >= MAX_PINNED:
                return

    def shift_threads() -> None:
        """The two threads moved down together, one dimension at a time, as
        far as a model allows: two threads that race on a row share its
        index, and lowering one alone parts them."""
        by_name = {x.decl().name(): x for x in syms}
        for d in "xyz":
            pair = [by_name.get(f"tid.{d}@t0"), by_name.get(f"tid.{d}@t1")]
            if None in pair or gave_up >= MAX_GIVE_UPS or pinned_asked >= MAX_PINNED:
                continue
            a, b = value(pair[0]), value(pair[1])
            others = [y == value(y) for y in syms if all(y is not t for t in pair)]

            def down(delta: int, others=others, t0=pair[0], t1=pair[1], a=a, b=b):
                return ask_pinned(*others, t0 == a - delta, t1 == b - delta)

            lo, hi = 0, min(a, b)  # a shift known to hold, and the largest one asked
            if hi == 0 or down(hi):
                continue
            while hi - lo > 1 and pinned_asked < MAX_PINNED:
                mid = (lo + hi) // 2
                got = down(mid)
                if got is None:
                    break
                lo, hi = (mid, hi) if got else (lo, mid)

    def descents() -> None:
        """`descend` and `shift_threads` until they move nothing (three rounds at most)."""
        for _round in range(3):
            before = [value(x) for x in order]
            descend(order)
            shift_threads()
            if [value(x) for x in order] == before:
                return

    def bisect(pins, free, got: bool | None | str = "ask") -> tuple[int, bool]:
        """The least bound B found for every symbol of ``free`` at once, under
        ``pins``, and whether the solver gave up on one (``got``: the answer
        for B = 1, when it was asked already)."""
        hi = max(_size(z3, best, x, unsigned) for x in free)
        if hi <= 1:
            return hi, False
        limit = min(max_queries, asked + max_queries * 2 // 3)
        if got == "ask":
            got = ask_bounded(*pins, *[_within(z3, x, 1, unsigned) for x in free])
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
            got = ask_bounded(*pins, *[_within(z3, x, mid, unsigned) for x in free])
            if got:
                hi = max(_size(z3, best, x, unsigned) for x in free)
            else:
                lo = mid
        return hi, got is None

    def by_bounds(first: bool | None) -> None:
        """Bisect the bound on every symbol at once (``first``: the answer
        for B = 1), then pin each symbol to its least value in turn, then
        the block to just hold the two threads: few questions, each as hard
        as the finding's own."""
        nonlocal gave_up
        pins: list = []
        hi, too_hard = bisect(pins, syms, first)
        gave_up = 0  # that bound was the hardest question: the cap counts the pins' questions
        if too_hard:
            # All the symbols bounded at once was too hard (a division by a
            # runtime extent, say): lower them one at a time instead.
            by_pins()
            return
        pins += [_within(z3, x, hi, unsigned) for x in syms]
        for x in sorted(syms, key=_descent_order):
            if asked >= max_queries or gave_up >= MAX_GIVE_UPS:
                break
            least = _least(x)
            if value(x) == least:
                pins.append(x == least)
                continue
            if ask_bounded(*pins, x == least):
                pins.append(x == least)
        for d in "xyz":  # the block just large enough for the two threads
            if asked >= max_queries or gave_up >= MAX_GIVE_UPS:
                break
            n = next((x for x in syms if x.decl().name() == f"ntid.{d}"), None)
            tids = [x for x in syms if x.decl().name() in (f"tid.{d}@t0", f"tid.{d}@t1")]
            if n is None or not tids:
                continue
            need = max(value(t) for t in tids) + 1
            if value(n) > need and ask_bounded(*pins, n == need):
                pins.append(n == need)

    def by_pins() -> None:
        """`descents`, then the bound on the threads and trips at once where
        one is still large, then the parameters' small values."""
        nonlocal gave_up
        gave_up = 0
        descents()
        gave_up = 0  # each stage has its own give-ups: a pinned question under a division may need more
        if max(_size(z3, best, x, unsigned) for x in syms) > LARGE:
            # lowered one at a time, a pair of symbols that must stay apart
            # (two threads 64 apart, a thread and the block holding it) stays
            # where Z3 put it: bound them all at once. The parameters keep
            # their values, as the descent left them (small, or needed so),
            # which makes a division or a product by them one by a constant.
            params = [x == value(x) for x in syms if x.decl().name().startswith("param:")]
            free = [x for x in syms if not x.decl().name().startswith("param:")]
            if free:
                bisect(params, free)
                gave_up = 0
                descents()
        gave_up = 0
        for x in order:
            # a parameter still large: tied to the threads and trips through a
            # division or a product (`idx // d` with `idx < k * d`), it moves
            # only with them. Ask for it at each of a few small values in
            # turn, everything else free, then lower the rest again.
            if not x.decl().name().startswith("param:") or _size(z3, best, x, unsigned) <= LARGE_PARAMETER:
                continue
            for v in (_least(x), *_LADDER):
                if asked >= max_queries or gave_up >= MAX_GIVE_UPS or v >= _size(z3, best, x, unsigned):
                    break
                got = ask_bounded(x == v)
                if got:
                    descents()
                if got is not False:  # lowered, or the solver gave up: it would on the next value too
                    break

    order = sorted(syms, key=_descent_order)
    try:
        hinted = [x == hint[x.decl().name()] for x in syms if hint and x.decl().name() in hint]
        if hinted:
            ask_pinned(*hinted) if len(hinted) == len(syms) else ask_bounded(*hinted)
        gave_up = 0
        if max(_size(z3, best, x, unsigned) for x in syms) <= 1:
            by_pins()  # at most one pinned question per symbol
        else:
            # how hard the formula is, by what the first bound cost (the
            # solver's deterministic resource count, not the clock)
            first = ask_bounded(*[_within(z3, x, 1, unsigned) for x in syms])
            if first is None or cost > EASY_RLIMIT:
                by_pins()
            else:
                by_bounds(first)
    except budget.BudgetExceeded:
        pass  # the lint's budget is spent: the smallest model so far
    except z3.Z3Exception:
        pass
    return best, asked + (pinned_asked + 15) // 16


def _resources(solver) -> int:
    """The solver's resource count so far (deterministic, like its limit)."""
    try:
        return int(solver.statistics().get_key_value("rlimit count"))
    except Exception:  # noqa: BLE001 - a build without the statistic: every formula looks easy
        return 0


def hint_of(z3, solver, model) -> dict[str, int]:
    """The values ``model`` gives the witness symbols of ``solver``'s
    assertions: the next witness's `shrink` hint."""
    try:
        syms = witness_symbols(z3, solver.assertions())
        values = {x.decl().name(): model.eval(x, model_completion=True) for x in syms}
    except z3.Z3Exception:
        return {}
    return {name: v.as_long() for name, v in values.items() if z3.is_bv_value(v)}
