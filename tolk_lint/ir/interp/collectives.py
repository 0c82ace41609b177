"""Barriers and warp collectives: when a waiting group completes, and
what it computes.

A collective (WARP_SYNC, SHUFFLE, VOTE, MATCH, REDUX, and the tensor-core
ops of `ops_tensor`) runs once every
non-exited lane its mask names (and that exists in the block) waits at the
same instruction with the same mask; if some lanes of the mask had exited,
it still runs and the run records a `PartialArrival` (``kind="collective"``).
ACTIVEMASK returns the lanes of the warp waiting at the same ACTIVEMASK
instruction (the lanes that reconverged there). A completed barrier counts
for each thread, gives ``bar.red`` its reduction, records a
`PartialArrival` (``kind="barrier"``) when some threads had exited, and
starts a new race-detector epoch. Shuffles from lanes that do not take part
return the lane's own value (undefined in PTX) with a note.

`_Collectives` is the part of the machine that does this; the `scheduler`
decides when to try."""

from __future__ import annotations

from tolk_lint.ir.interp.results import NotSupported, PartialArrival, _same, _where
from tolk_lint.ir.interp.state import _EXITED, _RUNNING, _W_ACTIVE, _W_COLL, _WAITING, WARP_SIZE, _Thread
from tolk_lint.ir.interp.values import _canon, _kind, _signed_view, _unsigned_view
from tolk_lint.ir.nodes import Instr, is_signed, type_bits
from tolk_lint.ir.opcodes import Opcode

O = Opcode


