"""Thread-private addresses: a scaled linear thread rank (before any solver question).

Without a launch shape, a kernel that reads ``tid.y`` or ``tid.z`` leaves
the block symbolic, so the concrete pass cannot run, and the commonest
thread-private index of all -- cooperative groups' ``block.thread_rank()``,
CUB's linear thread id, ``s[(tz * ny + ty) * nx + tx]`` -- is a product of
the symbolic block size and thread indices. Bit-blasted, those products
are where Z3 spends its whole resource limit and gives up, and a pair that
could not be told apart is reported anyway. Their shape proves them apart:

    addr(t) = U + c * rank(t),   rank(t) = tid.x + ntid.x * tid.y + ntid.x * ntid.y * tid.z

``rank`` is one-to-one over the block (it numbers the threads 0 .. n - 1,
n <= 1024), so the addresses of two threads differ by ``c * (rank(t0) -
rank(t1))``, at least ``|c|`` bytes and at most 2^30: accesses at most
``|c|`` bytes wide never overlap. Only the whole rank counts: ``tid.x +
ntid.x * tid.y`` alone repeats across ``tid.z`` of a block whose depth is
not known to be 1.

The same shape bounds an access without a launch shape (`rank_in_bounds`):
``base + off + c * rank`` with ``off >= 0`` and ``c > 0`` stays within
``off + c * (n - 1) + width`` bytes of the array, n at most 1024 (or the
kernel's ``.maxntid``).

A block-stride loop counter (``for j in range(tid.x, 256, blockDim.x)``,
``for (j = tid; j < 256; j += blockDim.x)``) is read as its closed form
``start + S * k`` with ``k`` a variable of its own per thread (``trip:``,
a thread part: the two threads may be at different trips). With ``start =
u + rank`` (``u`` a constant) and ``S`` the block's thread count, two
threads' counters differ whatever their trips: ``rank0 - rank1 + S * (k0 -
k1)`` is zero only for one rank and one trip, as ``|rank0 - rank1| < S``.
The counter is taken not to wrap (as the memory queries take every
induction variable: `Query.counted`), and a constant bound ``C`` keeps its
values below ``C + 1024``, so ``c * j`` differs between the two threads by
less than 2^30: the same word argument as the rank's. The block-stride
staging loop, the commonest way a block copies a tile, is then apart
before any question, where the solver needs the product of the symbolic
block size and the trip.

A kernel that reads ``tid.y`` or ``tid.z`` only to compute its linear rank
(`rank_only_dims`: cooperative groups' ``thread_rank()`` inside a kernel
indexed by ``threadIdx.x``) is taken to be launched with flat blocks, as
one that never reads them is (`MemoryCore.tid_dims`).

`thread_private` checks that shape on the integer polynomial of each
address (`address_poly`): monomials over ``tid.*``, ``ntid.*`` and atoms,
with integer coefficients. Why the integers may stand in for the machine's
words: every step taken is a ring operation (add, sub, mul, mad.lo, shl by
a constant) or an integer conversion, on values of at least 32 bits, so
each value is congruent to its polynomial modulo 2^32 (an extension or
``mul.wide`` adds a multiple of 2^32 at most), and a difference at least
``|c|`` from every multiple of 2^32 is at least that far from every
multiple of a wider word. An atom is a value the same for both threads:
a constant, a parameter, a buffer's address, a block or grid index, or a
value the uniformity analysis calls uniform that is computed outside every
loop (inside one it may differ between trips, and two threads of a phase
may be at different trips). Anything else (a load, a loop counter, a
division, a 16-bit step) leaves the address unread, and the pair goes on
to the concrete pass and the solver as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.ir.nodes import is_float, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.analysis.memory.accesses import Access
    from tolk_lint.analysis.memory.core import MemoryCore
    from tolk_lint.ir.nodes import Value

O = Opcode

Poly = dict  # monomial (a sorted tuple of variable names) -> integer coefficient

RANK: Poly = {("tid.x",): 1, ("ntid.x", "tid.y"): 1, ("ntid.x", "ntid.y", "tid.z"): 1}
MAX_SCALE = 1 << 20  # |c| * 1023 stays below 2^30: no difference reaches a multiple of 2^32
MIN_BITS = 32  # narrower steps wrap below the word the argument needs
_THREAD = ("tid.x", "tid.y", "tid.z")
TRIP = "trip:"  # a block-stride loop's trip (`RankReader._block_stride`): per thread
MAX_BLOCK = 1024  # threads of a block: how far past its bound a block-stride counter ends
_BLOCK = ("ntid.x", "ntid.y", "ntid.z")


class _Unread(Exception):
    """The address is not a polynomial this module reads."""


def _add(p: Poly, q: Poly, sign: int = 1) -> Poly:
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + sign * c
        if out[m] == 0:
            del out[m]
    return out


def _mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
            if out[m] == 0:
                del out[m]
    return out


def _const(p: Poly) -> int | None:
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


class RankReader:
    """The address polynomials of one kernel's values, cached."""

    def __init__(self, mf: MemoryCore):
        self.mf = mf
        self._memo: dict[Value, Poly | None] = {}
        self.trip_spans: dict[str, int] = {}  # `TRIP` variable -> a bound on |j0 - j1| of its counter

    def address_poly(self, v: Value | None) -> Poly | None:
        if v is None:
            return None
        try:
            return self._poly(v)
        except _Unread:
            return None
        except RecursionError:
            return None

    def _poly(self, v: Value) -> Poly:
        v = self.mf.canon.map.get(v, v)
        if v in self._memo:
            got = self._memo[v]
            if got is None:
                raise _Unread
            return got
        self._memo[v] = None  # a cycle (a PHI around a loop) is unread
        p = self._compute(v)
        self._memo[v] = p
        return p

    def _compute(self, v: Value) -> Poly:
        bits = type_bits(v.type)
        if is_float(v.type) or (bits and bits < MIN_BITS):
            raise _Unread
        d = v.defn
        if d is None:
            return self._atom(v)
        op, a = d.op, d.args
        if op is O.CONST:
            val = d.attrs.get("value")
            if isinstance(val, bool) or not isinstance(val, int) or abs(val) >= 1 << 31:
                raise _Unread  # (a constant that large can wrap a 64-bit step too)
            return {(): val} if val else {}
        if op is O.SPECIAL:
            name = str(d.attrs.get("name", "")).lstrip("%")
            if name in _THREAD or name in _BLOCK:
                return {(name,): 1}
            return self._atom(v)
        if op is O.ADDR and d.attrs.get("buffer"):  # each `mov %r, buf` of one buffer: one address
            return {(f"addr:{d.attrs.get('space')}:{d.attrs['buffer']}",): 1}
        if op in (O.PARAM, O.ADDR):
            return {(f"v{v.id}",): 1}
        if op is O.PHI:
            return self._block_stride(v)
        if op is O.ADD:
            return _add(self._poly(a[0]), self._poly(a[1]))
        if op is O.SUB:
            return _add(self._poly(a[0]), self._poly(a[1]), -1)
        if op is O.NEG:
            return _add({}, self._poly(a[0]), -1)
        if op is O.MUL and not d.attrs.get("hi"):
            return _mul(self._poly(a[0]), self._poly(a[1]))
        if op is O.MAD and not d.attrs.get("hi"):
            return _add(_mul(self._poly(a[0]), self._poly(a[1])), self._poly(a[2]))
        if op is O.SHL:
            k = _const(self._poly(a[1]))
            if k is None or not 0 <= k < 32:
                return self._atom(v)
            return _mul(self._poly(a[0]), {(): 1 << k})
        if op is O.CVT:
            src = str(d.attrs.get("from_type") or (a[0].type if a else ""))
            if is_float(src) or (type_bits(src) or MIN_BITS) < MIN_BITS:
                raise _Unread
            return self._poly(a[0])
        if op is O.PURE and len(a) == 1 and str(d.attrs.get("fn", "")).startswith(("cvta", "mov", "copy")):
            return self._poly(a[0])
        return self._atom(v)

    def _block_stride(self, v: Value) -> Poly:
        """A header PHI stepped by a loop-invariant value with a constant
        bound, from a constant plus a thread part: ``start + step * trip``
        (whether the step is the block's size is for `_block_stride_scale`)."""
        d = v.defn
        cfg = self.mf.cfg
        lp = next((x for x in cfg.loops if x.header is d.block), None)
        iv = next((x for x in lp.ivs if x.phi is v), None) if lp is not None else None
        if iv is None or iv.step is not None or iv.step_value is None or iv.negated:
            raise _Unread
        bound = _constant_bound(cfg, lp, iv)
        start, step = self._poly(iv.start), self._poly(iv.step_value)
        u = _const(_thread_part(start)[1])
        if bound is None or u is None or _thread_part(step)[0]:
            raise _Unread
        trip = f"{TRIP}{lp.header.name}"
        self.trip_spans[trip] = bound - u + 1
        return _add(start, _mul(step, {(trip,): 1}))

    def _atom(self, v: Value) -> Poly:
        """``v`` as one variable, when both threads hold the same value in it."""
        d = v.defn
        if v in self.mf.info.varying:
            raise _Unread
        if d is not None and d.block is not None and self.mf.cfg.loops_around(d.block):
            raise _Unread  # uniform, but per trip
        return {(f"v{v.id}",): 1}


