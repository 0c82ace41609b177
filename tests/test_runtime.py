"""tolk_lint.runtime, the cp.async module the TL302 fixer's Numba kernels call.

- Import: without numba-cuda it raises an ImportError naming the `validate`
  extra; with it, it imports numba, llvmlite and numpy only (no z3, lark,
  libcst, nor the rest of tolk_lint), on both paths.
- GPU path: the pipelined SGEMM fixtures and a 16-byte copy compile with
  `cuda.compile_ptx` for sm_80 and sm_90 to the expected cp.async forms,
  ptxas assembles them, and no shared load of a tile is placed before the
  wait and the barrier; bad calls are refused at typing time, by name.
- Simulator path: the poison model, unit by unit (in this process, calling
  the fallbacks directly), then the fixtures under NUMBA_ENABLE_CUDASIM=1 (in
  a subprocess: the variable is read when numba.cuda is first imported): the
  Form A / Form C / guarded pipelines give the synchronous kernel's bits, and
  every buggy pipeline gives different ones.

Everything that needs numba-cuda is skipped without it (CI installs the
`validate` extra, so it runs there).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
FIXER = REPO / "fixtures" / "fixer" / "numba"
MUTANTS = FIXER / "mutants"
SIM_RUNNER = Path(__file__).resolve().parent / "sim_runner.py"
NEEDS_NUMBA_CUDA = "tolk_lint.runtime needs numba-cuda: install the 'validate' extra"
SGEMM_SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"


def _python(code_or_args: list[str], simulator: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    env["NUMBA_ENABLE_CUDASIM"] = "1" if simulator else "0"
    return subprocess.run(
        [sys.executable, *code_or_args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def numba_cuda():
    return pytest.importorskip("numba_cuda", reason=NEEDS_NUMBA_CUDA)


# -- importing ---------------------------------------------------------------------------

BLOCK_NUMBA = """
import sys
class NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "numba_cuda", "llvmlite"):
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, NoNumba())
try:
    import tolk_lint.runtime
except ImportError as exc:
    print("ImportError:", exc)
