"""Reading a Numba kernel's staged loop in its source, for the TL302 fixer's
Numba rewrite (`numba_rewrite`): the loop, its tile copies, the reads of the
tiles, and everything that decides whether the rewrite is exact.

The IR tells which loop stages which shared arrays (TL302's `TileCopy`s);
this module finds the same things in the libcst tree, where the rewrite
happens, and refuses (`Refused`, with a reason) whatever it cannot rewrite
into the same computation:

- a loop that is not ``for v in range(...)`` with a positive constant step,
  or has an ``else``, a ``break``, a ``continue`` or a ``return``;
- a staged array declared other than once, at the top of the kernel, as
  ``cuda.shared.array(shape, dtype)``, or used other than by subscripts
  (passed to a function, aliased), or touched outside the loop;
- a store into a staged array that is not a tile copy before the loop's
  first barrier, or a read of one before it;
- a copy whose index uses a value the loop changes (other than the loop
  variable, and names the trip sets once before the copy, which are
  inlined);
- a guarded copy whose else-value is not zero (zero-fill writes +0.0).

A tile copy is one of

    X[d] = G[g]                                   # plain
    X[d] = G[g] if c else 0                       # guarded (or `0 if c else G[g]`)
    if c: X[d] = G[g]  else: X[d] = 0             # guarded, as statements
    X[d] = 0 ... if c: X[d] = G[g]                # zero, then copy when c

Imports libcst only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

# calls an index may make: pure, so evaluating them a trip early changes nothing
PURE_CALLS = frozenset({"min", "max", "abs", "int", "len"})


class Refused(Exception):
    """The loop cannot be rewritten exactly; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Copy:
    """One tile copy in the loop: ``buffer[dst] = src_array[src]``, zero
    where ``guard`` (when there is one) fails."""

    statements: list[cst.BaseStatement]  # what it replaces in the loop's body
    buffer: str
    dst: list[cst.BaseExpression]
    src_array: str
    src: list[cst.BaseExpression]
    guard: cst.BaseExpression | None
    line: int
    src_tuple: bool = False  # the source was indexed by a tuple (``A[i, j]``), not one item
    block: cst.For | None = None  # the copy loop it sits in (``for e in range(t, n, T): ...``), if any
    locals: frozenset[str] = frozenset()  # the names that copy loop assigns

    @property
    def outer(self) -> list[cst.BaseStatement]:
        """The statements of the staged loop's body the copy replaces."""
        return [self.block] if self.block is not None else self.statements


@dataclass
class Staged:
    """A shared array the loop stages: its declaration and its copies."""

    name: str
    declaration: cst.SimpleStatementLine
    call: cst.Call
    copies: list[Copy] = field(default_factory=list)


@dataclass
class LoopSource:
    """The staged loop as written."""

    module: cst.Module
    function: cst.FunctionDef
    loop: cst.For
    var: str
    start: cst.BaseExpression | None  # None: ``range(stop)``
    stop: cst.BaseExpression
    step: int
    body: list[cst.BaseStatement]
    barrier: int  # index in ``body`` of the barrier after the copies
    trailing_barrier: bool  # the body ends with a barrier the pipeline makes redundant
    staged: dict[str, Staged]
    defined: dict[str, cst.BaseExpression]  # names the trip sets once before its copies: their values
    names: set[str]  # every name the module uses (for fresh ones)
    column: int = 0  # where the `for` starts on its line (0-based): the prologue's indentation
    nested: bool = False  # the loop sits in another loop: its prologue runs again after its last trip

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


# The last file `_parsed` read: a file with several loops to pipeline is parsed
# once for them all (libcst and its positions take about 1.5 s for 1,000 lines).
# Its nodes are immutable: a rewrite builds new ones.
_LAST_PARSED: list[tuple[str, tuple]] = []


def _parsed(source: str) -> tuple[cst.Module, Mapping, set[str]]:
    """``source`` parsed by libcst, each node's position, and every name it uses."""
    last = _LAST_PARSED[0] if _LAST_PARSED else None
    if last is not None and last[0] == source:
        return last[1]
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as e:
        raise Refused(f"libcst cannot parse the file ({e.message})") from None
    pos = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = (module, pos, {n.value for n in _walk(module) if isinstance(n, cst.Name)})
    _LAST_PARSED[:] = [(source, got)]
    return got


