"""The launch spec `tolk-lint validate` runs a kernel pair with: a TOML file.

    kernel = "sgemm_tiled16"          # optional when the file holds one kernel
    block = [16, 16, 1]
    grid = ["N // 16", "N // 16", 1]  # numbers, or expressions of the sizes

    [sizes]                           # the CPU stages' sizes (interpreter, simulator)
    N = 64
    [gpu.sizes]                       # the GPU stage's (inputs larger than L2)
    N = 4096

    [[args]]                          # the kernel's parameters, in order
    name = "A"
    dtype = "float32"
    shape = ["N", "N"]                # an array: its shape
    init = "random"                   # random (default), zeros, or ones
    [[args]]
    name = "C"
    dtype = "float32"
    shape = ["N", "N"]
    init = "zeros"
    output = true                     # compared bit for bit between the two kernels
    [[args]]
    name = "n"
    dtype = "int32"
    value = "N"                       # a scalar: its value

An expression is a number or a name of ``sizes`` combined with ``+ - * //
%`` and parentheses; nothing else is evaluated. `resolve` gives the
concrete launch for one set of sizes (the CPU's, or the GPU's over them).
"""

from __future__ import annotations

import ast
import operator
import tomllib
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
          "uint64")  # fmt: skip
INITS = ("random", "zeros", "ones")


class SpecError(ValueError):
    """A launch spec that cannot be used, with the key at fault."""


@dataclass(frozen=True)
class Arg:
    name: str
    dtype: str
    shape: tuple[int, ...] | None = None  # an array, or None for a scalar
    value: int | float | None = None  # a scalar's value
    init: str = "random"
    output: bool = False

    @property
    def is_array(self) -> bool:
        return self.shape is not None


@dataclass(frozen=True)
class Launch:
    """One concrete launch: the kernel, its grid and block, its arguments."""

    kernel: str | None
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Arg, ...]
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def outputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.output)


@dataclass(frozen=True)
class Spec:
    """The spec as written: `resolve` it for the CPU or the GPU sizes."""

    raw: dict[str, Any]
    path: str = "<spec>"

    def resolve(self, gpu: bool = False) -> Launch:
        sizes = dict(self.raw.get("sizes", {}))
        if gpu:
            sizes.update(self.raw.get("gpu", {}).get("sizes", {}))
        for k, v in sizes.items():
            if not isinstance(v, int) or isinstance(v, bool):
                raise SpecError(f"{self.path}: sizes.{k} must be an integer, got {v!r}")
        grid = _dims(self.raw.get("grid", [1, 1, 1]), sizes, "grid", self.path)
        block = _dims(self.raw.get("block"), sizes, "block", self.path)
        if block[0] * block[1] * block[2] > 1024:
            raise SpecError(f"{self.path}: block {block} holds more than 1024 threads")
        args = []
        for i, a in enumerate(self.raw.get("args", [])):
            where = f"args[{i}]"
            if not isinstance(a, dict) or "name" not in a or "dtype" not in a:
                raise SpecError(f"{self.path}: {where} needs a name and a dtype")
            if a["dtype"] not in DTYPES:
                raise SpecError(f"{self.path}: {where}.dtype `{a['dtype']}` is not one of {', '.join(DTYPES)}")
            init = a.get("init", "random")
            if init not in INITS:
                raise SpecError(f"{self.path}: {where}.init `{init}` is not one of {', '.join(INITS)}")
            if ("shape" in a) == ("value" in a):
                raise SpecError(f"{self.path}: {where} needs exactly one of shape (an array) or value (a scalar)")
            if "shape" in a:
                shape = tuple(evaluate(d, sizes, f"{where}.shape", self.path) for d in a["shape"])
                args.append(Arg(a["name"], a["dtype"], shape=shape, init=init, output=bool(a.get("output"))))
            else:
                v = a["value"]
                value = v if isinstance(v, float) else evaluate(v, sizes, f"{where}.value", self.path)
                args.append(Arg(a["name"], a["dtype"], value=value))
        if not any(a.output for a in args):
            raise SpecError(f"{self.path}: no argument is marked `output = true`: nothing would be compared")
        return Launch(self.raw.get("kernel"), grid, block, tuple(args), sizes)


def load_spec(path: str) -> Spec:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as e:
        raise SpecError(f"cannot read the launch spec {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: invalid TOML: {e}") from None
    if "block" not in raw:
        raise SpecError(f"{path}: no `block` (the launch's block shape)")
    spec = Spec(raw, path)
    spec.resolve()  # report a bad spec now, not halfway through a run
    return spec


def _dims(value: Any, sizes: dict[str, int], key: str, path: str) -> tuple[int, int, int]:
    if not isinstance(value, list) or not 1 <= len(value) <= 3:
        raise SpecError(f"{path}: {key} must be a list of one to three sizes, got {value!r}")
    dims = [evaluate(v, sizes, key, path) for v in value] + [1, 1]
    if any(d < 1 for d in dims[:3]):
        raise SpecError(f"{path}: {key} {dims[:3]} has a size below 1")
    return (dims[0], dims[1], dims[2])


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}  # fmt: skip


def evaluate(value: Any, sizes: dict[str, int], key: str = "", path: str = "<spec>") -> int:
    """An integer, or an expression of the sizes (``"N // 16"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise SpecError(f"{path}: {key}: expected an integer or an expression, got {value!r}")
    try:
        tree = ast.parse(value, mode="eval").body
    except SyntaxError:
        raise SpecError(f"{path}: {key}: `{value}` is not an expression") from None

    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in sizes:
                raise SpecError(f"{path}: {key}: `{n.id}` is not one of the sizes ({', '.join(sizes) or 'none'})")
            return sizes[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise SpecError(f"{path}: {key}: `{value}` may use only integers, sizes, + - * // % and parentheses")

    return ev(tree)
