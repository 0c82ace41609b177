"""The memory model: one flat byte-addressed space, and where each buffer
lives in it.

Shared buffers sit at 0x0, 0x10000, ... (shared by the workgroup), local
and register buffers at 0x1000000+ (one copy per thread), kernel
parameters at 0x2000000 (``ld.param``), const buffers at 0x3000000, and
each global array at 0x1_0000_0000 + k * 0x1000_0000. A pointer
parameter's value is its array's base. Loads and stores are little-endian
with the width of ``attrs["dtype"]``; a vector access reads consecutive
elements, one result per lane. Accesses outside every buffer are recorded
in `RunResult.oob` (a load gives 0, a store is dropped). Shared-memory
accesses also go to the race detector (`races`).

`_Memory` is the part of the machine that lays the buffers out, answers
parameter values and addresses, and reads and writes; its state
(``regions``, ``by_name``, ``bases``, ``param_slots``, ``global_in``,
``oob``) is set up by `_Machine.__init__` and `_layout`."""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

from tolk_lint.ir.interp.results import NotSupported, OutOfBounds, _where
from tolk_lint.ir.interp.values import (
    _canon,
    _codec,
    _const_value,
    _kind,
    _numpy_type,
    _pack_list,
    _unpack_list,
)
from tolk_lint.ir.nodes import Instr

SHARED_BASE = 0x0
LOCAL_BASE = 0x0100_0000
PARAM_BASE = 0x0200_0000
CONST_BASE = 0x0300_0000
GLOBAL_BASE = 0x1_0000_0000
GLOBAL_STRIDE = 0x1000_0000
DEFAULT_DYNAMIC_SHARED = 48 * 1024
DEFAULT_GLOBAL_BYTES = 64 * 1024


class _Region:
    __slots__ = ("base", "data", "dtype", "kind", "name", "per_thread", "size", "space")

    def __init__(
        self, name: str, space: str, base: int, size: int, per_thread: bool = False, dtype: str = "b8"
    ):
        self.name = name
        self.space = space
        self.base = base
        self.size = size
        self.per_thread = per_thread
        self.data: Any = {} if per_thread else bytearray(size)
        self.dtype = dtype
        self.kind = "buffer"

    def storage(self, tid: int) -> bytearray:
        if not self.per_thread:
            return self.data
        d = self.data.get(tid)
        if d is None:
            d = self.data[tid] = bytearray(self.size)
        return d


def _from_region(reg: _Region, form: tuple) -> Any:
    how, dt, extra = form
    raw = bytes(reg.data)
    if how == "bytes":
        return bytearray(raw)
    if how == "numpy":
        import numpy as np

        arr = extra
        return np.frombuffer(raw[: arr.nbytes], dtype=arr.dtype).reshape(arr.shape).copy()
    return _unpack_list(dt, raw, extra)


_SHAPE_RE = re.compile(r"^(\w+)\.(shape)\[(\d+)\]$")