"""


def test_without_numba_cuda_the_import_error_names_the_validate_extra():
    out = _python(["-c", BLOCK_NUMBA], simulator=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ImportError: tolk_lint.runtime needs numba-cuda"), out.stdout
    assert "pip install 'tolk-lint[validate]'" in out.stdout


LIST_MODULES = (
    "import json, sys, tolk_lint.runtime as r; print(json.dumps([r.SIMULATED, sorted(sys.modules)]))"
)


@pytest.mark.parametrize("simulator", [False, True], ids=["gpu path", "simulator"])
def test_it_imports_only_numba_llvmlite_and_numpy(numba_cuda, simulator):
    out = _python(["-c", LIST_MODULES], simulator=simulator)
    assert out.returncode == 0, out.stderr
    simulated, modules = json.loads(out.stdout)
    assert simulated is simulator
    tops = {m.split(".")[0] for m in modules}
    assert not tops & {"z3", "lark", "libcst", "click", "pygls"}, sorted(tops & {"z3", "lark", "libcst"})
    ours = {m for m in modules if m.split(".")[0] == "tolk_lint"}
    allowed = {"tolk_lint", "tolk_lint.version", "tolk_lint.runtime"}
    assert {m for m in ours if m not in allowed and not m.startswith("tolk_lint.runtime.")} == set()


# -- the GPU path: PTX -------------------------------------------------------------------


def _load_fixture(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"fixer_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compile_ptx(numba_cuda):
    from numba import cuda

    def trivial(x):
        x[0] = 1.0

    try:
        cuda.compile_ptx(trivial, "void(float32[::1])", cc=(8, 0))
    except Exception as exc:  # a missing NVRTC or libNVVM: not this module's fault
        pytest.skip(f"numba.cuda.compile_ptx does not work here (needs NVRTC and libNVVM): {exc}")
    cache: dict[tuple, str] = {}

    def compile_(function, signature: str, cc: tuple[int, int]) -> str:
        key = (function, signature, cc)
        if key not in cache:
            cache[key] = cuda.compile_ptx(function, signature, cc=cc)[0]
        return cache[key]

    return compile_


def _kernels():
    import runtime_kernels

    return {
        "form A": (_load_fixture(FIXER / "sgemm_tiled_form_a.py").fast_matmul.py_func, SGEMM_SIGNATURE),
        "guarded form A": (
            _load_fixture(FIXER / "sgemm_guarded_form_a.py").fast_matmul.py_func,
            SGEMM_SIGNATURE,
        ),
        "form C": (_load_fixture(FIXER / "sgemm_tiled_form_c.py").fast_matmul.py_func, SGEMM_SIGNATURE),
        "16-byte copy": (runtime_kernels.row_reverse_16_bytes, runtime_kernels.ROW_REVERSE_SIGNATURE),
    }


# The instructions each kernel must contain (as PTX text).
EXPECTED_PTX = {
    "form A": [
        "cp.async.ca.shared.global [%r",
        "], 4;",
        "cp.async.commit_group;",
        "cp.async.wait_group 0;",
        "bar.sync",
    ],
    "guarded form A": [
        "cp.async.ca.shared.global [%r",
        "], 4, %r",
        "cp.async.commit_group;",
        "cp.async.wait_group 0;",
    ],
    "form C": ["cp.async.wait_group 1;", "cp.async.wait_group 0;"],  # two literals, two instructions
    "16-byte copy": [
        "cp.async.cg.shared.global [%r",
        "], 16;",
        "cp.async.commit_group;",
        "cp.async.wait_group 0;",
    ],
}
CCS = [(8, 0), (9, 0)]


def _shared_loads_out_of_order(ptx: str) -> list[str]:
    """The `ld.shared` lines not preceded, in the text, by a
    `cp.async.wait_group` and then a `bar.sync`: a load LLVM moved above the
    wait (it may, for an asm without a memory clobber)."""
    bad, last_wait, last_barrier = [], -1, -1
    for n, line in enumerate(ptx.splitlines()):
        text = line.strip()
        if text.startswith("cp.async.wait_group"):
            last_wait = n
        elif text.startswith("bar.sync"):
            last_barrier = n
        elif text.startswith("ld.shared") and not 0 <= last_wait < last_barrier:
            bad.append(text)
    return bad


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
@pytest.mark.parametrize("name", list(EXPECTED_PTX))
def test_the_ptx_has_the_cp_async_forms(compile_ptx, name, cc):
    function, signature = _kernels()[name]
    ptx = compile_ptx(function, signature, cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    for text in EXPECTED_PTX[name]:
        assert text in ptx, f"{name}: no {text!r} in the PTX"
    assert "ld.shared" in ptx
    assert _shared_loads_out_of_order(ptx) == []


def test_the_order_check_sees_a_hoisted_load():
    hoisted = "ld.shared.f32 %f1, [%rd1];\ncp.async.wait_group 0;\nbar.sync 0;\nld.shared.f32 %f2, [%rd2];\n"
    assert _shared_loads_out_of_order(hoisted) == ["ld.shared.f32 %f1, [%rd1];"]


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
@pytest.mark.parametrize("name", list(EXPECTED_PTX))
def test_ptxas_assembles_it(compile_ptx, tmp_path, name, cc):
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not on PATH")
    function, signature = _kernels()[name]
    source = tmp_path / "kernel.ptx"
    source.write_text(compile_ptx(function, signature, cc))
    arch = f"sm_{cc[0]}{cc[1]}"
    out = subprocess.run([ptxas, f"-arch={arch}", str(source), "-o", str(tmp_path / "kernel.cubin")],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, (
        f"ptxas -arch={arch} failed: {out.stderr.strip()}\n(an 'Unsupported .version' means libNVVM is newer "
        f"than this ptxas: pin nvidia-nvvm to the ptxas's CUDA release, 13.0.88 for CUDA 13.0)"
    )


# The cases of runtime_kernels.REFUSED (named here: that module needs numba-cuda to import).
REFUSED_CASES = [
    "nbytes 2",
    "dtype mismatch",
    "element larger than the copy",
    "computed nbytes",
    "strided source of a 16-byte copy",
    "index of the wrong rank",
    "computed wait count",
    "wait count 8",
    "wait count -1",
]


@pytest.mark.parametrize("case", REFUSED_CASES)
def test_bad_calls_are_refused_at_typing_time(numba_cuda, case):
    import runtime_kernels
    from numba import cuda
    from numba.core.errors import TypingError

    assert set(REFUSED_CASES) == set(runtime_kernels.REFUSED)
    function, signature, words = runtime_kernels.REFUSED[case]
    with pytest.raises(TypingError) as caught:
        cuda.compile_ptx(function, signature, cc=(8, 0))
    assert words in str(caught.value)


# -- the simulator path: the poison model, in this process ------------------------------


@pytest.fixture(scope="module")
def sim(numba_cuda):
    """The simulator's fallbacks, called directly (this process runs the GPU
    path; the fallbacks need no simulated kernel to be exercised)."""
    from tolk_lint.runtime import simulator

    return simulator


def _in_a_fresh_thread(body):
    """Run `body` in a new thread (a CUDA thread's own, empty group queue)
    and re-raise what it raised."""
    failure: list[BaseException] = []

    def target():
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def _shared(shape, dtype, alignment=None):
    from numba.cuda.simulator import kernelapi

    return kernelapi.FakeCUDAShared(0).array(shape, dtype, alignment=alignment)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def test_a_copy_poisons_at_issue_and_lands_at_the_retiring_wait(sim):
    def body():
        dst = _shared((2, 4), np.float32, alignment=8)  # for the 8-byte copy
        src = np.arange(8, dtype=np.float32).reshape(2, 4)
        assert np.isnan(dst).all(), "a new shared array holds poison"
        dst[...] = -1
        sim.cp_async(dst, (0, 1), src, (1, 2), 4)
        assert np.isnan(dst[0, 1]) and _bits(dst)[0, 1] == 0x7FC0FFEE
        sim.commit_group()
        assert np.isnan(dst[0, 1]), "a commit lands nothing"
        sim.cp_async(dst, (1, 0), src, (0, 0), 8)
        sim.commit_group()
        sim.wait_group(1)
        assert dst[0, 1] == 6 and np.isnan(dst[1, :2]).all(), "wait_group(1) leaves the newest group"
        sim.wait_group(0)
        assert list(dst[1]) == [0, 1, -1, -1]

    _in_a_fresh_thread(body)


def test_uncommitted_copies_are_not_landed_and_queues_are_per_thread(sim):
    dst = _shared(4, np.int32)
    dst[...] = 0
    src = np.array([7, 8, 9, 10], dtype=np.int32)

    def issue_without_commit():
        sim.cp_async(dst, 0, src, 0, 4)
        sim.wait_group(0)

    def issue_and_commit():
        sim.cp_async(dst, 1, src, 1, 4)
        sim.commit_group()

    _in_a_fresh_thread(issue_without_commit)
    _in_a_fresh_thread(issue_and_commit)
    _in_a_fresh_thread(lambda: sim.wait_group(0))  # another thread's wait lands nothing of theirs
    assert list(_bits(dst)[:2]) == [0xDEADBEEF, 0xDEADBEEF]


def test_zero_fill_reads_src_bytes_and_zeroes_the_rest(sim):
    def body():
        dst = _shared(12, np.float32, alignment=16)
        dst[...] = -7
        src = np.arange(1, 9, dtype=np.float32)
        sim.cp_async_zfill(dst, 0, src, 4, 16, 8)
        sim.cp_async_zfill(dst, 4, src, 7, 4, 0)  # a clamped index, nothing read
        sim.cp_async_zfill(dst, 8, src, 0, 16, 16)
        sim.commit_group()
        sim.wait_group(0)
        assert list(dst) == [5, 6, 0, 0, 0, -7, -7, -7, 1, 2, 3, 4]
        assert not np.signbit(dst[2:5]).any(), "zero-fill writes +0.0"

    _in_a_fresh_thread(body)


SIM_REFUSALS = [
    (lambda sim, d, s: sim.cp_async(d, 0, s, 0, 2), ValueError, "nbytes must be one of 4, 8, 16"),
    (lambda sim, d, s: sim.cp_async(d, 0, s.astype(np.float64), 0, 4), TypeError, "same dtype"),
    (lambda sim, d, s: sim.cp_async_zfill(d, 0, s, 16, 4, 0), IndexError, "out of bounds"),
    (lambda sim, d, s: sim.cp_async(d, 14, s, 0, 16), IndexError, "run past the end of the last axis"),
    (lambda sim, d, s: sim.cp_async(d, 0, s, 0, 16), ValueError, "declare it with alignment=16"),
    (lambda sim, d, s: sim.cp_async(s, 0, d, 0, 4), TypeError, "dst must be a shared array"),
    (lambda sim, d, s: sim.cp_async_zfill(d, 0, s, 0, 4, 8), ValueError, "src_bytes must be in 0..4"),
    (lambda sim, d, s: sim.wait_group(8), ValueError, "0..7, got 8"),
    (lambda sim, d, s: sim.wait_group(-1), ValueError, "0..7, got -1"),
]


@pytest.mark.parametrize("call, error, words", SIM_REFUSALS, ids=[w for _, _, w in SIM_REFUSALS])
def test_the_fallbacks_refuse_what_the_gpu_path_refuses_or_cannot_check(sim, call, error, words):
    def body():
        with pytest.raises(error, match=re.escape(words)):
            call(sim, _shared(16, np.float32), np.zeros(16, dtype=np.float32))

    _in_a_fresh_thread(body)


def test_sixteen_byte_copies_need_aligned_offsets(sim):
    def body():
        dst = _shared(16, np.float32, alignment=16)
        src = np.arange(16, dtype=np.float32)
        with pytest.raises(ValueError, match="shared destination aligned to 16 bytes"):
            sim.cp_async(dst, 2, src, 0, 16)
        with pytest.raises(ValueError, match="global source aligned to 16 bytes"):
            sim.cp_async(dst, 0, src, 2, 16)
        sim.cp_async(dst, 4, src, 8, 16)
        sim.commit_group()
        sim.wait_group(0)
        assert list(dst[4:8]) == [8, 9, 10, 11]

    _in_a_fresh_thread(body)


def test_a_source_written_while_in_flight_is_a_race(sim):
    def body():
        dst = _shared(4, np.float32)
        src = np.zeros(4, dtype=np.float32)
        sim.cp_async(dst, 0, src, 0, 4)
        sim.commit_group()
        src[0] = 1
        with pytest.raises(RuntimeError, match="written while the copy was in flight"):
            sim.wait_group(0)

    _in_a_fresh_thread(body)


def test_poison_patterns_are_nan_for_floats_and_deadbeef_for_integers(sim):
    assert np.isnan(sim.poison(np.float16, 1)).all() and np.isnan(sim.poison(np.float64, 1)).all()
    assert np.isnan(sim.poison(np.complex64, 2).view(np.float32)).all()
    assert _bits(sim.poison(np.int32, 1))[0] == 0xDEADBEEF
    assert _bits(sim.poison(np.uint64, 1))[0] == 0xDEADBEEFDEADBEEF
    record = np.dtype([("a", np.float32), ("b", np.int8)])
    assert sim.poison(record, 3).view(np.uint8).tolist() == [0xEF] * 3 * record.itemsize


# -- the simulator path: the fixtures under NUMBA_ENABLE_CUDASIM=1 ----------------------


def _simulate(tmp_path_factory, cases: dict[str, tuple[Path, tuple[int, int], int]]) -> dict[str, np.ndarray]:
    """Run `cases` (name -> fixture file, grid, matrix side) in one
    simulator subprocess; their outputs C by name."""
    out = tmp_path_factory.mktemp("sim") / "out.npz"
    args = [f"{name}={path}:{grid[0]},{grid[1]}:{n}" for name, (path, grid, n) in cases.items()]
    done = _python([str(SIM_RUNNER), str(out), *args], simulator=True)
    assert done.returncode == 0, done.stderr[-4000:]
    with np.load(out) as results:
        return {name: results[name] for name in results.files}


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


# The pipelines on 2x2 blocks (2 tiles); the guarded ones on a 20x20 matrix
# (a ragged edge in both directions).  Two subprocesses of about 5 s each.
TILED = {
    "sync": (FIXER / "sgemm_tiled_sync.py", (2, 2), 32),
    "form A": (FIXER / "sgemm_tiled_form_a.py", (2, 2), 32),
    "form C": (FIXER / "sgemm_tiled_form_c.py", (2, 2), 32),
}
GUARDED = {
    "sync": (FIXER / "sgemm_guarded_sync.py", (2, 2), 20),
    "form A": (FIXER / "sgemm_guarded_form_a.py", (2, 2), 20),
}


@pytest.fixture(scope="module")
def tiled_runs(numba_cuda, tmp_path_factory):
    return _simulate(tmp_path_factory, TILED)


@pytest.fixture(scope="module")
def guarded_runs(numba_cuda, tmp_path_factory):
    return _simulate(tmp_path_factory, GUARDED)


def _check_same_bits_as_sync(runs: dict[str, np.ndarray], pipeline: str, n: int) -> None:
    import sim_runner

    a, b = sim_runner.inputs(n)
    np.testing.assert_allclose(runs["sync"], a @ b, rtol=1e-4, atol=1e-4)  # the reference is right
    assert _same_bits(runs[pipeline], runs["sync"])


@pytest.mark.parametrize("pipeline", ["form A", "form C"])
def test_a_correct_pipeline_gives_the_synchronous_kernels_bits(tiled_runs, pipeline):
    _check_same_bits_as_sync(tiled_runs, pipeline, TILED["sync"][2])


def test_the_guarded_pipeline_with_zero_fill_gives_the_synchronous_kernels_bits(guarded_runs):
    _check_same_bits_as_sync(guarded_runs, "form A", GUARDED["sync"][2])


# Each mutant with the fewest blocks that show its bug: one block (one tile)
# unless the bug needs a second tile (a wrong slot, a commit skipped mid-loop).
ONE_TILE = ((1, 1), 16)
TWO_TILES = ((2, 1), 32)
MUTANT_FILES = {
    "no wait": ("sgemm_form_a_no_wait.py", ONE_TILE),
    "wait_group(1) in form A": ("sgemm_form_a_wait_1.py", ONE_TILE),
    "commit inside the guard (form C)": ("sgemm_form_c_commit_in_guard.py", ONE_TILE),
    "no barrier before the next issue": ("sgemm_form_a_no_barrier.py", ONE_TILE),
    "wrong slot parity": ("sgemm_form_a_wrong_slot.py", TWO_TILES),
    "commit inside the guard (form A, harmless)": ("sgemm_form_a_commit_in_guard.py", TWO_TILES),
}
MUTANTS_RUN = {
    "sync, one tile": (FIXER / "sgemm_tiled_sync.py", *ONE_TILE),
    "sync, two tiles": (FIXER / "sgemm_tiled_sync.py", *TWO_TILES),
    **{name: (MUTANTS / file, *shape) for name, (file, shape) in MUTANT_FILES.items()},
}


@pytest.fixture(scope="module")
def mutant_runs(numba_cuda, tmp_path_factory):
    return _simulate(tmp_path_factory, MUTANTS_RUN)


def _reference_for(name: str) -> str:
    return "sync, one tile" if MUTANT_FILES[name][1] == ONE_TILE else "sync, two tiles"


@pytest.mark.parametrize("mutant", [m for m in MUTANT_FILES if "harmless" not in m])
def test_a_buggy_pipeline_gives_other_bits(mutant_runs, mutant):
    output, reference = mutant_runs[mutant], mutant_runs[_reference_for(mutant)]
    assert not _same_bits(output, reference)
    assert np.isnan(output).any(), "the difference comes from reading poison"


def test_a_commit_inside_the_guard_is_harmless_in_two_stage_form_a(mutant_runs):
    """wait_group(0) waits for every committed group, and each copy is still
    committed right after it is issued: no group count can shift, so the
    poison model rightly finds nothing (Form C's wait_group(1) does shift)."""
    name = "commit inside the guard (form A, harmless)"
    assert _same_bits(mutant_runs[name], mutant_runs[_reference_for(name)])
