"""The contract search asks few questions (`launch.contract.Inference._largest`):
the kernel's own array sizes are guessed smallest first, and a size that
fails ends the guesses (every larger one fails too). A kernel staging
``a[t]`` into a 64-float array, beside a 1024-float one it also indexes by
``t``, is right exactly for blocks of at most 64 threads: the bound is
found by asking 64 (holds) and 65 (fails), not 1024 first."""

from __future__ import annotations

import textwrap

from tolk_lint.engine import lint_text
from tolk_lint.launch import contract

KERNEL = textwrap.dedent("""\
    from numba import cuda, float32


    @cuda.jit
    def stage(a, out):
        small = cuda.shared.array(64, float32)
        big = cuda.shared.array(1024, float32)
        t = cuda.threadIdx.x
        small[t] = a[t]
        big[t] = a[t] * 2
        cuda.syncthreads()
        out[t] = small[63 - t] + big[t]
    """)


def test_the_bound_is_found_in_two_questions(monkeypatch):
    asked = []
    real = contract.Inference.holds

    def holds(self, needs, key, build):
        asked.append(key)
        return real(self, needs, key, build)

    monkeypatch.setattr(contract.Inference, "holds", holds)
    diags = lint_text(KERNEL, "k.py").diagnostics
    [d] = [d for d in diags if d.code == "TL205"]
    assert "blockDim.x <= 64" in d.message
    axis = [key[-1] for key in dict.fromkeys(asked) if key[0] == "axis"]
    assert axis == [64, 65]
