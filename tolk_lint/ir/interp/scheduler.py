"""The scheduler: how threads advance, when barriers and collectives
complete, and when the workgroup hangs.

Threads run one after another (linear-id order unless ``schedule`` says
otherwise), each until it blocks or ends. A thread blocks at a BARRIER
(``kind`` ``sync``/``red``; ``arrive`` does not block), at a warp
collective (WARP_SYNC, SHUFFLE, VOTE, MATCH, REDUX) and at ACTIVEMASK. When
no thread can run:

- a collective runs once every non-exited lane its mask names (and that
  exists in the block) waits at the *same instruction* with the same
  mask; if some lanes of the mask had exited, it still runs and the run
  records a `PartialArrival` (``kind="collective"``);
- ACTIVEMASK returns the lanes of the warp waiting at the same ACTIVEMASK
  instruction (the lanes that reconverged there);
- a barrier completes when every non-exited thread waits at the same
  BARRIER instruction (`bar.sync` / `.aligned` semantics: barriers are
  keyed by instruction, ids and thread counts are ignored). Exited
  threads do not count (a barrier waits for non-exited threads), but the
  run records a `PartialArrival` (``kind="barrier"``): the early-return
  case of TL101;
- otherwise the workgroup hangs: `RunResult.hang` says which barrier or
  collective, which threads arrived, where the others wait, which exited.

A thread that runs more than ``max_steps`` instructions stops the run with
a ``step-limit`` hang.

Limits: named barriers with thread counts (producer/consumer ``bar.arrive``
patterns) are modelled as workgroup barriers; the order of memory accesses
between barriers is the schedule's (a racy kernel may compute other values
on a GPU).

`_Scheduler` is the part of the machine that runs the threads; what a
completed group computes is in `collectives`."""

from __future__ import annotations

from typing import Any

from tolk_lint.ir.interp.results import Hang, InterpError, _ranges, _where
from tolk_lint.ir.interp.state import _BLOCK, _EXIT, _EXITED, _LIMIT, _RUNNING, _W_BAR, _W_COLL, _Thread
from tolk_lint.ir.nodes import Value


class _Scheduler:
    """Running the threads until they end or hang."""

    def _run_thread(self, th: _Thread) -> None:
        limit = self.max_steps
        items = th.items
        pc = th.pc
        env = th.env
        try:
            while True:
                sig = items[pc](th)
                pc += 1
                if sig is None:
                    continue
                if sig is _BLOCK:
                    th.items, th.pc = items, pc
                    return
                if sig is _EXIT:
                    th.state = _EXITED
                    th.items, th.pc = items, pc
                    self.exited_mask[th.warp] |= 1 << th.lane
                    self._drain(th)
                    return
                # entering a block
                log = th.log
                if log is not None:
                    lp = sig.header_of
                    if lp is not None:
                        th.iters[lp] = th.iters.get(lp, -1) + 1 if th.cblock in sig.inside else 0
                    if lp is not None or sig.loops is not th.ctx_loops:
                        th.ctx_loops = sig.loops
                        ctx = tuple([th.iters.get(x, 0) for x in sig.loops]) if sig.loops else ()
                        if ctx != th.ctx:
                            th.ctx = ctx
                            log.append((None, ctx))
                if sig.has_phis:
                    mv = sig.moves.get(th.cblock)
                    if mv is None:
                        raise InterpError(
                            f"{sig.block.name} entered from {th.cblock.block.name}, not a predecessor"
                        )
                    res, srcs, convs = mv
                    vals = [env[s] if c is None else c(env[s]) for s, c in zip(srcs, convs)]
                    log = th.log
                    for r, x in zip(res, vals):
                        env[r] = x
                        if log is not None:
                            log.append((r, x))
                th.cblock = sig
                items = sig.items
                pc = 0
                th.steps += sig.size
                if th.steps > limit:
                    th.state = _LIMIT
                    th.items, th.pc = items, pc
                    return
        except KeyError as e:
            ins = th.cblock.instrs[pc] if pc < len(th.cblock.instrs) else None
            v = e.args[0] if e.args else None
            if isinstance(v, Value):
                raise InterpError(
                    f"thread {th.tid}: {v.name} used before it is defined, at {_where(ins)}"
                ) from None
            raise

    def run(self, schedule: Any = "forward") -> None:
        threads = self.threads
        if schedule == "forward":
            order = list(threads)
        elif schedule == "reverse":
            order = threads[::-1]
        elif isinstance(schedule, int) and not isinstance(schedule, bool):
            import random

            order = list(threads)
            random.Random(schedule).shuffle(order)
        else:
            raise ValueError(f"schedule must be 'forward', 'reverse' or an int seed, not {schedule!r}")
        while True:
            for th in order:
                if th.state == _RUNNING:
                    self._run_thread(th)
                    if th.state == _LIMIT:
                        ins = th.cblock.instrs[th.pc] if th.pc < len(th.cblock.instrs) else None
                        self.hang = Hang(
                            "step-limit", ins, (), {}, tuple(t.tid for t in threads if t.state == _EXITED),
                            thread=th.tid,
                            message=f"thread {th.tid} ran more than {self.max_steps} steps (at {_where(ins)})",
                        )  # fmt: skip
                        return
            if self._resolve_collectives():
                continue
            if self._resolve_activemask():
                continue
            live = [th for th in threads if th.state != _EXITED]
            if not live:
                return
            first = live[0].wait
            if all(th.wkind == _W_BAR and th.wait is first for th in live):
                self._release_barrier(first, live)
                continue
            self.hang = self._make_hang(live)
            return

    def _make_hang(self, live: list[_Thread]) -> Hang:
        coll = [th for th in live if th.wkind == _W_COLL]
        anchor = coll[0] if coll else live[0]
        ins = anchor.wait
        arrived = tuple(th.tid for th in live if th.wait is ins)
        elsewhere = {th.tid: th.wait for th in live if th.wait is not ins}
        exited = tuple(th.tid for th in self.threads if th.state == _EXITED)
        kind = "collective" if coll else "barrier"
        others = sorted({_where(i) for i in elsewhere.values()})
        msg = (
            f"{kind} hang at {_where(ins)}: threads {_ranges(arrived)} wait there"
            + (f"; {_ranges(tuple(elsewhere))} wait at {', '.join(others)}" if elsewhere else "")
            + (f"; {_ranges(exited)} exited" if exited else "")
        )
        return Hang(kind, ins, arrived, elsewhere, exited, message=msg)
