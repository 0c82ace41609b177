"""Device functions and constants imported from the linted file's own
project (`tolk_lint.frontends.python.siblings`): the module beside the file
is read as text, never imported; what it does not define, or a module that
cannot be read, stays unknown (TL002) as before."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tolk_lint import lint_file
from tolk_lint.config import Settings
from tolk_lint.frontends.python import parse_python
from tolk_lint.ir import Opcode

HELPERS = """
from numba import cuda

STACK = 16
EPS = 1e-6
NAME = "not a number"


@cuda.jit(device=True)
def dot(ax, ay, bx, by):
    return ax * bx + ay * by


@cuda.jit(device=True)
def sync_then(x):
    cuda.syncthreads()
    return x


def host_only(x):
    return x
"""

KERNEL = """
from numba import cuda, int32
{imports}


@cuda.jit
def k(a, out):
    i = cuda.grid(1)
    stack = cuda.local.array(STACK, int32)
    stack[0] = 1
    t = dot(a[i, 0], a[i, 1], a[i, 0], a[i, 1])
    if t > EPS:
        out[i] = sync_then(t) + stack[0]
"""


ALL = "from helpers import STACK, EPS, dot, sync_then"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def parse(path: Path):
    return parse_python(path.read_text(), str(path))


def tl002(mod) -> list[str]:
    return [d.message for d in mod.diagnostics if d.code == "TL002"]


def test_a_plain_import_reads_the_module_beside_the_file(tmp_path: Path) -> None:
    write(tmp_path, "helpers.py", HELPERS)
    main = write(tmp_path, "main.py", KERNEL.format(imports=ALL))
    mod = parse(main)
    assert tl002(mod) == []
    (k,) = mod.kernels
    assert [b.shape for b in k.buffers.values()] == [(16,)]
    assert not [i for i in k.instrs() if i.op in (Opcode.OPAQUE, Opcode.CALL)]
    (barrier,) = [i for i in k.instrs() if i.op is Opcode.BARRIER]
    # placed on the call in the linted file, its origin in the helper's own file
    assert barrier.span.path == str(main) and barrier.span.line == 13
    chain = barrier.origin.chain()
    assert chain[0].path == str(tmp_path / "helpers.py") and chain[-1].path == str(main)
    assert list(mod.files.values()) == [str(tmp_path / "helpers.py")]


def test_a_relative_import_reads_the_package_module(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/util/__init__.py", "")
    write(tmp_path, "pkg/util/vec.py", HELPERS)
    main = write(tmp_path, "pkg/kernels.py", KERNEL.format(imports=ALL.replace("helpers", ".util.vec")))
    assert tl002(parse(main)) == []
    # and by the package's own name, from the folder above the package
    main = write(tmp_path, "pkg/other.py", KERNEL.format(imports=ALL.replace("helpers", "pkg.util.vec")))
    assert tl002(parse(main)) == []


def test_what_the_module_does_not_define_stays_unknown(tmp_path: Path) -> None:
    write(tmp_path, "helpers.py", HELPERS.replace("STACK = 16", "STACK = int(input())"))
    main = write(tmp_path, "main.py", KERNEL.format(imports=ALL))
    assert [m.split(" is not")[0] for m in tl002(parse(main))] == ["`STACK`"]
    imports = "from helpers import NAME as STACK, EPS, host_only as dot, sync_then"
    main = write(tmp_path, "main2.py", KERNEL.format(imports=imports))
    messages = tl002(parse(main))  # a string is no shape, a function not jitted no device function
    assert [m.split(" is not")[0] for m in messages] == ["`STACK`", "`helpers.host_only`"]


def test_a_missing_or_broken_module_stays_unknown(tmp_path: Path) -> None:
    main = write(tmp_path, "main.py", KERNEL.format(imports=ALL))
    assert len(tl002(parse(main))) == 4  # no helpers.py: as before
    write(tmp_path, "helpers.py", HELPERS + "\ndef broken(:\n")
    assert len(tl002(parse(main))) == 4
    (tmp_path / "helpers.py").write_bytes(b"\xff\xfe\x00 not text")
    assert len(tl002(parse(main))) == 4


def test_an_import_cycle_is_cut(tmp_path: Path) -> None:
    device = "from numba import cuda\nfrom {0} import {1}\n\n@cuda.jit(device=True)\ndef {2}(x):\n"
    write(tmp_path, "a.py", device.format("b", "twice", "once") + "    return twice(x) - x\n")
    write(tmp_path, "b.py", device.format("a", "once", "twice") + "    return 2 * x\n")
    kernel = "from numba import cuda\nfrom a import once\n\n@cuda.jit\ndef k(v):\n    v[0] = once(v[0])\n"
    main = write(tmp_path, "main.py", kernel)
    mod = parse(main)
    assert tl002(mod) == []
    assert sorted(mod.files.values()) == [str(tmp_path / "a.py"), str(tmp_path / "b.py")]


def test_a_noqa_in_the_helper_and_an_edit_of_it_are_seen(tmp_path: Path) -> None:
    helpers = write(tmp_path, "helpers.py", HELPERS)
    main = write(tmp_path, "main.py", KERNEL.format(imports=ALL))
    settings = Settings(block=(128, 1, 1))
    codes = [d.code for d in lint_file(str(main), settings).diagnostics]
    assert codes == ["TL101"]
    noqa = "    cuda.syncthreads()  # tolk: noqa: TL101\n"
    helpers.write_text(textwrap.dedent(HELPERS).replace("    cuda.syncthreads()\n", noqa))
    assert [d.code for d in lint_file(str(main), settings).diagnostics] == []
