"""Launch shapes from the code (tolk_lint/launch): Numba call sites, CUDA host
launches and C++ names, comments, Triton, the order they are taken in, the
merge of several shapes, what every output says, and TL205's contract --
including its promise: a kernel clean under a contract is clean for every
block the contract admits."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tolk_lint.config import DEFAULT_SETTINGS, Settings
from tolk_lint.engine import lint_text, parse, prepare
from tolk_lint.launch.c_syntax import Evaluator, lex
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import UNKNOWN_ARG, read_entry
from tolk_lint.launch.shapes import Contract
from tolk_lint.testing import FIXTURE_TIME_BUDGET

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _shapes(text: str, path: str = "k.py", settings: Settings = DEFAULT_SETTINGS) -> dict[str, list]:
    m = parse(textwrap.dedent(text), path)
    prepare(m, settings)
    return {k.name: list(k.launch.shapes) for k in m.kernels}


def _blocks(text: str, **kw) -> dict[str, list]:
    return {name: [s.block for s in shapes] for name, shapes in _shapes(text, **kw).items()}


# -- Numba call sites ------------------------------------------------------------------------------

KERNEL = """
from numba import cuda, float32
TPB = 16

@cuda.jit
def k(a):
    a[cuda.threadIdx.x] = 0
"""


@pytest.mark.parametrize(
    ("launch", "block"),
    [
        ("k[4, 128](x)", (128, 1, 1)),
        ("k[(4, 4), (TPB, TPB)](x)", (16, 16, 1)),
        ("k[4, (8, 4, 2), 0, 1024](x)", (8, 4, 2)),  # grid, block, stream, shared bytes
        ("threadsperblock = (TPB, TPB)\n    k[4, threadsperblock](x)", (16, 16, 1)),
        ("cfg = (4, 2 * TPB)\n    k[cfg](x)", (32, 1, 1)),
        ("k.forall(100, tpb=64)(x)", (64, 1, 1)),
        ("k.forall(100, 96)(x)", (96, 1, 1)),
        ("configured = k[8, TPB * 4]\n    configured(x)", (64, 1, 1)),
    ],
)
def test_call_site_forms(launch, block):
    src = KERNEL + "\ndef run(x):\n    " + launch + "\n"
    [shape] = _shapes(src)["k"]
    assert shape.block == block and shape.kind == "call site"
    assert shape.source.startswith(("the call site at line", "`.forall(...)` at line"))


def test_call_sites_under_main_and_in_loops():
    src = KERNEL + '''
if __name__ == "__main__":
    threads = (TPB, 8)
    k[2, threads](1)
    for tpb in (64, 128):
        k[2, tpb](1)
'''
    assert _blocks(src) == {"k": [(16, 8, 1), (64, 1, 1), (128, 1, 1)]}


def test_sites_with_one_block_are_one_shape_naming_every_site():
    src = KERNEL + "\ndef run(x):\n    k[1, 128](x)\n    k[2, 128](x)\n"
    [shape] = _shapes(src)["k"]
    assert shape.source == "the call sites at lines 10 and 11"


def test_a_block_that_is_not_a_constant_gives_nothing():
    src = KERNEL + "\ndef run(x, tpb):\n    k[1, tpb](x)\n    k[1, x.shape[0]](x)\n    k[1, 2048](x)\n"
    assert _shapes(src) == {"k": []}  # a parameter, a run-time value, more than 1024 threads


def test_a_name_assigned_twice_under_conditions_is_not_guessed():
    src = KERNEL + "\ndef run(x, big):\n    if big:\n        t = 256\n    else:\n        t = 128\n    k[1, t](x)\n"
    assert _shapes(src) == {"k": []}


def test_forall_without_tpb_is_every_one_dimensional_block():
    [shape] = _shapes(KERNEL + "\ndef run(x):\n    k.forall(x.size)(x)\n")["k"]
    assert shape.block is None and shape.contract == Contract((1024, 1, 1), 1024, "flat")
    assert "occupancy calculator" in shape.source


def test_kernels_through_factories_caches_and_attributes():
    src = """
    from numba import cuda

    def make(cuda):
        @cuda.jit
        def inner(a):
            a[cuda.threadIdx.x] = 0
        return inner

    def body(a):
        a[cuda.threadIdx.x] = 1

    CACHE = {}
    CACHE["body"] = cuda.jit(body)

    class Runner:
        def __init__(self):
            self.kern = make(cuda)

        def run(self, a):
            self.kern[1, 32](a)

    made = make(cuda)
    made[1, 64](None)
    CACHE["body"][1, (8, 8)](None)
    """
    shapes = _blocks(src)
    assert shapes["inner"] == [(32, 1, 1), (64, 1, 1)] and shapes["body"] == [(8, 8, 1)]


# -- precedence ------------------------------------------------------------------------------------------


HELPER = """
from numba import cuda