def _scale_of_rank(t: Poly) -> int | None:
    """``c`` when ``t`` is ``c * RANK``."""
    c = t.get(("tid.x",))
    if not c or len(t) != len(RANK) or any(t.get(m) != c * k for m, k in RANK.items()):
        return None
    return c


def _constant_bound(cfg, lp, iv) -> int | None:
    """``C`` when every trip of ``lp`` first tests ``iv < C`` (or ``<= C``) and leaves when it fails."""
    for ex in lp.exits:
        if ex.iv is not iv or ex.bound is None or ex.bound.defn is None or ex.bound.defn.op is not O.CONST:
            continue
        c = ex.bound.defn.attrs.get("value")
        stays_below = (ex.cmp in ("lt", "le", "lo", "ls") and not ex.exits_when) or \
            (ex.cmp in ("ge", "gt", "hs", "hi") and ex.exits_when)  # fmt: skip
        if isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1 << 30 and stays_below \
                and all(cfg.dominates(ex.branch.block, latch) for latch in lp.latches):  # fmt: skip
            return c
    return None


_BLOCK_SIZES = (  # (rank, the block's thread count) as monomials; the flat forms only for a flat kernel
    (RANK, ("ntid.x", "ntid.y", "ntid.z"), False),
    (RANK, ("ntid.x",), True),
    ({("tid.x",): 1}, ("ntid.x",), True),
)


