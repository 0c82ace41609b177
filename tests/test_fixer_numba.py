"""The TL302 fixer's Numba rewrite (tolk_lint.fix.numba_pipeline), statically.

- Every synchronously staged kernel of fixtures/fixer/numba/staged (and the
  Numba documentation's SGEMMs) gets an unsafe fix whose text is Form A:
  slot axes, the prologue, wait / barrier / next issue / commit in the
  trip, the compute on the trip's slot, the drain, the runtime import; the
  user's other lines and comments stay as they were.
- The fixed file lints with no TL1xx/TL2xx error and no TL302 (the proof
  the fix is offered on), and a second fix finds nothing to change.
- What cannot be rewritten exactly is refused with a reason, and nothing
  is offered: 2-byte elements, tiles too big to double (TL303), a non-zero
  else-value, a loop with a varying trip count or a `break`, a copy whose
  index the loop changes, a source the kernel writes, a staged array used
  outside the loop.

The simulator runs of the same fixes, the mutation tests and the acceptance
kernels are in test_fixer_numba_validate.py.
"""

from __future__ import annotations

import textwrap

import pytest
from fixer_support import FIXER, STAGED, contexts, copies_for, fix_text, tl302_copies

from tolk_lint import engine
from tolk_lint.diagnostics import Applicability, Fix, Severity
from tolk_lint.fix.numba_pipeline import pipeline_fix, text_edits
from tolk_lint.fix.outcome import FIX_TITLE, NotFixable
from tolk_lint.validate.spec import load_spec

# fixture -> (launch spec, guarded: needs TL302 to see guarded copies, see fixer_support)
FIXED = {
    "staged/tile_sums_1d": ("staged/tile_sums_1d", False),
    "staged/matvec_range": ("staged/matvec_range", False),
    "staged/igemm": ("staged/igemm", False),
    "staged/dgemm": ("staged/dgemm", False),
    "staged/stencil_halo": ("staged/stencil_halo", False),
    "staged/weighted_gather": ("staged/weighted_gather", False),
    "staged/sgemm_ragged": ("staged/sgemm_ragged", True),
    "staged/column_sums_guarded": ("staged/column_sums_guarded", True),
    "staged/repeated_sweeps": ("staged/repeated_sweeps", False),
    "sgemm_tiled_sync": ("sgemm", False),
    "sgemm_guarded_sync": ("sgemm", True),
}


def _case(name: str):
    spec_name, guarded = FIXED[name]
    path = FIXER / f"{name}.py"
    return path, load_spec(str(FIXER / f"{spec_name}.toml")).resolve(), guarded


@pytest.fixture(scope="module")
def fixed() -> dict:
    """name -> (original text, fixed text, fix), each fixture fixed once."""
    out = {}
    for name in FIXED:
        path, launch, guarded = _case(name)
        text = path.read_text()
        new, fix = fix_text(text, str(path), launch.block, guarded)
        out[name] = (text, new, fix)
    return out


@pytest.mark.parametrize("name", list(FIXED))
def test_each_staged_kernel_gets_an_unsafe_fix(fixed, name):
    text, new, fix = fixed[name]
    assert isinstance(fix, Fix), getattr(fix, "reason", fix)
    assert fix.title == FIX_TITLE and fix.applicability is Applicability.UNSAFE
    assert "from tolk_lint.runtime import " in new
    assert new.count("commit_group()") == 2 and new.count("wait_group(0)") == 2
    assert "cuda.shared.array((2, " in new or "shape=(2, " in new
    assert ("cp_async_zfill(" in new) == FIXED[name][1]


