"""``tolk-lint validate ORIGINAL FIXED``: check a fixed kernel against its original.

    tolk-lint validate ORIGINAL FIXED [--kernel NAME] [--launch SPEC.toml]
                       [--simulate] [--gpu] [--output-format text|json]
                       [--block X,Y,Z] [--target sm_XX]

ORIGINAL and FIXED are the same kernel before and after ``tolk-lint fix
--unsafe-fixes`` (PTX ``.ptx`` files, or Numba ``.py`` files). The stages
run cheapest first, and each prints its verdict (pass, fail, unavailable,
skipped) and its figures:

(a) static      FIXED lints with no TL1xx/TL2xx error, TL204 proved for every
                trip, and no TL302 left for the arrays ORIGINAL staged;
(b) assembler   ``ptxas -v -arch=sm_80`` and ``sm_90`` on both: registers,
                shared bytes and spills side by side (Python kernels: their
                PTX from numba-cuda);
(c) interpreter both on the reference interpreter, same random inputs, a few
                blocks, under both cp.async policies: outputs bit-identical;
(d) simulator   with ``--simulate``, Python kernels under the Numba CUDA
                simulator: outputs bit-identical;
(e) gpu         with ``--gpu``, both on a GPU at the spec's GPU sizes:
                bit-identical outputs, CUDA-event medians, the speed-up, and
                compute-sanitizer's racecheck/synccheck where installed.

(c), (d) and (e) need the launch spec (``--launch``, a TOML file: grid,
block, each argument's dtype and shape or value; see docs/fixer.md); without
one they are skipped. The kernel is ``--kernel``, else the spec's
``kernel``, else the one kernel of ORIGINAL.

Exit status: 0 every stage that ran passed; 1 a stage failed; 2 usage error
(a missing file, a bad spec, no kernel to validate); 3 nothing failed but a
stage that was asked for could not run (``--gpu`` without a GPU, the
assembler without ptxas) -- an unavailable stage is never a pass.
"""

from __future__ import annotations

import json
import os
import sys

import click


@click.command("validate")
@click.argument("original", type=click.Path())
@click.argument("fixed", type=click.Path())
@click.option("--kernel", help="The kernel to validate (default: the spec's, or the file's only one).")
@click.option("--launch", "launch_path", type=click.Path(), help="The launch spec (TOML) for the stages that run.")
@click.option("--simulate", is_flag=True, help="Run Python kernels under the Numba CUDA simulator (stage d).")
@click.option("--gpu", is_flag=True, help="Run and time both kernels on a GPU (stage e).")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--block", help="The launch's block shape X,Y,Z (default: the spec's).")
@click.option("--target", help="Target architecture for the static stage (default: the PTX's .target).")
def command(original, fixed, kernel, launch_path, simulate, gpu, output_format, block, target) -> None:
    """Prove, assemble, run and time a fixed kernel against its original."""
    from tolk_lint.commands.options import settings_from_options
    from tolk_lint.validate.result import SKIPPED, StageResult, exit_status
    from tolk_lint.validate.spec import SpecError, load_spec

    texts = []
    for p in (original, fixed):
        try:
            with open(p, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError) as e:
            click.echo(f"error: cannot read {p}: {e}", err=True)
            sys.exit(2)
    language = _language(original)
    if language is None or _language(fixed) != language:
        click.echo("error: ORIGINAL and FIXED must both be .ptx or both be .py files", err=True)
        sys.exit(2)
    spec = None
    if launch_path:
        try:
            spec = load_spec(launch_path)
        except SpecError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
    cpu = spec.resolve() if spec else None
    settings = settings_from_options(None, None, target, block)
    if settings.block is None and cpu is not None:
        settings = settings.with_(block=cpu.block)
    kernel = kernel or (spec.raw.get("kernel") if spec else None) or _only_kernel(texts[0], original)
    if not kernel:
        click.echo("error: name the kernel to validate (--kernel NAME, or `kernel =` in the spec)", err=True)
        sys.exit(2)

    results: list[StageResult] = []
    emit = _printer(output_format)
    results.append(emit(_static(texts, original, fixed, kernel, settings)))
    results.append(emit(_assembler(texts, original, fixed, kernel, language, cpu)))
    if cpu is None:
        results.append(emit(StageResult("interpreter", SKIPPED, "no launch spec (--launch)")))
    else:
        from tolk_lint.validate.interpreter import run_interpreter

        results.append(emit(run_interpreter(texts[0], texts[1], original, kernel, cpu, fixed_path=fixed)))
    if simulate:
        results.append(emit(_simulator(original, fixed, kernel, language, cpu)))
    if gpu:
        results.append(emit(_gpu(texts, original, fixed, kernel, language, spec)))
    status = exit_status(results)
    if output_format == "json":
        click.echo(json.dumps({"kernel": kernel, "original": original, "fixed": fixed, "exit_status": status,
                               "stages": [r.to_json() for r in results]}, indent=2))  # fmt: skip
    else:
        verdicts = ", ".join(f"{r.stage} {r.verdict}" for r in results)
        click.echo(f"{kernel}: {verdicts} (exit {status})")
    sys.exit(status)


