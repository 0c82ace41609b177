"""The Numba constructs the Python front end models instead of reporting
TL002 (`math`/`cmath`/`cuda.fp16`/`cuda.libdevice` as PURE, loops over
arrays, ``enumerate`` and ``zip``, stepped slices, tuple unpacking, record
fields), and the TL002 messages of what is left: each names the construct,
why it is not modelled and what is assumed."""

from __future__ import annotations

import textwrap

import pytest

from tolk_lint.frontends.python import parse_python
from tolk_lint.ir import Kernel, Module, Opcode
from tolk_lint.ir.cfg import cfg_of

HEADER = "import math, cmath\nimport numpy as np\nfrom numba import cuda, float32\n\n"


def lower(body: str) -> Module:
    return parse_python(HEADER + textwrap.dedent(body), "k.py")


def tl002(mod: Module) -> list[str]:
    return [d.message for d in mod.diagnostics if d.code == "TL002"]


def ops(k: Kernel, op: Opcode) -> list:
    return [i for i in k.instrs() if i.op is op]


def const_of(v):
    d = v.defn
    return d.attrs.get("value") if d is not None and d.op is Opcode.CONST else None


SUPPORTED = {
    "math": """
        @cuda.jit
        def k(a, n):
            i = cuda.grid(1)
            a[i] = math.sqrt(a[i]) + math.exp(n) + math.atan2(a[i], 1.0) + math.floor(a[i]) + math.pi
            m, ex = math.frexp(a[i])
            fr, wh = math.modf(n)
            a[i] += math.ldexp(m, ex) + fr + wh + math.frexp(8.0)[1]
            if math.isnan(a[i]) or math.isinf(n):
                a[i] = math.copysign(1.0, a[i]) + math.hypot(a[i], n) + math.erf(a[i])
    """,
    "cmath": """
        @cuda.jit
        def k(a, b, n):
            i = cuda.grid(1)
            c = cmath.exp(a[i]) + cmath.sqrt(a[i]) * 2j
            r, phi = cmath.polar(c)
            b[i] = c.real + c.imag + abs(c) + cmath.phase(c) + r + phi + c.conjugate().real
            if cmath.isnan(c) or cmath.isfinite(cmath.rect(n, 1.0)):
                b[i] = 0.0
    """,
    "fp16": """
        @cuda.jit
        def k(a, b, c):
            i = cuda.grid(1)
            c[i] = cuda.fp16.hadd(a[i], b[i]) + cuda.fp16.hmul(a[i], b[i]) + cuda.fp16.hfma(a[i], b[i], a[i])
            c[i] += cuda.fp16.hsqrt(a[i]) + cuda.fp16.hneg(a[i]) + cuda.fp16.habs(b[i]) + cuda.fp16.hmax(a[i], b[i])
    """,
    "libdevice": """
        @cuda.jit
        def k(a):
            i = cuda.grid(1)
            a[i] = cuda.libdevice.sqrtf(a[i]) + cuda.libdevice.fast_expf(a[i]) + cuda.libdevice.popc(i)
    """,
    "enumerate_zip": """
        @cuda.jit
        def k(a, b, out):
            s = cuda.shared.array(32, float32)
            for j, v in enumerate(range(32)):
                s[j] = v
            for j, v in enumerate(a, 1):
                out[j] = v
            for x, y in zip(a, b):
                out[0] = x + y
            for j, (x, y) in enumerate(zip(a, b)):
                out[j] = x * y
            for v in a:
                out[1] = v
            for j, c in enumerate((1.0, 2.0, 3.0)):
                out[j] = c
    """,
    "slices": """
        @cuda.jit
        def k(a, b):
            i = cuda.grid(1)
            c = a[i::2]
            d = a[::-1]
            e = a[1:][::3]
            b[i] = c[0] + d[1] + e[2]
    """,
    "unpacking": """
        @cuda.jit
        def k(a):
            x, y = cuda.grid(2)
            p, q = x, y
            p, q = q, p
            (u, v), w = (1, 2), 3
            m, e = divmod(x, 3)
            a[x, y] = p + q + u + v + w + m + e
    """,
    "array_alias": """
        @cuda.jit
        def k(buf_0, buf_1, steps):
            i = cuda.grid(1)
            for step in range(steps):
                if step % 2 == 0:
                    data, nxt = buf_0, buf_1
                else:
                    data, nxt = buf_1, buf_0
                if i < len(data) - 1:
                    nxt[i] = data[i] + data[i + 1]
    """,
    "random": """
        from numba.cuda.random import xoroshiro128p_uniform_float32, xoroshiro128p_normal_float64

        @cuda.jit
        def k(states, out):
            i = cuda.grid(1)
            out[i] = xoroshiro128p_uniform_float32(states, i) + xoroshiro128p_normal_float64(states, i)
    """,
    "records": """
        @cuda.jit
        def k(r, out):
            i = cuda.grid(1)
            out[i] = r[i].x + r[i]['y']
            r[i].x = 1.0
            r[i]['y'] = 2.0
            r[i].x += 3.0
            e = r[i]
            out[i] += e.x
    """,
}


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_supported_forms_report_no_tl002(name: str) -> None:
    mod = lower(SUPPORTED[name])
    assert tl002(mod) == []
    assert not [d for d in mod.diagnostics if d.code in ("TL001", "TL004")]