def _block_stride_scale(reader: RankReader, t: Poly) -> int | None:
    """``c`` when ``t`` is ``c * (rank + S * trip)``, a block-stride
    counter's closed form with ``S`` the block's thread count, and ``c``
    times the counter's span (plus a block) below 2^30."""
    trips = {x for m in t for x in m if x.startswith(TRIP)}
    c = t.get(("tid.x",))
    if len(trips) != 1 or not c:
        return None
    [trip] = trips
    flat = reader.mf.tid_dims <= {"x"}
    for rank, size, needs_flat in _BLOCK_SIZES:
        if needs_flat and not flat:
            continue
        want = {m: c * k for m, k in rank.items()}
        want[tuple(sorted(size + (trip,)))] = c
        if t == want:
            span = reader.trip_spans.get(trip)
            return c if span is not None and abs(c) * (span + MAX_BLOCK) < 1 << 30 else None
    return None


def _thread_part(p: Poly) -> tuple[Poly, Poly]:
    t = {m: c for m, c in p.items() if any(x in _THREAD or x.startswith(TRIP) for x in m)}
    u = {m: c for m, c in p.items() if m not in t}
    return t, u


def thread_private(reader: RankReader, a: Access, b: Access) -> bool:
    """Whether two different threads' accesses ``a`` and ``b`` never overlap
    because both addresses are one uniform base plus the same multiple of
    the thread's rank (or of one block-stride counter), at least as large
    as either access is wide."""
    if a.fragment is not None or b.fragment is not None:
        return False
    pa, pb = reader.address_poly(a.addr), reader.address_poly(b.addr)
    if pa is None or pb is None:
        return False
    ta, ua = _thread_part(pa)
    tb, ub = _thread_part(pb)
    if ta != tb or ua != ub:
        return False
    c = _scale_of_rank(ta)
    if c is None:
        c = _block_stride_scale(reader, ta)
    return c is not None and max(a.width, b.width) <= abs(c) <= MAX_SCALE


