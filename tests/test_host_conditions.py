"""Host checks that are not comparisons, run for each value the comparisons
leave (`launch.arguments._values_of`, `launch.host_eval`).

Each case is host code whose answer is known by reading it: NVIDIA's
``factorRadix2`` (the odd part of a length, through an out-parameter), an
``is_pow2`` helper before an early exit, a bit test in an ``assert``, a
loop over literal sizes in Numba host code; and the cases that must list
nothing: a helper that reads a float or a global, one that never returns,
a condition on another run-time value, a range too wide to scan. The
fixtures `cuda/launch/host_checked_length.cu` and
`numba/launch/call_argument_sizes.py` lint kernels under such values.
"""

from __future__ import annotations

import pytest

from tolk_lint.launch import host_eval
from tolk_lint.launch.c_syntax import lex
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import Entry

KERNEL = "__global__ void k(unsigned *x, unsigned n, unsigned m) { }\n"
POW2_TO_1024 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

FACTOR_RADIX2 = """
extern "C" uint factorRadix2(uint *log2L, uint L) {
  if (!L) {
    *log2L = 0;
    return 0;
  } else {
    for (*log2L = 0; (L & 1) == 0; L >>= 1, *log2L++)
      ;
    return L;
  }
}
"""


def listed(host: str, kernel: str = KERNEL, n_params: int = 3) -> dict[str, tuple | None]:
    """Parameter name -> the values listed for it (None: a range only)."""
    src = scan("typedef unsigned int uint;\n" + kernel + host, "k.cu")
    shapes = [s for s in src.shapes_for(Entry(("k",)), n_params) if s.block is not None]
    assert len(shapes) == 1, shapes
    return {f.name: f.values for f in shapes[0].arguments}


def test_nvidia_factor_radix2_lists_the_powers_of_two():
    # bitonicSort's own check: the odd part of arrayLength is 1 (the helper's
    # `*log2L++` moves the pointer, not the count: its value is never read)
    host = FACTOR_RADIX2 + """
uint sort(uint *d, uint batch, uint arrayLength) {
  if (arrayLength < 2) return 0;
  uint log2L;
  uint factorizationRemainder = factorRadix2(&log2L, arrayLength);
  assert(factorizationRemainder == 1);
  if (arrayLength <= 1024) {
    k<<<batch, 512>>>(d, arrayLength, 1);
  }
  return 512;
}
"""
    assert listed(host)["n"] == POW2_TO_1024[1:]


FACTOR_RADIX2_REF = """
static uint factorRadix2(uint &log2L, uint L) {
  if (!L) {
    log2L = 0;
    return 0;
  } else {
    for (log2L = 0; (L & 1) == 0; L >>= 1, log2L++)
      ;
    return L;
  }
}
"""


def test_nvidia_scan_factor_radix2_through_a_reference():
    # scan.cu's form of the same check: the exponent comes back through `uint &`
    host = FACTOR_RADIX2_REF + """
size_t scanShort(uint *d, uint arrayLength) {
  uint log2L;
  uint factorizationRemainder = factorRadix2(log2L, arrayLength);
  assert(factorizationRemainder == 1);
  assert((arrayLength >= 4) && (arrayLength <= 1024));
  k<<<1, 256>>>(d, arrayLength, 1);
  return 256;
}
"""
    assert listed(host)["n"] == POW2_TO_1024[2:]


@pytest.mark.parametrize(
    ("helper", "call", "expected"),
    [
        # the callee's store reaches the caller's variable, read after the call
        ("void twice(uint &x, uint n) { x = 2 * n; }", "uint m; twice(m, n); assert(m <= 64);", tuple(range(33))),
        # a `const &` bound to an expression reads a copy of its value
        ("bool small(const uint &x) { return x < 8; }", "assert(small(n + 1));", tuple(range(7))),
    ],
)
def test_reference_parameters_are_the_callers_variables(helper, call, expected):
    host = helper + f"\nvoid run(uint *d, uint n) {{ if (n > 1024) return; {call} k<<<1, 256>>>(d, n, 0); }}"
    assert listed(host)["n"] == expected


def test_a_reference_to_a_variable_of_another_type_is_not_run():
    # `int &` cannot bind an unsigned variable: never guessed, nothing listed
    host = "void get(int &x, uint n) { x = n; }\n"
    host += "void run(uint *d, uint n) { if (n > 64) return; uint m; get(m, n); assert(m == 4); k<<<1, 256>>>(d, n, 0); }"
    assert listed(host)["n"] is None


