"""The IR: a kernel is a control-flow graph of basic blocks in SSA form.

Both front ends (PTX through lark, Numba Python through libcst) produce these
nodes, so every analysis and rule works on both languages unchanged.

- A `Value` is defined exactly once: by an `Instr` (its ``results``) or as a
  kernel parameter. Registers and Python variables assigned more than once
  are renamed by the front ends (see `ir/builder.py`), and values merged at a
  join are `PHI` instructions, one operand per predecessor.
- An `Instr` carries its `Span` in the linted file and, where the source said
  so (PTX ``.loc``), the `Origin`: the line the user wrote, in the CUDA C,
  Triton or Python file the PTX came from.
- A `Block` ends with exactly one terminator (BRANCH, JUMP, RET or EXIT).

Nodes compare by identity: two instructions that look alike are still two
instructions. Structural facts (dominators, loops) live in `ir/cfg.py` and are
cached on the kernel by `tolk_lint.ir.cfg.cfg_of`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterator

from tolk_lint.ir.opcodes import TERMINATORS, Opcode


@dataclass(frozen=True, slots=True)
class Span:
    """A range in the linted file: 1-based lines and columns, end inclusive of
    the last character's column + 1 (ruff's convention: end points after)."""

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Origin:
    """The user's source line a PTX instruction came from (``.loc``).

    ``inlined_at`` is where the function holding this line was inlined, so a
    barrier inside an inlined device function has the call in the kernel as
    its outermost origin."""

    path: str
    line: int
    column: int = 0
    inlined_at: Origin | None = None

    def outermost(self) -> Origin:
        o = self
        while o.inlined_at is not None:
            o = o.inlined_at
        return o

    def chain(self) -> list[Origin]:
        """Innermost first: this line, then each call it was inlined into."""
        out, o = [], self
        while o is not None:
            out.append(o)
            o = o.inlined_at
        return out


# Types are short PTX-style strings: pred, b8..b64, u8..u64, s8..s64,
# f16, f16x2, bf16, bf16x2, tf32, f32, f64, e4m3x2, e5m2x2 (and "ptr"
# for Python array bases). Widths come from `type_bits`.
_BITS = {"pred": 1, "ptr": 64}


def const_int(v: Value | None) -> int | None:
    """The value of an integer constant (not a bool), else None."""
    d = v.defn if v is not None else None
    c = d.attrs.get("value") if d is not None and d.op is Opcode.CONST else None
    return c if isinstance(c, int) and not isinstance(c, bool) else None


@functools.lru_cache(maxsize=None)
def type_bits(t: str) -> int:
    if t in _BITS:
        return _BITS[t]
    digits = "".join(ch for ch in t if ch.isdigit())
    if "x" in t:  # packed: f16x2 -> 32, e4m3x2 -> 16
        head, _, count = t.partition("x")
        base = {"f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "e2m1": 4, "e3m2": 6, "e2m3": 6}.get(head, 32)
        return base * int(count or 1)
    return int(digits) if digits else 32


def is_signed(t: str) -> bool:
    return t.startswith("s")


def is_float(t: str) -> bool:
    return t.startswith(("f", "bf", "tf", "e4", "e5", "e2", "e3"))


class Value:
    """An SSA value. ``name`` is for dumps and messages (``%r7.2``, ``i.1``);
    ``source_name`` is the register or variable the user wrote (``%r7``)."""

    __slots__ = ("id", "type", "name", "source_name", "defn", "index")

    def __init__(self, id: int, type: str, name: str, source_name: str | None = None):
        self.id = id
        self.type = type
        self.name = name
        self.source_name = source_name or name
        self.defn: Instr | None = None  # None only for values defined outside any instr
        self.index = 0  # which result of ``defn`` this is

    def __repr__(self) -> str:
        return f"<{self.name}:{self.type}>"


class Instr:
    """One operation. ``args`` are Values; ``results`` the Values it defines."""

    __slots__ = ("op", "args", "results", "attrs", "span", "origin", "block", "text", "id")

    def __init__(
        self,
        op: Opcode,
        args: list[Value],
        results: list[Value],
        attrs: dict[str, Any] | None = None,
        span: Span | None = None,
        origin: Origin | None = None,
        text: str = "",
    ):
        self.op = op
        self.args = args
        self.results = results
        self.attrs = attrs or {}
        self.span = span
        self.origin = origin
        self.block: Block | None = None
        self.text = text  # the source text of the statement, for messages
        self.id = 0
        for i, r in enumerate(results):
            r.defn = self
            r.index = i

    @property
    def result(self) -> Value:
        return self.results[0]

    @property
    def is_terminator(self) -> bool:
        return self.op in TERMINATORS

    def targets(self) -> tuple[Block, ...]:
        if self.op is Opcode.BRANCH:
            return tuple(self.attrs["targets"])
        if self.op is Opcode.JUMP:
            return (self.attrs["target"],)
        return ()

    def __repr__(self) -> str:
        return f"<{self.op.value} {self.text or ''}>"


class Block:
    __slots__ = ("name", "instrs", "preds", "succs", "kernel", "id", "span")

    def __init__(self, name: str):
        self.name = name
        self.instrs: list[Instr] = []
        self.preds: list[Block] = []
        self.succs: list[Block] = []
        self.kernel: Kernel | None = None
        self.id = 0
        self.span: Span | None = None  # the label, when the source has one

    @property
    def terminator(self) -> Instr | None:
        return self.instrs[-1] if self.instrs and self.instrs[-1].is_terminator else None

    def phis(self) -> Iterator[Instr]:
        for ins in self.instrs:
            if ins.op is not Opcode.PHI:
                break
            yield ins

    def __repr__(self) -> str:
        return f"<block {self.name}>"


@dataclass
class Buffer:
    """A named array in a memory space: ``.shared .align 4 .b8 s[1024]``,
    ``cuda.shared.array((16, 16), float32)``, ``cuda.local.array(4, int32)``.
    ``shape`` is in elements of ``dtype``; ``None`` entries are unknown
    extents; ``dynamic`` marks ``.extern .shared`` / ``shape=0`` arrays."""

    name: str
    space: str
    dtype: str
    shape: tuple[int | None, ...]
    align: int = 0
    dynamic: bool = False
    span: Span | None = None
    origin: Origin | None = None
    init: list[Any] | None = None

    @property
    def elements(self) -> int | None:
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    @property
    def bytes(self) -> int | None:
        n = self.elements
        return None if n is None else n * max(1, type_bits(self.dtype) // 8)


@dataclass
class Param:
    """A kernel parameter. ``kind`` is ``scalar`` or ``pointer`` (PTX params
    are scalars until used as an address: the front end may refine).
    ``volatile``: the host may change it during the launch."""

    name: str
    dtype: str
    kind: str = "scalar"
    space: str | None = None  # the pointee's space for pointers
    value: Value | None = None
    volatile: bool = False
    written: bool | None = None  # does the kernel store through it (None: unknown)
    ndim: int = 0  # Python arrays: number of dimensions
    label: str | None = None  # the name its source gives it (the CUDA C parameter a PTX one compiles from)
    signed: bool | None = None  # its source's integer type is signed (None: unknown, or not an integer)


def pointer_params(address: Value) -> set[str]:
    """The 64-bit kernel parameters (PTX names) an address is computed from,
    through the pointer arithmetic, conversions, selects and phis on the way:
    one for an access through one pointer argument."""
    seen, work = set(), [address]
    found: set[str] = set()
    while work and len(seen) < 256:
        v = work.pop()
        if v in seen or v.defn is None:
            continue
        seen.add(v)
        d = v.defn
        if d.op is Opcode.PARAM:
            if v.type in ("u64", "b64", "s64", "ptr"):
                found.add(str(d.attrs.get("name")))
            continue
        if d.op in (Opcode.ADD, Opcode.SUB, Opcode.CVT, Opcode.MAD, Opcode.SELECT, Opcode.PHI):
            work += d.args
    return found


# What one CUDA block may hold: at most 1024 threads, 1024 along x and y, 64 along z.
MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)


def impossible_block(dims: tuple[int, ...]) -> str | None:
    """Why no launch can have block shape ``dims``, or None when one can."""
    dims = tuple(dims) + (1,) * (3 - len(dims))
    if len(dims) > 3 or any(d < 1 for d in dims):
        return "a block has one to three dimensions of at least 1 thread"
    if any(d > m for d, m in zip(dims, MAX_BLOCK_DIMS)):
        return "a block is at most 1,024 threads along x and y and 64 along z"
    if dims[0] * dims[1] * dims[2] > MAX_BLOCK_THREADS:
        return f"a block holds at most 1,024 threads, not {dims[0] * dims[1] * dims[2]:,}"
    return None


@dataclass
class LaunchBounds:
    """What is known of the launch shape. ``block``: the exact block shape
    the kernel is analysed under (``--block``, configuration, a call site,
    ``.reqntid``, a host launch, a ``launch`` comment); ``contract``: else
    the set of blocks it is analysed under (a `tolk_lint.launch.shapes.Contract`:
    ``kernel.forall``, or the contract TL205 inferred); ``max_threads``: an
    upper bound on threads per block (``.maxntid``). ``found``: the shapes
    the front end read in the file (`tolk_lint.launch.shapes.LaunchShape`:
    call sites, the launch comment); ``shapes``: the ones the engine's
    ``prepare`` chose to lint under (`tolk_lint.launch`)."""

    block: tuple[int, int, int] | None = None
    max_threads: int | None = None
    maxntid: tuple[int, ...] | None = None
    reqntid: tuple[int, ...] | None = None
    minnctapersm: int | None = None
    maxnreg: int | None = None
    source: str = ""  # where ``block`` came from, for messages
    grid: tuple | None = None  # the launch's blocks per grid dimension, as (lo, hi) ranges (None: any)
    contract: Any = None
    arguments: dict = field(default_factory=dict)  # parameter name -> what the launch fixes of it
    found: tuple = ()
    shapes: tuple = ()

    @property
    def threads(self) -> int | None:
        if self.block:
            return self.block[0] * self.block[1] * self.block[2]
        if self.contract is not None:
            return min(self.max_threads or self.contract.threads, self.contract.threads)
        return self.max_threads

    def assumed(self, tid_dims, rank_only=frozenset()) -> str:
        """The launch shape a finding assumes, in words ("" when ``block``
        gives it), for a kernel that reads the ``tid`` dimensions
        ``tid_dims`` (`Kernel.tid_dims`; ``rank_only``: those it reads only
        for its linear thread rank, taken as flat too)."""
        if self.block is not None:
            return ""
        if self.contract is not None:  # `kernel.forall`, or the contract TL205 inferred
            return f"{self.contract.describe()}, {self.source}" if self.source else self.contract.describe()
        if self.reqntid:
            return f"a block of {'x'.join(str(x) for x in self.reqntid)} threads (.reqntid)"
        flat = "" if ("y" in tid_dims or "z" in tid_dims) else ", one-dimensional as the kernel reads only tid.x"
        if flat and rank_only:
            flat = ", one-dimensional as the kernel reads tid.y and tid.z only for its linear thread rank"
        if self.max_threads:
            src = ".maxntid" if self.maxntid else (self.source or "the configured bounds")
            return f"a block of at most {self.max_threads} threads ({src}{flat})"
        return f"any block of at most 1024 threads (no launch shape given{flat})"


@dataclass(eq=False)
class Kernel:
    """One kernel (``.entry``, ``@cuda.jit``, ``@njit``) or device function
    (``.func``, ``@cuda.jit(device=True)``)."""

    name: str
    language: str  # "ptx" | "python"
    path: str
    target: str = "sm_80"
    params: list[Param] = field(default_factory=list)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    is_entry: bool = True
    host: bool = False
    launch: LaunchBounds = field(default_factory=LaunchBounds)
    span: Span | None = None  # the kernel's header line
    origin: Origin | None = None
    assumptions: list[Value] = field(default_factory=list)  # `tolk: assume` facts (pred values)
    returns: list[Param] = field(default_factory=list)  # .func return values
    # found while preparing it for the rules (a `tolk: assume` in its CUDA source that does not read)
    diagnostics: list[Any] = field(default_factory=list, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def instrs(self) -> Iterator[Instr]:
        for b in self.blocks:
            yield from b.instrs

    def cached(self, key: str, compute):
        """Per-kernel cache for derived facts (uniformity, memory, ...)."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    def tid_dims(self) -> frozenset[str]:
        """The block dimensions whose ``tid``/``ntid`` the kernel reads
        (cached). The project's convention: a kernel that reads only ``x``
        is launched with flat blocks (`MemoryCore.tid_dims`, the warp-level
        questions of `smt.Encoder`), and its messages say so."""
        return self.cached("tid_dims", lambda k: frozenset(
            i.attrs.get("name", "").partition(".")[2] for i in k.instrs()
            if i.op is Opcode.SPECIAL and i.attrs.get("name", "").startswith(("tid.", "ntid."))))  # fmt: skip

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def release(self) -> None:
        """Let go of the IR: the kernel is never used again (the kernel-by-
        kernel lint, once it is linted). Instructions know their block,
        blocks their kernel and neighbours, values their definition: cycles,
        which only the cyclic collector frees, in passes over every object
        alive. Cut here, the IR is freed when the last reference to it goes
        (10 MB of PTX: 5 s of collections -> 2 s)."""
        self._cache.clear()
        for b in self.blocks:
            for ins in b.instrs:
                ins.block = None
                for r in ins.results:
                    r.defn = None
            b.kernel = None
            b.instrs, b.preds, b.succs = [], [], []
        self.blocks = []
        for p in self.params + self.returns:
            p.value = None
        self.assumptions = []


