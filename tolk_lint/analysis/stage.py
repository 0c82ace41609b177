"""Staging: which operands could be read through shared memory, at what depth.

The semantics are ``shared/seeds/tolk-stage.txt`` (Tolk.Stage), restated in
``shared/research/staging.md`` §1.3, with the decisions of §1.4 and of
``shared/acceptance/README.md`` convention 5. The public functions are pure
functions of a kernel (its IR), a `Target` and the settings:

- `depth` (target, tiles, used): how many stages the tiles of one core take:
  2 where the target copies asynchronously (cp.async, sm_80+) and two stages
  fit the shared budget beside ``used``; 1 where one does; 0 where neither,
  where there is no tile, where a tile holds less than one 16-byte copy, where
  the target has no workgroup threads or no shared memory, or where staging
  is turned off (``Settings.stage``). The budget is the static 48 KiB a block
  may declare, or the opt-in maximum when ``Settings.shared_budget`` is
  ``"optin"``.
- `operands` (kernel, target): one `OperandVerdict` per operand of each
  tensor core (PTX ``mma``/``wmma.mma``) and of each sum of products
  (Python ``acc += A[i, k] * B[k, j]``): stageable or not, and why not.
- `admits` (kernel, target): every such operand is stageable.
- `tile` (...): the splits that give a core its staged tile (warp tile 64x64,
  2x2 warps, K unrolled to 32, halving while too few threads are kept).
- `core_threads` (target): the thread count `tile` measures against.
- `tile_copies` (kernel, target): loops that copy a tile global -> registers
  -> shared at every trip, then barrier and read it (TL302, TL303).
- `decodes` (kernel, target): host kernels whose decoded operand is decoded
  again in every trip of an output loop that does not read it (TL401).
- `staging_facts` (kernel, module, settings, target): all of the above for
  one kernel, computed once (``RuleContext.staging()`` caches it).

How an operand's tile is found
------------------------------
Each operand is traced back from the core through packs, extracts,
conversions and gates (a selection of 0) to the loads that read it. Each
load's address (PTX: bytes; Python: the index tuple, in elements) is turned
into a polynomial over *atoms* whose coefficients are *thread functions*:

    address = sum over monomials m of  coef_m(threads, lanes) * m(atoms)

Atoms are the values the same for every thread of a workgroup (parameters,
``ctaid``, values loaded at a uniform address, a shared buffer's address)
and the trips of loops (an induction variable ``i = start + step * trip``).
Thread functions are small expressions of ``tid.x/y/z`` (``laneid`` and
``warpid`` are derived from them) and of the lanes of the access (vector
lanes, the rows and columns of a ``wmma`` fragment). A bit-field of a thread
index (``tid.x >> 5``, ``tid.x & 3``) stays a thread function; a bit-field of
a sum of a thread term and a uniform term is split when the uniform term is a
multiple of the divisor and refused ("mixed") otherwise.

Each monomial without a loop trip is one *axis* of the tile (the row pitch
``K`` of ``A[row * K + col]`` is one, the constant monomial another). The
points of the box are enumerated exactly (every thread of the launch shape,
or every warp for ``wmma``, times every lane), so the tile's extent, stride
and the number of times each element is read today are exact. The operand is
stageable when

- every monomial holding a loop trip has the same coefficient at every point
  (no thread term reads another range);
- the points, restricted to the thread digits (bits of ``tid``) and lanes the
  address reads, map to distinct elements — *injective*, proved with Z3
  (each element read once) — and fill the box they span — *dense*: with
  injectivity, the count of points equals the volume of the box.

Every verdict that is not stageable says why. Arithmetic is taken over the
integers (addresses do not wrap).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float, type_bits
from tolk_lint.ir.opcodes import Opcode
from tolk_lint.target import KIB, Target, parse_target

if TYPE_CHECKING:
    from tolk_lint.config import Settings
    from tolk_lint.ir.cfg import Loop
    from tolk_lint.ir.nodes import Module

log = logging.getLogger("tolk_lint.stage")

O = Opcode

COPY_BYTES = 16  # one cp.async.cg chunk: the least a staged tile must hold
PANEL_MAX = 64 * KIB  # a decoded panel lives on the host thread's stack
WARP_TILE = 64  # outputs a warp holds on each of M and N (by upcasts)
WARP_TILE_MIN = 32  # halving stops here
K_UNROLL = 32  # elements of K a trip, where K divides by it
SCHEDULERS = 4  # warp schedulers (and tensor-core partitions) of an SM since Volta
WARPS_PER_SCHEDULER = 2  # warps a scheduler keeps so one's loads hide behind another's cores
# SMs of the flagship data-centre part of each architecture (what `core_threads`
# assumes when the device is not named): T4, A100, A10/RTX 3090, Orin, L40S,
# H100 SXM, B200, RTX 5090.
TYPICAL_SMS = {75: 40, 80: 108, 86: 84, 87: 16, 89: 142, 90: 132, 100: 148, 120: 170}
SIDE_BY_SIDE = ("sm_75", "sm_80", "sm_90")

UPCAST, LOCAL, UNROLL = "upcast", "local", "unroll"  # split kinds (Opt.target)


# =============================================================================
# depth
# =============================================================================


def depth(target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False) -> int:
    """The number of stages a core whose staged operands' tiles hold ``tiles``
    bytes takes on ``target``, beside ``used`` bytes of shared memory other
    buffers take (tolk-stage ``depth``). See `depth_reason` for why."""
    return depth_reason(target, tiles, used, stage, optin)[0]


def depth_reason(
    target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False
) -> tuple[int, str]:
    """`depth` and a sentence saying why it is that."""
    tiles = list(tiles)
    if not stage:
        return 0, "staging is turned off (`stage = false`)"
    if target.is_host or not target.has_local:
        return 0, f"{target.name} has no workgroup threads to copy a tile"
    if not target.has_shared:
        return 0, f"{target.name} has no shared memory"
    if not tiles:
        return 0, "no tile to stage"
    small = [t for t in tiles if t < COPY_BYTES]
    if small:
        return 0, f"a tile of {small[0]} bytes holds less than one {COPY_BYTES}-byte copy"
    budget = target.shared_budget(optin)
    one = sum(tiles)
    kind = "opt-in" if optin else "static"
    if target.async_copy and used + 2 * one <= budget:
        return 2, f"two stages ({_kib(2 * one)}{_beside(used)}) fit the {_kib(budget)} {kind} budget"
    if used + one <= budget:
        if target.async_copy:
            return 1, (
                f"two stages ({_kib(2 * one)}{_beside(used)}) exceed the {_kib(budget)} {kind} budget; one fits"
            )
        return 1, f"{target.name} has no asynchronous copy, so one stage ({_kib(one)}{_beside(used)})"
    return 0, f"one stage ({_kib(one)}{_beside(used)}) exceeds the {_kib(budget)} {kind} budget"


def _beside(used: int) -> str:
    return f" beside {_kib(used)} in use" if used else ""


def _kib(n: int) -> str:
    if n % KIB == 0:
        return f"{n // KIB} KiB"
    if n >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{n} B"


def limited_by_budget(
    target: Target, tiles: Iterable[int], used: int = 0, stage: bool = True, optin: bool = False
) -> bool:
    """Whether the shared budget, not the target or the tiles, holds the depth
    below 2: with an unbounded budget it would be 2 (TL303's condition)."""
    import dataclasses

    tiles = list(tiles)
    if depth(target, tiles, used, stage, optin) >= 2:
        return False
    huge = dataclasses.replace(target, shared_static=1 << 40, shared_optin=1 << 40)
    return depth(huge, tiles, used, stage, optin) == 2


def budget_bytes(target: Target, optin: bool = False) -> int:
    return target.shared_budget(optin) if target.has_shared else 0


# =============================================================================
# tile
# =============================================================================


def core_threads(target: Target, sms: int | None = None) -> int:
    """The threads a kernel must keep in flight to keep every tensor core of
    the device busy without a pipeline: ``sms`` (the streaming
    multiprocessors; by default the flagship part of the architecture, see
    ``TYPICAL_SMS``) x 4 schedulers x 2 warps a scheduler x the warp size.

    Two warps a scheduler is the least that lets one warp's global loads hide
    behind the other's ``mma``; a two-stage pipeline overlaps a warp's copies
    with its own cores, so `tile` asks for ``core_threads / stages``."""
    if target.is_host:
        return 1
    if sms is None:
        cc = target.compute_capability
        known = max((k for k in TYPICAL_SMS if k <= cc), default=min(TYPICAL_SMS))
        sms = TYPICAL_SMS[known]
    return sms * SCHEDULERS * WARPS_PER_SCHEDULER * target.warp_size


@dataclass(frozen=True)
class CoreShape:
    """A tensor core's own tile: N, M, K elements (``mma.m16n8k16``: 8, 16, 16)."""

    n: int
    m: int
    k: int

    @staticmethod
    def parse(shape: str) -> CoreShape | None:
        mt = re.search(r"m(\d+)n(\d+)k(\d+)", shape or "")
        return CoreShape(int(mt.group(2)), int(mt.group(1)), int(mt.group(3))) if mt else None


def _pow2_upcast(side: int, own: int, size: int) -> int:
    """The largest power of two u with own * u <= side and own * u dividing size (0: unknown)."""
    u = 1
    while own * u * 2 <= side and (size == 0 or size % (own * u * 2) == 0):
        u *= 2
    return u


def tile(
    target: Target,
    core: CoreShape,
    *,
    core_threads: int,
    workgroups: int | None,
    sizes: tuple[int, int, int],
    in_run: Callable[[int], bool] = lambda u: True,
    stages: int,
    admitted: bool = True,
) -> tuple[list[tuple[int, int, str]], bool] | None:
    """The splits of a tensor core's staged tile, as ``(axis, amount, kind)``
    with axis 0, 1, 2 for the core's N, M, K and kind ``upcast``, ``local`` or
    ``unroll``, in the order to apply them; and whether the core has two
    stages and the kernel keeps ``core_threads / 2`` threads on the tile
    (unknowable, so False, when ``workgroups`` is None). None unless the core
    is ``admitted`` (`admits`) and ``stages`` (`depth`) is positive.

    - A warp holds 64x64 outputs by upcasts of powers of two of the core's own
      N and M, each as far as the size (``sizes = (n, m, k)``, 0 for unknown)
      divides.
    - A workgroup takes 2x2 warps (a local split of 2 on N and on M) where N
      and M divide by 2 after the upcasts: one warp on each of an SM's four
      schedulers.
    - K is unrolled to 32 elements a trip where it divides.
    - While the kernel keeps fewer than ``core_threads / stages`` threads
      (``workgroups`` x the workgroups the tile makes x the workgroup's
      threads), the warp tile halves, M then N, down to 32 a side.
    - While ``in_run(u)`` does not hold for the ``u`` row tiles of M that
      would read one value of an operand, M's upcast halves and M's local
      split is left out.
    """
    if not admitted or stages <= 0 or target.is_host:
        return None
    n, m, k = sizes
    up_n = _pow2_upcast(WARP_TILE, core.n, n)
    up_m = _pow2_upcast(WARP_TILE, core.m, m)
    loc_n = 2 if (n == 0 or (n // (core.n * up_n)) % 2 == 0) else 1
    loc_m = 2 if (m == 0 or (m // (core.m * up_m)) % 2 == 0) else 1
    unroll = 1
    if core.k < K_UNROLL and K_UNROLL % core.k == 0 and (k == 0 or k % K_UNROLL == 0):
        unroll = K_UNROLL // core.k
    while not in_run(up_m * loc_m):
        if loc_m > 1:
            loc_m = 1
        elif up_m > 1:
            up_m //= 2
        else:
            break

    def kept(un: int, um: int) -> int | None:
        if workgroups is None or n == 0 or m == 0:
            return None
        tn, tm = core.n * un * loc_n, core.m * um * loc_m
        wgs = workgroups * math.ceil(n / tn) * math.ceil(m / tm)
        return wgs * loc_n * loc_m * target.warp_size

    need = core_threads // max(1, stages)
    while True:
        have = kept(up_n, up_m)
        if have is None or have >= need:
            break
        if core.m * up_m > WARP_TILE_MIN and up_m > 1:
            up_m //= 2
        elif core.n * up_n > WARP_TILE_MIN and up_n > 1:
            up_n //= 2
        else:
            break
    splits: list[tuple[int, int, str]] = []
    if up_m > 1:
        splits.append((1, up_m, UPCAST))
    if up_n > 1:
        splits.append((0, up_n, UPCAST))
    if loc_m > 1:
        splits.append((1, loc_m, LOCAL))
    if loc_n > 1:
        splits.append((0, loc_n, LOCAL))
    if unroll > 1:
        splits.append((2, unroll, UNROLL))
    have = kept(up_n, up_m)
    return splits, bool(stages == 2 and have is not None and have >= core_threads // 2)


def tile_of_splits(core: CoreShape, splits: list[tuple[int, int, str]]) -> tuple[int, int, int]:
    """The workgroup's (N, M, K) tile a list of splits makes of ``core``."""
    size = [core.n, core.m, core.k]
    for axis, amount, _ in splits:
        size[axis] *= amount
    return size[0], size[1], size[2]


# =============================================================================
# thread functions and polynomials
# =============================================================================
#
# A thread function (TF) is a tuple tree: ("c", int) | ("v", name) |
# (op, a, b) with op in _TF_OPS, or ("sel", c, a, b). Names are "tid.x",
# "tid.y", "tid.z" and lane variables ("frag.r", "frag.c", "vec").
# A polynomial maps a monomial (a sorted tuple of atom keys) to its TF.

_TF_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "shl": lambda a, b: a << b,
    "shr": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "div": lambda a, b: a // b,
    "rem": lambda a, b: a % b,
    "min": lambda a, b: _np().minimum(a, b),
    "max": lambda a, b: _np().maximum(a, b),
    "lt": lambda a, b: (a < b).astype("int64") if hasattr(a < b, "astype") else int(a < b),
    "le": lambda a, b: (a <= b).astype("int64") if hasattr(a <= b, "astype") else int(a <= b),
    "eq": lambda a, b: (a == b).astype("int64") if hasattr(a == b, "astype") else int(a == b),
    "ne": lambda a, b: (a != b).astype("int64") if hasattr(a != b, "astype") else int(a != b),
}
ZERO = ("c", 0)
ONE = ("c", 1)


def _np():
    import numpy

    return numpy


def tf_const(tf) -> int | None:
    return tf[1] if tf[0] == "c" else None


def tf(op: str, a, b):
    """Build a TF node, folding constants and the identities of + and *."""
    ca, cb = tf_const(a), tf_const(b)
    if op in ("shl", "shr") and cb is not None and not 0 <= cb < 63:
        raise Unstageable(f"a shift by {cb} in the index")
    if ca is not None and cb is not None:
        if op in ("div", "rem") and cb == 0:
            raise Unstageable("division by zero in the index")
        return ("c", int(_TF_OPS[op](ca, cb)))
    if op == "sub" and cb is not None:
        op, b, cb = "add", ("c", -cb), -cb
    if op == "add" and ca is not None and cb is None:
        a, b, ca, cb = b, a, None, ca  # constants to the right
    if op == "add":
        if ca == 0:
            return b
        if cb == 0:
            return a
        if cb is not None and a[0] == "add" and tf_const(a[2]) is not None:
            return tf("add", a[1], ("c", tf_const(a[2]) + cb))  # (x + c1) + c2
    if op == "mul" and ca is not None and cb is None:
        a, b, ca, cb = b, a, None, ca
    if op == "mul" and cb is not None and a[0] == "mul" and tf_const(a[2]) is not None:
        return tf("mul", a[1], ("c", tf_const(a[2]) * cb))  # (x * c1) * c2
    if op == "mul":
        if ca == 0 or cb == 0:
            return ZERO
        if ca == 1:
            return b
        if cb == 1:
            return a
    if op in ("shl", "shr") and cb == 0:
        return a
    return (op, a, b)


def tf_vars(t) -> set[str]:
    if t[0] == "c":
        return set()
    if t[0] == "v":
        return {t[1]}
    out: set[str] = set()
    for x in t[1:]:
        out |= tf_vars(x)
    return out


def tf_eval(t, env: dict[str, Any], memo: dict | None = None):
    """Evaluate over numpy arrays (broadcasting) or ints."""
    if memo is None:
        memo = {}
    if t[0] == "c":
        return t[1]
    if t[0] == "v":
        return env[t[1]]
    got = memo.get(t)
    if got is not None:
        return got
    if t[0] == "sel":
        np = _np()
        c, a, b = (tf_eval(x, env, memo) for x in t[1:])
        out = np.where(np.asarray(c) != 0, a, b)
    else:
        a, b = tf_eval(t[1], env, memo), tf_eval(t[2], env, memo)
        if t[0] in ("div", "rem"):
            np = _np()
            if np.any(np.asarray(b) == 0):
                raise Unstageable("a division by zero in the index")
        out = _TF_OPS[t[0]](a, b)
    memo[t] = out
    return out


Z3_BITS = 32  # index arithmetic as 32-bit two's complement bit-vectors (64 when values need it)
Z3_MAX_LEAVES = 8  # more loads than this in one box: the exhaustive enumeration is the proof
Z3_MAX_POINTS = 1 << 16


def tf_z3(t, env: dict[str, Any], bits: int = Z3_BITS):
    """The TF as a Z3 bit-vector term of ``bits`` bits (signed division and
    modulo agree with Python's floor semantics on the non-negative values
    indices take)."""
    import z3

    if t[0] == "c":
        return z3.BitVecVal(t[1], bits)
    if t[0] == "v":
        return env[t[1]]
    one, zero = z3.BitVecVal(1, bits), z3.BitVecVal(0, bits)
    if t[0] == "sel":
        c, a, b = (tf_z3(x, env, bits) for x in t[1:])
        return z3.If(c != 0, a, b)
    a, b = tf_z3(t[1], env, bits), tf_z3(t[2], env, bits)
    op = t[0]
    if op in ("lt", "le", "eq", "ne"):
        cond = {"lt": a < b, "le": a <= b, "eq": a == b, "ne": a != b}[op]
        return z3.If(cond, one, zero)
    if op == "min":
        return z3.If(a < b, a, b)
    if op == "max":
        return z3.If(a > b, a, b)
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "div": lambda: a / b,
        "rem": lambda: z3.SRem(a, b),
        "shl": lambda: a << b,
        "shr": lambda: a >> b,
        "and": lambda: a & b,
        "or": lambda: a | b,
        "xor": lambda: a ^ b,
    }[op]()


def tf_str(t) -> str:
    if t[0] == "c":
        return str(t[1])
    if t[0] == "v":
        return t[1]
    if t[0] == "sel":
        return f"({tf_str(t[1])} ? {tf_str(t[2])} : {tf_str(t[3])})"
    sym = {"add": "+", "sub": "-", "mul": "*", "shl": "<<", "shr": ">>", "and": "&", "or": "|", "xor": "^",
           "div": "/", "rem": "%", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}.get(t[0])  # fmt: skip
    if sym is None:
        return f"{t[0]}({tf_str(t[1])}, {tf_str(t[2])})"
    return f"({tf_str(t[1])} {sym} {tf_str(t[2])})"


class Unstageable(Exception):
    """An index the analysis cannot put in box form: the message says why."""


class _Cycle(Unstageable):
    """A value reached again while it is being evaluated."""


@dataclass(frozen=True)
class Atom:
    key: str
    name: str
    kind: str  # "uniform" | "range" (a loop's trip, or a value that depends on one)


Poly = dict  # tuple[str, ...] -> TF


def p_const(c: int) -> Poly:
    return {(): ("c", int(c))} if c else {}


def p_tf(t) -> Poly:
    return {} if t == ZERO else {(): t}


def p_atom(key: str) -> Poly:
    return {(key,): ONE}


def p_add(p: Poly, q: Poly) -> Poly:
    out = dict(p)
    for m, c in q.items():
        s = tf("add", out[m], c) if m in out else c
        if s == ZERO:
            out.pop(m, None)
        else:
            out[m] = s
    return out


def p_scale(p: Poly, t) -> Poly:
    if t == ZERO:
        return {}
    return {m: tf("mul", c, t) for m, c in p.items()}


def p_neg(p: Poly) -> Poly:
    return p_scale(p, ("c", -1))


def p_sub(p: Poly, q: Poly) -> Poly:
    return p_add(p, p_neg(q))


MAX_MONOMIALS = 64


def p_mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            out = p_add(out, {tuple(sorted(m1 + m2)): tf("mul", c1, c2)})
    if len(out) > MAX_MONOMIALS:
        raise Unstageable("the index expands into too many terms")
    return out


def p_const_value(p: Poly) -> int | None:
    if not p:
        return 0
    if set(p) == {()}:
        return tf_const(p[()])
    return None


def p_thread_only(p: Poly) -> bool:
    return set(p) <= {()}


def p_thread_free(p: Poly) -> bool:
    return all(c[0] == "c" for c in p.values())


def p_split(p: Poly) -> tuple[Poly, Poly]:
    """(the part without thread terms, the thread-only part) or raise."""
    free: Poly = {}
    thread: Poly = {}
    for m, c in p.items():
        if c[0] == "c":
            free[m] = c
        elif m == ():
            # a constant monomial mixing thread terms and constants
            thread[()] = c
        else:
            raise Unstageable("a thread term multiplies a uniform value inside a bit-field or division")
    return free, thread


def p_tz(p: Poly) -> int:
    """Trailing zero bits every value of a thread-free polynomial has."""
    tz = 64
    for c in p.values():
        v = tf_const(c)
        if v is None:
            return 0
        if v:
            tz = min(tz, (v & -v).bit_length() - 1)
    return tz


def _short(name: str) -> str:
    """``wmma_gemm_global_param_4`` -> ``param_4`` (nvcc's parameter names)."""
    mt = re.search(r"_(param_\d+)$", name)
    return mt.group(1) if mt else name


def p_str(p: Poly, atoms: dict[str, Atom], unit: int = 1) -> str:
    if not p:
        return "0"
    parts = []
    for m in sorted(p, key=lambda m: (len(m), m)):
        c = p[m]
        cv = tf_const(c)
        names = "·".join(_short(atoms[a].name if a in atoms else a) for a in m)
        if cv is not None:
            cv = cv // unit if unit and cv % unit == 0 else cv
            if not m:
                parts.append(str(cv))
            elif cv == 1:
                parts.append(names)
            else:
                parts.append(f"{cv}·{names}")
        else:
            parts.append(tf_str(c) + (f"·{names}" if names else ""))
    return " + ".join(parts).replace("+ -", "- ")


def p_subst(p: Poly, key: str, q: Poly) -> Poly:
    """``p`` with atom ``key`` replaced by ``q``."""
    out: Poly = {}
    for m, c in p.items():
        n = m.count(key)
        if not n:
            out = p_add(out, {m: c})
            continue
        rest = tuple(a for a in m if a != key)
        term: Poly = {rest: c}
        for _ in range(n):
            term = p_mul(term, q)
        out = p_add(out, term)
    return out


# =============================================================================
# from IR values to polynomials
# =============================================================================

_CMP_TF = {"lt": ("lt", False), "le": ("le", False), "gt": ("lt", True), "ge": ("le", True),
           "lo": ("lt", False), "ls": ("le", False), "hi": ("lt", True), "hs": ("le", True),
           "eq": ("eq", False), "ne": ("ne", False)}  # fmt: skip
_NONLINEAR = {O.SHR: "shr", O.AND: "and", O.OR: "or", O.XOR: "xor", O.DIV: "div", O.REM: "rem",
              O.MIN: "min", O.MAX: "max"}  # fmt: skip


def launch_block(kernel: Kernel) -> tuple[tuple[int, int, int] | None, str]:
    """The block shape the analysis enumerates, and where it came from."""
    lb = kernel.launch
    if lb.block:
        return tuple(lb.block), lb.source or "launch"  # type: ignore[return-value]
    for dims, src in ((lb.reqntid, ".reqntid"), (lb.maxntid, ".maxntid")):
        if dims:
            d = (tuple(dims) + (1, 1, 1))[:3]
            return (int(d[0]), int(d[1]), int(d[2])), src
    return None, ""


class IndexEval:
    """Polynomials of a kernel's integer values (see the module docstring)."""

    def __init__(self, kernel: Kernel, block: tuple[int, int, int] | None):
        self.kernel = kernel
        self.cfg = cfg_of(kernel)
        self.block = block
        self.atoms: dict[str, Atom] = {}
        self.memo: dict[Value, Poly] = {}
        self.failed: dict[Value, str] = {}
        self.busy: set[Value] = set()
        self.gates: set[Instr] = set()
        self._log: list[Value] | None = None
        self._headers = {lp.header: lp for lp in self.cfg.loops}
        self.box_cache: dict[tuple, Any] = {}

    # -- atoms --------------------------------------------------------------

    def atom(self, key: str, name: str, kind: str) -> Poly:
        if key not in self.atoms:
            self.atoms[key] = Atom(key, name, kind)
        return p_atom(key)

    def fresh(self, v: Value, p_args: Iterable[Poly], name: str | None = None) -> Poly:
        """An opaque atom for a value computed from thread-free polynomials."""
        kind = "uniform"
        for p in p_args:
            if not p_thread_free(p):
                raise Unstageable(f"`{v.name}` mixes thread terms with uniform values")
            if any(self.atoms[a].kind == "range" for m in p for a in m):
                kind = "range"
        return self.atom(f"v:{v.id}", name or v.source_name or v.name, kind)

    def trip(self, lp: Loop) -> Poly:
        iv_name = lp.ivs[0].phi.source_name if lp.ivs else lp.header.name
        return self.atom(f"trip:{lp.header.name}", f"trip({iv_name})", "range")

    def has_range(self, p: Poly) -> bool:
        return any(self.atoms.get(a, Atom(a, a, "uniform")).kind == "range" for m in p for a in m)

    # -- evaluation ---------------------------------------------------------

    def poly(self, v: Value) -> Poly:
        got = self.memo.get(v)
        if got is not None:
            return got
        if v in self.failed:
            raise Unstageable(self.failed[v])
        if v in self.busy:
            raise _Cycle(f"`{v.name}` depends on itself around a loop")
        self.busy.add(v)
        try:
            p = self._poly(v)
        except _Cycle:
            raise  # depends on where the walk started: not cached
        except Unstageable as e:
            if self._log is None:
                self.failed[v] = str(e)
            raise
        finally:
            self.busy.discard(v)
        self.memo[v] = p
        if self._log is not None:
            self._log.append(v)
        return p

    def _poly(self, v: Value) -> Poly:
        d = v.defn
        if d is None:
            return self.atom(f"v:{v.id}", v.source_name or v.name, "uniform")
        op, a = d.op, d.args
        if op is O.CONST:
            val = d.attrs.get("value")
            if isinstance(val, bool) or not isinstance(val, int):
                raise Unstageable(f"a non-integer constant `{val}` in the index")
            return p_const(val)
        if op is O.SPECIAL:
            return self._special(str(d.attrs.get("name", "")).lstrip("%"))
        if op is O.PARAM:
            name = str(d.attrs.get("name", v.name))
            return self.atom(f"param:{name}", name, "uniform")
        if op is O.ADDR:
            name = str(d.attrs.get("buffer", v.name))
            return self.atom(f"addr:{name}", name, "uniform")
        if op is O.UNDEF:
            raise Unstageable(f"`{v.name}` is read before it is written")
        if op is O.ADD:
            return p_add(self.poly(a[0]), self.poly(a[1]))
        if op is O.SUB:
            return p_sub(self.poly(a[0]), self.poly(a[1]))
        if op is O.NEG:
            return p_neg(self.poly(a[0]))
        if op is O.MUL:
            if d.attrs.get("hi"):
                return self._nonlinear(v, "mulhi", a)
            return p_mul(self.poly(a[0]), self.poly(a[1]))
        if op is O.MAD:
            if d.attrs.get("hi"):
                return self._nonlinear(v, "madhi", a)
            return p_add(p_mul(self.poly(a[0]), self.poly(a[1])), self.poly(a[2]))
        if op is O.SHL:
            k = p_const_value(self.poly(a[1]))
            if k is None or not 0 <= k < 63:
                return self._nonlinear(v, "shl", a)
            return p_scale(self.poly(a[0]), ("c", 1 << k))
        if op is O.CVT:
            src = d.attrs.get("from_type") or (a[0].type if a else "")
            if is_float(str(src)) or is_float(v.type):
                raise Unstageable("a floating-point value in the index")
            return self.poly(a[0])
        if op is O.PURE:
            fn = str(d.attrs.get("fn", ""))
            if fn.startswith(("cvta", "mov", "copy")) and len(a) == 1:
                return self.poly(a[0])
            return self._nonlinear(v, fn or "pure", a)
        if op in _NONLINEAR:
            return self._bits(v, _NONLINEAR[op], a)
        if op is O.SELECT:
            return self._select(d)
        if op is O.CMP:
            return self._cmp(d)
        if op is O.PHI:
            return self._phi(d)
        if op is O.LOAD:
            return self._load(d)
        raise Unstageable(f"`{d.text or op.value}` in the index is not arithmetic the analysis models")

    def _special(self, name: str) -> Poly:
        block = self.block
        axis = {"x": 0, "y": 1, "z": 2}
        if name.startswith("tid."):
            if block is None:
                raise Unstageable("the launch's block shape is unknown (pass --block or a `launch` comment)")
            return p_const(0) if block[axis[name[-1]]] == 1 else p_tf(("v", name))
        if name.startswith("ntid.") and block is not None:
            return p_const(block[axis[name[-1]]])
        if name in ("laneid", "warpid"):
            if block is None:
                raise Unstageable("the launch's block shape is unknown (pass --block or a `launch` comment)")
            lin = _linear_tid(block)
            return p_tf(tf("and", lin, ("c", 31)) if name == "laneid" else tf("shr", lin, ("c", 5)))
        from tolk_lint.ir.opcodes import special_varies

        if special_varies(name):
            raise Unstageable(f"`%{name}` varies between threads in a way the box does not model")
        return self.atom(name, name, "uniform")

    def _nonlinear(self, v: Value, fn: str, args: list[Value]) -> Poly:
        ps = [self.poly(x) for x in args]
        if all(p_thread_free(p) for p in ps):
            return self.fresh(v, ps)
        raise Unstageable(f"`{fn}` of a thread index in the index")

    def _bits(self, v: Value, op: str, args: list[Value]) -> Poly:
        p, q = self.poly(args[0]), self.poly(args[1])
        cp, cq = p_const_value(p), p_const_value(q)
        if cp is not None and cq is not None:
            return p_tf(tf(op, ("c", cp), ("c", cq)))
        if p_thread_free(p) and p_thread_free(q):
            return self.fresh(v, [p, q])
        k = p_const_value(q)
        if op == "shr" and k is not None and k >= type_bits(v.type) - 1 >= 7 and self.nonneg(p):
            return {}  # the sign of a non-negative value (signed division idioms)
        if op == "and" and k is not None and k < 0 and _pow2(-k):
            # x & -2^n clears the low bits: (x >> n) << n
            n = (-k).bit_length() - 1
            free, thread = p_split(p)
            if all(tf_const(c) % (-k) == 0 for c in free.values()) and self.min_of(thread) >= 0:
                return p_add(free, p_tf(tf("shl", tf("shr", thread.get((), ZERO), ("c", n)), ("c", n))))
        if op == "or":
            # a | b is a + b where their bits are disjoint: thread fields that
            # never share a bit, below the trailing zeros of the uniform term
            if self._disjoint(p, q):
                return p_add(p, q)
            if p_thread_only(p) and p_thread_only(q):
                return p_tf(tf("or", p.get((), ZERO), q.get((), ZERO)))
            raise Unstageable("`or` of a thread index with a uniform value whose bits may overlap")
        if op in ("shr", "div", "and", "rem") and k is not None and k > 0:
            if op == "shr":
                d = 1 << k if k < 63 else 0
            elif op == "and":
                d = k + 1 if not (k + 1) & k else 0  # a low mask only
            else:
                d = k
            free, thread = p_split(p)
            if d and free and all(tf_const(c) % d == 0 for c in free.values()) and self.min_of(thread) >= 0:
                t = thread.get((), ZERO)
                if op in ("shr", "div"):
                    scaled = {m: ("c", tf_const(c) // d) for m, c in free.items()}
                    return p_add(scaled, p_tf(tf(op, t, ("c", k))))
                return p_tf(tf(op, t, ("c", k)))
            if not free:
                return p_tf(tf(op, p.get((), ZERO), ("c", k)))
        if p_thread_only(p) and p_thread_only(q):
            return p_tf(tf(op, p.get((), ZERO), q.get((), ZERO)))
        raise Unstageable(f"`{op}` mixes a thread index with another range or a uniform value")

    def _cmp(self, d: Instr) -> Poly:
        p, q = self.poly(d.args[0]), self.poly(d.args[1])
        if p_thread_free(p) and p_thread_free(q):
            return self.fresh(d.result, [p, q])
        if p_thread_only(p) and p_thread_only(q):
            op, swap = _CMP_TF.get(str(d.attrs.get("cmp")), (None, False))
            if op is not None:
                x, y = p.get((), ZERO), q.get((), ZERO)
                return p_tf(tf(op, y, x) if swap else tf(op, x, y))
        raise Unstageable("a comparison of a thread index with a uniform value in the index")

    def _select(self, d: Instr) -> Poly:
        c, x, y = d.args
        px, py = self.poly(x), self.poly(y)
        if p_const_value(py) == 0 and p_const_value(px) != 0:
            self.gates.add(d)
            return px
        if p_const_value(px) == 0 and p_const_value(py) != 0:
            self.gates.add(d)
            return py
        if px == py:
            return px
        pc = self.poly(c)
        if all(p_thread_free(p) for p in (pc, px, py)):
            return self.fresh(d.result, [pc, px, py])
        if all(p_thread_only(p) for p in (pc, px, py)):
            return p_tf(("sel", pc.get((), ZERO), px.get((), ZERO), py.get((), ZERO)))
        raise Unstageable("a selection between thread-dependent indices")

    def _phi(self, d: Instr) -> Poly:
        block = d.block
        lp = self._headers.get(block)
        v = d.result
        if lp is None:
            ps = [self.poly(x) for x in d.args]
            if all(p == ps[0] for p in ps):
                return ps[0]
            if all(p_thread_free(p) for p in ps):
                return self.fresh(v, ps)
            raise Unstageable(f"`{v.source_name}` merges thread-dependent values from branches")
        outside = {x for p, x in zip(block.preds, d.args) if p not in lp.blocks}
        inside = {x for p, x in zip(block.preds, d.args) if p in lp.blocks}
        if len(outside) != 1 or len(inside) != 1:
            raise Unstageable(f"`{v.source_name}` is carried around a loop in a way the analysis does not model")
        start = self.poly(next(iter(outside)))
        nxt = next(iter(inside))
        key = f"ph:{v.id}"
        self.atoms[key] = Atom(key, v.source_name, "range")
        self.memo[v] = p_atom(key)
        saved, self._log = self._log, []
        busy, self.busy = self.busy, set()  # `nxt` may be what the walk is evaluating: phi is P now
        try:
            step = p_sub(self.poly(nxt), p_atom(key))
        except Unstageable:
            raise Unstageable(f"`{v.source_name}` is carried around a loop, not stepped by a uniform amount")
        finally:
            touched, self._log = self._log, saved
            self.busy = busy
            del self.memo[v]
        trip = self.trip(lp)
        if any(key in m for m in step):
            for t in touched:
                self.memo.pop(t, None)
            # a rotated copy of another induction variable: the value it takes
            # at trip n + 1 is `nxt` at trip n, and `start` is `nxt` at trip -1
            nxt_p = p_add(step, p_atom(key))
            tkey = next(iter(trip))[0]
            if not any(key in m for m in nxt_p):
                prev = p_subst(nxt_p, tkey, p_add(trip, p_const(-1)))
                if self.same(p_subst(prev, tkey, {}), start):
                    return prev
            raise Unstageable(f"`{v.source_name}` is carried around a loop, not stepped by a uniform amount")
        result = p_add(start, p_mul(step, trip))
        for t in touched:
            if t in self.memo:
                self.memo[t] = p_subst(self.memo[t], key, result)
        if saved is not None:
            saved.extend(touched)
        return result

    def _load(self, d: Instr) -> Poly:
        space = d.attrs.get("space")
        addr = self.address(d)
        if all(p_thread_free(p) for p in addr):
            name = str(d.attrs.get("buffer") or (d.text.split("[")[-1].rstrip("];") if "[" in d.text else ""))
            return self.fresh(d.result, addr, name or f"{space or 'mem'}[...]")
        raise Unstageable("an index loaded from memory at a thread-dependent address")

    def address(self, d: Instr) -> list[Poly]:
        """The address of a memory op as polynomials: the byte address (PTX
        and Python alike), or, for an access without one, its index tuple."""
        idx = d.attrs.get("index")
        if not d.args:
            if idx is not None:
                return [self.poly(x) for x in idx]
            raise Unstageable("a memory access without an address")
        return [self.poly(d.args[0])]  # the address value holds the immediate offset already

    def same(self, p: Poly, q: Poly) -> bool:
        """Whether two polynomials are equal for every thread."""
        np = _np()
        for c in p_sub(p, q).values():
            cv = tf_const(c)
            if cv is not None:
                if cv:
                    return False
                continue
            if self.block is None:
                return False
            if np.any(np.asarray(tf_eval(c, thread_env(self.block))) != 0):
                return False
        return True

    def nonneg(self, p: Poly) -> bool:
        """Whether every value of ``p`` is >= 0: non-negative coefficients on
        atoms that cannot be negative (trips, block indices and sizes)."""
        for m, c in p.items():
            for a in m:
                if not a.startswith(("trip:", "ctaid.", "nctaid.", "ntid.", "addr:")):
                    return False
            cv = tf_const(c)
            if cv is not None:
                if cv < 0:
                    return False
            elif self.min_of({(): c}) < 0:
                return False
        return True

    def _disjoint(self, p: Poly, q: Poly) -> bool:
        """Whether ``p`` and ``q`` never have a set bit in common (so ``p | q``
        is ``p + q``): their thread parts are non-negative and disjoint in
        every thread, and lie below the trailing zeros of the one uniform part."""
        np = _np()
        try:
            fp, tp = p_split(p)
            fq, tq = p_split(q)
        except Unstageable:
            return False
        if fp and fq:
            return False
        if self.block is None:
            return False
        env = thread_env(self.block)
        a = np.asarray(tf_eval(tp.get((), ZERO), env)) + np.zeros(1, dtype="int64")
        b = np.asarray(tf_eval(tq.get((), ZERO), env)) + np.zeros(1, dtype="int64")
        if a.min() < 0 or b.min() < 0 or np.any(a & b):
            return False
        free = fp or fq
        if not free:
            return True
        return int((a | b).max()) < (1 << min(p_tz(free), 62))

    # -- bounds of thread-only polynomials --------------------------------------

    def _values(self, p: Poly):
        np = _np()
        if self.block is None:
            return None
        env = thread_env(self.block)
        t = p.get((), ZERO)
        return np.asarray(tf_eval(t, env)) + np.zeros(1, dtype="int64")

    def max_of(self, p: Poly) -> int | None:
        vals = self._values(p)
        return None if vals is None else int(vals.max())

    def min_of(self, p: Poly) -> int:
        vals = self._values(p)
        return -1 if vals is None else int(vals.min())


def _linear_tid(block: tuple[int, int, int]):
    bx, by, _ = block
    return tf("add", ("v", "tid.x"), tf("mul", ("c", bx), tf("add", ("v", "tid.y"), tf("mul", ("c", by), ("v", "tid.z")))))


def thread_env(block: tuple[int, int, int]) -> dict[str, Any]:
    """tid.x/y/z of every thread of the block, as flat arrays (x fastest)."""
    np = _np()
    bx, by, bz = block
    lin = np.arange(bx * by * bz, dtype="int64")
    return {"tid.x": lin % bx, "tid.y": (lin // bx) % by, "tid.z": lin // (bx * by)}


# =============================================================================
# the box an operand's loads span over the workgroup's threads and lanes
# =============================================================================


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


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


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
            if _pow2(nw):
                out += [_Digit(f"warp.b{i}", "warp", 2, i, "warp") for i in range(nw.bit_length() - 1)]
            else:
                out.append(_Digit("warp", "warp", nw, -1, "warp"))
    else:
        for axis, e in zip("xyz", block):
            var = f"tid.{axis}"
            if e <= 1:
                continue
            if _pow2(e):
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
    np = _np()
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
    import z3

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
    np = _np()
    block = ev.block
    lanes: dict[str, int] = {}
    for lf in leaves:
        for k, e in lf.lanes.items():
            lanes[k] = max(lanes.get(k, 1), e)
    polys = [p_add(lf.address, lf.lane_offset) for lf in leaves]
    digits = _digits(block, warp_level, lanes, len(leaves))
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
            arr = np.asarray(tf_eval(t, env), dtype="int64")
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
    np = _np()
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
    np = _np()
    block = ev.block
    env = thread_env(block)
    nthreads = block[0] * block[1] * block[2]
    for lf in leaves:
        for t in lf.address.values():
            arr = np.broadcast_to(np.asarray(tf_eval(t, env), dtype="int64"), (nthreads,))
            pad = (-nthreads) % 32
            if pad:
                arr = np.concatenate([arr, np.repeat(arr[-1:], pad)])
            w = arr.reshape(-1, 32)
            if np.any(w != w[:, :1]):
                raise Unstageable("a warp-wide fragment load whose address differs between the lanes of a warp")


def _collision(sub, digits, relevant, index, shape) -> str:
    np = _np()
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
        import z3
    except ImportError:  # pragma: no cover - z3 is a dependency
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
        r = s.check()
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


# =============================================================================
# operands
# =============================================================================


@dataclass
class OperandVerdict:
    """One operand of a tensor core or a sum of products, and its staging."""

    kernel: str
    op: Instr  # the mma / wmma.mma, or the sum's add
    op_desc: str
    operand: str  # "a", "b" (tensor cores) or the factor's text
    loads: list[Instr]
    loop: Loop | None
    dtype: str = ""
    elem_bytes: int = 0
    box: Box | None = None
    tile_bytes: int = 0
    depth: int = 0
    depth_why: str = ""
    depths: dict[str, int] = field(default_factory=dict)
    used: int = 0
    budget: int = 0
    shared_bytes: int = 0  # what the staged tiles of the core take at ``depth``, with ``used``
    stageable: bool = False
    reason: str | None = None
    gated: bool = False
    core: CoreShape | None = None
    proposed: tuple[list[tuple[int, int, str]], bool] | None = None
    k_unrolled_shape: tuple[int, ...] | None = None  # Python: the tile with K unrolled to 32
    optin_depth: int = 0
    budget_limited: bool = False  # the budget, not the target, holds the depth below 2
    tiles: list[int] = field(default_factory=list)  # the staged tiles of the core

    def data(self, copies: int = 1) -> dict[str, Any]:
        """The facts a TL301/TL303 diagnostic carries."""
        box = self.box
        return {
            "depth": self.depth,
            "tile_bytes": self.tile_bytes,
            "tile_shape": list(box.shape) if box else [],
            "dtype": self.dtype,
            "operand": self.operand,
            "rereads": box.rereads if box else 0,
            "box": [d.to_json() for d in box.dims] if box else [],
            "depths": dict(self.depths),
            "stage_bytes": sum(self.tiles),
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "optin_depth": self.optin_depth,
            "copies": copies,
        }

    @property
    def load(self) -> Instr | None:
        return self.loads[0] if self.loads else None

    @property
    def line(self) -> int | None:
        return source_line(self.load or self.op)

    @property
    def op_line(self) -> int | None:
        return source_line(self.op)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "op": self.op_desc,
            "op_line": self.op_line,
            "operand": self.operand,
            "line": self.line,
            "box": [d.to_json() for d in self.box.dims] if self.box else [],
            "tile_shape": list(self.box.shape) if self.box else [],
            "dtype": self.dtype,
            "tile_bytes": self.tile_bytes,
            "rereads": self.box.rereads if self.box else 0,
            "injective": self.box.injective if self.box else None,
            "dense": self.box.dense if self.box else None,
            "proof": self.box.proof if self.box else None,
            "depth": self.depth,
            "depths": dict(self.depths),
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "stageable": self.stageable,
            "reason": self.reason,
            "gated": self.gated,
            "proposed_splits": [list(s) for s in self.proposed[0]] if self.proposed else None,
            "k_unrolled_shape": list(self.k_unrolled_shape) if self.k_unrolled_shape else None,
        }


def loop_line(lp: Loop) -> int | None:
    """The user's line of a loop: its exit test (the ``for`` line)."""
    cands = [ex.branch for ex in lp.exits] + [b.terminator for b in lp.latches] + list(lp.header.instrs)
    for ins in cands:
        line = source_line(ins) if ins is not None else None
        if line:
            return line
    return None


def display_name(name: str) -> str:
    """A shared buffer's name as the user wrote it: nvcc names a function's
    ``__shared__`` array ``_ZZ<n><function>E<n><name>`` (Itanium mangling of
    a local static)."""
    mt = re.match(r"_ZZ(\d+)", name)
    if not mt:
        return name
    i = mt.end() + int(mt.group(1))
    rest = name[i:]
    m2 = re.match(r"E(\d+)", rest)
    if not m2:
        return name
    n = int(m2.group(1))
    return rest[m2.end() : m2.end() + n] or name


def source_line(ins: Instr | None) -> int | None:
    """The user's line an instruction came from: the outermost ``.loc``
    origin (following ``inlined_at``), else its line in the linted file."""
    if ins is None:
        return None
    if ins.origin is not None:
        return ins.origin.outermost().line
    return ins.span.line if ins.span else None


def _dtype_bytes(t: str) -> int:
    t = (t or "").lower()
    if t in ("tf32",):
        return 4
    return max(1, type_bits(t) // 8) if t else 4


def _holds_shared(kernel: Kernel) -> bool:
    return any(b.space == "shared" for b in kernel.buffers.values())


def _reduces_across_threads(kernel: Kernel) -> Instr | None:
    for ins in kernel.instrs():
        if ins.op in (O.SHUFFLE, O.REDUX):
            return ins
        if ins.op is O.ATOMIC and ins.attrs.get("space") == "shared":
            return ins
        if ins.op is O.BARRIER and ins.attrs.get("kind") == "red":
            return ins
    return None


def _sum_loop(kernel: Kernel, ins: Instr) -> Loop | None:
    return cfg_of(kernel).loop_of(ins.block) if ins.block is not None else None


def _trace_leaves(v: Value, loop: Loop | None, gates: list[Instr], seen: set[Value] | None = None) -> list[tuple[Instr, int]]:
    """The loads a tensor-core fragment register comes from, through packs,
    extracts, conversions, gates and a loop-carried prefetch."""
    seen = set() if seen is None else seen
    if v in seen:
        return []
    seen.add(v)
    d = v.defn
    if d is None:
        raise Unstageable(f"`{v.name}` is not loaded inside the kernel")
    if d.op in (O.WMMA_LOAD, O.LDMATRIX):
        return [(d, None)]  # the fragment as a whole: its registers are opaque
    if d.op is O.LOAD:
        return [(d, v.index)]
    if d.op in (O.PACK, O.CVT, O.EXTRACT):
        out = []
        for a in d.args:
            out += _trace_leaves(a, loop, gates, seen)
        return out
    if d.op is O.PURE and str(d.attrs.get("fn", "")).startswith(("mov", "cvt", "copy")):
        out = []
        for a in d.args:
            out += _trace_leaves(a, loop, gates, seen)
        return out
    if d.op is O.SELECT:
        _, x, y = d.args
        for keep, zero in ((x, y), (y, x)):
            if _is_zero(zero):
                gates.append(d)
                return _trace_leaves(keep, loop, gates, seen)
        raise Unstageable("the operand selects between two computed values")
    if d.op is O.PHI and loop is not None and d.block is loop.header:
        inside = [a for p, a in zip(d.block.preds, d.args) if p in loop.blocks]
        out = []
        for a in inside:
            out += _trace_leaves(a, loop, gates, seen)
        return out
    if d.op is O.CONST:
        raise Unstageable("the operand is a constant")
    raise Unstageable(f"the operand is computed (`{d.text or d.op.value}`), not loaded")


def _is_zero(v: Value) -> bool:
    d = v.defn
    return d is not None and d.op is O.CONST and d.attrs.get("value") in (0, 0.0) and d.attrs.get("value") is not False


_WMMA_RE = re.compile(r"wmma\.load\.(?P<m>[abc])\..*?(?P<layout>row|col)\.(?P<shape>m\d+n\d+k\d+)")


def _wmma_geometry(ins: Instr) -> tuple[int, int, str, str]:
    """(rows, cols, layout, dtype) of a wmma.load's fragment."""
    mt = _WMMA_RE.search(ins.text or "")
    matrix = str(ins.attrs.get("matrix") or (mt.group("m") if mt else "a"))
    layout = str(ins.attrs.get("layout") or (mt.group("layout") if mt else "row"))
    shape = CoreShape.parse(str(ins.attrs.get("shape") or (mt.group("shape") if mt else "")))
    dtype = str(ins.attrs.get("dtype") or (ins.text.rsplit(".", 1)[-1].split()[0] if ins.text else "f16"))
    if shape is None:
        raise Unstageable("a wmma.load whose shape is unknown")
    rows, cols = {"a": (shape.m, shape.k), "b": (shape.k, shape.n)}.get(matrix, (shape.m, shape.n))
    return rows, cols, layout, dtype


def _space(ins: Instr) -> str:
    s = ins.attrs.get("space")
    if s:
        return str(s)
    mt = re.search(r"\.(global|shared|local|const|param)\b", ins.text or "")
    return mt.group(1) if mt else "generic"


def _leaf(ev: IndexEval, ins: Instr, lane: int | None) -> Leaf:
    """A load's address and lanes as a `Leaf`."""
    addr = ev.address(ins)
    if ins.op is O.WMMA_LOAD:
        rows, cols, layout, dtype = _wmma_geometry(ins)
        eb = _dtype_bytes(dtype)
        stride = ev.poly(ins.args[1]) if len(ins.args) > 1 else p_const(cols if layout == "row" else rows)
        r, c = p_tf(("v", "frag.r")), p_tf(("v", "frag.c"))
        if layout == "row":
            off = p_add(p_scale(p_mul(r, stride), ("c", eb)), p_scale(c, ("c", eb)))
        else:
            off = p_add(p_scale(p_mul(c, stride), ("c", eb)), p_scale(r, ("c", eb)))
        return Leaf(ins, addr[0], {"frag.r": rows, "frag.c": cols}, off, eb)
    eb = _dtype_bytes(str(ins.attrs.get("dtype") or (ins.results[0].type if ins.results else "")))
    if len(addr) > 1:
        return Leaf(ins, _combine_axes(ev, addr), {}, {}, eb, lane)
    return Leaf(ins, addr[0], {}, p_const((lane or 0) * eb), eb, lane)


def _combine_axes(ev: IndexEval, axes: list[Poly]) -> Poly:
    """A multi-dimensional index as one polynomial: axis i (all but the last)
    scaled by a pitch atom ``axis:i``, as if row-major with large pitches."""
    out: Poly = {}
    for i, p in enumerate(axes):
        if i < len(axes) - 1:
            p = p_mul(p, ev.atom(f"axis:{i:02d}", f"pitch{i}", "uniform"))
        out = p_add(out, p)
    return out


def _mma_operands(kernel: Kernel) -> list[tuple[Instr, str, list[Value]]]:
    out = []
    for ins in kernel.instrs():
        if ins.op is not O.MMA:
            continue
        counts = ins.attrs.get("counts")
        if not counts or len(counts) < 2:
            continue
        na, nb = int(counts[0]), int(counts[1])
        out.append((ins, "a", ins.args[:na]))
        out.append((ins, "b", ins.args[na : na + nb]))
    return out


def _mma_desc(ins: Instr) -> str:
    kind = str(ins.attrs.get("kind") or ("wmma" if "wmma" in (ins.text or "") else "mma"))
    shape = str(ins.attrs.get("shape") or "")
    return f"{kind}.mma {shape}".strip() if kind == "wmma" else f"mma.sync {shape}".strip()


def _mma_dtype(ins: Instr, operand: str, leaves: list[Leaf]) -> str:
    dts = ins.attrs.get("dtypes")
    # PTX order: d, a, b, c (mma) / d, c (wmma f16 forms): take a/b where present
    if isinstance(dts, (list, tuple)) and len(dts) >= 4:
        return str(dts[1] if operand == "a" else dts[2])
    text = ins.text or ""
    mt = re.search(r"\.(f16|bf16|tf32|s8|u8|e4m3|e5m2|f64)\b", text)
    if mt:
        return mt.group(1)
    for lf in leaves:
        if lf.instr.op is O.WMMA_LOAD:
            return _wmma_geometry(lf.instr)[3]
    return str(leaves[0].instr.attrs.get("dtype") or "") if leaves else ""


def _sums_of_products(kernel: Kernel) -> list[tuple[Instr, Loop, list[Value]]]:
    """``acc = acc + x * y`` (or ``mad x y acc``) where ``acc`` is carried
    around the innermost loop holding the add: (the add, the loop, [x, y])."""
    cfg = cfg_of(kernel)
    out = []
    for ins in kernel.instrs():
        if ins.op not in (O.ADD, O.MAD) or ins.block is None:
            continue
        lp = cfg.loop_of(ins.block)
        if lp is None:
            continue
        if ins.op is O.MAD:
            acc, factors = ins.args[2], ins.args[:2]
        else:
            acc = prod = None
            for x, y in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
                if x.defn is not None and x.defn.op is O.PHI and y.defn is not None and y.defn.op is O.MUL:
                    acc, prod = x, y
                    break
            if acc is None or prod is None:
                continue
            factors = list(prod.defn.args)  # type: ignore[union-attr]
        phi = acc.defn
        if phi is None or phi.op is not O.PHI or phi.block is not lp.header:
            continue
        inside = [a for p, a in zip(phi.block.preds, phi.args) if p in lp.blocks]
        if not inside or not all(_reaches_back(a, ins.result, lp) for a in inside):
            continue
        out.append((ins, lp, factors))
    return out


def _reaches_back(v: Value, target: Value, lp: Loop, depth_: int = 0) -> bool:
    """Whether ``v`` is ``target`` or a phi inside ``lp`` merging it."""
    if v is target:
        return True
    d = v.defn
    if depth_ > 8 or d is None or d.op is not O.PHI or d.block not in lp.blocks or d.block is lp.header:
        return False
    return any(_reaches_back(a, target, lp, depth_ + 1) for a in d.args)


def _factor_leaf(v: Value, gates: list[Instr]) -> Instr:
    """The load a sum-of-products factor reads (through conversions and gates)."""
    seen = 0
    while True:
        seen += 1
        d = v.defn
        if d is None or seen > 16:
            raise Unstageable("the factor is not loaded inside the kernel")
        if d.op is O.LOAD:
            return d
        if d.op is O.CVT and not (_is_int(str(d.attrs.get("from_type") or d.args[0].type)) and is_float(d.result.type)):
            v = d.args[0]
            continue
        if d.op is O.SELECT and (_is_zero(d.args[2]) or _is_zero(d.args[1])):
            gates.append(d)
            v = d.args[1] if _is_zero(d.args[2]) else d.args[2]
            continue
        raise Unstageable(f"the factor is computed (`{d.text or d.op.value}`), not a plain load")


def _is_int(t: str) -> bool:
    return bool(re.fullmatch(r"[subi]\d+|int\d*|uint\d*|b\d+", t or ""))


def _factor_name(ld: Instr) -> str:
    if ld.text and "[" in ld.text and len(ld.text) < 80:
        return ld.text
    name = str(ld.attrs.get("buffer") or "")
    idx = ld.attrs.get("index")
    if name and idx is not None:
        return f"{name}[{', '.join(x.source_name for x in idx)}]"
    return name or (ld.text or "load")


def operands(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[OperandVerdict]:
    """Every operand of each tensor core (and, in Python kernels, of each sum
    of products) of ``kernel``, each with its tile, depth and verdict."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    block, _ = launch_block(kernel)
    ev = IndexEval(kernel, block)
    found: list[tuple[Instr, str, str, Loop | None, Callable[[list[Instr]], list[tuple[Instr, int | None]]]]] = []
    for ins, which, regs in _mma_operands(kernel):
        lp = _sum_loop(kernel, ins)

        def trace(gates, regs=regs, lp=lp):
            leaves: list[tuple[Instr, int | None]] = []
            for r in regs:
                for lf in _trace_leaves(r, lp, gates):
                    if lf not in leaves:
                        leaves.append(lf)
            return leaves

        found.append((ins, _mma_desc(ins), which, lp, trace))
    if kernel.language == "python" and not kernel.host:
        for ins, lp, factors in _sums_of_products(kernel):
            for f in factors:

                def trace(gates, f=f):
                    return [(_factor_leaf(f, gates), None)]

                found.append((ins, "sum of products", "", lp, trace))

    shared = sum(b.bytes or 0 for b in kernel.buffers.values() if b.space == "shared")
    reducer = _reduces_across_threads(kernel)
    verdicts: list[OperandVerdict] = []
    for ins, desc, which, lp, trace in found:
        v = OperandVerdict(kernel.name, ins, desc, which, [], lp, used=shared)
        v.core = CoreShape.parse(str(ins.attrs.get("shape") or "")) if ins.op is O.MMA else None
        try:
            gates: list[Instr] = []
            pairs = trace(gates)
            v.loads = [i for i, _ in pairs]
            if not v.operand:
                v.operand = _factor_name(v.loads[0]) if v.loads else "?"
            v.gated = bool(gates)
            _operand_box(v, pairs, ev, settings)
        except Unstageable as e:
            v.reason = str(e)
        if v.reason is None:
            if target.is_host or not target.has_shared:
                v.reason = f"{target.name} has no shared memory"
            elif _holds_shared(kernel):
                v.reason = "the kernel already holds shared memory (its tiles are left alone)"
            elif reducer is not None:
                v.reason = f"the kernel reduces across threads (`{reducer.text or reducer.op.value}`)"
        verdicts.append(v)
    _assign_depths(verdicts, target, settings)
    return verdicts


def _operand_box(v: OperandVerdict, pairs, ev: IndexEval, settings: Settings) -> None:
    if v.loop is None:
        raise Unstageable("the core is not in a loop: there is no trip to stage a tile for")
    for ld, _ in pairs:
        space = _space(ld)
        if ld.op is O.LDMATRIX or space == "shared":
            raise Unstageable("the operand is read from shared memory already")
        if space != "global":
            raise Unstageable(f"the operand is read from {space} memory, not global")
        if ld.block not in v.loop.blocks:
            raise Unstageable("the operand is loaded before the loop, not at every trip")
    leaves = [_leaf(ev, ld, lane) for ld, lane in pairs]
    warp_level = all(lf.instr.op is O.WMMA_LOAD for lf in leaves)
    v.elem_bytes = leaves[0].elem_bytes
    v.dtype = (
        _mma_dtype(v.op, v.operand, leaves)
        if v.op.op is O.MMA
        else str(leaves[0].instr.attrs.get("dtype") or leaves[0].instr.results[0].type)
    )
    # strides in elements of the operand's type (a b32 load of f16x2 reads two)
    dt = min(_dtype_bytes(v.dtype), v.elem_bytes) if v.dtype else v.elem_bytes
    unit = 1 if any(not ld.args for ld, _ in pairs) else dt
    box = box_of(leaves, ev, warp_level, unit, settings.solver_rlimit)
    v.box = box
    v.tile_bytes = box.elements * v.elem_bytes
    ratio = v.elem_bytes // dt if dt else 1
    if ratio > 1 and box.axes and box.axes[-1] == () and len(box.shape) == len(box.axes):
        box.shape = box.shape[:-1] + (box.shape[-1] * ratio,)
    if not box.injective:
        raise Unstageable(f"not injective: {box.witness or 'two reads fall on one element'}")
    if not box.dense:
        raise Unstageable(
            "not a box: the threads' and lanes' offsets do not add up independently "
            "(a thread term mixes with another)"
        )
    if v.op.op is not O.MMA and v.loop is not None:
        v.k_unrolled_shape = _unrolled_shape(leaves, ev, v.loop, warp_level, unit, settings)


def _unrolled_shape(leaves, ev: IndexEval, lp: Loop, warp_level, unit, settings) -> tuple[int, ...] | None:
    """The tile when the sum's loop is unrolled to 32 trips a trip."""
    key = f"trip:{lp.header.name}"
    if key not in ev.atoms:
        return None
    lane = p_add(p_atom(key), p_tf(("v", "unroll")))
    out = []
    for lf in leaves:
        out.append(Leaf(lf.instr, p_subst(lf.address, key, lane), {**lf.lanes, "unroll": K_UNROLL}, lf.lane_offset,
                        lf.elem_bytes, lf.result))  # fmt: skip
    try:
        return box_of(out, ev, warp_level, unit, settings.solver_rlimit).shape
    except Unstageable:
        return None


def _assign_depths(verdicts: list[OperandVerdict], target: Target, settings: Settings) -> None:
    optin = settings.shared_budget == "optin"
    by_op: dict[Instr, list[OperandVerdict]] = {}
    for v in verdicts:
        by_op.setdefault(v.op, []).append(v)
    for vs in by_op.values():
        ok = [v for v in vs if v.reason is None]
        tiles = [v.tile_bytes for v in ok]
        for v in vs:
            v.budget = budget_bytes(target, optin)
            for name in SIDE_BY_SIDE:
                t = parse_target(name)
                v.depths[name] = depth(t, tiles, v.used, settings.stage, optin) if ok and v.reason is None else 0
            if v.reason is not None:
                continue
            v.tiles = tiles
            v.depth, v.depth_why = depth_reason(target, tiles, v.used, settings.stage, optin)
            v.optin_depth = depth(target, tiles, v.used, settings.stage, True)
            v.shared_bytes = v.depth * sum(tiles) + v.used
            v.budget_limited = limited_by_budget(target, tiles, v.used, settings.stage, optin)
            if v.depth == 0:
                v.reason = v.depth_why
            else:
                v.stageable = True
                if v.core is not None:
                    v.proposed = tile(
                        target, v.core, core_threads=core_threads(target), workgroups=None, sizes=(0, 0, 0),
                        stages=v.depth,
                    )  # fmt: skip


def admits(kernel: Kernel, target: Target, settings: Settings | None = None) -> bool:
    """Whether `operands` stages every operand of each tensor core (and sum
    of products) of ``kernel`` on ``target``, tiles permitting."""
    vs = operands(kernel, target, settings)
    return bool(vs) and all(v.stageable for v in vs)


def group_by_line(verdicts: list[OperandVerdict]) -> list[tuple[OperandVerdict, int]]:
    """One verdict per (operand, load line): unrolled copies of a source line
    collapse, stageable ones first. Returns (verdict, copies)."""
    groups: dict[tuple, list[OperandVerdict]] = {}
    for v in verdicts:
        groups.setdefault((v.operand, v.line, v.op_line), []).append(v)
    out = []
    for vs in groups.values():
        best = min(vs, key=lambda v: (not v.stageable, -v.depth))
        out.append((best, len(vs)))
    return sorted(out, key=lambda x: (x[0].line or 0, x[0].operand))


# =============================================================================
# tile copies (TL302, TL303)
# =============================================================================


@dataclass
class TileCopy:
    """A shared buffer a loop fills at every trip by plain copies global ->
    registers -> shared, then barriers and reads (convention 5)."""

    kernel: str
    loop: Loop
    buffer: str
    stores: list[Instr]
    loads: list[Instr]
    barrier: Instr
    reads: list[Instr]
    tile_bytes: int = 0  # the buffer's bytes: what a second stage doubles
    dtype: str = ""
    depth: int = 0
    depth_why: str = ""
    depths: dict[str, int] = field(default_factory=dict)
    used: int = 0
    budget: int = 0
    shared_bytes: int = 0
    optin_depth: int = 0
    optin_budget: int = 0
    loop_tiles: list[int] = field(default_factory=list)  # every buffer the loop stages
    reason: str | None = None
    budget_limited: bool = False  # the budget, not the target, holds the depth below 2
    box: Box | None = None  # what the copies read over the workgroup (report only)
    shape: tuple[int, ...] = ()  # the buffer's shape

    def data(self) -> dict[str, Any]:
        """The facts a TL302/TL303 diagnostic carries."""
        return {
            "depth": self.depth,
            "tile_bytes": self.tile_bytes,
            "buffer": self.buffer,
            "dtype": self.dtype,
            "stage_bytes": sum(self.loop_tiles),
            "used": self.used,
            "shared_bytes": self.shared_bytes,
            "budget": self.budget,
            "optin_depth": self.optin_depth,
            "depths": dict(self.depths),
        }

    @property
    def lines(self) -> list[int]:
        return sorted({ln for ln in (source_line(s) for s in self.stores) if ln is not None})

    @property
    def loop_line(self) -> int | None:
        return loop_line(self.loop)

    def at_line(self, line: int) -> Instr:
        """The copy to point a diagnostic at for ``line`` (its global load)."""
        for s in self.stores:
            if source_line(s) == line:
                return s
        return self.stores[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "buffer": self.buffer,
            "lines": self.lines,
            "dtype": self.dtype,
            "tile_bytes": self.tile_bytes,
            "depth": self.depth,
            "depths": dict(self.depths),
            "used": self.used,
            "budget": self.budget,
            "shared_bytes": self.shared_bytes,
            "optin_depth": self.optin_depth,
            "reason": self.reason,
            "shape": list(self.shape),
            "box": [d.to_json() for d in self.box.dims] if self.box else None,
            "box_shape": list(self.box.shape) if self.box else None,
            "rereads": self.box.rereads if self.box else None,
        }


def _buffer_of(ins: Instr, ev: IndexEval) -> str | None:
    name = ins.attrs.get("buffer")
    if name:
        return str(name)
    if not ins.args:
        return None
    try:
        p = ev.poly(ins.args[0])
    except Unstageable:
        return None
    bufs = {a[5:] for m in p for a in m if a.startswith("addr:")}
    return next(iter(bufs)) if len(bufs) == 1 else None


def _after(cfg, a: Instr, b: Instr) -> bool:
    """Whether ``b`` runs after ``a`` in every trip that runs ``b`` (dominance)."""
    if a.block is b.block:
        return a.block.instrs.index(a) < b.block.instrs.index(b)
    return cfg.dominates(a.block, b.block)


def _anchor(cfg, lp: Loop, ins: Instr):
    """The block that stands for ``ins`` at ``lp``'s level: its own block, or
    the header of the loop nested in ``lp`` that holds it."""
    b = ins.block
    inner = cfg.loop_of(b)
    while inner is not None and inner is not lp and inner.parent is not lp:
        inner = inner.parent
    return b if inner is lp or inner is None else inner.header


def _every_trip(cfg, lp: Loop, ins: Instr) -> bool:
    anchor = _anchor(cfg, lp, ins)
    return all(cfg.dominates(anchor, latch) for latch in lp.latches)


def _after_in(cfg, lp: Loop, a: Instr, b: Instr) -> bool:
    """Whether ``b`` runs after ``a`` in every trip of ``lp`` that runs ``b``."""
    xa, xb = _anchor(cfg, lp, a), _anchor(cfg, lp, b)
    if xa is xb:
        return xa is a.block and a.block is b.block and _after(cfg, a, b)
    return cfg.dominates(xa, xb)


def tile_copies(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[TileCopy]:
    """The loops of ``kernel`` that copy a tile global -> registers -> shared
    at every trip, barrier, then read it; each with its depth on ``target``."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    cfg = cfg_of(kernel)
    if not cfg.loops:
        return []
    block, _ = launch_block(kernel)
    ev = IndexEval(kernel, block)
    stores_by_buf: dict[str, list[Instr]] = {}
    for ins in kernel.instrs():
        if ins.op in (O.STORE, O.CP_ASYNC, O.ATOMIC, O.WMMA_STORE, O.STMATRIX) and _space(ins) == "shared":
            buf = _buffer_of(ins, ev) if ins.op is not O.CP_ASYNC else _cp_async_buffer(ins, ev)
            stores_by_buf.setdefault(buf or "?", []).append(ins)
    reads_by_buf: dict[str, list[Instr]] = {}
    for ins in kernel.instrs():
        if ins.op in (O.LOAD, O.WMMA_LOAD, O.LDMATRIX) and _space(ins) == "shared":
            reads_by_buf.setdefault(_buffer_of(ins, ev) or "?", []).append(ins)
    barriers = [i for i in kernel.instrs() if i.op is O.BARRIER]
    found: dict[tuple[Loop, str], TileCopy] = {}
    for buf, stores in stores_by_buf.items():
        if buf == "?" or buf not in kernel.buffers:
            continue
        for lp in _loops_of(cfg, stores):
            in_loop = [s for s in stores if s.block in lp.blocks]
            copies = [(s, _plain_copy(s, lp)) for s in in_loop]
            if not in_loop or any(ld is None for _, ld in copies):
                continue
            if not all(_every_trip(cfg, lp, s) for s in in_loop):
                continue
            bar = next(
                (b for b in barriers if b.block in lp.blocks and all(_after_in(cfg, lp, s, b) for s in in_loop)), None
            )
            if bar is None:
                continue
            reads = [r for r in reads_by_buf.get(buf, []) if r.block in lp.blocks and _after_in(cfg, lp, bar, r)]
            if not reads:
                continue
            loads = [ld for _, lds in copies for ld in lds]  # type: ignore[union-attr]
            b = kernel.buffers[buf]
            dtype = str(loads[0].attrs.get("dtype") or loads[0].results[0].type) if loads else b.dtype
            tc = TileCopy(kernel.name, lp, display_name(buf), in_loop, loads, bar, reads, tile_bytes=b.bytes or 0,
                          dtype=dtype)  # fmt: skip
            tc.shape = tuple(x or 0 for x in b.shape)
            if b.dynamic or not b.bytes:
                tc.reason = f"`{buf}` is dynamic shared memory of unknown size"
            tc.box = _copy_box(tc, ev, cfg, settings)
            found[(lp, buf)] = tc
            break
    out = list(found.values())
    total = sum(b.bytes or 0 for b in kernel.buffers.values() if b.space == "shared")
    optin = settings.shared_budget == "optin"
    for tc in out:
        tiles = [t.tile_bytes for t in out if t.loop is tc.loop]
        tc.loop_tiles = tiles
        tc.used = max(0, total - sum(tiles))
        tc.budget = budget_bytes(target, optin)
        tc.optin_budget = budget_bytes(target, True)
        for name in SIDE_BY_SIDE:
            tc.depths[name] = depth(parse_target(name), tiles, tc.used, settings.stage, optin) if not tc.reason else 0
        if tc.reason:
            continue
        tc.depth, tc.depth_why = depth_reason(target, tiles, tc.used, settings.stage, optin)
        tc.optin_depth = depth(target, tiles, tc.used, settings.stage, True)
        tc.shared_bytes = tc.depth * sum(tiles) + tc.used
        tc.budget_limited = limited_by_budget(target, tiles, tc.used, settings.stage, optin)
    return sorted(out, key=lambda t: (t.lines[:1] or [0])[0])


def _copy_box(tc: TileCopy, ev: IndexEval, cfg, settings: Settings) -> Box | None:
    """The box a tile copy's global loads read at one trip: the trips of
    constant loops nested in the copy's loop count as lanes."""
    try:
        leaves = []
        inner: dict[str, int] = {}
        for ld in tc.loads:
            lf = _leaf(ev, ld, ld.results.index(ld.results[0]) if ld.results else None)
            addr = lf.address
            for lp in cfg.loops_around(ld.block):
                if lp is tc.loop:
                    break
                key = f"trip:{lp.header.name}"
                trips = loop_trips(lp)
                if trips is None:
                    raise Unstageable("an inner copy loop without a constant trip count")
                var = f"inner.{lp.header.name}"
                inner[var] = trips
                addr = p_subst(addr, key, p_tf(("v", var)))
            lanes = {v: n for v, n in inner.items() if any(v in tf_vars(c) for c in addr.values())}
            for i in range(max(1, len(ld.results))):
                leaves.append(Leaf(ld, addr, lanes, p_const(i * lf.elem_bytes), lf.elem_bytes, i))
        return box_of(leaves, ev, False, leaves[0].elem_bytes, settings.solver_rlimit, prove=False)
    except (Unstageable, IndexError, ValueError) as e:
        log.debug("no box for the copy of %s: %s", tc.buffer, e)
        return None


def _loops_of(cfg, stores: list[Instr]) -> list[Loop]:
    seen: list[Loop] = []
    for s in stores:
        for lp in cfg.loops_around(s.block):
            if lp not in seen:
                seen.append(lp)
    return sorted(seen, key=lambda lp: len(lp.blocks))  # innermost first


def _plain_copy(store: Instr, lp: Loop) -> list[Instr] | None:
    """The global loads whose values ``store`` writes unchanged, or None."""
    if store.op is not O.STORE:
        return None
    vals = store.args[1:]
    if not vals:
        return None
    loads = []
    for v in vals:
        d = v.defn
        if d is None or d.op is not O.LOAD or _space(d) != "global" or d.block not in lp.blocks:
            return None
        if d not in loads:
            loads.append(d)
    return loads


def _cp_async_buffer(ins: Instr, ev: IndexEval) -> str | None:
    try:
        p = ev.poly(ins.args[0])
    except Unstageable:
        return None
    bufs = {a[5:] for m in p for a in m if a.startswith("addr:")}
    return next(iter(bufs)) if len(bufs) == 1 else None


# =============================================================================
# decoded panels on the host (TL401)
# =============================================================================


@dataclass
class DecodeVerdict:
    kernel: str
    sum: Instr
    loop: Loop
    decode: Instr  # the conversion of an integer code into a float
    operand: str
    loads: list[Instr]
    output_loops: list[Loop] = field(default_factory=list)
    reading: list[Loop] = field(default_factory=list)  # output loops the operand reads
    others: list[Loop] = field(default_factory=list)  # output loops it does not read (re-decoding)
    redecodes: int = 0  # times each value is decoded again (trips of the other loops)
    panel_shape: tuple[int, ...] = ()
    panel_bytes: int = 0
    stageable: bool = False
    reason: str | None = None

    @property
    def line(self) -> int | None:
        return source_line(self.decode)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "operand": self.operand,
            "line": self.line,
            "sum_line": source_line(self.sum),
            "redecodes": self.redecodes,
            "panel_shape": list(self.panel_shape),
            "panel_bytes": self.panel_bytes,
            "stageable": self.stageable,
            "reason": self.reason,
        }


def loop_trips(lp: Loop) -> int | None:
    """The trip count of a loop with a constant start, step and bound."""
    for ex in lp.exits:
        iv, bound = ex.iv, ex.bound
        if iv is None or bound is None or bound.defn is None or bound.defn.op is not O.CONST:
            continue
        s = iv.start.defn
        if s is None or s.op is not O.CONST:
            continue
        start, stop, step = s.attrs.get("value"), bound.defn.attrs.get("value"), iv.step
        if not all(isinstance(x, int) for x in (start, stop)) or not step:
            continue
        cmp = ex.cmp
        if ex.exits_when:  # the exit test: invert to the stay test
            cmp = {"ge": "lt", "gt": "le", "le": "gt", "lt": "ge", "eq": "ne", "ne": "eq",
                   "hs": "lo", "hi": "ls", "ls": "hi", "lo": "hs"}.get(cmp or "", cmp)  # fmt: skip
        first = start + step if ex.uses_next else start
        span = {"lt": stop - first, "lo": stop - first, "le": stop - first + 1, "ls": stop - first + 1,
                "ne": stop - first, "gt": first - stop, "hi": first - stop, "ge": first - stop + 1,
                "hs": first - stop + 1}.get(cmp or "")  # fmt: skip
        if span is None:
            continue
        n = max(0, -(-span // abs(step)))
        return 1 + n if ex.uses_next else n
    return None


def _reads_code(v: Value, depth_: int = 0) -> bool:
    """Whether an integer expression reads a loaded value (``q``, ``q - zero``,
    ``(q >> 4) & 15``), not counting the loads inside an address."""
    d = v.defn
    if d is None or depth_ > 6:
        return False
    if d.op is O.LOAD:
        return True
    if d.op in (O.ADD, O.SUB, O.MUL, O.AND, O.OR, O.XOR, O.SHR, O.SHL, O.CVT, O.NEG, O.SELECT, O.MIN, O.MAX):
        return any(_reads_code(a, depth_ + 1) for a in d.args)
    return False


def _decodes_in(v: Value, out: list[Instr], loads: list[Instr], depth_: int = 0) -> None:
    """Conversions of loaded integers into floats in ``v``'s expression (not
    inside any address), and every load the expression reads."""
    d = v.defn
    if d is None or depth_ > 32:
        return
    if d.op is O.LOAD:
        if d not in loads:
            loads.append(d)
        return
    if d.op is O.CVT:
        src = str(d.attrs.get("from_type") or d.args[0].type)
        explicit = bool(d.attrs.get("fn"))  # float(q), np.float32(q): a decode (convention 8)
        if is_float(d.result.type) and (explicit or not is_float(src)) and _reads_code(d.args[0]) and d not in out:
            out.append(d)
    if d.op in (O.PHI, O.CONST, O.PARAM, O.SPECIAL):
        return
    for a in d.args:
        _decodes_in(a, out, loads, depth_ + 1)


def decodes(kernel: Kernel, target: Target, settings: Settings | None = None) -> list[DecodeVerdict]:
    """Host kernels (target ``cpu``): the sums of products whose one decoded
    operand is decoded again at every trip of an output loop that does not
    read it, with the panel that would stage it (tolk-stage ``decodes``)."""
    from tolk_lint.config import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    if not target.is_host:
        return []
    cfg = cfg_of(kernel)
    ev = IndexEval(kernel, None)
    out: list[DecodeVerdict] = []
    sums = _sums_of_products(kernel)
    decoded_ops = []
    for ins, lp, factors in sums:
        for f in factors:
            dec: list[Instr] = []
            lds: list[Instr] = []
            _decodes_in(f, dec, lds)
            if dec:
                decoded_ops.append((ins, lp, f, dec, lds))
    for ins, lp, f, dec, lds in decoded_ops:
        name = ", ".join(_factor_name(ld) for ld in lds)
        v = DecodeVerdict(kernel.name, ins, lp, dec[0], name, lds)
        out.append(v)
        if not settings.stage:
            v.reason = "staging is turned off (`stage = false`)"
            continue
        if len(decoded_ops) != 1:
            v.reason = "more than one operand of the kernel's sums of products is decoded"
            continue
        outputs = [x for x in cfg.loops_around(lp.header) if x is not lp]
        v.output_loops = outputs
        trips = {x: loop_trips(x) for x in outputs}
        if any(t is None for t in trips.values()):
            v.reason = "an output loop has no constant bound"
            continue
        try:
            atoms = set()
            for ld in lds:
                for p in ev.address(ld):
                    atoms |= {a for m in p for a in m}
        except Unstageable as e:
            v.reason = str(e)
            continue
        reads = {a[5:] for a in atoms if a.startswith("trip:")}
        v.reading = [x for x in outputs if x.header.name in reads]
        v.others = [x for x in outputs if x.header.name not in reads]
        if not any((trips[x] or 0) >= 2 for x in v.others):
            v.reason = "every output loop of two trips or more reads the operand: each value is decoded once"
            continue
        own = {x.header.name for x in cfg.loops_around(lp.header) if x not in outputs}
        stray = reads - own - {x.header.name for x in v.reading}
        if stray or any(not (a.startswith(("trip:", "param:", "axis:")) or ev.atoms[a].kind == "uniform") for a in atoms):
            v.reason = "the operand reads ranges other than its sum's"
            continue
        sum_trips = [loop_trips(x) for x in cfg.loops_around(lp.header) if x not in outputs]
        if any(t is None for t in sum_trips):
            v.reason = "the sum's loop has no constant bound"
            continue
        v.panel_shape = tuple(t for t in sum_trips if t is not None)
        v.panel_bytes = int(math.prod(v.panel_shape)) * _dtype_bytes(dec[0].result.type)
        v.redecodes = int(math.prod(trips[x] or 1 for x in v.others))
        if v.panel_bytes > PANEL_MAX:
            v.reason = f"the panel takes {_kib(v.panel_bytes)}, more than the {_kib(PANEL_MAX)} a stack may hold"
            continue
        v.stageable = True
    return out


# =============================================================================
# per kernel, cached
# =============================================================================


@dataclass
class StagingFacts:
    kernel: Kernel
    target: Target
    operands: list[OperandVerdict] = field(default_factory=list)
    copies: list[TileCopy] = field(default_factory=list)
    decodes: list[DecodeVerdict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def admits(self) -> bool:
        return bool(self.operands) and all(v.stageable for v in self.operands)


def staging_facts(kernel: Kernel, module: Module | None, settings: Settings, target: Target) -> StagingFacts:
    """Everything the staging rules and the report need for one kernel."""
    facts = StagingFacts(kernel, target)
    if target.is_host or kernel.host:
        facts.decodes = decodes(kernel, target, settings)
        return facts
    facts.operands = operands(kernel, target, settings)
    facts.copies = tile_copies(kernel, target, settings)
    return facts