def read_loop(source: str, kernel: str, loop_line: int, barrier_line: int, barrier_lines: set[int],
              staged: list[str], steps: dict[str, int] | None = None) -> LoopSource:  # fmt: skip
    """The loop of ``kernel`` at ``loop_line`` staging ``staged``, from the
    IR: ``barrier_line`` is the line of the barrier after the copies,
    ``barrier_lines`` those of all the kernel's barriers, ``steps`` the
    constant steps of the loop's induction variables, by variable."""
    module, pos, names = _parsed(source)

    def line(node: cst.CSTNode) -> int:
        return pos[node].start.line

    functions = [f for f in _walk(module) if isinstance(f, cst.FunctionDef) and f.name.value == kernel
                 and pos[f].start.line <= loop_line <= pos[f].end.line]  # fmt: skip
    if len(functions) != 1:
        raise Refused(f"the kernel `{kernel}` is not found in the file as one `def`")
    fn = functions[0]
    loops = [n for n in _walk(fn) if isinstance(n, cst.For) and line(n) == loop_line]
    if len(loops) != 1:
        if any(isinstance(n, cst.While) and line(n) == loop_line for n in _walk(fn)):
            raise Refused(f"the loop at line {loop_line} is a `while` loop: only `for ... in range(...)` loops "
                          "are rewritten")  # fmt: skip
        raise Refused(f"no `for` loop at line {loop_line}")
    loop = loops[0]
    var, start, stop, step = _range_of(loop, module, steps or {})
    if not isinstance(loop.body, cst.IndentedBlock):
        raise Refused("the loop's body is on the `for` line")
    for n in _walk(loop.body):
        if isinstance(n, (cst.Break, cst.Continue, cst.Return)) and not _inside_inner_loop(n, loop.body):
            word = type(n).__name__.lower()
            raise Refused(f"the loop has a `{word}`: its trips are not all full")
    body = list(loop.body.body)
    barrier = next((i for i, s in enumerate(body) if line(s) == barrier_line and _is_bare_call(s)), None)
    if barrier is None:
        raise Refused("the barrier after the tile copies is not a statement of the loop's body")
    out = LoopSource(module, fn, loop, var, start, stop, step, body, barrier, False, {}, {}, set(names),
                     pos[loop].start.column)  # fmt: skip
    for name in staged:
        out.staged[name] = _declaration(fn, name, module)
    _read_copies(out, line)
    _check_uses(out, line)
    out.trailing_barrier = (
        len(body) - 1 > barrier and line(body[-1]) in barrier_lines and _is_bare_call(body[-1])
        and not _other_shared_stores(out)
    )  # fmt: skip
    _definitions(out)
    out.nested = any(isinstance(n, (cst.For, cst.While)) and n is not loop and any(x is loop for x in _walk(n))
                     for n in _walk(fn.body))  # fmt: skip
    return out


# -- the loop header ---------------------------------------------------------------------------


def _range_of(loop: cst.For, module: cst.Module, ir_steps: dict[str, int]):
    if loop.orelse is not None:
        raise Refused("the loop has an `else`")
    if not isinstance(loop.target, cst.Name):
        raise Refused("the loop variable is not a plain name")
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        raise Refused("the loop is not `for ... in range(...)`")
    args = [a.value for a in it.args]
    if any(a.keyword is not None or a.star for a in it.args) or not 1 <= len(args) <= 3:
        raise Refused("the loop's `range` has keyword or starred arguments")
    if len(args) == 1:
        return loop.target.value, None, args[0], 1
    step = 1
    if len(args) == 3:
        step = _constant_int(args[2], module)
        if step is None:
            step = ir_steps.get(loop.target.value)
        if step is None or step <= 0:
            raise Refused("the loop's step is not a positive constant")
    return loop.target.value, args[0], args[1], step