@cuda.jit
def a(x):
    x[0] = 1

@cuda.jit
def b(x):
    x[0] = 2

def run_one(func, x, n=4):
    func[1, 32, 0, n](x)

def run_twice(kernel, x):
    run_one(kernel, x)

def test(x):
    run_one(a, x)
    run_twice(kernel=b, x=x)
"""


def test_a_helper_that_launches_its_parameter_launches_what_every_call_passes():
    assert _blocks(HELPER) == {"a": [(32, 1, 1)], "b": [(32, 1, 1)]}
    for spoiler in ("run_one(x, x)", "run_one(func=make(), x=x)", "f = run_one", "run_one(*args)"):
        got = _blocks(HELPER + f"    {spoiler}\n")
        assert got == {"a": [], "b": []}, spoiler


METHOD = """
from numba import cuda

def inc(x, i):
    x[cuda.threadIdx.x] += i

class TestLaunch:
    def _run(self, func, x, nblocks, blksize):
        func[nblocks, blksize](x)

    def _compiled(self, x, sig, blksize, func):
        cuda_func = cuda.jit(sig)(func)
        cuda_func[1, blksize](x, 1)

    def test_a(self, x):
        @cuda.jit
        def a(x):
            x[0] = 1

        self._run(a, x, 1, (4, 8))
        self._run(a, x, nblocks=2, blksize=32)

    def test_inc(self, x):
        self._compiled(x, "void(int32[:], int32)", 64, inc)
