"""The PTX fixer (TL302's "Pipeline this loop with cp.async") and `tolk-lint validate`.

Each CUDA C kernel of fixtures/fixer/cuda is compiled with nvcc (skipped
without it), fixed with ``fix --unsafe-fixes``, fixed again (nothing
changes), and validated: (a) static, (b) ptxas, (c) the interpreter under
both cp.async policies must pass with its launch spec (the ``.toml`` beside
it). The TL302 kernels of the acceptance set (../shared/acceptance, skipped
without it) go through the same. Then the file-safety contract of ``fix``
and the GPU stage's answer without a GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from tolk_lint.cli import main as cli
from tolk_lint.testing import FIXTURE_TIME_BUDGET, FixtureError, compile_cuda

ROOT = Path(__file__).resolve().parent.parent
FIXER = ROOT / "fixtures" / "fixer"
CUDA = FIXER / "cuda"
ACCEPTANCE = ROOT.parent / "shared" / "acceptance" / "cuda"

# (fixture, block): the kernels the fixer must fix and validate
FIXED = [
    ("dot_tiles_1d_f32", "256,1,1"),
    ("igemm_i32", "16,16,1"),
    ("sgemm_guarded_ragged_k", "16,16,1"),
    ("sgemm_float4_64x64", "256,1,1"),
    ("stencil_f64_1d", "128,1,1"),
    ("hgemm_f16_simt", "16,16,1"),
    ("wmma_f16_16x32", "64,1,1"),
]
# acceptance PTX with TL302: (file, block, spec)
ACCEPTED = [
    ("sgemm_tiled.sm80.ptx", "16,16,1", "sgemm_tiled16.toml"),
    ("sgemm_tiled.sm90.ptx", "16,16,1", "sgemm_tiled16.toml"),
    ("wmma_staged_sync.sm80.ptx", "128,1,1", "wmma_gemm_staged_sync.toml"),
    ("wmma_staged_sync.sm90.ptx", "128,1,1", "wmma_gemm_staged_sync.toml"),
]


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def compiled(name: str, tmp_path: Path) -> Path:
    try:
        return compile_cuda(CUDA / f"{name}.cu", out_dir=str(tmp_path))
    except FixtureError as e:
        pytest.skip(str(e))


def fix(path: Path, block: str, *extra: str):
    # the fix is offered only once proved, and the proof shares the file's time
    # budget: the fixture harness's budget keeps a loaded machine from ending it
    return run("fix", "--unsafe-fixes", "--block", block, "--time-budget", str(FIXTURE_TIME_BUDGET), *extra, str(path))


def validate(original: Path, fixed: Path, spec: Path, *extra: str) -> dict:
    r = run("validate", str(original), str(fixed), "--launch", str(spec), "--output-format", "json", *extra)
    out = json.loads(r.output)
    out["exit"] = r.exit_code
    return out


def stages(report: dict) -> dict[str, str]:
    return {s["stage"]: s["verdict"] for s in report["stages"]}


def fix_and_validate(original: Path, block: str, spec: Path, tmp_path: Path) -> dict:
    fixed = tmp_path / (original.stem + ".fixed.ptx")
    shutil.copyfile(original, fixed)
    r = fix(fixed, block)
    assert "Fixed" in r.output, r.output
    text = fixed.read_text()
    assert "cp.async.commit_group" in text and "cp.async.wait_group 0" in text
    again = fix(fixed, block)
    assert fixed.read_text() == text, "a second fix changed the file"
    assert "No fixes available" in again.output
    report = validate(original, fixed, spec)
    assert stages(report) == {"static": "pass", "assembler": "pass", "interpreter": "pass"}, report
    assert report["exit"] == 0
    return report


# the TL302 fixtures of fixtures/cuda/staging, with their specs in fixtures/fixer/staging
STAGING = [
    ("mma_sync_staged_sync", "128,1,1", "mma_sync_staged_sync.toml"),
    ("wmma_staged_sync_colmajor_b", "256,1,1", "wmma_staged_sync_colmajor_b.toml"),
    ("tile_copy_scaled", "16,16,1", "sgemm_scaled_tiles.toml"),
]


@pytest.mark.nvcc
@pytest.mark.parametrize("name, block, spec", STAGING, ids=[n for n, _, _ in STAGING])
def test_staging_fixture_is_fixed_and_validated(name, block, spec, tmp_path):
    try:
        ptx = compile_cuda(ROOT / "fixtures" / "cuda" / "staging" / f"{name}.cu", out_dir=str(tmp_path))
    except FixtureError as e:
        pytest.skip(str(e))
    fix_and_validate(ptx, block, FIXER / "staging" / spec, tmp_path)


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("name, block", FIXED, ids=[n for n, _ in FIXED])
def test_fixture_is_fixed_and_validated(name, block, tmp_path):
    report = fix_and_validate(compiled(name, tmp_path), block, CUDA / f"{name}.toml", tmp_path)
    asm = next(s for s in report["stages"] if s["stage"] == "assembler")
    for arch in ("sm_80", "sm_90"):
        a, b = asm["figures"][arch]["original"], asm["figures"][arch]["fixed"]
        assert b["shared_bytes"] == 2 * a["shared_bytes"], (arch, a, b)


@pytest.mark.slow
@pytest.mark.parametrize("name, block, spec", ACCEPTED, ids=[n for n, _, _ in ACCEPTED])
def test_acceptance_kernel_is_fixed_and_validated(name, block, spec, tmp_path):
    src = ACCEPTANCE / name
    if not src.exists():
        pytest.skip("the acceptance set is not beside the repository")
    original = tmp_path / name
    shutil.copyfile(src, original)
    fix_and_validate(original, block, FIXER / "acceptance" / spec, tmp_path)


def test_every_fixture_kernel_has_a_launch_spec():
    for cu in CUDA.glob("*.cu"):
        if "TL302" in cu.read_text():
            assert (cu.with_suffix(".toml")).exists(), f"{cu.name} has no launch spec"


def test_the_rewrite_is_form_a_with_literal_waits(tmp_path):
    """The acceptance SGEMM's rewrite, line by line where it matters: doubled
    arrays, tile 0 before the loop, wait + barrier + guarded issue + an
    unconditional commit in the loop, the drain after it, every wait count a
    literal 0, the .loc of the copy on each cp.async, and every line that is
    not the copies', the reads' or the trailing barrier's kept as it was."""
    src = ACCEPTANCE / "sgemm_tiled.sm80.ptx"
    if not src.exists():
        pytest.skip("the acceptance set is not beside the repository")
    path = tmp_path / "k.ptx"
    shutil.copyfile(src, path)
    before = path.read_text().splitlines()
    fix(path, "16,16,1")
    after = path.read_text().splitlines()
    assert any("sA[2048]" in ln for ln in after) and any("sB[2048]" in ln for ln in after)
    waits = [ln.strip() for ln in after if "wait_group" in ln]
    assert waits == ["cp.async.wait_group 0;"] * 2
    copies = [i for i, ln in enumerate(after) if "cp.async.ca.shared.global" in ln]
    assert len(copies) == 4  # tile 0 and tile k + 1, for each of sA and sB
    for i in copies:
        loc = next(after[j] for j in range(i - 1, 0, -1) if ".loc" in after[j])
        assert loc.split()[1:3] in (["1", "21"], ["1", "22"]), loc
    loop = after.index("$L__BB0_2:")
    head = after[loop:]
    w = next(i for i, ln in enumerate(head) if "wait_group" in ln)
    assert head[w + 1].strip() == "bar.sync \t0;"
    commit = next(i for i, ln in enumerate(head) if "commit_group" in ln)
    assert head[commit - 1].startswith("$L__tolk_")  # after the skip label: every trip commits
    assert sum("bar.sync" in ln for ln in head[: head.index("$L__BB0_3:")]) == 1  # one barrier a trip
    kept = [ln for ln in before if not any(x in ln for x in ("ld.global.nc.f32", "st.shared.f32", "[%r8", "[%r7",
                                                                 "E2sA[", "E2sB["))]  # fmt: skip
    rest = list(after)
    for ln in kept:  # every other line, in order, byte for byte
        if ln.strip() == "bar.sync \t0;":
            continue
        assert ln in rest, ln
        rest = rest[rest.index(ln) + 1 :]


