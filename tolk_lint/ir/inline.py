"""Inlining calls: a kernel's CALLs to functions of its module replaced by
copies of their bodies (`inline_calls`).

PTX keeps a function that is not inlined as a ``.func`` and a ``call`` (nvcc
for ``__noinline__``, clang's NVPTX back end for most OpenCL and CUDA
functions). The analyses look at one kernel at a time, so a call would hide
what the callee does: its shared-memory accesses (a race inside it), what it
reads after a barrier (uniform or not), the pointer it returns. Inlined, the
callee's instructions are the kernel's own, with their spans in the callee
(where they are in the linted file), an `Origin` chained to the call's
(``inlined_at``, as nvcc's ``.loc`` does for what it inlines itself), and
``attrs["call_site"]``: the outermost call in the kernel as
``(callee, span, origin)``, where a barrier inside a callee is reported.

A call is inlined when its callee has a body in the module, takes as many
arguments as the call passes and returns as many values as it reads, is not
recursive, and the kernel stays under `MAX_INSTRS`; the others stay CALLs
(opaque to the analyses, as before). The callee's own buffers (its ``.local``
stack) are renamed per copy.

Imports `nodes` and `opcodes` only.
"""

from __future__ import annotations

from tolk_lint.ir.nodes import Block, Instr, Kernel, Origin, Value, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode
MAX_INSTRS = 200_000  # a kernel grown past this keeps its remaining calls
MAX_DEPTH = 16  # calls inside inlined code, nested


def inline_calls(kernel: Kernel, functions: dict[str, Kernel]) -> int:
    """Inline every call of ``kernel`` that can be (see the module
    docstring), calls in inlined bodies included. Returns how many."""
    size = sum(len(b.instrs) for b in kernel.blocks)
    ids = _Ids(kernel)
    done = 0
    copies: dict[str, int] = {}
    work = [(ins, 0) for ins in kernel.instrs() if ins.op is O.CALL]
    while work:
        call, depth = work.pop()
        callee = functions.get(call.attrs.get("callee") or "")
        if callee is None or callee is kernel or depth >= MAX_DEPTH or not _fits(call, callee):
            continue
        grown = sum(len(b.instrs) for b in callee.blocks)
        if size + grown > MAX_INSTRS:
            continue
        size += grown
        n = copies[callee.name] = copies.get(callee.name, 0) + 1
        inner = _inline_one(kernel, call, callee, ids, n)
        work += [(ins, depth + 1) for ins in inner]
        done += 1
    if done:
        for i, b in enumerate(kernel.blocks):
            b.id = i
        n = 0
        for b in kernel.blocks:
            for ins in b.instrs:
                ins.id = n
                n += 1
        kernel._cache.clear()
    return done


def _fits(call: Instr, callee: Kernel) -> bool:
    """The call passes one value per parameter the body reads with PARAM,
    reads one result per value its RETs return, and the body starts at a
    block nothing jumps back to and returns somewhere."""
    if not callee.blocks or callee.blocks[0].preds or call.attrs.get("indirect"):
        return False
    if not any(b.terminator is not None and b.terminator.op is O.RET for b in callee.blocks):
        return False  # it never returns: nothing would follow the call
    params = {p.name for p in callee.params}
    if len(call.args) != len(callee.params):
        return False
    for ins in callee.instrs():
        if ins.op is O.PARAM and ins.attrs.get("name") not in params:
            return False
        if ins.op is O.RET and len(ins.args) != len(call.results):
            return False
        if ins.op is O.LOAD and ins.attrs.get("space") == "param":
            return False  # a parameter read as memory (a struct passed by value): not mapped
    return True


class _Ids:
    """Fresh value ids for a kernel."""

    def __init__(self, kernel: Kernel):
        top = 0
        for ins in kernel.instrs():
            for r in ins.results:
                top = max(top, r.id)
        for p in kernel.params:
            if p.value is not None:
                top = max(top, p.value.id)
        self.next = top + 1

    def value(self, like: Value, suffix: str) -> Value:
        v = Value(self.next, like.type, f"{like.name}{suffix}", like.source_name)
        self.next += 1
        return v