"""


def test_a_method_that_launches_its_parameter_launches_what_every_call_through_self_passes():
    shapes = _shapes(METHOD)
    blocks = {k: [s.block for s in v] for k, v in shapes.items()}
    assert blocks == {"a": [(4, 8, 1), (32, 1, 1)], "inc": [(64, 1, 1)]}
    assert [s.source for s in shapes["a"]] == ["the call site at line 20", "the call site at line 21"]
    assert [s.grid for s in shapes["a"]] == [((1, 1), (1, 1), (1, 1)), ((2, 2), (1, 1), (1, 1))]
    spoilers = {
        "        self._run(x, x, 1, 32)\n": "a call passing no kernel",
        "        f = self._run\n": "the method read as a value",
        "        TestLaunch()._run(a, x, 1, 32)\n": "a call not through self",
        "class Sub(TestLaunch):\n    def _run(self, func, x, nblocks, blksize):\n        pass\n":
            "an override",
    }
    for spoiler, why in spoilers.items():
        got = _blocks(METHOD + spoiler)
        assert got["a"] == [], why
    # a block no call passes as a constant: that call's launch is unread, the others still read
    unread_block = METHOD.replace("self._run(a, x, 1, (4, 8))", "self._run(a, x, 1, len(x))")
    m = parse(textwrap.dedent(unread_block), "k.py")
    prepare(m, DEFAULT_SETTINGS)
    [a] = [k for k in m.kernels if k.name == "a"]
    assert [s.block for s in a.launch.shapes] == [(32, 1, 1)]
    assert [s.source for s in a.launch.found if s.kind == "unread"] == ["the call site at line 20"]
    # `device=True` compiles a device function: not a launch of `inc`
    device = METHOD.replace("cuda.jit(sig)(func)", "cuda.jit(sig, device=True)(func)")
    assert _blocks(device).get("inc", []) == []


def test_command_line_beats_configuration_beats_call_site_beats_comment():
    src = """
    from numba import cuda

    # tolk: launch block=(32,1,1)
    @cuda.jit
    def k(a):
        a[cuda.threadIdx.x] = 0

    def run(a):
        k[1, 64](a)
    """
    assert _shapes(src)["k"][0].kind == "call site"
    assert _blocks(src) == {"k": [(64, 1, 1)]}
    no_site = src[: src.index("    def run")]
    [c] = _shapes(no_site)["k"]
    assert c.block == (32, 1, 1) and c.source == "the `tolk: launch` comment at line 4"
    configured = DEFAULT_SETTINGS.with_(launch=(("k", (128, 1, 1)),))
    [cfg] = _shapes(src, settings=configured)["k"]
    assert cfg.block == (128, 1, 1) and cfg.kind == "configuration"
    [cli] = _shapes(src, settings=configured.with_(block=(256, 1, 1)))["k"]
    assert cli.block == (256, 1, 1) and cli.source == "--block"


PTX_ENTRY = """
.version 8.0
.target sm_80
.address_size 64
{comment}
.visible .entry {name}()
{directive}
{{
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    ret;
}}
"""


def _ptx(name="k", comment="", directive="", path="k.ptx"):
    return _shapes(PTX_ENTRY.format(name=name, comment=comment, directive=directive), path=path)[name]


def test_ptx_reqntid_beats_a_comment_and_a_comment_gives_the_block():
    [r] = _ptx(comment="// tolk: launch block=(64,1,1)", directive=".reqntid 128, 1, 1")
    assert r.block == (128, 1, 1) and r.kind == ".reqntid" and r.source == ".reqntid 128,1,1"
    [c] = _ptx(comment="// tolk: launch block=(64,1,1)\n// .globl k")
    assert c.block == (64, 1, 1) and c.kind == "comment"
    assert _ptx(directive=".maxntid 256, 1, 1") == []  # an upper bound, not a shape


def test_triton_maxntid_is_the_exact_block():
    banner = "//\n// Generated by LLVM NVPTX Back-End\n//\n"
    text = banner + PTX_ENTRY.format(name="k", comment="", directive=".maxntid 128, 1, 1") + \
        '.file 1 "/tmp/kernels.py"\n'  # fmt: skip
    m = parse(text, "t.ptx")
    prepare(m, DEFAULT_SETTINGS)
    [s] = m.kernels[0].launch.shapes
    assert s.block == (128, 1, 1) and s.source == ".maxntid 128,1,1 (Triton: num_warps = 4)"
    m = parse(text.replace('.file 1 "/tmp/kernels.py"', '.file 1 "/tmp/kernels.cu"'), "t.ptx")
    prepare(m, DEFAULT_SETTINGS)
    assert m.kernels[0].launch.shapes == ()  # an LLVM back end, but not Triton's source


# -- CUDA sources ------------------------------------------------------------------------------------------

HOST = r"""
#define TILE 16
constexpr int ROWS = 8;
enum { WIDE = 256, WIDER };
namespace ops { __global__ void scale(float *x) {} }
template <int BS, typename T> __global__ void mm(T *c) {}
extern "C" __global__ void flat(float *x) {}

