"""The IR: a frozen dump of a small PTX kernel (a loop, a branch, a barrier, an
``mma.sync``), and CFG facts on hand-built kernels: dominators,
post-dominators, natural loops with their induction variables, control
dependence, irreducible cycles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tolk_lint.ir import Builder, Kernel, Opcode, dump_kernel
from tolk_lint.ir.cfg import cfg_of

DATA = Path(__file__).parent / "data"


# -- the dump ----------------------------------------------------------------------------


def dump_ptx(path: Path) -> str:
    from tolk_lint.config import DEFAULT_SETTINGS
    from tolk_lint.engine import prepare
    from tolk_lint.frontends.ptx import parse_ptx

    module = parse_ptx(path.read_text(), path.name)
    prepare(module, DEFAULT_SETTINGS)
    assert not module.diagnostics, [f"{d.code} {d.message}" for d in module.diagnostics]
    return "".join(dump_kernel(k, with_locations=True) for k in module.all_kernels())


def test_ir_dump_of_a_small_kernel(update_fixtures):
    got = dump_ptx(DATA / "ir_small.ptx")
    expected_path = DATA / "ir_small.ir.txt"
    if update_fixtures or not expected_path.exists():
        expected_path.write_text(got)
        if not update_fixtures:
            pytest.fail(f"wrote {expected_path}: review it, then rerun")
    assert got == expected_path.read_text()


def test_ir_dump_is_stable():
    assert dump_ptx(DATA / "ir_small.ptx") == dump_ptx(DATA / "ir_small.ptx")


def test_small_kernel_shape():
    from tolk_lint.frontends.ptx import parse_ptx

    module = parse_ptx((DATA / "ir_small.ptx").read_text(), "ir_small.ptx")
    [k] = module.kernels
    ops = [i.op for i in k.instrs()]
    assert ops.count(Opcode.BARRIER) == 2
    assert ops.count(Opcode.MMA) == 1
    mma = next(i for i in k.instrs() if i.op is Opcode.MMA)
    assert mma.origin is not None and mma.origin.line == 11 and mma.origin.path.endswith("small_mma.cu")
    [loop] = cfg_of(k).loops
    assert any(i.op is Opcode.BARRIER for b in loop.blocks for i in b.instrs)
    assert loop.ivs and loop.ivs[0].step == 1
    [ex] = loop.exits
    assert ex.iv is loop.ivs[0] and ex.cmp == "lt" and ex.uses_next


# -- hand-built CFGs -----------------------------------------------------------------------


def build(edges: dict[str, list[str]]) -> tuple[Kernel, dict]:
    """A kernel whose blocks and edges are ``edges`` (first key: the entry).
    Two successors: a branch on ``tid.x < n``; one: a jump; none: ret."""
    k = Kernel("k", "ptx", "k.ptx")
    b = Builder(k)
    blocks = {name: b.block(name) for name in edges}
    for name, succs in edges.items():
        for s in succs:
            b.add_edge(blocks[name], blocks[s])
    entry = blocks[next(iter(edges))]
    b.position(entry)
    tid = b.value_of(Opcode.SPECIAL, [], "u32", attrs={"name": "tid.x"})
    n = b.value_of(Opcode.PARAM, [], "u32", attrs={"name": "n"})
    for name, succs in edges.items():
        b.position(blocks[name])
        if len(succs) == 2:
            c = b.value_of(Opcode.CMP, [tid, n], "pred", attrs={"cmp": "lt", "signed": False})
            b.emit(Opcode.BRANCH, [c], attrs={"targets": (blocks[succs[0]], blocks[succs[1]])})
        elif len(succs) == 1:
            b.emit(Opcode.JUMP, [], attrs={"target": blocks[succs[0]]})
        else:
            b.ret()
    k = b.finish(remove_unreachable=False)
    return k, {blk.name: blk for blk in k.blocks}


def idoms(k: Kernel) -> dict[str, str]:
    cfg = cfg_of(k)
    return {b.name: cfg.idom[b].name for b in cfg.rpo if b is not cfg.entry}


def ipdoms(k: Kernel) -> dict[str, str | None]:
    cfg = cfg_of(k)
    return {b.name: (cfg.ipdom[b].name if cfg.ipdom[b] is not None else None) for b in cfg.rpo}


DIAMOND = {"entry": ["then", "else"], "then": ["join"], "else": ["join"], "join": []}


def test_diamond_dominators():
    k, B = build(DIAMOND)
    assert idoms(k) == {"then": "entry", "else": "entry", "join": "entry"}
    assert ipdoms(k) == {"entry": "join", "then": "join", "else": "join", "join": None}
    cfg = cfg_of(k)
    assert cfg.dominates(B["entry"], B["join"]) and not cfg.dominates(B["then"], B["join"])
    assert cfg.post_dominates(B["join"], B["entry"]) and not cfg.post_dominates(B["then"], B["entry"])
    assert cfg.rpo[0] is B["entry"] and cfg.rpo[-1] is B["join"]


def test_diamond_control_dependence():
    k, B = build(DIAMOND)
    cfg = cfg_of(k)
    assert cfg.control_deps(B["then"]) == [B["entry"]]
    assert cfg.control_deps(B["else"]) == [B["entry"]]
    assert cfg.control_deps(B["join"]) == []
    assert cfg.control_deps(B["entry"]) == []
    assert not cfg.loops and not cfg.irreducible


def test_early_return_post_dominance():
    # entry: if (tid < n) return; barrier-block; ret
    k, B = build({"entry": ["early", "rest"], "early": [], "rest": []})
    cfg = cfg_of(k)
    assert ipdoms(k) == {"entry": None, "early": None, "rest": None}
    assert cfg.control_deps(B["rest"]) == [B["entry"]]
    assert cfg.control_deps(B["early"]) == [B["entry"]]


def test_nested_if_control_dependence():
    k, B = build(
        {"entry": ["a", "join"], "a": ["b", "a_join"], "b": ["a_join"], "a_join": ["join"], "join": []}
    )
    cfg = cfg_of(k)
    assert cfg.control_deps(B["b"]) == [B["a"]]
    assert cfg.control_deps(B["a"]) == [B["entry"]]
    assert cfg.control_deps(B["a_join"]) == [B["entry"]]
    assert idoms(k)["join"] == "entry" and idoms(k)["b"] == "a"
    assert ipdoms(k)["a"] == "a_join" and ipdoms(k)["entry"] == "join"


def test_natural_loops_nested():
    k, B = build(
        {
            "entry": ["outer"],
            "outer": ["inner"],
            "inner": ["inner", "outer_latch"],
            "outer_latch": ["outer", "exit"],
            "exit": [],
        }
    )
    cfg = cfg_of(k)
    by_header = {lp.header.name: lp for lp in cfg.loops}
    assert set(by_header) == {"outer", "inner"}
    outer, inner = by_header["outer"], by_header["inner"]
    assert {b.name for b in outer.blocks} == {"outer", "inner", "outer_latch"}
    assert {b.name for b in inner.blocks} == {"inner"}
    assert inner.parent is outer and outer.parent is None and inner in outer.children
    assert (outer.depth, inner.depth) == (1, 2)
    assert [b.name for b in outer.latches] == ["outer_latch"]
    assert [b.name for b in outer.exit_blocks] == ["exit"]
    assert cfg.loop_of(B["inner"]) is inner and cfg.loop_of(B["outer_latch"]) is outer
    assert cfg.loops_around(B["inner"]) == [inner, outer]
    assert cfg.loop_of(B["exit"]) is None
    assert not cfg.irreducible
    # the inner loop's back edge: the inner header depends on its own branch
    assert B["inner"] in cfg.control_deps(B["inner"])


def counted_loop(step: int = 1, start: int = 0, cmp: str = "lt", compare_next: bool = True) -> Kernel:
    """for (i = start; i CMP n; i += step) { barrier }  -- rotated, exit test at the latch."""
    k = Kernel("counted", "ptx", "counted.ptx")
    b = Builder(k)
    entry, header, exit_ = b.block("entry"), b.block("loop"), b.block("exit")
    b.position(entry)
    n = b.value_of(Opcode.PARAM, [], "s32", attrs={"name": "n"})
    b.write("i", b.const(start, "s32"))
    b.jump(header)
    b.seal(entry)
    b.position(header)
    i = b.read("i", type="s32")
    b.emit(Opcode.BARRIER, [], attrs={"kind": "sync", "aligned": True})
    nxt = b.value_of(Opcode.ADD, [i, b.const(step, "s32")], "s32")
    b.write("i", nxt)
    c = b.value_of(Opcode.CMP, [nxt if compare_next else i, n], "pred", attrs={"cmp": cmp, "signed": True})
    b.branch(c, header, exit_)
    b.seal(header)
    b.position(exit_)
    b.ret()
    b.seal(exit_)
    return b.finish()


def test_induction_variable_start_step_bound():
    k = counted_loop(step=4, start=2)
    cfg = cfg_of(k)
    [lp] = cfg.loops
    [iv] = lp.ivs
    assert iv.step == 4
    assert iv.start.defn.op is Opcode.CONST and iv.start.defn.attrs["value"] == 2
    assert iv.phi.defn.op is Opcode.PHI and iv.phi.defn.block is lp.header
    [ex] = lp.exits
    assert ex.iv is iv and ex.uses_next and ex.cmp == "lt" and ex.exits_when is False
    assert ex.bound.defn.op is Opcode.PARAM and ex.bound.defn.attrs["name"] == "n"
    assert cfg.invariant(ex.bound, lp)
    assert not cfg.invariant(iv.phi, lp)


def test_induction_variable_counting_down_on_the_phi():
    k = counted_loop(step=-1, start=100, cmp="gt", compare_next=False)
    [lp] = cfg_of(k).loops
    [iv] = lp.ivs
    assert iv.step == -1
    [ex] = lp.exits
    assert ex.iv is iv and not ex.uses_next and ex.cmp == "gt"


def test_loop_dump_names_the_induction_variable():
    text = dump_kernel(counted_loop())
    assert "loops:" in text
    assert "step 1" in text and "exit" in text


def test_irreducible_cycle():
    # two entries into the cycle a <-> b
    k, B = build({"entry": ["a", "b"], "a": ["b", "exit"], "b": ["a", "exit"], "exit": []})
    cfg = cfg_of(k)
    assert {b.name for b in cfg.irreducible} == {"a", "b"}
    assert not any(lp.header in (B["a"], B["b"]) for lp in cfg.loops)
    assert "irreducible: a, b" in dump_kernel(k)


def test_reducible_loop_is_not_irreducible():
    k, _ = build({"entry": ["h"], "h": ["body", "exit"], "body": ["h"], "exit": []})
    cfg = cfg_of(k)
    assert not cfg.irreducible
    [lp] = cfg.loops
    assert lp.header.name == "h" and {b.name for b in lp.blocks} == {"h", "body"}


def test_infinite_loop_still_has_post_dominators():
    k, B = build({"entry": ["spin", "exit"], "spin": ["spin"], "exit": []})
    cfg = cfg_of(k)
    assert cfg.ipdom[B["entry"]] is None
    assert B["entry"] in cfg.control_deps(B["spin"])


def test_ssa_phi_at_join():
    k = Kernel("phi", "ptx", "phi.ptx")
    b = Builder(k)
    entry, then, join = b.block("entry"), b.block("then"), b.block("join")
    b.position(entry)
    tid = b.value_of(Opcode.SPECIAL, [], "u32", attrs={"name": "tid.x"})
    b.write("x", b.const(0, "u32"))
    c = b.value_of(Opcode.CMP, [tid, b.const(16, "u32")], "pred", attrs={"cmp": "lt", "signed": False})
    b.branch(c, then, join)
    b.seal(entry)
    b.seal(then)
    b.position(then)
    b.write("x", b.const(1, "u32"))
    b.jump(join)
    b.seal(join)
    b.position(join)
    x = b.read("x")
    b.ret([x])
    k = b.finish()
    assert x.defn.op is Opcode.PHI and len(x.defn.args) == 2
    assert [a.defn.attrs["value"] for a in x.defn.args] == [0, 1]


def test_loop_blocks_iterate_in_reverse_post_order():
    """`Loop.blocks` is a set that walks in the CFG's order (`BlockSet`), so
    what is built by walking a loop -- its exits, the terms Z3 is given --
    is the same in every process; membership and subset tests still work."""
    from pathlib import Path

    from tolk_lint.engine import parse
    from tolk_lint.ir.cfg import BlockSet

    checked = 0
    for path in sorted(Path(__file__).parent.parent.joinpath("fixtures", "ptx").rglob("*.ptx")):
        for k in parse(path.read_text(), str(path)).kernels:
            if not k.blocks:
                continue
            cfg = cfg_of(k)
            for lp in cfg.loops:
                assert isinstance(lp.blocks, BlockSet)
                ranks = [cfg.order[b] for b in lp.blocks]
                assert ranks == sorted(ranks) and len(ranks) == len(lp.blocks)
                assert lp.header in lp.blocks and set(lp.blocks) <= set(k.blocks)
                checked += 1
    assert checked >= 5