@pytest.mark.nvcc
def test_not_fixable_says_why(tmp_path):
    """A loop nvcc unrolled four times (four copies and barriers a trip) is
    not pipelined: TL302 says why in a note, and carries no fix."""
    src = CUDA / "dot_tiles_1d_f32.cu"
    unrolled = tmp_path / "dot_unrolled.cu"
    unrolled.write_text(src.read_text().replace("#pragma unroll 1\n", ""))
    try:
        ptx = compile_cuda(unrolled, out_dir=str(tmp_path))
    except FixtureError as e:
        pytest.skip(str(e))
    r = run("check", "--unsafe-fixes", "--block", "256,1,1", "--output-format", "json", "--exit-zero", str(ptx))
    diags = [d for d in json.loads(r.output) if d["code"] == "TL302"]
    assert diags and all(d["fix"] is None for d in diags)
    for d in diags:
        assert d["data"]["fixable"] is False and d["data"]["not_fixable"]
        assert any(rel["message"].startswith("no fix:") for rel in d["related"])


@pytest.mark.nvcc
def test_check_works_out_the_pipeline_only_when_asked(tmp_path):
    """The proof of TL302's fix is a second lint of the rewritten file, so a
    plain `check` does not run it: the finding carries no fix and a note
    points at `fix --unsafe-fixes`; `check --unsafe-fixes` carries the fix."""
    ptx = compiled("dot_tiles_1d_f32", tmp_path)
    args = ("check", "--block", "256,1,1", "--output-format", "json", "--exit-zero", str(ptx))
    plain = [d for d in json.loads(run(*args).output) if d["code"] == "TL302"]
    asked = [d for d in json.loads(run(*args[:1], "--unsafe-fixes", *args[1:]).output) if d["code"] == "TL302"]
    assert plain and [d["line"] for d in plain] == [d["line"] for d in asked]
    for d in plain:
        assert d["fix"] is None and "fixable" not in d["data"]
        assert any("fix --unsafe-fixes" in rel["message"] for rel in d["related"])
    assert all(d["fix"] is not None and d["data"]["fixable"] for d in asked)