void host(float *x, int n, int block_size) {
    dim3 threads(TILE, ROWS);
    dim3 grid(n / threads.x);
    mm<TILE, float><<<grid, threads>>>(x);
    mm<2 * TILE, float><<<grid, dim3(32, 32), 0, 0>>>(x);
    ops::scale<<<1, WIDER>>>(x);
    dim3 b;
    b.x = 64;
    b.y = 2;
    flat<<<grid, b>>>(x);
    void *args[] = {&x};
    cudaLaunchKernel((const void *)&flat, grid, dim3(WIDE), args, 0, 0);
    if (block_size == 128) {
        dim3 t(block_size);
        flat<<<grid, t>>>(x);
    }
    flat<<<grid, block_size>>>(x);
    flat<<<grid, n>>>(x);
}
"""


def test_host_launches_of_a_cuda_source():
    src = scan(HOST, "/src/host.cu")
    got = {name: [(s.block, s.source) for s in src.shapes_for(read_entry(name))] for name in (
        "_Z2mmILi16EfEvPT0_", "_Z2mmILi32EfEvPT0_", "_ZN3ops5scaleEPf", "flat")}  # fmt: skip
    assert got["_Z2mmILi16EfEvPT0_"] == [((16, 8, 1), "`dim3 threads(TILE, ROWS)` at host.cu:10")]
    assert got["_Z2mmILi32EfEvPT0_"] == [((32, 32, 1), "the launch `mm<2 * TILE, float><<<grid, dim3(32, 32), 0, 0>>>` "
                                                       "at host.cu:13")]  # fmt: skip
    assert got["_ZN3ops5scaleEPf"] == [((257, 1, 1), "the launch `ops::scale<<<1, WIDER>>>` at host.cu:14")]
    flat = dict(got["flat"])
    assert set(flat) == {(64, 2, 1), (256, 1, 1), (128, 1, 1), None}  # None: `n` and the unguarded parameter
    unread = [s.source for s in src.shapes_for(read_entry("flat")) if s.block is None]
    assert unread == ["the launch `flat<<<grid, block_size>>>` at host.cu:25", "the launch `flat<<<grid, n>>>` at host.cu:26"]
    assert flat[(64, 2, 1)] == "`dim3 b` and its members at host.cu:15"
    assert flat[(128, 1, 1)] == "`dim3 t(block_size)` at host.cu:22"


DECLARATORS = """
__global__ void tr(float *x) { }
__global__ void other(float *x) { }
void run(float *x, int n) {
    dim3 grid(n / 32, n / 32), threads(32, 8);
    int blocks = n / 256, width = 128;
    tr<<<grid, threads>>>(x);
    other<<<blocks, width>>>(x);
}
void through_pointer(float *x, int n, int which) {
    void (*kernel)(float *) = &tr;
    dim3 grid(n / 16), block;
    block.x = 64;
    if (which) kernel = other;
    kernel<<<grid, block>>>(x);
}
"""


def test_later_declarators_and_launches_through_a_kernel_pointer():
    src = scan(DECLARATORS, "/src/d.cu")
    got = {name: sorted(s.block for s in src.shapes_for(read_entry(name))) for name in ("tr", "other")}
    assert got == {"tr": [(32, 8, 1), (64, 1, 1)], "other": [(64, 1, 1), (128, 1, 1)]}
    (via,) = [s for s in src.shapes_for(read_entry("tr")) if s.block == (64, 1, 1)]
    assert via.source == "`dim3 block` and its members at d.cu:12"


def test_a_dereferenced_pointer_to_a_kernel_of_an_included_header(tmp_path):
    """NVIDIA's cppOverload: the kernel is defined in a header the `.cu`
    includes, assigned to a function pointer, and launched as
    ``(*func1)<<<...>>>``: the launch is that kernel's."""
    (tmp_path / "kernels.cuh").write_text("__global__ void simple_kernel(const int *in, int *out, int a) { }\n")
    cu = tmp_path / "overload.cu"
    cu.write_text('#include "kernels.cuh"\n#define THREAD_N 256\n'
                  "void run(const int *in, int *out, int a) {\n"
                  "  void (*func1)(const int *, int *, int);\n  func1 = simple_kernel;\n"
                  "  (*func1)<<<16, THREAD_N>>>(in, out, a);\n}\n")
    from tolk_lint.launch.cuda_source import read_source

    src = read_source(str(cu))
    assert [s.block for s in src.shapes_for(read_entry("_Z13simple_kernelPKiPii"))] == [(256, 1, 1)]


