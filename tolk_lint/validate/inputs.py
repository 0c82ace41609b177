"""The arrays and scalars a launch passes, made from its spec: the same
random inputs for the original and the fixed kernel of every stage.

`make_arguments(launch, seed)` gives one numpy array per array argument (in
the argument's dtype and shape: ``random`` ones drawn from a generator
seeded by ``seed``, floats from a normal distribution, integers from
-100..100 or 0..100, so products stay small) and the scalar's value for
each scalar, in the launch's order. Only numpy is imported (the GPU stage
runs this where the analyses are not installed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tolk_lint.validate.spec import Arg, Launch

DEFAULT_SEED = 20240607


def make_arguments(launch: Launch, seed: int = DEFAULT_SEED) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [_argument(a, rng) for a in launch.args]


def _argument(a: Arg, rng) -> Any:
    dt = np.dtype(a.dtype)
    if not a.is_array:
        return dt.type(a.value)
    shape = a.shape or ()
    if a.init == "zeros":
        return np.zeros(shape, dt)
    if a.init == "ones":
        return np.ones(shape, dt)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    lo = -100 if dt.kind == "i" else 0
    return rng.integers(lo, 101, size=shape).astype(dt)


def bits(x: np.ndarray) -> np.ndarray:
    """The array's bytes as unsigned integers of the same width: what "bit-identical" compares."""
    x = np.ascontiguousarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.itemsize in (1, 2, 4, 8) else x.view(np.uint8)


def first_difference(a: np.ndarray, b: np.ndarray) -> str:
    """Where two outputs first differ, and how many elements do, in words."""
    ba, bb = bits(a).reshape(-1), bits(b).reshape(-1)
    diff = np.nonzero(ba != bb)[0]
    if not len(diff):
        return "identical"
    i = int(diff[0])
    idx = np.unravel_index(i, a.shape) if a.shape else ()
    return (f"{len(diff)} of {ba.size} elements differ; the first at {tuple(int(x) for x in idx)}: "
            f"{a.reshape(-1)[i]!r} vs {b.reshape(-1)[i]!r}")  # fmt: skip
