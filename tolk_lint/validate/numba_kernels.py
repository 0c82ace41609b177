"""What the Numba stages of `tolk-lint validate` share: a kernel loaded from
its file, the Numba signature a launch spec gives its parameters, the same
random inputs for the original and the fixed kernel, and the bit-for-bit
comparison of their outputs.

A launch travels to the child process that runs the kernels as JSON
(`launch_to_json` / `launch_from_json`): the simulator is chosen when
numba.cuda is first imported, so each run is a fresh process.

Imports numpy and `spec`; numba only inside `load_kernel`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

import numpy as np

from tolk_lint.validate.spec import Arg, Launch

SEED = 20260706  # the inputs' seed: the same arrays for both kernels, every run


def load_kernel(path: str, name: str | None) -> Any:
    """The ``@cuda.jit`` kernel ``name`` of the file ``path`` (the only one
    when ``name`` is None), imported as a module of its own; its folder is
    put on ``sys.path`` so that the file's own imports of its neighbours work.
    Importing runs the file's top level, as running the kernel would."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # named by the file alone, so that the PTX's mangled names do not depend on where it lies
    module_name = f"_tolk_validate_{os.path.splitext(os.path.basename(path))[0]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import `{path}`")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    kernels = {k: v for k, v in vars(module).items() if _is_kernel(v)}
    if name is not None:
        if name not in kernels:
            found = ", ".join(sorted(kernels)) or "none"
            raise LookupError(f"`{path}` has no @cuda.jit kernel `{name}` (kernels: {found})")
        return kernels[name]
    if len(kernels) != 1:
        found = ", ".join(sorted(kernels)) or "none"
        raise LookupError(f"`{path}` holds {len(kernels)} @cuda.jit kernels ({found}): name one in the spec")
    return next(iter(kernels.values()))


def _is_kernel(value: Any) -> bool:
    """A ``@cuda.jit`` kernel, not a device function: a CUDADispatcher on the
    GPU path, a FakeCUDAKernel under the simulator."""
    kind = type(value).__name__
    if kind == "CUDADispatcher":
        return not getattr(value, "targetoptions", {}).get("device", False)
    return kind == "FakeCUDAKernel" and not getattr(value, "_device", False)


def numba_type(arg: Arg) -> str:
    """``float32[:, ::1]`` for a 2-D array (C-contiguous, as numpy makes
    them), ``int32`` for a scalar."""
    if not arg.is_array:
        return arg.dtype
    dims = [":"] * (len(arg.shape or ()) - 1) + ["::1"]
    return f"{arg.dtype}[{', '.join(dims)}]"


def signature(launch: Launch) -> str:
    return f"void({', '.join(numba_type(a) for a in launch.args)})"


def make_inputs(launch: Launch, seed: int = SEED) -> list[Any]:
    """One value per parameter: arrays as the spec's ``init`` says (random
    floats from a normal distribution; random integers small enough that
    sums of products stay far from overflow), scalars as given."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for a in launch.args:
        dtype = np.dtype(a.dtype)
        if not a.is_array:
            out.append(dtype.type(a.value))
            continue
        shape = tuple(a.shape or ())
        if a.init == "zeros":
            out.append(np.zeros(shape, dtype))
        elif a.init == "ones":
            out.append(np.ones(shape, dtype))
        elif dtype.kind == "f":
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "i":
            out.append(rng.integers(-8, 9, size=shape).astype(dtype))
        else:
            out.append(rng.integers(0, 17, size=shape).astype(dtype))
    return out


def launch_to_json(launch: Launch) -> dict[str, Any]:
    return {"kernel": launch.kernel, "grid": list(launch.grid), "block": list(launch.block),
            "sizes": dict(launch.sizes),
            "args": [{"name": a.name, "dtype": a.dtype, "shape": list(a.shape) if a.shape is not None else None,
                      "value": a.value, "init": a.init, "output": a.output} for a in launch.args]}  # fmt: skip


def launch_from_json(data: dict[str, Any]) -> Launch:
    args = tuple(Arg(a["name"], a["dtype"], tuple(a["shape"]) if a["shape"] is not None else None, a["value"],
                     a["init"], a["output"]) for a in data["args"])  # fmt: skip
    grid, block = data["grid"], data["block"]
    return Launch(data["kernel"], (grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), args,
                  dict(data.get("sizes", {})))  # fmt: skip


def bits(a: np.ndarray) -> np.ndarray:
    """The array's bytes as unsigned integers of its element size (NaN
    payloads and the sign of zero compare as the bits they are)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "c":
        a = a.view(np.dtype(f"f{a.dtype.itemsize // 2}"))
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a.view(np.uint8)


def differences(name: str, original: np.ndarray, fixed: np.ndarray, limit: int = 3) -> list[str]:
    """Lines saying where ``fixed`` differs from ``original`` bit for bit;
    none when they are identical."""
    if original.shape != fixed.shape or original.dtype != fixed.dtype:
        return [f"`{name}`: {original.dtype}{list(original.shape)} vs {fixed.dtype}{list(fixed.shape)}"]
    ba, bb = bits(original), bits(fixed)
    wrong = np.argwhere(ba != bb)
    if not len(wrong):
        return []
    lines = [f"`{name}`: {len(wrong)} of {original.size} elements differ"
             + (f" ({int(np.isnan(fixed).sum())} NaN in the fixed kernel's)" if fixed.dtype.kind == "f" else "")]
    for idx in wrong[:limit]:
        i = tuple(int(x) for x in idx)
        lines.append(f"  at {list(i)}: original {original[i].item()!r}, fixed {fixed[i].item()!r}")
    return lines