@pytest.mark.nvcc
def test_halves_whose_runs_are_not_aligned_take_the_element_copies(tmp_path):
    """The f16 GEMM with K = 20: A's rows are 40 bytes apart, so its 16-byte
    runs are not aligned in global memory; the block agrees on that before
    the loop and copies each half as the original did -- still the same bits
    (the arrays are padded so that the ragged K reads stay inside them)."""
    import tomllib

    original = compiled("hgemm_f16_simt", tmp_path)
    fixed = tmp_path / "fixed.ptx"
    shutil.copyfile(original, fixed)
    fix(fixed, "16,16,1")
    spec = tomllib.loads((CUDA / "hgemm_f16_simt.toml").read_text())
    spec["sizes"]["K"] = 20
    spec["args"][0]["shape"] = ["M + 2", "K"]
    spec["args"][1]["shape"] = ["K + 12", "N"]
    path = tmp_path / "ragged.toml"
    path.write_text(_toml(spec))
    report = validate(original, fixed, path)
    assert stages(report)["interpreter"] == "pass", report


def _toml(d: dict, prefix: str = "") -> str:
    """A small TOML writer for the launch specs the tests change."""
    out, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            tables.append((k, v))
        else:
            out.append(f"{k} = {json.dumps(v)}")
    for k, v in tables:
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.append(f"[{name}]")
            out.append(_toml(v, name + "."))
        else:
            for item in v:
                out.append(f"[[{name}]]")
                out.append(_toml(item, name + "."))
    return "\n".join(out) + "\n"


@pytest.mark.nvcc
def test_the_interpreter_computes_the_tensor_core_product(tmp_path):
    """wmma.load / mma / store in the interpreter: the fixture's C is A @ B (float32 sums of exact products)."""
    import numpy as np

    from tolk_lint.validate.inputs import make_arguments
    from tolk_lint.validate.interpreter import _kernel, chosen_blocks, run_once
    from tolk_lint.validate.spec import load_spec

    ptx = compiled("wmma_f16_16x32", tmp_path)
    launch = load_spec(str(CUDA / "wmma_f16_16x32.toml")).resolve()
    args = make_arguments(launch)
    k = _kernel(ptx.read_text(), str(ptx), "wmma_f16_16x32", launch.block)
    out, problems = run_once(k, launch, args, "latest", chosen_blocks(launch.grid, 8))
    assert not problems
    want = args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.allclose(out["C"], want, rtol=1e-5, atol=1e-4)


@pytest.mark.nvcc
def test_doubled_tiles_that_do_not_fit_get_no_fix(tmp_path):
    path = compiled("sgemm_no_fit", tmp_path)
    before = path.read_bytes()
    r = fix(path, "32,8,1")
    assert "No fixes available" in r.output
    assert path.read_bytes() == before
    report = json.loads(run("check", "--block", "32,8,1", "--output-format", "json", "--exit-zero",
                            str(path)).output)  # fmt: skip
    assert {d["code"] for d in report} == {"TL303"}


# -- file safety ------------------------------------------------------------------------------------


def _sgemm(tmp_path: Path) -> Path:
    src = ACCEPTANCE / "sgemm_tiled.sm80.ptx"
    if not src.exists():
        pytest.skip("the acceptance set is not beside the repository")
    path = tmp_path / "k.ptx"
    shutil.copyfile(src, path)
    return path


def test_diff_writes_nothing(tmp_path):
    path = _sgemm(tmp_path)
    before = path.read_bytes()
    r = fix(path, "16,16,1", "--diff")
    assert r.exit_code == 1 and "+\tcp.async.commit_group;" in r.output
    assert path.read_bytes() == before


def test_the_write_is_atomic_and_keeps_the_mode(tmp_path):
    path = _sgemm(tmp_path)
    os.chmod(path, 0o640)
    fix(path, "16,16,1")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.ptx"]  # no temporary file left


