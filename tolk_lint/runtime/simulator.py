"""The simulator path: pure-Python cp_async, cp_async_zfill, commit_group and
wait_group for the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1), which
cannot run an intrinsic.

The poison model.  A copy does not happen at once:

- at issue, the destination bytes are poisoned (a quiet NaN for floats,
  0xDEADBEEF-like bytes for integers) and the copy joins the calling
  thread's not yet committed copies;
- `commit_group()` closes those into a group on the thread's queue;
- `wait_group(n)` lands, in order, every group but the newest `n`; copies
  that were never committed are not landed, as in PTX.

So a shared read that no wait (or no barrier after another thread's wait)
protects sees NaN instead of data, and the output differs from the
synchronous kernel's.  Copying at issue would hide exactly the bugs this is
for: a missing wait, a wait count one too high, a commit skipped on the last
trip, all read correct data when the copy has already happened.  Poison at
issue also covers a copy that lands early on the GPU: from issue to landing
the destination is undefined either way.

The simulator runs one Python thread per CUDA thread, so the group queue is
a `threading.local`: per CUDA thread, as in PTX.

Importing this module also replaces the simulator's `cuda.shared.array`
(`FakeCUDAShared.array`) by `_shared_array` below, which:

- accepts `alignment=` (the simulator's own raises "Array alignment is not
  supported in cudasim"), records it and otherwise ignores it, so a kernel
  with the `alignment=16` that 16-byte copies need runs here too;
- fills a static shared array with poison when each block first reaches it,
  since shared memory starts undefined on the GPU (the simulator's is left
  over from the previous block);
- allocates under a lock (two threads first reaching the same line could
  otherwise each get an array of their own).

Each copy is also checked as the GPU path cannot: the indices are in bounds
(the source too when it reads nothing: a zero-filled copy still takes a
clamped, valid index), the run of elements stays on the last axis, the shared
destination and the global source are aligned to the copy size (16-byte
copies need `alignment=16`), and the source is not written while a copy
from it is in flight.
"""

from __future__ import annotations

import operator
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass

import numpy as np
from numba.cuda import types
from numba.cuda.np import numpy_support
from numba.cuda.simulator import kernelapi
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray

from tolk_lint.runtime import contract

# Quiet NaNs with a recognisable payload, and 0xDEADBEEF bytes, by element
# size; any other element type (records, long doubles) gets 0xEF bytes.
_FLOAT_POISON = {2: 0x7EEE, 4: 0x7FC0FFEE, 8: 0x7FF8C0FFEEC0FFEE}
_INT_POISON = {1: 0xEF, 2: 0xBEEF, 4: 0xDEADBEEF, 8: 0xDEADBEEFDEADBEEF}
_OTHER_POISON_BYTE = 0xEF


