"""The acceptance set with its launch shapes written as code, not given.

Every kernel of ``shared/acceptance`` is copied into a temporary folder with
its ``launch:`` comment blanked (the line kept, so every expectation keeps
its line) and a realistic launch appended below the code: a Numba call site
(``kernel[blocks, threads](...)``, the block a tuple literal, a local or a
module constant) or, in the ``.cu`` the PTX's ``.file`` names, host code
launching it (``kernel<<<grid, threads>>>(...)`` with ``dim3 threads(X,
Y)``, or ``cudaLaunchKernel``). The manifest is copied without its
``launch`` entries, so nothing passes ``--block``. The verdicts must be
the manifest's, and the shape each kernel is linted under must be the one
the code gives. Skipped with a reason when ``shared/`` is not beside the
clone.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ACCEPTANCE, xfail_if_pending

from tolk_lint.engine import decode, parse, prepare
from tolk_lint.testing import acceptance_cases, acceptance_result

pytestmark = pytest.mark.skipif(
    not (ACCEPTANCE / "manifest.json").is_file(), reason=f"no acceptance set at {ACCEPTANCE} (shared/ absent)"
)

_COMMENT = re.compile(r"^[ \t]*(#|//)[ \t]*launch:[ \t]*block=.*$", re.MULTILINE)


def _manifest() -> dict:
    return json.loads((ACCEPTANCE / "manifest.json").read_text(encoding="utf-8"))


def _python_launch(name: str, block: list[int], i: int) -> str:
    x, y, z = block
    shape = f"({x}, {y})" if z == 1 and y > 1 else f"({x}, {y}, {z})" if z > 1 else str(x)
    if i % 3 == 0:  # a local tuple of constants, as the Numba documentation writes it
        return (f"\n\ndef launch_{name}(*args):\n    threadsperblock = {shape}\n    blockspergrid = 64\n"
                f"    {name}[blockspergrid, threadsperblock](*args)\n")  # fmt: skip
    if i % 3 == 1:  # a module constant
        return f"\n\nTHREADS_{name.upper()} = {shape}\n\n\ndef launch_{name}(*args):\n" \
               f"    {name}[(64, 1), THREADS_{name.upper()}](*args)\n"  # fmt: skip
    return f'\n\nif __name__ == "__main__":\n    {name}[32, {shape}, 0, 0]()\n'  # the block literal, stream and shmem


def _cuda_launch(text: str, name: str, block: list[int], i: int) -> str:
    x, y, z = block
    m = re.search(rf"\b{re.escape(name)}\s*\(", text)
    assert m, name
    depth, j = 0, m.end() - 1
    while True:
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            break
        j += 1
    params = " ".join(text[m.end() : j].split())
    names = [re.findall(r"\w+", p)[-1] for p in params.split(",") if p.strip()]
    if i % 2:
        return (f"\n#include <cuda_runtime.h>\ncudaError_t launch_{name}(void **args)\n{{\n"
                f"    dim3 threads({x}, {y}, {z});\n"
                f"    return cudaLaunchKernel((const void *){name}, dim3(64), threads, args, 0, 0);\n}}\n")  # fmt: skip
    dims = f"{x}, {y}" if z == 1 else f"{x}, {y}, {z}"
    return (f"\nvoid launch_{name}({params})\n{{\n    dim3 threads({dims});\n    dim3 grid(64);\n"
            f"    {name}<<<grid, threads>>>({', '.join(names)});\n}}\n")  # fmt: skip


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> Path:
    """The acceptance folder with the launches written as code."""
    out = tmp_path_factory.mktemp("acceptance-launched")
    man = _manifest()
    for sub in ("numba", "cuda"):
        shutil.copytree(ACCEPTANCE / sub, out / sub)
    for i, k in enumerate(man["kernels"]):
        block = (k.pop("launch", None) or {}).get("block")
        if not block:
            continue
        src = out / k["file"]
        text = _COMMENT.sub("", src.read_text(encoding="utf-8"))
        block = (list(block) + [1, 1, 1])[:3]
        tail = _python_launch(k["kernel"], block, i) if k["language"] != "cuda" else _cuda_launch(
            text, k["kernel"], block, i)  # fmt: skip
        src.write_text(text.rstrip("\n") + "\n" + tail, encoding="utf-8")
        k["launch_from_code"] = block
    (out / "manifest.json").write_text(json.dumps(man), encoding="utf-8")
    return out


def _cases():
    if not (ACCEPTANCE / "manifest.json").is_file():
        return []
    return [pytest.param(i, id=c.id) for i, c in enumerate(acceptance_cases(ACCEPTANCE))]


@pytest.mark.parametrize("index", _cases())
def test_acceptance_with_launches_written_as_code(launched, index):
    case = acceptance_cases(launched)[index]
    assert "launch" not in case.entry and case.settings().block is None
    res = acceptance_result(case)
    xfail_if_pending(res)
    assert res.ok, res.report()
    want = case.entry.get("launch_from_code")
    if want is None:
        return
    text, err = decode(case.linted.read_bytes(), str(case.linted))
    assert err is None
    module = parse(text or "", str(case.linted))
    prepare(module, case.settings())
    [k] = [k for k in module.kernels if k.name == case.kernel]
    assert [s.block for s in k.launch.shapes] == [tuple(want)], k.launch.shapes
    assert k.launch.shapes[0].kind in ("call site", "host launch"), k.launch.shapes
    # what the shape-dependent messages name is the launch in the code, never --block
    for d in res.diagnostics:
        if d.code[:3] in ("TL2", "TL3"):
            assert "--block" not in str(d.data.get("launch")), d.message


def test_the_launches_written_are_the_ones_the_comments_gave(launched):
    """Every kernel that had a ``launch:`` comment got a launch in its code."""
    man = json.loads((launched / "manifest.json").read_text(encoding="utf-8"))
    given = [k for k in _manifest()["kernels"] if (k.get("launch") or {}).get("block")]
    written = [k for k in man["kernels"] if "launch_from_code" in k]
    assert len(written) == len(given) > 0
    for k in written:
        assert not _COMMENT.search((launched / k["file"]).read_text(encoding="utf-8")), k["file"]
