"""Operand tracing: from a tensor core (PTX ``mma``/``wmma.mma``) or a sum of
products (Python ``acc += A[i, k] * B[k, j]``) back to the loads its operands
read, through packs, extracts, conversions, gates (a selection of 0) and a
loop-carried prefetch; and each load as a `Leaf` (its address polynomial and
lanes) for `box_of`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tolk_lint.analysis.stage.box import Leaf
from tolk_lint.analysis.stage.index import IndexEval
from tolk_lint.analysis.stage.polynomials import (
    Poly,
    Unstageable,
    p_add,
    p_const,
    p_mul,
    p_scale,
    p_tf,
)
from tolk_lint.analysis.stage.tiles import CoreShape
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value, is_float, pointer_params, type_bits
from tolk_lint.ir.opcodes import Opcode

if TYPE_CHECKING:
    from tolk_lint.ir.cfg import Loop

O = Opcode


def dtype_bytes(t: str) -> int:
    """The bytes of one element of type ``t`` (4 where no type is given)."""
    t = (t or "").lower()
    if t in ("tf32",):
        return 4
    return max(1, type_bits(t) // 8) if t else 4


def sum_loop(kernel: Kernel, ins: Instr) -> Loop | None:
    """The innermost loop holding ``ins``: the loop a core's sum runs over."""
    return cfg_of(kernel).loop_of(ins.block) if ins.block is not None else None


def trace_leaves(v: Value, loop: Loop | None, gates: list[Instr], seen: set[Value] | None = None) -> list[tuple[Instr, int]]:
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
            out += trace_leaves(a, loop, gates, seen)
        return out
    if d.op is O.PURE and str(d.attrs.get("fn", "")).startswith(("mov", "cvt", "copy")):
        out = []
        for a in d.args:
            out += trace_leaves(a, loop, gates, seen)
        return out
    if d.op is O.SELECT:
        _, x, y = d.args
        for keep, zero in ((x, y), (y, x)):
            if _is_zero(zero):
                gates.append(d)
                return trace_leaves(keep, loop, gates, seen)
        raise Unstageable("the operand selects between two computed values")
    if d.op is O.PHI and loop is not None and d.block is loop.header:
        inside = [a for p, a in zip(d.block.preds, d.args) if p in loop.blocks]
        out = []
        for a in inside:
            out += trace_leaves(a, loop, gates, seen)
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


def space_of(ins: Instr) -> str:
    """The memory space a memory op reads or writes (``generic`` where it does not say)."""
    s = ins.attrs.get("space")
    if s:
        return str(s)
    mt = re.search(r"\.(global|shared|local|const|param)\b", ins.text or "")
    return mt.group(1) if mt else "generic"


def leaf_of(ev: IndexEval, ins: Instr, lane: int | None) -> Leaf:
    """A load's address and lanes as a `Leaf`."""
    addr = ev.address(ins)
    if ins.op is O.WMMA_LOAD:
        rows, cols, layout, dtype = _wmma_geometry(ins)
        eb = dtype_bytes(dtype)
        stride = ev.poly(ins.args[1]) if len(ins.args) > 1 else p_const(cols if layout == "row" else rows)
        r, c = p_tf(("v", "frag.r")), p_tf(("v", "frag.c"))
        if layout == "row":
            off = p_add(p_scale(p_mul(r, stride), ("c", eb)), p_scale(c, ("c", eb)))
        else:
            off = p_add(p_scale(p_mul(c, stride), ("c", eb)), p_scale(r, ("c", eb)))
        return Leaf(ins, addr[0], {"frag.r": rows, "frag.c": cols}, off, eb)
    eb = dtype_bytes(str(ins.attrs.get("dtype") or (ins.results[0].type if ins.results else "")))
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


def mma_operands(kernel: Kernel) -> list[tuple[Instr, str, list[Value]]]:
    """Each tensor core's operands ``a`` and ``b``: (the core, the operand, its registers)."""
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


def mma_desc(ins: Instr) -> str:
    """A tensor core as the report names it (``mma.sync m16n8k16``, ``wmma.mma ...``)."""
    kind = str(ins.attrs.get("kind") or ("wmma" if "wmma" in (ins.text or "") else "mma"))
    shape = str(ins.attrs.get("shape") or "")
    return f"{kind}.mma {shape}".strip() if kind == "wmma" else f"mma.sync {shape}".strip()


def mma_dtype(ins: Instr, operand: str, leaves: list[Leaf]) -> str:
    """The element type of a tensor core's operand ``a`` or ``b``."""
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