OPAQUE = "x:"  # `ResidueReader`: a value it does not read, a variable of its own per thread


class ResidueReader(RankReader):
    """`RankReader` for `residue_private`: a value it cannot read (a load, a
    division, a counter of another loop, a float, a narrow step) is not the
    end of the polynomial but a variable of its own (`OPAQUE`), different in
    each thread. Whatever that value is, a term of it whose coefficient is
    a multiple of ``M`` is a multiple of ``M``: the residue argument needs
    no more of it. A cycle (a value computed from itself) is cut at the
    value that closes it, which becomes such a variable: a polynomial is
    never built from the value it defines."""

    def _poly(self, v: Value) -> Poly:
        v = self.mf.canon.map.get(v, v)
        if v in self._memo:
            got = self._memo[v]
            if got is None:
                raise _Unread  # the caller's value, not this one, becomes opaque
            return got
        self._memo[v] = None
        try:
            p = self._compute(v)
        except (_Unread, RecursionError):
            p = {(f"{OPAQUE}{v.id}",): 1}
        self._memo[v] = p
        return p

    def _block_stride(self, v: Value) -> Poly:
        """Any induction variable, as ``start + step * k``: ``k`` its trip,
        per thread, whatever bounds it (an address stepped beside a counter
        that the loop tests, a runtime bound), exact modulo the word."""
        try:
            return super()._block_stride(v)
        except _Unread:
            pass
        lp = next((x for x in self.mf.cfg.loops if x.header is v.defn.block), None)
        iv = next((x for x in lp.ivs if x.phi is v), None) if lp is not None else None
        if iv is None:
            raise _Unread
        step = {(): iv.step} if iv.step is not None else self._poly(iv.step_value)
        trip = {(f"{OPAQUE}trip:{lp.header.name}",): -1 if iv.negated else 1}
        return _add(self._poly(iv.start), _mul(step, trip))


def _per_thread(m: tuple) -> bool:
    return any(x in _THREAD or x.startswith((TRIP, OPAQUE)) for x in m)


def _two_adic(x: int, cap: int) -> int:
    """The largest power of two dividing ``x``, at most ``cap`` (0 -> ``cap``)."""
    return cap if x == 0 else min(cap, x & -x)


def residue_private(reader: ResidueReader, a: Access, b: Access, threads: int, flat: bool) -> bool:
    """Whether two different threads' accesses ``a`` and ``b`` never overlap
    because their addresses are ``c * rank`` apart modulo a power of two
    ``M`` that every other difference is a multiple of.

    The shape is a multi-dimensional array indexed by the thread in one
    dimension and by anything else in the others -- CUB's
    ``bins[pass][threadIdx.x + k * BLOCK_THREADS][part]``, unrolled into
    copies at constant offsets, inside a loop whose trips differ between
    threads, ``sh[tid][load]``:

        addr = c * rank + sum(m_i * x_i) + u + d

    with ``x_i`` anything per thread (another index, a trip, a loaded value)
    and ``m_i`` multiples of ``M``, ``u`` the same in both threads (the
    uniform terms, their coefficients the same modulo ``M`` in both
    accesses), ``d`` each access's constant. Modulo ``M`` (a power of two
    dividing 2^32, so the residue of a 32- or 64-bit address is that of its
    polynomial: see the module's docstring), the two addresses differ by
    ``c * (rank0 - rank1) + d_a - d_b``, and ``0 < |rank0 - rank1| < n``
    (``n`` the block's thread count, at most ``threads``): when no such
    difference lands within the two widths of a multiple of ``M``, the
    bytes never meet. ``flat``: the kernel is taken to run flat blocks
    (`MemoryCore.tid_dims`), so its rank is ``tid.x`` and ``tid.y``,
    ``tid.z`` are 0."""
    if a.fragment is not None or b.fragment is not None or not 1 < threads <= MAX_BLOCK:
        return False
    pa, pb = reader.address_poly(a.addr), reader.address_poly(b.addr)
    if pa is None or pb is None:
        return False
    if flat:  # tid.y = tid.z = 0: their monomials vanish
        pa, pb = ({m: k for m, k in p.items() if "tid.y" not in m and "tid.z" not in m} for p in (pa, pb))
    rank = {("tid.x",): 1} if flat else RANK
    c = pa.get(("tid.x",))
    if not c or any(p.get(m) != c * k for p in (pa, pb) for m, k in rank.items()):
        return False
    cap = 1 << 32
    M = cap
    for m in set(pa) | set(pb):
        if m in rank or m == ():
            continue
        ka, kb = pa.get(m, 0), pb.get(m, 0)
        if _per_thread(m):
            M = min(M, _two_adic(ka, cap), _two_adic(kb, cap))
        else:
            M = min(M, _two_adic(ka - kb, cap))
    wa, wb = a.width, b.width
    if M < wa + wb:
        return False
    d = pa.get((), 0) - pb.get((), 0)
    w, n = max(wa, wb), threads - 1
    if d % M == 0 and w <= abs(c) and abs(c) * n + w <= M:
        return True  # every c * (rank0 - rank1) stays at least a width from the multiples of M
    for delta in range(1, threads):
        for s in (delta, -delta):
            r = (c * s + d) % M  # a's address minus b's, modulo M
            if r < wa or r > M - wb:
                return False
    return True


