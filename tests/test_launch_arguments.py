"""What a host launch's arguments fix of a kernel's parameters (`launch.arguments`).

Each case is host code whose answer is known by reading it: a constant
argument, a bound the code around the launch tests, what every caller of a
wrapper passes, and the cases that must give nothing (a variable assigned
again, its address taken, a loop counter, a caller passing a run-time value).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tolk_lint import lint_file, lint_text
from tolk_lint.frontends.python import parse_python
from tolk_lint.ir.cfg import cfg_of
from tolk_lint.launch.c_types import IntType, int_type
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import Entry

KERNEL = "__global__ void k(float *x, int n, unsigned m) { }\n"


def facts(host: str, kernel: str = KERNEL, n_params: int = 3) -> dict[str, tuple[int, int]]:
    """Parameter name -> (lo, hi) under the file's launches of `k`."""
    src = scan(kernel + host, "k.cu")
    shapes = [s for s in src.shapes_for(Entry(("k",)), n_params) if s.block is not None]
    assert len(shapes) == 1, shapes
    return {f.name: (f.lo, f.hi) for f in shapes[0].arguments}


def test_int_types_are_read_from_declarations():
    assert int_type(["int"]) == IntType(True, 32)
    assert int_type(["unsigned"]) == IntType(False, 32)
    assert int_type(["const", "unsigned", "int"]) == IntType(False, 32)
    assert int_type(["uint"]) == IntType(False, 32)
    assert int_type(["size_t"]) == IntType(False, 64)
    assert int_type(["long", "long"]) == IntType(True, 64)
    assert int_type(["unsigned", "long", "long"]) == IntType(False, 64)
    assert int_type(["short"]) == IntType(True, 16)
    for words in (["float"], ["int", "*"], ["T"], ["const", "float", "&"], ["std", "::", "size_t"], []):
        assert int_type(words) is None, words


def test_a_constant_argument_is_an_equality():
    host = "#define N 512\nint main() { const int len = 2 * N; k<<<1, 256>>>(0, len, N); }\n"
    assert facts(host) == {"n": (1024, 1024), "m": (512, 512)}


def test_a_negative_constant_converts_as_c_converts_it():
    assert facts("int main() { k<<<1, 256>>>(0, -1, -1); }\n") == {"n": (-1, -1), "m": (4294967295, 4294967295)}


@pytest.mark.parametrize(
    "body",
    [
        "int n = 512; n *= 2; k<<<1, 256>>>(0, n, 1);",  # assigned again
        "int n = 512; k<<<1, 256>>>(0, n, 1); n++;",  # assigned after the launch (a loop may run it again)
        "int n = 512; read_size(&n); k<<<1, 256>>>(0, n, 1);",  # its address taken
        "for (int n = 1; n < 8; n++) k<<<1, 256>>>(0, n, 1);",  # a loop counter
        "int n = atoi(argv[1]); k<<<1, 256>>>(0, n, 1);",  # a run-time value
    ],
)
def test_a_value_that_may_change_fixes_nothing(body):
    got = facts("int main(int argc, char **argv) { " + body + " }\n")
    assert "n" not in got and got.get("m") == (1, 1)


def test_the_guards_around_a_launch_bound_a_parameter():
    host = """
void run(float *x, unsigned len, int n) {
  if (len < 2) return;
  assert(n >= 0 && n <= 64);
  if (len <= 1024) {
    k<<<1, 256>>>(x, n, len);
  }
}
"""
    assert facts(host) == {"n": (0, 64), "m": (2, 1024)}


def test_the_else_of_a_comparison_bounds_a_parameter():
    host = "void run(float *x, unsigned len) { if (len <= 1024) big(x); else k<<<1, 256>>>(x, 0, len); }\n"
    assert facts(host) == {"n": (0, 0), "m": (1025, 4294967295)}