class _Memory:
    """The buffers of one run: layout, parameters, addresses, reads and writes."""

    def _add_region(self, reg: _Region) -> _Region:
        self.regions.append(reg)
        self.by_name.setdefault(reg.name, reg)
        return reg

    def _layout(self, global_mem: dict[str, Any], dynamic_shared: int) -> None:
        k = self.kernel
        nxt = {"shared": SHARED_BASE, "local": LOCAL_BASE, "const": CONST_BASE}
        g_index = 0
        for name, buf in k.buffers.items():
            size = buf.bytes
            if buf.dynamic or size is None or size == 0:
                size = dynamic_shared if buf.space == "shared" else DEFAULT_GLOBAL_BYTES
            space = buf.space
            if space in ("shared",):
                base = nxt["shared"]
                nxt["shared"] = base + max(0x10000, (size + 0xFFFF) & ~0xFFFF)
                reg = _Region(name, "shared", base, size, dtype=buf.dtype)
            elif space in ("local", "reg", "param"):
                base = nxt["local"]
                nxt["local"] = base + max(0x1000, (size + 0xFFF) & ~0xFFF)
                reg = _Region(name, space, base, size, per_thread=True, dtype=buf.dtype)
            elif space == "const":
                base = nxt["const"]
                nxt["const"] = base + max(0x10000, (size + 0xFFFF) & ~0xFFFF)
                reg = _Region(name, "const", base, size, dtype=buf.dtype)
            else:  # global (module-level arrays) and anything else
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(name, space, base, size, dtype=buf.dtype)
            if buf.init:
                width, enc, _ = _codec(buf.dtype)
                data = reg.data if not reg.per_thread else None
                if data is not None:
                    for i, x in enumerate(buf.init):
                        if (i + 1) * width <= size:
                            data[i * width : (i + 1) * width] = enc(x)
            self._add_region(reg)
        # global arrays passed by parameter name (and any others given)
        pnames = [p.name for p in k.params]
        for name in list(pnames) + [n for n in global_mem if n not in pnames]:
            if name not in global_mem:
                continue
            arr = global_mem[name]
            raw, form = self._to_bytes(name, arr)
            reg = self.by_name.get(name)
            if reg is not None and not reg.per_thread and reg.space != "shared":
                if len(raw) > reg.size:
                    reg.data.extend(bytes(len(raw) - reg.size))
                    reg.size = len(raw)
                reg.data[: len(raw)] = raw
            else:
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(name, "global", base, max(len(raw), 1), dtype=form[1])
                reg.data[: len(raw)] = raw
                self._add_region(reg)
            reg.kind = "array"
            self.global_in[name] = form
            if name not in self.params_in:
                self.param_values[name] = reg.base
        for p in k.params:
            if p.name in self.params_in or p.name in self.param_values:
                continue
            if (
                p.kind == "pointer"
                or p.dtype == "ptr"
                or p.ndim
                or (k.language == "ptx" and p.dtype in ("u64", "b64"))
            ):
                base = GLOBAL_BASE + g_index * GLOBAL_STRIDE
                g_index += 1
                reg = _Region(p.name, "global", base, DEFAULT_GLOBAL_BYTES)
                reg.kind = "array"
                self._add_region(reg)
                self.param_values[p.name] = base
                self.note(f"parameter {p.name}: no array given, using {DEFAULT_GLOBAL_BYTES} zero bytes")
        # kernel parameters in the param space (ld.param)
        pbase = PARAM_BASE
        preg = _Region("<params>", "param", pbase, max(8, 8 * len(k.params)))
        preg.kind = "params"
        for i, p in enumerate(k.params):
            val = self.param_value(p.name, p.dtype if p.dtype != "ptr" else "u64", k.language == "python")
            t = p.dtype if p.dtype not in ("ptr",) else "u64"
            width, enc, _ = _codec(t)
            width = min(width, 8)
            try:
                preg.data[8 * i : 8 * i + width] = enc(val)[:width]
            except (TypeError, ValueError, OverflowError):
                pass
            self.param_slots[p.name] = pbase + 8 * i
        self.regions.append(preg)
        self.regions.sort(key=lambda r: r.base)
        self.bases = [r.base for r in self.regions]

    def _to_bytes(self, name: str, arr: Any) -> tuple[bytes, tuple]:
        """Raw bytes of a global array and how to give it back."""
        if isinstance(arr, (bytes, bytearray, memoryview)):
            return bytes(arr), ("bytes", "b8", None)
        if hasattr(arr, "tobytes") and hasattr(arr, "dtype"):  # numpy
            dt = _numpy_type(arr.dtype)
            return arr.tobytes(), ("numpy", dt, arr)
        data = list(arr)
        dt = self.global_dtypes.get(name)
        if dt is None:
            p = self.kernel.param(name)
            if p is not None and p.dtype not in ("ptr", "u64", "b64") and _kind(p.dtype) != "pred":
                dt = p.dtype
            else:
                dt = "f32" if any(isinstance(x, float) for x in data) else "s32"
        return _pack_list(dt, data), ("list", dt, len(data))

    def param_value(self, name: str, t: str, numeric: bool) -> Any:
        key = (name, t)
        v = self._pcache.get(key)
        if v is None:
            v = self._pcache[key] = self._param_value(name, t, numeric)
        return v

    def _param_value(self, name: str, t: str, numeric: bool) -> Any:
        if name in self.params_in:
            v = self.params_in[name]
            if isinstance(v, (list, tuple)) and not isinstance(v, str):
                raise NotSupported(f"parameter {name}: pass arrays in global_mem")
            return (
                _const_value(v, t, numeric) if not isinstance(v, bool) or t == "pred" else _canon(t)(int(v))
            )
        if name in self.param_values:
            return _canon(t)(self.param_values[name])
        shape = _SHAPE_RE.match(name)
        if shape is not None and shape.group(1) in self.global_in:
            arr, axis = self.global_in[shape.group(1)], int(shape.group(3))
            dims = arr[2].shape if arr[0] == "numpy" else ((arr[2],) if arr[0] == "list" else (None,))
            if axis < len(dims) and dims[axis] is not None:
                return _canon(t)(dims[axis])
        self.note(f"parameter {name} not given: 0")
        return _const_value(0, t, numeric)

    # -- addresses ------------------------------------------------------------

    def address_of(self, name: str, ins: Instr) -> int:
        reg = self.by_name.get(name) if name in self.kernel.buffers else None
        if reg is None and name in self.param_slots:
            return self.param_slots[name]
        if reg is None:
            reg = self.by_name.get(name)
        if reg is None:
            # an unknown symbol (module-level array not in kernel.buffers)
            base = GLOBAL_BASE + (len(self.regions) + 8) * GLOBAL_STRIDE
            reg = _Region(name, "global", base, DEFAULT_GLOBAL_BYTES)
            self._add_region(reg)
            self.regions.sort(key=lambda r: r.base)
            self.bases = [r.base for r in self.regions]
            self.note(f"address of unknown symbol {name}: a fresh {DEFAULT_GLOBAL_BYTES}-byte global region")
        return reg.base

    def find(self, addr: int) -> _Region | None:
        i = bisect_right(self.bases, addr) - 1
        if i < 0:
            return None
        reg = self.regions[i]
        if addr - reg.base < reg.size:
            return reg
        return None

    def _oob(self, th, ins, addr, space, write):
        key = (ins, write)
        if key not in self._oob_seen:
            self._oob_seen.add(key)
            self.oob.append(OutOfBounds(ins, th.tid, addr, space, write))

    def read(self, th, ins, space, addr, n, atomic=False, check=True) -> bytes:
        reg = self.find(addr)
        if reg is None or addr + n - reg.base > reg.size:
            self._oob(th, ins, addr, space, False)
            return bytes(n)
        off = addr - reg.base
        data = reg.storage(th.tid)
        out = bytes(data[off : off + n])
        if reg.space == "shared" and self.detect:
            if atomic:
                pass  # checked as a write by the atomic's store
            else:
                self._shared_read(th, ins, addr, out)
        return out

    def write(self, th, ins, space, addr, raw: bytes, atomic=False, is_async=False, copy=None) -> None:
        n = len(raw)
        reg = self.find(addr)
        if reg is None or addr + n - reg.base > reg.size:
            self._oob(th, ins, addr, space, True)
            return
        if reg.space == "const":
            self.note(f"store to const memory at {_where(ins)}")
        off = addr - reg.base
        data = reg.storage(th.tid)
        old = bytes(data[off : off + n])
        data[off : off + n] = raw
        if reg.space == "shared" and self.detect:
            self._shared_write(th, ins, addr, raw, old, atomic, is_async, copy)

    def _final_memory(self) -> dict[str, Any]:
        memory: dict[str, Any] = {}
        for reg in self.regions:
            if reg.kind == "params" or reg.per_thread:
                continue
            if reg.kind == "array" and reg.name in self.global_in:
                memory[reg.name] = _from_region(reg, self.global_in[reg.name])
            else:
                memory[reg.name] = bytearray(reg.data)
        return memory