def test_the_constants_of_a_quoted_header_and_a_changed_header_read_again(tmp_path):
    from tolk_lint.launch.cuda_source import read_source

    (tmp_path / "common.h").write_text('#include "sizes.h"\n#define ROWS (SAMPLE / 16)\n')
    (tmp_path / "sizes.h").write_text("#define SAMPLE 128\nconstexpr int WIDE = 2 * SAMPLE;\n")
    cu = tmp_path / "m.cu"
    cu.write_text('#include "common.h"\n#include <missing.h>\ntemplate <int D> __global__ void k(float *x) { }\n'
                  "void run(float *x) { k<1><<<4, SAMPLE>>>(x); k<2><<<4, dim3(WIDE / 2, ROWS)>>>(x); }\n")
    src = read_source(str(cu))
    assert [s.block for s in src.shapes_for(read_entry("_Z1kILi1EEvPf"))] == [(128, 1, 1)]
    assert [s.block for s in src.shapes_for(read_entry("_Z1kILi2EEvPf"))] == [(128, 8, 1)]
    assert [os.path.basename(h) for h, _stamp in src.included] == ["common.h", "sizes.h"]
    (tmp_path / "sizes.h").write_text("#define SAMPLE 64\nconstexpr int WIDE = 2 * SAMPLE;\n")
    os.utime(tmp_path / "sizes.h", ns=(1, 1))
    assert [s.block for s in read_source(str(cu)).shapes_for(read_entry("_Z1kILi1EEvPf"))] == [(64, 1, 1)]


def test_cpp_names_of_ptx_entries():
    e = read_entry("_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii")
    assert e.parts == ("MatrixMulCUDA",) and e.args == (32,) and str(e) == "MatrixMulCUDA<32>"
    assert read_entry("_ZN3foo3nskEPfi").parts == ("foo", "nsk")
    assert read_entry("_Z4axpyIfLj256EEvPT_S1_S0_i").args == ("float", 256)
    assert read_entry("_Z1kILin3EEvv").args == (-3,)
    assert read_entry("_Z1kIXadL_Z1gvEEEvv").args == (UNKNOWN_ARG,)
    assert read_entry("plain").parts == ("plain",) and read_entry("_Zbroken").parts == ("_Zbroken",)


@pytest.mark.parametrize(
    ("expr", "value"),
    [("1 + 2 * 3", 7), ("(1 << 5) | 1", 33), ("-7 / 2", -3), ("-7 % 2", -1), ("N > 4 ? N : 4", 16),
     ("(int)N * 2", 32), ("static_cast<int>(N) / 4", 4), ("std::min(N, 8)", 8), ("dim3(N, 2).y", 2),
     ("N / 0", None), ("unknown + 1", None), ("1.5f", None)],
)  # fmt: skip
def test_constant_expressions(expr, value):
    toks, _, _ = lex(expr)
    assert Evaluator(lambda n: 16 if n == "N" else None).value(toks) == value


def test_lexer_keeps_comments_and_defines_apart():
    toks, comments, defines = lex('#define A (1 + \\\n 2)\n// c1\nint x = A; /* c2 */ const char *s = "//";\n')
    assert [d.name for d in defines] == ["A"] and [t.text for t in defines[0].tokens] == ["(", "1", "+", "2", ")"]
    assert [c for _, c in comments] == ["// c1", "/* c2 */"]
    assert toks[0].line == 4 and '"//"' in [t.text for t in toks]


# -- the merge of several shapes, and what every output says --------------------------------------------


