"""The PTX of a Numba kernel, for the assembler stage of `tolk-lint validate`:
numba-cuda's ``cuda.compile_ptx`` of the kernel's Python function, with the
signature the launch spec gives its parameters (`numba_kernels.signature`:
C-contiguous arrays of the spec's dtypes and ranks, scalars of theirs).

It runs in this process, on numba-cuda's GPU path (no GPU is needed, only
NVRTC and libNVVM: the `validate` extra); under NUMBA_ENABLE_CUDASIM there
is no compiler, and it says so.

Imports `numba_kernels` and `spec`; numba-cuda inside `compile_ptx`.
"""

from __future__ import annotations

from tolk_lint.validate.numba_kernels import load_kernel, signature
from tolk_lint.validate.spec import Launch


class NoCompiler(RuntimeError):
    """numba-cuda cannot compile here: not installed, or the simulator is on."""


def compile_ptx(path: str, kernel: str | None, launch: Launch, cc: tuple[int, int], lineinfo: bool = False) -> str:
    """The PTX numba-cuda makes of the kernel ``kernel`` of ``path`` (the
    file's only kernel when None, else the spec's ``kernel``) for compute
    capability ``cc`` (``(8, 0)``: ``.target sm_80``)."""
    try:
        from numba import cuda
        from numba.cuda import config
    except ImportError as exc:
        raise NoCompiler(f"numba-cuda is not installed ({exc}): install the 'validate' extra") from exc
    if config.ENABLE_CUDASIM:
        raise NoCompiler("NUMBA_ENABLE_CUDASIM is set: the simulator has no PTX compiler")
    dispatcher = load_kernel(path, kernel or launch.kernel)
    ptx, _ = cuda.compile_ptx(dispatcher.py_func, signature(launch), cc=cc, lineinfo=lineinfo)
    return ptx
