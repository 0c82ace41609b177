"""The block of a launch whose block size the occupancy API chose.

NVIDIA's samples often launch with the block size
``cudaOccupancyMaxPotentialBlockSize`` writes:

```c++
int minGridSize = 0, blockSize = 0;
checkCudaErrors(cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize, kernel, 0, 0));
kernel<<<gridSize, blockSize>>>(...);
```

That value is not a constant, but the runtime's header (``cuda_runtime.h``,
``cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags``) says what it
can be: it tries the multiples of the warp size (32) from the limit down,
each capped at the limit, where the limit is the smallest of 1024 (the
device's), the kernel's own ``maxThreadsPerBlock`` (its
``__launch_bounds__``, ``.maxntid`` in the PTX) and the call's
``blockSizeLimit`` argument when it is not 0. So the block is
one-dimensional, at most the limit, and, when the limit is itself a multiple
of 32, a multiple of 32 (else it may be the limit: only the bound is kept).
A block of 0 (the call failed) launches nothing.

This holds only when the variable launched with is written by that call
alone: declared in the launching function, passed by address as the call's
``blockSize`` once, on every path to the launch before it, and never
changed any other way; and when the call asks about the launched kernel
itself (another kernel's limit is not known here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tolk_lint.launch.c_syntax import Token, matching, split_args
from tolk_lint.launch.cuda_structure import (
    DECL_WORDS,
    Launch,
    binds_on_every_path,
    call_open,
    declaration_type,
    in_parens,
    passed_by_reference,
)
from tolk_lint.launch.shapes import MAX_THREADS, WARP, Contract

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource

# Each is (minGridSize, blockSize, func, dynamicSMem or its functor, blockSizeLimit[, flags]).
OCCUPANCY_APIS = frozenset({
    "cudaOccupancyMaxPotentialBlockSize",
    "cudaOccupancyMaxPotentialBlockSizeWithFlags",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMem",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags",
})  # fmt: skip
_BLOCK_ARG, _FUNC_ARG, _LIMIT_ARG = 1, 2, 4
_CHANGES = frozenset("= += -= *= /= %= &= |= ^= <<= >>= ++ --".split())


def occupancy_contract(src: CudaSource, launch: Launch, max_threads: int | None) -> tuple[Contract, str] | None:
    """The blocks ``launch`` can have when its block is a variable only
    ``cudaOccupancyMaxPotentialBlockSize`` writes, and where that call is in
    words; None: it is not such a launch (``max_threads``: the kernel's
    ``.maxntid`` bound, when it has one)."""
    func = launch.func
    toks = src.tokens
    if func is None or len(launch.block) != 1 or launch.block[0].kind != "name":
        return None
    name = launch.block[0].text
    if name in func.params:
        return None
    call = None
    declared = False
    for j in range(func.start + 1, func.end):
        t = toks[j]
        if t.text != name or t.kind != "name" or toks[j - 1].text in (".", "->", "::"):
            continue
        prev, nxt = toks[j - 1].text, toks[j + 1].text
        if prev == "&":
            got = _occupancy_call(toks, j)
            if got is None or call is not None:
                return None  # its address taken elsewhere, or two calls write it
            call = (j, got)
        elif _declares(src, j, func.start) and nxt in ("=", ";", ",", "{", "("):
            if declared or call is not None:
                return None  # (a second declaration: another variable of that name)
            declared = True
        elif prev in ("++", "--") or nxt in _CHANGES or passed_by_reference(src, j):
            return None
    if call is None or not declared:
        return None
    j, args = call
    if not j < launch.index or not binds_on_every_path(toks, j, launch.index, func.start):
        return None
    if not _names_kernel(args[_FUNC_ARG], launch):
        return None
    limit = min(MAX_THREADS, max_threads or MAX_THREADS)
    if len(args) > _LIMIT_ARG:
        v = src._evaluator(src._resolver(j, func, [], 1, stable=True)).value(args[_LIMIT_ARG])
        if not isinstance(v, int) or v < 0:
            return None
        limit = min(limit, v) if v > 0 else limit
    if limit < 1:
        return None
    # a limit that is not a multiple of 32 may itself be the block: only the bound holds then
    warp = limit % WARP == 0
    contract = Contract((limit, 1, 1), limit, "flat", warp_multiple=warp)
    api = toks[call_open(toks, j)[0] - 1].text
    return contract, f"its block from `{api}` at {src.label}:{toks[j].line}"


def _declares(src: CudaSource, j: int, start: int) -> bool:
    """Whether the name at token ``j`` is declared there: ``int blockSize``,
    or a later declarator, ``int minGridSize, blockSize;``."""
    prev = src.tokens[j - 1].text
    if prev in DECL_WORDS:
        return True
    return prev == "," and not in_parens(src.tokens, start, j) and declaration_type(src.tokens, j, start) is not None


def _occupancy_call(toks: list[Token], j: int) -> list[list[Token]] | None:
    """The arguments of the occupancy call whose ``blockSize`` argument is
    ``&name`` at token ``j``; None: ``&name`` is anything else."""
    open_ = call_open(toks, j)[0]
    if open_ < 1 or toks[open_ - 1].text not in OCCUPANCY_APIS:
        return None
    args = split_args(toks[open_ + 1 : matching(toks, open_)])
    if len(args) <= _FUNC_ARG or [t.text for t in args[_BLOCK_ARG]] != ["&", toks[j].text]:
        return None
    return args


def _names_kernel(arg: list[Token], launch: Launch) -> bool:
    """Whether the call's ``func`` argument is the launched kernel as the
    launch writes it (``kernel``, ``&kernel``, ``ns::kernel``)."""
    if launch.targs:  # another instantiation may have other bounds: not matched here
        return False
    return [t.text for t in arg if t.text not in ("&", "::")] == list(launch.parts)