def _lint(text: str, path: str = "k.py", **settings):
    # as the fixture harness does: an answer must not depend on how busy the machine is
    settings.setdefault("time_budget", FIXTURE_TIME_BUDGET)
    return lint_text(textwrap.dedent(text), path, DEFAULT_SETTINGS.with_(**settings)).diagnostics


TWO_SHAPES = """
from numba import cuda, float32

@cuda.jit
def k(x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    x[t] = s[63 - t]

def run(x):
    k[1, 64](x)
    k[1, 128](x)
"""


def test_a_finding_names_the_launches_it_holds_for():
    diags = _lint(TWO_SHAPES)
    assert {d.code for d in diags} == {"TL202"}
    for d in diags:
        assert d.message.endswith("(under the launch block=(128,1,1) from the call site at line 14)"), d.message
        # the grid is in the data, not in the words: the kernel reads no blockIdx
        assert d.data["launch"] == [{"block": [128, 1, 1], "source": "the call site at line 14", "kind": "call site",
                                     "grid": [1, 1, 1], "path": "k.py", "line": 14}]  # fmt: skip


def test_json_and_sarif_carry_the_launch(tmp_path):
    from click.testing import CliRunner

    from tolk_lint.cli import main

    f = tmp_path / "k.py"
    f.write_text(textwrap.dedent(TWO_SHAPES))
    res = CliRunner().invoke(main, ["check", "--no-cache", "--isolated", "--output-format", "json", str(f)])
    out = json.loads(res.output)
    assert out and all(d["data"]["launch"][0]["block"] == [128, 1, 1] for d in out)
    res = CliRunner().invoke(main, ["check", "--no-cache", "--isolated", "--output-format", "sarif", str(f)])
    results = json.loads(res.output)["runs"][0]["results"]
    assert results and all(r["properties"]["data"]["launch"][0]["kind"] == "call site" for r in results)


def test_no_shape_says_so_in_the_data():
    diags = _lint(TWO_SHAPES[: TWO_SHAPES.index("def run")].replace("s[63 - t]", "s[t]"), ignore=("TL205",))
    assert diags and all(d.data["launch"][0]["kind"] == "none" for d in diags)
    assert all("any block of at most 1024 threads" in d.data["launch"][0]["assumed"] for d in diags)


# -- TL205 -------------------------------------------------------------------------------------------------

REVERSE = TWO_SHAPES[: TWO_SHAPES.index("def run")]


def test_the_contract_replaces_the_errors_of_an_unknown_shape():
    diags = _lint(REVERSE)
    assert [d.code for d in diags] == ["TL205"]
    d = diags[0]
    assert "blockDim.x <= 64" in d.message and "declare it with `# tolk: launch block=(64,1,1)`" in d.message
    assert d.data["contract"]["dims"] == [64, 1, 1] and {n["line"] for n in d.data["needed_by"]} == {8, 10}
    assert d.span.line == 5 and d.severity.value == "warning"


def test_with_tl205_off_the_errors_stay():
    assert {d.code for d in _lint(REVERSE, ignore=("TL205",))} == {"TL202"}


def test_a_contract_search_out_of_budget_keeps_the_errors_and_says_why(monkeypatch):
    # the budget runs out inside the contract search: the findings for every
    # block stand (never a kernel called clean), each saying why no contract came
    from tolk_lint import budget
    from tolk_lint.launch import inference

    def out_of_time(*args):
        raise budget.BudgetExceeded("the launch contract search", "the file's time budget of 1 s ran out")

    monkeypatch.setattr(inference, "_infer", out_of_time)
    diags = _lint(REVERSE)
    assert {d.code for d in diags} == {"TL202"}
    assert all(inference.CUT_SHORT in [r.message for r in d.related] for d in diags)