def rank_in_bounds(reader: RankReader, acc: Access, threads: int) -> bool:
    """Whether every thread of a block of at most ``threads`` keeps ``acc``
    inside its array: its byte offset (PTX, a 32-bit shared address) or its
    index (Python, one dimension) is ``off + c * rank`` with ``off >= 0``,
    ``c > 0``, and the last thread's access still inside."""
    buf = acc.buffer
    if buf is None or acc.fragment is not None or not 0 < threads <= 1024:
        return False
    if acc.index is not None:
        if len(acc.index) != 1 or len(buf.shape) != 1 or not buf.shape[0]:
            return False
        p, limit = reader.address_poly(acc.index[0]), buf.shape[0] - 1
    else:
        if acc.addr is None or acc.base is None or buf.bytes is None or type_bits(acc.addr.type) != 32:
            return False  # offsets are exact modulo 2^32 only (see the module's docstring)
        pa, pb = reader.address_poly(acc.addr), reader.address_poly(acc.base)
        p = None if pa is None or pb is None else _add(pa, pb, -1)
        limit = buf.bytes - acc.width
    if p is None:
        return False
    t, u = _thread_part(p)
    c = _scale_of_rank(t)
    off = _const(u)
    return c is not None and off is not None and 0 < c <= MAX_SCALE and 0 <= off and off + c * (threads - 1) <= limit


_PASS_THROUGH = frozenset({O.ADD, O.SUB, O.MUL, O.MAD, O.SHL, O.CVT, O.PURE})


def rank_only_dims(reader: RankReader, kernel) -> set[str]:
    """The dimensions (``y``, ``z``) whose thread index the kernel reads only
    on the way to its linear rank: every use of ``tid.y`` feeds arithmetic
    that ends in a value whose thread part is a multiple of `RANK`, or in a
    comparison of two values that differ by one."""
    users: dict = {}
    reads: dict[str, list] = {"y": [], "z": []}
    for ins in kernel.instrs():
        for a in ins.args:
            users.setdefault(a, []).append(ins)
        if ins.op is O.SPECIAL and ins.results:
            name = str(ins.attrs.get("name", "")).lstrip("%")
            if name in ("tid.y", "tid.z"):
                reads[name[-1]].append(ins.result)
    verdict: dict = {}

    def feeds_rank(v, depth: int = 0) -> bool:
        if v in verdict:
            return verdict[v]
        verdict[v] = False  # a cycle does not end in a rank
        ok = depth < 16 and bool(users.get(v))
        for u in users.get(v, ()):
            if not ok:
                break
            r = u.results[0] if u.results else None
            if u.op is O.CMP and len(u.args) == 2:
                # nvcc tests `thread_rank() == 0` as `(tz * ny + ty) * nx != -tx`: a comparison of the rank
                ok = _compares_rank(reader, u.args[0], u.args[1])
            elif r is None or u.op not in _PASS_THROUGH:
                ok = False
            elif not _is_rank(reader, r):
                ok = feeds_rank(r, depth + 1)
        verdict[v] = ok
        return ok

    return {d for d, vs in reads.items() if vs and all(feeds_rank(v) for v in vs)}


