"""The state and helpers every instruction family of the lowering shares.

`LoweringCore` is one function being lowered: the `Kernel` under
construction (its header: name, span, launch bounds from ``.maxntid``/
``.reqntid``/``.minnctapersm``/``.maxnreg``), the SSA `Builder`, the
parameters, the register scopes, and the statement being lowered (its span,
``.loc`` origin, text and scope). Its helpers, used by every family:

- emission: `emit` / `value` / `const` append to the current block (blocks
  are terminated only by the control family's `lower_term`);
- names: `resolve` says what a name is in the current scope (a register
  key, a call slot, a special register, a parameter, a buffer, a function,
  a symbol), cached per scope;
- operands: `val` reads a source operand as a `Value`, `write` writes a
  destination register (a register written by exactly one instruction is
  remembered with its block, so a read that block dominates takes the value
  directly instead of walking predecessors), `address` reads ``[base+off]``.

The families (`opaque`, `params`, `flatten`, `arith`, `memory`, `control`,
`warp`, `tensor_cores`) subclass it; `function.FunctionLowering` assembles
them.

What it may import: `vocabulary`, `specials`, `scope`, `cfg`, the syntax
tree (`tree`), `literals` (an immediate's value at its operand's width),
`errors` (`PtxSyntaxError`: what ptxas rejects), `tolk_lint.diagnostics`
and `tolk_lint.ir`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Collection
from typing import Any

from tolk_lint.diagnostics import Diagnostic, Severity
from tolk_lint.ir.builder import Builder
from tolk_lint.ir.nodes import (
    MAX_BLOCK_THREADS,
    Buffer,
    Instr,
    Kernel,
    LaunchBounds,
    Module,
    Origin,
    Param,
    Span,
    Value,
    impossible_block,
    type_bits,
)
from tolk_lint.ir.opcodes import Opcode

from .cfg import Segment
from .errors import PtxSyntaxError
from .literals import as_operand, wrap64
from .scope import Scope
from .specials import SPECIAL_RE, special_type
from .tree import FuncDecl, ParamDecl, PtxFile
from .vocabulary import SINK, Unmodelled, int_like, show_operand

O = Opcode

_RANGE_RE = re.compile(r"(.*?)(\d+)\Z")  # `%r12` of `.reg .b32 %r<100>`


def launch_bounds(perf: list[tuple[str, list[int]]]) -> tuple[LaunchBounds, str | None]:
    """What a function's performance directives say about its launch, and
    why a ``.reqntid`` no launch can have (ptxas takes it) was not used."""
    lb = LaunchBounds()
    unused = None
    for name, vals in perf:
        if name == ".maxntid" and vals:
            lb.maxntid = tuple(vals)
        elif name == ".reqntid" and vals:
            unused = impossible_block(tuple(vals))
            if unused is None:
                lb.reqntid = tuple(vals)
            else:
                unused = f"`.reqntid {', '.join(map(str, vals))}` is not a launch shape: {unused}"
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
        lb.max_threads = min(n, MAX_BLOCK_THREADS)  # a bound past what a block holds bounds nothing more
        lb.source = ".maxntid"
    return lb, unused


class LoweringCore:
    """One function being lowered: the kernel under construction and the
    state every instruction family shares."""

    def __init__(self, fd: FuncDecl, pf: PtxFile, mod: Module, module_buffers: dict[str, Buffer],
                 funcs: Collection[str]):  # fmt: skip
        self.fd = fd
        self.pf = pf
        self.mod = mod
        self.path = mod.path
        self.funcs = funcs  # the names of the module's functions, declared or defined
        self.k = Kernel(
            name=fd.name,
            language="ptx",
            path=mod.path,
            target=pf.target or "sm_80",
            is_entry=fd.kind == "entry",
            span=Span(mod.path, fd.line, fd.column, fd.end_line, fd.end_column),
        )
        self.k.launch, unused = launch_bounds(fd.perf)
        if unused is not None:
            message = f"{unused}; the kernel is analysed for any block shape"
            self.mod.diagnostics.append(Diagnostic("TL002", Severity.WARNING, message, self.k.span, kernel=fd.name,
                                                   name="unsupported-construct"))  # fmt: skip
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
        self.single: dict[str, tuple[Value, Segment]] = {}  # the one definition of a once-written register
        self.cur_seg: Segment | None = None
        # current statement
        self.span: Span | None = None
        self.origin: Origin | None = None
        self.text = ""
        self.scope: Scope = self.top
        # set later: `all_params` (by `lower`), `blk` (the current block, by `fill`),
        # `_seg`/`_stmt` (the statement's block and tuple, by `lower_stmt`)

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

    def rejected(self, message: str) -> PtxSyntaxError:
        """TL001 at the current statement: PTX ptxas does not assemble."""
        sp = self.span
        return PtxSyntaxError(message, sp.line, sp.column, sp.end_line, sp.end_column)  # type: ignore[union-attr]

    def dname(self, o: tuple) -> str | None:
        """The register key a destination operand names (for value names)."""
        if o[0] == "r" and o[1] != SINK:
            r = self.scope.cache.get(o[1]) or self.resolve(o[1])
            if r[0] == "reg":
                return r[1]
        return None

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
        if name[0] == "%" and SPECIAL_RE.match(name):
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
                return self.value(O.SPECIAL, [], special_type(r[1], t), {"name": r[1]}, name)
            if k in ("buf", "sym", "fn", "par", "ret"):
                return self.addr_of(o[1], k, t, name)
            if k == "const":
                return self.const(r[1], t or "u32", name)
            if k == "slot":
                raise Unmodelled(f"call slot `{o[1]}` used as a value")
            raise Unmodelled(f"cannot read `{o[1]}`")
        if tag == "i":
            t = t or "s32"
            return self.const(as_operand(o[1], t), t, name)
        if tag == "f":
            v = o[1]
            tt = t or o[2] or "f32"
            if tt[0] == "f" or tt in ("bf16", "tf32"):
                return self.const(v, tt, name)
            # a float literal as bits of an integer-typed operand
            if o[2] == "f64":
                bits = struct.unpack(">Q", struct.pack(">d", v))[0]
            else:
                bits = struct.unpack(">I", struct.pack(">f", v))[0]
            return self.const(bits, tt, name)
        if tag == "!":
            p = self.val(("r", o[1]), "pred")
            return self.value(O.NOT, [p], "pred", {"signed": False}, name)
        if tag == "o":
            base = self.val(("r", o[1]), t if int_like(t) else "u64", name if o[2] == 0 else None)
            if o[2] == 0:
                return base
            c = self.const(wrap64(o[2]), base.type)
            return self.value(O.ADD, [base, c], base.type, {"signed": False}, name)
        if tag == "x":
            buf = self.k.buffers.get(o[1])
            el = max(1, type_bits(buf.dtype) // 8) if buf is not None else 1
            base = self.val(("r", o[1]), t if int_like(t) else "u64", name if o[2] == 0 else None)
            if o[2] == 0:
                return base
            c = self.const(wrap64(o[2] * el), base.type)
            return self.value(O.ADD, [base, c], base.type, {"signed": False}, name)
        if tag == "v":
            parts = [self.val(x, None) for x in o[1]]
            return self.value(O.PACK, parts, t or "b64", None, name)
        raise Unmodelled(f"unexpected operand {show_operand(o)}")

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
            raise Unmodelled(f"unexpected destination {show_operand(o)}")
        name = o[1]
        if name == SINK:
            return
        r = self.scope.cache.get(name) or self.resolve(name)
        if r[0] != "reg":
            raise Unmodelled(f"`{name}` is not a register")
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
        if o[0] == "r" and o[1] != SINK:
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
        raise Unmodelled(f"unexpected destination {show_operand(o)}")

    def _frag(self, o: tuple) -> list[tuple]:
        if o[0] == "v":
            return list(o[1])
        if o[0] in ("r", "i", "f"):
            return [o]
        raise Unmodelled(f"unexpected fragment {show_operand(o)}")

    def address(self, m: tuple, space: str) -> tuple[Value, str | None, int]:
        """``[base+off]`` -> (address value, buffer name if the base is a
        buffer symbol, offset)."""
        if m[0] != "m":
            raise Unmodelled(f"expected an address, found {show_operand(m)}")
        _, base, off, _extras = m
        off = wrap64(off)
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
            at = wrap64(base[1] + off)
            return self.const(at, "u64"), None, at
        else:
            raise Unmodelled(f"unexpected address base {show_operand(base)}")
        if off:
            t = v.type if int_like(v.type) else "u64"
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