def _constant_int(node: cst.BaseExpression, module: cst.Module) -> int | None:
    """An integer literal, or a module-level name bound once to one (``TILE = 16``)."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Name):
        values = [s.value for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine)
                  for s in stmt.body if isinstance(s, cst.Assign) and len(s.targets) == 1
                  and isinstance(s.targets[0].target, cst.Name) and s.targets[0].target.value == node.value]  # fmt: skip
        if len(values) == 1 and isinstance(values[0], cst.Integer):
            return int(values[0].evaluated_value)
    return None


# -- declarations ------------------------------------------------------------------------------


def _declaration(fn: cst.FunctionDef, name: str, module: cst.Module) -> Staged:
    found = []
    for stmt in _walk(fn.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            found += [(stmt, small) for small in stmt.body if _assigns(small, name)]
    if _assignment_counts(fn.body).get(name, 0) != len(found):
        raise Refused(f"`{name}` is assigned other than by `=`")
    if len(found) != 1 or found[0][0] not in fn.body.body or len(found[0][0].body) != 1:
        raise Refused(f"`{name}` is not assigned once, on a line of its own at the kernel's top level")
    stmt, small = found[0]
    call = small.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "array"
            and isinstance(call.func.value, cst.Attribute) and call.func.value.attr.value == "shared"):  # fmt: skip
        raise Refused(f"`{name}` is not declared as `cuda.shared.array(shape, dtype)`")
    shape = shape_argument(call)
    if shape is None:
        raise Refused(f"the shape of `{name}` is not given")
    return Staged(name, stmt, call)


def shape_argument(call: cst.Call) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "shape":
            return a
    positional = [a for a in call.args if a.keyword is None]
    return positional[0] if positional else None


def _assigns(small: cst.BaseSmallStatement, name: str) -> bool:
    if isinstance(small, cst.Assign):
        return any(isinstance(n, cst.Name) and n.value == name for t in small.targets for n in _walk(t.target)
                   if not _under_subscript(n, t.target))  # fmt: skip
    if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        return isinstance(small.target, cst.Name) and small.target.value == name
    return False


def _under_subscript(n: cst.CSTNode, root: cst.CSTNode) -> bool:
    """Whether ``n`` sits inside a subscript of ``root`` (``s[i] = ...`` assigns no name)."""
    return any(n is not s and any(x is n for x in _walk(s)) for s in _walk(root) if isinstance(s, cst.Subscript))


# -- the copies --------------------------------------------------------------------------------


def _read_copies(out: LoopSource, line) -> None:
    pending_zero: dict[str, tuple[cst.BaseStatement, str]] = {}  # buffer -> its `X[d] = 0`, d's text
    for stmt in out.body[: out.barrier]:
        if isinstance(stmt, cst.For) and any(_stores_into(stmt, name) for name in out.staged):
            for copy in _copy_block(stmt, out, line):
                out.staged[copy.buffer].copies.append(copy)
            continue
        copy = _copy_of(stmt, out, line, pending_zero)
        if copy is None:
            if any(_mentions(stmt, name) for name in out.staged):
                what = ", ".join(f"`{n}`" for n in out.staged if _mentions(stmt, n))
                raise Refused(f"line {line(stmt)} uses {what} in a way that is not a tile copy")
            continue
        if copy == "zero":
            continue
        out.staged[copy.buffer].copies.append(copy)
    if pending_zero:
        name = next(iter(pending_zero))
        raise Refused(f"`{name}` is zeroed at line {line(pending_zero[name][0])} with no copy after it")
    for s in out.staged.values():
        if not s.copies:
            raise Refused(f"no tile copy into `{s.name}` before the barrier")


def _copy_block(block: cst.For, out: LoopSource, line) -> list[Copy]:
    """The copies of a copy loop (``for e in range(t, n, THREADS): r = ...;
    s[r, c] = a[...]``): a ``for`` over a range whose body assigns names and
    copies, and nothing else. Its names are its own: used nowhere else in
    the staged loop's body."""
    at = line(block)
    if block.orelse is not None or not isinstance(block.body, cst.IndentedBlock) \
            or not (isinstance(block.iter, cst.Call) and isinstance(block.iter.func, cst.Name)
                    and block.iter.func.value == "range"):  # fmt: skip
        raise Refused(f"the copy loop at line {at} is not a plain `for ... in range(...)`")
    names = set(_assignment_counts(block))
    pending: dict[str, tuple[cst.BaseStatement, str]] = {}
    copies: list[Copy] = []
    for inner in block.body.body:
        if isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1 and isinstance(inner.body[0], cst.Assign) \
                and len(inner.body[0].targets) == 1 and isinstance(inner.body[0].targets[0].target, cst.Name):  # fmt: skip
            continue
        copy = _copy_of(inner, out, line, pending)
        if copy is None:
            raise Refused(f"line {line(inner)}, in the copy loop at line {at}, is neither a copy nor an assignment")
        if copy != "zero":
            copies.append(copy)
    if pending:
        raise Refused(f"the copy loop at line {at} zeroes an element it does not copy")
    for stmt in out.body:
        if isinstance(stmt, cst.For) and any(_stores_into(stmt, name) for name in out.staged):
            continue  # a copy loop (this one, or another that assigns its names before it reads them)
        if any(isinstance(n, cst.Name) and n.value in names for n in _walk(stmt)):
            raise Refused(f"the names the copy loop at line {at} assigns are used elsewhere in the loop")
    for c in copies:
        c.block, c.locals = block, frozenset(names)
    return copies