def sums_of_products(kernel: Kernel) -> list[tuple[Instr, Loop, list[Value]]]:
    """``acc = acc + x * y`` (or ``mad x y acc``) where ``acc`` is carried
    around the loop holding the add: (the add, the loop, [x, y]). A chain of
    such steps between the loop's header and its back edge (nvcc unrolls
    ``sum += A[row * N + k] * B[k * N + col]`` four times: four ``fma``,
    each adding to the last) is one sum, every step of it found; so is a
    step under a branch of the body (a phi inside the loop merging it)."""
    cfg = cfg_of(kernel)
    out = []
    for lp in cfg.loops:
        for phi in lp.header.instrs:
            if phi.op is not O.PHI or phi.result is None:
                continue
            if kernel.language != "python" and not is_float(phi.result.type):
                continue  # PTX's integer mads are its address arithmetic
            inside = [a for p, a in zip(phi.block.preds, phi.args) if p in lp.blocks]
            steps: list[Instr] = []
            if inside and all(_chain_back(a, phi.result, lp, steps, 0) for a in inside):
                for ins in steps:
                    if cfg.loop_of(ins.block) is lp and not any(ins is o[0] for o in out):
                        out.append((ins, lp, _step(ins)[1]))  # type: ignore[index]
    return out


def _step(ins: Instr) -> tuple[Value, list[Value]] | None:
    """``ins`` as a step of a sum of products: (what it adds to, [x, y])."""
    if ins.op is O.MAD:
        return ins.args[2], list(ins.args[:2])
    if ins.op is not O.ADD:
        return None
    for x, y in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        y = _widened(y)
        if y.defn is not None and y.defn.op is O.MUL:
            return x, list(y.defn.args)
    return None


def _chain_back(v: Value, acc: Value, lp: Loop, steps: list[Instr], depth_: int) -> bool:
    """Whether ``v`` is ``acc`` after steps of a sum of products (added to
    ``steps``), through the phis of the loop's body that merge them."""
    if v is acc:
        return True
    d = v.defn
    if depth_ > 64 or d is None or d.block not in lp.blocks:
        return False
    if d.op is O.PHI:
        return d.block is not lp.header and all(_chain_back(a, acc, lp, steps, depth_ + 1) for a in d.args)
    got = _step(d)
    if got is None or not _chain_back(got[0], acc, lp, steps, depth_ + 1):
        return False
    if d not in steps:
        steps.append(d)
    return True


def _widened(v: Value) -> Value:
    """A product summed into a wider accumulator (``tmp = 0.`` in Numba is a
    float64, ``A[i, k] * B[k, j]`` of float32 arrays a float32): the product
    under its float conversion."""
    d = v.defn
    if d is not None and d.op is O.CVT and d.args and is_float(v.type) and is_float(d.args[0].type) \
            and type_bits(v.type) >= type_bits(d.args[0].type):  # fmt: skip
        return d.args[0]
    return v


def factor_leaf(v: Value, gates: list[Instr]) -> Instr:
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


def pointer_param(ld: Instr, kernel: Kernel) -> str | None:
    """The kernel parameter a PTX load reads through (`pointer_params`), by
    its CUDA name when the source is read (``A``); None when not exactly one."""
    found = pointer_params(ld.args[0]) if ld.args else set()
    if len(found) != 1:
        return None
    name = found.pop()
    label = next((p.label for p in kernel.params if p.name == name and p.label), None)
    if label:
        return label
    mt = re.search(r"_(param_\d+)$", name)  # `_Z...E_param_4`: numba-cuda's data pointer of an array
    return mt.group(1) if mt else name


def through_pointer_argument(ld: Instr) -> bool:
    """Whether a generic load reads through a kernel's pointer argument, and
    nothing shared or loaded on the way: global memory then (a block's shared
    memory does not exist before its launch), as numba-cuda's ``ld.f32`` of
    an array's data pointer is."""
    if not ld.args or len(pointer_params(ld.args[0])) != 1:
        return False
    stack, seen = [ld.args[0]], set()
    while stack:
        v = stack.pop()
        if v in seen or v.defn is None:
            continue
        seen.add(v)
        if len(seen) > 512 or v.defn.op in (O.ADDR, O.LOAD, O.ATOMIC, O.CALL, O.SHUFFLE):
            return False
        stack.extend(v.defn.args)
    return True


def factor_name(ld: Instr) -> str:
    """A sum-of-products factor as the user wrote it (``A[i, k]``)."""
    if ld.text and "[" in ld.text and len(ld.text) < 80:
        return ld.text
    name = str(ld.attrs.get("buffer") or "")
    idx = ld.attrs.get("index")
    if name and idx is not None:
        return f"{name}[{', '.join(x.source_name for x in idx)}]"
    return name or (ld.text or "load")
