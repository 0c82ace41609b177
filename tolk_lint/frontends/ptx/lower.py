"""The PTX syntax tree (`parser.py`) -> the IR (`tolk_lint.ir`).

One `Kernel` per ``.entry`` and per ``.func`` with a body. Per function:

1. **Flatten.** Walk the body and its ``{ }`` scopes: ``.reg`` names declared
   in a nested scope get a key of their own (``q'3``) when the name is already
   taken, call-site ``.param`` slots become per-scope variables, ``.shared``/
   ``.local`` declarations become buffers, and every instruction is tagged with
   its scope and the `Origin` of the ``.loc`` in force (following
   ``inlined_at`` to the ``.loc`` that named that position).
2. **Split.** Basic blocks begin at labels and after ``bra``/``ret``/``exit``/
   ``trap``; a predicated instruction that is not a branch gets a block of its
   own under a BRANCH on its guard (``@!p`` swaps the targets), so a guard is
   control dependence like any ``if``. All blocks and edges exist before any
   instruction is lowered.
3. **Fill.** Blocks are filled in layout order with `Builder` (SSA renaming:
   ``read``/``write`` of register keys), each sealed once its predecessors
   are filled.

Operand conventions follow the docstring of `tolk_lint.ir.opcodes`. Anything
not modelled becomes OPAQUE (results written to its destination registers)
and is reported once per opcode per kernel as TL002.
"""

from __future__ import annotations

import gc
import re
from typing import Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.builder import Builder
from tolk_lint.ir.nodes import Block, Buffer, Instr, Kernel, LaunchBounds, Module, Origin, Param, Span, Value
from tolk_lint.ir.opcodes import Opcode

from .parser import FuncDecl, ParamDecl, PtxFile, PtxSyntaxError, VarDecl, parse_tree

O = Opcode

TYPES = frozenset(
    """pred b1 b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 tf32 f32 f64
    e4m3 e5m2 e4m3x2 e5m2x2 e4m3x4 e5m2x4 e2m1 e2m1x2 e2m1x4 e2m3 e3m2 e2m3x2 e3m2x2 e2m3x4 e3m2x4 ue8m0x2
    ue8m0 s4 u4 s2 u2 s32x2 u32x2 f32x2 f64x2""".split()
)

SPACE_OF = {
    "global": "global",
    "shared": "shared",
    "shared::cta": "shared",
    "shared::cluster": "shared",
    "local": "local",
    "const": "const",
    "param": "param",
    "param::entry": "param",
    "param::func": "param",
}

SPECIAL_PREFIXES = (
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt", "clock", "clock64", "clock_hi",
    "globaltimer", "globaltimer_lo", "globaltimer_hi", "pm", "envreg", "dynamic_smem_size", "total_smem_size",
    "aggr_smem_size", "reserved_smem_offset", "current_graph_exec", "is_explicit_cluster", "clusterid",
    "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank", "cluster_nctarank", "warpsize",
)  # fmt: skip
_SPECIAL_RE = re.compile(
    r"%(?:" + "|".join(sorted(SPECIAL_PREFIXES, key=len, reverse=True)) + r")(?:\d+(?:_64)?|_\d+|_begin|_end)?(?:\.[xyz])?\Z"
)
_RANGE_RE = re.compile(r"(.*?)(\d+)\Z")
_SHAPE_RE = re.compile(r"m\d+n\d+k\d+\Z")
_CMP_OPS = frozenset("eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan".split())
_BOOL_OPS = {"and": O.AND, "or": O.OR, "xor": O.XOR}

ARITH = {
    "add": O.ADD, "sub": O.SUB, "mul": O.MUL, "mad": O.MAD, "fma": O.MAD, "div": O.DIV, "rem": O.REM,
    "neg": O.NEG, "abs": O.ABS, "min": O.MIN, "max": O.MAX, "and": O.AND, "or": O.OR, "xor": O.XOR,
    "not": O.NOT, "shl": O.SHL, "shr": O.SHR,
}  # fmt: skip
ARITY = {O.NEG: 1, O.ABS: 1, O.NOT: 1, O.MAD: 3}

PURE_FAMILIES = frozenset(
    """bfe bfi bfind prmt popc clz brev sad lop3 shf fns bmsk szext dp4a dp2a ex2 lg2 sqrt rsqrt rcp sin cos
    tanh copysign testp cnot mul24 mad24 addc subc madc isspacep istypep txq suq getctarank mapa createpolicy
    vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 vadd4
    vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4 alloca stacksave cvt.pack""".split()
)
PURE_NO_RESULT = frozenset("prefetch prefetchu discard applypriority nanosleep pmevent brkpt stackrestore".split())
OPAQUE_FAMILIES = frozenset(
    """mbarrier tensormap wgmma setmaxnreg elect griddepcontrol multimem tcgen05 clusterlaunchcontrol
    st.async red.async brx""".split()
)
# families whose first operand (when a register) is read, not written
_OPAQUE_NO_DEST = frozenset("st sust sured red bar barrier brx bra call ret exit nanosleep pmevent".split())
# families whose first operand is not a destination register
_NO_DEST_FAMILIES = frozenset(
    "bra brx call ret exit trap".split()
)
PRED_RESULT = frozenset({"testp", "isspacep", "istypep"})

_SINK = "_"


class _Unmodelled(Exception):
    """An instruction whose operands cannot be interpreted: lower it as OPAQUE."""


class OpInfo:
    """What an opcode string says, decoded once per distinct string."""

    __slots__ = ("text", "fam", "mods", "modset", "types", "t", "space")

    def __init__(self, text: str):
        self.text = text
        parts = text.split(".")
        self.fam = parts[0]
        self.mods = parts[1:]
        self.modset = frozenset(self.mods)
        self.types = [p for p in self.mods if p in TYPES]
        self.t = self.types[-1] if self.types else None
        sp = None
        for p in self.mods:
            s = SPACE_OF.get(p)
            if s is not None:
                sp = s
                break
        self.space = sp


_OPINFO: dict[str, OpInfo] = {}


def opinfo(text: str) -> OpInfo:
    oi = _OPINFO.get(text)
    if oi is None:
        oi = _OPINFO[text] = OpInfo(text)
    return oi


# -- scopes -------------------------------------------------------------------------------


class Scope:
    __slots__ = ("id", "parent", "regs", "slots", "cache")

    def __init__(self, id: int, parent: Scope | None):
        self.id = id
        self.parent = parent
        self.regs: dict[str, tuple[str, str]] = {}  # name -> (key, type)
        self.slots: dict[str, tuple[str, str, int]] = {}  # call-site .param name -> (key, type, bytes)
        self.cache: dict[str, tuple] = {}


# -- module ----------------------------------------------------------------------------------


def parse_ptx(text: str, path: str) -> Module:
    """Parse and lower one PTX file. Never raises: syntax errors become one
    TL001 diagnostic (and no kernels), unmodelled instructions TL002."""
    # Parsing and lowering allocate millions of small objects that all stay
    # alive: the cyclic GC would rescan them again and again (it is half the
    # time on big files). Nothing here makes cycles that need collecting early.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_ptx(text, path)
    finally:
        if enabled:
            gc.enable()


def _parse_ptx(text: str, path: str) -> Module:
    mod = Module(path=path, language="ptx", source=text)
    try:
        pf = parse_tree(text)
    except PtxSyntaxError as e:
        mod.diagnostics.append(_tl001(path, e.message, e.line, e.column, e.end_line, e.end_column))
        return mod
    except RecursionError:
        mod.diagnostics.append(_tl001(path, "cannot parse: the file nests too deeply", 1, 1))
        return mod
    except Exception as e:  # a bug of ours must not become a traceback for the user
        mod.diagnostics.append(_tl001(path, f"cannot parse: internal error ({type(e).__name__}: {e})", 1, 1))
        return mod
    mod.files = dict(pf.files)
    mod.target = pf.target
    lower_module(pf, mod)
    return mod


def _tl001(path: str, message: str, line: int, col: int, end_line: int | None = None, end_col: int | None = None):
    return Diagnostic(
        code="TL001",
        severity=Severity.ERROR,
        message=message,
        span=Span(path, line, col, end_line if end_line is not None else line, end_col if end_col is not None else col + 1),
        name="parse-error",
    )


def _buffer_of(d: VarDecl, path: str) -> Buffer:
    shape: tuple[int | None, ...] = d.shape
    dynamic = "extern" in [x.lstrip(".") for x in d.linkage] and (not shape or None in shape)
    space = {"tex": "texture"}.get(d.space, d.space)
    dtype = d.dtype
    if dtype in ("texref", "surfref", "samplerref"):
        space = {"texref": "texture", "surfref": "surface", "samplerref": "texture"}[dtype]
    return Buffer(
        name=d.name,
        space=space,
        dtype=dtype,
        shape=shape,
        align=d.align,
        dynamic=dynamic,
        span=Span(path, d.line, d.column, d.end_line, d.end_column),
        init=d.init,
    )


def lower_module(pf: PtxFile, mod: Module) -> None:
    path = mod.path
    files = pf.files
    module_buffers: dict[str, Buffer] = {}
    funcs: dict[str, FuncDecl] = {}
    for it in pf.items:
        if isinstance(it, tuple) and it and it[0] == "V":
            d = it[1]
            if d.space in ("global", "shared", "const", "local", "tex"):
                module_buffers[d.name] = _buffer_of(d, path)
        elif isinstance(it, FuncDecl):
            if it.name not in funcs or it.body is not None:
                funcs[it.name] = it
    for it in pf.items:
        if not isinstance(it, FuncDecl) or it.body is None:
            continue
        try:
            k = FunctionLowering(it, pf, mod, module_buffers, funcs).lower()
        except Exception as e:  # never a traceback: report and skip the kernel
            mod.diagnostics.append(
                Diagnostic(
                    code="TL002",
                    severity=Severity.WARNING,
                    message=f"`{it.name}` could not be lowered (internal error: {type(e).__name__}: {e}); "
                    "it is not analysed",
                    span=Span(path, it.line, it.column, it.end_line, it.end_column),
                    kernel=it.name,
                    name="unsupported-construct",
                )
            )
            continue
        it.body = None  # the tuples are no longer needed: let them go before the next function
        if it.kind == "entry":
            mod.kernels.append(k)
        else:
            mod.functions[k.name] = k
    del files


