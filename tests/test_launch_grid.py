"""The grid a launch gives (`LaunchShape.grid`): read from CUDA host
launches and Numba call sites when it is a constant, joined over the
launches of one block as ranges, dropped when any launch's is not known, and
taken by the solver as bounds on ``nctaid``."""

from __future__ import annotations

import textwrap

from tolk_lint.config import DEFAULT_SETTINGS
from tolk_lint.engine import lint_text, parse, prepare
from tolk_lint.ir.printer import dump_kernel
from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import read_entry
from tolk_lint.launch.shapes import MAX_GRID, LaunchShape, as_grid, grid_hull, grid_text

HOST = """
__global__ void k(float *x, int n) { }
void fixed(float *x) {
    const int n = 65536;
    int block = 256;
    int grid = n / block;
    k<<<grid - 1, block>>>(x, n);
    k<<<dim3(4, 2), block>>>(x, n);
}
void other_block(float *x, int rows) {
    k<<<rows, 128>>>(x, 1);
}
void changed(float *x) {
    int g = 8;
    for (int r = 0; r < 3; r++) {
        k<<<g, 64>>>(x, r);
        g *= 2;
    }
    dim3 grid(16);
    grid.x += 1;
    k<<<grid, 32>>>(x, 0);
}
"""


def _by_block(text: str) -> dict:
    src = scan(text, "/src/h.cu")
    return {s.block: s for s in src.shapes_for(read_entry("_Z1kPfi"), 2) if s.block is not None}


ANY_X = (1, MAX_GRID[0])


def test_constant_grids_join_as_ranges_and_unknown_grids_give_what_their_form_says():
    got = _by_block(HOST)
    assert got[(256, 1, 1)].grid == ((4, 255), (1, 2), (1, 1))  # 255 blocks, and dim3(4, 2)
    assert got[(128, 1, 1)].grid == (ANY_X, (1, 1), (1, 1))  # `rows`: an int parameter, one block high
    assert got[(64, 1, 1)].grid == (ANY_X, (1, 1), (1, 1))  # `g *= 2` in the loop: an int all the same
    assert got[(32, 1, 1)].grid is None  # `grid.x += 1`: a dim3 changed after its declaration


def test_one_launch_of_unknown_x_widens_the_others():
    text = HOST.replace("k<<<rows, 128>>>(x, 1);", "k<<<rows, 256>>>(x, 1);")
    assert _by_block(text)[(256, 1, 1)].grid == (ANY_X, (1, 2), (1, 1))
    text = HOST.replace("k<<<rows, 128>>>(x, 1);", "k<<<dim3(rows, rows), 256>>>(x, 1);")
    assert _by_block(text)[(256, 1, 1)].grid == (ANY_X, (1, MAX_GRID[1]), (1, 1))


FORMS = """
__global__ void k(float *x, int n) { }
static int iDivUp(int a, int b) { return (a + b - 1) / b; }
static dim3 grid_for(int n) { return dim3(n, 2); }
void f(float *x, int n, dim3 given, bool wide) {
    KERNEL_LAUNCH;
}
"""


def _form(launch: str) -> object:
    text = FORMS.replace("KERNEL_LAUNCH", launch)
    [shape] = [s for s in scan(text, "/src/f.cu").shapes_for(read_entry("_Z1kPfi"), 2) if s.block is not None]
    return shape.grid


def test_the_form_of_a_grid_whose_value_is_not_known():
    assert _form("k<<<(n + 511) / 512, 512>>>(x, n)") == (ANY_X, (1, 1), (1, 1))
    assert _form("k<<<iDivUp(n, 512), 512>>>(x, n)") == (ANY_X, (1, 1), (1, 1))
    assert _form("k<<<dim3(n, 4), 512>>>(x, n)") == (ANY_X, (4, 4), (1, 1))
    assert _form("k<<<dim3(4, n), 512>>>(x, n)") == ((4, 4), (1, MAX_GRID[1]), (1, 1))
    assert _form("dim3 g(n, 3); k<<<g, 512>>>(x, n)") == (ANY_X, (3, 3), (1, 1))
    assert _form("dim3 g(n); g.z = 2; k<<<g, 512>>>(x, n)") is None  # a member set after the declaration
    assert _form("k<<<grid_for(n), 512>>>(x, n)") is None  # a function returning a dim3
    assert _form("k<<<given, 512>>>(x, n)") is None  # a dim3 parameter
    assert _form("k<<<wide ? dim3(n, 2) : dim3(n), 512>>>(x, n)") is None  # a choice
    assert grid_text((ANY_X, (3, 3), (1, 1))) == "(any,3,1)"


def test_grid_values_and_words():
    assert as_grid(255) == ((255, 255), (1, 1), (1, 1))
    assert as_grid((2, 3)) == ((2, 2), (3, 3), (1, 1))
    assert as_grid(0) is None and as_grid((1, 70000)) is None and as_grid(True) is None
    assert grid_hull([as_grid(2), as_grid(5)]) == ((2, 5), (1, 1), (1, 1))
    assert grid_hull([as_grid(2), None]) is None and grid_hull([]) is None
    assert grid_text(((2, 5), (1, 1), (1, 1))) == "(2..5,1,1)"
    shape = LaunchShape((256, 1, 1), "the call site at line 9", "call site", grid=((2, 5), (1, 1), (1, 1)))
    assert shape.words() == "grid=(2..5,1,1), block=(256,1,1) from the call site at line 9"
    data = shape.to_json()
    assert data["grid"] is None and data["grid_range"] == {"min": [2, 1, 1], "max": [5, 1, 1]}
    assert LaunchShape((256, 1, 1), "x", "host launch", grid=as_grid(3)).to_json()["grid"] == [3, 1, 1]


