"""TL203's advice names a padding only where one exists: lanes a row apart
(a row no longer than the array, nor than a block's shared memory) get
"declare it `[32][33]`"; lanes whose distance is an address that wrapped
(CUB's onesweep kernel gave "2147483648 bytes (536870912 words) apart ...
declare it `[536870912][536870913]`") get the generic advice."""

from __future__ import annotations

from types import SimpleNamespace

from tolk_lint.analysis.memory.banks import MAX_ROW_BYTES, _padding


def _advice(stride: int, nbytes: int | None) -> str:
    mf = SimpleNamespace(k=SimpleNamespace(language="ptx"))
    acc = SimpleNamespace(root="tile", buffer=SimpleNamespace(bytes=nbytes, shape=None), elem=4)
    return _padding(mf, acc, SimpleNamespace(stride_bytes=stride))


def test_a_row_apart_is_padded():
    assert "declare it `[32][33]`" in _advice(128, 32 * 32 * 4)


def test_a_distance_past_the_array_or_shared_memory_is_not_a_row():
    for stride, nbytes in ((1 << 31, 32 * 32 * 4), (1 << 31, None), (MAX_ROW_BYTES, None), (8192, 4096)):
        got = _advice(stride, nbytes)
        assert "declare it" not in got and "swizzle" in got, (stride, nbytes, got)