def _copy_of(stmt, out: LoopSource, line, pending_zero):
    """The tile copy ``stmt`` is (or "zero" for the first half of a
    zero-then-copy pair), None when it is not one."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        target, value = _store(stmt.body[0], out)
        if target is None:
            return None
        name, dst = target
        if _is_zero(value):
            if name in pending_zero:
                raise Refused(f"`{name}` is zeroed twice before its copy")
            pending_zero[name] = (stmt, _index_text(dst, out))
            return "zero"
        guard = None
        if isinstance(value, cst.IfExp):
            if _is_zero(value.orelse):
                guard, value = value.test, value.body
            elif _is_zero(value.body):
                guard, value = cst.UnaryOperation(cst.Not(), _parenthesized(value.test)), value.orelse
            else:
                raise Refused(f"the guarded copy at line {line(stmt)} has a non-zero else-value: zero-fill "
                              "writes +0.0")  # fmt: skip
        src = _source(value, out, line(stmt))
        return Copy([stmt], name, dst, src[0], src[1], guard, line(stmt), src[2])
    if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock) and len(stmt.body.body) == 1:
        inner = stmt.body.body[0]
        if not (isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1
                and isinstance(inner.body[0], cst.Assign)):  # fmt: skip
            return None
        target, value = _store(inner.body[0], out)
        if target is None:
            return None
        name, dst = target
        src = _source(value, out, line(inner))
        if stmt.orelse is None:
            zero = pending_zero.pop(name, None)
            if zero is None or zero[1] != _index_text(dst, out):
                raise Refused(f"the copy into `{name}` at line {line(inner)} runs only when its condition "
                              "holds, and nothing zeroes the element otherwise")  # fmt: skip
            return Copy([zero[0], stmt], name, dst, src[0], src[1], stmt.test, line(inner), src[2])
        other = stmt.orelse
        if isinstance(other, cst.Else) and isinstance(other.body, cst.IndentedBlock) and len(other.body.body) == 1:
            alt = other.body.body[0]
            if isinstance(alt, cst.SimpleStatementLine) and len(alt.body) == 1 and isinstance(alt.body[0], cst.Assign):
                t2, v2 = _store(alt.body[0], out)
                if t2 is not None and t2[0] == name and _index_text(t2[1], out) == _index_text(dst, out):
                    if not _is_zero(v2):
                        raise Refused(f"the guarded copy at line {line(inner)} has a non-zero else-value: "
                                      "zero-fill writes +0.0")  # fmt: skip
                    return Copy([stmt], name, dst, src[0], src[1], stmt.test, line(inner), src[2])
        return None
    return None


def _store(assign: cst.Assign, out: LoopSource):
    """``(buffer, index items)`` and the value of ``X[...] = value`` for a
    staged X, or (None, None)."""
    if len(assign.targets) != 1:
        return None, None
    t = assign.targets[0].target
    if not (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value in out.staged):
        return None, None
    items = _index_items(t)
    if items is None:
        raise Refused(f"the store into `{t.value.value}` is not indexed by plain items")
    return (t.value.value, items), assign.value


def _source(value: cst.BaseExpression, out: LoopSource, at: int):
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name)):
        raise Refused(f"line {at} stores a computed value, not a plain copy of a global array's element")
    items = _index_items(value)
    if items is None or value.value.value in out.staged:
        raise Refused(f"line {at} does not copy an element of a global array")
    one = value.slice[0].slice.value if len(value.slice) == 1 else None
    return value.value.value, items, len(value.slice) > 1 or isinstance(one, cst.Tuple)


def _index_items(sub: cst.Subscript) -> list[cst.BaseExpression] | None:
    items = []
    for el in sub.slice:
        if not isinstance(el.slice, cst.Index) or el.slice.star is not None:
            return None
        v = el.slice.value
        if isinstance(v, cst.Tuple) and len(sub.slice) == 1:
            items.extend(e.value for e in v.elements)
        else:
            items.append(v)
    return items


def _index_text(items: list[cst.BaseExpression], out: LoopSource) -> str:
    return ", ".join(out.code(i) for i in items)


def _is_zero(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.evaluated_value) == 0.0
        except (ValueError, TypeError):
            return False
    return False


def _parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if not node.lpar else node


# -- where the staged arrays are used ----------------------------------------------------------


def _check_uses(out: LoopSource, line) -> None:
    copies = {id(s) for st in out.staged.values() for c in st.copies for s in c.outer}
    inside = {id(n) for n in _walk(out.loop)}
    for name, st in out.staged.items():
        declared = {id(n) for n in _walk(st.declaration)}
        for n in _walk(out.function.body):
            if isinstance(n, cst.Name) and n.value == name and id(n) not in inside and id(n) not in declared:
                raise Refused(f"`{name}` is used outside the loop (line {line(n)})")
        for i, stmt in enumerate(out.body):
            if i < out.barrier and id(stmt) in copies:
                continue
            for n in _walk(stmt):
                if isinstance(n, cst.Name) and n.value == name and not _is_subscript_base(n, stmt):
                    raise Refused(f"line {line(stmt)} uses `{name}` other than by indexing it")
            if i > out.barrier and _stores_into(stmt, name):
                raise Refused(f"line {line(stmt)} writes `{name}` after the barrier")
        for copy in st.copies:
            for expr in [*copy.dst, *copy.src, *([copy.guard] if copy.guard is not None else [])]:
                if any(_mentions(expr, other) for other in out.staged):
                    raise Refused(f"the copy at line {copy.line} indexes by a staged array's element")


def _is_subscript_base(n: cst.Name, root: cst.CSTNode) -> bool:
    return any(isinstance(s, cst.Subscript) and s.value is n for s in _walk(root))


def _stores_into(stmt: cst.CSTNode, name: str) -> bool:
    for n in _walk(stmt):
        targets = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, cst.Del):
            targets = [n.target]
        for t in targets:
            for s in _walk(t):
                if isinstance(s, cst.Subscript) and isinstance(s.value, cst.Name) and s.value.value == name:
                    return True
    return False


def _other_shared_stores(out: LoopSource) -> bool:
    """Whether the trip stores into some array before the barrier other than
    by the staged copies (another shared tile the trailing barrier may protect)."""
    copies = {id(s) for st in out.staged.values() for c in st.copies for s in c.outer}
    for stmt in out.body[: out.barrier]:
        if id(stmt) in copies:
            continue
        for n in _walk(stmt):
            if isinstance(n, (cst.Assign, cst.AugAssign)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                if any(isinstance(s, cst.Subscript) for t in targets for s in _walk(t)):
                    return True
    return False


# -- what the copies' indices read -------------------------------------------------------------


def _definitions(out: LoopSource) -> None:
    """Check that every name a copy reads keeps its value over the loop, but
    the loop variable and names the trip sets once, on a line of its own
    before the copy (``k0 = i * TILE``): those are recorded to be inlined."""
    assigned = _assigned_names(out.loop.body)
    if out.var in assigned:
        raise Refused(f"the loop's body assigns its variable `{out.var}`")
    bounds = [out.stop, *([out.start] if out.start is not None else []), *out.loop.iter.args[2:3]]
    for expr in bounds:
        expr = expr.value if isinstance(expr, cst.Arg) else expr
        _check_pure(expr, out)
        for name in names_in(expr):
            if name in assigned or name == out.var:
                raise Refused(f"the loop's bounds use `{name}`, which the loop changes")
    first_copy = min(out.body.index(c.outer[0]) for st in out.staged.values() for c in st.copies)
    simple: dict[str, tuple[int, cst.BaseExpression]] = {}
    for i, stmt in enumerate(out.body):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
            a = stmt.body[0]
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
                simple.setdefault(a.targets[0].target.value, (i, a.value))
    counts = _assignment_counts(out.loop.body)
    seen: set[str] = set()

    def need(expr: cst.BaseExpression, at: int, depth: int = 0, own: frozenset = frozenset()) -> None:
        _check_pure(expr, out)
        for name in names_in(expr):
            if name == out.var or name in seen or name in own or name not in assigned:
                continue
            got = simple.get(name)
            if got is None or counts.get(name, 0) != 1 or got[0] >= at or depth > 8:
                raise Refused(f"a tile copy's index uses `{name}`, which the loop changes")
            seen.add(name)
            out.defined[name] = got[1]
            need(got[1], got[0], depth + 1)

    for st in out.staged.values():
        for c in st.copies:
            at = out.body.index(c.outer[0])
            for expr in [*c.dst, *c.src, *([c.guard] if c.guard is not None else [])]:
                need(expr, min(at, first_copy), own=c.locals)
            if c.block is not None:
                for n in _walk(c.block):
                    if isinstance(n, cst.Assign):
                        need(n.value, min(at, first_copy), own=c.locals)
                for arg in c.block.iter.args:
                    need(arg.value, min(at, first_copy), own=c.locals)
            if c.src_array in assigned:
                raise Refused(f"the loop assigns `{c.src_array}`, a tile copy's source")


def _check_pure(expr: cst.BaseExpression, out: LoopSource) -> None:
    for n in _walk(expr):
        if isinstance(n, cst.Call) and not (isinstance(n.func, cst.Name) and n.func.value in PURE_CALLS):
            raise Refused(f"a tile copy's index calls `{out.code(n.func)}`: issuing it a trip early "
                          "could change what it computes")  # fmt: skip
        if isinstance(n, (cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda)):
            raise Refused("a tile copy's index has a side effect")


def _assigned_names(root: cst.CSTNode) -> set[str]:
    return set(_assignment_counts(root))


def _assignment_counts(root: cst.CSTNode) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in _walk(root):
        targets: list[cst.CSTNode] = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, (cst.For, cst.CompFor)):
            targets = [n.target]
        elif isinstance(n, cst.NamedExpr):
            targets = [n.target]
        for t in targets:
            for x in _walk(t):
                if isinstance(x, cst.Name) and not _under_subscript(x, t) and not _attribute_part(x, t):
                    counts[x.value] = counts.get(x.value, 0) + 1
    return counts


def _attribute_part(n: cst.Name, root: cst.CSTNode) -> bool:
    return any(isinstance(a, cst.Attribute) and (a.attr is n or a.value is n) for a in _walk(root))


def names_in(expr: cst.CSTNode) -> set[str]:
    out = set()
    for n in _walk(expr):
        if isinstance(n, cst.Name) and not _attribute_part_of_tree(n, expr):
            out.add(n.value)
    return out


def _attribute_part_of_tree(n: cst.Name, root: cst.CSTNode) -> bool:
    """``n`` is the ``attr`` of an attribute access (``A.shape``: ``shape``)."""
    return any(isinstance(a, cst.Attribute) and a.attr is n for a in _walk(root))


# -- small helpers -----------------------------------------------------------------------------


def _walk(node: cst.CSTNode):
    """Every node under ``node`` (itself included), depth first."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in _walk(node))


def _is_bare_call(stmt: cst.BaseStatement) -> bool:
    """A statement that is one call with no arguments (``cuda.syncthreads()``)."""
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.Call) and not stmt.body[0].value.args)  # fmt: skip


def _inside_inner_loop(n: cst.CSTNode, body: cst.CSTNode) -> bool:
    """Whether ``n`` (a break, continue or return) belongs to a loop nested in ``body``."""
    if isinstance(n, cst.Return):
        return False
    for inner in _walk(body):
        if isinstance(inner, (cst.For, cst.While)) and inner is not body and any(x is n for x in _walk(inner.body)):
            return True
    return False