def _inline_one(kernel: Kernel, call: Instr, callee: Kernel, ids: _Ids, n: int) -> list[Instr]:
    """Replace ``call`` by a copy of ``callee``'s body; returns the CALLs of the copy."""
    here = call.block
    at = here.instrs.index(call)
    tag = f"@{callee.name}#{n}"
    site = call.attrs.get("call_site") or (callee.name, call.span, call.origin)
    # the block after the call: the instructions that followed it, and the edges out
    after = Block(f"{here.name}.ret{tag}")
    after.kernel = kernel
    after.instrs = here.instrs[at + 1 :]
    for ins in after.instrs:
        ins.block = after
    after.succs = here.succs
    for s in after.succs:
        s.preds = [after if p is here else p for p in s.preds]
    here.instrs = here.instrs[:at]
    here.succs = []
    # buffers of the callee (its stack, its own shared arrays): one per copy
    renamed: dict[str, str] = {}
    for name, buf in callee.buffers.items():
        if name in kernel.buffers and kernel.buffers[name] is buf:
            continue
        if buf.space in ("local", "reg") or name in kernel.buffers:
            new = f"{name}{tag}"
            renamed[name] = new
            kernel.buffers[new] = _copy_buffer(buf, new)
        else:
            kernel.buffers[name] = buf
    # the copy: blocks, values, instructions
    params = {p.name: a for p, a in zip(callee.params, call.args)}
    vmap: dict[Value, Value] = {}
    bmap: dict[Block, Block] = {}
    for b in callee.blocks:
        nb = Block(f"{b.name}{tag}")
        nb.kernel = kernel
        nb.span = b.span
        bmap[b] = nb
    returns: list[tuple[Block, list[Value]]] = []
    calls: list[Instr] = []
    pending_phis: list[tuple[Instr, Instr]] = []
    for b in callee.blocks:
        nb = bmap[b]
        for ins in b.instrs:
            if ins.op is O.PARAM:
                arg = params[ins.attrs["name"]]
                vmap[ins.result] = _fit(arg, ins.result, nb, ins, ids, site)
                continue
            if ins.op is O.RET:
                returns.append((nb, ins.args))
                _append(nb, Instr(O.JUMP, [], [], {"target": after, "call_site": site}, ins.span,
                                  _chain(ins.origin, call.origin), ins.text))  # fmt: skip
                continue
            results = [ids.value(r, tag) for r in ins.results]
            for r, nr in zip(ins.results, results):
                vmap[r] = nr
            attrs = dict(ins.attrs)
            attrs["call_site"] = site
            if ins.op is O.BRANCH:
                attrs["targets"] = tuple(bmap[t] for t in ins.attrs["targets"])
            elif ins.op is O.JUMP:
                attrs["target"] = bmap[ins.attrs["target"]]
            if attrs.get("buffer") in renamed:
                attrs["buffer"] = renamed[attrs["buffer"]]
            new = Instr(ins.op, [], results, attrs, ins.span, _chain(ins.origin, call.origin), ins.text)
            _append(nb, new)
            pending_phis.append((ins, new))
            if ins.op is O.CALL:
                calls.append(new)
    # operands, now that every value of the body has its copy
    for old, new in pending_phis:
        new.args = [vmap.get(a, a) for a in old.args]
    for b in callee.blocks:
        nb = bmap[b]
        nb.succs = [bmap[s] for s in b.succs]
        nb.preds = [bmap[p] for p in b.preds]
    # into the kernel: the call's block jumps to the copy's entry
    entry = bmap[callee.blocks[0]]
    _append(here, Instr(O.JUMP, [], [], {"target": entry, "call_site": site}, call.span, call.origin, call.text))
    here.succs = [entry]
    entry.preds = [here]
    after.preds = [b for b, _vals in returns]
    for b, _vals in returns:
        b.succs = [after]
    # the call's results: the returned values (a PHI where several RETs meet)
    subst: dict[Value, Value] = {}
    for i, r in enumerate(call.results):
        vals = [vmap.get(vals[i], vals[i]) for _b, vals in returns]
        if not vals:
            continue
        if len(set(vals)) == 1:
            subst[r] = vals[0]
        else:
            phi = Instr(O.PHI, vals, [ids.value(r, tag)], {"call_site": site}, call.span, call.origin, call.text)
            phi.block = after
            after.instrs.insert(0, phi)
            subst[r] = phi.result
    idx = kernel.blocks.index(here)
    kernel.blocks[idx + 1 : idx + 1] = [bmap[b] for b in callee.blocks] + [after]
    if subst:
        for b in kernel.blocks:
            for ins in b.instrs:
                if any(a in subst for a in ins.args):
                    ins.args = [subst.get(a, a) for a in ins.args]
        kernel.assumptions = [subst.get(a, a) for a in kernel.assumptions]
    return calls


def _append(b: Block, ins: Instr) -> None:
    ins.block = b
    b.instrs.append(ins)


def _fit(arg: Value, param: Value, b: Block, like: Instr, ids: _Ids, site) -> Value:
    """The argument as the parameter's type: itself, or converted when the
    widths differ (a 64-bit slot read as 32 bits)."""
    if type_bits(arg.type) == type_bits(param.type) or arg.type == "pred" or param.type == "pred":
        return arg
    v = ids.value(param, "")
    ins = Instr(O.CVT, [arg], [v], {"from_type": arg.type, "call_site": site}, like.span,
                _chain(like.origin, site[2]), like.text)  # fmt: skip
    _append(b, ins)
    return v


def _chain(origin: Origin | None, call: Origin | None) -> Origin | None:
    """``origin`` inlined at ``call``: its chain, with ``call`` at the end."""
    if call is None:
        return origin
    if origin is None:
        return call
    frames = origin.chain()
    out = call
    for f in reversed(frames):
        out = Origin(f.path, f.line, f.column, out)
    return out


def _copy_buffer(buf, name: str):
    from dataclasses import replace

    return replace(buf, name=name)
