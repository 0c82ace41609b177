"""The race detector (shared memory only).

Per byte (grouped by 4-byte word and instruction), the accesses of the
current barrier epoch: two accesses by different threads, at least one a
write and not both atomic, with no barrier between them and no WARP_SYNC
that both lanes executed after the first, are a `Race` (one per pair of
instructions). A cp.async lands as a write by its issuing thread
(``Race.async_copy``). `AsyncHazard` records the cp.async hazards of
TL204: a read of a destination whose copy is not retired
(``read-before-wait``), retired by another thread with no barrier since
(``read-before-barrier``), a copy into bytes another thread reads in the
same epoch before it reaches that copy (``copy-into-read``), a copy or
store over a copy still in flight (``copy-over-inflight``,
``write-over-inflight``), and copies never retired (``never-retired``).
Whether a read wanted another thread's copy (RAW) or the slot's previous
contents (WAR) is told by program order, so the kinds do not depend on the
schedule: a reader that has itself run that copy instruction as often
wanted its data (``read-before-wait``, or ``read-before-barrier`` when its
own copy is already retired, i.e. its program waits but has no barrier).

`_RaceDetector` is the part of the machine that checks each shared access
(the hazards at a copy's issue are checked in `async_copy`); its state
(``sh_w``, ``sh_r``, ``inflight``, ``epoch``, ``any_wsync``, ``races``,
``hazards``) is set up by `_Machine.__init__`, and a completed barrier
(`collectives`) starts a new epoch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.ir.interp.results import AsyncHazard, Race
from tolk_lint.ir.interp.state import _Thread
from tolk_lint.ir.nodes import Instr

if TYPE_CHECKING:
    from tolk_lint.ir.interp.async_copy import _Copy


_BYTEMASK = [sum(0xFF << (8 * i) for i in range(4) if (m >> i) & 1) for m in range(16)]


def _words(addr: int, data: bytes) -> list[tuple[int, int, int]]:
    """The 4-byte words an access of ``data`` at ``addr`` touches: (word,
    byte mask, the bytes as a little-endian int with untouched bytes 0)."""
    n = len(data)
    if not addr & 3 and not n & 3:
        w0 = addr >> 2
        if n == 4:
            return [(w0, 15, int.from_bytes(data, "little"))]
        return [(w0 + i, 15, int.from_bytes(data[4 * i : 4 * i + 4], "little")) for i in range(n >> 2)]
    out: dict[int, list[int]] = {}
    for k in range(n):
        a = addr + k
        e = out.get(a >> 2)
        if e is None:
            e = out[a >> 2] = [0, 0]
        e[0] |= 1 << (a & 3)
        e[1] |= data[k] << (8 * (a & 3))
    return [(w, m, v) for w, (m, v) in out.items()]


def _raw_kind(reader: _Thread, copy_ins: Instr, ordinal: int) -> str:
    """How a read wanted another thread's copy (the reader ran that copy
    instruction too, ``ordinal`` times or more): when the reader's own
    instance of it is retired, its program waits before the read and lacks
    only the barrier that publishes the others' copies; otherwise it reads
    before any wait."""
    own = reader.last_copy.get(copy_ins)
    if own is not None and own.ordinal == ordinal and own.retired:
        return "read-before-barrier"
    return "read-before-wait"


def _first_byte(word: int, mask: int) -> int:
    for i in range(4):
        if (mask >> i) & 1:
            return (word << 2) + i
    return word << 2


class _RaceDetector:
    """The shadow state of shared memory and the checks of each access.

    Shadow state of the current barrier epoch, per 4-byte word of shared
    memory: sh_w[word] / sh_r[word] map (instruction, byte mask) to a group
    [threads {tid: number of WARP_SYNCs it had run}, first value, all values
    the same, (writes:) every write left the bytes unchanged, atomic, async].
    Grouping by instruction keeps a broadcast (every thread at one word)
    linear instead of quadratic."""

    def _ordered(self, t1: int, n1: int, t2: int) -> bool:
        """Whether a WARP_SYNC that t1 ran after its n1-th, and t2 ran too, orders them."""
        ev = self.threads[t1].wsync
        if len(ev) <= n1:
            return False
        for mset in ev[n1:]:
            if (mset >> t2) & 1:
                return True
        return False

    def _other(self, tids: dict[int, int], tid: int) -> int | None:
        """A thread of ``tids`` other than ``tid`` whose access is not ordered before tid's now."""
        if not self.any_wsync:
            for t2 in tids:
                if t2 != tid:
                    return t2
            return None
        for t2, n2 in tids.items():
            if t2 != tid and not self._ordered(t2, n2, tid):
                return t2
        return None

    def _race(self, kind, first, second, threads, addr, same, is_async):
        a, b = (first, second) if id(first) <= id(second) else (second, first)
        key = (kind, id(a), id(b))
        r = self.races.get(key)
        if r is None:
            reg = self.find(addr)
            self.races[key] = Race(
                kind, first, second, threads, addr, same,
                reg.name if reg else None, addr - reg.base if reg else None, is_async,
            )  # fmt: skip
        else:
            r.count += 1
            if not same:
                r.same_value = False
            if is_async:
                r.async_copy = True

    def _hazard(self, kind, copy_ins, access, threads, addr):
        key = (kind, id(copy_ins), id(access))
        h = self.hazards.get(key)
        if h is None:
            reg = self.find(addr)
            self.hazards[key] = AsyncHazard(kind, copy_ins, access, threads, addr, reg.name if reg else None)
        else:
            h.count += 1

    def _shared_read(self, th, ins, addr, seen: bytes) -> None:
        tid = th.tid
        nsync = len(th.wsync)
        sh_w, sh_r = self.sh_w, self.sh_r
        for w, mask, val in _words(addr, seen):
            ws = sh_w.get(w)
            if ws:
                for (wi, wm), g in ws.items():
                    if wm & mask:
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            self._race(
                                "read-write", wi, ins, (t2, tid), _first_byte(w, wm & mask), g[3], g[5]
                            )
            rs = sh_r.get(w)
            if rs is None:
                rs = sh_r[w] = {}
            g = rs.get((ins, mask))
            if g is None:
                rs[(ins, mask)] = [{tid: nsync}, val, True]
            else:
                g[0][tid] = nsync
                if val != g[1]:
                    g[2] = False
            if self.inflight:
                cp = self.inflight.get(w)
                if cp is not None:
                    self._check_inflight_read(th, ins, w << 2, cp)

    def _check_inflight_read(self, th, ins, a, cp: _Copy) -> None:
        tid = th.tid
        if not cp.retired:
            if tid == cp.tid:
                kind = "read-before-wait"
            elif th.copy_count.get(cp.ins, 0) >= cp.ordinal:
                kind = _raw_kind(th, cp.ins, cp.ordinal)
            else:
                kind = "copy-into-read"
            self._hazard(kind, cp.ins, ins, (cp.tid, tid), a)
        elif cp.tid != tid and cp.retire_epoch == self.epoch:
            self._hazard("read-before-barrier", cp.ins, ins, (cp.tid, tid), a)
        elif cp.retire_epoch < self.epoch:
            self.inflight.pop(a >> 2, None)

    def _shared_write(self, th, ins, addr, raw, old, atomic, is_async, copy) -> None:
        tid = th.tid
        nsync = len(th.wsync)
        sh_w, sh_r = self.sh_w, self.sh_r
        olds = {w: v for w, _m, v in _words(addr, old)}
        for w, mask, nv in _words(addr, raw):
            ws = sh_w.get(w)
            if ws:
                for (wi, wm), g in ws.items():
                    both = wm & mask
                    if both and not (atomic and g[4]):
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            same = g[2] and not ((g[1] ^ nv) & _BYTEMASK[both])
                            self._race(
                                "write-write",
                                wi,
                                ins,
                                (t2, tid),
                                _first_byte(w, both),
                                same,
                                g[5] or is_async,
                            )
            else:
                ws = sh_w[w] = {}
            rs = sh_r.get(w)
            if rs:
                for (ri, rm), g in rs.items():
                    both = rm & mask
                    if both:
                        t2 = self._other(g[0], tid)
                        if t2 is not None:
                            same = g[2] and not ((g[1] ^ nv) & _BYTEMASK[mask & rm])
                            self._race("read-write", ri, ins, (t2, tid), _first_byte(w, both), same, is_async)
            ov = olds[w]
            g = ws.get((ins, mask))
            if g is None:
                ws[(ins, mask)] = [{tid: nsync}, nv, True, nv == ov, atomic, is_async]
            else:
                g[0][tid] = nsync
                if nv != g[1]:
                    g[2] = False
                if nv != ov:
                    g[3] = False
            if self.inflight:
                cp = self.inflight.get(w)
                if cp is not None:
                    if not is_async and not cp.retired:
                        self._hazard("write-over-inflight", cp.ins, ins, (cp.tid, tid), w << 2)
                    if atomic:
                        self._check_inflight_read(th, ins, w << 2, cp)