def poison(dtype: np.dtype, count: int) -> np.ndarray:
    """`count` elements of `dtype` holding the poison pattern."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c" and dtype.itemsize // 2 in _FLOAT_POISON:
        return poison(np.dtype(f"f{dtype.itemsize // 2}"), 2 * count).view(dtype)
    table = {"f": _FLOAT_POISON, "i": _INT_POISON, "u": _INT_POISON, "b": _INT_POISON}.get(dtype.kind, {})
    if dtype.itemsize not in table:
        return np.full(count * dtype.itemsize, _OTHER_POISON_BYTE, dtype=np.uint8).view(dtype)
    return np.full(count, table[dtype.itemsize], dtype=np.dtype(f"u{dtype.itemsize}")).view(dtype)


def _bytes_of(run: np.ndarray) -> np.ndarray:
    """A writable byte view of a contiguous run of elements."""
    return run.reshape(-1).view(np.uint8)


# -- shared arrays ------------------------------------------------------------------------


_NO_BLOCK_YET = ("not poisoned yet",)


@dataclass
class _SharedArray:
    """What the patched allocator knows about one shared array: the block
    it was last poisoned for (None outside a simulated kernel)."""

    ref: weakref.ref
    alignment: int
    poisoned_for_block: tuple | None = _NO_BLOCK_YET


_SHARED: dict[int, _SharedArray] = {}
_SHARED_LOCK = threading.Lock()


def _register_shared(array: np.ndarray, alignment: int) -> _SharedArray:
    key = id(array)
    entry = _SharedArray(weakref.ref(array, lambda _ref: _SHARED.pop(key, None)), alignment)
    _SHARED[key] = entry
    return entry


def _shared_entry(array: np.ndarray) -> tuple[np.ndarray, _SharedArray] | None:
    """The shared allocation `array` is (a view of), with its record; None
    for an array that is not shared memory."""
    node = array
    while isinstance(node, np.ndarray):
        entry = _SHARED.get(id(node))
        if entry is not None and entry.ref() is node:
            return node, entry
        node = node.base
    return None


def _current_block() -> tuple | None:
    block = getattr(threading.current_thread(), "blockIdx", None)
    return None if block is None else (block.x, block.y, block.z)


def _shared_array(self, shape, dtype, alignment=None):
    """`cuda.shared.array` for the simulator: the simulator's own, plus
    `alignment=`, poison per block and a lock (see the module docstring)."""
    if alignment is not None and (
        not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1)
    ):
        raise ValueError(f"cuda.shared.array: alignment must be a positive power of two, got {alignment}")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    dtype = np.dtype(dtype)
    aligned_to = max(alignment or 0, dtype.alignment)
    if shape == 0:
        # Dynamic shared memory: every such array views one buffer, which the
        # GPU aligns to 16 bytes at least.  Not poisoned: its arrays alias.
        count = self._dynshared_size // dtype.itemsize
        array = np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        with _SHARED_LOCK:
            _register_shared(array, max(aligned_to, 16))
        return array
    # Static arrays are told apart by the source line that declares them, as
    # the simulator does: one cuda.shared.array per line.
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)
    with _SHARED_LOCK:
        array = self._allocations.get(caller)
        if array is None:
            array = np.empty(shape, dtype)
            self._allocations[caller] = array
            _register_shared(array, aligned_to)
        entry = _SHARED[id(array)]
        block = _current_block()
        if entry.poisoned_for_block != block:
            _bytes_of(array)[:] = poison(dtype, array.size).view(np.uint8)
            entry.poisoned_for_block = block
    return array


kernelapi.FakeCUDAShared.array = _shared_array


# -- the per-thread group queue -----------------------------------------------------------


@dataclass
class _Copy:
    """One issued copy: `src_bytes` bytes of `source` land at the start of
    `destination` (`nbytes` long), the rest of it is zero-filled."""

    destination: np.ndarray
    source: np.ndarray
    src_bytes: int
    source_at_issue: bytes

    def land(self) -> None:
        data = _bytes_of(self.source)[: self.src_bytes]
        if data.tobytes() != self.source_at_issue:
            raise RuntimeError(
                "cp_async: the global source of a copy was written while the copy was in flight "
                "(between its issue and the wait_group that retired it): a race"
            )
        out = _bytes_of(self.destination)
        out[: self.src_bytes] = data
        out[self.src_bytes :] = 0


class _GroupQueue(threading.local):
    """The calling CUDA thread's copies: those not yet committed, and the
    committed groups, oldest first."""

    def __init__(self) -> None:
        self.uncommitted: list[_Copy] = []
        self.groups: deque[list[_Copy]] = deque()


_QUEUE = _GroupQueue()


# -- checks -------------------------------------------------------------------------------


def _as_ndarray(array) -> np.ndarray:
    if isinstance(array, FakeWithinKernelCUDAArray):
        array = array._item
    if isinstance(array, FakeCUDAArray):
        array = array._ary
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected an array, got {type(array).__name__}")
    return array


def _run(fn: str, role: str, array: np.ndarray, index, count: int) -> np.ndarray:
    """The 1-D view of `count` consecutive elements of `array` along its last
    axis, starting at `index` (an int or a tuple of ints, negative ones wrap
    as in `array[index]`)."""
    index = tuple(index) if isinstance(index, tuple) else (index,)
    try:
        index = tuple(operator.index(i) for i in index)
    except TypeError:
        raise TypeError(
            f"{fn}: the {role} index must be an integer or a tuple of integers, got {index}"
        ) from None
    if len(index) != array.ndim:
        raise IndexError(f"{fn}: the {role} array has {array.ndim} dimensions but its index has {len(index)}")
    *outer, last = index
    try:
        row = array[tuple(outer)] if outer else array
    except IndexError:
        raise IndexError(f"{fn}: {role} index {index} is out of bounds for shape {array.shape}") from None
    length = row.shape[0]
    start = last + length if last < 0 else last
    if not 0 <= start < length:
        raise IndexError(f"{fn}: {role} index {index} is out of bounds for shape {array.shape}")
    if start + count > length:
        raise IndexError(
            f"{fn}: the {count} elements from {role} index {index} run past the end of the last axis "
            f"(length {length}); a copy moves consecutive elements along the last axis"
        )
    run = row[start : start + count]
    if count > 1 and run.strides[0] != run.itemsize:
        raise ValueError(f"{fn}: the {role} array is not contiguous along its last axis")
    return run


def _offset(run: np.ndarray, base: np.ndarray) -> int:
    return run.ctypes.data - base.ctypes.data


def _allocation_of(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _check_alignment(fn: str, nbytes: int, destination, shared_base, shared, source) -> None:
    if shared.alignment < nbytes or _offset(destination, shared_base) % nbytes:
        hint = f"; declare it with alignment={nbytes}" if shared.alignment < nbytes else ""
        raise ValueError(
            f"{fn}: a {nbytes}-byte copy needs its shared destination aligned to {nbytes} bytes "
            f"(the array is aligned to {shared.alignment}, the copy starts at byte "
            f"{_offset(destination, shared_base)}){hint}"
        )
    if _offset(source, _allocation_of(source)) % nbytes:
        raise ValueError(f"{fn}: a {nbytes}-byte copy needs its global source aligned to {nbytes} bytes")


def _issue(fn: str, dst, dst_index, src, src_index, nbytes, src_bytes) -> None:
    if (
        isinstance(nbytes, bool)
        or not isinstance(nbytes, (int, np.integer))
        or nbytes not in contract.COPY_SIZES
    ):
        raise ValueError(contract.bad_copy_size(fn, nbytes))
    nbytes = int(nbytes)
    dst, src = _as_ndarray(dst), _as_ndarray(src)
    if dst.dtype != src.dtype:
        raise TypeError(contract.dtype_mismatch(fn, dst.dtype, src.dtype))
    itemsize = dst.dtype.itemsize
    if nbytes % itemsize:
        raise TypeError(contract.size_not_whole_elements(fn, nbytes, dst.dtype, itemsize))
    found = _shared_entry(dst)
    if found is None:
        raise TypeError(f"{fn}: dst must be a shared array (from cuda.shared.array)")
    if _shared_entry(src) is not None:
        raise TypeError(f"{fn}: src must be a global array, not a shared one")
    src_bytes = operator.index(src_bytes)
    if not 0 <= src_bytes <= nbytes:
        raise ValueError(f"{fn}: src_bytes must be in 0..{nbytes} (the copy size), got {src_bytes}")
    destination = _run(fn, "dst", dst, dst_index, nbytes // itemsize)
    # A zero-filled copy reads nothing but still takes a valid (clamped) index.
    source = _run(fn, "src", src, src_index, max(1, -(-src_bytes // itemsize)))
    _check_alignment(fn, nbytes, destination, *found, source)
    _bytes_of(destination)[:] = poison(dst.dtype, destination.size).view(np.uint8)
    source_at_issue = _bytes_of(source)[:src_bytes].tobytes()
    _QUEUE.uncommitted.append(_Copy(destination, source, src_bytes, source_at_issue))


# -- the API ------------------------------------------------------------------------------


def cp_async(dst, dst_index, src, src_index, nbytes):
    """Simulated `cp.async`: poison `nbytes` of `dst` at `dst_index` now;
    the bytes of `src` at `src_index` land at the `wait_group` that retires
    this copy's group."""
    _issue("cp_async", dst, dst_index, src, src_index, nbytes, nbytes)


def cp_async_zfill(dst, dst_index, src, src_index, nbytes, src_bytes):
    """Simulated `cp.async` with src-size: as `cp_async`, but only
    `src_bytes` (0..nbytes) come from `src`; the rest lands as zeros."""
    _issue("cp_async_zfill", dst, dst_index, src, src_index, nbytes, src_bytes)


def commit_group():
    """Simulated `cp.async.commit_group`: this thread's uncommitted copies
    become its newest group (an empty one when there are none)."""
    _QUEUE.groups.append(_QUEUE.uncommitted)
    _QUEUE.uncommitted = []


def wait_group(n):
    """Simulated `cp.async.wait_group n`: land, oldest first, every group of
    this thread but the newest `n`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= contract.MAX_WAIT_COUNT:
        raise ValueError(contract.bad_wait_count(n))
    groups = _QUEUE.groups
    while len(groups) > n:
        for copy in groups.popleft():
            copy.land()
