"""Array parameters whose loaded elements are used as an index hold
integers (`frontends.python.index_arrays`): their loads are typed s64 when
no signature gives a dtype, and only the arrays whose loads really reach an
index along some path are taken."""

from __future__ import annotations

import textwrap

import pytest

from tolk_lint.frontends.python import parse_python


def param_dtypes(src: str, name: str = "k") -> dict[str, str]:
    mod = parse_python("from numba import cuda\n" + textwrap.dedent(src), "k.py")
    k = next(k for k in mod.kernels if k.name == name)
    return {p.name: p.dtype for p in k.params if p.kind == "pointer"}


CASES = {
    "direct": ("def k(ids, vals, out):\n    out[ids[0]] = vals[0]\n", {"ids"}),
    "atomic index, not compare_and_swap": (
        "def k(ids, other, out):\n    cuda.atomic.add(out, ids[0], 1)\n"
        "    cuda.atomic.compare_and_swap(out, other[0], 2)\n", {"ids"}),
    "integer arithmetic and augmented assignment": (
        "def k(ids, out, base):\n    g = ids[0] - base\n    g += 1\n    out[(g * 2) % 7] = 1\n", {"ids"}),
    "both arms of a branch reach": (
        "def k(a, b, out, c):\n    if c:\n        g = a[0]\n    else:\n        g = b[0]\n    out[g] = 1\n", {"a", "b"}),
    "slice bounds": ("def k(ids, out):\n    x = out[ids[0]:ids[1]]\n    x[0] = 1\n", {"ids"}),
    "a later float version does not reach the index": (
        "def k(vals, out):\n    for g in range(4):\n        out[g] = 0\n    g = vals[0]\n    out[0] = g\n", set()),
    "an earlier float version does not reach the index": (
        "def k(vals, ids, out):\n    g = vals[0]\n    out[0] = g\n    g = ids[0]\n    out[g] = 1\n", {"ids"}),
    "after a break only what reaches it": (
        "def k(ids, vals, out):\n    g = 0\n    while True:\n        g = ids[0]\n        break\n"
        "        g = vals[0]\n    out[g] = 1\n", {"ids"}),
    "int() of a float is an int": ("def k(vals, out):\n    out[int(vals[0])] = 1\n", set()),
    "a comparison is not the element": ("def k(ids, out):\n    out[ids[0] > 0] = 1\n", set()),
    "a rebound parameter is not the argument": (
        "def k(ids, other, out):\n    ids = other\n    out[ids[0]] = 1\n", set()),
}


@pytest.mark.parametrize("case", list(CASES))
def test_index_arrays(case: str) -> None:
    src, ints = CASES[case]
    got = param_dtypes("@cuda.jit\n" + src)
    assert {n for n, t in got.items() if t == "s64"} == ints
    assert all(t == "f32" for n, t in got.items() if n not in ints)


def test_signature_dtype_wins() -> None:
    got = param_dtypes("""
        @cuda.jit("void(float64[:], int32[:])")
        def k(ids, out):
            out[ids[0]] = 1
    """)
    assert got == {"ids": "f64", "out": "s32"}


def test_through_a_device_function() -> None:
    got = param_dtypes("""
        @cuda.jit(device=True)
        def bump(counts, ids, i):
            counts[ids[i]] += 1

        @cuda.jit
        def k(ids, counts):
            bump(counts, ids, cuda.grid(1))
    """)
    assert got == {"ids": "s64", "counts": "f32"}


def test_guarded_loaded_index_is_an_integer_compare() -> None:
    mod = parse_python(textwrap.dedent("""
        from numba import cuda, int32

        @cuda.jit
        def k(ids):
            local = cuda.local.array(8, int32)
            g = ids[cuda.grid(1)]
            if 0 <= g < 8:
                local[g] += 1
    """), "k.py")
    k = mod.kernels[0]
    loads = [i for i in k.instrs() if i.op.name == "LOAD" and i.attrs.get("buffer") == "ids"]
    assert loads and all(i.results[0].type == "s64" for i in loads)
