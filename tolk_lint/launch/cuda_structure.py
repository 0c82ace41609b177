"""What a CUDA source holds, read once: its kernels (``__global__``
functions, with their namespaces, template parameters and integer
parameters), the bodies of its functions, its constants outside functions
(``constexpr``, ``const``, ``enum`` members) and its launches, each with the
tokens of its grid, block and arguments as written.

`cuda_source` values those tokens (what a launch's block is); this module
only finds them:

- ``kernel<<<grid, block[, shmem[, stream]]>>>(...)``, with ``ns::`` and
  template arguments, and through a kernel pointer (``kernel =
  &transposeNaive; kernel<<<grid, threads>>>``: a launch of every kernel the
  function assigns it);
- ``cudaLaunchKernel`` / ``cudaLaunchCooperativeKernel`` with the kernel
  (cast to ``void*``, or ``&kernel``), the grid and the block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tolk_lint.launch.c_syntax import ASSIGN_OPS, Evaluator, Token, matching, split_args, statement_end
from tolk_lint.launch.c_types import IntType, int_type

if TYPE_CHECKING:
    from tolk_lint.launch.cuda_source import CudaSource

DECL_WORDS = frozenset(
    "dim3 int unsigned signed long short size_t auto const constexpr static uint32_t int32_t uint64_t int64_t "
    "uint".split()
)  # the words a local's declaration starts with
_LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel")


@dataclass
class KernelDef:
    parts: tuple[str, ...]  # namespaces and the name
    template_params: tuple[str, ...]
    line: int  # where its declaration starts (its `template` line, if any)
    name_line: int = 0  # the line of its name
    params: tuple[tuple[str, IntType | None], ...] = ()  # names and integer types (`declared_params`)

    @property
    def name(self) -> str:
        return self.parts[-1]


@dataclass
class Function:
    """A function body: token indices of its braces, its parameters, its
    name and the template parameters it is declared with."""

    start: int
    end: int
    params: frozenset[str]
    name: str = ""
    template_params: tuple[str, ...] = ()
    param_list: tuple[tuple[str, IntType | None], ...] = ()  # names and integer types, in order
    references: dict[str, tuple[IntType, bool]] = field(default_factory=dict)  # `T &x`: x -> (T, const)


@dataclass
class Launch:
    parts: tuple[str, ...]  # as written: `ns::kernel` is ("ns", "kernel")
    targs: list[list[Token]] | None  # the explicit template arguments
    block: list[Token]
    index: int  # token index of the launch
    line: int
    func: Function | None
    text: str = ""  # the launch as written, shortened
    args: list[list[Token]] | None = None  # the kernel's arguments (None: not read)
    grid: list[Token] | None = None  # the grid expression




def read_structure(src: CudaSource) -> None:
    """Kernels, function bodies, global constants, then the launches."""
    toks = src.tokens
    scopes: list[tuple[str, str]] = []  # (kind, name) per open brace outside functions
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.text == "namespace" and i + 2 < n and toks[i + 1].kind == "name" and toks[i + 2].text == "{":
            scopes.append(("namespace", toks[i + 1].text))
            i += 3
            continue
        if t.text == "{":
            if i > 0 and toks[i - 1].text in (")", "const", "noexcept", "override", "final"):
                close_paren = paren_before(toks, i)
                if close_paren is not None:
                    _function(src, scopes, close_paren, i)
                    i = matching(toks, i) + 1
                    continue
            if i > 0 and toks[i - 1].text == "enum" or (i > 1 and toks[i - 2].text == "enum"):
                _enum(src, i)
            scopes.append(("block", ""))
            i += 1
            continue
        if t.text == "}":
            if scopes:
                scopes.pop()
            i += 1
            continue
        if t.text in ("constexpr", "const"):  # outside functions: their bodies are skipped whole
            _global_decl(src, i)
        elif t.text == "dim3" and all(kind == "namespace" for kind, _ in scopes) and \
                (i == 0 or toks[i - 1].text in (";", "}", "{", "static")):  # fmt: skip
            _file_dim3(src, i)
        i += 1
    _launches(src)


def paren_before(toks: list[Token], brace: int) -> int | None:
    """The ``)`` closing a function's parameters before its body's ``{``."""
    j = brace - 1
    while j >= 0 and toks[j].text in ("const", "noexcept", "override", "final"):
        j -= 1
    return j if j >= 0 and toks[j].text == ")" else None


def open_paren(toks: list[Token], close: int) -> int | None:
    depth = 0
    for j in range(close, -1, -1):
        if toks[j].text == ")":
            depth += 1
        elif toks[j].text == "(":
            depth -= 1
            if depth == 0:
                return j
    return None


def _function(src: CudaSource, scopes, close_paren: int, brace: int) -> None:
    toks = src.tokens
    opening = open_paren(toks, close_paren)
    if opening is None or opening == 0 or toks[opening - 1].kind != "name":
        return
    end = matching(toks, brace)
    declared = declared_params(toks[opening + 1 : close_paren])
    params = frozenset(name for name, _t in declared if name)
    start = opening - 1
    while start > 0 and toks[start - 1].text not in (";", "}", "{") and toks[start - 1].line >= toks[opening].line - 8:
        start -= 1
    decl = toks[start:opening]
    tparams: list[str] = []
    if decl and decl[0].text == "template":
        depth = 0
        for k, x in enumerate(decl):
            if x.text == "<":
                depth += 1
            elif x.text == ">":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and x.kind == "name" and k + 1 < len(decl) and decl[k + 1].text in (",", ">", "="):
                tparams.append(x.text)
    name = toks[opening - 1]
    references = _references(toks[opening + 1 : close_paren])
    src.functions.append(Function(brace, end, params, name.text, tuple(tparams), declared, references))
    if "__global__" not in {x.text for x in decl}:
        return
    ns = tuple(kind_name for kind, kind_name in scopes if kind == "namespace")
    src.kernels.append(KernelDef(ns + (name.text,), tuple(tparams), decl[0].line if decl else name.line, name.line,
                                 declared))  # fmt: skip


def declared_params(toks: list[Token]) -> tuple[tuple[str, IntType | None], ...]:
    """A parameter list's names and integer types (None: not an integer)."""
    out = []
    for a in split_args(toks):
        if "=" in [t.text for t in a]:  # a default argument
            a = a[: [t.text for t in a].index("=")]
        if not a or a[-1].kind != "name":
            out.append(("", None))
            continue
        out.append((a[-1].text, int_type([t.text for t in a[:-1]])))
    return tuple(out)


def _references(toks: list[Token]) -> dict[str, tuple[IntType, bool]]:
    """The parameters declared as references to an integer (``uint &log2L``,
    ``const int &n``): name -> (the integer type, whether it is ``const``).
    NVIDIA's scan returns the exponent of a length through one."""
    out = {}
    for a in split_args(toks):
        words = [t.text for t in a]
        if "&" not in words or "=" in words or not a or a[-1].kind != "name":
            continue
        t = int_type([w for w in words[:-1] if w != "&"])
        if t is not None and words.count("&") == 1:
            out[a[-1].text] = (t, "const" in words)
    return out


def call_open(toks: list[Token], j: int) -> tuple[int, int]:
    """The ``(`` of the call whose argument holds token ``j`` and which of
    its arguments that is (counted from 0); (-1, 0) when ``j`` is in no
    call's argument list (a ``[``/``{`` or the statement's start comes first)."""
    depth, position = 0, 0
    for k in range(j - 1, -1, -1):
        t = toks[k].text
        if t in (")", "]", "}"):
            depth += 1
        elif t in ("(", "[", "{"):
            if depth == 0:
                return (k, position) if t == "(" else (-1, 0)
            depth -= 1
        elif t == "," and depth == 0:
            position += 1
        elif t == ";" and depth == 0:
            return -1, 0
    return -1, 0


def passed_by_reference(src: CudaSource, j: int) -> bool:
    """Whether the name at token ``j`` is a whole argument of a call that may
    change it through a reference: a parameter of one of the file's
    functions of that name declared ``T &`` (not ``const``), or
    ``std::swap``. The host readers count such a call as an assignment."""
    toks = src.tokens
    if j < 2 or j + 1 >= len(toks) or toks[j - 1].text not in ("(", ",") or toks[j + 1].text not in (")", ","):
        return False
    k, position = call_open(toks, j)
    if k <= 0 or toks[k - 1].kind != "name":
        return False
    callee = toks[k - 1].text
    if callee == "swap":
        return True
    for f in src.functions:
        names = [n for n, _t in f.param_list]
        if f.name == callee and position < len(names) and names[position] in f.references:
            if not f.references[names[position]][1]:
                return True
    return False


def changed_in_place(src: CudaSource, j: int) -> bool:
    """Whether the variable named at token ``j`` may change there other than
    by an assignment: an increment or decrement, its address taken, or it
    passed to a reference parameter (`passed_by_reference`)."""
    toks = src.tokens
    prev = toks[j - 1].text if j else ""
    nxt = toks[j + 1].text if j + 1 < len(toks) else ""
    return prev in ("++", "--", "&") or nxt in ("++", "--") or passed_by_reference(src, j)


def _enum(src: CudaSource, brace: int) -> None:
    toks = src.tokens
    end = matching(toks, brace)
    value = -1
    for item in split_args(toks[brace + 1 : end]):
        if not item or item[0].kind != "name":
            continue
        if len(item) >= 3 and item[1].text == "=":
            v = Evaluator(lambda n: None).value(item[2:])
            value = v if isinstance(v, int) else None  # type: ignore[assignment]
        elif value is not None:
            value += 1
        if value is not None:
            src.globals_.setdefault(item[0].text, []).append((brace, [Token("num", str(value), item[0].line)]))


def _global_decl(src: CudaSource, i: int) -> None:
    """``constexpr int NAME = expr;`` / ``const int NAME{expr};`` at namespace scope."""
    toks = src.tokens
    end = statement_end(toks, i)
    j = i
    while j < end and toks[j].text in DECL_WORDS:
        j += 1
    if j < end and toks[j].kind == "name" and j + 1 < end and toks[j + 1].text in ("=", "{"):
        init = toks[j + 2 : end] if toks[j + 1].text == "=" else toks[j + 2 : matching(toks, j + 1)]
        src.globals_.setdefault(toks[j].text, []).append((j, list(init)))


def _file_dim3(src: CudaSource, i: int) -> None:
    """``dim3 block(512);`` at file scope (NVIDIA's simpleMultiCopy): a
    constant when nothing in the file changes it, which `never_written`
    checks over every function. Read as `_global_decl`'s constants are."""
    toks = src.tokens
    j = i + 1
    if j + 1 >= len(toks) or toks[j].kind != "name" or toks[j + 1].text not in ("(", "{"):
        return
    close = matching(toks, j + 1)
    if close + 1 >= len(toks) or toks[close + 1].text != ";" or not never_written(src, toks[j].text, j):
        return
    src.globals_.setdefault(toks[j].text, []).append((j, [Token("name", "dim3", toks[j].line)] + toks[j + 1 : close + 1]))


def never_written(src: CudaSource, name: str, decl: int) -> bool:
    """Whether no statement of the file changes the variable ``name``
    declared at token ``decl``: no assignment to it or a member of it, no
    increment, no address taken, no reference argument. (A function's own
    declaration of the name is another variable, which the readers find
    first inside that function.)"""
    toks = src.tokens
    for j, t in enumerate(toks):
        if j == decl or t.text != name or t.kind != "name" or (j and toks[j - 1].text in (".", "->", "::")):
            continue
        if changed_in_place(src, j):
            return False
        prev = toks[j - 1].text if j else ""
        nxt = toks[j + 1].text if j + 1 < len(toks) else ""
        k = j + 3 if nxt == "." else j + 1  # `block.x = ...`
        if k < len(toks) and toks[k].text in ASSIGN_OPS and not (prev in DECL_WORDS and k == j + 1):
            return False
    return True


def _launches(src: CudaSource) -> None:
    toks = src.tokens
    def func_at(i: int) -> Function | None:
        return innermost(src.functions, i)

    for i, t in enumerate(toks):
        if t.text == "<<<":
            close = matching(toks, i)
            args = split_args(toks[i + 1 : close])
            named = _launched_name(toks, i)
            if named is None or len(args) < 2:
                continue
            first = statement_start(toks, i, -1)
            text = source_text(toks[first : close + 1], src.text)
            call = split_args(toks[close + 2 : matching(toks, close + 1)]) if close + 1 < len(toks) and \
                toks[close + 1].text == "(" else None  # fmt: skip
            func = func_at(i)
            for parts, targs in _pointer_targets(src, func, named) or [named]:
                src.launches.append(Launch(parts, targs, args[1], i, t.line, func, text, call, args[0]))
        elif t.text in _LAUNCH_APIS and i + 1 < len(toks) and toks[i + 1].text == "(":
            close = matching(toks, i + 1)
            args = split_args(toks[i + 2 : close])
            if len(args) < 3:
                continue
            named = _kernel_expr(args[0])
            if named is None:
                continue
            parts, targs = named
            src.launches.append(Launch(parts, targs, args[2], i, t.line, func_at(i), source_text(toks[i : close + 1], src.text),
                                       grid=args[1]))  # fmt: skip


def _pointer_targets(src: CudaSource, func: Function | None,
                     named: tuple[tuple[str, ...], list[list[Token]] | None]) -> list:  # fmt: skip
    """The kernels a launch through a function pointer may launch: NVIDIA's
    transpose sample sets ``void (*kernel)(float *, float *, int, int)`` to
    one kernel after another (``kernel = &transposeNaive;``) and launches
    ``kernel<<<grid, threads>>>`` (cppOverload: ``func1 = simple_kernel;``,
    ``(*func1)<<<...>>>``). Every kernel the launching function assigns to
    the variable (or initialises it with) is taken as launched there; none:
    the name is not such a variable (an empty list)."""
    parts, targs = named
    if func is None or len(parts) != 1 or targs:
        return []
    kernels = {kd.name for kd in src.kernels}
    if parts[0] in kernels:
        return []
    toks = src.tokens
    out = []
    for j in range(func.start + 1, func.end):
        if toks[j].text != parts[0] or toks[j].kind != "name":
            continue
        k = j + 1
        if toks[j - 1].text == "*" and toks[k].text == ")" and k + 1 < func.end and toks[k + 1].text == "(":
            k = matching(toks, k + 1) + 1  # `void (*kernel)(float *, int) = &k;`: past the parameter types
        if k >= func.end or toks[k].text != "=":
            continue
        end = statement_end(toks, k)
        value = toks[k + 1 : end]
        while value and value[0].text in ("&", "("):
            value = value[1:] if value[0].text == "&" or matching(value, 0) != len(value) - 1 else value[1:-1]
        target = _launched_name(value + [Token("op", "<<<", toks[j].line)], len(value)) if value else None
        # a kernel of this file, or one name alone: what a `<<<` launches is a
        # kernel, wherever it is defined (cppOverload's are in a header it includes)
        if target is not None and (target[0][-1] in kernels or len(value) == 1) and target not in out:
            out.append(target)
    return out


def innermost(functions: list[Function], i: int) -> Function | None:
    """The function whose body holds token ``i``."""
    inner = None
    for f in sorted(functions, key=lambda f: f.start):
        if f.start < i < f.end:
            inner = f
    return inner


def _launched_name(toks: list[Token], i: int) -> tuple[tuple[str, ...], list[list[Token]] | None] | None:
    """``ns::kernel<args>`` right before the ``<<<`` at ``i`` (or a
    function pointer dereferenced, ``(*func1)``, as NVIDIA's cppOverload
    launches: its name, for `_pointer_targets`)."""
    j = i - 1
    targs = None
    if j >= 3 and [t.text for t in toks[j - 3 : j + 1]] == ["(", "*", toks[j - 1].text, ")"] \
            and toks[j - 1].kind == "name":  # fmt: skip
        return (toks[j - 1].text,), None
    if j >= 0 and toks[j].text in (">", ">>"):
        depth = 0
        k = j
        while k >= 0:
            if toks[k].text == ">":
                depth += 1
            elif toks[k].text == ">>":
                depth += 2
            elif toks[k].text == "<":
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        if k < 0:
            return None
        targs = split_args(toks[k + 1 : j])
        j = k - 1
    if j < 0 or toks[j].kind != "name":
        return None
    parts = [toks[j].text]
    while j >= 2 and toks[j - 1].text == "::" and toks[j - 2].kind == "name":
        parts.insert(0, toks[j - 2].text)
        j -= 2
    return tuple(parts), targs


def _kernel_expr(arg: list[Token]) -> tuple[tuple[str, ...], list[list[Token]] | None] | None:
    """The kernel named by ``cudaLaunchKernel``'s first argument: ``(void*)k``,
    ``(const void*)&k<32>``, ``reinterpret_cast<void*>(k)``, ``k``."""
    toks = list(arg)
    while toks:
        if toks[0].text == "(" and (close := matching(toks, 0)) < len(toks) - 1:
            inner = {x.text for x in toks[1:close]}
            if inner <= {"void", "const", "*"}:
                toks = toks[close + 1 :]
                continue
        if toks[0].text in ("reinterpret_cast", "static_cast") and len(toks) > 1 and toks[1].text == "<":
            k = next((m for m in range(len(toks)) if toks[m].text == ">"), None)
            if k is None or k + 1 >= len(toks) or toks[k + 1].text != "(":
                return None
            toks = toks[k + 2 : matching(toks, k + 1)]
            continue
        if toks[0].text == "&":
            toks = toks[1:]
            continue
        if toks[0].text == "(" and matching(toks, 0) == len(toks) - 1:
            toks = toks[1:-1]
            continue
        break
    if not toks or toks[-1].kind != "name" and toks[-1].text != ">":
        return None
    fake = toks + [Token("op", "<<<", toks[-1].line)]
    return _launched_name(fake, len(fake) - 1)


def statement_start(toks: list[Token], j: int, stop: int) -> int:
    k = j
    while k > stop + 1 and toks[k - 1].text not in (";", "{", "}"):
        k -= 1
    return k


def source_text(toks: list[Token], source: str) -> str:
    """The tokens as the source writes them (whitespace collapsed), shortened."""
    if not toks:
        return ""
    first, last = toks[0], toks[-1]
    if first.pos >= 0 and last.pos >= 0:
        out = " ".join(source[first.pos : last.pos + len(last.text)].split())
    else:
        out = " ".join(t.text for t in toks)
    return out if len(out) <= 80 else out[:77] + "..."


def scope_holds(toks: list[Token], j: int, index: int, start: int) -> bool:
    """Whether the innermost braces around token ``j`` also hold ``index``
    (the statement at ``j`` runs before the launch on every path to it)."""
    depth = 0
    for k in range(j - 1, start - 1, -1):
        t = toks[k].text
        if t == "}":
            depth += 1
        elif t == "{":
            if depth == 0:
                return matching(toks, k) > index
            depth -= 1
    return False


def binds_on_every_path(toks: list[Token], j: int, index: int, start: int) -> bool:
    """Whether the statement at token ``j`` runs on every path from the
    function's start (token ``start``) to token ``index`` when it runs at
    all: its braces hold ``index`` too, and it is not the body of an
    ``if``/``else``/loop written without braces, nor under a ``case``
    label, nor a ``for`` header. ``if (n > 256) threads.x = 128;`` does not:
    a launch after it may have either block."""
    if not scope_holds(toks, j, index, start):
        return False
    s = statement_start(toks, j, start)
    return not any(toks[k].text in _CONDITIONAL_WORDS for k in range(s, j))


_CONDITIONAL_WORDS = frozenset("if else for while do switch case default ? &&".split()) | {"||"}


def in_parens(toks: list[Token], start: int, j: int) -> bool:
    """Whether token ``j`` is inside parentheses (a call's argument, a condition)."""
    depth = 0
    for k in range(j - 1, start, -1):
        t = toks[k].text
        if t == ")":
            depth += 1
        elif t == "(":
            if depth == 0:
                return True
            depth -= 1
        elif t in (";", "{", "}") and depth == 0:
            return False
    return False


def declaration_type(toks: list[Token], j: int, stop: int) -> str | None:
    """The type word (``dim3``, ``int``) of the declaration whose later
    declarator is the name at token ``j`` (after a ``,`` outside brackets),
    when its statement starts with declaration words; None: not a declaration."""
    start = statement_start(toks, j, stop)
    k = start
    while k < j and toks[k].text in DECL_WORDS:
        k += 1
    if k == start or toks[k].kind != "name" or k == j:
        return None
    return toks[k - 1].text
