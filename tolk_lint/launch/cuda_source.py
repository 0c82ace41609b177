"""The launches in a CUDA source, read back for the PTX compiled from it.

A PTX file's ``.file`` table names the CUDA sources it came from (nvcc
``-lineinfo``); when one is readable, it is read (`read_source`: the file
and the constants of the headers it includes), its kernels, functions and
launches found (`cuda_structure`: ``kernel<<<grid, block>>>(...)``,
``cudaLaunchKernel``; `c_syntax` is the lexer and the constant evaluator),
and each launch matched to the PTX entries it launches (`mangled` reads
their C++ names: ``MatrixMulCUDA<32><<<grid, threads>>>`` launches
``_Z13MatrixMulCUDAILi32EE...``; a launch without template arguments
matches every instantiation, as C++ deduces them). This module values what
a launch writes:

The block is a constant expression: a number, ``dim3(16, 16)``, or a
variable of the launching function (``dim3 threads(BLOCK, BLOCK);``, ``int
threads = 256;``, later ``threads.x = 32;`` assignments), with names from
``#define``, ``constexpr`` / ``const`` declarations and ``enum``s, the
value an enclosing ``if (block_size == 16)`` gives a variable, and the
template arguments a host function template is called with (``run<16>()``
launching ``kernel<BS><<<grid, dim3(BS, BS)>>>``: one shape per
instantiation). A block that is not a constant (a function parameter, a
value read at run time) gives no shape (an `UNREAD` one, named by TL205),
unless the host's code bounds each of its dimensions (`bounded_block`: the
box FDTD3d's ``dimBlock.y = min(request / 32, 16)`` and its check give) or
the occupancy API chose it (`occupancy`).
A ``tolk: launch`` comment above the kernel's definition is read too
(`comments`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from tolk_lint.launch import host_eval
from tolk_lint.launch.arguments import hull, launch_facts
from tolk_lint.launch.bounded_block import bounded_block
from tolk_lint.launch.c_syntax import (
    ASSIGN_OPS,
    Evaluator,
    Token,
    lex,
    matching,
    matching_open,
    split_args,
    split_top,
    statement_end,
)
from tolk_lint.launch.comments import comment_above, comment_shape
from tolk_lint.launch.cuda_structure import (
    DECL_WORDS,
    Function,
    KernelDef,
    Launch,
    binds_on_every_path,
    changed_in_place,
    declaration_type,
    in_parens,
    innermost,
    read_structure,
    source_text,
    statement_start,
)
from tolk_lint.launch.mangled import UNKNOWN_ARG, Entry, is_type_name, same_type
from tolk_lint.launch.occupancy import occupancy_contract
from tolk_lint.launch.grid_form import ONE, grid_parts
from tolk_lint.launch.shapes import MAX_GRID, UNREAD, GridRange, LaunchShape, as_grid, grid_hull, valid_block

MAX_SOURCE_BYTES = 4 * 1024 * 1024
_MAX_SIBLINGS_SCANNED = 32  # C++ sources of a launching file's folder looked into for its callers
_SIBLING_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
_MAX_DEPTH = 12


@dataclass
class CudaSource:
    path: str
    label: str  # the file's name, for messages
    text: str
    lines: list[str]
    tokens: list[Token]
    comments: list[tuple[int, str]]
    defines: dict[str, list]
    kernels: list[KernelDef] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    globals_: dict[str, list[tuple[int, list[Token]]]] = field(default_factory=dict)  # name -> (index, init)
    included: list[tuple[str, tuple[int, int]]] = field(default_factory=list)  # headers read: (path, stamp)

    def changes(self, func: Function, name: str, index: int) -> bool:
        """Whether ``func`` changes ``name`` other than by the bindings a
        launch at ``index`` reads (`_changed`)."""
        return _changed(self, func, name, index)

    def beside_mentioning(self, text: str) -> list[CudaSource]:
        """The C++ sources beside this one (`.cu`, `.cpp`, `.cc`, `.cxx` in its
        folder) whose text holds ``text`` (spaces before ``(`` ignored), read:
        where a launching function's callers in other files are looked for
        (`arguments._callers_range`)."""
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            names = sorted(f for f in os.listdir(folder) if f.endswith(_SIBLING_SUFFIXES))[:_MAX_SIBLINGS_SCANNED]
        except OSError:
            return []
        out = []
        for f in names:
            other = os.path.join(folder, f)
            if os.path.abspath(other) == os.path.abspath(self.path):
                continue
            try:
                with open(other, encoding="utf-8", errors="replace") as fh:
                    if text not in fh.read(1 << 20).replace(" (", "("):
                        continue
            except OSError:
                continue
            got = read_source(other)
            if got is not None:
                out.append(got)
        return out

    # -- what a kernel is launched with ---------------------------------------------------------

    def shapes_for(self, entry: Entry, n_params: int | None = None, params: tuple = (),
                   max_threads: int | None = None) -> list[LaunchShape]:  # fmt: skip
        """The host launches of the kernel ``entry`` names, one per distinct
        block, each with what its launches' arguments fix (`arguments`; for
        an entry of ``n_params`` parameters, declared in this file or, when
        it launches a kernel another source declares, as ``params`` says).
        A launch whose block ``cudaOccupancyMaxPotentialBlockSize`` chose
        gives the blocks it can choose (`occupancy`: a `Contract`, within the
        kernel's ``max_threads``, its ``.maxntid``)."""
        by_block: dict[tuple[int, int, int], list[tuple[int, str]]] = {}
        facts: dict[tuple[int, int, int], list] = {}
        grids: dict[tuple[int, int, int], list] = {}
        params = self.kernel_params(entry, n_params) or params
        unread: list[LaunchShape] = []
        out_contract: list[LaunchShape] = []
        for launch, binding in self._instances():
            if not _matches(self, launch, entry, binding):
                continue
            got = self.block_of(launch, binding)
            chosen = occupancy_contract(self, launch, max_threads) if got is None and not binding else None
            if got is None and chosen is None:  # not a constant: bounded, perhaps, by the host's code
                bounded = bounded_block(self, launch, binding)
                if bounded is not None and isinstance(bounded[0], tuple):
                    got = bounded  # (its checks leave one block)
                elif bounded is not None:
                    chosen = bounded  # type: ignore[assignment]
            if chosen is not None:  # linted under every block the occupancy API can give
                contract, words = chosen
                fixed = hull([launch_facts(self, launch, binding, params)]) if params else ()
                out_contract.append(LaunchShape(None, f"the launch `{launch.text}` at {self.label}:{launch.line}, "
                                                f"{words}", "host launch", contract=contract, path=self.path,
                                                line=launch.line, arguments=fixed,
                                                grid=grid_hull([self.grid_of(launch, binding)])))  # fmt: skip
                continue
            if got is None:  # its block is not a constant: named by TL205, never linted under
                # (what its arguments fix still holds: `choose.use` keeps it when every launch is so)
                fixed = hull([launch_facts(self, launch, binding, params)]) if params else ()
                unread.append(LaunchShape(None, f"the launch `{launch.text}` at {self.label}:{launch.line}", UNREAD,
                                          path=self.path, line=launch.line, arguments=fixed))  # fmt: skip
                continue
            block, text = got
            by_block.setdefault(block, []).append((launch.line, text))
            facts.setdefault(block, []).append(launch_facts(self, launch, binding, params) if params else {})
            grids.setdefault(block, []).append(self.grid_of(launch, binding))
        out = []
        for block, where in by_block.items():
            srcs = list(dict.fromkeys(text for _line, text in where))
            out.append(LaunchShape(block, " and ".join(srcs), "host launch", path=self.path, line=where[0][0],
                                   arguments=hull(facts[block]), grid=grid_hull(grids[block])))  # fmt: skip
        return out + out_contract + unread

    def kernel_params(self, entry: Entry, n_params: int | None) -> tuple:
        """The declared parameters of the kernel ``entry`` names, when one
        definition of it has ``n_params`` of them (else none: unknown)."""
        found = {kd.params for kd in self.kernels if kd.name == entry.name and len(kd.params) == n_params}
        return next(iter(found)) if len(found) == 1 else ()

    def comment_for(self, entry: Entry) -> LaunchShape | None:
        marker_lines = {ln for ln, text in self.comments if text.startswith("//")}
        for kd in self.kernels:
            if kd.name != entry.name:
                continue
            got = comment_above(self.lines, kd.line, "//", skip=lambda t: False)
            if got is not None and got[0] in marker_lines:
                return comment_shape(got[0], got[1], self.path, self.label)
        return None

    def _instances(self) -> list[tuple[Launch, dict[str, int]]]:
        """Each launch with the template arguments its function is
        instantiated with (``launch<16>(...)`` calls it; none: as written)."""
        out = []
        for launch in self.launches:
            f = launch.func
            bindings = self._instantiations(f) if f is not None and f.template_params else []
            out += [(launch, b) for b in bindings or [{}]]
        return out

    def _instantiations(self, f: Function) -> list[dict[str, int]]:
        """The integer template arguments of the calls ``f<...>(...)`` outside ``f``."""
        toks = self.tokens
        out: list[dict[str, int]] = []
        for i in range(len(toks) - 1):
            if toks[i].text != f.name or toks[i + 1].text != "<" or f.start <= i <= f.end:
                continue
            close = next((j for j in range(i + 2, min(len(toks), i + 64)) if toks[j].text == ">"), None)
            if close is None or close + 1 >= len(toks) or toks[close + 1].text != "(":
                continue
            func = innermost(self.functions, i)
            args = split_args(toks[i + 2 : close])
            binding = {}
            for name, arg in zip(f.template_params, args):
                v = self._evaluator(self._resolver(i, func, [], 1)).value(arg)
                if isinstance(v, int):
                    binding[name] = v
            if binding and binding not in out:
                out.append(binding)
        return out

    def block_of(self, launch: Launch, binding: dict[str, int] | None = None) -> tuple[tuple[int, int, int], str] | None:
        """The launch's block and, in words, where it is written (``binding``:
        its function's template arguments). As for the grid, no variable it
        is computed from may be changed other than by the bindings read
        (`_changed`): ``blockSize *= 2`` before the launch, or a ``threads.x
        = 128`` under an ``if``, leaves the block unread (never one wrong
        block)."""
        where = [f"the launch `{launch.text}` at {self.label}:{launch.line}"]
        name_at = self._resolver(launch.index, launch.func, where, 0, binding, stable=True)
        v = self._evaluator(name_at).value(launch.block)
        if isinstance(v, int):
            v = (v, 1, 1)
        if not isinstance(v, tuple) or not valid_block(v):
            return None
        if binding and launch.func is not None:
            args = ", ".join(f"{k} = {x}" for k, x in binding.items())
            return v, f"{where[-1]} (with {args}: `{launch.func.name}<...>` is called so)"
        return v, where[-1]

    def grid_of(self, launch: Launch, binding: dict[str, int] | None = None) -> GridRange | None:
        """The launch's grid when it is a constant (``gridSize - 1`` with
        ``int gridSize = n_elements / blockSize;``), read as the block is
        but with no variable the function changes in any other way
        (`_changed`): the grid says which blocks run, so a grid read wrong
        would hide what the others do. Not a constant: what its form says
        (`grid_form`: an integer grid is one block high and deep), or None."""
        if launch.grid is None:
            return None
        name_at = self._resolver(launch.index, launch.func, [], 0, binding, stable=True)
        value = self._evaluator(name_at).value(launch.grid)
        if value is not None:
            return as_grid(value)
        parts = grid_parts(self, launch)
        if parts is None:
            return None
        dims = []
        for d, part in enumerate(parts):
            if part == ONE:
                dims.append((1, 1))
                continue
            expr, at = part
            v = self._evaluator(self._resolver(at, launch.func, [], 0, binding, stable=True)).value(expr)
            known = isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_GRID[d]
            dims.append((v, v) if known else (1, MAX_GRID[d]))
        return (dims[0], dims[1], dims[2])

    def _evaluator(self, name_at) -> Evaluator:
        """An evaluator of constant expressions whose names ``name_at``
        values and whose calls of the file's own functions are run
        (`_fold_call`): ``dim3 grid(iDivUp(n, 16))``."""
        return Evaluator(name_at, self._fold_call)

    def _fold_call(self, name: str, args: list[int]) -> int | None:
        """What the file's function ``name`` returns for the integer
        ``args`` (``iDivUp(1000, 16)`` is 63), run by `host_eval` with C's
        conversions to its parameters' types; None when there is no one
        such function, an argument is not a value of its parameter's type,
        or the run is unknown (a float, a global, too many steps)."""
        funcs = [f for f in self.functions if f.name == name and len(f.param_list) == len(args)]
        if len(funcs) != 1:
            return None
        exprs = []
        for (pname, ptype), v in zip(funcs[0].param_list, args):
            if ptype is None or pname in funcs[0].references or not ptype.lo <= v <= ptype.hi:
                return None
            exprs.append(("num", host_eval.Int(v, ptype)))
        machine = host_eval.Machine(self, lambda _n: None)
        try:
            got = machine.value(("call", name, exprs), None)
        except (host_eval.Unknown, IndexError, RecursionError):
            return None
        return got.v if isinstance(got, host_eval.Int) else None

    # -- names ----------------------------------------------------------------------------------------

    def _resolver(self, index: int, func: Function | None, where: list[str], depth: int,
                  outer: dict[str, int] | None = None, stable: bool = False):  # fmt: skip
        """How names are valued at ``index``: ``outer`` holds what the
        launch's own guards fix (a parameter ``if (block_size == 16)``
        tests has that value in every statement of the function before the
        launch too: parameters are not reassigned here). ``stable``: a
        variable the function changes other than by the bindings read here
        (``grid *= 2`` in a loop, ``grid.x += 1``, ``&n``) is unknown."""
        guards = {**self._guards(index, func), **(outer or {})}

        def name_at(name: str) -> Any:
            if depth > _MAX_DEPTH:
                return None
            if name in guards:
                return guards[name]
            if func is not None:
                if stable and _changed(self, func, name, index):
                    return None
                got = self._local(name, index, func, where, depth, guards, stable)
                if got is not _NOT_FOUND:
                    return got
                if name in func.params:
                    return None
            return self._global(name, index, depth)

        return name_at

    def _local(self, name: str, index: int, func: Function, where: list[str], depth: int,
               guards: dict[str, int], stable: bool = False) -> Any:  # fmt: skip
        """The value the function's last binding of ``name`` before ``index`` gives it."""
        toks = self.tokens
        for j in range(index - 1, func.start, -1):
            if toks[j].text != name or toks[j].kind != "name":
                continue
            prev = toks[j - 1].text if j > 0 else ""
            nxt = toks[j + 1].text if j + 1 < len(toks) else ""
            if prev == "," and not in_parens(toks, func.start, j):
                # a later declarator of one declaration: `dim3 grid(n / 32), threads(32, 8);`
                prev = declaration_type(toks, j, func.start) or prev
            declared = prev in DECL_WORDS or (toks[j - 1].kind == "name" and prev not in ("return",) and
                                               nxt in ("(", "{", "="))  # fmt: skip
            assigned = nxt == "=" and prev in (";", "{", "}")
            if prev == "dim3" and nxt in (";", ","):  # `dim3 threads;`: (1, 1, 1), then its members
                v = self._members(name, (1, 1, 1), j, index, func, depth, stable)
                if v is not None:
                    where.append(f"`dim3 {name}` and its members at {self.label}:{toks[j].line}")
                return v
            if not (declared or assigned) or nxt not in ("(", "{", "=") or in_parens(toks, func.start, j):
                continue
            stmt_end = statement_end(toks, j)
            if nxt == "=":
                init = toks[j + 2 : stmt_end]
            else:
                close = matching(toks, j + 1)
                init = [Token("name", "dim3", toks[j].line)] + toks[j + 1 : close + 1] if prev == "dim3" else \
                    toks[j + 2 : close]  # fmt: skip
            sub = self._resolver(j, func, [], depth + 1,
                                 {n: v for n, v in guards.items() if n in func.params or n in func.template_params},
                                 stable)  # fmt: skip
            v = self._evaluator(sub).value(init)
            if v is None:
                return None
            if isinstance(v, int) and prev == "dim3":
                v = (v, 1, 1)
            v = self._members(name, v, j, index, func, depth, stable)
            if v is not None:
                start = statement_start(toks, j, func.start)
                where.append(f"`{source_text(toks[start:stmt_end], self.text)}` at {self.label}:{toks[start].line}")
            return v
        return _NOT_FOUND

    def _members(self, name: str, v: Any, decl: int, index: int, func: Function, depth: int,
                 stable: bool = False) -> Any:  # fmt: skip
        """``threads.x = 32;`` between the declaration and the launch."""
        toks = self.tokens
        for j in range(decl + 1, index):
            if toks[j].text == name and j + 3 < index and toks[j + 1].text == "." and toks[j + 3].text == "=":
                member = toks[j + 2].text
                if member not in ("x", "y", "z") or not isinstance(v, tuple):
                    return None
                end = statement_end(toks, j)
                x = self._evaluator(self._resolver(j, func, [], depth + 1, stable=stable)).value(toks[j + 4 : end])
                if not isinstance(x, int):
                    return None
                dims = list(v)
                dims["xyz".index(member)] = x
                v = (dims[0], dims[1], dims[2])
        return v

    def _global(self, name: str, index: int, depth: int) -> Any:
        """A ``constexpr``/``const`` declaration outside functions, an
        ``enum`` member, or a ``#define``."""
        decls = self.globals_.get(name)
        if decls:
            before = [d for d in decls if d[0] < index] or decls
            j, init = before[-1]
            return self._evaluator(self._resolver(j, None, [], depth + 1)).value(init)
        d = self.defines.get(name)
        if d:
            return self._evaluator(self._resolver(index, None, [], depth + 1)).value(list(d[-1]))
        return None

    def _guards(self, index: int, func: Function | None) -> dict[str, int]:
        """The variables an enclosing ``if (v == constant)`` fixes at
        ``index``, or the ``case constant:`` of an enclosing ``switch (v)``
        that ``index`` is under (NVIDIA's samples pick a template instance
        by ``switch (threads) { case 256: kernel<256><<<grid, threads>>>...``)."""
        out: dict[str, int] = {}
        if func is None:
            return out
        toks = self.tokens
        for j in range(func.start, index):
            if toks[j].text == "switch" and j + 1 < len(toks) and toks[j + 1].text == "(":
                got = self._case_at(j, index)
                if got is not None:
                    out[got[0]] = got[1]
                continue
            if toks[j].text != "if" or j + 1 >= len(toks) or toks[j + 1].text != "(":
                continue
            close = matching(toks, j + 1)
            body = close + 1
            if body >= len(toks):
                continue
            end = matching(toks, body) if toks[body].text == "{" else statement_end(toks, body)
            if not body <= index <= end:
                continue
            for conj in split_top(toks[j + 2 : close], "&&"):
                if len(conj) >= 3 and conj[1].text == "==" and conj[0].kind == "name":
                    v = self._evaluator(self._resolver(j, None, [], 1)).value(conj[2:])
                    if isinstance(v, int):
                        out[conj[0].text] = v
        return out


    def _case_at(self, j: int, index: int) -> tuple[str, int] | None:
        """``(v, c)`` when token ``index`` is in the ``switch (v)`` at ``j``
        under the label ``case c:`` alone: no other label before it in the
        same run of statements, and no fall-through into it."""
        toks = self.tokens
        close = matching(toks, j + 1)
        cond = toks[j + 2 : close]
        body = close + 1
        if len(cond) != 1 or cond[0].kind != "name" or body >= len(toks) or toks[body].text != "{":
            return None
        end = matching(toks, body)
        if not body < index < end:
            return None
        label = None
        depth = 0
        for k in range(body + 1, index):
            t = toks[k].text
            if t in ("{", "(", "["):
                depth += 1
            elif t in ("}", ")", "]"):
                depth -= 1
            elif depth == 0 and t in ("case", "default"):
                prev = toks[k - 1].text
                if label is not None and prev not in (":",) and not _ends_path(toks, k):
                    return None  # the statements of the label before fall through into this one
                label = None if t == "default" or prev == ":" else k
        if label is None:
            return None
        colon = next((k for k in range(label + 1, index) if toks[k].text == ":"), None)
        if colon is None:
            return None
        v = self._evaluator(self._resolver(label, None, [], 1)).value(toks[label + 1 : colon])
        return (cond[0].text, v) if isinstance(v, int) else None


def _changed(src: CudaSource, func: Function, name: str, index: int) -> bool:
    """Whether ``func`` changes the variable ``name`` other than by what
    `CudaSource._local` reads (a declaration, ``name = ...`` before token
    ``index``, ``name.x = ...`` before it): ``name`` assigned after the
    launch (a loop brings it back), a compound assignment, an increment, its
    address taken, it passed to a reference, a member changed so, or a
    binding before the launch that not every path to it runs (``if (n <
    256) threads.x = 128;``: the launch may have either value)."""
    toks = src.tokens
    for j in range(func.start + 1, func.end):
        if toks[j].text != name or toks[j].kind != "name" or toks[j - 1].text in (".", "->", "::"):
            continue
        if j > index and _never_back(toks, j, index, func):
            continue  # (`nblocks.x = ...; ...; break;` after the launch, in its loop)
        if j < index and _declared_in_closed_scope(toks, name, j, index, func.start):
            continue  # another variable of the name: `{ dim3 blockSize(32); ... }` before this launch's own
        if changed_in_place(src, j):
            return True
        prev, nxt = toks[j - 1].text, toks[j + 1].text
        k = j + 3 if nxt == "." and j + 3 < func.end else j + 1  # `grid.x op ...`
        op = toks[k].text
        declared = prev in DECL_WORDS or (toks[j - 1].kind == "name" and prev != "return" and nxt in ("(", "{"))
        if j < index and (op in ASSIGN_OPS or declared) and not binds_on_every_path(toks, j, index, func.start):
            return True
        if op in ("++", "--") or (op in ASSIGN_OPS and (op != "=" or j > index)):
            if not (op == "=" and k == j + 1 and toks[j - 1].kind == "name" and prev != "return"):
                return True  # (a declaration `int g = ...` after the launch is another variable's)
    return False


def _declared_in_closed_scope(toks: list[Token], name: str, j: int, index: int, start: int) -> bool:
    """Whether token ``j`` (before the launch at ``index``) names a variable
    declared in braces that close before the launch: volumeFiltering's
    ``{ dim3 blockSize(32, 1, 1); ... }`` beside a later ``{ dim3
    blockSize(16, 16, 1); kernel<<<..., blockSize>>>(...); }``."""
    for brace in reversed(_open_braces(toks, start, j)):  # innermost first
        if matching(toks, brace) > index:
            return False  # braces that hold the launch too: the launch's own variable
        depth = 0
        for m in range(brace + 1, j + 1):
            t = toks[m].text
            depth += (t == "{") - (t == "}")
            if depth == 0 and t == name and toks[m].kind == "name" and toks[m - 1].text in DECL_WORDS:
                return True
    return False


def _never_back(toks: list[Token], j: int, index: int, func: Function) -> bool:
    """Whether no path from token ``j`` (after the launch at ``index``) runs
    the launch again. NVIDIA's jacobi launches ``JacobiMethod<<<nblocks,
    ...>>>`` in a loop whose body, once converged, sets ``nblocks.x`` for
    another kernel and leaves with ``break;``. That holds when, in the
    innermost braces around ``j``, a statement after ``j``'s own ends the
    block's run of statements with ``return``, or with
    ``break;`` out of a loop (not a ``switch``) no other loop of the function
    encloses; with no ``continue``, ``goto``, label or ``case`` between
    (which could jump elsewhere), and ``j`` in no lambda (whose ``return``
    leaves only it)."""
    stmt = statement_start(toks, j, func.start)
    if stmt <= index:
        return False  # (the launch is in the statement that changes it)
    opens = _open_braces(toks, func.start, j)
    if not opens or any(_lambda_body(toks, b) for b in opens):
        return False
    close = matching(toks, opens[-1])
    depth = 0
    for k in range(j + 1, close):
        t = toks[k].text
        if t in ("continue", "goto", "case", "default") or (t == ":" and toks[k - 1].kind == "name"
                                                            and toks[k - 2].text in (";", "{", "}")):  # fmt: skip
            return False
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and toks[k - 1].text in (";", "{", "}") and t == "return":
            return True
        elif depth == 0 and toks[k - 1].text in (";", "{", "}") and t == "break":
            return _leaves_every_loop(toks, opens, k)
    return False


_LOOP_WORDS = ("for", "while", "do", "switch")


def _leaves_every_loop(toks: list[Token], opens: list[int], brk: int) -> bool:
    """Whether the ``break`` at ``brk`` (with the braces ``opens`` open)
    leaves a loop that no other loop of the function encloses. Read
    conservatively: the loop is the only braced loop or switch around it, no
    loop or switch word stands between its braces and the ``break`` (an
    unbraced ``while (c) if (d) { ...; break; }`` would be the one left), and
    it is a statement of its own (not the body of an unbraced loop)."""
    loops = [b for b in opens if _opener(toks, b) in _LOOP_WORDS]
    if len(loops) != 1 or _opener(toks, loops[0]) == "switch":
        return False
    if any(toks[k].text in _LOOP_WORDS for k in range(loops[0] + 1, brk)):
        return False
    word = _opener_index(toks, loops[0])
    return word > 0 and toks[word - 1].text in (";", "{", "}")


def _open_braces(toks: list[Token], start: int, j: int) -> list[int]:
    """The ``{`` still open at token ``j`` inside the function (whose own
    ``{`` is at or after ``start``), outermost first, the function's body excluded."""
    stack: list[int] = []
    for k in range(start, j):
        if toks[k].text == "{":
            stack.append(k)
        elif toks[k].text == "}" and stack:
            stack.pop()
    return stack[1:]


def _opener(toks: list[Token], brace: int) -> str:
    """The word that opens the braces at ``brace``: ``for``/``while``/``switch``
    (``for (...) {``), ``do``, ``else``, or ``if``/another word."""
    k = _opener_index(toks, brace)
    return toks[k].text if k >= 0 else ""


def _opener_index(toks: list[Token], brace: int) -> int:
    """The token index of `_opener`'s word."""
    k = brace - 1
    if toks[k].text == ")":
        k = matching_open(toks, k) - 1
    return k


def _lambda_body(toks: list[Token], brace: int) -> bool:
    """Whether the braces at ``brace`` are a lambda's body (``[&](...) {``, ``[=] {``)."""
    k = brace - 1
    while k > 0 and toks[k].kind == "name" and toks[k].text in ("mutable", "noexcept"):
        k -= 1
    if toks[k].text == ")":
        k = matching_open(toks, k) - 1
    return toks[k].text == "]" if k >= 0 else False




def _ends_path(toks: list[Token], k: int) -> bool:
    """Whether the statement before token ``k`` is ``break;``, ``return ...;``
    or ``continue;`` (a switch's label after it is not fallen into)."""
    if k < 2 or toks[k - 1].text != ";":
        return False
    s = k - 2
    while s > 0 and toks[s - 1].text not in (";", "{", "}", ":"):
        s -= 1
    return toks[s].text in ("break", "return", "continue", "goto", "throw")


class _NotFound:
    pass


_NOT_FOUND: Any = _NotFound()


# -- reading a file ---------------------------------------------------------------------------------------


def read_source(path: str, depth: int = 0) -> CudaSource | None:
    """The CUDA source at ``path``, read and scanned, with the constants of
    the headers it includes (None: unreadable)."""
    try:
        st = os.stat(path)
        if st.st_size > MAX_SOURCE_BYTES:
            return None
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
        got = _CACHE.get(key)
        if got is not None and all(_stamp(h) == stamp for h, stamp in got.included):
            return got
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    src = scan(text, path, depth)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = src
    return src


_CACHE: dict[tuple, CudaSource] = {}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
_MAX_INCLUDE_DEPTH = 4


def scan(text: str, path: str, depth: int = 0) -> CudaSource:
    """``text`` (the file at ``path``) read: its tokens, kernels, functions
    and launches, and the ``#define`` and ``constexpr`` constants of the
    headers it includes with quotes (``#include "mergeSort_common.h"``,
    found beside it), which its launches' blocks are often written with.
    Only the headers' constants are taken: their functions and launches are
    not read."""
    tokens, comments, defines = lex(text)
    by_name: dict[str, list] = {}
    globals_: dict[str, list[tuple[int, list[Token]]]] = {}
    included: list[tuple[str, tuple[int, int]]] = []
    for header in _headers(text, path) if depth < _MAX_INCLUDE_DEPTH else []:
        got = read_source(header, depth + 1)
        if got is None:
            continue
        included += [(header, _stamp(header))] + got.included
        for name, toks in got.defines.items():
            by_name.setdefault(name, []).extend(toks)
        for name, decls in got.globals_.items():  # before every token of this file
            globals_.setdefault(name, []).extend((-1, init) for _j, init in decls)
    for d in defines:
        by_name.setdefault(d.name, []).append(d.tokens)
    src = CudaSource(path, os.path.basename(path), text, text.splitlines(), tokens, comments, by_name,
                     globals_=globals_, included=included)  # fmt: skip
    read_structure(src)
    return src


def _headers(text: str, path: str) -> list[str]:
    """The files ``#include "..."`` names, found beside ``path``."""
    here = os.path.dirname(os.path.abspath(path))
    out = []
    for m in _INCLUDE.finditer(text):
        p = os.path.normpath(os.path.join(here, m.group(1)))
        if p != os.path.abspath(path) and os.path.isfile(p) and p not in out:
            out.append(p)
    return out


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)




def _matches(src: CudaSource, launch: Launch, entry: Entry, binding: dict[str, int] | None = None) -> bool:
    """Whether ``launch`` launches the PTX entry ``entry``: the same name
    (and namespaces, as far as the launch spells them), and template
    arguments that agree where both are known (a launch without them lets
    C++ deduce them: it matches every instantiation)."""
    if launch.parts[-1] != entry.name:
        return False
    if len(launch.parts) > 1 and tuple(launch.parts) != tuple(entry.parts[-len(launch.parts) :]):
        return False
    if not launch.targs:
        return True
    if entry.args is None:
        return False
    resolve = src._resolver(launch.index, launch.func, [], 1, binding)
    for written, mangled in zip(launch.targs, entry.args):
        if mangled is UNKNOWN_ARG or not written:
            continue
        if isinstance(mangled, (bool, int)):
            v = src._evaluator(resolve).value(written)
            if isinstance(v, int) and int(v) != int(mangled):
                return False
        elif isinstance(mangled, str):
            text = " ".join(x.text for x in written)
            if is_type_name(text) and not same_type(text, mangled):
                return False
    return True