def _is_rank(reader: RankReader, v) -> bool:
    p = reader.address_poly(v)
    return p is not None and _scale_of_rank(_thread_part(p)[0]) is not None


def _compares_rank(reader: RankReader, a, b) -> bool:
    pa, pb = reader.address_poly(a), reader.address_poly(b)
    return pa is not None and pb is not None and _scale_of_rank(_thread_part(_add(pa, pb, -1))[0]) is not None


def decode_private(reader: RankReader, a: Access, b: Access) -> bool:
    """Whether two different threads' Python accesses ``a`` and ``b`` never
    overlap because both index a 2-D array as ``s[x // d, x % d]`` -- the
    flat counter decoded into a row and a column, the commonest way a block
    stages a runtime-shaped tile (``for x in range(t, k * d, blockDim.x)``)
    -- with one ``x`` that differs between the two threads.

    What the proof relies on, each checked here or taken from the race
    query's own terms:

    - ``x`` differs between the threads and is never negative
      (`_distinct_counter`): a block-stride counter ``u + rank + S * trip``
      (``u >= 0`` a constant, ``S`` the block's thread count, any bound:
      ``rank0 - rank1 + S * (k0 - k1)`` is never 0 as ``|rank0 - rank1| <
      S``; the counter taken not to wrap, as `Query.counted` takes every
      induction variable), or ``u + c * rank`` with ``0 < c <= MAX_SCALE``.
    - ``d`` is the same positive value in both threads (`_positive_divisor`):
      a positive constant, or an extent of a kernel argument (which the
      solver, too, takes in [0, 2^31)) that is not 0 where the access runs:
      the access lies in the counter's loop after its test ``x < B`` (signed
      or not), ``B`` a product with ``d`` as a factor, so ``d == 0`` would
      make ``B == 0`` and no ``x >= 0`` passes. (Numba gives 0 for both
      ``x // 0`` and ``x % 0``: every thread would meet at ``s[0, 0]``.)
    - Python's floor ``//`` and ``%`` with ``d > 0``: ``q = x // d >= 0``,
      ``0 <= r = x % d < d`` and ``x = q * d + r`` exactly, so two threads'
      ``(q, r)`` differ.
    - the race query takes every Python index inside its dimension
      (`Query.in_bounds`, ``-dim <= i < dim``: an access that leaves the
      array is TL202's finding, not a race on it). With ``q, r >= 0`` no
      index wraps, ``q < rows`` and ``r < cols``, so the element ``q * cols
      + r`` is one-to-one in ``(q, r)``: without that bound ``r >= cols``
      would reach into the next row (``d = cols + 1``: ``(0, cols)`` and
      ``(1, 0)`` are one element).
    - each access at most one element wide, both of one array and element."""
    buf = a.buffer
    if a.fragment is not None or b.fragment is not None or buf is None or b.buffer is not buf:
        return False
    if a.root != b.root:
        return False
    k = reader.mf.k
    if k.language != "python" or buf.dynamic or len(buf.shape) != 2 or not all(buf.shape):
        return False
    if a.elem != b.elem or max(a.width, b.width) > a.elem:
        return False
    da, db = _decoded(reader, a.index), _decoded(reader, b.index)
    if da is None or db is None or da[0] is not db[0] or not _same_divisor(da[1], db[1]):
        return False
    x, d = da
    return _distinct_counter(reader, x) and _positive_divisor(reader, x, d, a) and \
        _positive_divisor(reader, x, db[1], b)  # fmt: skip


def _same_divisor(d, e) -> bool:
    """One value, or two constants of one value (each ``2`` is its own CONST)."""
    if d is e:
        return True
    cd, ce = (v.defn.attrs.get("value") if v.defn is not None and v.defn.op is O.CONST else None
              for v in (d, e))  # fmt: skip
    return cd is not None and type(cd) is type(ce) and cd == ce


def _canon(reader: RankReader, v):
    return reader.mf.canon.map.get(v, v)


