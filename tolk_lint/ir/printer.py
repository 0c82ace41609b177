"""A stable text dump of a kernel, for tests and `tolk-lint check --dump-ir`.

One line per instruction, in block order:

    kernel k(%n: u32) target sm_80 launch block=(256,1,1)
    bb0:                                   ; preds: -
      %tid.x.0 = special tid.x : u32       ; t.ptx:12
      %p.0 = cmp.lt.u32 %tid.x.0, 16 : pred
      br %p.0, bb1, bb2
    ...
    loops:
      bb1 depth 1 latches bb3 iv %i.1 = %i.0 + 1 exit(%p.2) when i lt %n.0

Operands print as value names; constants print inline as their value, so a
dump reads like the source. Nothing in the dump depends on object ids.
"""

from __future__ import annotations

from tolk_lint.ir.cfg import cfg_of
from tolk_lint.ir.nodes import Instr, Kernel, Value
from tolk_lint.ir.opcodes import Opcode

# attributes worth showing, in this order, after the opcode
_SHOWN = ("name", "buffer", "space", "cmp", "mode", "kind", "fn", "op", "shape", "n", "bytes", "callee", "index")


def value_ref(v: Value) -> str:
    d = v.defn
    if d is not None and d.op is Opcode.CONST:
        return repr(d.attrs.get("value"))
    return v.name


def format_instr(ins: Instr) -> str:
    op = ins.op.value
    if ins.op is Opcode.CMP:
        op += "." + str(ins.attrs.get("cmp"))
        if ins.attrs.get("signed") is not None:
            op += ".s" if ins.attrs.get("signed") else ".u"
    extras = []
    for key in _SHOWN:
        if key in ins.attrs and not (ins.op is Opcode.CMP and key == "cmp"):
            val = ins.attrs[key]
            if key == "buffer" and hasattr(val, "name"):
                val = val.name
            if key == "index" and isinstance(val, (tuple, list)):
                val = "(" + ", ".join(value_ref(x) if isinstance(x, Value) else str(x) for x in val) + ")"
            extras.append(f"{key}={val}")
    if ins.op is Opcode.CONST:
        body = f"const {ins.attrs.get('value')!r}"
    else:
        body = " ".join([op] + extras)
        if ins.args:
            body += " " + ", ".join(value_ref(a) for a in ins.args)
    if ins.op is Opcode.BRANCH:
        t, f = ins.attrs["targets"]
        body = f"br {value_ref(ins.args[0])}, {t.name}, {f.name}"
    elif ins.op is Opcode.JUMP:
        body = f"jump {ins.attrs['target'].name}"
    if ins.results:
        lhs = ", ".join(r.name for r in ins.results)
        types = ", ".join(r.type for r in ins.results)
        return f"{lhs} = {body} : {types}"
    return body


def dump_kernel(k: Kernel, with_loops: bool = True, with_locations: bool = False) -> str:
    params = ", ".join(f"{p.name}: {p.dtype}{'*' if p.kind == 'pointer' else ''}" for p in k.params)
    head = f"{'kernel' if k.is_entry else 'function'} {k.name}({params}) target {k.target}"
    if k.host:
        head += " host"
    if k.launch.block:
        head += " launch"
        if k.launch.grid:  # each dimension's blocks, a range when launches differ
            head += " grid=({})".format(",".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in k.launch.grid))
        head += " block=({},{},{})".format(*k.launch.block)
    elif k.launch.max_threads:
        head += f" launch max_threads={k.launch.max_threads}"
    lines = [head]
    for name, buf in sorted(k.buffers.items()):
        shape = "x".join("?" if d is None else str(d) for d in buf.shape)
        lines.append(f"  buffer {name}: {buf.space} {buf.dtype}[{shape}]{' dynamic' if buf.dynamic else ''}")
    for b in k.blocks:
        preds = ", ".join(p.name for p in b.preds) or "-"
        lines.append(f"{b.name}:  ; preds: {preds}")
        for ins in b.instrs:
            text = "  " + format_instr(ins)
            if with_locations and ins.span is not None:
                loc = f"{ins.span.line}"
                if ins.origin is not None:
                    loc += f" <- {ins.origin.path}:{ins.origin.line}"
                text = f"{text:<60} ; {loc}"
            lines.append(text)
    if with_loops:
        cfg = cfg_of(k)
        if cfg.loops:
            lines.append("loops:")
        for lp in cfg.loops:
            latches = ", ".join(b.name for b in lp.latches)
            desc = f"  {lp.header.name} depth {lp.depth} latches {latches}"
            for iv in lp.ivs:
                step = iv.step if iv.step is not None else ("-" if iv.negated else "") + value_ref(iv.step_value)
                desc += f" iv {iv.phi.name} = {value_ref(iv.start)} step {step}"
            for ex in lp.exits:
                if ex.iv is not None:
                    which = ex.iv.next.name if ex.uses_next else ex.iv.phi.name
                    desc += f" exit {which} {ex.cmp} {value_ref(ex.bound)}"
                else:
                    desc += f" exit {value_ref(ex.cond)}"
            lines.append(desc)
        if cfg.irreducible:
            lines.append("irreducible: " + ", ".join(sorted(b.name for b in cfg.irreducible)))
    return "\n".join(lines) + "\n"
