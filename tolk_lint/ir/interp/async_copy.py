"""cp.async: copies in flight, when they land, and the hazards at issue.

A copy reads its source when issued and lands (writes its destination) at
the latest legal moment, the CP_ASYNC_WAIT that retires its group
(``cp_async_policy="latest"``), or at once (``"earliest"``). Copies still
in flight when their thread exits land then and are reported
(``never-retired``). The hazard kinds are described in `races`.

`_AsyncCopies` is the part of the machine that issues, lands, retires and
drains copies; a thread keeps its own (``pending``, ``groups``)."""

from __future__ import annotations

from tolk_lint.ir.interp.races import _raw_kind, _words


class _Copy:
    __slots__ = ("data", "dst", "ins", "landed", "ordinal", "region", "retire_epoch", "retired", "tid")

    def __init__(self, tid, ins, dst, data, ordinal, region):
        self.tid = tid
        self.ins = ins
        self.dst = dst
        self.data = data
        self.landed = False
        self.retired = False
        self.retire_epoch = -1
        self.ordinal = ordinal
        self.region = region


class _AsyncCopies:
    """Issue, landing, retirement and draining of cp.async copies."""

    def cp_async(self, th, ins, dst, src, nbytes, src_size) -> None:
        data = (
            self.read(th, ins, "global", src, src_size) + bytes(nbytes - src_size)
            if src_size
            else bytes(nbytes)
        )
        n = th.copy_count.get(ins, 0) + 1
        th.copy_count[ins] = n
        reg = self.find(dst)
        cp = _Copy(th.tid, ins, dst, data, n, reg)
        th.last_copy[ins] = cp
        th.pending.append(cp)
        if reg is None or dst + nbytes - reg.base > reg.size:
            self._oob(th, ins, dst, "shared", True)
            cp.landed = True
            return
        if reg.space == "shared" and self.detect:
            tid = th.tid
            for w, mask, _v in _words(dst, data):
                old = self.inflight.get(w)
                if old is not None and not old.retired:
                    self._hazard("copy-over-inflight", old.ins, ins, (old.tid, tid), w << 2)
                rs = self.sh_r.get(w)
                if rs:
                    for (ri, rm), g in rs.items():
                        if rm & mask:
                            t2 = self._other(g[0], tid)
                            if t2 is not None:
                                # a reader already past this copy in its own program wanted its
                                # data (RAW); one before it read the slot's previous contents (WAR)
                                reader = self.threads[t2]
                                if reader.copy_count.get(ins, 0) >= n:
                                    self._hazard(_raw_kind(reader, ins, n), ins, ri, (tid, t2), w << 2)
                                else:
                                    self._hazard("copy-into-read", ins, ri, (tid, t2), w << 2)
                self.inflight[w] = cp
        if self.policy == "earliest":
            self._land(th, cp)

    def _land(self, th, cp: _Copy) -> None:
        if cp.landed:
            return
        cp.landed = True
        self.write(th, cp.ins, "shared", cp.dst, cp.data, is_async=True, copy=cp)

    def retire(self, th, cp: _Copy) -> None:
        self._land(th, cp)
        cp.retired = True
        cp.retire_epoch = self.epoch

    def _drain(self, th) -> None:
        """A thread ends: its copies still in flight land now."""
        left = list(th.pending)
        for g in th.groups:
            left.extend(g)
        th.pending, th.groups = [], []
        for cp in left:
            if not cp.retired:
                self._land(th, cp)
                self._hazard("never-retired", cp.ins, None, (th.tid, th.tid), cp.dst)