@dataclass(frozen=True, slots=True)
class KernelOutline:
    """What a lint keeps of a kernel once its IR is gone: its name and its
    header's span (`Kernel.span`). PTX is linted kernel by kernel
    (`tolk_lint.frontends.ptx.stream`), each kernel's IR let go as soon as
    it is linted; ``LintResult.kernels`` lists these."""

    name: str
    span: Span | None
    host: bool = False

    @classmethod
    def of(cls, k: Kernel) -> KernelOutline:
        return cls(k.name, k.span, k.host)


# the `Module.cached` key of a Python file's `ast` tree, as its front end parsed
# it (the kernel cache reads where each function is from the same tree)
PYTHON_TREE = "python ast"


@dataclass
class Module:
    """Everything read from one file: its kernels and device functions, the
    front end's own findings (TL001/TL002) and the PTX ``.file`` table."""

    path: str
    language: str
    source: str
    kernels: list[Kernel] = field(default_factory=list)
    functions: dict[str, Kernel] = field(default_factory=dict)  # device functions by name
    diagnostics: list[Any] = field(default_factory=list)  # tolk_lint.diagnostics.Diagnostic
    files: dict[int, str] = field(default_factory=dict)  # PTX .file index -> path
    target: str | None = None  # PTX .target
    _lines: list[str] | None = field(default=None, repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def lines(self) -> list[str]:
        """``source.splitlines()``, split once: every kernel of a file looks
        at its lines (a split per kernel made big files quadratic)."""
        if self._lines is None:
            self._lines = self.source.splitlines()
        return self._lines

    def cached(self, key: str, compute):
        """Per-module cache for what every kernel of the file asks for (the
        CUDA sources its ``.file`` table names): once per lint, not once per
        kernel."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    def all_kernels(self) -> list[Kernel]:
        """Entries first, then device functions (which have bodies of their own)."""
        out = list(self.kernels)
        out += [f for f in self.functions.values() if f not in out]
        return out