def test_an_early_exit_on_a_disjunction_bounds_both_ways():
    host = "void run(float *x, int n) { if (n < 1 || n > 4096) { printf(\"bad\"); return; } k<<<1, 256>>>(x, n, 0); }\n"
    assert facts(host)["n"] == (1, 4096)


def test_a_guard_in_a_block_that_does_not_hold_the_launch_bounds_nothing():
    host = "void run(float *x, int n, int c) { if (c) { if (n > 8) return; } k<<<1, 256>>>(x, n, 0); }\n"
    assert "n" not in facts(host)


def test_a_wrapper_takes_what_its_callers_pass():
    host = """
void launch(float *x, int n) { k<<<1, 256>>>(x, n, 3); }
void twice(float *x, int n) { launch(x, n); }
int main() { launch(0, 256); twice(0, 512); }
"""
    assert facts(host) == {"n": (256, 512), "m": (3, 3)}


def test_a_wrapper_with_a_caller_passing_a_runtime_value_fixes_nothing():
    host = """
void launch(float *x, int n) { k<<<1, 256>>>(x, n, 3); }
int main(int argc, char **argv) { launch(0, 256); launch(0, atoi(argv[1])); }
"""
    assert facts(host) == {"m": (3, 3)}


def test_launches_of_one_block_are_joined_and_a_launch_that_says_nothing_drops_the_fact():
    assert facts("int main() { k<<<1, 256>>>(0, 16, 1); k<<<2, 256>>>(0, 64, 1); }\n") == {"n": (16, 64), "m": (1, 1)}
    assert facts("void f(int q) { k<<<1, 256>>>(0, 16, 1); k<<<2, 256>>>(0, q, 1); }\n") == {"m": (1, 1)}


def test_default_arguments_are_left_unread():
    kernel = "__global__ void k(float *x, int n, int *extra = 0) { }\n"
    src = scan(kernel + "int main() { k<<<1, 256>>>(0, 32); }\n", "k.cu")
    (shape,) = src.shapes_for(Entry(("k",)), 3)
    assert [(f.name, f.lo) for f in shape.arguments] == [("n", 32)]


def test_a_kernel_whose_ptx_parameters_do_not_match_its_declaration_gets_no_facts():
    src = scan(KERNEL + "int main() { k<<<1, 256>>>(0, 16, 1); }\n", "k.cu")
    (shape,) = src.shapes_for(Entry(("k",)), 5)
    assert shape.arguments == ()


def test_numba_call_sites_fix_constant_arguments():
    text = """
from numba import cuda

@cuda.jit
def k(x, n, m):
    pass

def main(x, size):
    k[1, 256](x, 512, size)
    for n in (64, 128):
        k[1, 256](x, n, 4)
"""
    (k,) = parse_python(text, "k.py").kernels
    (shape,) = k.launch.found[:1]
    assert [(f.name, f.lo, f.hi) for f in shape.arguments] == [("n", 64, 512)]


def test_a_while_loop_stepped_by_the_block_size_is_an_induction_variable():
    # the Numba front end reads `cuda.blockDim.x` inside the loop body: still invariant
    text = """
from numba import cuda, float32

@cuda.jit
def k(x, n):
    tile = cuda.shared.array(512, float32)
    i = cuda.threadIdx.x
    while i < n:
        tile[i] = x[i]
        i += cuda.blockDim.x
"""
    (k,) = parse_python(text, "k.py").kernels
    (lp,) = cfg_of(k).loops
    (iv,) = lp.ivs
    assert iv.step_value is not None and iv.step_value.defn.attrs["name"] == "ntid.x"
    assert lp.exits[0].iv is iv


def test_the_bogus_while_loop_race_is_gone():
    text = """
from numba import cuda, float32

# tolk: launch block=(256,1,1)
@cuda.jit
def k(x, out, n):
    tile = cuda.shared.array(512, float32)
    i = cuda.threadIdx.x
    while i < n:
        tile[i] = x[i]
        i += cuda.blockDim.x
    cuda.syncthreads()
    out[0] = tile[0]
"""
    diags = lint_text(text, "k.py").diagnostics
    # out of bounds for n > 512 (a real finding), but no two threads store one word
    assert [d.code for d in diags] == ["TL202"]
    assert "index 512" in diags[0].message


