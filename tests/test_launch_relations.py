"""An argument the launch computes from its block and its other arguments
(`launch.relations`): ``k<<<grid, block>>>(..., block.x + 2 * radius, radius)``
fixes ``tilew == blockDim.x + 2 * r`` whatever ``block`` and ``radius`` are.

The host snippets' answers are read off the code: which relation each
launch states (or none, for what is not linear in the parameters or names
a value no parameter gets), the words the messages use, and that the
solver holds the relation (the postProcessGL-style apron tile is clean
with it and its one-apron-short twin is not: `fixtures/cuda/launch/`).
"""

from __future__ import annotations

import pytest

from tolk_lint.launch.cuda_source import scan
from tolk_lint.launch.mangled import Entry

KERNEL = "__global__ void k(float *x, int w, int r, unsigned u, long long big) { }\n"


def relations(host: str) -> dict[str, str]:
    """Parameter name -> its relation, in words, under the file's launches of `k`."""
    src = scan(KERNEL + host, "k.cu")
    shapes = [s for s in src.shapes_for(Entry(("k",)), 5)]
    assert shapes, "the launch is read"
    out = {}
    for s in shapes:
        for f in s.arguments:
            if f.relation is not None:
                out[f.name] = f.relation.words()
    return out


def launcher(args: str, block: str = "dim3 block(16, 16);") -> str:
    return f"void go(float *x, int radius, unsigned n, int blk) {{ {block} k<<<1, block>>>({args}); }}\n"


@pytest.mark.parametrize(
    "args, words",
    [
        ("x, block.x + (2 * radius), radius, n, 0", {"w": "blockDim.x + 2 * r"}),
        ("x, block.y - radius - 1, radius, n, 0", {"w": "blockDim.y - r - 1"}),
        ("x, (radius << 2) + 3, radius, n, 0", {"w": "4 * r + 3"}),
        ("x, -radius, radius, n, 0", {"w": "-r"}),
        ("x, 2 * (block.x + radius), radius, n, 0", {"w": "2 * blockDim.x + 2 * r"}),
    ],
)
def test_a_linear_argument_is_a_relation(args, words):
    assert relations(launcher(args)) == words


@pytest.mark.parametrize(
    "args",
    [
        "x, radius * radius, radius, n, 0",  # a product of two parameters: not linear
        "x, block.x / radius, radius, n, 0",  # a division does not commute with the wrap
        "x, block.x + blk, radius, n, 0",  # `blk` is no parameter's argument
        "x, foo(radius), radius, n, 0",  # a call
    ],
)
def test_what_is_not_a_relation(args):
    assert "w" not in relations(launcher(args))


def test_a_term_of_another_width_is_not_read():
    """``big`` is 64 bits wide and ``w`` 32: the relation would not hold
    in ``w``'s width once ``big`` is truncated, so none is stated."""
    host = "void go(float *x, long long m) { dim3 block(16); k<<<1, block>>>(x, block.x + m, 1, 1, m); }\n"
    assert "w" not in relations(host)


def test_a_relation_holds_only_when_every_launch_states_it():
    one = "void a(float *x, int radius) { dim3 block(16, 16); k<<<1, block>>>(x, block.x + 2 * radius, radius, 0, 0); }\n"
    same = "void b(float *x, int radius) { dim3 block(16, 16); k<<<2, block>>>(x, block.x + 2 * radius, radius, 1, 0); }\n"
    other = "void c(float *x, int radius) { dim3 block(16, 16); k<<<2, block>>>(x, block.x + radius, radius, 1, 0); }\n"
    assert relations(one + same) == {"w": "blockDim.x + 2 * r"}
    assert relations(one + other) == {}