def _launch(perf: list[tuple[str, list[int]]]) -> LaunchBounds:
    lb = LaunchBounds()
    for name, vals in perf:
        if name == ".maxntid" and vals:
            lb.maxntid = tuple(vals)
        elif name == ".reqntid" and vals:
            lb.reqntid = tuple(vals)
        elif name == ".minnctapersm" and vals:
            lb.minnctapersm = vals[0]
        elif name == ".maxnreg" and vals:
            lb.maxnreg = vals[0]
    if lb.reqntid:
        dims = (list(lb.reqntid) + [1, 1, 1])[:3]
        lb.block = (dims[0], dims[1], dims[2])
        lb.max_threads = dims[0] * dims[1] * dims[2]
        lb.source = ".reqntid"
    elif lb.maxntid:
        n = 1
        for v in lb.maxntid:
            n *= v
        lb.max_threads = n
        lb.source = ".maxntid"
    return lb


def _int_like(t: str | None) -> bool:
    return t is not None and t[0] in "bsu" and t != "pred"


def _bits(t: str) -> int:
    from tolk_lint.ir.nodes import type_bits

    return type_bits(t)


def _wide(t: str) -> str:
    b = _bits(t)
    return f"{t[0]}{2 * b}" if t[0] in "bsuf" and b <= 64 else t


# -- one function ------------------------------------------------------------------------------


class _Seg:
    """A basic block before lowering: its statements and how it ends."""

    __slots__ = ("name", "span", "stmts", "term", "block", "fall", "npreds", "filled", "succ_segs", "dom_in",
                 "dom_out")

    def __init__(self, name: str | None, span: Span | None = None):
        self.name = name
        self.span = span
        self.stmts: list[tuple] = []  # (ins tuple, scope, origin, guarded-away)
        self.term: tuple | None = None
        self.block: Block | None = None
        self.fall: _Seg | None = None
        self.npreds = 0
        self.filled = False
        self.succ_segs: list[_Seg] = []
        self.dom_in = -1
        self.dom_out = -2


def _find_label(labels: dict, name: str | None, scope: Scope) -> _Seg | None:
    """The label ``name`` visible from ``scope`` (labels of ``{ }`` blocks are
    local to them), else any label of that name."""
    if not name:
        return None
    cands = labels.get(name)
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0][1]
    s: Scope | None = scope
    while s is not None:
        for ls, seg in cands:
            if ls is s:
                return seg
        s = s.parent
    return cands[0][1]