@pytest.mark.parametrize("name", list(FIXED))
def test_the_fixed_kernel_lints_clean_and_a_second_fix_changes_nothing(fixed, name):
    path, launch, guarded = _case(name)
    _, new, _ = fixed[name]
    result = engine.lint_text(new, str(path), contexts(new, str(path), launch.block)[0].settings)
    bad = [d for d in result.diagnostics if d.code.startswith(("TL1", "TL2")) and d.severity is Severity.ERROR
           or d.code in ("TL001", "TL002", "TL004", "TL005", "TL302")]  # fmt: skip
    assert bad == [], [f"{d.code} {d.span.line}: {d.message}" for d in bad]
    again, fix = fix_text(new, str(path), launch.block, guarded)
    assert fix is None and again == new


def test_the_docs_sgemm_fix_is_form_a_and_keeps_every_other_line():
    path, launch, _ = _case("sgemm_tiled_sync")
    text = path.read_text()
    new, fix = fix_text(text, str(path), launch.block)
    assert isinstance(fix, Fix)
    expected_loop = """\
    # start copying tile 0 into slot 0 (cp.async pipeline)
    if 0 < bpg:
        cp_async(sA, (0, ty, tx), A, (y, tx), 4)
        cp_async(sB, (0, ty, tx), B, (ty, x), 4)
    commit_group()
    for i in range(bpg):
        # Wait until all threads finish preloading
        wait_group(0)
        cuda.syncthreads()
        # Preload data into shared memory
        # start copying the next tile into the other slot (cp.async pipeline)
        if i + 1 < bpg:
            cp_async(sA, ((i + 1) & 1, ty, tx), A, (y, tx + (i + 1) * TPB), 4)
            cp_async(sB, ((i + 1) & 1, ty, tx), B, (ty + (i + 1) * TPB, x), 4)
        commit_group()
        # this trip's tile is in this slot
        slot = i & 1

        # Computes partial product on the shared memory
        for j in range(TPB):
            tmp += sA[slot, ty, j] * sB[slot, j, tx]
    # no copy may be in flight after the loop (cp.async pipeline)
    wait_group(0)
"""
    assert expected_loop in new
    assert "from numba import cuda, float32\n\nfrom tolk_lint.runtime import commit_group, cp_async, wait_group\n" in new
    # every line of the original outside the loop and the declarations is still there, unchanged
    loop_start = text.index("    for i in range(bpg):")
    loop_end = text.index("    C[y, x] = tmp")
    kept = [ln for ln in text[:loop_start].splitlines() + text[loop_end:].splitlines() if "shared.array" not in ln]
    new_lines = new.splitlines()
    assert all(ln in new_lines for ln in kept)
    # the edits touch only the lines that changed
    assert all(e.line > 1 for e in fix.edits) and len(fix.edits) >= 3


def test_a_guarded_copy_becomes_a_zero_fill_copy_from_its_own_index_or_0():
    path, launch, _ = _case("staged/sgemm_ragged")
    new, fix = fix_text(path.read_text(), str(path), launch.block, guarded=True)
    assert isinstance(fix, Fix)
    assert "sA_inside = (k0 + TILE) + tx < K" not in new  # the whole guard, at the next trip:
    assert "sA_inside = row < A.shape[0] and (k0 + TILE) + tx < K" in new
    assert "(row if sA_inside else 0, ((k0 + TILE) + tx) if sA_inside else 0), 4,\n" in new
    assert "4 if sA_inside else 0)" in new


def test_a_loop_inside_another_ends_its_drain_with_a_barrier():
    path, launch, _ = _case("staged/repeated_sweeps")
    new, fix = fix_text(path.read_text(), str(path), launch.block)
    assert isinstance(fix, Fix)
    assert "        wait_group(0)\n        cuda.syncthreads()\n    y[t] = acc" in new
    without = new.replace("        wait_group(0)\n        cuda.syncthreads()\n    y[t]", "        wait_group(0)\n    y[t]")
    ctx = contexts(without, str(path), launch.block)[0]
    codes = [d.code for d in engine.lint_text(without, str(path), ctx.settings).diagnostics]
    assert "TL204" in codes, "the next sweep's prologue races with the last trip's reads"