def test_a_local_passed_to_a_reference_is_not_read_as_its_initialiser():
    # `n = 4` is not what the kernel gets: `twice` changes it
    host = "void twice(uint &x, uint n) { x = 2 * n; }\n"
    host += "void run(uint *d) { uint n = 4; twice(n, 3); k<<<1, 256>>>(d, n, 0); }"
    assert "n" not in listed(host)


def test_a_helper_before_an_early_exit_on_a_disjunction():
    host = """
static bool is_pow2(unsigned x) { return x && !(x & (x - 1)); }
bool run(unsigned *d, unsigned len) {
  if (!is_pow2(len) || len > 1024) {
    fprintf(stderr, "length must be a power of two up to 1024\\n");
    return false;
  }
  k<<<1, 512>>>(d, len, 0);
  return true;
}
"""
    assert listed(host)["n"] == POW2_TO_1024


def test_a_bit_test_in_an_assert():
    # len == 0: 0 - 1 is UINT_MAX as an unsigned, and 0 & UINT_MAX is 0: it passes, as in C
    host = "void run(unsigned *d, unsigned len) { assert(len <= 256 && (len & (len - 1)) == 0); k<<<1, 256>>>(d, len, 0); }"
    assert listed(host)["n"] == (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)


def test_a_loop_in_a_helper_with_break_and_a_bool_result():
    host = """
bool multiple_of_warp(int n) {
  int r = n;
  while (true) {
    if (r < 32) break;
    r -= 32;
  }
  return r == 0;
}
void run(unsigned *d, int n) {
  if (n <= 0 || n > 128) return;
  if (multiple_of_warp(n)) k<<<1, 128>>>(d, n, 0);
}
"""
    assert listed(host)["n"] == (32, 64, 96, 128)


def test_a_local_changed_by_statements_before_the_assert():
    # the odd part computed in the launching function itself, then a second
    # assert with the range (the shape of scan.cu's checks, spelled inline)
    host = """
void run(unsigned *d, unsigned len) {
  unsigned r = len;
  while ((r & 1) == 0) r >>= 1;
  assert(r == 1);
  assert(len >= 4 && len <= 1024);
  k<<<1, 256>>>(d, len, 0);
}
"""
    assert listed(host)["n"] == POW2_TO_1024[2:]


@pytest.mark.parametrize(
    "statements",
    [
        "unsigned r = len; if (len > 9) { r = 1; }",  # not the power-of-two test: 1, 2, 4, 8, 10..1024 pass
        "unsigned r = len; while ((r & 1) == 0) r >>= 1; if (q) return;",  # a return before the assert
    ],
)
def test_statements_before_the_assert_are_run_or_say_nothing(statements):
    host = f"void run(unsigned *d, unsigned len, unsigned q) {{ if (len < 1 || len > 1024) return; {statements}\n"
    host += "  assert(r == 1); k<<<1, 256>>>(d, len, 0); }"
    got = listed(host)["n"]
    assert got is None or set(got) >= set(POW2_TO_1024)  # never a value that passes dropped


def test_a_local_declared_in_another_block_than_the_assert_says_nothing():
    # the statements from `r`'s declaration to the assert are not a run of
    # whole statements: not run (conservative, though this one is right)
    host = """
void run(unsigned *d, unsigned len, bool check) {
  if (len < 1 || len > 1024) return;
  unsigned r = len;
  if (check) {
    while ((r & 1) == 0) r >>= 1;
    assert(r == 1);
    k<<<1, 256>>>(d, len, 0);
  }
}
"""
    assert listed(host)["n"] is None


@pytest.mark.parametrize(
    "helper",
    [
        "bool ok(unsigned n) { return log2f((float)n) == floorf(log2f((float)n)); }",  # library calls
        "int limit; bool ok(unsigned n) { return n <= limit; }",  # a global
        "bool ok(unsigned n) { while (n) { } return true; }",  # never returns
        "bool ok(unsigned n) { return ok(n); }",  # endless recursion
    ],
)
def test_a_helper_that_cannot_be_run_lists_nothing(helper):
    host = helper + "\nvoid run(unsigned *d, unsigned n) { if (n < 1 || n > 1024) return; assert(ok(n)); k<<<1, 256>>>(d, n, 0); }"
    assert listed(host)["n"] is None  # no value is proved to fail


def test_a_condition_on_another_run_time_value_lists_nothing():
    host = "void run(unsigned *d, unsigned n, unsigned q) { if (n > 64) return; assert((n % q) == 0); k<<<1, 256>>>(d, n, 0); }"
    assert listed(host)["n"] is None