def test_a_file_changed_since_it_was_linted_is_refused(tmp_path, monkeypatch):
    import tolk_lint.engine as engine

    path = _sgemm(tmp_path)
    real = engine.lint_text
    calls = []

    def lint_and_edit(text, p, *a, **k):
        calls.append(p)
        if len(calls) == 1:  # someone saves the file while it is being linted
            path.write_text(text + "// edited\n")
        return real(text, p, *a, **k)

    monkeypatch.setattr(engine, "lint_text", lint_and_edit)
    r = fix(path, "16,16,1")
    assert r.exit_code == 2
    assert "changed since it was linted; nothing written" in r.output
    assert path.read_text().endswith("// edited\n") and "cp.async" not in path.read_text()


def test_a_kernel_the_proof_does_not_cover_is_left_untouched(tmp_path):
    """Two kernels in one file: the SGEMM is fixed, the other (whose copies
    round their values on the way, so they are not tile copies: no TL302,
    no proof) stays byte for byte."""
    src = ACCEPTANCE / "sgemm_tiled.sm80.ptx"
    if not src.exists():
        pytest.skip("the acceptance set is not beside the repository")
    text = src.read_text()
    other = text[text.index(".visible .entry"):text.index("\t.file")].replace("sgemm_tiled16", "other_kernel")
    other = other.replace(".maxntid 256, 1, 1", ".maxntid 64, 1, 1")
    path = tmp_path / "two.ptx"
    path.write_text(text.replace("\t.file", other + "\t.file", 1))
    fix(path, "16,16,1")
    fixed = path.read_text()
    assert fixed.count("cp.async.commit_group") == 4  # both kernels are the same SGEMM: both fixed
    # now one kernel the proof cannot cover: its copy feeds a conversion
    broken = other.replace("st.shared.f32 \t[%r5], %f6;", "cvt.rzi.f32.f32 \t%f6, %f6;\n\tst.shared.f32 \t[%r5], %f6;")
    broken = broken.replace("st.shared.f32 \t[%r6], %f7;", "cvt.rzi.f32.f32 \t%f7, %f7;\n\tst.shared.f32 \t[%r6], %f7;")
    path.write_text(text.replace("\t.file", broken + "\t.file", 1))
    fix(path, "16,16,1")
    fixed = path.read_text()
    assert broken in fixed  # untouched
    assert fixed.count("cp.async.commit_group") == 2


# -- validate without a GPU -------------------------------------------------------------------------


def _fixed_sgemm(tmp_path: Path) -> tuple[Path, Path]:
    original = _sgemm(tmp_path)
    fixed = tmp_path / "k.fixed.ptx"
    shutil.copyfile(original, fixed)
    fix(fixed, "16,16,1")
    return original, fixed


def test_gpu_stage_without_a_gpu_is_unavailable_and_exits_3(tmp_path):
    from tolk_lint.validate.gpu_ptx import open_device

    if open_device()[0] is not None:
        pytest.skip("a GPU is present")
    original, fixed = _fixed_sgemm(tmp_path)
    report = validate(original, fixed, FIXER / "acceptance" / "sgemm_tiled16.toml", "--gpu")
    gpu = next(s for s in report["stages"] if s["stage"] == "gpu")
    assert gpu["verdict"] == "unavailable" and gpu["summary"].startswith("no GPU")
    assert report["exit"] == 3


def test_gpu_module_runs_alone_without_a_gpu(tmp_path):
    from tolk_lint.validate import gpu_ptx

    if gpu_ptx.open_device()[0] is not None:
        pytest.skip("a GPU is present")
    original, fixed = _fixed_sgemm(tmp_path)
    spec = str(FIXER / "acceptance" / "sgemm_tiled16.toml")
    assert gpu_ptx.main([str(original), str(fixed), "--launch", spec]) == 3
    assert gpu_ptx.main([str(original), str(fixed), "--launch", str(tmp_path / "none.toml")]) == 2


@pytest.mark.gpu
def test_gpu_stage_on_a_gpu(tmp_path):
    from tolk_lint.validate.gpu_ptx import open_device

    if open_device()[0] is None:
        pytest.skip("no GPU")
    original, fixed = _fixed_sgemm(tmp_path)
    report = validate(original, fixed, FIXER / "acceptance" / "sgemm_tiled16.toml", "--gpu")
    gpu = next(s for s in report["stages"] if s["stage"] == "gpu")
    assert gpu["verdict"] == "pass", gpu
    assert gpu["figures"]["runs"] >= 20 and gpu["figures"]["speedup"] > 0


def test_validate_usage_errors(tmp_path):
    original, fixed = _fixed_sgemm(tmp_path)
    assert run("validate", str(original), str(tmp_path / "missing.ptx")).exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("block = [16, 16]\n")
    assert run("validate", str(original), str(fixed), "--launch", str(bad)).exit_code == 2