class _Collectives:
    """Completing barriers and warp collectives, and their results."""

    def count_barrier(self, ins: Instr, tid: int) -> None:
        d = self.barrier_counts.get(ins)
        if d is None:
            d = self.barrier_counts[ins] = {}
        d[tid] = d.get(tid, 0) + 1

    def _record_partial(self, kind, ins, arrived, exited) -> None:
        key = (kind, ins)
        p = self.partial.get(key)
        if p is None:
            self.partial[key] = PartialArrival(kind, ins, tuple(arrived), tuple(exited))
        else:
            p.count += 1

    def _set_result(self, th: _Thread, ins: Instr, outs: list) -> None:
        env, log = th.env, th.log
        for r, x in zip(ins.results, outs):
            x = _canon(r.type)(x)
            env[r] = x
            if log is not None:
                log.append((r, x))

    def _release_barrier(self, ins: Instr, live: list[_Thread]) -> None:
        for th in live:
            self.count_barrier(ins, th.tid)
        if ins.results:
            preds = [bool(th.wargs[0]) if th.wargs else False for th in live]
            rt = ins.results[0].type
            op = str(ins.attrs.get("op") or ins.attrs.get("mode") or ins.attrs.get("red") or "")
            if op in ("popc", "count"):
                res = sum(preds)
            elif op == "and" or op == "all":
                res = all(preds)
            elif op in ("or", "any"):
                res = any(preds)
            else:
                res = sum(preds) if rt != "pred" else any(preds)
            for th in live:
                self._set_result(th, ins, [res])
        exited = [th.tid for th in self.threads if th.state == _EXITED]
        if exited:
            self._record_partial("barrier", ins, [th.tid for th in live], exited)
        # a barrier orders every access before it with every access after it
        self.epoch += 1
        self.sh_w.clear()
        self.sh_r.clear()
        for th in live:
            th.state = _RUNNING
            th.wait = None

    def _resolve_collectives(self) -> bool:
        groups: dict[tuple, list[_Thread]] = {}
        for th in self.threads:
            if th.state == _WAITING and th.wkind == _W_COLL:
                groups.setdefault((th.warp, id(th.wait), th.wargs[0]), []).append(th)
        progressed = False
        for (w, _iid, mask), ths in groups.items():
            here = 0
            for th in ths:
                here |= 1 << th.lane
            live = self.exists_mask[w] & ~self.exited_mask[w]
            required = mask & live
            if required & ~here:
                continue
            ins = ths[0].wait
            missing = mask & self.exists_mask[w] & self.exited_mask[w]
            if missing:
                base = w * WARP_SIZE
                self._record_partial(
                    "collective", ins, [th.tid for th in ths],
                    [base + i for i in range(WARP_SIZE) if (missing >> i) & 1],
                )  # fmt: skip
            for th in ths:
                if not (mask >> th.lane) & 1:
                    self.note(f"{_where(ins)}: thread {th.tid} is not in the mask {mask:#x} it passes")
            self._run_collective(ins, ths, here)
            for th in ths:
                th.state = _RUNNING
                th.wait = None
            progressed = True
        return progressed

    def _resolve_activemask(self) -> bool:
        groups: dict[tuple, list[_Thread]] = {}
        for th in self.threads:
            if th.state == _WAITING and th.wkind == _W_ACTIVE:
                groups.setdefault((th.warp, id(th.wait)), []).append(th)
        for ths in groups.values():
            here = 0
            for th in ths:
                here |= 1 << th.lane
            for th in ths:
                self._set_result(th, th.wait, [here])
                th.state = _RUNNING
                th.wait = None
        return bool(groups)

    def _run_collective(self, ins: Instr, ths: list[_Thread], here: int) -> None:
        op = ins.op
        by_lane = {th.lane: th for th in ths}
        if op is O.WARP_SYNC:
            members = 0
            for th in ths:
                members |= 1 << th.tid
            for th in ths:
                th.wsync.append(members)
            self.any_wsync = True
            return
        if op is O.SHUFFLE:
            mode = str(ins.attrs.get("mode", "idx"))
            python = self.kernel.language == "python"
            for th in ths:
                args = th.wargs[1]
                a = args[0]
                b = int(args[1]) & 0xFFFFFFFF if len(args) > 1 else 0
                c = int(args[2]) & 0xFFFFFFFF if len(args) > 2 else 0x1F
                if python:  # CUDA's width-32 semantics whatever the clamp operand says
                    c = 0 if mode == "up" else 0x1F
                lane = th.lane
                seg = (c >> 8) & 0x1F
                maxlane = (lane & seg) | (c & 0x1F & ~seg)
                minlane = lane & seg
                if mode == "up":
                    j = lane - b
                    ok = j >= maxlane
                elif mode == "down":
                    j = lane + b
                    ok = j <= maxlane
                elif mode == "bfly":
                    j = lane ^ b
                    ok = j <= maxlane
                else:
                    j = minlane | (b & ~seg & 0x1F)
                    ok = j <= maxlane
                if not ok:
                    j = lane
                src = by_lane.get(j)
                if src is None:
                    self.note(
                        f"{_where(ins)}: lane {lane} reads lane {j}, which does not take part (undefined)"
                    )
                    val = a
                else:
                    val = src.wargs[1][0]
                self._set_result(th, ins, [val, ok])
            return
        if op is O.VOTE:
            mode = str(ins.attrs.get("mode", "all"))
            votes = {th.lane: bool(th.wargs[1][0]) if th.wargs[1] else False for th in ths}
            ballot = 0
            for lane, v in votes.items():
                if v:
                    ballot |= 1 << lane
            vals = list(votes.values())
            for th in ths:
                if mode == "ballot":
                    res = ballot
                elif mode == "any":
                    res = any(vals)
                elif mode == "uni":
                    res = all(vals) or not any(vals)
                else:
                    res = all(vals)
                self._set_result(th, ins, [res])
            return
        if op is O.MATCH:
            mode = str(ins.attrs.get("mode", "any"))
            vals = {th.lane: th.wargs[1][0] for th in ths}
            for th in ths:
                mine = vals[th.lane]
                same = 0
                for lane, v in vals.items():
                    if _same(v, mine):
                        same |= 1 << lane
                if mode == "all":
                    allsame = same == here
                    self._set_result(th, ins, [here if allsame else 0, allsame])
                else:
                    self._set_result(th, ins, [same])
            return
        if op is O.REDUX:
            rop = str(ins.attrs.get("op") or ins.attrs.get("mode") or "add")
            t = ins.args[0].type
            k = _kind(t)
            bits = type_bits(t)
            view = (
                (lambda x: x)
                if k != "int"
                else (_signed_view(bits) if is_signed(t) else _unsigned_view(bits))
            )
            xs = [view(th.wargs[1][0]) for th in ths]
            if rop == "add":
                res = sum(xs)
            elif rop == "min":
                res = min(xs)
            elif rop == "max":
                res = max(xs)
            elif rop == "and":
                res = -1
                for x in xs:
                    res &= x
            elif rop == "or":
                res = 0
                for x in xs:
                    res |= x
            elif rop == "xor":
                res = 0
                for x in xs:
                    res ^= x
            else:
                raise NotSupported(f"redux {rop}", ins)
            for th in ths:
                self._set_result(th, ins, [res])
            return
        if op in (O.WMMA_LOAD, O.WMMA_STORE, O.MMA):
            self._run_tensor(ins, ths)  # `ops_tensor`
            return
        raise NotSupported(f"{op.value}", ins)