SCAN = """
__global__ void scan(float *out, const float *in, int n) {
  extern __shared__ float temp[];
  int t = threadIdx.x, pout = 0, pin = 1;
  temp[t] = t > 0 ? in[t - 1] : 0;
  __syncthreads();
  for (int offset = 1; offset < n; offset *= 2) {
    pout = 1 - pout; pin = 1 - pout;
    if (t >= offset) temp[pout * n + t] = temp[pin * n + t] + temp[pin * n + t - offset];
    else temp[pout * n + t] = temp[pin * n + t];
    __syncthreads();
  }
  out[t] = temp[pout * n + t];
}
int main() { scan<<<1, 512, 4096>>>(0, 0, SIZE); }
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("size", [512, 128])
def test_the_facts_reach_the_solver_and_the_json(tmp_path, size):
    cu = tmp_path / "scan.cu"
    cu.write_text(SCAN.replace("SIZE", str(size)))
    ptx = tmp_path / "scan.ptx"
    subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", "-o", str(ptx), str(cu)], check=True, capture_output=True)
    diags = [d for d in lint_file(str(ptx)).diagnostics if d.severity == "error"]
    if size == 512:  # a block of 512 with n = 512: each thread owns one element of each buffer
        assert diags == []
        return
    assert diags and {d.code for d in diags} == {"TL201"}
    race = diags[0]
    assert "when n = 128" in race.message and "with n = 128" in race.message
    assert race.data["launch"][0]["arguments"] == [{"param": "n", "index": 2, "min": 128, "max": 128}]


def test_a_switch_case_fixes_the_block_and_the_arguments():
    # NVIDIA's reduction samples pick a template instance by `switch (threads)`
    src = scan(
        """template <int B> __global__ void k(int *x, int n) {}
void run(int threads, int n) {
  dim3 block(threads, 1, 1);
  switch (threads) {
    case 512: k<512><<<1, block>>>(0, threads); break;
    case 256: { k<256><<<1, block>>>(0, threads); break; }
    case 128:
    case 64: k<64><<<1, block>>>(0, threads); break;
    default: k<32><<<1, block>>>(0, threads);
  }
}
""",
        "k.cu",
    )
    by = {b: src.shapes_for(Entry(("k",), (b,)), 2) for b in (512, 256, 64, 32)}
    assert [s.block for s in by[512]] == [(512, 1, 1)] and by[512][0].arguments[0].lo == 512
    assert [s.block for s in by[256]] == [(256, 1, 1)]
    # two labels on one run of statements, and `default`: the value is not one constant
    assert [s.block for s in by[64]] == [None] and [s.block for s in by[32]] == [None]


def test_a_case_that_falls_through_fixes_nothing():
    src = scan(
        """__global__ void k(int n) {}
void run(int threads) {
  switch (threads) {
    case 512: prepare();
    case 256: k<<<1, threads>>>(threads); break;
  }
}
""",
        "k.cu",
    )
    assert [s.block for s in src.shapes_for(Entry(("k",)), 1)] == [None]


def _listed(host: str) -> dict:
    src = scan("typedef unsigned int uint;\n" + KERNEL + host, "k.cu")
    (shape,) = [s for s in src.shapes_for(Entry(("k",)), 3) if s.block is not None]
    return {f.name: (f.lo, f.hi, f.values) for f in shape.arguments}


def test_an_argument_computed_from_checked_variables_is_run_per_value():
    # scan.cu's large path in small: `len` one of 512, ..., 4096 (the check
    # runs per value), so `len / 256` is one of 2, 4, 8, 16
    host = """
