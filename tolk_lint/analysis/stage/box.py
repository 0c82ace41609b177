"""The box an operand's loads span over a workgroup's threads and lanes at
one trip of its loop (`box_of`), and whether it can be staged.

Each monomial of the loads' addresses (see `index`) without a loop trip is
one *axis* of the tile (the row pitch ``K`` of ``A[row * K + col]`` is one,
the constant monomial another). The points of the box are enumerated exactly
(every thread of the launch shape, or every warp for ``wmma``, times every
lane), so the tile's extent, stride and the number of times each element is
read today are exact. The operand is stageable when

- every monomial holding a loop trip has the same coefficient at every point
  (no thread term reads another range);
- the points, restricted to the thread digits (bits of ``tid``) and lanes the
  address reads, map to distinct elements — *injective*, proved with Z3
  (each element read once) — and fill the box they span — *dense*: with
  injectivity, the count of points equals the volume of the box.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from tolk_lint import budget
from tolk_lint.analysis.smt.solver import check_within_budget, z3mod
from tolk_lint.analysis.stage.index import IndexEval, thread_env
from tolk_lint.analysis.stage.polynomials import (
    Z3_BITS,
    ZERO,
    Atom,
    Poly,
    Unstageable,
    is_pow2,
    lazy_numpy,
    p_add,
    p_str,
    tf_values,
    tf_z3,
)
from tolk_lint.ir.nodes import Instr

log = logging.getLogger("tolk_lint.stage")

Z3_MAX_LEAVES = 8  # more loads than this in one box: the exhaustive enumeration is the proof
Z3_MAX_POINTS = 1 << 16
MAX_POINTS = 1 << 22  # threads x lanes enumerated for a box (each a few int64 arrays of this many elements)


@dataclass
class Leaf:
    """One load feeding an operand: its address, and the lanes it reads
    (``lanes``: lane variable -> extent; ``lane_offset`` in the address's
    unit). ``result`` is the vector lane a LOAD result feeds (or None)."""

    instr: Instr
    address: Poly
    lanes: dict[str, int]
    lane_offset: Poly
    elem_bytes: int
    result: int | None = None


@dataclass
class Dim:
    """A dimension of the box: what varies (``tid.x>>6``, ``frag.r``), how
    many values it takes and how far apart they lie (in elements)."""

    name: str
    extent: int
    stride: str
    kind: str  # "thread" | "warp" | "lane" | "load"

    def __str__(self) -> str:
        return f"{self.name}:{self.extent}×{self.stride}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "extent": self.extent, "stride": self.stride, "kind": self.kind}


@dataclass
class Box:
    dims: list[Dim]
    shape: tuple[int, ...]
    elements: int  # distinct elements read a trip
    points: int  # reads a trip (threads x lanes)
    rereads: int
    injective: bool
    dense: bool
    proof: str  # "z3", "enumeration"
    witness: str | None = None
    axes: list[tuple[str, ...]] = field(default_factory=list)  # the monomial of each entry of ``shape``


@dataclass
class _Digit:
    name: str
    var: str
    extent: int
    shift: int  # bit position in ``var`` (bits of a power-of-two extent), or -1 for the whole var
    kind: str


def _digits(block: tuple[int, int, int], warp_level: bool, lanes: dict[str, int], nleaves: int) -> list[_Digit]:
    out: list[_Digit] = []
    if warp_level:
        nw = -(-(block[0] * block[1] * block[2]) // 32)
        if nw > 1:
            if is_pow2(nw):
                out += [_Digit(f"warp.b{i}", "warp", 2, i, "warp") for i in range(nw.bit_length() - 1)]
            else:
                out.append(_Digit("warp", "warp", nw, -1, "warp"))
    else:
        for axis, e in zip("xyz", block):
            var = f"tid.{axis}"
            if e <= 1:
                continue
            if is_pow2(e):
                out += [_Digit(f"{var}.b{i}", var, 2, i, "thread") for i in range(e.bit_length() - 1)]
            else:
                out.append(_Digit(var, var, e, -1, "thread"))
    for name, e in lanes.items():
        if e > 1:
            out.append(_Digit(name, name, e, -1, "lane"))
    if nleaves > 1:
        out.append(_Digit("load", "load", nleaves, -1, "load"))
    return out


def _digit_env(digits: list[_Digit], block: tuple[int, int, int], warp_level: bool) -> dict[str, Any]:
    np = lazy_numpy()
    digits = [d for d in digits if d.var != "load"]  # the load digit comes last: stacked, not evaluated
    n = len(digits)
    shape = tuple(d.extent for d in digits)
    vars_: dict[str, Any] = {}
    for i, d in enumerate(digits):
        a = np.arange(d.extent, dtype="int64").reshape([1] * i + [d.extent] + [1] * (n - i - 1))
        val = a << d.shift if d.shift >= 0 else a
        vars_[d.var] = vars_.get(d.var, 0) + val
    env: dict[str, Any] = {}
    bx, by, _ = block
    zero = np.zeros(shape, dtype="int64") if shape else np.zeros((), dtype="int64")
    if warp_level:
        lin = vars_.get("warp", 0) * 32 + zero
        env.update({"tid.x": lin % bx, "tid.y": (lin // bx) % by, "tid.z": lin // (bx * by)})
    for k, v in vars_.items():
        if k != "warp":
            env[k] = v + zero
    for axis in "xyz":
        env.setdefault(f"tid.{axis}", zero)
    return env


def _z3_env(digits: list[_Digit], block, warp_level: bool, suffix: str, relevant: set[int], W: int = Z3_BITS):
    """Z3 bit-vector terms for tid.* and lane variables over fresh digit
    variables (irrelevant digits fixed to 0), plus the range constraints."""
    z3 = z3mod()

    vals: dict[str, Any] = {}
    cons = []
    dvars = []
    for i, d in enumerate(digits):
        if i not in relevant:
            dvars.append(z3.BitVecVal(0, W))
            continue
        x = z3.BitVec(f"{d.name}{suffix}", W)
        cons += [z3.ULT(x, d.extent)]
        dvars.append(x)
        if d.var == "load":
            continue
        term = x * (1 << d.shift) if d.shift >= 0 else x
        vals[d.var] = vals[d.var] + term if d.var in vals else term
    bx, by, _ = block
    env: dict[str, Any] = {}
    zero = z3.BitVecVal(0, W)
    if warp_level:
        lin = vals.get("warp", zero) * 32
        env.update({"tid.x": z3.URem(lin, bx), "tid.y": z3.URem(z3.UDiv(lin, bx), by),
                    "tid.z": z3.UDiv(lin, bx * by)})  # fmt: skip
    for k, v in vals.items():
        if k != "warp":
            env[k] = v
    for axis in "xyz":
        env.setdefault(f"tid.{axis}", zero)
    for d in digits:
        if d.kind == "lane":
            env.setdefault(d.var, zero)
    load = next((dvars[i] for i, d in enumerate(digits) if d.var == "load"), zero)
    return env, cons, dvars, load


def box_of(
    leaves: list[Leaf],
    ev: IndexEval,
    warp_level: bool,
    unit: int,
    rlimit: int = 2_000_000,
    prove: bool = True,
) -> Box:
    """The box ``leaves`` read at one trip, over every thread (every warp
    when ``warp_level``) of the launch and every lane. ``unit`` is the size
    of an element in the address's unit (bytes for PTX, 1 for Python)."""
    block = ev.block
    if block is None:
        raise Unstageable("the launch's block shape is unknown (pass --block or a `launch` comment)")
    budget.check("the staging analysis (a tile's box)")
    key = _box_key(leaves, ev, warp_level, unit, prove)
    got = ev.box_cache.get(key)
    if isinstance(got, Box):
        return dataclasses.replace(got)
    if isinstance(got, str):
        raise Unstageable(got)
    try:
        box = _box_of(leaves, ev, warp_level, unit, rlimit, prove)
    except Unstageable as e:
        ev.box_cache[key] = str(e)
        raise
    ev.box_cache[key] = box
    return dataclasses.replace(box)