def _language(path: str) -> str | None:
    return {".ptx": "ptx", ".py": "python"}.get(os.path.splitext(path)[1].lower())


def _only_kernel(text: str, path: str) -> str | None:
    from tolk_lint.engine import parse

    module = parse(text, path)
    names = [k.name for k in module.kernels if k.is_entry]
    return names[0] if len(names) == 1 else None


def _printer(fmt: str):
    def emit(r):
        if fmt == "text":
            click.echo(f"({r.stage}) {r.verdict}: {r.summary}")
            for d in r.details:
                click.echo(f"    {d}")
        return r

    return emit


def _static(texts, original, fixed, kernel, settings):
    from tolk_lint.validate.static import run_static

    return run_static(texts[0], texts[1], original, kernel, settings, fixed_path=fixed)


def _assembler(texts, original, fixed, kernel, language, cpu):
    from tolk_lint.validate.assembler import run_assembler
    from tolk_lint.validate.result import UNAVAILABLE, StageResult

    if language == "ptx":
        return run_assembler(texts[0], texts[1], kernel)
    try:  # the Numba side's PTX, from numba-cuda's compile_ptx
        from tolk_lint.validate.numba_gpu import compile_ptx  # type: ignore[import-not-found]
    except ImportError:
        return StageResult("assembler", UNAVAILABLE, "numba-cuda's PTX is not available for Python kernels")
    try:
        ptx = [compile_ptx(p, kernel, cpu, (8, 0)) for p in (original, fixed)]
    except Exception as e:  # noqa: BLE001 - compiling through numba-cuda can fail many ways; say which
        return StageResult("assembler", UNAVAILABLE, f"numba-cuda could not compile the kernels: {e}")
    return run_assembler(ptx[0], ptx[1], kernel)


def _simulator(original, fixed, kernel, language, cpu):
    from tolk_lint.validate.result import SKIPPED, UNAVAILABLE, StageResult

    if language != "python":
        return StageResult("simulator", SKIPPED, "PTX kernels have no simulator stage (the interpreter runs them)")
    if cpu is None:
        return StageResult("simulator", UNAVAILABLE, "no launch spec (--launch)")
    try:
        from tolk_lint.validate.simulate import run_simulator  # type: ignore[import-not-found]
    except ImportError:
        return StageResult("simulator", UNAVAILABLE, "the Numba simulator stage is not installed")
    return run_simulator(original, fixed, kernel, cpu)


def _gpu(texts, original, fixed, kernel, language, spec):
    from tolk_lint.validate.result import UNAVAILABLE, StageResult

    if spec is None:
        return StageResult("gpu", UNAVAILABLE, "no launch spec (--launch)")
    launch, cpu = spec.resolve(gpu=True), spec.resolve()
    if language == "ptx":
        from tolk_lint.validate.gpu_ptx import run_gpu_ptx

        return run_gpu_ptx(texts[0], texts[1], kernel, launch, cpu)
    try:
        from tolk_lint.validate.numba_gpu import run_gpu  # type: ignore[import-not-found]
    except ImportError:
        return StageResult("gpu", UNAVAILABLE, "the Numba GPU stage is not installed")
    return run_gpu(original, fixed, kernel, launch)