def _decoded(reader: RankReader, index) -> tuple | None:
    """``(x, d)`` when ``index`` is ``(x // d, x % d)``, integer floor
    division and modulo of one ``x`` by one ``d``."""
    if index is None or len(index) != 2:
        return None
    q, r = (_canon(reader, v) for v in index)
    dq, dr = q.defn, r.defn
    if dq is None or dr is None or dq.op is not O.DIV or dr.op is not O.REM or len(dq.args) != 2 \
            or len(dr.args) != 2 or not (dq.attrs.get("floor") and dr.attrs.get("floor")):  # fmt: skip
        return None
    x, d = (_canon(reader, v) for v in dq.args)
    if _canon(reader, dr.args[0]) is not x or not _same_divisor(_canon(reader, dr.args[1]), d):
        return None
    if any(is_float(v.type) or (type_bits(v.type) or 0) < MIN_BITS for v in (q, r, x, d)):
        return None
    return x, d


def _distinct_counter(reader: RankReader, x) -> bool:
    """Whether ``x`` is never negative and differs between any two threads
    of a block (see `decode_private`)."""
    flat = reader.mf.tid_dims <= {"x"}
    d = x.defn
    if d is not None and d.op is O.PHI:
        cfg = reader.mf.cfg
        lp = next((lp for lp in cfg.loops if lp.header is d.block), None)
        iv = next((iv for iv in lp.ivs if _canon(reader, iv.phi) is x), None) if lp is not None else None
        if iv is None or iv.step is not None or iv.step_value is None or iv.negated:
            return False
        start, step = reader.address_poly(iv.start), reader.address_poly(iv.step_value)
        if start is None or step is None:
            return False
        t, u = _thread_part(start)
        u0 = _const(u)
        return u0 is not None and u0 >= 0 and any(
            t == rank and step == {tuple(sorted(size)): 1}
            for rank, size, needs_flat in _BLOCK_SIZES if flat or not needs_flat)  # fmt: skip
    p = reader.address_poly(x)
    if p is None:
        return False
    t, u = _thread_part(p)
    u0 = _const(u)
    c = _scale_of_rank(t)
    if c is None and flat and len(t) == 1:
        c = t.get(("tid.x",))
    return u0 is not None and u0 >= 0 and c is not None and 0 < c <= MAX_SCALE


def _positive_divisor(reader: RankReader, x, d, acc: Access) -> bool:
    """Whether ``d`` is the same positive value in both threads wherever
    ``acc`` runs (see `decode_private`)."""
    dd = d.defn
    if dd is not None and dd.op is O.CONST:
        val = dd.attrs.get("value")
        return isinstance(val, int) and not isinstance(val, bool) and 0 < val < 1 << 31
    k = reader.mf.k
    if dd is None or dd.op is not O.PARAM or not k.is_entry or ".shape[" not in str(dd.attrs.get("name", "")):
        return False
    xd, cfg = x.defn, reader.mf.cfg
    if xd is None or xd.op is not O.PHI:
        return False
    lp = next((lp for lp in cfg.loops if lp.header is xd.block), None)
    blk = acc.instr.block
    if lp is None or blk is lp.header or blk not in lp.blocks:
        return False
    for ex in lp.exits:
        if ex.iv is None or _canon(reader, ex.iv.phi) is not x or ex.uses_next:
            continue
        if ex.branch.block is not lp.header:
            continue
        below = (ex.cmp in ("lt", "lo") and not ex.exits_when) or (ex.cmp in ("ge", "hs") and ex.exits_when)
        if below and ex.bound is not None and _multiple_of(reader, ex.bound, d):
            return True
    return False


def _multiple_of(reader: RankReader, v, d, depth: int = 0) -> bool:
    """Whether ``v`` is 0 whenever ``d`` is: ``d`` itself, or a product
    (full-width or wide) or integer conversion of such a value."""
    v = _canon(reader, v)
    if v is d:
        return True
    dv = v.defn
    if dv is None or depth > 8 or is_float(v.type):
        return False
    if dv.op is O.MUL and not dv.attrs.get("hi"):
        return any(_multiple_of(reader, w, d, depth + 1) for w in dv.args)
    if dv.op is O.CVT and dv.args and not is_float(dv.args[0].type):
        return _multiple_of(reader, dv.args[0], d, depth + 1)
    return False
