"""Tensor cores: ``wmma.load``, ``wmma.mma`` / ``mma.sync`` and
``wmma.store``, each run by the whole warp at once, like a collective.

The hardware's fragment layout (which lane holds which element) is
unspecified for wmma and differs between architectures; the interpreter
uses its own, the same for every op: in a fragment of an R x C matrix, lane
L's element j is the element ``(L * per_lane + j) mod (R * C)`` of the
matrix in row-major order (``per_lane`` = registers x elements a register
packs, low half first), so small fragments are repeated across the warp's
lanes. Loads, products and stores agree on it, so a kernel that moves
fragments only through these ops computes what the hardware computes, up to
the order of the sums; a kernel that builds ``mma.sync`` fragments by hand
gets this layout, not the documented one. Either way two kernels that feed
the same values to the same ops get the same bits, which is what comparing
a kernel with its rewrite needs.

The product ``D = A B + C`` adds the k products one after another in
float64 and rounds the sum to D's type after each (integers wrap to 32
bits): deterministic, not the hardware's accumulation order.
"""

from __future__ import annotations

import re

from tolk_lint.ir.interp.results import NotSupported
from tolk_lint.ir.interp.state import _BLOCK, _W_COLL, _WAITING
from tolk_lint.ir.interp.values import _f16, _f32, _from_bits, _kind, _to_bits
from tolk_lint.ir.nodes import type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode
FULL_WARP = 0xFFFFFFFF


def _h_tensor(ins, kernel, cblocks, numeric):
    """The closure: wait for the whole warp at this op (with every operand's value)."""
    args = list(ins.args)

    def item(th):
        env = th.env
        th.state = _WAITING
        th.wait = ins
        th.wkind = _W_COLL
        th.wargs = (FULL_WARP, tuple(env[a] for a in args))
        return _BLOCK

    return item


def _shape(ins) -> tuple[int, int, int]:
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", str(ins.attrs.get("shape") or ""))
    if not m:
        raise NotSupported(f"{ins.op.value} of shape {ins.attrs.get('shape')}", ins)
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _dims(matrix: str, m: int, n: int, k: int) -> tuple[int, int]:
    return {"a": (m, k), "b": (k, n)}.get(matrix, (m, n))


