"""The TL302 fixer's Numba rewrites, run: the simulator stage (d) of
`tolk-lint validate`, mutation tests, the acceptance kernels, the PTX of a
fixed kernel, and the GPU stage (e).

- Every fixed kernel of test_fixer_numba.FIXED gives its original's output
  bits under numba-cuda's simulator (tolk_lint.runtime's poison model: a
  read no wait protects reads NaN), on the launch spec's random inputs.
- Mutants of a fixed kernel (wait removed; `wait_group(1)` in Form A; the
  barrier before the next issue removed; the next tile issued into the slot
  being read), and two of Form C (commit inside the guard; no WAR barrier):
  the static re-lint reports TL204 AND the simulator sees other bits. A
  commit inside the guard in Form A is no bug (`wait_group(0)` retires every
  committed group, and each copy is committed right after it is issued), and
  both layers rightly find nothing.
- Every TL302 of ../shared/acceptance/numba gets a fix that lints clean and
  validates (skipped without ../shared); each needs a launch spec in
  tests/data/fixer/.
- `validate.numba_ptx.compile_ptx` gives the fixed kernel's cp.async PTX,
  which ptxas assembles and which lints with no TL204 either.
- `validate.numba_gpu.run_gpu`: on a GPU (marked `gpu`), bit-identical and
  timed; without one, unavailable, never a pass.

Everything that runs a kernel needs numba-cuda (the `validate` extra) and is
skipped without it. Each simulator run is one child process of a few seconds.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ACCEPTANCE
from fixer_support import FIXER, contexts, fix_text, tl302_copies
from test_fixer_numba import FIXED

from tolk_lint import engine
from tolk_lint.diagnostics import Fix
from tolk_lint.validate.result import FAIL, PASS, UNAVAILABLE, exit_status
from tolk_lint.validate.spec import Spec, load_spec

DATA = Path(__file__).resolve().parent / "data" / "fixer"
NEEDS = "the simulator stage needs numba-cuda: install the 'validate' extra"


@pytest.fixture(scope="module")
def numba_cuda():
    return pytest.importorskip("numba_cuda", reason=NEEDS)


@pytest.fixture(scope="module")
def simulator(numba_cuda):
    from tolk_lint.validate.simulate import run_simulator

    return run_simulator


def _fixed_file(tmp: Path, name: str, text: str) -> Path:
    out = tmp / f"{name.replace('/', '_')}_fixed.py"
    out.write_text(text)
    return out


# -- each fixed kernel under the simulator ------------------------------------------------


@pytest.mark.parametrize("name", list(FIXED))
def test_the_fixed_kernel_gives_the_originals_bits_under_the_simulator(simulator, tmp_path, name):
    spec_name, guarded = FIXED[name]
    path = FIXER / f"{name}.py"
    launch = load_spec(str(FIXER / f"{spec_name}.toml")).resolve()
    new, fix = fix_text(path.read_text(), str(path), launch.block, guarded)
    assert isinstance(fix, Fix), getattr(fix, "reason", fix)
    result = simulator(str(path), str(_fixed_file(tmp_path, name, new)), None, launch)
    assert result.verdict == PASS, (result.summary, result.details)
    assert result.figures["compared_elements"] > 0


def test_a_kernel_that_raises_fails_the_stage(simulator, tmp_path):
    path = FIXER / "sgemm_tiled_sync.py"
    broken = tmp_path / "broken.py"
    broken.write_text(path.read_text().replace("C[y, x] = tmp", "C[y, x] = tmp\n    C[y + 1000, x] = tmp"))
    launch = load_spec(str(FIXER / "sgemm.toml")).resolve()
    result = simulator(str(path), str(broken), None, launch)
    assert result.verdict == FAIL and "fixed" in result.summary and "IndexError" in result.summary


# -- mutants of a fixed kernel: both layers catch each bug ---------------------------------

IN_LOOP_WAIT = "        wait_group(0)\n        cuda.syncthreads()\n"
ISSUE_END = "            cp_async(sB, ((i + 1) & 1, ty, tx), B, (ty + (i + 1) * TPB, x), 4)\n        commit_group()\n"
MUTATIONS = {
    "wait removed": (IN_LOOP_WAIT, "        cuda.syncthreads()\n"),
    "wait_group(1) in Form A": (IN_LOOP_WAIT, "        wait_group(1)\n        cuda.syncthreads()\n"),
    "barrier before the next issue removed": (IN_LOOP_WAIT, "        wait_group(0)\n"),
    "wrong slot parity": ("cp_async(sA, ((i + 1) & 1, ty, tx)", "cp_async(sA, (i & 1, ty, tx)"),
    "commit inside the guard (harmless in Form A)": (ISSUE_END, ISSUE_END.replace("        commit_group()",
                                                                                  "            commit_group()")),
}  # fmt: skip
FORM_C_MUTANTS = {
    "commit inside the guard (Form C)": "sgemm_form_c_commit_in_guard.py",
    "no WAR barrier (Form C)": "sgemm_form_c_no_war_barrier.py",
}
BUGS = [m for m in MUTATIONS if "harmless" not in m] + list(FORM_C_MUTANTS)


@pytest.fixture(scope="module")
def fixed_sgemm() -> str:
    path = FIXER / "sgemm_tiled_sync.py"
    launch = load_spec(str(FIXER / "sgemm.toml")).resolve()
    new, fix = fix_text(path.read_text(), str(path), launch.block)
    assert isinstance(fix, Fix)
    return new


def _mutant(fixed_sgemm: str, name: str) -> str:
    if name in FORM_C_MUTANTS:
        return (FIXER / "mutants" / FORM_C_MUTANTS[name]).read_text()
    old, new = MUTATIONS[name]
    assert fixed_sgemm.count(old) == 1, f"the fixer's output changed: no single {old!r} to mutate"
    return fixed_sgemm.replace(old, new)


def _tl204(text: str) -> list[int]:
    ctx = contexts(text, "mutant.py", (16, 16, 1))[0]
    return sorted({d.span.line for d in engine.lint_text(text, "mutant.py", ctx.settings).diagnostics
                   if d.code == "TL204"})  # fmt: skip


@pytest.mark.parametrize("mutant", BUGS)
def test_the_static_proof_reports_tl204_on_each_buggy_pipeline(fixed_sgemm, mutant):
    assert _tl204(_mutant(fixed_sgemm, mutant)), mutant


def _four_tiles():
    """sgemm.toml on a 4 x 1 grid of 64 x 64 matrices: four tiles. A WAR race
    needs a third tile (trip i + 1 refilling the slot trip i reads), and
    shows under the simulator only when its thread interleaving lets a fast
    thread's copy poison the slot before a slow thread's read; one block row
    of four tiles made it show on every run tried here."""
    raw = dict(load_spec(str(FIXER / "sgemm.toml")).raw, sizes={"N": 64}, grid=["N // 16", 1, 1])
    return Spec(raw, "sgemm, four tiles").resolve()


@pytest.mark.parametrize("mutant", BUGS)
def test_the_simulator_sees_other_bits_for_each_buggy_pipeline(simulator, fixed_sgemm, tmp_path, mutant):
    launch = _four_tiles() if "WAR" in mutant else load_spec(str(FIXER / "sgemm.toml")).resolve()
    path = _fixed_file(tmp_path, "mutant", _mutant(fixed_sgemm, mutant))
    result = simulator(str(FIXER / "sgemm_tiled_sync.py"), str(path), None, launch)
    assert result.verdict == FAIL and "differ" in result.summary, (result.summary, result.details)


def test_a_commit_inside_the_guard_is_no_bug_in_form_a_and_neither_layer_says_so(simulator, fixed_sgemm, tmp_path):
    """`wait_group(0)` retires every committed group and each copy is
    committed right after it is issued, so skipping the empty commit of the
    last trip shifts no group: TL204 proves the mutant correct and the
    simulator gives the original's bits (the fixer still emits the
    unconditional commit, which deeper pipelines need)."""
    text = _mutant(fixed_sgemm, "commit inside the guard (harmless in Form A)")
    assert _tl204(text) == []
    launch = load_spec(str(FIXER / "sgemm.toml")).resolve()
    result = simulator(str(FIXER / "sgemm_tiled_sync.py"), str(_fixed_file(tmp_path, "harmless", text)), None, launch)
    assert result.verdict == PASS, result.details


# -- the acceptance kernels ---------------------------------------------------------------


def _acceptance_tl302() -> list[Path]:
    folder = ACCEPTANCE / "numba"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.py") if "TL302" in p.read_text())


@pytest.mark.skipif(not (ACCEPTANCE / "numba").is_dir(), reason="shared/acceptance/numba is not present")
@pytest.mark.parametrize("path", _acceptance_tl302(), ids=lambda p: p.name)
def test_every_acceptance_tl302_gets_a_fix_that_validates(simulator, tmp_path, path):
    spec = DATA / f"{path.stem}.toml"
    assert spec.exists(), f"write a launch spec for {path.name} in {spec}"
    launch = load_spec(str(spec)).resolve()
    text = path.read_text()
    ctx = contexts(text, str(path), launch.block)[0]
    assert tl302_copies(ctx), f"{path.name}: TL302 is expected"
    new, fix = fix_text(text, str(path), launch.block)
    assert isinstance(fix, Fix), getattr(fix, "reason", fix)
    again, second = fix_text(new, str(path), launch.block)
    assert second is None and again == new
    result = simulator(str(path), str(_fixed_file(tmp_path, path.stem, new)), None, launch)
    assert result.verdict == PASS, (result.summary, result.details)


def test_the_acceptance_set_has_a_numba_tl302():
    if not (ACCEPTANCE / "numba").is_dir():
        pytest.skip("shared/acceptance/numba is not present")
    assert _acceptance_tl302(), "no Numba acceptance kernel expects TL302"


# -- the fixed kernel's PTX ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ptx_of(numba_cuda, fixed_sgemm, tmp_path_factory):
    from tolk_lint.validate.numba_ptx import compile_ptx

    path = tmp_path_factory.mktemp("ptx") / "sgemm_fixed.py"
    path.write_text(fixed_sgemm)
    launch = load_spec(str(FIXER / "sgemm.toml")).resolve()
    try:
        return {cc: compile_ptx(str(path), None, launch, cc) for cc in ((8, 0), (9, 0))}
    except Exception as exc:  # noqa: BLE001 - NVRTC or libNVVM missing: not this module's fault
        pytest.skip(f"numba.cuda.compile_ptx does not work here: {exc}")


def test_compile_ptx_gives_the_fixed_kernels_cp_async_ptx(ptx_of):
    for (major, minor), ptx in ptx_of.items():
        assert f".target sm_{major}{minor}" in ptx
        assert len(re.findall(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4;", ptx)) == 4
        assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 0;" in ptx


def test_ptxas_assembles_it_and_the_ptx_lints_with_no_tl204(ptx_of, tmp_path):
    ptx = ptx_of[(8, 0)]
    ptxas = shutil.which("ptxas")
    if ptxas is not None:
        src = tmp_path / "k.ptx"
        src.write_text(ptx)
        done = subprocess.run([ptxas, "-arch=sm_80", str(src), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
    ctx = contexts(ptx, "fixed.ptx", (16, 16, 1))[0]
    diags = engine.lint_text(ptx, "fixed.ptx", ctx.settings).diagnostics
    assert [d for d in diags if d.code.startswith(("TL1", "TL2"))] == []


# -- the GPU stage ---------------------------------------------------------------------------


def _gpu_present() -> bool:
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def test_without_a_gpu_the_gpu_stage_is_unavailable_never_a_pass(numba_cuda, fixed_sgemm, tmp_path):
    if _gpu_present():
        pytest.skip("a GPU is present: see the gpu-marked test")
    from tolk_lint.validate.numba_gpu import run_gpu

    launch = load_spec(str(FIXER / "sgemm.toml")).resolve(gpu=True)
    result = run_gpu(str(FIXER / "sgemm_tiled_sync.py"), str(_fixed_file(tmp_path, "g", fixed_sgemm)), None, launch)
    assert result.verdict == UNAVAILABLE and exit_status([result]) == 3
    assert "GPU" in result.summary


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["sgemm_tiled_sync", "staged/igemm", "staged/sgemm_ragged"])
def test_on_a_gpu_the_fixed_kernel_is_bit_identical_and_timed(numba_cuda, tmp_path, name):
    if not _gpu_present():
        pytest.skip("no CUDA GPU here")
    from tolk_lint.validate.numba_gpu import run_gpu

    spec_name, guarded = FIXED[name]
    path = FIXER / f"{name}.py"
    spec = load_spec(str(FIXER / f"{spec_name}.toml"))
    new, fix = fix_text(path.read_text(), str(path), spec.resolve().block, guarded)
    assert isinstance(fix, Fix)
    result = run_gpu(str(path), str(_fixed_file(tmp_path, name, new)), None, spec.resolve(gpu=True))
    assert result.verdict == PASS, (result.summary, result.details)
    assert result.figures["runs"] >= 20 and result.figures["speedup"] > 0
    print(f"{name}: {result.summary}")