NUMBA = '''
from numba import cuda, float32

@cuda.jit
def k(out, x):
    sm = cuda.shared.array(64, float32)
    i = cuda.grid(1)
    sm[cuda.threadIdx.x] = x[i]
    cuda.syncthreads()
    out[i] = sm[i]

def run(out, x, blocks):
    k[GRID, 64](out, x)
'''


def _numba(grid_expr: str, extra: str = "") -> list:
    text = textwrap.dedent(NUMBA).replace("GRID", grid_expr) + extra
    return [d.code for d in lint_text(text, "k.py", DEFAULT_SETTINGS).diagnostics]


def test_a_numba_grid_bounds_the_block_index():
    assert _numba("1") == []  # one block: cuda.grid(1) < 64
    assert _numba("(1, 1)") == []
    assert _numba("2") == ["TL202"]
    assert _numba("blocks") == ["TL202"]  # not a constant: any grid
    # two sites, grids 1 and 2: the range 1..2, and block 1 leaves `sm`
    assert _numba("1", "    k[2, 64](out, x)\n") == ["TL202"]


NUMBA_BATCHES = '''
from numba import cuda, float32

TPB = 64

@cuda.jit
def scale(out, x):
    tile = cuda.shared.array(2 * TPB, float32)
    b = cuda.blockIdx.y
    t = cuda.threadIdx.x
    tile[b * TPB + t] = x[b, cuda.blockIdx.x * TPB + t]
    cuda.syncthreads()
    out[b, cuda.blockIdx.x * TPB + t] = tile[b * TPB + TPB - 1 - t]

def run(out, x, n, batches):
    scale[GRID, TPB](out, x)
'''


def test_a_numba_grid_by_its_form():
    # an integer grid is one block high: batch 0 only; a tuple with a
    # constant 2 for y: batches 0 and 1; a parameter for y: any batch
    def codes(grid: str) -> list:
        text = textwrap.dedent(NUMBA_BATCHES).replace("GRID", grid)
        return sorted(d.code for d in lint_text(text, "k.py", DEFAULT_SETTINGS).diagnostics)

    assert codes("(n + TPB - 1) // TPB") == []
    assert codes("math.ceil(n / TPB)") == []
    assert codes("((n + TPB - 1) // TPB, 2)") == []
    assert codes("((n + TPB - 1) // TPB, batches)") == ["TL202", "TL202"]


def test_the_grid_reaches_the_kernel_and_the_ir_dump():
    text = textwrap.dedent(NUMBA).replace("GRID", "1")
    module = parse(text, "k.py")
    prepare(module, DEFAULT_SETTINGS)
    (k,) = [k for k in module.kernels if k.name == "k"]
    assert k.launch.grid == ((1, 1), (1, 1), (1, 1))
    assert "launch grid=(1,1,1) block=(64,1,1)" in dump_kernel(k)


BLOCKS_CHANGED = """
__global__ void k(float *x, int n) { }
void conditional_member(float *x, int n) {
    dim3 threads(256);
    if (n < 256)
        threads.x = 128;
    k<<<1, threads>>>(x, n);
}
void doubled(float *x) {
    int blockSize = 64;
    blockSize *= 2;
    k<<<1, blockSize>>>(x, 0);
}
void conditional_declaration(float *x, int n) {
    int t = 512;
    if (n > 4) { t = 32; }
    k<<<1, t>>>(x, n);
}
void unconditional(float *x, int n) {
    dim3 threads(16);
    threads.y = 16;
    if (n > 0) {
        k<<<1, threads>>>(x, n);
    }
}
"""


def test_a_block_whose_variables_change_otherwise_is_not_read():
    # the block follows the grid's rule: a conditional `threads.x = 128` is
    # not the only block (nor is the declaration's 256), `blockSize *= 2`
    # is not the declaration's 64; an unconditional member assignment is read
    src = scan(BLOCKS_CHANGED, "/src/h.cu")
    shapes = src.shapes_for(read_entry("_Z1kPfi"), 2)
    assert sorted(s.block for s in shapes if s.block is not None) == [(16, 16, 1)]
    unread = [s.source for s in shapes if s.block is None]
    assert len(unread) == 3 and any("threads>>>" in u for u in unread) and any("blockSize" in u for u in unread)


def test_grids_and_blocks_computed_by_the_files_helpers_are_folded():
    text = """
__global__ void k(float *x, int n) { }
static unsigned iDivUp(unsigned a, unsigned b) { return (a % b != 0) ? (a / b + 1) : (a / b); }
static int blocks_for(int n, int per) { return (n + per - 1) / per; }
static int side(float f) { return 16; }
void run(float *x) {
    const int n = 1000;
    dim3 threads(min(n, 256));
    dim3 grid(iDivUp(n, 16), blocks_for(n, 500));
    k<<<grid, threads>>>(x, n);
    k<<<iDivUp(n, 128), iDivUp(n, 8)>>>(x, n);
    k<<<1, side(2.0f)>>>(x, n);
}
"""
    src = scan(text, "/src/h.cu")
    shapes = src.shapes_for(read_entry("_Z1kPfi"), 2)
    got = {s.block: s.grid for s in shapes if s.block is not None}
    assert got[(256, 1, 1)] == ((63, 63), (2, 2), (1, 1))
    assert got[(125, 1, 1)] == ((8, 8), (1, 1), (1, 1))
    assert len([s for s in shapes if s.block is None]) == 1  # `side(float)`: not run
