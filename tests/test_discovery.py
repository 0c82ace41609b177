"""Kernel discovery by data flow (`tolk_lint.frontends.python.discover`): every
kernel of ``fixtures/corpus/discovery/`` is found, whatever reaches its jit
(factories handed the module, caches, attributes, star imports, wrappers,
partials, calls on undecorated functions), none twice, device functions as
device functions, and each lowers and lints with no TL001/TL002/TL004.

Each corpus file names what it holds in its first lines:
``# kernels: a, b`` (CUDA kernels), ``# host: h`` (host kernels, target cpu),
``# device: d`` (device functions, by the name of their ``def``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from tolk_lint import lint_text
from tolk_lint.frontends.python import parse_python
from tolk_lint.frontends.python.finder import Finder, Source
from tolk_lint.ir import Opcode

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "discovery"
FILES = sorted(CORPUS.glob("*.py"))
_HEADER = re.compile(r"#\s*(kernels|host|device):(.*)")


def expected(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"kernels": set(), "host": set(), "device": set()}
    for line in text.splitlines()[:5]:
        m = _HEADER.match(line)
        if m:
            out[m.group(1)] |= {n.strip() for n in m.group(2).split(",") if n.strip()}
    return out


def found(text: str, path: str = "k.py") -> dict[str, set[str]]:
    mod = parse_python(text, path)
    names = [k.name for k in mod.kernels]
    assert len(names) == len(set(names)), f"a kernel found twice: {names}"
    return {
        "kernels": {k.name for k in mod.kernels if not k.host},
        "host": {k.name for k in mod.kernels if k.host},
        "device": set(mod.functions),
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_file_finds_exactly_its_kernels(path: Path) -> None:
    text = path.read_text()
    assert found(text, str(path)) == expected(text)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_file_lowers_and_lints_without_tl0(path: Path) -> None:
    result = lint_text(path.read_text(), str(path))
    bad = [
        f"{d.code} {d.span.line}: {d.message}"
        for d in result.diagnostics
        if d.code in ("TL001", "TL002", "TL004")
    ]
    assert not bad, bad


def test_the_corpus_is_big_enough() -> None:
    kernels = devices = 0
    for path in FILES:
        exp = expected(path.read_text())
        kernels += len(exp["kernels"]) + len(exp["host"])
        devices += len(exp["device"])
    assert len(FILES) >= 12 and kernels >= 60 and devices >= 10


def lower(src: str):
    return parse_python(textwrap.dedent(src), "k.py")


def finder(src: str) -> Finder:
    text = textwrap.dedent(src)
    return Finder(ast.parse(text), Source(text, "k.py"))


def test_device_and_kernel_compilation_of_one_function_is_one_kernel() -> None:
    # decided: found once, as the kernel (an entry point reports everything a
    # standalone device lowering would); calls through the device compilation inline it
    mod = lower(
        """
        from numba import cuda

        def body(a):
            cuda.syncthreads()
            a[0] = 1

        as_device = cuda.jit(device=True)(body)
        as_kernel = cuda.jit(body)

        @cuda.jit(device=True)
        def helper(a):
            a[1] = 2

        helper_kernel = cuda.jit(helper)

        @cuda.jit
        def caller(a):
            as_device(a)
            helper(a)
        """
    )
    assert [k.name for k in mod.kernels] == ["body", "helper", "caller"]
    assert mod.functions == {}
    caller = [k for k in mod.kernels if k.name == "caller"][0]
    assert not [i for i in caller.instrs() if i.op in (Opcode.OPAQUE, Opcode.CALL)]
    assert len([i for i in caller.instrs() if i.op is Opcode.BARRIER]) == 1
    assert [d.code for d in mod.diagnostics] == []


def test_host_and_device_compilation_of_one_function() -> None:
    f = finder(
        """
        import numba
        from numba import cuda

        def clamp(x):
            return min(max(x, 0.0), 1.0)

        clamp_cpu = numba.njit(clamp)
        clamp_gpu = cuda.jit(device=True)(clamp)
        """
    )
    (fi,) = [x for x in f.funcs if x.name == "clamp"]
    assert fi.kind == "host"
    b, _ = f.module.lookup("clamp_gpu", 99)
    assert b.kind == "func" and b.value.kind == "device" and b.value.node is fi.node
    assert b.value.array_params is fi.array_params  # one pre-scan, shared by the twin


def test_signature_through_a_decorator_factory() -> None:
    f = finder(
        """
        from numba import cuda

        def kernel(sig):
            def deco(fn):
                return cuda.jit(sig)(fn)
            return deco

        @kernel("void(float32[:, :], int32)")
        def k(a, n):
            a[0, 0] = n
        """
    )
    (k,) = f.kernels()
    assert k.sig == [("f32", 2), ("s32", 0)] and k.array_params == {"a": 2}


def test_object_mode_and_unknown_decorators() -> None:
    mod = lower(
        """
        import functools
        import numba
        from numba import cuda

        @numba.jit(forceobj=True)
        def obj(a):
            return a

        @numba.jit(nopython=False)
        def maybe(a):
            return a

        @cuda.jit
        @functools.lru_cache
        def through_unknown(a):
            a[0] = 1

        @some_registry.register
        @cuda.jit
        def under_unknown(a):
            a[0] = 1
        """
    )
    assert [k.name for k in mod.kernels] == ["through_unknown", "under_unknown"]


def test_factory_parameter_seeded_from_its_call_only() -> None:
    # `backend` is numba.cuda only because the call says so; `other` gets nothing known
    mod = lower(
        """
        from numba import cuda

        def build(backend):
            @backend.jit
            def k(a):
                backend.syncthreads()
                a[backend.threadIdx.x] = 1

            return k

        def build_other(other):
            @other.jit
            def not_numba(a):
                a[0] = 1

            return not_numba

        kern = build(backend=cuda)
        fake = build_other(object())
        """
    )
    assert [k.name for k in mod.kernels] == ["k"]
    assert [d.code for d in mod.diagnostics] == []
    assert len([i for i in mod.kernels[0].instrs() if i.op is Opcode.BARRIER]) == 1


def test_cycles_and_self_reference_end() -> None:
    mod = lower(
        """
        from numba import cuda

        def f(a):
            a[0] = 1

        f = cuda.jit(f)
        f = cuda.jit(f)

        def loop(fn):
            return loop(fn)

        def jit(fn):
            return jit(fn) if fn else cuda.jit(fn)

        @jit
        def g(a):
            a[0] = 2

        x = y = None
        x = y
        y = x
        loop(f)
        """
    )
    assert [k.name for k in mod.kernels] == ["f", "g"]


def test_star_import_names_below_explicit_bindings() -> None:
    mod = lower(
        """
        from numba.cuda import *

        def syncthreads():
            pass

        @jit
        def k(a):
            syncthreads()
            a[threadIdx.x] = 1
        """
    )
    (k,) = mod.kernels
    # the file's own syncthreads shadows numba.cuda's: not a barrier
    assert not [i for i in k.instrs() if i.op is Opcode.BARRIER]
    assert [i.attrs["name"] for i in k.instrs() if i.op is Opcode.SPECIAL] == ["tid.x"]


def test_a_method_called_through_self_compiles_what_it_is_handed() -> None:
    # numba-cuda's math tests: self.wrapper(f) -> self.template(f) -> cuda.jit(sig)(f)
    mod = lower(
        """
        from numba import cuda, float32

        def scaled(a, b):
            b[cuda.grid(1)] = a[cuda.grid(1)] * 2

        def unused(a, b):
            b[0] = a[0]

        class Tests:
            def template(self, func):
                cuda.jit((float32[::1], float32[::1]))(func)

            def wrapper(self, func):
                self.template(func)

            @staticmethod
            def not_a_method(self, func):
                cuda.jit(func)

            def test_scaled(self):
                self.wrapper(scaled)
        """
    )
    assert [k.name for k in mod.kernels] == ["scaled"]


def test_self_that_is_reassigned_is_not_followed() -> None:
    mod = lower(
        """
        from numba import cuda

        def body(a):
            a[0] = 1

        class Tests:
            def template(self, func):
                cuda.jit(func)

            def test(self):
                self = object()
                self.template(body)
        """
    )
    assert mod.kernels == []


def test_a_star_import_of_an_unknown_module_may_bring_numba() -> None:
    mod = lower(
        """
        from helpers import *

        @numba.cuda.jit
        def k(a):
            a[numba.cuda.threadIdx.x] = 1
            numba.cuda.syncthreads()
        """
    )
    (k,) = mod.kernels
    assert [i.op for i in k.instrs() if i.op is Opcode.BARRIER] == [Opcode.BARRIER]
    assert mod.diagnostics == []


def test_numba_bound_by_the_file_beats_a_star_import() -> None:
    mod = lower(
        """
        from helpers import *
        import fake_numba as numba

        @numba.cuda.jit
        def k(a):
            a[0] = 1
        """
    )
    assert mod.kernels == []


def test_a_module_if_on_a_constant_binds_only_the_arm_taken() -> None:
    mod = lower(
        """
        from numba import config, cuda, float32

        BIG = False
        if config.ENABLE_CUDASIM:
            N = 4
        else:
            N = 64
        if BIG:
            M = 256
        else:
            M = 32

        @cuda.jit
        def k(a):
            s = cuda.shared.array((N, M), float32)
            s[0, 0] = a[0]
        """
    )
    (k,) = mod.kernels
    assert [b.shape for b in k.buffers.values()] == [(64, 32)]
    assert mod.diagnostics == []


def test_a_module_if_on_an_unknown_test_leaves_the_value_unknown() -> None:
    mod = lower(
        """
        import os
        from numba import cuda, float32

        if os.environ.get("BIG"):
            N = 64
        else:
            N = 4

        @cuda.jit
        def k(a):
            s = cuda.shared.array(N, float32)
            s[0] = a[0]
        """
    )
    (k,) = mod.kernels
    assert [b.shape for b in k.buffers.values()] == [(None,)]
    assert [d.code for d in mod.diagnostics] == ["TL002"]


def test_numba_cudas_own_configuration_is_not_the_simulator() -> None:
    mod = lower(
        """
        from numba import cuda, float32
        from numba.cuda.core import config

        if config.ENABLE_CUDASIM:
            tpb = 4
        else:
            tpb = 16

        @cuda.jit
        def k(a):
            s = cuda.shared.array((tpb, tpb), float32)
            s[0, 0] = a[0]
        """
    )
    assert [b.shape for b in mod.kernels[0].buffers.values()] == [(16, 16)]