def test_a_range_too_wide_to_scan_lists_nothing():
    host = "void run(unsigned *d, unsigned n) { assert((n & (n - 1)) == 0); k<<<1, 256>>>(d, n, 0); }"
    src = scan(KERNEL + host, "k.cu")
    (shape,) = [s for s in src.shapes_for(Entry(("k",)), 3) if s.block is not None]
    assert [f.name for f in shape.arguments] == ["m"]  # n: no fact at all


def test_the_interpreter_keeps_c_semantics_or_says_unknown():
    def run(expr: str, n: int, t=host_eval.INT):
        toks, _c, _d = lex(expr)
        m = host_eval.Machine(scan("", "x.cu"), lambda _name: host_eval.Int(n, t))
        return m.value(host_eval.parse_expression(toks), None).v

    assert run("n / 3 + n % 3", 11) == 5
    assert run("-n / 2", 7) == -3 and run("-n % 4", 7) == -3  # toward zero
    assert run("n ? n << 2 : 7", 3) == 12
    assert run("(n > 2) && (n < 9)", 5) == 1
    assert run("n - 4", 3, host_eval.UINT) == 4294967295  # unsigned wraps
    assert run("-1 < n", 3, host_eval.UINT) == 0  # -1 converts to UINT_MAX
    assert run("-1 < n", 3) == 1
    assert run("(unsigned char)(n + 254)", 3) == 1
    assert run("~n", 3) == -4
    for expr in ("n * 1000000000", "n << 31", "n << 32", "n / 0", "1.5 > n"):  # undefined, or a float
        with pytest.raises(host_eval.Unknown):
            run(expr, 3)


def test_an_unsigned_helper_wraps_as_c_does():
    # n = 1 makes m = 4294967295: not below 8, so 1 fails; 2..9 pass
    host = "bool ok(unsigned n) { unsigned m = n - 2; return m < 8; }\n"
    host += "void run(unsigned *d, unsigned n) { if (n < 1 || n > 1024) return; assert(ok(n)); k<<<1, 256>>>(d, n, 0); }"
    assert listed(host)["n"] == tuple(range(2, 10))


def test_a_launch_from_two_places_lists_the_union():
    host = """
static bool is_pow2(unsigned x) { return x && !(x & (x - 1)); }
void small(unsigned *d, unsigned len) { if (len > 64 || !is_pow2(len)) return; k<<<1, 512>>>(d, len, 0); }
void one(unsigned *d) { k<<<1, 512>>>(d, 96, 0); }
"""
    assert listed(host)["n"] == (1, 2, 4, 8, 16, 32, 64, 96)


def test_numba_loop_over_literal_sizes_lists_them():
    text = """
from numba import cuda, uint32

@cuda.jit
def k(x, n):
    pass

def main(x):
    for n in (64, 256, 1024):
        k[1, 512](x, n)
"""
    from tolk_lint.frontends.python import parse_python

    (k,) = parse_python(text, "k.py").kernels
    (fact,) = k.launch.found[0].arguments
    assert (fact.lo, fact.hi, fact.values) == (64, 1024, (64, 256, 1024))
    assert "n one of 64, 256, 1024" in k.launch.found[0].words()


def test_numba_loop_variable_reused_by_two_loops_is_each_loops_element():
    text = """
from numba import cuda

@cuda.jit
def k(x, n):
    pass

@cuda.jit
def j(x, n):
    pass

def main(x):
    for n in (64, 256):
        k[1, 512](x, n)
    for n in (32, 96):
        j[1, 512](x, n)
    n = 7
"""
    from tolk_lint.frontends.python import parse_python

    k, j = parse_python(text, "k.py").kernels
    assert k.launch.found[0].arguments[0].values == (64, 256)
    assert j.launch.found[0].arguments[0].values == (32, 96)


def test_a_slow_helper_stops_at_the_step_limit_and_keeps_the_values_it_did_not_run():
    import time

    # each run spends MAX_STEPS; past the launch's total the other values are kept
    host = "bool ok(unsigned n) { unsigned s = 0; for (unsigned i = 0; i < 100000; ++i) s += i & n; return s != 1; }\n"
    host += "void run(unsigned *d, unsigned n) { if (n > 4000) return; assert(ok(n)); k<<<1, 256>>>(d, n, 0); }"
    t = time.perf_counter()
    assert listed(host)["n"] is None
    assert time.perf_counter() - t < 10
