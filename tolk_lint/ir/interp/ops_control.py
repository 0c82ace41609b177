"""The instructions that stop or move a thread: BARRIER and the warp
collectives make it wait (what they compute is decided when the group
completes, in `collectives`; ``bar.arrive`` only counts), BRANCH and JUMP
return the block to enter, RET and EXIT end the thread."""

from __future__ import annotations

from tolk_lint.ir.interp.results import InterpError
from tolk_lint.ir.interp.state import _BLOCK, _EXIT, _W_ACTIVE, _W_BAR, _W_COLL, _WAITING
from tolk_lint.ir.opcodes import Opcode

O = Opcode


# -- synchronisation


def _h_barrier(ins, kernel, cblocks, numeric):
    kind = ins.attrs.get("kind", "sync")
    if kind == "arrive":

        def arrive(th):
            th.m.count_barrier(ins, th.tid)

        return arrive
    pred_v = ins.args[-1] if (kind == "red" and ins.args) else None

    def item(th):
        th.state = _WAITING
        th.wait = ins
        th.wkind = _W_BAR
        th.wargs = (th.env[pred_v],) if pred_v is not None else ()
        return _BLOCK

    return item


def _h_collective(ins, kernel, cblocks, numeric):
    op = ins.op
    mask_v = ins.args[-1] if ins.args else None
    if op is O.ACTIVEMASK:

        def active(th):
            th.state = _WAITING
            th.wait = ins
            th.wkind = _W_ACTIVE
            th.wargs = ()
            return _BLOCK

        return active
    argv = list(ins.args[:-1]) if mask_v is not None else []

    def item(th):
        env = th.env
        th.state = _WAITING
        th.wait = ins
        th.wkind = _W_COLL
        mask = int(env[mask_v]) & 0xFFFFFFFF if mask_v is not None else 0xFFFFFFFF
        th.wargs = (mask, tuple(env[a] for a in argv))
        return _BLOCK

    return item


# -- control


def _h_phi(ins, kernel, cblocks, numeric):
    def item(th):
        raise InterpError(f"PHI {ins.result.name} after a non-PHI instruction in {ins.block.name}")

    return item


def _h_branch(ins, kernel, cblocks, numeric):
    c = ins.args[0]
    t, f = ins.attrs["targets"]
    ct, cf = cblocks[t], cblocks[f]
    return lambda th: ct if th.env[c] else cf


def _h_jump(ins, kernel, cblocks, numeric):
    t = cblocks[ins.attrs["target"]]
    return lambda th: t


def _h_exit(ins, kernel, cblocks, numeric):
    def item(th):
        th.exit_instr = ins
        return _EXIT

    return item