def test_math_and_device_math_are_pure() -> None:
    fp16 = SUPPORTED["fp16"].replace("def k(", "def k2(")
    mod = lower(SUPPORTED["math"] + fp16 + SUPPORTED["cmath"].replace("def k(", "def k3("))
    fns = {i.attrs["fn"] for k in mod.kernels for i in ops(k, Opcode.PURE)}
    assert {"sqrt", "exp", "atan2", "cmath.exp", "cmath.sqrt", "cmath.phase", "real", "imag"} <= fns
    assert not [i for k in mod.kernels for i in ops(k, Opcode.OPAQUE)]


def test_enumerate_of_range_keeps_the_range_loop() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(out):
            for j, v in enumerate(range(4, 68, 2)):
                out[j] = v
        """
    )
    k = mod.kernels[0]
    (lp,) = cfg_of(k).loops
    assert lp.ivs and const_of(lp.exits[0].bound) == 68
    (st,) = ops(k, Opcode.STORE)
    j = st.attrs["index"][0].defn  # (v - 4) // 2
    assert j is not None and j.op is not Opcode.OPAQUE


def test_zip_of_arrays_runs_to_the_shorter_and_loads_elements() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(a, b, out):
            for x, y in zip(a, b):
                out[0] = x + y
        """
    )
    k = mod.kernels[0]
    assert len(cfg_of(k).loops) == 1
    assert ops(k, Opcode.MIN)  # min(len(a), len(b))
    assert sorted(i.attrs["buffer"] for i in ops(k, Opcode.LOAD)) == ["a", "b"]


def test_stepped_slice_scales_the_index() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(out):
            s = cuda.shared.array(64, float32)
            t = cuda.threadIdx.x
            s[t] = t
            cuda.syncthreads()
            odd = s[1::2]
            out[t] = odd[3]
        """
    )
    k = mod.kernels[0]
    (ld,) = [
        i for i in ops(k, Opcode.LOAD) if i.attrs["buffer"] == "shared_array" or i.attrs["space"] == "shared"
    ]
    idx = ld.attrs["index"][0]
    add = idx.defn
    assert add.op is Opcode.ADD and sorted(const_of(a) for a in add.args) == [1, 6]


def test_record_fields_are_distinct_loads_of_the_element() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(r, out):
            i = cuda.grid(1)
            out[i] = r[i].x + r[i]['y']
            r[i].z = 0.0
        """
    )
    k = mod.kernels[0]
    loads = [i for i in ops(k, Opcode.LOAD) if i.attrs["buffer"] == "r"]
    assert sorted(i.attrs["field"] for i in loads) == ["x", "y"]  # the record itself is not read
    (st,) = [i for i in ops(k, Opcode.STORE) if i.attrs["buffer"] == "r"]
    assert st.attrs["field"] == "z"
    assert k.params[0].written


def test_random_draws_read_and_write_their_state() -> None:
    mod = lower(SUPPORTED["random"])
    k = mod.kernels[0]
    assert [i.attrs["buffer"] for i in ops(k, Opcode.STORE)].count("states") == 2
    assert k.params[0].written
    assert "xoroshiro128p_uniform_float32" in {i.attrs["fn"] for i in ops(k, Opcode.PURE)}


def test_a_variable_of_array_parameters_merges_their_pointers() -> None:
    mod = lower(SUPPORTED["array_alias"])
    k = mod.kernels[0]
    accesses = ops(k, Opcode.LOAD) + ops(k, Opcode.STORE)
    assert accesses and all(i.attrs["buffer"] == "" for i in accesses)  # may alias either parameter
    assert [p.written for p in k.params[:2]] == [True, True]
    mod = lower(
        """
        @cuda.jit
        def k(a, b):
            src = a
            src[0] = 1.0
            b[0] = src[1]
        """
    )
    k = mod.kernels[0]
    assert {i.attrs["buffer"] for i in ops(k, Opcode.STORE)} == {"a", "b"}  # one choice: the array itself
    assert [p.written for p in k.params] == [True, True]