def test_a_kernel_wrong_for_every_block_keeps_its_errors():
    racy = REVERSE.replace("    cuda.syncthreads()\n", "").replace("s[63 - t]", "s[(t + 1) % 64]")
    codes = sorted(d.code for d in _lint(racy))
    assert "TL201" in codes  # the race holds for two threads already
    off_by_one = REVERSE.replace("s[t] = x[t]", "s[t + 1] = x[t]")
    assert {d.code for d in _lint(off_by_one)} == {"TL202"}  # right up to 63 threads: no natural contract


TREE_NO_FIRST_BARRIER = """
from numba import cuda, float32
TPB = 128

@cuda.jit
def reduce_nosync(values, partials):
    sm = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    sm[tid] = values[cuda.grid(1)]
    s = TPB // 2
    while s > 0:
        if tid < s:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partials[cuda.blockIdx.x] = sm[0]
"""


def test_a_race_of_the_block_the_shared_array_is_sized_for_is_not_contracted_away():
    # race-free only up to 64 threads (no barrier before the first trip), but `sm`
    # is sized for 128: the contract is blockDim.x <= 128 and the race an error under it
    diags = _lint(TREE_NO_FIRST_BARRIER)
    [tl205] = [d for d in diags if d.code == "TL205"]
    assert tl205.data["contract"]["dims"] == [128, 1, 1], tl205.message
    assert "1 race(s) hold for the block its shared arrays are sized for" in tl205.message
    races = [d for d in diags if d.code == "TL201"]
    assert races and all(d.severity.value == "error" and "the launch contract TL205 inferred" in d.message
                         for d in races)  # fmt: skip
    # with the barrier the kernel is clean under the same contract
    fixed = TREE_NO_FIRST_BARRIER.replace("    s = TPB // 2\n", "    cuda.syncthreads()\n    s = TPB // 2\n")
    assert [d.code for d in _lint(fixed)] == ["TL205"]


def test_a_power_of_two_contract():
    """``t & (n - 1)`` is ``t`` for a power-of-two block only: any other
    size makes two threads store one element (a block of 3 already), so no
    bounded contract admits a warp, and the family of powers of two does."""
    pow2 = """
    from numba import cuda, float32

    @cuda.jit
    def masked(x):
        s = cuda.shared.array(1024, float32)
        t = cuda.threadIdx.x
        s[t & (cuda.blockDim.x - 1)] = x[t]
        cuda.syncthreads()
        x[t] = s[t]
    """
    [d] = _lint(pow2)
    assert d.code == "TL205" and "blockDim.x is a power of two <= 1024" in d.message, d.message
    assert d.data["contract"]["pow2"] is True
    assert {x.code for x in _lint(pow2, block=(96, 1, 1))} == {"TL201"}
    assert not _lint(pow2, block=(256, 1, 1))


def _contract_of(text: str) -> Contract:
    [d] = [d for d in _lint(text) if d.code == "TL205"]
    c = d.data["contract"]
    return Contract(tuple(c["dims"]), c["threads"], c["family"], c["pow2"])


SOUNDNESS_KERNELS = {
    "matmul": (FIXTURES / "numba" / "launch" / "matmul_docs_no_call_site.py").read_text(),
    "reverse": REVERSE,
    "stencil": (FIXTURES / "numba" / "launch" / "stencil_halo_no_call_site.py").read_text(),
}


