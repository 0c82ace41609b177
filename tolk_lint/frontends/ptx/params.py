"""Function parameters: their PARAM values, reads of them, and what their
uses say about them.

Every ``.param`` of the function gets a PARAM instruction at the top of the
entry block (``.reg`` parameters of a ``.func`` are also written to their
register). ``ld.param`` of a whole parameter reads that value; a field of a
by-value struct (or a narrower read) gets a PARAM of its own, inserted
among the others. After the body is lowered, a parameter used as an address
is marked a pointer, with its state space and whether the kernel writes
through it.

What it may import: `core` and `tolk_lint.ir`.
"""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.nodes import Instr, Param, Value, type_bits
from tolk_lint.ir.opcodes import Opcode

from .core import LoweringCore

O = Opcode


class ParamLowering(LoweringCore):
    """The PARAM instructions of a function and the facts about its parameters."""

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
                attrs["bytes"] = n * max(1, type_bits(dtype) // 8)
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
        if off == 0 and not pd.shape and type_bits(dtype) == type_bits(p.dtype):
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