def test_text_edits_replace_whole_changed_lines():
    old = "a\nb\nc\n"
    new = "a\nB\nx\nc\n"
    edits = text_edits("f.py", old, new)
    from tolk_lint.fix.edits import apply_edits

    fix = Fix("t", tuple(edits))
    assert apply_edits(old, [fix])[0] == new
    assert apply_edits("a\nb", [Fix("t", tuple(text_edits("f.py", "a\nb", "a\nb\nc\n")))])[0] == "a\nb\nc\n"


# -- what is refused ---------------------------------------------------------------------


def _outcome(src: str, block=(64, 1, 1)):
    """The fix of the kernel ``k`` of ``HEADER + src`` (guarded copies through the stand-in for TL302)."""
    text = HEADER + textwrap.dedent(src)
    ctx = next(c for c in contexts(text, "k.py", block) if c.kernel.name == "k")
    copies = copies_for(ctx, guarded=True)
    assert copies, "TL302 reports the loop"
    return pipeline_fix(ctx, copies)


HEADER = """
from numba import cuda, float32

T = 64
"""

REFUSED = {
    "non-zero else-value": ("""
        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(n):
                s[t] = x[i * T + t] if t < 32 else 1
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
        """, "non-zero else-value"),
    "a loop with a varying trip count": ("""
        @cuda.jit("void(float32[::1], float32[::1])")
        def k(x, y):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(cuda.threadIdx.x % 3 + 2):
                s[t] = x[i * T + t]
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
        """, "(TL102)"),
    "a break": ("""
        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(n):
                s[t] = x[i * T + t]
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
                if i == 3:
                    break
        """, "break"),
    "an index the loop changes": ("""
        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            base = 0
            for i in range(n):
                s[t] = x[base + t]
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
                base += T
        """, "`base`, which the loop changes"),
    "a source the kernel writes": ("""
        @cuda.jit("void(float32[::1], int64)")
        def k(x, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(n):
                s[t] = x[i * T + t]
                cuda.syncthreads()
                x[(i + 1) * T + t] = s[(t + 1) % T]
                cuda.syncthreads()
        """, "the kernel writes `x`"),
    "a staged array used after the loop": ("""
        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(n):
                s[t] = x[i * T + t]
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
            y[t] += s[t]
        """, "used outside the loop"),
    "a staged array handed to a function": ("""
        @cuda.jit(device=True)
        def first(a):
            return a[0]

        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            for i in range(n):
                s[t] = x[i * T + t]
                cuda.syncthreads()
                y[t] += first(s)
                cuda.syncthreads()
        """, "other than by indexing it"),
    "a while loop": ("""
        @cuda.jit("void(float32[::1], float32[::1], int64)")
        def k(x, y, n):
            s = cuda.shared.array(T, float32)
            t = cuda.threadIdx.x
            i = 0
            while i < n:
                s[t] = x[i * T + t]
                cuda.syncthreads()
                y[t] += s[(t + 1) % T]
                cuda.syncthreads()
                i += 1
        """, "a `while` loop"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_cannot_be_rewritten_exactly_is_refused_with_a_reason(case):
    src, words = REFUSED[case]
    outcome = _outcome(src)
    assert isinstance(outcome, NotFixable), case
    assert words in outcome.reason, outcome.reason


def test_two_byte_elements_are_refused_for_want_of_re_chunking():
    path = STAGED / "hgemm_half.py"
    text = path.read_text()
    new, outcome = fix_text(text, str(path), (16, 16, 1))
    assert isinstance(outcome, NotFixable) and new == text
    assert "2-byte elements (f16)" in outcome.reason and "re-chunked" in outcome.reason


def test_tiles_too_big_to_double_get_tl303_and_no_fix():
    path = STAGED / "sgemm_too_big.py"
    text = path.read_text()
    ctx = contexts(text, str(path), (64, 16, 1))[0]
    assert tl302_copies(ctx) == []
    result = engine.lint_text(text, str(path), ctx.settings)
    codes = {d.code for d in result.diagnostics}
    assert "TL303" in codes and "TL302" not in codes
    assert all(d.fix is None for d in result.diagnostics)
    staged = [tc for tc in ctx.staging().copies if tc.reason is None]
    outcome = pipeline_fix(ctx, staged[:1])
    assert isinstance(outcome, NotFixable) and "do not fit" in outcome.reason


def test_a_fix_inside_a_proof_is_not_offered():
    path, launch, _ = _case("sgemm_tiled_sync")
    ctx = contexts(path.read_text(), str(path), launch.block)[0]
    ctx.relint = None
    outcome = pipeline_fix(ctx, tl302_copies(ctx))
    assert isinstance(outcome, NotFixable) and "not proved" in outcome.reason


TWO_KERNELS = '''"""Two kernels."""
from numba import cuda, float32

T = 64


@cuda.jit("void(float32[::1], float32[::1], int64)")
def first(x, y, n):
    s = cuda.shared.array(T, float32)
    t = cuda.threadIdx.x
    for i in range(n):
        s[t] = x[i * T + t]
        cuda.syncthreads()
        y[t] += s[(t + 1) % T]
        cuda.syncthreads()


@cuda.jit("void(float32[::1], float32[::1], int64)")
def second(x, y, n):
    s = cuda.shared.array(T, float32)
    t = cuda.threadIdx.x
    for i in range(n):
        s[t] = x[i * T + t] if i * T + t < x.shape[0] else 0
        cuda.syncthreads()
        y[t] += s[(t + 3) % T]
        cuda.syncthreads()
'''


def test_fixing_a_second_kernel_extends_the_runtime_import():
    from fixer_support import guarded_copies

    from tolk_lint.fix.edits import apply_edits

    once, fix = fix_text(TWO_KERNELS, "two.py", (64, 1, 1))
    assert isinstance(fix, Fix)
    assert "from tolk_lint.runtime import commit_group, cp_async, wait_group\n" in once
    ctx = next(c for c in contexts(once, "two.py", (64, 1, 1)) if c.kernel.name == "second")
    second = pipeline_fix(ctx, guarded_copies(ctx))
    assert isinstance(second, Fix), getattr(second, "reason", second)
    twice, _ = apply_edits(once, [second])
    assert twice.count("from tolk_lint.runtime import") == 1
    assert "from tolk_lint.runtime import commit_group, cp_async, cp_async_zfill, wait_group\n" in twice


@pytest.mark.parametrize("path", sorted(STAGED.glob("*.py")), ids=lambda p: p.stem)
def test_every_staged_fixture_has_a_launch_spec_of_its_parameters(path):
    spec = load_spec(str(path.with_suffix(".toml")))
    cpu, gpu = spec.resolve(), spec.resolve(gpu=True)
    module = engine.parse(path.read_text(), str(path))
    (k,) = [k for k in module.kernels if k.name == cpu.kernel]
    assert [a.name for a in cpu.args] == [p.name for p in k.params] == [a.name for a in gpu.args]
    assert cpu.outputs and all(a.shape for a in cpu.outputs)


def test_the_proof_lowers_and_analyses_the_rewritten_kernel_alone(monkeypatch):
    from tolk_lint.frontends.python import lower

    ctx = next(c for c in contexts(TWO_KERNELS, "two.py", (64, 1, 1)) if c.kernel.name == "first")
    lowered: list[str] = []
    checked: list[str] = []
    real_lower, real_check = lower.lower_function, engine.check_kernel
    monkeypatch.setattr(lower, "lower_function", lambda c, fi, **kw: lowered.append(fi.name) or real_lower(c, fi, **kw))
    monkeypatch.setattr(engine, "check_kernel", lambda m, k, *a: checked.append(k.name) or real_check(m, k, *a))
    outcome = pipeline_fix(ctx, tl302_copies(ctx))
    assert isinstance(outcome, Fix), getattr(outcome, "reason", outcome)
    assert lowered == checked == ["first"]