def _elements(values: list, elem: str, reg_types: list[str]) -> list:
    """A lane's fragment registers -> its elements (values of ``elem``)."""
    per = max(1, 32 // type_bits(elem))
    out = []
    dec = _from_bits(elem)
    for v, t in zip(values, reg_types):
        bits = _to_bits(t)(v) if _kind(t) == "float" else int(v)
        width = type_bits(elem)
        for i in range(per):
            out.append(dec((bits >> (i * width)) & ((1 << width) - 1)))
    return out


def _registers(elems: list, elem: str, reg_types: list[str]) -> list:
    """Elements -> a lane's fragment registers of ``reg_types``."""
    per = max(1, 32 // type_bits(elem))
    enc = _to_bits(elem)
    out = []
    for r, t in enumerate(reg_types):
        part = elems[r * per : (r + 1) * per]
        if per == 1 and _kind(t) == "float":
            out.append(part[0])
            continue
        bits = 0
        for i, x in enumerate(part):
            bits |= (enc(x) & ((1 << type_bits(elem)) - 1)) << (i * type_bits(elem))
        out.append(_from_bits(t)(bits) if _kind(t) == "float" else bits)
    return out


class _TensorCores:
    """The warp-wide tensor-core ops, once every lane has arrived."""

    def _run_tensor(self, ins, ths: list) -> None:
        if ins.op is O.WMMA_LOAD:
            self._wmma_load(ins, ths)
        elif ins.op is O.WMMA_STORE:
            self._wmma_store(ins, ths)
        elif ins.op is O.MMA:
            self._mma(ins, ths)
        else:
            raise NotSupported(f"{ins.op.value}", ins)

    def _fragment_owner(self, total: int, per_lane: int, ths: list) -> dict[int, tuple]:
        """Matrix element -> (thread, index in its fragment): the first lane holding it."""
        owner: dict[int, tuple] = {}
        for th in sorted(ths, key=lambda t: t.lane):
            for j in range(per_lane):
                e = (th.lane * per_lane + j) % total
                owner.setdefault(e, (th, j))
        return owner

    def _wmma_load(self, ins, ths: list) -> None:
        m, n, k = _shape(ins)
        rows, cols = _dims(str(ins.attrs.get("matrix") or "c"), m, n, k)
        elem = str(ins.attrs.get("dtype") or "f16")
        row_major = ins.attrs.get("layout", "row") != "col"
        eb = max(1, type_bits(elem) // 8)
        reg_types = [r.type for r in ins.results]
        per_lane = len(reg_types) * max(1, 32 // type_bits(elem))
        space = str(ins.attrs.get("space") or "generic")
        dec = _from_bits(elem)
        for th in ths:
            args = th.wargs[1]
            addr = int(args[0])
            stride = int(args[1]) if len(args) > 1 else (cols if row_major else rows)
            elems = []
            for j in range(per_lane):
                r, c = divmod((th.lane * per_lane + j) % (rows * cols), cols)
                at = addr + ((r * stride + c) if row_major else (c * stride + r)) * eb
                elems.append(dec(int.from_bytes(self.read(th, ins, space, at, eb), "little")))
            self._set_result(th, ins, _registers(elems, elem, reg_types))

    def _wmma_store(self, ins, ths: list) -> None:
        m, n, k = _shape(ins)
        elem = str(ins.attrs.get("dtype") or "f32")
        row_major = ins.attrs.get("layout", "row") != "col"
        eb = max(1, type_bits(elem) // 8)
        has_stride = bool(ins.attrs.get("has_stride"))
        vals = list(ins.args[1 : len(ins.args) - (1 if has_stride else 0)])
        reg_types = [v.type for v in vals]
        per_lane = len(vals) * max(1, 32 // type_bits(elem))
        space = str(ins.attrs.get("space") or "generic")
        enc = _to_bits(elem)
        frags = {th.lane: _elements(list(th.wargs[1][1 : 1 + len(vals)]), elem, reg_types) for th in ths}
        for e, (th, j) in sorted(self._fragment_owner(m * n, per_lane, ths).items()):
            args = th.wargs[1]
            addr = int(args[0])
            stride = int(args[-1]) if has_stride else (n if row_major else m)
            r, c = divmod(e, n)
            at = addr + ((r * stride + c) if row_major else (c * stride + r)) * eb
            self.write(th, ins, space, at, (enc(frags[th.lane][j]) & ((1 << (8 * eb)) - 1)).to_bytes(eb, "little"))

    def _mma(self, ins, ths: list) -> None:
        m, n, k = _shape(ins)
        dtypes = tuple(ins.attrs.get("dtypes") or ())
        if len(dtypes) >= 4:
            dt, at, bt, ct = dtypes[:4]
        elif len(dtypes) == 2:
            dt, ct = dtypes
            at = bt = "f16"
        else:
            raise NotSupported(f"mma with types {dtypes}", ins)
        if ins.attrs.get("sparse"):
            raise NotSupported("sparse mma", ins)
        na, nb, nc = ins.attrs.get("counts") or (0, 0, 0)
        types = [a.type for a in ins.args]
        res_types = [r.type for r in ins.results]

        def matrix(elem, lo, count, rows, cols):
            per_lane = count * max(1, 32 // type_bits(elem))
            out = [None] * (rows * cols)
            for th in sorted(ths, key=lambda t: t.lane):
                xs = _elements(list(th.wargs[1][lo : lo + count]), elem, types[lo : lo + count])
                for j, x in enumerate(xs):
                    e = (th.lane * per_lane + j) % (rows * cols)
                    if out[e] is None:
                        out[e] = x
            return out

        a = matrix(at, 0, na, m, k)
        b = matrix(bt, na, nb, k, n)
        c = matrix(ct, na + nb, nc, m, n)
        integer = _kind(dt) == "int"
        rnd = (lambda x: ((int(x) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)) if integer else (_f16 if dt == "f16" else _f32)
        d = []
        for r in range(m):
            for col in range(n):
                acc = c[r * n + col] or 0
                for kk in range(k):
                    acc = rnd(acc + a[r * k + kk] * b[kk * n + col]) if integer else rnd(
                        float(acc) + float(a[r * k + kk]) * float(b[kk * n + col]))
                d.append(acc)
        per_lane = len(res_types) * max(1, 32 // type_bits(dt))
        for th in ths:
            elems = [d[(th.lane * per_lane + j) % (m * n)] for j in range(per_lane)]
            self._set_result(th, ins, _registers(elems, dt, res_types))