@pytest.mark.parametrize("name", sorted(SOUNDNESS_KERNELS))
def test_clean_under_the_contract_is_clean_for_every_block_it_admits(name):
    """The contract is the proof of a lint under it: each block it admits
    (its largest, and smaller ones) is clean when given as the exact shape,
    and a block just outside it is not (the bound is exact)."""
    text = SOUNDNESS_KERNELS[name]
    c = _contract_of(text)
    big = c.largest()
    blocks = {big, tuple(max(1, n // 2) for n in big), (1, 1, 1), tuple(max(1, n - 3) for n in big)}
    for block in blocks:
        assert c.admits(block), (c, block)
        found = {d.code for d in _lint(text, block=block)}
        assert not found & {"TL201", "TL202"}, (block, found)
    outside = tuple(n + 1 if i == 0 else n for i, n in enumerate(big))
    assert not c.admits(outside)
    assert {d.code for d in _lint(text, block=outside)} & {"TL201", "TL202"}, outside


def test_contract_words():
    assert Contract((16, 16, 1), 256).describe() == "blockDim.x <= 16 and blockDim.y <= 16 (blockDim.z = 1)"
    assert Contract((256, 1, 1), 256).describe() == "blockDim.x <= 256 (blockDim.y = blockDim.z = 1)"
    assert Contract((1024, 1024, 1), 256, "product").describe() == "blockDim.x * blockDim.y <= 256 (blockDim.z = 1)"
    p = Contract((512, 1, 1), 512, "pow2", pow2=True)
    assert p.describe().startswith("blockDim.x is a power of two <= 512")
    assert p.admits((256, 1, 1)) and not p.admits((384, 1, 1)) and p.largest() == (512, 1, 1)
    assert Contract((1024, 1024, 1), 256, "product").largest() == (16, 16, 1)


# -- a PTX file with its CUDA source beside it -------------------------------------------------------------

PTX_OWN_WORD = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry own_word()
{
    .shared .align 4 .b8 s[128];
    .reg .b32 %r<5>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.s32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    ret;
}
"""

HOST_OF = 'extern "C" __global__ void own_word() {{}}\nvoid run() {{ own_word<<<1, {n}>>>(); }}\n'


def test_the_cu_beside_a_ptx_without_file_table_and_the_cache_follows_it(tmp_path):
    from tolk_lint.cache import Cache, lint_cached

    ptx = tmp_path / "own.sm80.ptx"
    ptx.write_text(PTX_OWN_WORD)
    cu = tmp_path / "own.cu"  # `own.sm80.ptx` is compiled from `own.cu`
    cu.write_text(HOST_OF.format(n=32))
    cache = Cache(str(tmp_path))
    first, hit = lint_cached(str(ptx), DEFAULT_SETTINGS, cache)
    assert not hit and not first.diagnostics  # 32 threads, 32 words
    again, hit = lint_cached(str(ptx), DEFAULT_SETTINGS, cache)
    assert hit and not again.diagnostics
    cu.write_text(HOST_OF.format(n=64))  # the launch changed: the cached result is stale
    second, hit = lint_cached(str(ptx), DEFAULT_SETTINGS, cache)
    assert not hit and [d.code for d in second.diagnostics] == ["TL202"]
    assert "from the launch `own_word<<<1, 64>>>` at own.cu:2" in second.diagnostics[0].message


def test_tl205_names_the_call_sites_whose_block_it_could_not_read():
    src = REVERSE + "\ndef run(x, tpb):\n    k[x.size // tpb, tpb](x)\n"
    [d] = _lint(src)
    assert d.code == "TL205"
    assert "the block of the call site at line 14 is not a constant" in d.message, d.message


def test_a_launch_inside_a_host_template_takes_the_instantiations_arguments():
    src = scan(r"""
template <int BLOCK_SIZE> __global__ void MatrixMulCUDA(float *C) {}
template <int block_size> void run(float *C) {
    dim3 threads(block_size, block_size);
    MatrixMulCUDA<block_size><<<dim3(4), threads>>>(C);
}
int main() {
    float *c;
    run<16>(c);
    run<2 * 16>(c);
}
""", "/x/mm.cu")  # fmt: skip
    [(b16, s16)] = [(s.block, s.source) for s in src.shapes_for(read_entry("_Z13MatrixMulCUDAILi16EEvPf"))]
    [(b32, _)] = [(s.block, s.source) for s in src.shapes_for(read_entry("_Z13MatrixMulCUDAILi32EEvPf"))]
    assert (b16, b32) == ((16, 16, 1), (32, 32, 1))
    assert s16 == "`dim3 threads(block_size, block_size)` at mm.cu:4 (with block_size = 16: `run<...>` is called so)"