def test_swapped_buffers_in_a_loop() -> None:
    """Parameters swapped in a loop: merged pointers (no TL002); shared
    buffers swapped in a loop: one TL002 naming the variable, none for its
    subscripts."""
    mod = lower(
        """
        @cuda.jit
        def k(a, b, n):
            i = cuda.grid(1)
            src, dst = a, b
            for it in range(n):
                dst[i] = src[i] * 0.5
                src, dst = dst, src
            b[i] = src[i]
        """
    )
    assert tl002(mod) == []
    k = mod.kernels[0]
    assert {i.attrs["buffer"] for i in ops(k, Opcode.LOAD)} == {""}
    mod = lower(
        """
        @cuda.jit
        def k(x, y, n):
            s1 = cuda.shared.array(64, float32)
            s2 = cuda.shared.array(64, float32)
            t = cuda.threadIdx.x
            cur, nxt = s1, s2
            cur[t] = x[t]
            for it in range(n):
                cuda.syncthreads()
                nxt[t] = cur[(t + 1) % 64]
                cur, nxt = nxt, cur
            y[t] = cur[t]
        """
    )
    (m,) = tl002(mod)
    assert (
        m.startswith("`cur` is not modelled: a variable holding different shared or local arrays")
        and "not checked" in m
    )
    k = mod.kernels[0]
    assert [i.attrs["buffer"] for i in ops(k, Opcode.STORE)][0] == "s1"  # before the loop: the array itself


def test_tuple_return_of_a_device_function() -> None:
    mod = lower(
        """
        @cuda.jit(device=True)
        def min_max(a, b):
            if a < b:
                return a, b
            return b, a
        """
    )
    assert tl002(mod) == []


@pytest.mark.parametrize(
    ("body", "construct", "why", "assumed"),
    [
        (
            "for x, y in zip(a, (v for v in a)):\n        out[0] = x",
            "zip(a, (v for v in a))",
            "`zip` over a generator",
            "treated as varying and unknown",
        ),
        (
            "b = a[::cuda.threadIdx.x]\n    out[0] = b[0]",
            "::cuda.threadIdx.x",
            "step that is not a constant",
            "treated as varying and unknown",
        ),
        (
            "b = a[2:][-1:]\n    out[0] = b[0]",
            "-1:",
            "starting from the end of a slice",
            "treated as varying and unknown",
        ),
        ("out[0] = cmath.nosuch(a[0])", "cmath.nosuch", "`cmath` function", "treated as varying and unknown"),
        ("for x in a.flat:\n        out[0] = x", "a.flat", "not a range", "trip count and its elements"),
    ],
)
def test_remaining_tl002_names_the_construct_and_the_assumption(body, construct, why, assumed) -> None:
    mod = lower(f"@cuda.jit\ndef k(a, out):\n    {body}\n")
    msgs = tl002(mod)
    assert msgs, "expected a TL002"
    m = msgs[0]
    assert construct in m and why in m and assumed in m, m
    assert "is not modelled" in m


def test_a_tuple_indexed_by_a_variable_picks_its_item_by_selects() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(a, out, d):
            out[0] = (3, 5, 7)[d] + a.shape[d]
        """
    )
    assert tl002(mod) == []
    (k,) = mod.kernels
    # the first two items chosen by `d == i or d == i - 3`, the last the default; `a` is
    # one-dimensional (its shape read by a variable index): its only extent
    assert len(ops(k, Opcode.SELECT)) == 2


def test_a_float_index_or_a_tuple_of_objects_stays_tl002() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(a, out, f):
            out[0] = (3, 5)[f * 0.5]
        """
    )
    assert any("a tuple indexed by a value that is not constant" in m for m in tl002(mod))


@pytest.mark.parametrize(
    "test, cmp, bound",
    [("2**x < 1024", "lt", 10), ("2**x <= 1024", "lt", 11), ("4**x > 16", "ge", 3), ("100 > 3**x", "lt", 5)],
)
def test_a_power_compared_with_a_constant_is_tested_on_its_exponent(test, cmp, bound) -> None:
    mod = lower(
        f"""
        @cuda.jit
        def k(a, x):
            if {test}:
                a[0] = 1
        """
    )
    (k,) = mod.kernels
    (c,) = ops(k, Opcode.CMP)
    assert c.attrs["cmp"] == cmp and c.args[0].source_name == "x" and const_of(c.args[1]) == bound


def test_int_bit_count_is_popc() -> None:
    mod = lower(
        """
        @cuda.jit
        def k(a, m):
            a[0] = m.bit_count() + (-1).bit_count() + (5).bit_count()
        """
    )
    assert tl002(mod) == []
    (k,) = mod.kernels
    assert [i.attrs["fn"] for i in ops(k, Opcode.PURE)] == ["popc"]
    folded = [const_of(v) for i in k.instrs() for v in i.args]
    assert 64 in folded and 2 in folded  # numba-cuda's popc of the int64 -1, and of 5


def test_a_kernel_called_from_a_kernel_is_inlined() -> None:
    mod = lower(
        """
        @cuda.jit
        def add_one(x):
            return x + 1

        @cuda.jit
        def k(a):
            a[0] = add_one(a[0])
        """
    )
    k = [k for k in mod.kernels if k.name == "k"][0]
    assert not [i for i in k.instrs() if i.op in (Opcode.OPAQUE, Opcode.CALL)]
    assert [d.code for d in mod.diagnostics] == []