class FunctionLowering:
    def __init__(self, fd: FuncDecl, pf: PtxFile, mod: Module, module_buffers: dict[str, Buffer],
                 funcs: dict[str, FuncDecl]):  # fmt: skip
        self.fd = fd
        self.pf = pf
        self.mod = mod
        self.path = mod.path
        self.funcs = funcs
        self.k = Kernel(
            name=fd.name,
            language="ptx",
            path=mod.path,
            target=pf.target or "sm_80",
            is_entry=fd.kind == "entry",
            span=Span(mod.path, fd.line, fd.column, fd.end_line, fd.end_column),
        )
        self.k.launch = _launch(fd.perf)
        self.k.buffers.update(module_buffers)
        self.b = Builder(self.k)
        self.params: dict[str, Param] = {}
        self.param_decls: dict[str, ParamDecl] = {}
        self.ret_decls: dict[str, ParamDecl] = {}
        self.ret_slots: dict[str, set[int]] = {}
        self.field_params: dict[tuple[str, int, str], Value] = {}
        self.n_param_instrs = 0
        self.reported: set[str] = set()
        self.top = Scope(0, None)
        self.ranges: dict[str, tuple[str, int]] = {}
        self.scope_ids = 0
        self.used_keys: set[str] = set()
        self.declared: set[str] = set()
        self.slot_offsets: dict[str, set[int]] = {}
        self.call_results: dict[tuple[str, int], Value] = {}
        self.static_defs: dict[str, int] = {}  # register key -> number of instructions writing it
        self.single: dict[str, tuple[Value, _Seg]] = {}  # the one definition of a once-written register
        self.cur_seg: _Seg | None = None
        # current statement
        self.span: Span | None = None
        self.origin: Origin | None = None
        self.text = ""
        self.scope: Scope = self.top

    # ---------------------------------------------------------------------------------------
    def lower(self) -> Kernel:
        fd = self.fd
        self.all_params: dict[str, Param] = {}
        for pd in fd.params:
            self.param_decls[pd.name] = pd
            kind = "pointer" if ".ptr" in pd.attrs else "scalar"
            p = Param(pd.name, pd.dtype or "b8", kind=kind, space=pd.space)
            self.all_params[pd.name] = p
            self.k.params.append(p)
            if ".reg" in pd.attrs:
                self.top.regs[pd.name] = (pd.name, pd.dtype or "b32")
            else:
                self.params[pd.name] = p
        for r in fd.rets:
            self.k.returns.append(Param(r.name, r.dtype or "b8"))
            if ".reg" in r.attrs:
                self.top.regs[r.name] = (r.name, r.dtype or "b32")
            else:
                self.ret_decls[r.name] = r
        items = self.flatten(fd.body or [])
        self._count_defs(items)
        segs = self.split(items)
        self.fill(segs)
        k = self.b.finish()
        self.refine_params()
        return k

    # -- 1. flatten ----------------------------------------------------------------------------

    def flatten(self, body: list[tuple]) -> list[tuple]:
        items: list[tuple] = []
        locs: dict[tuple[int, int, int], Origin] = {}
        origin: Origin | None = None
        files = self.pf.files
        stack: list[tuple[list, int, Scope]] = [(body, 0, self.top)]
        scope = self.top
        while stack:
            stmts, i, scope = stack.pop()
            n = len(stmts)
            while i < n:
                st = stmts[i]
                i += 1
                tag = st[0]
                if tag == "I":
                    items.append((st, scope, origin))
                elif tag == "C":
                    _, f, line, col, inl, _l = st
                    if line == 0:
                        origin = None
                        continue
                    parent = None
                    if inl is not None:
                        parent = locs.get(inl)
                        if parent is None and inl[1] != 0:
                            parent = Origin(files.get(inl[0], f"<file {inl[0]}>"), inl[1], inl[2])
                    key = (f, line, col)
                    o = locs.get(key)
                    if o is None or o.inlined_at is not parent:
                        o = Origin(files.get(f, f"<file {f}>"), line, col, parent)
                        locs[key] = o
                    origin = o
                elif tag == "L":
                    if i < n and stmts[i][0] == "X":
                        continue  # `prototype_3 : .callprototype ...` names a prototype, not code
                    items.append(("L", st[1], st[2], st[3], scope))
                elif tag == "R":
                    self.declare_regs(st, scope)
                elif tag == "B":
                    stack.append((stmts, i, scope))
                    self.scope_ids += 1
                    stack.append((st[1], 0, Scope(self.scope_ids, scope)))
                    break
                elif tag == "V":
                    self.declare_var(st[1], scope, origin)
                # "X" (.callprototype), "P" (pragmas, .branchtargets): nothing to lower
        return items

    def _count_defs(self, items: list[tuple]) -> None:
        """How many instructions write each register (an over-count is
        harmless: it only turns off the shortcut in `val`)."""
        for it in items:
            if it[0] == "L":
                continue
            st = it[0]
            ops = st[3]
            if ops:
                o = ops[0]
                t0 = o[0]
                if t0 == "r" or t0 == "v" or t0 == "d":
                    if st[2].split(".", 1)[0] not in _NO_DEST_FAMILIES:
                        self._count_def(o, it[1])
        self.scope = self.top

    def _count_def(self, o: tuple, scope: Scope) -> None:
        t0 = o[0]
        if t0 == "r":
            names = [o[1]]
        elif t0 == "d":
            names = [o[1], o[2]]
        else:
            names = [x[1] for x in o[1] if x[0] == "r"]
        defs = self.static_defs
        self.scope = scope
        for n in names:
            if n == _SINK:
                continue
            r = self.resolve(n)
            if r[0] == "reg":
                defs[r[1]] = defs.get(r[1], 0) + 1

    def declare_regs(self, st: tuple, scope: Scope) -> None:
        _, t, names, _vec = st
        for name, count in names:
            if scope is self.top:
                if count is not None:
                    self.ranges[name] = (t, count)
                else:
                    self.top.regs[name] = (name, t)
                    self.used_keys.add(name)
            else:
                if count is not None:
                    for j in range(count):
                        self._declare_nested(f"{name}{j}", t, scope)
                else:
                    self._declare_nested(name, t, scope)

    def _declare_nested(self, name: str, t: str, scope: Scope) -> None:
        key = name
        if key in self.used_keys or self._top_reg(name) is not None:
            key = f"{name}'{scope.id}"
        self.used_keys.add(key)
        scope.regs[name] = (key, t)

    def _top_reg(self, name: str) -> tuple[str, str] | None:
        r = self.top.regs.get(name)
        if r is not None:
            return r
        m = _RANGE_RE.match(name)
        if m is not None:
            rg = self.ranges.get(m.group(1))
            if rg is not None and int(m.group(2)) < rg[1]:
                return (name, rg[0])
        return None

    def declare_var(self, d: VarDecl, scope: Scope, origin: Origin | None) -> None:
        if d.space == "param":
            if scope is self.top:
                return
            nbytes = 0
            el = max(1, _bits(d.dtype) // 8)
            n = 1
            for s in d.shape:
                n *= s or 1
            nbytes = el * n
            scope.slots[d.name] = (f"$arg:{d.name}@{scope.id}", d.dtype, nbytes)
            return
        if d.space in ("global", "shared", "const", "local", "tex"):
            buf = _buffer_of(d, self.path)
            buf.origin = origin
            self.k.buffers[d.name] = buf

    # -- 2. split into blocks -----------------------------------------------------------------

    def split(self, items: list[tuple]) -> list[_Seg]:
        entry = _Seg("entry", self.k.span)
        segs = [entry]
        labels: dict[str, list[tuple[Scope, _Seg]]] = {}
        cur = entry
        pending_fall: list[_Seg] = []
        closed = False  # cur ends with a terminator; the next statement starts a block

        def new_seg(name: str | None = None, span: Span | None = None) -> _Seg:
            nonlocal pending_fall
            s = _Seg(name, span)
            segs.append(s)
            for p in pending_fall:
                p.fall = s
            pending_fall = []
            return s

        for it in items:
            if it[0] == "L":
                _, name, line, col, lscope = it
                span = Span(self.path, line, col, line, col + len(name) + 1)
                if not closed:
                    pending_fall.append(cur)
                bname = name if name not in labels else f"{name}'{lscope.id}"
                cur = new_seg(bname, span)
                labels.setdefault(name, []).append((lscope, cur))
                closed = False
                continue
            st, scope, origin = it
            if closed:
                cur = new_seg(None)
                closed = False
            guard = st[1]
            op = st[2]
            fam = op.split(".", 1)[0]
            if fam == "bra":
                target = st[3][0][1] if st[3] and st[3][0][0] == "r" else None
                if guard is None:
                    cur.term = ("jump", target, st, origin, scope)
                else:
                    cur.term = ("cbr", guard, target, st, origin, scope)
                    pending_fall.append(cur)
                closed = True
            elif fam in ("ret", "exit", "trap"):
                if guard is None:
                    cur.term = (fam, st, origin)
                    closed = True
                else:
                    then = new_seg(None)
                    then.stmts = []
                    then.term = (fam, st, origin)
                    cur.term = ("pred", guard, then, None, st, origin, scope)
                    pending_fall.append(cur)
                    cur = then
                    closed = True
            elif guard is not None:
                # a predicated instruction: its own block under a branch on the guard
                pred_seg = cur
                then = new_seg(None)
                then.stmts.append((st, scope, origin, True))
                pred_seg.term = ("pred", guard, then, None, st, origin, scope)
                pending_fall.append(then)
                pending_fall.append(pred_seg)
                cur = new_seg(None)  # the continuation
            else:
                cur.stmts.append((st, scope, origin, False))
        if pending_fall or not closed:
            # falling off the end of the body: an implicit return
            if not closed:
                pending_fall.append(cur)
            end = new_seg(None)
            end.term = ("ret", None, None)
        # resolve targets and successor lists
        for s in segs:
            t = s.term
            if t is None:
                s.succ_segs = [s.fall] if s.fall is not None else []
            elif t[0] == "jump":
                tgt = _find_label(labels, t[1], t[4])
                s.succ_segs = [tgt] if tgt is not None else []
                if tgt is None:
                    s.term = ("badjump", t[1], t[2], t[3])
            elif t[0] == "cbr":
                tgt = _find_label(labels, t[2], t[5])
                if tgt is None:
                    s.term = ("badjump", t[2], t[3], t[4])
                    s.succ_segs = []
                else:
                    s.succ_segs = [tgt, s.fall] if s.fall is not tgt else [tgt]
            elif t[0] == "pred":
                s.succ_segs = [t[2], s.fall] if s.fall is not t[2] else [t[2]]
            else:
                s.succ_segs = []
        self._dominators(segs)
        return segs

    def _dominators(self, segs: list[_Seg]) -> None:
        """Dominator-tree intervals of the segments (pre/post numbers), so
        that a read of a once-written register whose definition dominates
        the read takes that definition directly (what SSA construction would
        find, without walking and placing trivial PHIs)."""
        entry = segs[0]
        # reverse post-order
        order: dict[int, int] = {}
        post: list[_Seg] = []
        seen = {id(entry)}
        stack: list[tuple[_Seg, int]] = [(entry, 0)]
        while stack:
            x, i = stack.pop()
            succ = x.succ_segs
            if i < len(succ):
                stack.append((x, i + 1))
                y = succ[i]
                if y is not None and id(y) not in seen:
                    seen.add(id(y))
                    stack.append((y, 0))
            else:
                post.append(x)
        rpo = post[::-1]
        for i, x in enumerate(rpo):
            order[id(x)] = i
        preds: dict[int, list[_Seg]] = {}
        for x in rpo:
            for y in x.succ_segs:
                if y is not None:
                    preds.setdefault(id(y), []).append(x)
        idom: dict[int, _Seg] = {id(entry): entry}
        changed = True
        while changed:
            changed = False
            for x in rpo[1:]:
                ps = [p for p in preds.get(id(x), ()) if id(p) in idom]
                if not ps:
                    continue
                new = ps[0]
                for p in ps[1:]:
                    a, c = p, new
                    while a is not c:
                        while order[id(a)] > order[id(c)]:
                            a = idom[id(a)]
                        while order[id(c)] > order[id(a)]:
                            c = idom[id(c)]
                    new = a
                if idom.get(id(x)) is not new:
                    idom[id(x)] = new
                    changed = True
        children: dict[int, list[_Seg]] = {}
        for x in rpo[1:]:
            d = idom.get(id(x))
            if d is not None:
                children.setdefault(id(d), []).append(x)
        n = 0
        pre: dict[int, int] = {}
        last: dict[int, int] = {}
        st2: list[tuple[_Seg, int]] = [(entry, 0)]
        pre[id(entry)] = 0
        while st2:
            x, i = st2.pop()
            ch = children.get(id(x), [])
            if i < len(ch):
                st2.append((x, i + 1))
                n += 1
                pre[id(ch[i])] = n
                st2.append((ch[i], 0))
            else:
                last[id(x)] = n
        for x in segs:
            x.dom_in = pre.get(id(x), -1)
            x.dom_out = last.get(id(x), -2)

    # -- 3. fill -----------------------------------------------------------------------------------

    def fill(self, segs: list[_Seg]) -> None:
        b = self.b
        for s in segs:
            s.block = b.block(s.name, s.span)
        for s in segs:
            uniq: list[_Seg] = []
            for t in s.succ_segs:
                if t is not None and all(t is not u for u in uniq):
                    uniq.append(t)
                    b.add_edge(s.block, t.block)
                    t.npreds += 1
            s.succ_segs = uniq
        entry = segs[0]
        b.position(entry.block)
        self.blk = entry.block
        self.emit_params()
        for s in segs:
            if s.npreds == 0:
                b.seal(s.block)
        for s in segs:
            blk = s.block
            b.position(blk)
            self.blk = blk
            self.cur_seg = s
            for st, scope, origin, unguarded in s.stmts:
                self.lower_stmt(st, scope, origin, s)
            self.lower_term(s)
            s.filled = True
            # seal each successor once its last predecessor is filled (before its
            # own turn for forward edges; after, for loop headers)
            for t in s.succ_segs:
                t.npreds -= 1
                if t.npreds == 0:
                    b.seal(t.block)

    # -- parameters -------------------------------------------------------------------------------

    def emit_params(self) -> None:
        b = self.b
        sp = self.k.span
        for pd in self.fd.params:
            dtype = pd.dtype or "b8"
            attrs: dict[str, Any] = {"name": pd.name}
            if pd.shape:
                n = 1
                for d in pd.shape:
                    n *= d or 1
                attrs["bytes"] = n * max(1, _bits(dtype) // 8)
            ins = b.emit(O.PARAM, [], (dtype,), attrs=attrs, span=sp, text=f".param .{dtype} {pd.name}",
                         names=(pd.name,))  # fmt: skip
            self.n_param_instrs += 1
            p = self.all_params[pd.name]
            p.value = ins.result
            if ".reg" in pd.attrs:
                # `.func f(.reg .b32 %a)`: the register holds the parameter
                self._declare(pd.name, dtype)
                b.write(pd.name, ins.result)

    def field_param(self, name: str, off: int, dtype: str) -> Value:
        """A field of a by-value struct parameter (or a narrower read of a
        scalar one): a PARAM op of its own, in the entry block."""
        key = (name, off, dtype)
        v = self.field_params.get(key)
        if v is not None:
            return v
        entry = self.k.blocks[0]
        res = self.b.new_value(dtype, f"{name}+{off}")
        ins = Instr(O.PARAM, [], [res], {"name": name, "offset": off}, self.span, self.origin, self.text)
        ins.block = entry
        entry.instrs.insert(self.n_param_instrs, ins)
        self.n_param_instrs += 1
        self.field_params[key] = res
        return res

    def param_read(self, name: str, off: int, dtype: str) -> Value:
        p = self.params[name]
        pd = self.param_decls[name]
        if off == 0 and not pd.shape and _bits(dtype) == _bits(p.dtype):
            return p.value  # type: ignore[return-value]
        return self.field_param(name, off, dtype)

    def refine_params(self) -> None:
        """A parameter whose value is used as an address is a pointer; note
        its space and whether the kernel stores through it."""
        by_value = {p.value: p for p in self.k.params if p.value is not None}
        if not by_value:
            return
        mem_ops = {O.LOAD, O.STORE, O.ATOMIC, O.CP_ASYNC, O.WMMA_LOAD, O.WMMA_STORE}
        writes = {O.STORE, O.ATOMIC, O.WMMA_STORE}
        for ins in self.k.instrs():
            if ins.op not in mem_ops or not ins.args:
                continue
            addrs = [ins.args[0]]
            if ins.op is O.CP_ASYNC and len(ins.args) > 1:
                addrs = [ins.args[1]]
            for a in addrs:
                p = self._param_base(a, by_value)
                if p is None:
                    continue
                p.kind = "pointer"
                sp = ins.attrs.get("space")
                if sp and sp != "generic":
                    p.space = sp if p.space is None else p.space
                if ins.op in writes or (ins.op is O.ATOMIC):
                    p.written = True
                elif p.written is None:
                    p.written = False

    def _param_base(self, v: Value, by_value: dict) -> Param | None:
        seen = 0
        while seen < 64:
            seen += 1
            p = by_value.get(v)
            if p is not None:
                return p
            d = v.defn
            if d is None:
                return None
            if d.op is O.CVT and d.args:
                v = d.args[0]
            elif d.op in (O.ADD, O.SUB) and d.args:
                # the pointer is the operand that is not a small integer offset
                cand = [a for a in d.args if a.type in ("u64", "s64", "b64")]
                if not cand:
                    return None
                v = cand[0]
            else:
                return None
        return None

    # -- emission helpers -----------------------------------------------------------------------------

    # Instructions are appended to the current block directly (values come
    # from `Builder.new_value`); blocks are terminated only by `lower_term`.

    def emit(self, op: Opcode, args: list[Value], types=(), attrs=None, names=None) -> Instr:
        nv = self.b.new_value
        if names:
            results = [nv(t, n) for t, n in zip(types, names)]
        else:
            results = [nv(t) for t in types]
        ins = Instr(op, args, results, attrs, self.span, self.origin, self.text)
        blk = self.blk
        ins.block = blk
        blk.instrs.append(ins)
        return ins

    def value(self, op: Opcode, args: list[Value], t: str, attrs=None, name: str | None = None) -> Value:
        res = self.b.new_value(t, name)
        ins = Instr(op, args, [res], attrs, self.span, self.origin, self.text)
        blk = self.blk
        ins.block = blk
        blk.instrs.append(ins)
        return res

    def const(self, v: Any, t: str, name: str | None = None) -> Value:
        if t == "pred":
            v = bool(v)
        return self.value(O.CONST, [], t, {"value": v}, name)

    def dname(self, o: tuple) -> str | None:
        """The register key a destination operand names (for value names)."""
        if o[0] == "r" and o[1] != _SINK:
            r = self.scope.cache.get(o[1]) or self.resolve(o[1])
            if r[0] == "reg":
                return r[1]
        return None

    def report(self, opcode: str, reason: str | None = None) -> None:
        if opcode in self.reported:
            return
        self.reported.add(opcode)
        msg = f"`{opcode}` is not modelled; analyses treat it conservatively"
        if reason:
            msg += f" ({reason})"
        self.mod.diagnostics.append(
            Diagnostic(
                code="TL002",
                severity=Severity.WARNING,
                message=msg,
                span=self.span,  # type: ignore[arg-type]
                kernel=self.k.name,
                origin=self.origin,
                name="unsupported-construct",
            )
        )

    # -- names -------------------------------------------------------------------------------------------

    def resolve(self, name: str) -> tuple:
        scope = self.scope
        r = scope.cache.get(name)
        if r is not None:
            return r
        r = self._resolve(name, scope)
        scope.cache[name] = r
        return r

    def _resolve(self, name: str, scope: Scope) -> tuple:
        s: Scope | None = scope
        while s is not None and s is not self.top:
            reg = s.regs.get(name)
            if reg is not None:
                return ("reg", reg[0], reg[1])
            slot = s.slots.get(name)
            if slot is not None:
                return ("slot", slot[0], slot[1], slot[2])
            s = s.parent
        reg = self._top_reg(name)
        if reg is not None:
            return ("reg", reg[0], reg[1])
        if name[0] == "%" and _SPECIAL_RE.match(name):
            return ("spec", name[1:])
        if name in self.params:
            return ("par", name)
        if name in self.ret_decls:
            return ("ret", name)
        if name in self.k.buffers:
            return ("buf", name)
        if name in self.funcs:
            return ("fn", name)
        if name == "WARP_SZ":
            return ("const", 32)
        if "." in name and name[0] == "%":
            base = name.split(".", 1)[0]
            reg = self._resolve(base, scope)
            if reg[0] == "reg":
                return reg
        if name[0] == "%":
            # an undeclared register: read it anyway (UNDEF until written)
            return ("reg", name, "b32")
        return ("sym", name)

    def _declare(self, key: str, t: str) -> None:
        if key not in self.declared:
            self.declared.add(key)
            self.b.declare(key, t)

    def val(self, o: tuple, t: str | None, name: str | None = None) -> Value:
        """The value of a source operand (``name``: the register a new value
        is written to, for its name)."""
        tag = o[0]
        if tag == "r":
            r = self.scope.cache.get(o[1]) or self.resolve(o[1])
            k = r[0]
            if k == "reg":
                key = r[1]
                sv = self.single.get(key)
                if sv is not None:
                    ds = sv[1]
                    cs = self.cur_seg
                    if ds.dom_in <= cs.dom_in <= ds.dom_out and ds.dom_in >= 0:
                        return sv[0]
                if key not in self.declared:
                    self.declared.add(key)
                    self.b.declare(key, r[2])
                return self.b.read(key)
            if k == "spec":
                return self.value(O.SPECIAL, [], t if _int_like(t) else ("u64" if "64" in r[1] else "u32"),
                                  {"name": r[1]}, name)  # fmt: skip
            if k in ("buf", "sym", "fn", "par", "ret"):
                return self.addr_of(o[1], k, t, name)
            if k == "const":
                return self.const(r[1], t or "u32", name)
            if k == "slot":
                raise _Unmodelled(f"call slot `{o[1]}` used as a value")
            raise _Unmodelled(f"cannot read `{o[1]}`")
        if tag == "i":
            return self.const(o[1], t or "s32", name)
        if tag == "f":
            v = o[1]
            tt = t or o[2] or "f32"
            if tt[0] == "f" or tt in ("bf16", "tf32"):
                return self.const(v, tt, name)
            # a float literal as bits of an integer-typed operand
            import struct

            if o[2] == "f64":
                bits = struct.unpack(">Q", struct.pack(">d", v))[0]
            else:
                bits = struct.unpack(">I", struct.pack(">f", v))[0]
            return self.const(bits, tt, name)
        if tag == "!":
            p = self.val(("r", o[1]), "pred")
            return self.value(O.NOT, [p], "pred", {"signed": False}, name)
        if tag == "o":
            base = self.val(("r", o[1]), t if _int_like(t) else "u64", name if o[2] == 0 else None)
            if o[2] == 0:
                return base
            c = self.const(o[2], base.type)
            return self.value(O.ADD, [base, c], base.type, {"signed": False}, name)
        if tag == "x":
            buf = self.k.buffers.get(o[1])
            el = max(1, _bits(buf.dtype) // 8) if buf is not None else 1
            base = self.val(("r", o[1]), t if _int_like(t) else "u64", name if o[2] == 0 else None)
            if o[2] == 0:
                return base
            c = self.const(o[2] * el, base.type)
            return self.value(O.ADD, [base, c], base.type, {"signed": False}, name)
        if tag == "v":
            parts = [self.val(x, None) for x in o[1]]
            return self.value(O.PACK, parts, t or "b64", None, name)
        raise _Unmodelled(f"unexpected operand {_show(o)}")

    def addr_of(self, name: str, kind: str, t: str | None, vname: str | None = None) -> Value:
        tt = t if t in ("u32", "u64", "b32", "b64", "s32", "s64") else "u64"
        attrs: dict[str, Any] = {"buffer": name}
        if kind == "par" or kind == "ret":
            attrs["space"] = "param"
        elif kind == "fn":
            attrs["function"] = True
            attrs["space"] = "code"
        elif kind == "buf":
            attrs["space"] = self.k.buffers[name].space
        return self.value(O.ADDR, [], tt, attrs, vname)

    def write(self, o: tuple, v: Value) -> None:
        """Write ``v`` to a destination operand."""
        tag = o[0]
        if tag != "r":
            raise _Unmodelled(f"unexpected destination {_show(o)}")
        name = o[1]
        if name == _SINK:
            return
        r = self.scope.cache.get(name) or self.resolve(name)
        if r[0] != "reg":
            raise _Unmodelled(f"`{name}` is not a register")
        key = r[1]
        if key not in self.declared:
            self.declared.add(key)
            self.b.declare(key, r[2])
        if key is not name and v.source_name == key and key != name:
            v.source_name = name  # a register renamed for its scope keeps its own name in messages
        self.b.write(key, v)
        if self.static_defs.get(key) == 1:
            if key in self.single:  # written twice after all: never again take the shortcut
                self.static_defs[key] = 2
                del self.single[key]
            else:
                self.single[key] = (v, self.cur_seg)

    def reg_type(self, o: tuple, default: str) -> str:
        if o[0] == "r" and o[1] != _SINK:
            r = self.resolve(o[1])
            if r[0] == "reg":
                return r[2]
        return default

    def dests(self, o: tuple) -> list[tuple]:
        """The destination registers of a (vector) destination operand."""
        if o[0] == "v":
            return list(o[1])
        if o[0] == "r":
            return [o]
        raise _Unmodelled(f"unexpected destination {_show(o)}")

    def address(self, m: tuple, space: str) -> tuple[Value, str | None, int]:
        """``[base+off]`` -> (address value, buffer name if the base is a
        buffer symbol, offset)."""
        if m[0] != "m":
            raise _Unmodelled(f"expected an address, found {_show(m)}")
        _, base, off, _extras = m
        buf = None
        if base[0] == "r":
            r = self.resolve(base[1])
            if r[0] == "buf":
                buf = base[1]
            if r[0] in ("buf", "sym", "fn", "par", "ret"):
                v = self.addr_of(base[1], r[0], "u32" if space in ("shared", "local") else "u64")
            else:
                v = self.val(base, None)
        elif base[0] == "i":
            return self.const(base[1] + off, "u64"), None, base[1] + off
        else:
            raise _Unmodelled(f"unexpected address base {_show(base)}")
        if off:
            t = v.type if _int_like(v.type) else "u64"
            c = self.const(off, t)
            v = self.value(O.ADD, [v, c], t, {"signed": False})
        return v, buf, off

    # -- statements ----------------------------------------------------------------------------------------

    def set_stmt(self, st: tuple, scope: Scope, origin: Origin | None) -> None:
        p = st[4]
        self.span = Span(self.path, p[0], p[1], p[2], p[3])
        self.origin = origin
        self.scope = scope
        text = self.pf.clean[p[4] : p[5]]
        if text.endswith(";"):
            text = text[:-1]
        if "\n" in text or "\t" in text or "  " in text:
            text = " ".join(text.split())
        self.text = text

    def lower_stmt(self, st: tuple, scope: Scope, origin: Origin | None, seg: _Seg) -> None:
        self.set_stmt(st, scope, origin)
        op = st[2]
        oi = _OPINFO.get(op) or opinfo(op)
        ops = st[3]
        h = _HANDLERS.get(oi.fam)
        self._seg = seg
        self._stmt = st
        if h is None:
            h = FunctionLowering.h_opaque_family
        try:
            h(self, oi, ops)
        except _Unmodelled as e:
            self.opaque(oi, ops, str(e))

    def opaque(self, oi: OpInfo, ops: list, reason: str | None = None) -> None:
        """An instruction not modelled: read its source registers, write fresh
        values to its destination registers."""
        self.report(oi.text, None)
        dest_ops: list[tuple] = []
        srcs = ops
        if ops and ops[0][0] in ("r", "v", "d") and oi.fam not in _OPAQUE_NO_DEST:
            first = ops[0]
            if first[0] == "r" and first[1] != _SINK:
                rr = self.resolve(first[1])
                if rr[0] == "reg":
                    dest_ops = [first]
                    srcs = ops[1:]
            elif first[0] == "r":
                srcs = ops[1:]
            elif first[0] == "v":
                dest_ops = [x for x in first[1] if x[0] == "r"]
                srcs = ops[1:]
            elif first[0] == "d":
                dest_ops = [("r", first[1]), ("r", first[2])]
                srcs = ops[1:]
        args: list[Value] = []
        if oi.fam == "wgmma" and ops and ops[0][0] == "v":
            srcs = list(ops)  # the accumulators are read and written
        for o in srcs:
            self._collect_reads(o, args)
        types = []
        for d in dest_ops:
            types.append(self.reg_type(d, oi.t or "b32") if d[1] != _SINK else (oi.t or "b32"))
        attrs: dict[str, Any] = {"text": self.text}
        if reason:
            attrs["reason"] = reason
        names = [self.dname(d) for d in dest_ops]
        ins = self.emit(O.OPAQUE, args, types, attrs, names)
        for d, v in zip(dest_ops, ins.results):
            try:
                self.write(d, v)
            except _Unmodelled:
                pass

    def _collect_reads(self, o: tuple, out: list[Value]) -> None:
        tag = o[0]
        try:
            if tag == "r":
                if o[1] == _SINK:
                    return
                r = self.resolve(o[1])
                if r[0] in ("reg", "spec", "buf", "sym", "fn", "par"):
                    out.append(self.val(o, None))
            elif tag == "!":
                out.append(self.val(o, "pred"))
            elif tag in ("v", "g"):
                for x in o[1]:
                    self._collect_reads(x, out)
            elif tag == "m":
                if o[1][0] == "r":
                    self._collect_reads(o[1], out)
                for x in o[3]:
                    self._collect_reads(x, out)
            elif tag == "d":
                self._collect_reads(("r", o[1]), out)
                self._collect_reads(("r", o[2]), out)
        except _Unmodelled:
            pass

    # -- terminators -------------------------------------------------------------------------------------

    def lower_term(self, s: _Seg) -> None:
        b = self.b
        t = s.term
        if t is None:
            # falling through: the jump carries the span of the block's last statement
            # (or of the label it falls into, for an empty block)
            if not s.stmts:
                tgt = s.fall
                self.span = (tgt.span if tgt is not None and tgt.span is not None else self.k.span)
                self.origin = None
            if s.fall is not None:
                b.jump(s.fall.block, span=self.span, origin=self.origin)
            else:
                b.ret(span=self.span, origin=self.origin)
            return
        kind = t[0]
        if kind == "jump":
            st, origin = t[2], t[3]
            self.set_stmt(st, self.top, origin)
            tgt = s.succ_segs[0]
            b.jump(tgt.block, span=self.span, origin=self.origin, text=self.text)
        elif kind == "cbr":
            _, guard, _label, st, origin, scope = t
            self.set_stmt(st, scope, origin)
            tgt = s.succ_segs[0]
            fall = s.fall
            cond = self._guard_value(guard)
            if fall is None or fall is tgt:
                b.jump(tgt.block, span=self.span, origin=self.origin, text=self.text)
                return
            neg = guard[0]
            if neg:
                b.branch(cond, fall.block, tgt.block, span=self.span, origin=self.origin, text=self.text)
            else:
                b.branch(cond, tgt.block, fall.block, span=self.span, origin=self.origin, text=self.text)
        elif kind == "pred":
            _, guard, then, _none, st, origin, scope = t
            self.set_stmt(st, scope, origin)
            cond = self._guard_value(guard)
            fall = s.fall
            if fall is None or fall is then:
                b.jump(then.block, span=self.span, origin=self.origin, text=self.text)
                return
            if guard[0]:
                b.branch(cond, fall.block, then.block, span=self.span, origin=self.origin, text=self.text)
            else:
                b.branch(cond, then.block, fall.block, span=self.span, origin=self.origin, text=self.text)
        elif kind in ("ret", "exit", "trap"):
            st, origin = t[1], t[2]
            if st is not None:
                self.set_stmt(st, self.top, origin)
            else:
                self.span, self.origin, self.text = self._end_span(), None, "ret"
            if kind == "ret" and not self.k.is_entry:
                args = self._return_values()
                b.ret(args, span=self.span, origin=self.origin, text=self.text)
            elif kind == "ret":
                b.ret(span=self.span, origin=self.origin, text=self.text)
            else:
                b.exit(span=self.span, origin=self.origin, text=self.text)
        elif kind == "badjump":
            st, origin = t[2], t[3]
            self.set_stmt(st, self.top, origin)
            self.report(f"{st[2]} {t[1]}", None)
            self.emit(O.OPAQUE, [], (), {"text": self.text, "reason": f"branch to unknown label `{t[1]}`"})
            b.exit(span=self.span, origin=self.origin, text=self.text)

    def _end_span(self) -> Span:
        return Span(self.path, self.fd.end_line, self.fd.end_column)

    def _guard_value(self, guard: tuple) -> Value:
        try:
            return self.val(("r", guard[1]), "pred")
        except _Unmodelled:
            return self.value(O.OPAQUE, [], "pred", {"text": self.text, "reason": f"guard `{guard[1]}`"})

    def _return_values(self) -> list[Value]:
        out = []
        for r in self.fd.rets:
            if ".reg" in r.attrs:
                self._declare(r.name, r.dtype or "b32")
                out.append(self.b.read(r.name))
                continue
            offs = sorted(self.ret_slots.get(r.name, ()))
            for off in offs:
                out.append(self.b.read(f"$ret:{r.name}:{off}"))
        return out

    # -- handlers ---------------------------------------------------------------------------------------------

    def h_opaque_family(self, oi: OpInfo, ops: list) -> None:
        self.opaque(oi, ops)

    def h_arith(self, oi: OpInfo, ops: list) -> None:
        fam = oi.fam
        op = ARITH[fam]
        t = oi.t or "b32"
        mods = oi.modset
        if "cc" in mods and fam in ("add", "sub", "mad"):
            pass  # the carry-out is not modelled; the sum is
        n = ARITY.get(op, 2)
        if len(ops) != n + 1:
            if op in (O.MIN, O.MAX) and len(ops) == 4:
                n = 3
            else:
                raise _Unmodelled(f"{len(ops)} operands")
        attrs: dict[str, Any] = {"signed": t[0] == "s"}
        rt = t
        ct = t
        if "hi" in mods:
            attrs["hi"] = True
        if "wide" in mods:
            attrs["wide"] = True
            rt = _wide(t)
            ct = rt
        if op in (O.SHL, O.SHR):
            args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        elif op is O.MAD:
            args = [self.val(ops[1], t), self.val(ops[2], t), self.val(ops[3], ct)]
        else:
            args = [self.val(x, t) for x in ops[1:]]
        v = self.value(op, args, rt, attrs, self.dname(ops[0]))
        self.write(ops[0], v)

    def h_pure(self, oi: OpInfo, ops: list) -> None:
        fam = oi.fam
        if fam in PURE_NO_RESULT:
            args: list[Value] = []
            for o in ops:
                if o[0] == "m":
                    args.append(self.address(o, oi.space or "generic")[0])
                else:
                    self._collect_reads(o, args)
            self.emit(O.PURE, args, (), {"fn": fam})
            return
        if not ops:
            raise _Unmodelled("no operands")
        dest = ops[0]
        t = oi.t or "b32"
        rt = "pred" if fam in PRED_RESULT else t
        if fam in ("clz", "popc", "bfind"):
            rt = "u32"
        if fam == "cvt":  # cvt.pack
            rt = oi.types[0] if oi.types else t
        args = []
        for o in ops[1:]:
            if o[0] == "m":
                args.append(self.address(o, oi.space or "generic")[0])
            else:
                args.append(self.val(o, t))
        if dest[0] == "d":
            d1, d2 = ("r", dest[1]), ("r", dest[2])
            ins = self.emit(O.PURE, args, (rt, "pred"), {"fn": fam}, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
            return
        v = self.value(O.PURE, args, rt, {"fn": fam}, self.dname(dest))
        self.write(dest, v)

    def h_setp(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        cmp = mods[0] if mods and mods[0] in _CMP_OPS else None
        if cmp is None or oi.t is None:
            raise _Unmodelled("unknown comparison")
        t = oi.t
        boolop = next((m for m in mods[1:] if m in _BOOL_OPS), None)
        signed = None if t[0] == "f" or t in ("bf16", "bf16x2") else t[0] == "s"
        need = 4 if boolop else 3
        if len(ops) != need:
            raise _Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], t)
        bb = self.val(ops[2], t)
        dest = ops[0]
        d1 = ("r", dest[1]) if dest[0] == "d" else dest
        n1 = self.dname(d1)
        c = self.value(O.CMP, [a, bb], "pred", {"cmp": cmp, "signed": signed, "type": t}, None if boolop else n1)
        if boolop:
            cv = self.val(ops[3], "pred")
            p = self.value(_BOOL_OPS[boolop], [c, cv], "pred", {"signed": False}, n1)
        else:
            p = c
        if dest[0] == "d":
            self.write(d1, p)
            d2 = ("r", dest[2])
            n2 = self.dname(d2)
            nc = self.value(O.NOT, [c], "pred", {"signed": False}, None if boolop else n2)
            q = self.value(_BOOL_OPS[boolop], [nc, cv], "pred", {"signed": False}, n2) if boolop else nc
            self.write(d2, q)
        else:
            self.write(dest, p)

    def h_set(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        cmp = mods[0] if mods and mods[0] in _CMP_OPS else None
        if cmp is None or len(oi.types) < 2:
            raise _Unmodelled("unknown comparison")
        dt, st_ = oi.types[-2], oi.types[-1]
        boolop = next((m for m in mods[1:] if m in _BOOL_OPS), None)
        signed = None if st_[0] == "f" else st_[0] == "s"
        if len(ops) != (4 if boolop else 3):
            raise _Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], st_)
        bb = self.val(ops[2], st_)
        c = self.value(O.CMP, [a, bb], "pred", {"cmp": cmp, "signed": signed, "type": st_})
        if boolop:
            c = self.value(_BOOL_OPS[boolop], [c, self.val(ops[3], "pred")], "pred", {"signed": False})
        if dt[0] == "f":
            tv, fv = self.const(1.0, dt), self.const(0.0, dt)
        else:
            tv = self.const(-1 if dt[0] == "s" else (1 << _bits(dt)) - 1, dt)
            fv = self.const(0, dt)
        self.write(ops[0], self.value(O.SELECT, [c, tv, fv], dt, None, self.dname(ops[0])))

    def h_selp(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 4:
            raise _Unmodelled(f"{len(ops)} operands")
        t = oi.t or "b32"
        c = self.val(ops[3], "pred")
        a = self.val(ops[1], t)
        bb = self.val(ops[2], t)
        self.write(ops[0], self.value(O.SELECT, [c, a, bb], t, None, self.dname(ops[0])))

    def h_slct(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 4 or len(oi.types) < 2:
            raise _Unmodelled(f"{len(ops)} operands")
        dt, ct = oi.types[-2], oi.types[-1]
        c = self.val(ops[3], ct)
        zero = self.const(0.0 if ct[0] == "f" else 0, ct)
        p = self.value(O.CMP, [c, zero], "pred", {"cmp": "ge", "signed": None if ct[0] == "f" else True, "type": ct})
        a, bb = self.val(ops[1], dt), self.val(ops[2], dt)
        self.write(ops[0], self.value(O.SELECT, [p, a, bb], dt, None, self.dname(ops[0])))

    def h_cvt(self, oi: OpInfo, ops: list) -> None:
        if "pack" in oi.modset:
            self.h_pure(oi, ops)
            return
        types = oi.types
        if not types or len(ops) < 2:
            raise _Unmodelled("no type")
        to = types[0]
        frm = types[1] if len(types) > 1 else to
        attrs: dict[str, Any] = {"from_type": frm}
        for m in oi.mods:
            if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs"):
                attrs["rounding"] = m
            elif m in ("sat", "satfinite", "relu", "ftz"):
                attrs[m] = True
        if ops[0][0] == "d":
            raise _Unmodelled("two destinations")
        args = [self.val(o, frm) for o in ops[1:]]
        v = self.value(O.CVT, args, to, attrs, self.dname(ops[0]))
        self.write(ops[0], v)

    def h_cvta(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise _Unmodelled(f"{len(ops)} operands")
        t = oi.t or "u64"
        to = "to" in oi.modset
        space = oi.space or "generic"
        src = ops[1]
        if src[0] in ("r", "o", "x"):
            name = src[1]
            r = self.resolve(name)
            if r[0] in ("buf", "sym", "fn", "par"):
                self.write(ops[0], self.val(src, t, self.dname(ops[0])))
                return
        a = self.val(src, t)
        v = self.value(O.CVT, [a], t, {"from_type": a.type, "cvta": True, "space": space, "to_space": to},
                       self.dname(ops[0]))  # fmt: skip
        self.write(ops[0], v)

    def h_mov(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise _Unmodelled(f"{len(ops)} operands")
        t = oi.t or "b32"
        dst, src = ops
        if dst[0] == "v":
            # unpack: mov.b64 {%r1, %r2}, %rd1
            whole = self.val(src, t)
            n = len(dst[1])
            part_bits = max(1, _bits(t) // max(1, n))
            for i, d in enumerate(dst[1]):
                if d[0] != "r" or d[1] == _SINK:
                    continue
                pt = self.reg_type(d, f"b{part_bits}")
                v = self.value(O.EXTRACT, [whole], pt, {"index": i}, self.dname(d))
                self.write(d, v)
            return
        if src[0] == "r":
            r = self.resolve(src[1])
            if r[0] == "reg":
                self.write(dst, self.val(src, t))  # an alias: no instruction
                return
        self.write(dst, self.val(src, t, self.dname(dst)))

    # memory

    def _space(self, oi: OpInfo) -> str:
        return oi.space or "generic"

    def _mem_attrs(self, oi: OpInfo, space: str) -> dict[str, Any]:
        mods = oi.modset
        vec = 1
        for m in oi.mods:
            if m[:1] == "v" and m[1:].isdigit():
                vec = int(m[1:])
        attrs: dict[str, Any] = {
            "space": space,
            "dtype": oi.t or "b32",
            "volatile": bool(mods & {"volatile", "relaxed", "acquire", "mmio", "release"}),
            "vec": vec,
        }
        if "nc" in mods or oi.fam == "ldu":
            attrs["nc"] = True
        for m in oi.mods:
            if m in ("ca", "cg", "cs", "lu", "cv", "wb", "wt"):
                attrs["cache"] = m
            elif m in ("relaxed", "acquire", "release", "weak", "volatile", "mmio"):
                attrs["sem"] = m
            elif m in ("cta", "gpu", "sys", "cluster"):
                attrs["scope"] = m
        return attrs

    def h_ld(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2 or ops[1][0] != "m":
            raise _Unmodelled("expected `d, [a]`")
        space = self._space(oi)
        dests = self.dests(ops[0]) if ops[0][0] != "d" else None
        if dests is None:
            raise _Unmodelled("dual destination")
        dtype = oi.t or "b32"
        m = ops[1]
        if space == "param" and m[1][0] == "r" and self._ld_param(oi, dests, m, dtype):
            return
        addr, buf, off = self.address(m, space)
        attrs = self._mem_attrs(oi, space)
        attrs["offset"] = off
        if buf is not None:
            attrs["buffer"] = buf
        n = len(dests)
        ins = self.emit(O.LOAD, [addr], (dtype,) * n, attrs, [self.dname(d) for d in dests])
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)

    def _ld_param(self, oi: OpInfo, dests: list, m: tuple, dtype: str) -> bool:
        name = m[1][1]
        off = m[2]
        r = self.resolve(name)
        el = max(1, _bits(dtype) // 8)
        if r[0] == "par":
            for i, d in enumerate(dests):
                if d[0] == "r" and d[1] != _SINK:
                    self.write(d, self.param_read(name, off + i * el, dtype))
            return True
        if r[0] == "slot":
            key = r[1]
            for i, d in enumerate(dests):
                if d[0] != "r" or d[1] == _SINK:
                    continue
                v = self.call_results.get((key, off + i * el))
                if v is None:
                    v = self.b.read(f"{key}:{off + i * el}", type=dtype)
                self.write(d, v)
            return True
        if r[0] == "ret":
            for i, d in enumerate(dests):
                if d[0] == "r" and d[1] != _SINK:
                    self.write(d, self.b.read(f"$ret:{name}:{off + i * el}", type=dtype))
            return True
        return False

    def h_st(self, oi: OpInfo, ops: list) -> None:
        if "async" in oi.modset or "bulk" in oi.modset:
            self.opaque(oi, ops)
            return
        if len(ops) < 2 or ops[0][0] != "m":
            raise _Unmodelled("expected `[a], b`")
        space = self._space(oi)
        dtype = oi.t or "b32"
        m = ops[0]
        src = ops[1]
        srcs = list(src[1]) if src[0] == "v" else [src]
        if space == "param" and m[1][0] == "r":
            name = m[1][1]
            r = self.resolve(name)
            el = max(1, _bits(dtype) // 8)
            if r[0] == "slot":
                key = r[1]
                offs = self.slot_offsets.setdefault(key, set())
                for i, s in enumerate(srcs):
                    o = m[2] + i * el
                    offs.add(o)
                    self.b.write(f"{key}:{o}", self.val(s, dtype))
                return
            if r[0] == "ret":
                offs = self.ret_slots.setdefault(name, set())
                for i, s in enumerate(srcs):
                    o = m[2] + i * el
                    offs.add(o)
                    self.b.write(f"$ret:{name}:{o}", self.val(s, dtype))
                return
        addr, buf, off = self.address(m, space)
        vals = [self.val(s, dtype) for s in srcs if not (s[0] == "r" and s[1] == _SINK)]
        attrs = self._mem_attrs(oi, space)
        attrs["offset"] = off
        if buf is not None:
            attrs["buffer"] = buf
        self.emit(O.STORE, [addr] + vals, (), attrs)

    def h_atom(self, oi: OpInfo, ops: list) -> None:
        if "async" in oi.modset:
            self.opaque(oi, ops)
            return
        red = oi.fam == "red"
        space = self._space(oi)
        aop = next((m for m in oi.mods if m in _ATOM_OPS), None)
        if aop is None:
            raise _Unmodelled("unknown atomic operation")
        dtype = oi.t or "b32"
        if red:
            if len(ops) < 2 or ops[0][0] != "m":
                raise _Unmodelled("expected `[a], b`")
            m, rest, dests = ops[0], ops[1:], []
        else:
            if len(ops) < 3 or ops[1][0] != "m":
                raise _Unmodelled("expected `d, [a], b`")
            m, rest = ops[1], ops[2:]
            dests = self.dests(ops[0])
        nvals = 2 if aop == "cas" else 1
        vals_ops = rest[:nvals]
        addr, buf, off = self.address(m, space)
        vals: list[Value] = []
        for o in vals_ops:
            if o[0] == "v":
                vals.extend(self.val(x, dtype) for x in o[1])
            else:
                vals.append(self.val(o, dtype))
        attrs: dict[str, Any] = {"op": aop, "space": space, "dtype": dtype, "offset": off}
        if red:
            attrs["red"] = True
        if buf is not None:
            attrs["buffer"] = buf
        for mm in oi.mods:
            if mm in ("relaxed", "acquire", "release", "acq_rel"):
                attrs["sem"] = mm
            elif mm in ("cta", "gpu", "sys", "cluster"):
                attrs["scope"] = mm
        ins = self.emit(O.ATOMIC, [addr] + vals, (dtype,) * len(dests), attrs, [self.dname(d) for d in dests])
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)

    def h_cp(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        if not mods or mods[0] != "async" or "bulk" in oi.modset or "mbarrier" in oi.modset:
            self.opaque(oi, ops)
            return
        if "commit_group" in oi.modset:
            self.emit(O.CP_ASYNC_COMMIT, [], (), {})
            return
        if "wait_group" in oi.modset:
            if len(ops) != 1 or ops[0][0] != "i":
                raise _Unmodelled("expected an immediate group count")
            self.emit(O.CP_ASYNC_WAIT, [], (), {"n": ops[0][1]})
            return
        if "wait_all" in oi.modset:
            self.emit(O.CP_ASYNC_WAIT, [], (), {"n": 0, "all": True})
            return
        cache = next((m for m in mods if m in ("ca", "cg")), None)
        if cache is None or len(ops) < 3 or ops[0][0] != "m" or ops[1][0] != "m":
            raise _Unmodelled("expected `[dst], [src], size`")
        rest = list(ops[2:])
        if any(m.endswith("cache_hint") for m in mods) and len(rest) > 1:
            rest = rest[:-1]  # the cache policy
        size = rest[0]
        if size[0] != "i":
            raise _Unmodelled("copy size is not an immediate")
        nbytes = size[1]
        dst, dbuf, doff = self.address(ops[0], "shared")
        src, sbuf, soff = self.address(ops[1], "global")
        args = [dst, src]
        attrs: dict[str, Any] = {"bytes": nbytes, "cache": cache, "dst_offset": doff, "src_offset": soff}
        if dbuf is not None:
            attrs["buffer"] = dbuf
        if sbuf is not None:
            attrs["src_buffer"] = sbuf
        for m in mods:
            if m.startswith("L2::") and m != "L2::cache_hint":
                attrs["prefetch"] = m
        if len(rest) > 1:
            x = rest[1]
            if x[0] in ("r", "!") and (x[0] == "!" or self.reg_type(x, "u32") == "pred"):
                # ignore-src: a true predicate copies zeros (src-size 0)
                p = self.val(x, "pred")
                z = self.const(0, "u32")
                full = self.const(nbytes, "u32")
                args.append(self.value(O.SELECT, [p, z, full], "u32"))
                attrs["ignore_src"] = True
            else:
                args.append(self.val(x, "u32"))
        self.emit(O.CP_ASYNC, args, (), attrs)

    def h_fence(self, oi: OpInfo, ops: list) -> None:
        scope = None
        for m in oi.mods:
            if m in ("cta", "gpu", "sys", "cluster"):
                scope = m
            elif m == "gl":
                scope = "gpu"
        attrs: dict[str, Any] = {"scope": scope}
        if oi.fam == "fence":
            attrs["kind"] = oi.mods[0] if oi.mods else "sc"
            if "proxy" in oi.modset:
                attrs["proxy"] = True
        args: list[Value] = []
        for o in ops:
            self._collect_reads(o, args)
        self.emit(O.FENCE, args, (), attrs)

    def h_bar(self, oi: OpInfo, ops: list) -> None:
        mods = oi.modset
        if "warp" in mods:
            if len(ops) != 1:
                raise _Unmodelled(f"{len(ops)} operands")
            self.emit(O.WARP_SYNC, [self.val(ops[0], "b32")], (), {})
            return
        aligned = oi.fam == "bar" or "aligned" in mods
        if "cluster" in mods:
            kind = "arrive" if "arrive" in mods else "sync"
            self.emit(O.BARRIER, [], (), {"kind": kind, "aligned": aligned, "cluster": True, "id": None})
            return
        if "red" in mods:
            rop = next((m for m in oi.mods if m in ("popc", "and", "or")), None)
            if rop is None or len(ops) not in (3, 4):
                raise _Unmodelled("unknown barrier reduction")
            rt = "u32" if rop == "popc" else "pred"
            args = [self.val(ops[1], "u32")]
            attrs: dict[str, Any] = {"kind": "red", "aligned": aligned, "op": rop,
                                     "id": ops[1][1] if ops[1][0] == "i" else None}  # fmt: skip
            if len(ops) == 4:
                args.append(self.val(ops[2], "u32"))
                attrs["count"] = ops[2][1] if ops[2][0] == "i" else None
            args.append(self.val(ops[-1], "pred"))
            attrs["has_pred"] = True
            ins = self.emit(O.BARRIER, args, (rt,), attrs, (self.dname(ops[0]),))
            self.write(ops[0], ins.results[0])
            return
        kind = "arrive" if "arrive" in mods else "sync"
        if not ops or len(ops) > 2:
            if not ops and kind == "sync":
                args0: list[Value] = [self.const(0, "u32")]
                self.emit(O.BARRIER, args0, (), {"kind": kind, "aligned": aligned, "id": 0})
                return
            raise _Unmodelled(f"{len(ops)} operands")
        args = [self.val(ops[0], "u32")]
        attrs = {"kind": kind, "aligned": aligned, "id": ops[0][1] if ops[0][0] == "i" else None}
        if len(ops) == 2:
            args.append(self.val(ops[1], "u32"))
            attrs["count"] = ops[1][1] if ops[1][0] == "i" else None
        self.emit(O.BARRIER, args, (), attrs)

    def h_shfl(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("idx", "up", "down", "bfly")), None)
        sync = "sync" in oi.modset
        if mode is None or len(ops) != (5 if sync else 4):
            raise _Unmodelled("unknown shuffle")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32"), self.val(ops[3], "u32")]
        if sync:
            args.append(self.val(ops[4], "u32"))
        d = ops[0]
        attrs: dict[str, Any] = {"mode": mode}
        if not sync:
            attrs["sync"] = False
        if d[0] == "d":
            d1, d2 = ("r", d[1]), ("r", d[2])
            ins = self.emit(O.SHUFFLE, args, (t, "pred"), attrs, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
        else:
            ins = self.emit(O.SHUFFLE, args, (t,), attrs, (self.dname(d),))
            self.write(d, ins.results[0])

    def h_vote(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("all", "any", "uni", "ballot")), None)
        sync = "sync" in oi.modset
        if mode is None or len(ops) != (3 if sync else 2):
            raise _Unmodelled("unknown vote")
        args = [self.val(ops[1], "pred")]
        if sync:
            args.append(self.val(ops[2], "u32"))
        rt = "b32" if mode == "ballot" else "pred"
        attrs: dict[str, Any] = {"mode": mode}
        if not sync:
            attrs["sync"] = False
        ins = self.emit(O.VOTE, args, (rt,), attrs, (self.dname(ops[0]),))
        self.write(ops[0], ins.results[0])

    def h_match(self, oi: OpInfo, ops: list) -> None:
        mode = next((m for m in oi.mods if m in ("any", "all")), None)
        if mode is None or len(ops) != 3:
            raise _Unmodelled("unknown match")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        d = ops[0]
        if d[0] == "d":
            d1, d2 = ("r", d[1]), ("r", d[2])
            ins = self.emit(O.MATCH, args, ("b32", "pred"), {"mode": mode}, (self.dname(d1), self.dname(d2)))
            self.write(d1, ins.results[0])
            self.write(d2, ins.results[1])
        else:
            self.write(d, self.value(O.MATCH, args, "b32", {"mode": mode}, self.dname(d)))

    def h_redux(self, oi: OpInfo, ops: list) -> None:
        rop = next((m for m in oi.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
        if rop is None or len(ops) != 3:
            raise _Unmodelled("unknown redux")
        t = oi.t or "b32"
        args = [self.val(ops[1], t), self.val(ops[2], "u32")]
        self.write(ops[0], self.value(O.REDUX, args, t, {"op": rop, "type": t}, self.dname(ops[0])))

    def h_activemask(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 1:
            raise _Unmodelled(f"{len(ops)} operands")
        self.write(ops[0], self.value(O.ACTIVEMASK, [], "b32", {}, self.dname(ops[0])))

    # tensor cores

    def _frag(self, o: tuple) -> list[tuple]:
        if o[0] == "v":
            return list(o[1])
        if o[0] in ("r", "i", "f"):
            return [o]
        raise _Unmodelled(f"unexpected fragment {_show(o)}")

    def _mma(self, oi: OpInfo, ops: list, kind: str) -> None:
        if len(ops) < 4:
            raise _Unmodelled(f"{len(ops)} operands")
        shape = next((m for m in oi.mods if _SHAPE_RE.match(m)), None)
        layouts = tuple(m for m in oi.mods if m in ("row", "col"))
        dtypes = tuple(oi.types)
        d, a, bfr, c = (self._frag(x) for x in ops[:4])
        args = [self.val(x, None) for x in a] + [self.val(x, None) for x in bfr] + [self.val(x, None) for x in c]
        extra = ops[4:]
        for x in extra:
            args.append(self.val(x, "b32"))
        dt = dtypes[0] if dtypes else "f32"
        rtypes = [self.reg_type(x, dt) for x in d]
        attrs: dict[str, Any] = {"kind": kind, "shape": shape, "layouts": layouts, "dtypes": dtypes,
                                 "counts": (len(a), len(bfr), len(c))}  # fmt: skip
        if "sp" in oi.modset or oi.fam == "mma" and oi.mods[:1] == ["sp"]:
            attrs["sparse"] = True
        if extra:
            attrs["extra"] = len(extra)
        ins = self.emit(O.MMA, args, rtypes, attrs, [self.dname(x) for x in d])
        for x, v in zip(d, ins.results):
            if x[0] == "r":
                self.write(x, v)

    def h_mma(self, oi: OpInfo, ops: list) -> None:
        if "sync" not in oi.modset:
            raise _Unmodelled("not an mma.sync")
        self._mma(oi, ops, "mma")

    def h_wmma(self, oi: OpInfo, ops: list) -> None:
        mods = oi.mods
        what = mods[0] if mods else ""
        shape = next((m for m in mods if _SHAPE_RE.match(m)), None)
        layouts = tuple(m for m in mods if m in ("row", "col"))
        space = oi.space or "generic"
        if what == "mma":
            self._mma(oi, ops, "wmma")
            return
        if what == "load":
            if len(ops) < 2 or ops[1][0] != "m":
                raise _Unmodelled("expected `{d..}, [a]`")
            d = self._frag(ops[0])
            addr, buf, off = self.address(ops[1], space)
            args = [addr]
            if len(ops) > 2:
                args.append(self.val(ops[2], "u32"))
            attrs: dict[str, Any] = {"matrix": mods[1] if len(mods) > 1 else None, "space": space,
                                     "layout": layouts[0] if layouts else None, "shape": shape,
                                     "dtype": oi.t, "offset": off}  # fmt: skip
            if buf is not None:
                attrs["buffer"] = buf
            rtypes = [self.reg_type(x, "b32") for x in d]
            ins = self.emit(O.WMMA_LOAD, args, rtypes, attrs, [self.dname(x) for x in d])
            for x, v in zip(d, ins.results):
                if x[0] == "r":
                    self.write(x, v)
            return
        if what == "store":
            if len(ops) < 2 or ops[0][0] != "m":
                raise _Unmodelled("expected `[a], {d..}`")
            addr, buf, off = self.address(ops[0], space)
            vals = [self.val(x, None) for x in self._frag(ops[1])]
            args = [addr] + vals
            if len(ops) > 2:
                args.append(self.val(ops[2], "u32"))
            attrs = {"matrix": mods[1] if len(mods) > 1 else "d", "space": space,
                     "layout": layouts[0] if layouts else None, "shape": shape, "dtype": oi.t, "offset": off,
                     "has_stride": len(ops) > 2}  # fmt: skip
            if buf is not None:
                attrs["buffer"] = buf
            self.emit(O.WMMA_STORE, args, (), attrs)
            return
        raise _Unmodelled(f"unknown wmma `{what}`")

    def h_ldmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2 or ops[1][0] != "m":
            raise _Unmodelled("expected `{d..}, [a]`")
        num = next((int(m[1:]) for m in oi.mods if m[:1] == "x" and m[1:].isdigit()), 1)
        space = oi.space or "shared"
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        d = self._frag(ops[0])
        addr, buf, off = self.address(ops[1], space)
        attrs: dict[str, Any] = {"space": space, "num": num, "trans": "trans" in oi.modset, "shape": shape,
                                 "offset": off}  # fmt: skip
        if buf is not None:
            attrs["buffer"] = buf
        ins = self.emit(O.LDMATRIX, [addr], [self.reg_type(x, "b32") for x in d], attrs, [self.dname(x) for x in d])
        for x, v in zip(d, ins.results):
            if x[0] == "r":
                self.write(x, v)

    def h_stmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2 or ops[0][0] != "m":
            raise _Unmodelled("expected `[a], {r..}`")
        num = next((int(m[1:]) for m in oi.mods if m[:1] == "x" and m[1:].isdigit()), 1)
        space = oi.space or "shared"
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        addr, buf, off = self.address(ops[0], space)
        vals = [self.val(x, "b32") for x in self._frag(ops[1])]
        attrs: dict[str, Any] = {"space": space, "num": num, "trans": "trans" in oi.modset, "shape": shape,
                                 "offset": off}  # fmt: skip
        if buf is not None:
            attrs["buffer"] = buf
        self.emit(O.STMATRIX, [addr] + vals, (), attrs)

    def h_movmatrix(self, oi: OpInfo, ops: list) -> None:
        if len(ops) != 2:
            raise _Unmodelled(f"{len(ops)} operands")
        a = self.val(ops[1], "b32")
        shape = next((m for m in oi.mods if m.startswith("m") and "n" in m), None)
        attrs = {"trans": "trans" in oi.modset, "shape": shape}
        self.write(ops[0], self.value(O.MOVMATRIX, [a], "b32", attrs, self.dname(ops[0])))

    # textures and surfaces

    def _image_address(self, m: tuple, extra: list) -> tuple[Value, str | None]:
        """A texture/surface access: the handle and coordinates (and any
        lod/gradient operands) folded into one address value, so the access
        depends on every one of them."""
        if m[0] != "m":
            raise _Unmodelled("expected `[handle, coords]`")
        base = m[1]
        handle = base[1] if base[0] == "r" else None
        args: list[Value] = []
        if base[0] == "r":
            r = self.resolve(base[1])
            if r[0] in ("buf", "sym", "par"):
                args.append(self.addr_of(base[1], r[0], "u64"))
            else:
                args.append(self.val(base, "u64"))
        for x in m[3]:
            if x[0] == "v":
                args.extend(self.val(y, None) for y in x[1])
            else:
                args.append(self.val(x, None))
        for x in extra:
            if x[0] == "v":
                args.extend(self.val(y, None) for y in x[1])
            else:
                args.append(self.val(x, None))
        return self.value(O.PURE, args, "u64", {"fn": "image.address"}), handle

    def h_tex(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2:
            raise _Unmodelled(f"{len(ops)} operands")
        space = "surface" if oi.fam == "suld" else "texture"
        dest = ops[0]
        pred = None
        if dest[0] == "d":
            dests = [("r", dest[1])]
            pred = ("r", dest[2])
        else:
            dests = self.dests(dest)
        addr, handle = self._image_address(ops[1], ops[2:])
        dtype = oi.types[-2] if len(oi.types) >= 2 and oi.fam != "suld" else (oi.t or "b32")
        vec = len(dests)
        attrs: dict[str, Any] = {"space": space, "dtype": dtype, "volatile": False, "vec": vec, "handle": handle,
                                 "op": oi.fam}  # fmt: skip
        types = [dtype] * vec + (["pred"] if pred else [])
        names = [self.dname(d) for d in dests] + ([self.dname(pred)] if pred else [])
        ins = self.emit(O.LOAD, [addr], types, attrs, names)
        for d, v in zip(dests, ins.results):
            if d[0] == "r":
                self.write(d, v)
        if pred:
            self.write(pred, ins.results[-1])

    def h_sust(self, oi: OpInfo, ops: list) -> None:
        if len(ops) < 2 or ops[0][0] != "m":
            raise _Unmodelled("expected `[handle, coords], values`")
        addr, handle = self._image_address(ops[0], [])
        dtype = oi.t or "b32"
        vals = [self.val(x, dtype) for x in self._frag(ops[1])]
        attrs: dict[str, Any] = {"space": "surface", "dtype": dtype, "volatile": False, "vec": len(vals),
                                 "handle": handle, "op": oi.fam}  # fmt: skip
        if oi.fam == "sured":
            attrs["reduce"] = next((m for m in oi.mods if m in _ATOM_OPS), None)
        self.emit(O.STORE, [addr] + vals, (), attrs)

    # calls

    def h_call(self, oi: OpInfo, ops: list) -> None:
        i = 0
        rets: list[tuple] = []
        if i < len(ops) and ops[i][0] == "g":
            rets = ops[i][1]
            i += 1
        if i >= len(ops) or ops[i][0] != "r":
            raise _Unmodelled("no callee")
        callee_op = ops[i]
        i += 1
        args_ops: list[tuple] = []
        if i < len(ops) and ops[i][0] == "g":
            args_ops = ops[i][1]
            i += 1
        proto = ops[i][1] if i < len(ops) and ops[i][0] == "r" else None
        callee = callee_op[1]
        r = self.resolve(callee)
        indirect = r[0] in ("reg",)
        args: list[Value] = []
        for a in args_ops:
            if a[0] != "r":
                args.append(self.val(a, None))
                continue
            ra = self.resolve(a[1])
            if ra[0] == "slot":
                for off in sorted(self.slot_offsets.get(ra[1], ())):
                    args.append(self.b.read(f"{ra[1]}:{off}"))
            else:
                args.append(self.val(a, None))
        # results: the later `ld.param` of the return slots, in this block
        ret_keys = {}
        for x in rets:
            if x[0] == "r":
                rr = self.resolve(x[1])
                if rr[0] == "slot":
                    ret_keys[x[1]] = rr[1]
        res_slots: list[tuple[str, int]] = []
        res_types: list[str] = []
        res_names: list[str | None] = []
        if ret_keys:
            stmts = self._seg.stmts
            idx = next((j for j, s in enumerate(stmts) if s[0] is self._stmt), None)
            if idx is not None:
                for st, scope, _o, _u in stmts[idx + 1 :]:
                    sop = st[2]
                    if sop.startswith("call"):
                        break
                    if not sop.startswith("ld.param") or len(st[3]) < 2 or st[3][1][0] != "m":
                        continue
                    base = st[3][1][1]
                    if base[0] != "r" or base[1] not in ret_keys or scope is not self.scope:
                        continue
                    loi = opinfo(sop)
                    dt = loi.t or "b32"
                    el = max(1, _bits(dt) // 8)
                    d0 = st[3][0]
                    dl = list(d0[1]) if d0[0] == "v" else [d0]
                    for j, dj in enumerate(dl):
                        slot = (ret_keys[base[1]], st[3][1][2] + j * el)
                        if slot not in res_slots:
                            res_slots.append(slot)
                            res_types.append(dt)
                            res_names.append(self.dname(dj) if dj[0] == "r" else None)
        if indirect:
            args.append(self.val(callee_op, "u64"))
        attrs: dict[str, Any] = {"callee": None if indirect else callee, "uni": "uni" in oi.modset}
        if indirect:
            attrs["indirect"] = True
        if proto:
            attrs["prototype"] = proto
        ins = self.emit(O.CALL, args, res_types, attrs, res_names)
        for slot, v in zip(res_slots, ins.results):
            self.call_results[slot] = v
            self.b.write(f"{slot[0]}:{slot[1]}", v)


_ATOM_OPS = ("add", "and", "or", "xor", "cas", "exch", "inc", "dec", "min", "max")


def _show(o: tuple) -> str:
    tag = o[0]
    if tag == "r":
        return f"`{o[1]}`"
    if tag in ("i", "f"):
        return f"`{o[1]}`"
    if tag == "m":
        return "an address"
    if tag == "v":
        return "a vector"
    if tag == "g":
        return "a list `( )`"
    if tag == "d":
        return f"`{o[1]}|{o[2]}`"
    return "an operand"


F = FunctionLowering
_HANDLERS: dict[str, Any] = {name: F.h_arith for name in ARITH}
_HANDLERS.update({name: F.h_pure for name in PURE_FAMILIES if "." not in name})
_HANDLERS.update({name: F.h_pure for name in PURE_NO_RESULT})
_HANDLERS.update(
    {
        "setp": F.h_setp,
        "set": F.h_set,
        "selp": F.h_selp,
        "slct": F.h_slct,
        "cvt": F.h_cvt,
        "cvta": F.h_cvta,
        "mov": F.h_mov,
        "ld": F.h_ld,
        "ldu": F.h_ld,
        "st": F.h_st,
        "atom": F.h_atom,
        "red": F.h_atom,
        "cp": F.h_cp,
        "membar": F.h_fence,
        "fence": F.h_fence,
        "bar": F.h_bar,
        "barrier": F.h_bar,
        "shfl": F.h_shfl,
        "vote": F.h_vote,
        "match": F.h_match,
        "redux": F.h_redux,
        "activemask": F.h_activemask,
        "mma": F.h_mma,
        "wmma": F.h_wmma,
        "ldmatrix": F.h_ldmatrix,
        "stmatrix": F.h_stmatrix,
        "movmatrix": F.h_movmatrix,
        "tex": F.h_tex,
        "tld4": F.h_tex,
        "suld": F.h_tex,
        "sust": F.h_sust,
        "sured": F.h_sust,
        "call": F.h_call,
    }
)
for _fam in OPAQUE_FAMILIES:
    if "." not in _fam:
        _HANDLERS[_fam] = F.h_opaque_family
