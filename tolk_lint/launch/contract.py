"""The launch contract a kernel needs, when nothing gives its shape (TL205).

Without a launch shape the memory analyses assume any block within
``.maxntid`` (else 1024 threads), and the commonest correct kernels get
TL201/TL202 findings that hold only for blocks they were never written
for: a 16x16 tile indexed by ``threadIdx`` is out of bounds for a block of
1x1024x1. Here the findings are turned into the kernel's contract:

1. Each finding comes with the solver's question that found it (its
   `goal`: the access's conditions and its overlap or bound, over the
   symbolic block dimensions ``ntid``). A finding that still holds for a
   block of two threads (or of one, or of 2x2 for a kernel that reads
   ``threadIdx.y``) is wrong for every shape: no contract removes it, and it
   stays an error.
2. The others are asked again with the block bounded, one family of
   contracts at a time, each bound found by binary search over the
   *natural* sizes (powers of two, multiples of 32, and the kernel's array
   dimensions), cached: the largest per-dimension bound with the other
   dimensions at 1, then the box of those bounds (``blockDim.x <= 16 and
   blockDim.y <= 16``), else a bound on the threads (``blockDim.x *
   blockDim.y <= 256``); for a one-dimensional kernel also ``blockDim.x is
   a power of two <= N`` (when a size below N that is no power of two
   fails: a kernel right for every size up to N has the bound as its
   contract), and, when no bounded family admits a warp, an
   exact size (``blockDim.x == 256``). A bound is taken only when it is the
   exact limit (one more fails): a kernel correct up to 31 threads is not
   given "<= 16". A contract must admit a block of at least 32 threads.
3. The kernel is then linted again under the contract (the encoders'
   launch constraints, `smt.contract_terms.contract_constraints`), every rule:
   that lint is the proof. A kernel it calls clean is clean for every
   block satisfying the contract; what it still finds is reported under
   the contract. When it finds accesses the questions of step 2 did not
   cover (unrolled copies of a line asked once), their questions are added
   and the contract derived again, once; if it still does not hold, the
   kernel is reported as if no contract had been tried.

The cost is a few small questions per family (not a lint per candidate)
and one more lint of the kernels that needed a contract.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from tolk_lint.diagnostics import report_frame
from tolk_lint.launch.shapes import MAX_THREADS, Contract, LaunchShape

log = logging.getLogger("tolk_lint.launch")

MIN_THREADS = 32  # a contract admits at least one warp
MAX_EXACT_PROBES = 12
CODES = ("TL201", "TL202")


@dataclass(eq=False)
class Need:
    """A finding the contract must remove: the solver's question for it
    (``expr`` under ``query``'s constraints), and what it points at."""

    code: str
    query: Any
    expr: Any
    line: int  # the linted line its diagnostic points at
    text: str  # the access, in words
    instr: Any
    example: str  # the finding's witness block, in words ("a block of 17x1x1")
    key: tuple = ()  # the source-level finding it is part of: (code, line[, the other access's line])


def needs_of(facts, codes: tuple[str, ...]) -> list[Need] | None:
    """The findings of ``codes`` the memory facts hold, each with its
    question; None when one has none (the solver could not encode it)."""
    from tolk_lint.analysis.memory import access_at, access_text, pretty_buffer  # the memory analysis: only when inferring

    out: list[Need] = []
    if "TL202" in codes:
        for f in facts.out_of_bounds():
            if f.goal is None:
                return None
            ins = f.access.instr
            block = (f.witness or {}).get("block")
            out.append(Need("TL202", f.goal[0], f.goal[1], _line(ins), access_text(f.access) + " leaves `"
                            + pretty_buffer(f.access.root) + "`", ins, _block_words(block),
                            ("TL202", user_line(ins))))  # fmt: skip
    if "TL201" in codes:
        for r in facts.races():
            if r.code != "TL201":
                continue
            if r.goal is None:
                return None
            ins = r.later.instr
            block = (r.witness or {}).get("block")
            text = f"{access_text(r.later)} races with {access_at(r.other)}"
            key = ("TL201",) + tuple(sorted((user_line(r.later.instr), user_line(r.other.instr))))
            out.append(Need("TL201", r.goal[0], r.goal[1], _line(ins), text, ins, _block_words(block), key))
            for q, expr, x, y in r.also:  # its instances the race search did not ask about
                key = ("TL201",) + tuple(sorted((user_line(x.instr), user_line(y.instr))))
                out.append(Need("TL201", q, expr, _line(ins), text, ins, _block_words(block), key))
    return out


def _line(ins) -> int:
    return ins.span.line if ins.span is not None else 0


def user_line(ins) -> int:
    """The line the person wrote: the ``.loc`` origin's, else the linted line."""
    if ins.origin is not None:
        return report_frame(ins.origin).line
    return _line(ins)


def _block_words(block) -> str:
    return f"a block of {block[0]}x{block[1]}x{block[2]}" if block else ""


class Inference:
    """The questions of one kernel's contract, asked and cached."""

    def __init__(self, k, dims_read: list[int], limit: int, rlimit: int):
        self.k = k
        self.dims = dims_read or [0]
        self.limit = limit
        self.rlimit = rlimit
        self.natural = natural_sizes(k, limit)
        self.guesses = sorted(array_sizes(k, limit))
        self._memo: dict[tuple, bool] = {}
        self.questions = 0

    # -- the solver ----------------------------------------------------------------------------------

    def holds(self, needs: list[Need], key: tuple, build) -> bool:
        """Whether no finding of ``needs`` survives the block constraints
        ``build(z3, ntid)`` (cached by ``key``)."""
        from tolk_lint.analysis.memory.query import solve_bv

        memo_key = (key, tuple(id(n) for n in needs))
        got = self._memo.get(memo_key)
        if got is not None:
            return got
        ok = True
        for q, exprs in _by_query(needs):
            z3 = q.z3
            cons = build(z3, q.enc.ntid)
            self.questions += 1
            v = solve_bv(q.enc, z3.And(*cons, z3.Or(*exprs)), self.rlimit // 4 if len(exprs) > 1 else self.rlimit)
            if v.status == "unknown" and len(exprs) > 1:  # too hard together: each alone
                for e in exprs:
                    self.questions += 1
                    if solve_bv(q.enc, z3.And(*cons, e), self.rlimit).status != "unsat":
                        ok = False
                        break
            elif v.status != "unsat":
                ok = False
            if not ok:
                break
        self._memo[memo_key] = ok
        return ok

    def wrong_everywhere(self, needs: list[Need]) -> list[Need]:
        """The findings that still hold for a block of one or two threads (or
        two in each dimension the kernel reads): no contract taken removes them."""
        from tolk_lint.analysis.memory.query import solve_bv

        shapes = [(1, 1, 1)] + [tuple(2 if e == d else 1 for e in range(3)) for d in self.dims]
        if len(self.dims) > 1:  # every contract taken keeps 2 threads in each dimension read
            shapes.append(tuple(2 if e in self.dims else 1 for e in range(3)))
        out: list[Need] = []
        for q, group in _groups(needs):
            rest = list(group)
            z3 = q.z3
            for shape in shapes:
                cons = [q.enc.ntid[d] == shape[d] for d in range(3)]
                while rest:
                    self.questions += 1
                    # together on a quarter of the budget (as the race search does), each alone when too hard
                    v = solve_bv(q.enc, z3.And(*cons, z3.Or(*[n.expr for n in rest])),
                                 self.rlimit // 4 if len(rest) > 1 else self.rlimit)  # fmt: skip
                    if v.status == "unknown" and len(rest) > 1:
                        alone = []
                        for n in rest:
                            self.questions += 1
                            if solve_bv(q.enc, z3.And(*cons, n.expr), self.rlimit).status == "sat":
                                alone.append(n)
                        out += alone
                        rest = [n for n in rest if n not in alone]
                        break
                    if v.status != "sat":
                        break
                    hit = [n for n in rest if z3.is_true(v.model.eval(n.expr, model_completion=True))] or rest[:1]
                    out += hit
                    rest = [n for n in rest if n not in hit]
        # one source-level finding is one bug: its other pairs (other trips, unrolled copies) go with it
        keys = {n.key for n in out}
        return [n for n in needs if n.key in keys]

    # -- the families --------------------------------------------------------------------------------

    def derive(self, needs: list[Need]) -> Contract | tuple[int, int, int] | None:
        """The contract that removes every finding of ``needs``: a `Contract`,
        an exact block, or None when no natural one does."""
        bounds = {d: self._axis(needs, d) for d in self.dims}
        if len(self.dims) == 1:
            return self._one_dimensional(needs, bounds[self.dims[0]])
        box = self._box(needs, bounds)
        if box is not None:
            return box
        t = self._largest(needs, ("threads",), lambda z3, n, v: _threads(z3, n, self.dims, v))
        if t is not None and t >= MIN_THREADS:
            dims = tuple(min(t, 1024 if d < 2 else 64) if d in self.dims else 1 for d in range(3))
            return Contract(dims, t, "product")  # type: ignore[arg-type]
        return None

    def _box(self, needs: list[Need], bounds: dict[int, int | None]) -> Contract | None:
        """The best box: the per-dimension bounds together, or, when they do
        not hold together (a PTX array is flat: ``As[0][tx]`` stays inside
        ``As[32][32]`` up to 1024 threads in x alone), one dimension's bound
        searched again with the others at theirs. Every dimension the kernel
        reads must keep at least 2 threads; most threads wins, then the most
        even box.

        One dimension with no bound of its own (`_axis` found no exact
        natural limit) is searched with the others at theirs first: FDTD3d's
        ``tile[16 + 8][32 + 8]`` indexed ``tile[ty][tx + 32]`` by x's halo
        is flat in the PTX, so with ``blockDim.y == 1`` the halo runs into
        the first words of the next row, written by no one, for a few
        threads past 32 (no natural exact limit); with ``blockDim.y == 16``
        a 33rd thread's halo meets the row below's left halo, and 32 is x's
        exact limit."""
        missing = [d for d, b in bounds.items() if b is None]
        if len(missing) > 1 or len(missing) == len(bounds):
            return None
        if missing:
            d = missing[0]
            others = {e: b for e, b in bounds.items() if b is not None}
            got = self._largest(needs, ("box-axis", d) + tuple(sorted(others.items())),
                                lambda z3, n, v: box_constraints(z3, n, _dims(d, v, others)))  # fmt: skip
            if got is None:
                return None
            bounds = {**bounds, d: got}
        full = tuple(bounds.get(d, 1) for d in range(3))
        c = Contract(full, min(self.limit, full[0] * full[1] * full[2]), "box")  # type: ignore[arg-type]
        if c.threads >= MIN_THREADS and self.holds(needs, ("box", full), lambda z3, n: box_constraints(z3, n, full)):
            return c
        tries = []
        for d in self.dims:
            others = {e: bounds[e] for e in self.dims if e != d}
            got = self._largest(needs, ("box-axis", d) + tuple(sorted(others.items())),
                                lambda z3, n, v, d=d, others=others: box_constraints(z3, n, _dims(d, v, others)))  # fmt: skip
            if got is not None:
                tries.append(_dims(d, got, others))
        best: Contract | None = None
        for dims in dict.fromkeys(tries):
            if any(dims[d] < 2 for d in self.dims):
                continue
            c = Contract(dims, min(self.limit, dims[0] * dims[1] * dims[2]), "box")  # type: ignore[arg-type]
            if c.threads < MIN_THREADS or not self.holds(needs, ("box", dims), lambda z3, n, dims=dims: box_constraints(z3, n, dims)):
                continue
            if best is None or (c.threads, min(dims[d] for d in self.dims)) > \
                    (best.threads, min(best.dims[d] for d in self.dims)):  # fmt: skip
                best = c
        return best

    def _one_dimensional(self, needs: list[Need], bound: int | None) -> Contract | tuple[int, int, int] | None:
        best: Contract | None = None
        if bound is not None and bound >= MIN_THREADS:
            best = Contract((bound, 1, 1), bound, "box")
        if bound is None or bound < self.limit:
            powers = [p for p in _powers(self.limit) if p > (bound or 0)]
            p = _search(powers, lambda v: self.holds(needs, ("pow2", v), lambda z3, n: _pow2(z3, n, v)))
            # taken only when some other size up to it fails: when every one does not, the bound
            # is the contract, and an unnatural one at that (right up to 63 threads is no power of two)
            if p is not None and p >= MIN_THREADS and (best is None or p > best.threads) and \
                    not self.holds(needs, ("axis", 0, p), lambda z3, n: _axis(z3, n, 0, p)):  # fmt: skip
                best = Contract((p, 1, 1), p, "pow2", pow2=True)
        if best is not None:
            return best
        for size in [n for n in reversed(self.natural) if n >= MIN_THREADS][:MAX_EXACT_PROBES]:
            if self.holds(needs, ("exact", size), lambda z3, n, s=size: _exact(z3, n, s)):
                # as for powers of two: only when a smaller size fails (else the bound is the contract)
                if self.holds(needs, ("axis", 0, size), lambda z3, n, s=size: _axis(z3, n, 0, s)):
                    return None
                return (size, 1, 1)
        return None

    def _axis(self, needs: list[Need], d: int) -> int | None:
        """The largest natural bound on dimension ``d`` (the others 1) that
        removes the findings, when it is their exact limit."""
        return self._largest(needs, ("axis", d), lambda z3, n, v: _axis(z3, n, d, v))

    def _largest(self, needs: list[Need], key: tuple, build) -> int | None:
        """The largest natural ``v`` for which ``build(v)`` removes the
        findings, when it is their exact limit (``v + 1`` does not); the
        kernel's own array sizes are tried first, smallest first (most
        kernels' limit is one of them: two questions; a size that fails
        fails every larger one too, and ends the guesses), then a binary
        search between the sizes known to hold and to fail."""
        def ok(v: int) -> bool:
            return self.holds(needs, key + (v,), lambda z3, n: build(z3, n, v))

        def exact(v: int) -> bool:
            return v >= self.limit or not ok(v + 1)

        holds, fails = 0, self.limit + 1
        for guess in self.guesses:
            if not ok(guess):
                fails = guess
                break
            if exact(guess):
                return guess
            holds = guess
        best = _search([v for v in self.natural if holds < v < fails], ok) or (holds or None)
        if best is None or best >= self.limit:
            return best
        return best if exact(best) else None  # the exact limit, or an unnatural one: none


def _search(sizes: list[int], ok) -> int | None:
    """The largest size for which ``ok`` holds (it holds for every smaller one too)."""
    lo, hi = -1, len(sizes)  # ok(sizes[lo]) holds, ok(sizes[hi]) does not (sentinels)
    if not sizes:
        return None
    if ok(sizes[-1]):
        return sizes[-1]
    hi = len(sizes) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(sizes[mid]):
            lo = mid
        else:
            hi = mid
    return sizes[lo] if lo >= 0 else None


def _powers(limit: int) -> list[int]:
    return [1 << e for e in range(1, 11) if 1 << e <= limit]


def natural_sizes(k, limit: int) -> list[int]:
    """Block bounds a person would write: powers of two, multiples of a
    warp, and the kernel's array sizes (`array_sizes`)."""
    out = set(_powers(limit)) | {32 * m for m in range(1, MAX_THREADS // 32 + 1)} | array_sizes(k, limit)
    out.add(limit)
    return sorted(n for n in out if 2 <= n <= limit)


def array_sizes(k, limit: int) -> set[int]:
    """The dimensions and sizes of the kernel's shared and local arrays (PTX
    arrays are bytes: their sizes in elements of 2 to 16 bytes)."""
    out: set[int] = set()
    for buf in k.buffers.values():
        if buf.space not in ("shared", "local"):
            continue
        dims = [d for d in buf.shape if isinstance(d, int) and d > 0]
        out |= set(dims)
        if buf.elements:
            out.add(buf.elements)
        if k.language == "ptx" and buf.bytes:
            out |= {buf.bytes // e for e in (2, 4, 8, 16) if buf.bytes % e == 0}
    return {n for n in out if 2 <= n <= limit}


def _groups(needs: list[Need]):
    by: dict[int, tuple[Any, list[Need]]] = {}
    for n in needs:
        by.setdefault(id(n.query), (n.query, []))[1].append(n)
    return list(by.values())


def _by_query(needs: list[Need]):
    return [(q, [n.expr for n in group]) for q, group in _groups(needs)]


# -- the block constraints of each family -------------------------------------------------------------


def _axis(z3, ntid, d: int, bound: int) -> list:
    return [z3.ULE(ntid[d], bound)] + [ntid[e] == 1 for e in range(3) if e != d]


def _dims(d: int, bound: int, others: dict[int, int]) -> tuple[int, int, int]:
    out = [others.get(e, 1) for e in range(3)]
    out[d] = bound
    return (out[0], out[1], out[2])


def box_constraints(z3, ntid, dims) -> list:
    return [ntid[d] == 1 if dims[d] == 1 else z3.ULE(ntid[d], dims[d]) for d in range(3)]


def _threads(z3, ntid, read: list[int], bound: int) -> list:
    wide = [z3.ZeroExt(32, n) for n in ntid]
    return [z3.ULE(wide[0] * wide[1] * wide[2], bound)] + [ntid[d] == 1 for d in range(3) if d not in read]


def _pow2(z3, ntid, bound: int) -> list:
    return [z3.ULE(ntid[0], bound), ntid[0] & (ntid[0] - 1) == 0, ntid[1] == 1, ntid[2] == 1]


def _exact(z3, ntid, size: int) -> list:
    return [ntid[0] == size, ntid[1] == 1, ntid[2] == 1]


def inferred_shape(choice: Contract | tuple[int, int, int]) -> LaunchShape:
    if isinstance(choice, Contract):
        return LaunchShape(None, "the launch contract TL205 inferred", "inferred", contract=choice)
    return LaunchShape(choice, f"the launch contract TL205 inferred (blockDim.x == {choice[0]})", "inferred")
