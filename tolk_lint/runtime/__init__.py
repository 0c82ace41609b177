"""tolk_lint.runtime: cp.async for Numba CUDA kernels, the module that the
TL302 fixer's rewritten kernels call (numba-cuda has no cp.async of its own).

It owns four calls, importable the same way on both paths:

    from tolk_lint.runtime import cp_async, cp_async_zfill, commit_group, wait_group

- on the GPU path (`intrinsics`), numba-cuda intrinsics that emit PTX inline
  assembly (`cp.async.{ca,cg}.shared.global`, `cp.async.commit_group`,
  `cp.async.wait_group N`), checked at typing time;
- under the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1, read once at
  import), pure-Python fallbacks (`simulator`) that poison a copy's
  destination at issue and land the bytes only at the wait that retires its
  group, so a missing or early wait shows up as wrong output.

It may import numba / numba-cuda, llvmlite and numpy, and nothing else: not
the rest of tolk_lint (only the package's own `tolk_lint/__init__.py`, which
imports nothing heavy, runs first), not z3, lark or libcst, so a kernel that
uses it does not pull in the linter.  Without numba-cuda, importing it raises
an ImportError that says which extra to install.
"""

from __future__ import annotations

try:
    import numba_cuda  # noqa: F401  (numba-cuda, not the CUDA target once built into numba)
    from numba.cuda import config as _cuda_config
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "tolk_lint.runtime needs numba-cuda, which is not installed; "
        "install the 'validate' extra: pip install 'tolk-lint[validate]'"
    ) from exc

if _cuda_config.ENABLE_CUDASIM:
    from tolk_lint.runtime.simulator import commit_group, cp_async, cp_async_zfill, wait_group
else:
    from tolk_lint.runtime.intrinsics import commit_group, cp_async, cp_async_zfill, wait_group

SIMULATED = bool(_cuda_config.ENABLE_CUDASIM)

__all__ = ["SIMULATED", "commit_group", "cp_async", "cp_async_zfill", "wait_group"]