def _strip_const(t):
    """A TF without its additive constant (boxes do not depend on it)."""
    while t[0] == "add" and t[2][0] == "c":
        t = t[1]
    return t


def _box_key(leaves: list[Leaf], ev: IndexEval, warp_level: bool, unit: int, prove: bool) -> tuple:
    """What a box depends on: each leaf's non-constant thread/lane terms per
    monomial (the loop's range monomials and additive constants dropped), its
    lanes, and how the box is enumerated. Unrolled copies of a load share it."""
    parts = []
    for lf in leaves:
        p = p_add(lf.address, lf.lane_offset)
        terms = []
        for m, c in sorted(p.items()):
            if any(ev.atoms.get(a, Atom(a, a, "uniform")).kind == "range" for a in m):
                terms.append((m, "R", c))  # must be constant: keep it whole
            elif c[0] != "c":
                terms.append((m, _strip_const(c)))
        parts.append((tuple(terms), tuple(sorted(lf.lanes.items())), lf.elem_bytes))
    return (tuple(parts), warp_level, unit, prove, tuple(ev.block or ()))


def _box_of(leaves, ev, warp_level, unit, rlimit, prove) -> Box:
    np = lazy_numpy()
    block = ev.block
    lanes: dict[str, int] = {}
    for lf in leaves:
        for k, e in lf.lanes.items():
            lanes[k] = max(lanes.get(k, 1), e)
    polys = [p_add(lf.address, lf.lane_offset) for lf in leaves]
    digits = _digits(block, warp_level, lanes, len(leaves))
    points = math.prod(d.extent for d in digits)
    if points > MAX_POINTS:  # every point is an element of each array below: bounded memory
        raise Unstageable(f"its threads and lanes are too many to enumerate ({points:,} points, at most {MAX_POINTS:,})")
    env = _digit_env(digits, block, warp_level)
    shape = tuple(d.extent for d in digits)
    ranged = {m for p in polys for m in p if any(ev.atoms[a].kind == "range" for a in m if a in ev.atoms)}
    comps = sorted({m for p in polys for m in p} - ranged, key=lambda m: (0 if m else 1, m))
    if warp_level:
        _check_warp_uniform(leaves, ev)

    def values(m, stack_leaves=True):
        per = []
        for p in polys:
            t = p.get(m, ZERO)
            arr = tf_values(t, env)
            per.append(np.broadcast_to(arr, shape[: len(shape) - (1 if len(leaves) > 1 else 0)]))
        if len(leaves) > 1:
            return np.stack(per, axis=-1)
        return per[0]

    for m in ranged:
        v = values(m)
        if v.size and v.min() != v.max():
            names = "·".join(ev.atoms[a].name for a in m)
            raise Unstageable(f"a thread or lane term multiplies the loop's range `{names}`: mixed terms")
    allvals = {m: values(m) for m in comps}
    comps = [m for m in comps if allvals[m].size and allvals[m].min() != allvals[m].max()]
    # the tile's axes: the monomials a thread, lane or the loop's range moves along
    strip = {tuple(a for a in m if not (a in ev.atoms and ev.atoms[a].kind == "range")) for m in ranged}
    axes = sorted(set(comps) | strip, key=lambda m: (0 if m else 1, m))
    if not comps:
        vals = np.zeros((1,) + shape, dtype="int64")
        comps = [()]
    else:
        vals = np.stack([allvals[m] for m in comps])
    ncomp = len(comps)
    relevant = set()
    for i in range(len(digits)):
        if shape[i] > 1 and np.any(np.diff(vals, axis=1 + i) != 0):
            relevant.add(i)
    index = tuple(slice(None) if i in relevant else slice(0, 1) for i in range(len(digits)))
    sub = vals[(slice(None),) + index].reshape(ncomp, -1).T
    total = int(np.prod(shape)) if shape else 1
    # the digits the address does not read change nothing: count on the rest
    n_distinct = len(np.unique(sub, axis=0)) if len(sub) > 1 else len(sub)
    injective = n_distinct == len(sub)
    witness = None
    if not injective:
        witness = _collision(sub, digits, relevant, index, shape)
    lo = vals.reshape(ncomp, -1).min(axis=1)
    hi = vals.reshape(ncomp, -1).max(axis=1)
    extents = []
    for c in range(ncomp):
        g = int(np.gcd.reduce(vals[c].reshape(-1) - lo[c]))
        extents.append(1 if g == 0 else int((hi[c] - lo[c]) // g) + 1)
    volume = int(np.prod(extents))
    # dense box of strided dimensions: each relevant digit adds its own
    # offset, whatever the others are (separable), and no two points meet
    # (injective); then the points are exactly the box of the digits' ranges
    separable = _separable(vals, len(digits))
    dense = injective and separable
    axes_dense = dense and n_distinct == volume  # also a dense box along the monomial axes
    proof = "enumeration"
    small = len(leaves) <= Z3_MAX_LEAVES and len(sub) <= Z3_MAX_POINTS
    if prove and small and injective and len(sub) > 1:
        big = max((int(np.abs(vals).max()) if vals.size else 0), _tf_const_max(polys))
        bits = 32 if big < (1 << 27) else 64
        origin = vals[(slice(None),) + (0,) * len(digits)] if digits else vals[:, ...]
        table = (vals - origin.reshape((-1,) + (1,) * len(digits))).tobytes()
        verdict = _z3_injective(polys, comps, digits, block, warp_level, relevant, rlimit, bits,
                                (table, vals.shape))  # fmt: skip
        if verdict is True:
            proof = "z3"
        elif verdict is False:  # cannot happen when enumeration is exact; keep the refutation
            injective = dense = False
            proof = "z3"
    dims = _dims(vals, comps, digits, relevant, ev, unit)
    ext = dict(zip(comps, extents))
    if axes_dense or not dense:
        shape_out = tuple(ext.get(m, 1) for m in axes) or (1,)
    else:  # strided in one address axis: the dimensions, outermost first
        shape_out = tuple(d.extent for d in reversed(dims)) or (1,)
        axes = []
    return Box(dims, shape_out, n_distinct, total, max(1, total // max(1, n_distinct)), injective, dense, proof, witness,
               axes if axes else [()])  # fmt: skip


def _separable(vals, ndig: int) -> bool:
    """Whether ``vals`` (components x digit grid) is the origin plus one
    contribution per digit: vals[x] = vals[0] + sum_d (vals[x_d e_d] - vals[0])."""
    np = lazy_numpy()
    if ndig == 0:
        return True
    origin = vals[(slice(None),) + (0,) * ndig]
    total = np.zeros_like(vals) + origin.reshape((-1,) + (1,) * ndig)
    for d in range(ndig):
        idx = [0] * ndig
        idx[d] = slice(None)
        line = vals[(slice(None),) + tuple(idx)] - origin.reshape(-1, 1)
        shape = [vals.shape[0]] + [1] * ndig
        shape[1 + d] = vals.shape[1 + d]
        total = total + line.reshape(shape)
    return bool(np.array_equal(total, vals))


def _check_warp_uniform(leaves: list[Leaf], ev: IndexEval) -> None:
    np = lazy_numpy()
    block = ev.block
    env = thread_env(block)
    nthreads = block[0] * block[1] * block[2]
    for lf in leaves:
        for t in lf.address.values():
            arr = np.broadcast_to(tf_values(t, env), (nthreads,))
            pad = (-nthreads) % 32
            if pad:
                arr = np.concatenate([arr, np.repeat(arr[-1:], pad)])
            w = arr.reshape(-1, 32)
            if np.any(w != w[:, :1]):
                raise Unstageable("a warp-wide fragment load whose address differs between the lanes of a warp")


def _collision(sub, digits, relevant, index, shape) -> str:
    np = lazy_numpy()
    _, first, counts = np.unique(sub, axis=0, return_index=True, return_counts=True)
    rows = [i for i, c in zip(first, counts) if c > 1]
    if not rows:
        return ""
    target = sub[rows[0]]
    same = np.nonzero(np.all(sub == target, axis=1))[0][:2]
    rel_shape = tuple(shape[i] for i in range(len(digits)) if i in relevant)
    rel_digits = [d for i, d in enumerate(digits) if i in relevant]
    out = []
    for flat in same:
        coords = np.unravel_index(int(flat), rel_shape) if rel_shape else ()
        vals: dict[str, int] = {}
        for d, c in zip(rel_digits, coords):
            vals[d.var] = vals.get(d.var, 0) + (int(c) << d.shift if d.shift >= 0 else int(c))
        out.append(", ".join(f"{k}={v}" for k, v in vals.items()) or "origin")
    return " and ".join(f"({o})" for o in out) + " read the same element"


_Z3_CACHE: dict[tuple, bool | None] = {}


def _tf_const_max(polys) -> int:
    out = 0
    stack = [c for p in polys for c in p.values()]
    while stack:
        t = stack.pop()
        if t[0] == "c":
            out = max(out, abs(t[1]))
        elif t[0] != "v":
            stack.extend(t[1:])
    return out


def _z3_injective(polys, comps, digits, block, warp_level, relevant, rlimit, bits=Z3_BITS, table=None) -> bool | None:
    """Prove that distinct relevant digits give distinct elements. Cached by
    the table of offsets the digits give (``table``), or by structure: the
    unrolled copies of one load ask the same question, and formulas equal on
    every point of the finite domain share their answer."""
    key = (
        bits,
        table if table is not None else tuple(tuple(p.get(m, ZERO) for m in comps) for p in polys),
        tuple((d.var, d.extent, d.shift) for d in digits),
        tuple(block),
        warp_level,
        tuple(sorted(relevant)),
        rlimit,
    )
    if key in _Z3_CACHE:
        return _Z3_CACHE[key]
    got = _z3_injective_uncached(polys, comps, digits, block, warp_level, relevant, rlimit, bits)
    if len(_Z3_CACHE) > 4096:
        _Z3_CACHE.clear()
    _Z3_CACHE[key] = got
    return got


def _z3_injective_uncached(polys, comps, digits, block, warp_level, relevant, rlimit, bits) -> bool | None:
    try:
        z3 = z3mod()
    except RuntimeError:  # pragma: no cover - z3 is a dependency
        return None
    try:
        envx, cx, dx, lx = _z3_env(digits, block, warp_level, "_1", relevant, bits)
        envy, cy, dy, ly = _z3_env(digits, block, warp_level, "_2", relevant, bits)

        def comp(env, load, m):
            terms = [tf_z3(p.get(m, ZERO), env, bits) for p in polys]
            out = terms[-1]
            for i in range(len(terms) - 2, -1, -1):
                out = z3.If(load == i, terms[i], out)
            return out

        s = z3.Solver()
        s.set("rlimit", rlimit)
        s.set("random_seed", 0)
        s.add(*cx, *cy)
        s.add(z3.Or([a != b for i, (a, b) in enumerate(zip(dx, dy)) if i in relevant]))
        for m in comps:
            s.add(comp(envx, lx, m) == comp(envy, ly, m))
        r = check_within_budget(s)
    except z3.Z3Exception as e:  # pragma: no cover - defensive
        log.debug("z3 failed on an injectivity query: %s", e)
        return None
    if r == z3.unsat:
        return True
    if r == z3.sat:
        return False
    return None


def _dims(vals, comps, digits, relevant, ev: IndexEval, unit: int) -> list[Dim]:
    """The box's dimensions: each relevant digit (runs of bits of one thread
    index merged when they step linearly), its extent and its stride."""
    n = len(digits)
    origin = vals[(slice(None),) + (0,) * n] if n else vals[:, ...]

    def delta(i: int, k: int = 1):
        idx = [0] * n
        idx[i] = k
        return [int(x) for x in (vals[(slice(None),) + tuple(idx)] - origin)]

    out: list[Dim] = []
    rel = sorted(relevant)
    j = 0
    while j < len(rel):
        i = rel[j]
        d = digits[i]
        run = [i]
        while (
            d.shift >= 0
            and j + len(run) < len(rel)
            and digits[rel[j + len(run)]].var == d.var
            and digits[rel[j + len(run)]].shift == digits[run[-1]].shift + 1
            and delta(rel[j + len(run)]) == [2 * x for x in delta(run[-1])]
        ):
            run.append(rel[j + len(run)])
        j += len(run)
        stride = delta(i)
        poly = {m: ("c", s) for m, s in zip(comps, stride) if s}
        unit_ok = all(s % unit == 0 for s in stride) if unit > 1 else True
        sstr = p_str(poly, ev.atoms, unit if unit_ok else 1) + ("" if unit_ok or unit == 1 else " B")
        if d.shift >= 0:
            lo, nbits = d.shift, len(run)
            full = sum(1 for x in digits if x.var == d.var)
            name = d.var if (lo == 0 and nbits == full) else (
                f"{d.var}>>{lo}" if lo + nbits == full else (
                    f"{d.var}&{(1 << nbits) - 1}" if lo == 0 else f"({d.var}>>{lo})&{(1 << nbits) - 1}"))
            extent = 1 << nbits
        else:
            name, extent = d.var, d.extent
        out.append(Dim(name.replace("warp", "warp") , extent, sstr, d.kind))
    return out
