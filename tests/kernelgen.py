"""Random small kernels as IR, for property tests.

Two populations, built with `tolk_lint.ir.Builder` (so they are SSA, with
the PHIs and loop shapes the front ends produce), always terminating (every
loop has a bounded trip count), and with ``kernel.launch.block`` set:

- ``mode="control"`` (uniformity, TL101-TL103): thread-dependent arithmetic
  (``tid.x``, ``laneid``, ``warpid``, and the uniform-by-Z3 tricks
  ``tid & 0``, ``tid - tid``, ``tid / 256``, ``tid >> 10``), uniform
  arithmetic (params ``n`` and ``m``, ``ntid.x``, ``ctaid.x``, constants),
  if/else on varying, warp-uniform and uniform conditions (PHIs at the
  joins), loops with uniform bounds (``range(min(m, 4))``), thread-dependent
  bounds (``range(tid % 4)``, the block-stride loop ``i = tid; i <
  min(n, 256); i += ntid``), shifted loops (``i = tid; i < tid + min(m, 4)``,
  uniform trips), loops with a varying exit test, loops in the top-tested
  and the rotated (compiler) shape, early returns, shared stores and loads
  (tid-indexed, broadcast, masked) with and without barriers, local buffers
  written with uniform or varying values at uniform or varying indices,
  barriers everywhere (straight-line, in uniform loops, under uniform and
  varying branches, in loops whose trips vary), and SHUFFLE/VOTE with full
  masks. Both correct and buggy kernels come out.
- ``mode="shared"`` (races, TL201/TL204): shared stores, loads and atomics
  at addresses affine in the thread index (``tid``, ``tid+1``, ``31-tid``,
  ``tid^1``, ``2*tid``, ``tid/2``, ``lane``, constants) over one buffer, in
  phases with or without barriers between them, some under conditions, some
  ordered only by ``WARP_SYNC``, some in uniform loops (cross-trip races),
  and cp.async pipelines (wait-first ring of S stages, or copy-then-wait with
  two barriers), correct or broken (no wait, wait count too large, missing
  barrier after the wait, missing trailing barrier, commit inside the tail
  guard, no drain).

API::

    from kernelgen import generate, kernels   # tests/ is on sys.path under pytest

    g = generate(seed=7)                      # random.Random(seed) drives it
    g = generate(seed=7, mode="shared", block_sizes=(64,))
    kernel, block, params = g                 # a Generated unpacks to 3
    g.global_mem                              # arrays by parameter name (run's global_mem)
    g.source                                  # pseudo-source, for failure messages
    result = g.run()                          # interp.run with the kernel's inputs
    result = g.run(params=g.random_params(random.Random(1)))   # other inputs

    @given(kernels())                         # a hypothesis strategy of Generated
    def test_x(g): ...
    @given(kernels(mode="shared", cp_async=False))

Knobs (keyword arguments of both, all optional): ``block_sizes`` (block.x
choices, default (32, 64, 96, 128)), ``max_depth`` (nesting, 3),
``max_stmts`` (statements per body, 5), ``barriers`` (probability weight of
a barrier statement, 1.0; 0 disables), ``loops``, ``returns``,
``shuffles``, ``votes``, ``local``, ``shared`` (booleans, default True),
``rotated`` (allow the rotated loop shape), ``atomics``, ``warp_sync``,
``cp_async`` (shared mode), ``pipeline_only`` (shared mode: just one
cp.async pipeline), ``language`` ("ptx"; "python" sets
``kernel.language``, which changes only the interpreter's int/float and
shuffle-clamp conventions).

Kernels use s32 arithmetic on u32 special registers, CMP with
``signed=True``, shared buffer ``sh`` (s32[512]) addressed as ``ADDR(sh) +
4 * index`` in u32 with ``attrs["buffer"] = "sh"``, local buffer ``loc``
(s32[4]), barriers ``BARRIER [const 0]`` with ``kind="sync",
aligned=True``, shuffles ``SHUFFLE v, b, c, 0xffffffff`` (PTX clamp
operands: 0 for ``up``, 31 otherwise), votes ``VOTE p, 0xffffffff``.
Values are named ``uni_*`` where the generator knows them uniform (data
from uniform sources, not merged under varying control) and ``div_*``
where they read a thread index (they may still be uniform: ``tid & 0``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.ir import Buffer, Builder, Kernel, LaunchBounds, Param, Value
from tolk_lint.ir.opcodes import Opcode as O

SH_ELEMS = 512
LOC_ELEMS = 4
STAGE_MAX = 3
TRIPS_MAX = 4
FULL = 0xFFFFFFFF


@dataclass
class Generated:
    kernel: Kernel
    block: tuple[int, int, int]
    params: dict[str, int]
    global_mem: dict[str, list] = field(default_factory=dict)
    source: str = ""
    seed: int | None = None
    mode: str = "control"
    features: set[str] = field(default_factory=set)

    def __iter__(self):
        return iter((self.kernel, self.block, self.params))

    def random_params(self, rng: random.Random) -> dict[str, int]:
        """Fresh values for the scalar parameters (same ranges as generate)."""
        return _draw_params(rng)

    def run(self, params: dict[str, int] | None = None, **kw: Any):
        from tolk_lint.ir.interp import run

        gm = {k: list(v) for k, v in self.global_mem.items()}
        return run(self.kernel, self.block, self.params if params is None else params, global_mem=gm, **kw)

    def __repr__(self) -> str:
        return f"Generated(seed={self.seed}, mode={self.mode}, block={self.block}, params={self.params})\n{self.source}"


@dataclass
class Knobs:
    block_sizes: tuple[int, ...] = (32, 64, 96, 128)
    max_depth: int = 3
    max_stmts: int = 5
    barriers: float = 1.0
    loops: bool = True
    returns: bool = True
    shuffles: bool = True
    votes: bool = True
    local: bool = True
    shared: bool = True
    rotated: bool = True
    atomics: bool = True
    warp_sync: bool = True
    cp_async: bool = True
    pipeline_only: bool = False
    language: str = "ptx"


def _draw_params(r) -> dict[str, int]:
    n = (
        r.choice([0, 1, 16, 31, 32, 33, 64, 100, 127, 128, 200, 256, 300])
        if r.random() < 0.7
        else r.randint(0, 300)
    )
    m = r.randint(0, 10)
    return {"n": n, "m": m}


class _Gen:
    def __init__(self, r, knobs: Knobs, mode: str, name: str):
        self.r = r
        self.kn = knobs
        self.mode = mode
        self.X = r.choice(list(knobs.block_sizes))
        k = Kernel(name, knobs.language, f"<kernelgen {name}>")
        k.launch = LaunchBounds(block=(self.X, 1, 1), source="kernelgen")
        self.k = k
        self.b = Builder(k)
        self.lines: list[str] = []
        self.ind = 0
        self.nvar = 0
        self.nblk = 0
        self.features: set[str] = set()
        self.stmts_left = 40  # a budget for the whole kernel
        self.scope: list[str] = []  # variables readable here
        self.uni: dict[str, bool] = {}  # variable -> known uniform
        self.ctl_uni = [True]  # stack: is the enclosing control uniform

    # -- small helpers ----------------------------------------------------------

    def p(self, prob: float) -> bool:
        """True with probability prob; shrinks to False."""
        return prob > 0 and self.r.random() > 1.0 - prob

    def say(self, text: str) -> None:
        self.lines.append("    " * self.ind + text)

    def blk(self, tag: str):
        self.nblk += 1
        return self.b.block(f"{tag}{self.nblk}")

    def v(self, op, args, t="s32", uni=None, **attrs) -> Value:
        name = None
        if uni is not None:
            self.nvar += 1
            name = f"{'uni' if uni else 'div'}_t{self.nvar}"
        return self.b.emit(op, args, (t,), attrs=attrs or None, names=(name,) if name else None).result

    def c(self, x: int, t: str = "s32") -> Value:
        return self.b.const(x, t)

    def fresh(self, base: str = "x") -> str:
        self.nvar += 1
        return f"{base}{self.nvar}"

    # -- the entry ----------------------------------------------------------------

    def start(self) -> None:
        k, b = self.k, self.b
        k.params = [Param("n", "s32"), Param("m", "s32"), Param("out", "u64", kind="pointer", space="global")]
        if self.mode == "shared":
            k.params.append(Param("g", "u64", kind="pointer", space="global"))
        k.buffers["sh"] = Buffer("sh", "shared", "s32", (SH_ELEMS,), align=16)
        if self.kn.local:
            k.buffers["loc"] = Buffer("loc", "local", "s32", (LOC_ELEMS,), align=4)
        e = b.block("entry")
        b.position(e)
        b.seal(e)
        self.tid = b.emit(O.SPECIAL, [], ("u32",), attrs={"name": "tid.x"}, names=("div_tid",)).result
        self.lane = b.emit(O.SPECIAL, [], ("u32",), attrs={"name": "laneid"}, names=("div_lane",)).result
        self.warp = b.emit(O.SPECIAL, [], ("u32",), attrs={"name": "warpid"}, names=("div_warp",)).result
        self.ntid = b.emit(O.SPECIAL, [], ("u32",), attrs={"name": "ntid.x"}, names=("uni_ntid",)).result
        self.ctaid = b.emit(O.SPECIAL, [], ("u32",), attrs={"name": "ctaid.x"}, names=("uni_ctaid",)).result
        self.n = b.emit(O.PARAM, [], ("s32",), attrs={"name": "n"}, names=("uni_n",)).result
        self.m = b.emit(O.PARAM, [], ("s32",), attrs={"name": "m"}, names=("uni_m",)).result
        self.out = b.emit(O.PARAM, [], ("u64",), attrs={"name": "out"}, names=("uni_out",)).result
        k.params[0].value, k.params[1].value, k.params[2].value = self.n, self.m, self.out
        self.sh = b.emit(O.ADDR, [], ("u32",), attrs={"buffer": "sh"}, names=("uni_sh",)).result
        if self.kn.local:
            self.loc = b.emit(
                O.ADDR, [], ("u32",), attrs={"buffer": "loc", "space": "local"}, names=("uni_loc",)
            ).result
        if self.mode == "shared":
            self.g = b.emit(O.PARAM, [], ("u64",), attrs={"name": "g"}, names=("uni_g",)).result
            k.params[3].value = self.g
        self.say(f"kernel {k.name}(n, m, out{', g' if self.mode == 'shared' else ''})  block=({self.X},1,1)")
        self.ind = 1

    def finish(self) -> Kernel:
        b = self.b
        if not b.terminated():
            self.say("return")
            b.ret()
        return b.finish()

    # -- expressions -------------------------------------------------------------------

    def leaf(self, want: str) -> tuple[Value, str, bool]:
        """A leaf: want in "uni", "div", "any"."""
        r = self.r
        uvars = [x for x in self.scope if self.uni.get(x)]
        dvars = [x for x in self.scope if not self.uni.get(x)]
        if want == "any":
            want = "div" if self.p(0.5) else "uni"
        if want == "uni":
            opts = ["const", "m", "n", "ntid", "ctaid"] + (["var"] * 2 if uvars else [])
            w = r.choice(opts)
            if w == "const":
                x = r.randint(0, 9)
                return self.c(x), str(x), True
            if w == "m":
                return self.m, "m", True
            if w == "n":
                return self.n, "n", True
            if w == "ntid":
                return self.ntid, "ntid", True
            if w == "ctaid":
                return self.ctaid, "ctaid", True
            name = r.choice(uvars)
            return self.b.read(name), name, True
        opts = ["tid", "lane", "warp", "tid", "trick"] + (["var"] * 3 if dvars else [])
        w = r.choice(opts)
        if w == "tid":
            return self.tid, "tid", False
        if w == "lane":
            return self.lane, "lane", False
        if w == "warp":
            return self.warp, "warp", False
        if w == "trick":
            return self.trick()
        name = r.choice(dvars)
        return self.b.read(name), name, False

    def trick(self) -> tuple[Value, str, bool]:
        """A thread-dependent expression that is uniform (Z3 territory)."""
        r = self.r
        self.features.add("trick")
        w = r.randint(0, 5)
        t = self.tid
        if w == 0:
            return self.v(O.AND, [t, self.c(0)], uni=False), "(tid & 0)", False
        if w == 1:
            return self.v(O.SUB, [t, t], uni=False), "(tid - tid)", False
        if w == 2:
            return self.v(O.DIV, [t, self.c(256)], uni=False), "(tid / 256)", False
        if w == 3:
            return self.v(O.SHR, [t, self.c(10)], uni=False), "(tid >> 10)", False
        if w == 4:
            return self.v(O.MUL, [t, self.c(0)], uni=False), "(tid * 0)", False
        x = self.v(O.AND, [t, self.c(0)], uni=False)
        return self.v(O.ADD, [x, self.m], uni=False), "((tid & 0) + m)", False

    def expr(self, depth: int = 2, want: str = "any") -> tuple[Value, str, bool]:
        r = self.r
        if depth <= 0 or self.p(0.35):
            return self.leaf(want)
        sub = want
        a, ta, ua = self.expr(depth - 1, sub)
        w = r.randint(0, 11)
        if w <= 2:  # + - with another expression
            bv, tb, ub = self.expr(depth - 1, "uni" if want == "uni" else "any")
            op, sym = r.choice([(O.ADD, "+"), (O.SUB, "-"), (O.XOR, "^")])
            u = ua and ub
            return self.v(op, [a, bv], uni=u), f"({ta} {sym} {tb})", u
        if w == 3:
            x = r.randint(0, 5)
            return self.v(O.MUL, [a, self.c(x)], uni=ua), f"({ta} * {x})", ua
        if w == 4:
            x = r.choice([1, 3, 7, 15, 31, 0xFF])
            return self.v(O.AND, [a, self.c(x)], uni=ua), f"({ta} & {x})", ua
        if w == 5:
            x = r.randint(0, 4)
            return self.v(O.SHL, [a, self.c(x)], uni=ua), f"({ta} << {x})", ua
        if w == 6:
            x = r.randint(1, 5)
            return self.v(O.SHR, [a, self.c(x)], uni=ua), f"({ta} >> {x})", ua
        if w == 7:
            x = r.choice([1, 2, 3, 4, 7, 32])
            return self.v(O.DIV, [a, self.c(x)], uni=ua), f"({ta} / {x})", ua
        if w == 8:
            x = r.choice([2, 3, 4, 8, 32])
            return self.v(O.REM, [a, self.c(x)], uni=ua), f"({ta} % {x})", ua
        if w == 9:
            bv, tb, ub = self.expr(depth - 1, "uni" if want == "uni" else "any")
            op, sym = r.choice([(O.MIN, "min"), (O.MAX, "max")])
            u = ua and ub
            return self.v(op, [a, bv], uni=u), f"{sym}({ta}, {tb})", u
        if w == 10:
            cnd, tc, uc = self.cond(depth - 1, "uni" if want == "uni" else "any")
            bv, tb, ub = self.expr(depth - 1, "uni" if want == "uni" else "any")
            u = uc and ua and ub
            return self.v(O.SELECT, [cnd, a, bv], uni=u), f"({tc} ? {ta} : {tb})", u
        return self.v(O.OR, [a, self.c(r.randint(0, 3))], uni=ua), f"({ta} | c)", ua

    def cond(self, depth: int = 1, want: str = "any") -> tuple[Value, str, bool]:
        r = self.r
        if want == "any":
            want = r.choice(["uni", "div", "div", "warp"])
        if want == "warp":  # warp-uniform, workgroup-varying
            self.features.add("warp-cond")
            x = r.randint(0, 3)
            cv = self.v(
                O.CMP,
                [self.warp, self.c(x)],
                "pred",
                uni=False,
                cmp=r.choice(["eq", "lt", "ne"]),
                signed=True,
            )
            return cv, f"warp ?= {x}", False
        if want == "div" and self.p(0.6):
            # the classic thread-index tests
            w = r.randint(0, 4)
            if w == 0:
                x = r.choice([1, 16, 32, 48, 64, 100])
                return (
                    self.v(O.CMP, [self.tid, self.c(x)], "pred", uni=False, cmp="lt", signed=True),
                    f"tid < {x}",
                    False,
                )
            if w == 1:
                x = r.choice([8, 16, 31])
                return (
                    self.v(O.CMP, [self.lane, self.c(x)], "pred", uni=False, cmp="lt", signed=True),
                    f"lane < {x}",
                    False,
                )
            if w == 2:
                a = self.v(O.AND, [self.tid, self.c(1)], uni=False)
                return (
                    self.v(O.CMP, [a, self.c(0)], "pred", uni=False, cmp="eq", signed=True),
                    "tid & 1 == 0",
                    False,
                )
            if w == 3:
                return (
                    self.v(O.CMP, [self.tid, self.n], "pred", uni=False, cmp="lt", signed=True),
                    "tid < n",
                    False,
                )
            t, tt, _ = self.trick()
            x = r.randint(0, 3)
            return (
                self.v(O.CMP, [t, self.c(x)], "pred", uni=False, cmp="le", signed=True),
                f"{tt} <= {x}",
                False,
            )
        a, ta, ua = self.expr(depth, want)
        bv, tb, ub = self.leaf("uni")
        cmp = r.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        u = ua and ub
        return self.v(O.CMP, [a, bv], "pred", uni=u, cmp=cmp, signed=True), f"{ta} {cmp} {tb}", u

    # -- addresses ----------------------------------------------------------------------

    def sh_addr(self, idx: Value) -> Value:
        off = self.v(O.SHL, [idx, self.c(2, "u32")], "u32")
        return self.v(O.ADD, [self.sh, off], "u32")

    def loc_addr(self, idx: Value) -> Value:
        off = self.v(O.SHL, [idx, self.c(2, "u32")], "u32")
        return self.v(O.ADD, [self.loc, off], "u32")

    # -- statements ------------------------------------------------------------------------

    def body(self, depth: int) -> None:
        n = self.r.randint(1, self.kn.max_stmts)
        for _ in range(n):
            if self.stmts_left <= 0 or self.b.terminated():
                break
            self.stmts_left -= 1
            self.stmt(depth)

    def assign(self, name: str, val: Value, u: bool) -> None:
        self.b.write(name, val)
        if name not in self.uni:
            self.uni[name] = u and self.ctl_uni[-1]
            self.scope.append(name)
        else:
            self.uni[name] = self.uni[name] and u and self.ctl_uni[-1]

    def stmt(self, depth: int) -> None:
        r, kn = self.r, self.kn
        choices = ["assign", "assign", "assign"]
        if depth < kn.max_depth:
            choices += ["if", "if"]
            if kn.loops:
                choices += ["loop", "loop"]
        if kn.returns:
            choices.append("return")
        if kn.barriers > 0:
            choices += ["barrier"] * max(1, round(2 * kn.barriers))
        if kn.shared:
            choices += ["shstore", "shload"]
        if kn.local:
            choices += ["locstore", "locload"]
        if kn.shuffles:
            choices.append("shuffle")
        if kn.votes:
            choices.append("vote")
        w = r.choice(choices)
        getattr(self, "s_" + w)(depth)

    def s_assign(self, depth: int) -> None:
        val, text, u = self.expr(2)
        if self.scope and self.p(0.5):
            name = self.r.choice(self.scope)
            if name.startswith("i"):  # never write a loop counter
                name = self.fresh()
        else:
            name = self.fresh()
        self.say(f"{name} = {text}")
        self.assign(name, val, u)

    def s_if(self, depth: int) -> None:
        b = self.b
        cv, text, u = self.cond(1)
        self.features.add("if-uni" if u else "if-div")
        has_else = self.p(0.4)
        then, join = self.blk("then"), self.blk("join")
        els = self.blk("else") if has_else else join
        b.branch(cv, then, els)
        b.seal(then)
        self.say(f"if {text}:")
        saved = list(self.scope)
        self.ctl_uni.append(self.ctl_uni[-1] and u)
        b.position(then)
        self.ind += 1
        self.body(depth + 1)
        self.ind -= 1
        if not b.terminated():
            b.jump(join)
        self.scope = list(saved)
        if has_else:
            b.seal(els)
            b.position(els)
            self.say("else:")
            self.ind += 1
            self.body(depth + 1)
            self.ind -= 1
            if not b.terminated():
                b.jump(join)
            self.scope = list(saved)
        self.ctl_uni.pop()
        b.seal(join)
        b.position(join)
        if not join.preds:
            # both arms ended the thread: nothing after is reachable
            b.ret()

    def _loop_bound(self) -> tuple[str, Value | None, Value, Value, int, str, bool]:
        """(kind, start, bound, step value, step, pseudo-source, whether every thread runs as many trips)."""
        r = self.r
        kind = r.choice(["const", "uni", "div", "stride", "shift", "trick"])
        if kind == "const":
            x = r.randint(0, TRIPS_MAX)
            return kind, self.c(0), self.c(x), self.c(1), 1, f"range({x})", True
        if kind == "uni":
            x = r.randint(1, TRIPS_MAX)
            bnd = self.v(O.MIN, [self.m, self.c(x)], uni=True)
            return kind, self.c(0), bnd, self.c(1), 1, f"range(min(m, {x}))", True
        if kind == "div":
            w = r.randint(0, 2)
            src, st = [(self.tid, "tid"), (self.lane, "lane"), (self.warp, "warp")][w]
            bnd = self.v(O.REM, [src, self.c(4)], uni=False)
            return kind, self.c(0), bnd, self.c(1), 1, f"range({st} % 4)", False
        if kind == "stride":
            bnd = self.v(O.MIN, [self.n, self.c(256)], uni=True)
            return kind, self.tid, bnd, self.ntid, 0, "range(tid, min(n, 256), ntid)", False
        if kind == "shift":
            x = r.randint(1, TRIPS_MAX)
            mm = self.v(O.MIN, [self.m, self.c(x)], uni=True)
            bnd = self.v(O.ADD, [self.tid, mm], uni=False)
            return kind, self.tid, bnd, self.c(1), 1, f"range(tid, tid + min(m, {x}))", True
        t, tt, _ = self.trick()
        x = r.randint(1, 3)
        bnd = self.v(O.ADD, [t, self.c(x)], uni=False)
        return kind, self.c(0), bnd, self.c(1), 1, f"range({tt} + {x})", True

    def s_loop(self, depth: int) -> None:
        b = self.b
        if self.p(0.15):
            return self.s_while(depth)
        kind, start, bound, stepv, _step, text, uniform_trips = self._loop_bound()
        self.features.add(f"loop-{kind}")
        iv = self.fresh("i")
        b.write(iv, start)
        self.say(f"for {iv} in {text}:")
        saved = list(self.scope)
        rotated = self.kn.rotated and self.p(0.5)
        self.ctl_uni.append(self.ctl_uni[-1] and uniform_trips and kind not in ("stride", "div"))
        if not rotated:
            header, body, exit_ = self.blk("loop"), self.blk("body"), self.blk("exit")
            b.jump(header)
            b.position(header)
            cur = b.read(iv)
            cv = self.v(O.CMP, [cur, bound], "pred", cmp="lt", signed=True)
            b.branch(cv, body, exit_)
            b.seal(body)
            b.seal(exit_)
            b.position(body)
            self.scope = saved + [iv]
            self.uni[iv] = uniform_trips and kind in ("const", "uni", "trick") and self.ctl_uni[-2]
            self.ind += 1
            self.body(depth + 1)
            self.ind -= 1
            if not b.terminated():
                cur = b.read(iv)
                b.write(iv, self.v(O.ADD, [cur, stepv]))
                b.jump(header)
            b.seal(header)
            b.position(exit_)
        else:
            body, exit_ = self.blk("rbody"), self.blk("rexit")
            cv = self.v(O.CMP, [start, bound], "pred", cmp="lt", signed=True)
            b.branch(cv, body, exit_)
            b.position(body)
            self.scope = saved + [iv]
            self.uni[iv] = uniform_trips and kind in ("const", "uni", "trick") and self.ctl_uni[-2]
            self.ind += 1
            self.body(depth + 1)
            self.ind -= 1
            if not b.terminated():
                cur = b.read(iv)
                nxt = self.v(O.ADD, [cur, stepv])
                b.write(iv, nxt)
                cv2 = self.v(O.CMP, [nxt, bound], "pred", cmp="lt", signed=True)
                b.branch(cv2, body, exit_)
            b.seal(body)
            b.seal(exit_)
            b.position(exit_)
            if not exit_.preds:
                b.ret()
        self.ctl_uni.pop()
        self.scope = saved + [iv]
        if not uniform_trips:
            self.uni[iv] = False

    def s_while(self, depth: int) -> None:
        """``x = lane-ish & 31; while x > 0: x >>= 1`` (a varying exit test), or the same on m."""
        b = self.b
        src, text, u = self.expr(1, "any")
        x = self.fresh("w")
        b.write(x, self.v(O.AND, [src, self.c(31)], uni=u))
        self.features.add("loop-while")
        self.say(f"{x} = {text} & 31")
        self.say(f"while {x} > 0:")
        saved = list(self.scope)
        header, body, exit_ = self.blk("while"), self.blk("wbody"), self.blk("wexit")
        b.jump(header)
        b.position(header)
        cur = b.read(x)
        cv = self.v(O.CMP, [cur, self.c(0)], "pred", cmp="gt", signed=True)
        b.branch(cv, body, exit_)
        b.seal(body)
        b.seal(exit_)
        b.position(body)
        self.ctl_uni.append(self.ctl_uni[-1] and u)
        self.ind += 1
        self.body(depth + 1)
        if not b.terminated():
            cur = b.read(x)
            b.write(x, self.v(O.SHR, [cur, self.c(1)]))
            self.say(f"{x} >>= 1")
            b.jump(header)
        self.ind -= 1
        self.ctl_uni.pop()
        b.seal(header)
        b.position(exit_)
        self.scope = saved + [x]
        self.uni[x] = u and self.ctl_uni[-1]

    def s_return(self, depth: int) -> None:
        b = self.b
        cv, text, u = self.cond(1)
        self.features.add("return-uni" if u else "return-div")
        ret, cont = self.blk("ret"), self.blk("cont")
        b.branch(cv, ret, cont)
        b.seal(ret)
        b.seal(cont)
        b.position(ret)
        b.ret()
        b.position(cont)
        self.say(f"if {text}: return")
        if not u:
            self.ctl_uni[-1] = False  # what follows runs in a subset of threads

    def s_barrier(self, depth: int) -> None:
        self.features.add("barrier")
        self.b.emit(O.BARRIER, [self.c(0, "u32")], attrs={"kind": "sync", "aligned": True})
        self.say("barrier()")

    def _sh_index(self) -> tuple[Value, str]:
        r = self.r
        w = r.randint(0, 5)
        if w == 0:
            return self.tid, "tid"
        if w == 1:
            x = r.randint(0, 7)
            return self.c(x, "u32"), str(x)
        if w == 2:
            t1 = self.v(O.ADD, [self.tid, self.c(1, "u32")], "u32")
            return t1, "tid + 1"
        if w == 3:
            return self.lane, "lane"
        val, text, _u = self.expr(1)
        return self.v(O.AND, [val, self.c(255)], uni=None), f"({text}) & 255"

    def s_shstore(self, depth: int) -> None:
        idx, ti = self._sh_index()
        val, tv, _u = self.expr(1)
        self.b.emit(
            O.STORE, [self.sh_addr(idx), val], attrs={"space": "shared", "dtype": "s32", "buffer": "sh"}
        )
        self.features.add("shared")
        self.say(f"sh[{ti}] = {tv}")

    def s_shload(self, depth: int) -> None:
        idx, ti = self._sh_index()
        name = self.fresh()
        ld = self.b.emit(
            O.LOAD, [self.sh_addr(idx)], ("s32",), attrs={"space": "shared", "dtype": "s32", "buffer": "sh"},
            names=(f"div_{name}",),
        ).result  # fmt: skip
        self.features.add("shared")
        self.say(f"{name} = sh[{ti}]")
        self.assign(name, ld, False)

    def s_locstore(self, depth: int) -> None:
        r = self.r
        if self.p(0.7):
            x = r.randint(0, LOC_ELEMS - 1)
            idx, ti = self.c(x, "u32"), str(x)
        else:
            e, te, _ = self.expr(1)
            idx, ti = self.v(O.AND, [e, self.c(LOC_ELEMS - 1)]), f"({te}) & 3"
        val, tv, _u = self.expr(1)
        self.b.emit(
            O.STORE, [self.loc_addr(idx), val], attrs={"space": "local", "dtype": "s32", "buffer": "loc"}
        )
        self.features.add("local")
        self.say(f"loc[{ti}] = {tv}")

    def s_locload(self, depth: int) -> None:
        x = self.r.randint(0, LOC_ELEMS - 1)
        name = self.fresh()
        ld = self.b.emit(
            O.LOAD, [self.loc_addr(self.c(x, "u32"))], ("s32",),
            attrs={"space": "local", "dtype": "s32", "buffer": "loc"},
        ).result  # fmt: skip
        self.say(f"{name} = loc[{x}]")
        self.assign(name, ld, False)

    def s_shuffle(self, depth: int) -> None:
        r = self.r
        mode = r.choice(["bfly", "down", "up", "idx"])
        val, tv, _u = self.expr(1)
        delta = r.choice([1, 2, 4, 8, 16]) if mode != "idx" else r.randint(0, 31)
        clamp = 0 if mode == "up" else 31
        ins = self.b.emit(
            O.SHUFFLE, [val, self.c(delta, "u32"), self.c(clamp, "u32"), self.c(FULL, "u32")], ("s32", "pred"),
            attrs={"mode": mode},
        )  # fmt: skip
        name = self.fresh()
        self.features.add("shuffle")
        self.say(f"{name} = shfl_{mode}({tv}, {delta})")
        self.assign(name, ins.results[0], False)

    def s_vote(self, depth: int) -> None:
        r = self.r
        mode = r.choice(["any", "all", "ballot"])
        cv, tc, _u = self.cond(1)
        name = self.fresh()
        self.features.add("vote")
        if mode == "ballot":
            res = self.b.emit(O.VOTE, [cv, self.c(FULL, "u32")], ("u32",), attrs={"mode": mode}).result
        else:
            p = self.b.emit(O.VOTE, [cv, self.c(FULL, "u32")], ("pred",), attrs={"mode": mode}).result
            res = self.v(O.SELECT, [p, self.c(1), self.c(0)])
        self.say(f"{name} = vote_{mode}({tc})")
        self.assign(name, res, False)

    def s_outstore(self) -> None:
        """out[tid] = the last variable (keeps the kernel's results observable)."""
        if not self.scope or self.b.terminated():
            return
        name = self.scope[-1]
        v = self.b.read(name)
        off = self.v(O.CVT, [self.v(O.SHL, [self.tid, self.c(2, "u32")], "u32")], "u64", from_type="u32")
        addr = self.v(O.ADD, [self.out, off], "u64")
        self.b.emit(O.STORE, [addr, v], attrs={"space": "global", "dtype": "s32"})
        self.say(f"out[tid] = {name}")

    # -- shared-memory traffic (mode "shared") -------------------------------------------

    def aff_index(self) -> tuple[Value, str]:
        """An index affine in the thread index, kept inside sh."""
        r = self.r
        OFF = 160
        w = r.randint(0, 9)
        t, lane = self.tid, self.lane
        if w == 0:
            e, s = t, "tid"
        elif w == 1:
            e, s = self.v(O.ADD, [t, self.c(1, "u32")], "u32"), "tid + 1"
        elif w == 2:
            e, s = self.v(O.SUB, [self.c(31, "u32"), t], "u32"), "31 - tid"
        elif w == 3:
            e, s = self.v(O.XOR, [t, self.c(1, "u32")], "u32"), "tid ^ 1"
        elif w == 4:
            x = r.randint(0, 3)
            e, s = self.c(x, "u32"), str(x)
        elif w == 5:
            e, s = self.v(O.SHL, [t, self.c(1, "u32")], "u32"), "2 * tid"
        elif w == 6:
            e, s = self.v(O.SHR, [t, self.c(1, "u32")], "u32"), "tid / 2"
        elif w == 7:
            e, s = lane, "lane"
        elif w == 8:
            e, s = self.v(O.ADD, [t, self.c(32, "u32")], "u32"), "tid + 32"
        else:
            e, s = self.v(O.AND, [t, self.c(0xFFFFFFFE, "u32")], "u32"), "tid & ~1"
        return self.v(O.ADD, [e, self.c(OFF, "u32")], "u32"), f"{OFF} + {s}"

    def sh_access(self, in_loop: Value | None = None) -> None:
        r, b = self.r, self.b
        idx, ti = self.aff_index()
        if in_loop is not None and self.p(0.4):
            idx = self.v(O.ADD, [idx, in_loop], "u32")
            ti += " + k"
        w = r.randint(0, 9)
        addr = self.sh_addr(idx)
        attrs = {"space": "shared", "dtype": "s32", "buffer": "sh"}
        if w <= 3:
            if self.p(0.3):
                val, tv = self.c(7), "7"
            else:
                val, tv = self.tid, "tid"
            b.emit(O.STORE, [addr, val], attrs=attrs)
            self.say(f"sh[{ti}] = {tv}")
        elif w <= 7 or not self.kn.atomics:
            name = self.fresh()
            ld = b.emit(O.LOAD, [addr], ("s32",), attrs=attrs).result
            self.say(f"{name} = sh[{ti}]")
            self.acc = self.v(O.ADD, [self.acc, ld])
        else:
            self.features.add("atomic")
            old = b.emit(O.ATOMIC, [addr, self.c(1)], ("s32",), attrs={**attrs, "op": "add"}).result
            self.say(f"atomicAdd(&sh[{ti}], 1)")
            self.acc = self.v(O.ADD, [self.acc, old])

    def shared_phase(self, in_loop: Value | None = None) -> None:
        r, b = self.r, self.b
        guarded = self.p(0.3)
        if guarded:
            cv, tc, _u = self.cond(0, r.choice(["div", "uni", "warp"]))
            then, join = self.blk("then"), self.blk("join")
            b.write("acc", self.acc)
            b.branch(cv, then, join)
            b.seal(then)
            b.position(then)
            self.say(f"if {tc}:")
            self.ind += 1
        for _ in range(r.randint(1, 3)):
            self.sh_access(in_loop)
            if self.kn.warp_sync and not guarded and self.p(0.15):
                self.features.add("warp_sync")
                b.emit(O.WARP_SYNC, [self.c(FULL, "u32")])
                self.say("__syncwarp()")
        if guarded:
            b.write("acc", self.acc)
            b.jump(join)
            b.seal(join)
            b.position(join)
            self.ind -= 1
            self.acc = b.read("acc")
        if self.kn.barriers > 0 and self.p(0.55):
            self.s_barrier(0)

    def shared_loop(self) -> None:
        b = self.b
        trips = self.r.randint(1, 3)
        iv = self.fresh("k")
        b.write(iv, self.c(0, "u32"))
        b.write("acc", self.acc)
        header, body, exit_ = self.blk("loop"), self.blk("body"), self.blk("exit")
        b.jump(header)
        b.position(header)
        cur = b.read(iv)
        cv = self.v(O.CMP, [cur, self.c(trips, "u32")], "pred", cmp="lt", signed=False)
        b.branch(cv, body, exit_)
        b.seal(body)
        b.seal(exit_)
        b.position(body)
        self.say(f"for {iv} in range({trips}):")
        self.ind += 1
        self.acc = b.read("acc")
        for _ in range(self.r.randint(1, 2)):
            self.shared_phase(in_loop=cur)
        b.write("acc", self.acc)
        b.write(iv, self.v(O.ADD, [b.read(iv), self.c(1, "u32")], "u32"))
        b.jump(header)
        b.seal(header)
        self.ind -= 1
        b.position(exit_)
        self.acc = b.read("acc")
        self.features.add("shared-loop")

    def pipeline(self) -> None:
        """A cp.async pipeline over T tiles of X*16 bytes, staged through S slots."""
        r, b, k = self.r, self.b, self.k
        X = self.X
        form = r.choice(["A", "C", "single"])
        S = {"A": r.randint(2, STAGE_MAX), "C": 2, "single": 1}[form]
        T = r.randint(1, TRIPS_MAX)
        muts = set()
        for mname, prob in (
            ("no_wait", 0.12), ("wait_plus", 0.12), ("no_bar1", 0.12), ("no_bar2", 0.12),
            ("commit_in_if", 0.1), ("no_drain", 0.1), ("own_chunk", 0.25),
        ):  # fmt: skip
            if self.p(prob):
                muts.add(mname)
        self.features.add(f"cp.async-{form}")
        self.features |= {f"mut-{m}" for m in muts}
        k.buffers["stage"] = Buffer("stage", "shared", "s32", (STAGE_MAX * 128 * 4,), align=16)
        stage = b.emit(O.ADDR, [], ("u32",), attrs={"buffer": "stage"}, names=("uni_stage",)).result
        tile = X * 16
        self.say(f"# cp.async pipeline form {form}, S={S}, T={T}, mutations={sorted(muts)}")
        own = "own_chunk" in muts
        tid16 = self.v(O.SHL, [self.tid, self.c(4, "u32")], "u32")
        g_off_t = self.v(O.CVT, [tid16], "u64", from_type="u32")
        reader = self.tid if own else self.v(O.XOR, [self.tid, self.c(1, "u32")], "u32")
        rd16 = self.v(O.SHL, [reader, self.c(4, "u32")], "u32")

        def copy(tile_idx: Value, slot: Value, text: str) -> None:
            soff = self.v(O.MUL, [slot, self.c(tile, "u32")], "u32")
            dst = self.v(O.ADD, [self.v(O.ADD, [stage, soff], "u32"), tid16], "u32")
            toff = self.v(
                O.CVT, [self.v(O.MUL, [tile_idx, self.c(tile, "u32")], "u32")], "u64", from_type="u32"
            )
            src = self.v(O.ADD, [self.v(O.ADD, [self.g, toff], "u64"), g_off_t], "u64")
            b.emit(O.CP_ASYNC, [dst, src], attrs={"bytes": 16, "cache": "cg"})
            self.say(f"cp.async(stage[{text}], g[tile])")

        def commit() -> None:
            b.emit(O.CP_ASYNC_COMMIT, [])
            self.say("commit()")

        def wait(n: int) -> None:
            b.emit(O.CP_ASYNC_WAIT, [], attrs={"n": n})
            self.say(f"wait_group({n})")

        def read(slot: Value) -> None:
            soff = self.v(O.MUL, [slot, self.c(tile, "u32")], "u32")
            addr = self.v(O.ADD, [self.v(O.ADD, [stage, soff], "u32"), rd16], "u32")
            ld = b.emit(
                O.LOAD, [addr], ("s32",), attrs={"space": "shared", "dtype": "s32", "buffer": "stage"}
            ).result
            self.acc = self.v(O.ADD, [self.acc, ld])
            self.say(f"acc += stage[slot][{'tid' if own else 'tid ^ 1'}]")

        def bar(tag: str) -> None:
            if tag in muts:
                self.say(f"# barrier dropped ({tag})")
                return
            self.s_barrier(0)

        def slot_of(x: Value) -> Value:
            return self.v(O.REM, [x, self.c(S, "u32")], "u32") if S > 1 else self.c(0, "u32")

        def guarded(cond_v: Value, fn, commit_inside: bool) -> None:
            then, join = self.blk("then"), self.blk("join")
            b.write("acc", self.acc)
            b.branch(cond_v, then, join)
            b.seal(then)
            b.position(then)
            self.say("if tile < T:")
            self.ind += 1
            fn()
            if commit_inside:
                commit()
            self.ind -= 1
            b.jump(join)
            b.seal(join)
            b.position(join)
            self.acc = b.read("acc")

        # prologue
        if form == "A":
            for t in range(S - 1):
                if t < T:
                    copy(self.c(t, "u32"), self.c(t % S, "u32"), f"{t % S}")
                    commit()
                elif "commit_in_if" not in muts:
                    commit()
        else:
            copy(self.c(0, "u32"), self.c(0, "u32"), "0")
            commit()
        # the loop over tiles
        kv = self.fresh("k")
        b.write(kv, self.c(0, "u32"))
        b.write("acc", self.acc)
        header, body, exit_ = self.blk("ploop"), self.blk("pbody"), self.blk("pexit")
        b.jump(header)
        b.position(header)
        cur = b.read(kv)
        cv = self.v(O.CMP, [cur, self.c(T, "u32")], "pred", cmp="lt", signed=False)
        b.branch(cv, body, exit_)
        b.seal(body)
        b.seal(exit_)
        b.position(body)
        self.say(f"for {kv} in range({T}):")
        self.ind += 1
        self.acc = b.read("acc")
        cur = b.read(kv)
        if form == "A":
            n = max(0, S - 2) + (1 if "wait_plus" in muts else 0)
            if "no_wait" not in muts:
                wait(n)
            bar("no_bar1")
            nk = self.v(O.ADD, [cur, self.c(S - 1, "u32")], "u32")
            inb = self.v(O.CMP, [nk, self.c(T, "u32")], "pred", cmp="lt", signed=False)
            guarded(inb, lambda: copy(nk, slot_of(nk), "(k + S - 1) % S"), "commit_in_if" in muts)
            if "commit_in_if" not in muts:
                commit()
            read(slot_of(cur))
        elif form == "C":
            nk = self.v(O.ADD, [cur, self.c(1, "u32")], "u32")
            inb = self.v(O.CMP, [nk, self.c(T, "u32")], "pred", cmp="lt", signed=False)
            guarded(inb, lambda: copy(nk, slot_of(nk), "(k + 1) % 2"), "commit_in_if" in muts)
            if "commit_in_if" not in muts:
                commit()
            if "no_wait" not in muts:
                wait(1 + (1 if "wait_plus" in muts else 0))
            bar("no_bar1")
            read(slot_of(cur))
            bar("no_bar2")
        else:  # single stage: copy, wait, barrier, read, barrier
            nk = self.v(O.ADD, [cur, self.c(1, "u32")], "u32")
            if "no_wait" not in muts:
                wait(0 + (1 if "wait_plus" in muts else 0))
            bar("no_bar1")
            read(self.c(0, "u32"))
            bar("no_bar2")
            inb = self.v(O.CMP, [nk, self.c(T, "u32")], "pred", cmp="lt", signed=False)
            guarded(inb, lambda: copy(nk, self.c(0, "u32"), "0"), "commit_in_if" in muts)
            if "commit_in_if" not in muts:
                commit()
        b.write("acc", self.acc)
        b.write(kv, self.v(O.ADD, [b.read(kv), self.c(1, "u32")], "u32"))
        b.jump(header)
        b.seal(header)
        self.ind -= 1
        b.position(exit_)
        self.acc = b.read("acc")
        if "no_drain" not in muts:
            wait(0)
        self.pipe = (form, S, T, muts)

    def shared_program(self) -> None:
        r, b = self.r, self.b
        self.acc = self.c(0)
        self.pipe = None
        if self.kn.pipeline_only:
            self.pipeline()
            b.write("acc", self.acc)
            self.scope.append("acc")
            self.uni["acc"] = False
            self.s_outstore()
            return
        nphase = r.randint(1, 4)
        did_pipe = False
        for i in range(nphase):
            w = r.randint(0, 9)
            if w <= 5:
                self.shared_phase()
            elif w <= 7 and self.kn.loops:
                self.shared_loop()
            elif self.kn.cp_async and not did_pipe:
                did_pipe = True
                self.pipeline()
            else:
                self.shared_phase()
        if self.kn.cp_async and not did_pipe and self.p(0.3):
            self.pipeline()
        b.write("acc", self.acc)
        self.scope.append("acc")
        self.uni["acc"] = False
        self.s_outstore()


def _make(r, mode: str, knobs: Knobs, name: str) -> Generated:
    g = _Gen(r, knobs, mode, name)
    g.start()
    if mode == "control":
        g.body(0)
        if g.p(0.5):
            g.s_outstore()
    elif mode == "shared":
        g.shared_program()
    else:
        raise ValueError(f"unknown mode {mode!r}")
    kernel = g.finish()
    params = _draw_params(r)
    gm: dict[str, list] = {"out": [0] * g.X}
    if mode == "shared":
        gm["g"] = [(i * 7 + 3) % 1000 for i in range(TRIPS_MAX * 128 * 4 + 64)]
    return Generated(kernel, (g.X, 1, 1), params, gm, "\n".join(g.lines), None, mode, g.features)


def generate(
    seed: int | None = None, *, mode: str = "control", rng: random.Random | None = None, **knobs: Any
) -> Generated:
    """One random kernel. ``seed`` (or an ``rng``, e.g. hypothesis' ``randoms()``)
    decides everything; ``mode`` is ``"control"`` or ``"shared"``; knobs as in
    the module docstring."""
    r = rng if rng is not None else random.Random(seed)
    kn = Knobs(**knobs)
    name = f"gen_{mode}_{seed if seed is not None else 'h'}"
    g = _make(r, mode, kn, name)
    g.seed = seed
    return g


def kernels(mode: str = "control", **knobs: Any):
    """A hypothesis strategy of `Generated` kernels (shrinks toward fewer
    statements and features)."""
    from hypothesis import strategies as st

    Knobs(**knobs)  # check the knobs early
    return st.randoms(use_true_random=False).map(lambda r: generate(rng=r, mode=mode, **knobs))


__all__ = ["Generated", "Knobs", "generate", "kernels"]