static uint odd(uint L) { while (L && (L & 1) == 0) L >>= 1; return L; }
void large(float *x, uint len) {
  assert(odd(len) == 1);
  assert(len >= 512 && len <= 4096);
  k<<<len / 256, 64>>>(x, 0, len / (4 * 64));
}
"""
    assert _listed(host)["m"] == (2, 16, (2, 4, 8, 16))


def test_an_argument_over_wide_ranges_is_bounded_by_intervals():
    host = "void run(float *x, uint a, uint b) { assert(a >= 2048 && a <= 262144); assert(b >= 1 && b <= 4);"
    host += " k<<<1, 64>>>(x, 0, a / 1024 + b); }"
    assert _listed(host)["m"] == (3, 260, None)


@pytest.mark.parametrize(
    "arg",
    [
        "a - 4096",  # below zero for a = 2048: wraps as an unsigned
        "a * a",  # past UINT_MAX
        "a / q",  # q unbounded
        "a & 7",  # not an operator bounded here
    ],
)
def test_an_argument_that_may_wrap_or_is_unbounded_gives_nothing(arg):
    host = f"void run(float *x, uint a, uint q) {{ assert(a >= 2048 && a <= 262144); k<<<1, 64>>>(x, 0, {arg}); }}"
    assert "m" not in _listed(host)


PAIRS_KERNEL = """\
__global__ void pair_sums(const float *in, float *out, unsigned width)
{
    extern __shared__ float buf[];
    unsigned t = threadIdx.x;
    buf[t] = in[blockIdx.x * 2 * width + t];
    buf[t + width] = in[blockIdx.x * 2 * width + t + width];
    __syncthreads();
    out[blockIdx.x * width + t] = buf[2 * t] + buf[2 * t + 1];
}
"""

PAIRS_HOST = """\
#include "pairs_kernel.cuh"
void run(const float *in, float *out, unsigned n)
{
    dim3 block(n < 1024 ? n / 2 : 512);
    dim3 grid(n / (2 * block.x));
    pair_sums<<<grid, block, 2 * block.x * sizeof(float)>>>(in, out, WIDTH);
}
"""


@pytest.mark.nvcc
@pytest.mark.parametrize(("width", "races"), [("block.x", False), ("block.x - 1", True)])
def test_an_argument_that_is_the_blocks_width_is_its_width_in_a_header_kernel(tmp_path, width, races):
    # the kernel is in a header, the launch in the `.cu` that includes it
    # (NVIDIA's dwtHaar1D): the `.file` table names only the header. The block
    # is computed at run time, but the argument `block.x` is the block's width
    # whatever it is, so `buf[t + width]` meets no other thread's `buf[t]`;
    # `block.x - 1` lets thread 0's second store land on thread width's first
    from tolk_lint.testing import compile_cuda

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    (tmp_path / "pairs_kernel.cuh").write_text(PAIRS_KERNEL)
    cu = tmp_path / "pairs.cu"
    cu.write_text(PAIRS_HOST.replace("WIDTH", width))
    ptx = compile_cuda(cu, "sm_80", str(tmp_path))
    found = [d for d in lint_file(str(ptx)).diagnostics if d.code == "TL201"]
    assert bool(found) == races, [d.message for d in found]
    if not races:
        return
    [fact] = [a for launch in found[0].data["launch"] for a in launch.get("arguments", ())] or [None]
    assert fact is None  # `block.x - 1` fixes nothing of `width`


# -- callers in the sources beside the launching file ------------------------------------------

LAUNCHER = """
__global__ void k(float *x, int n, unsigned m) { }
{static}void compute(float *x, unsigned size) { k<<<1, 256>>>(x, 0, size); }
"""
MAIN_GUARDED = """
void compute(float *x, unsigned size);
int main(int argc, char **argv) {
    unsigned size = (unsigned)argc * 100;
    if (size <= 512) {
        compute(0, size);
    }
}
"""


def _facts_beside(tmp_path, launcher: str, main: str | None) -> dict:
    cu = tmp_path / "launcher.cu"
    cu.write_text(launcher)
    if main is not None:
        (tmp_path / "main.cpp").write_text(main)
    src = scan(launcher, str(cu))
    shapes = [s for s in src.shapes_for(Entry(("k",)), 3) if s.block is not None]
    assert len(shapes) == 1, shapes
    return {f.name: (f.lo, f.hi) for f in shapes[0].arguments}


def test_a_launcher_with_no_caller_in_its_file_takes_what_the_files_beside_it_pass(tmp_path):
    """NVIDIA's eigenvalue sample: `main.cu` calls the launcher only when the
    matrix fits the kernel's shared arrays."""
    assert _facts_beside(tmp_path, LAUNCHER.replace("{static}", ""), MAIN_GUARDED) == {"n": (0, 0), "m": (0, 512)}


def test_a_caller_beside_it_gives_only_what_its_check_gives(tmp_path):
    main = MAIN_GUARDED.replace("if (size <= 512) {", "if (size > 0) {")
    assert _facts_beside(tmp_path, LAUNCHER.replace("{static}", ""), main) == {"n": (0, 0), "m": (1, 2**32 - 1)}
    main = MAIN_GUARDED.replace("if (size <= 512) {", "{")
    assert _facts_beside(tmp_path, LAUNCHER.replace("{static}", ""), main) == {"n": (0, 0)}


def test_a_static_launcher_is_not_called_from_other_files(tmp_path):
    """A `static` function's callers are in its own file: none there, none known."""
    assert _facts_beside(tmp_path, LAUNCHER.replace("{static}", "static "), MAIN_GUARDED) == {"n": (0, 0)}


def test_the_calls_in_the_launchers_own_file_are_all_its_callers(tmp_path):
    """A file that calls its launcher itself is read alone (the rule for a
    wrapper in one file): the call beside it is not looked for."""
    launcher = LAUNCHER.replace("{static}", "") + "void run(float *x) { compute(x, 64); }\n"
    assert _facts_beside(tmp_path, launcher, MAIN_GUARDED.replace("<= 512", "<= 100000")) == {"n": (0, 0), "m": (64, 64)}


def test_a_value_changed_before_its_check_is_bounded_by_the_check(tmp_path):
    """NVIDIA's eigenvalues `main.cu`: the size is a default changed by a
    reference parameter, then checked around the launcher's call. A check
    made before the change, or a change after the call, bounds nothing."""
    reader = "void get_size(int argc, char **argv, unsigned &size) { if (argc > 1) size = atoi(argv[1]); }\n"
    main = reader + """
int main(int argc, char **argv) {
    unsigned size = 2048;
    get_size(argc, argv, size);
    if (size <= 512) {
        compute(0, size);
    }
}
"""
    launcher = LAUNCHER.replace("{static}", "")
    assert _facts_beside(tmp_path, launcher, main) == {"n": (0, 0), "m": (0, 512)}
    before = main.replace("    get_size(argc, argv, size);\n    if (size <= 512) {\n",
                          "    if (size <= 512) {\n    get_size(argc, argv, size);\n")
    assert _facts_beside(tmp_path, launcher, before) == {"n": (0, 0)}
    after = main.replace("        compute(0, size);\n", "        compute(0, size);\n        size = 100000;\n")
    assert _facts_beside(tmp_path, launcher, after) == {"n": (0, 0)}


def test_an_if_without_braces_around_the_call_bounds_it(tmp_path):
    main = MAIN_GUARDED.replace("if (size <= 512) {\n        compute(0, size);\n    }", "if (size <= 512)\n        compute(0, size);")
    assert "{\n        compute" not in main
    assert _facts_beside(tmp_path, LAUNCHER.replace("{static}", ""), main) == {"n": (0, 0), "m": (0, 512)}
    assert facts("void f(int n) { if (n <= 64) k<<<1, 256>>>(0, n, 1); }\n") == {"n": (-(2**31), 64), "m": (1, 1)}
