"""The TL302 fixer's Numba rewrite: a staged loop (`numba_source.LoopSource`)
made a two-stage cp.async pipeline in Form A, as a libcst transformation
that leaves every other line as the user wrote it (comments included).

    X = cuda.shared.array((2, ...), dtype)       # each staged array: a slot axis
    ...
    if start < stop:                             # only when the loop may not run
        cp_async(X, (0, d...), G, g[v := start], n)   # tile 0 -> slot 0
    commit_group()
    for v in range(start, stop, step):
        ...                                      # the trip's other statements
        wait_group(0)                            # my copies of this tile have landed
        cuda.syncthreads()                       # everyone's have; the other slot is free
        if v + step < stop:
            cp_async(X, (((v + step - start) // step) & 1, d...), G, g[v := v + step], n)
        commit_group()                           # on every trip, also the last
        slot = ((v - start) // step) & 1
        ...X[slot, ...]...                       # the compute, on this trip's slot
    wait_group(0)                                # nothing in flight after the loop
                                                 # (and a barrier when the loop runs again)

The barrier that ended each trip goes when it was the body's last statement
and the trip stores no other shared array before its first barrier: trip
k + 1's barrier now orders trip k's reads before the copy that refills their
slot. A guarded copy (zero where the guard fails) becomes ``cp_async_zfill``
reading ``n`` bytes when the guard holds and none otherwise, from the copy's
own index when the guard holds and index 0 otherwise (always a valid
address), so its bits are the original's: zero-fill writes +0.0.

`rewrite(loop, nbytes)` returns the new text of the file; the runtime's
names are imported from ``tolk_lint.runtime`` (`runtime_import`).

Imports libcst and `numba_source`.
"""

from __future__ import annotations

import libcst as cst

from tolk_lint.fix.numba_source import Copy, LoopSource, Refused, names_in, shape_argument

RUNTIME = "tolk_lint.runtime"
RUNTIME_NAMES = ("commit_group", "cp_async", "cp_async_zfill", "wait_group")
LINE_LENGTH = 110  # a generated call longer than this is wrapped after a comma


def rewrite(src: LoopSource, nbytes: dict[str, int]) -> str:
    """The file's text with ``src.loop`` pipelined; ``nbytes`` gives each
    staged array's element size (the bytes of one copy)."""
    used = {"commit_group", "wait_group"}
    used |= {"cp_async_zfill" if c.guard is not None else "cp_async" for st in src.staged.values() for c in st.copies}
    fresh = _Fresh(src.names)
    slot = fresh("slot")
    builder = _Builder(src, nbytes, fresh)
    prologue = builder.prologue()
    body = builder.body(slot)
    drain = [_statement("wait_group(0)", "# no copy may be in flight after the loop (cp.async pipeline)")]
    if src.nested:
        # the loop runs again: its next prologue refills slot 0, which the last trip may still be reading
        drain.append(src.body[src.barrier].with_changes(leading_lines=()))
    new_loop = src.loop.with_changes(body=src.loop.body.with_changes(body=body))
    declarations = {id(st.declaration): _doubled(st.declaration, st.call) for st in src.staged.values()}
    function = src.function.visit(_Replace(src.loop, prologue, new_loop, drain, declarations))
    module = src.module.visit(_Swap(src.function, function))
    module = runtime_import(module, sorted(used), src.names)
    return module.code


# -- the pieces ---------------------------------------------------------------------------------


class _Builder:
    def __init__(self, src: LoopSource, nbytes: dict[str, int], fresh):
        self.src = src
        self.nbytes = nbytes
        self.fresh = fresh
        self.var = src.var
        self.start = src.code(src.start) if src.start is not None else "0"
        self.stop = src.code(src.stop)
        step_node = src.loop.iter.args[2].value if len(src.loop.iter.args) == 3 else None
        self.step = src.code(step_node) if step_node is not None else "1"
        self.inside: dict[int, str] = {}  # a guarded copy -> the name of its guard's value
        self.indent = len(src.module.default_indent.replace("\t", "    "))

    def trip(self, value: str) -> str:
        """The trip index at which the loop variable is ``value``, as text."""
        if self.start == "0":
            return value if self.step == "1" else f"{_atom(value)} // {_atom(self.step)}"
        diff = f"{_atom(value)} - {_atom(self.start)}"
        return diff if self.step == "1" else f"({diff}) // {_atom(self.step)}"

    def slot_of(self, value: str) -> str:
        return f"{_atom(self.trip(value))} & 1"

    def prologue(self) -> list[cst.BaseStatement]:
        copies = self._copies({self.var: self.start}, "0", src_column(self.src) + self.indent, comments=False)
        comment = "# start copying tile 0 into slot 0 (cp.async pipeline)"
        if _both_constant(self.start, self.stop) and int(self.start) < int(self.stop):
            stmts = copies
        else:
            stmts = [_if(f"{_atom(self.start)} < {_atom(self.stop)}", copies)]
        stmts[0] = _with_comment(stmts[0], comment)
        return stmts + [_statement("commit_group()")]

    def body(self, slot: str) -> list[cst.BaseStatement]:
        src = self.src
        replaced = {id(s) for st in src.staged.values() for c in st.copies for s in c.outer}
        before = [s for s in src.body[: src.barrier] if id(s) not in replaced]
        barrier = src.body[src.barrier]
        wait = _statement("wait_group(0)").with_changes(leading_lines=barrier.leading_lines)
        nxt = f"{_atom(self.var)} + {_atom(self.step)}"
        column = src_column(src) + 2 * self.indent
        issue = _if(f"{nxt} < {_atom(self.stop)}", self._copies({self.var: f"({nxt})"}, self.slot_of(nxt), column))
        moved = [line for st in src.staged.values() for c in st.copies for line in c.outer[0].leading_lines
                 if c.block is None or c is _first_of_block(src, c)]  # fmt: skip
        issue = issue.with_changes(leading_lines=[*moved, _comment_line(
            "# start copying the next tile into the other slot (cp.async pipeline)")])
        after = src.body[src.barrier + 1 :]
        if src.trailing_barrier:
            after = after[:-1]
        reads = _SlotIndex(set(src.staged), slot)
        after = [s.visit(reads) for s in after]
        current = _statement(f"{slot} = {self.slot_of(self.var)}", "# this trip's tile is in this slot")
        out = [*before, wait, barrier.with_changes(leading_lines=()), issue, _statement("commit_group()"),
               current, *after]  # fmt: skip
        lead = list(out[0].leading_lines)
        while lead and lead[0].comment is None:
            lead.pop(0)  # no blank line right after the `for` line
        out[0] = out[0].with_changes(leading_lines=lead)
        return out

    def _copies(self, values: dict[str, str], slot: str, column: int, comments: bool = True) -> list[cst.BaseStatement]:
        """Each staged array's copies for the trip where the loop variable is
        ``values[var]``, into ``slot``, as statements starting at ``column``
        (with the end-of-line comments of the copies they replace, unless
        ``comments`` is false)."""
        out: list[cst.BaseStatement] = []
        sub = _Substitute(values, self.src)
        blocks: set[int] = set()
        for st in self.src.staged.values():
            for c in st.copies:
                if c.block is None:
                    out += self._copy(c, sub, slot, self.nbytes[c.buffer], column, comments)
                elif id(c.block) not in blocks:
                    blocks.add(id(c.block))
                    out.append(self._block(c.block, sub, slot, column, comments))
        return out

    def _block(self, block: cst.For, sub, slot: str, column: int, comments: bool) -> cst.For:
        """A copy loop at another trip: its assignments and the range it
        walks at that trip, its copies made cp.async copies into ``slot``."""
        mine = {id(s): c for st in self.src.staged.values() for c in st.copies if c.block is block
                for s in c.statements}  # fmt: skip
        body: list[cst.BaseStatement] = []
        for inner in block.body.body:
            c = mine.get(id(inner))
            if c is None:
                assign = inner.body[0]
                name = assign.targets[0].target.value
                body.append(_statement(f"{name} = {sub(assign.value)}").with_changes(
                    leading_lines=inner.leading_lines, trailing_whitespace=inner.trailing_whitespace))
            elif inner is c.statements[-1]:
                body += self._copy(c, sub, slot, self.nbytes[c.buffer], column + self.indent, comments)
        # its comments moved to the `if` that issues the next tile
        return cst.For(target=block.target, iter=cst.parse_expression(sub(block.iter)), body=cst.IndentedBlock(body=body))

    def _copy(self, c: Copy, sub, slot: str, n: int, column: int, comments: bool) -> list[cst.BaseStatement]:
        dst = ", ".join([slot, *(sub(x) for x in c.dst)])
        trailing = _trailing_comment(c.statements[-1]) if comments else None
        if c.guard is None:
            src = _index(c, [sub(x) for x in c.src])
            return [_call("cp_async", [c.buffer, f"({dst})", c.src_array, src, str(n)], column, trailing)]
        ok = self.inside.get(id(c))
        if ok is None:
            ok = self.inside[id(c)] = self.fresh(f"{c.buffer}_inside")
        src = _index(c, [f"{_atom(sub(x))} if {ok} else 0" for x in c.src])
        return [
            _statement(f"{ok} = {sub(c.guard)}"),
            _call("cp_async_zfill", [c.buffer, f"({dst})", c.src_array, src, str(n), f"{n} if {ok} else 0"], column,
                  trailing),  # fmt: skip
        ]


def _first_of_block(src: LoopSource, c: Copy) -> Copy:
    return next(x for st in src.staged.values() for x in st.copies if x.block is c.block)


def _index(c: Copy, items: list[str]) -> str:
    if c.src_tuple or len(items) != 1:
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    return items[0]


class _Substitute:
    """An expression's text at another trip: the loop variable replaced by
    its value there, and each name the trip sets before its copies by its
    definition (itself at that trip; the definitions come before their uses,
    so this ends)."""

    def __init__(self, values: dict[str, str], src: LoopSource):
        self.values = values
        self.src = src

    def __call__(self, expr: cst.BaseExpression) -> str:
        mapping = {}
        for name in names_in(expr):
            if name in self.values:
                mapping[name] = self.values[name]
            elif name in self.src.defined:
                mapping[name] = "(" + self(self.src.defined[name]) + ")"
        return self.src.module.code_for_node(expr.visit(_Names(mapping)).visit(_FoldZeros()))


class _FoldZeros(cst.CSTTransformer):
    """``0 * e``, ``e * 0`` -> ``0`` and ``0 + e``, ``e + 0``, ``e - 0`` -> ``e``:
    what putting the first trip's 0 for the loop variable leaves in an
    index (``tx + 0 * TPB``). Indices and their guards are integers, where
    these are identities."""

    def leave_BinaryOperation(self, original, updated: cst.BinaryOperation):
        left, right, op = updated.left, updated.right, updated.operator
        if isinstance(op, cst.Multiply) and (_is_zero_literal(left) or _is_zero_literal(right)):
            return cst.Integer("0", lpar=updated.lpar, rpar=updated.rpar)
        if isinstance(op, cst.Add) and _is_zero_literal(left):
            return _keep_parens(right, updated)
        if isinstance(op, (cst.Add, cst.Subtract)) and _is_zero_literal(right):
            return _keep_parens(left, updated)
        return updated


def _is_zero_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _keep_parens(node: cst.BaseExpression, outer: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` in the place of ``outer``: with ``outer``'s parentheses when
    ``node`` has none (a name or a number needs none)."""
    if node.lpar or isinstance(node, (cst.Name, cst.Integer, cst.Attribute, cst.Call, cst.Subscript)):
        return node
    return node.with_changes(lpar=outer.lpar, rpar=outer.rpar)


class _Names(cst.CSTTransformer):
    """Names replaced by expressions (given as text); attribute names and
    keywords left alone."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        got = self.mapping.get(original.value)
        return cst.parse_expression(got) if got is not None else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg):
        return updated.with_changes(keyword=original.keyword)


class _SlotIndex(cst.CSTTransformer):
    """``X[i, j]`` -> ``X[slot, i, j]`` for each staged array X."""

    def __init__(self, names: set[str], slot: str):
        self.names = names
        self.slot = slot

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript):
        if not (isinstance(original.value, cst.Name) and original.value.value in self.names):
            return updated
        items = list(updated.slice)
        if len(items) == 1 and isinstance(items[0].slice, cst.Index) and isinstance(items[0].slice.value, cst.Tuple):
            items = [cst.SubscriptElement(cst.Index(e.value)) for e in items[0].slice.value.elements]
        first = cst.SubscriptElement(cst.Index(cst.Name(self.slot)),
                                     comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(slice=[first, *items])


class _Replace(cst.CSTTransformer):
    """In the kernel: each staged declaration doubled, the loop replaced by
    prologue + pipelined loop + drain."""

    def __init__(self, loop, prologue, new_loop, drain, declarations):
        self.loop = loop
        self.prologue = prologue
        self.new_loop = new_loop
        self.drain = drain
        self.declarations = declarations

    def leave_SimpleStatementLine(self, original, updated):
        return self.declarations.get(id(original), updated)

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        if not any(s is self.loop for s in original.body):
            return updated
        out: list[cst.BaseStatement] = []
        for o, u in zip(original.body, updated.body):
            if o is self.loop:
                first = self.prologue[0].with_changes(leading_lines=[*self.loop.leading_lines,
                                                                     *self.prologue[0].leading_lines])  # fmt: skip
                out += [first, *self.prologue[1:], self.new_loop.with_changes(leading_lines=()), *self.drain]
            else:
                out.append(u)
        return updated.with_changes(body=out)

    def visit_For(self, node: cst.For) -> bool:
        return node is not self.loop  # the new loop is built already


class _Swap(cst.CSTTransformer):
    def __init__(self, old: cst.FunctionDef, new: cst.FunctionDef):
        self.old = old
        self.new = new

    def leave_FunctionDef(self, original, updated):
        return self.new if original is self.old else updated


def _doubled(stmt: cst.SimpleStatementLine, call: cst.Call) -> cst.SimpleStatementLine:
    """The declaration with a leading slot axis of 2 on its shape."""
    arg = shape_argument(call)
    shape = arg.value
    two = cst.Element(cst.Integer("2"), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if isinstance(shape, cst.Tuple):
        new_shape = shape.with_changes(elements=[two, *shape.elements])
    else:
        new_shape = cst.Tuple([two, cst.Element(shape)])
    new_call = call.with_changes(args=[a.with_changes(value=new_shape) if a is arg else a for a in call.args])
    assign = stmt.body[0]
    return stmt.with_changes(body=[assign.with_changes(value=new_call)])


def runtime_import(module: cst.Module, names: list[str], taken: set[str]) -> cst.Module:
    """``module`` importing ``names`` from tolk_lint.runtime: added to an
    import of it the file has, or as a line after the file's last top-level
    import. A name the file already uses for something else is refused."""
    existing = None
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative \
                        and module.code_for_node(small.module) == RUNTIME and not isinstance(small.names, cst.ImportStar):  # fmt: skip
                    existing = (stmt, small)
    have = set()
    if existing is not None:
        have = {a.evaluated_alias or a.evaluated_name for a in existing[1].names}
    for name in names:
        if name in taken and name not in have:
            raise Refused(f"the file already uses the name `{name}`, which the rewrite imports from {RUNTIME}")
    missing = [n for n in names if n not in have]
    if not missing:
        return module
    if existing is not None:
        stmt, small = existing
        all_names = sorted({a.evaluated_name for a in small.names} | set(missing))
        new_small = cst.parse_statement(f"from {RUNTIME} import {', '.join(all_names)}\n").body[0]
        keep_alias = [a for a in small.names if a.asname is not None]
        if keep_alias:
            raise Refused(f"the file imports from {RUNTIME} under other names")
        return module.with_changes(body=[s.with_changes(body=[new_small if x is small else x for x in s.body])
                                         if s is stmt else s for s in module.body])  # fmt: skip
    line = cst.parse_statement(f"from {RUNTIME} import {', '.join(missing)}\n")
    body = list(module.body)
    last = max((i for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine)
                and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body)), default=None)  # fmt: skip
    if last is None:
        first = 1 if body and _is_docstring(body[0]) else 0
        body.insert(first, line.with_changes(leading_lines=[cst.EmptyLine()] if first else ()))
    else:
        body.insert(last + 1, line.with_changes(leading_lines=[cst.EmptyLine()]))
    return module.with_changes(body=body)


# -- text and nodes -----------------------------------------------------------------------------


class _Fresh:
    """Names not used anywhere in the module."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def __call__(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


def _atom(text: str) -> str:
    """``text`` parenthesized unless it is a name, a number, or already one
    primary expression (an attribute, a call, a subscript, parenthesized)."""
    node = cst.parse_expression(text)
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return text
    return f"({text})"


def _both_constant(a: str, b: str) -> bool:
    return all(isinstance(cst.parse_expression(x), cst.Integer) for x in (a, b))


def src_column(src: LoopSource) -> int:
    return src.column


def _call(name: str, args: list[str], column: int, comment=None) -> cst.SimpleStatementLine:
    """``name(args...)`` as a statement starting at ``column``, its arguments
    wrapped under the first one when the line would be too long."""
    one = f"{name}({', '.join(args)})"
    if column + len(one) <= LINE_LENGTH:
        return _statement(one, comment)
    hang = " " * (len(name) + 1)  # libcst indents continuation lines with the block
    lines, current = [], f"{name}({args[0]}"
    for a in args[1:]:
        if column + len(current) + len(a) + 3 > LINE_LENGTH:
            lines.append(current + ",")
            current = hang + a
        else:
            current += f", {a}"
    lines.append(current + ")")
    return _statement("\n".join(lines), comment)


def _statement(code: str, comment: str | cst.TrailingWhitespace | None = None) -> cst.SimpleStatementLine:
    stmt = cst.parse_statement(code + "\n")
    if isinstance(comment, cst.TrailingWhitespace):
        return stmt.with_changes(trailing_whitespace=comment)
    if comment:
        return _with_comment(stmt, comment)
    return stmt


def _with_comment(stmt: cst.BaseStatement, comment: str) -> cst.BaseStatement:
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, _comment_line(comment)])


def _comment_line(text: str) -> cst.EmptyLine:
    return cst.EmptyLine(comment=cst.Comment(text))


def _if(test: str, body: list[cst.BaseStatement]) -> cst.If:
    return cst.If(test=cst.parse_expression(test), body=cst.IndentedBlock(body=body))


def _trailing_comment(stmt: cst.BaseStatement) -> cst.TrailingWhitespace | None:
    """The end-of-line comment of a copy statement (the last line of an
    ``if``/``else`` copy), kept on the call that replaces it."""
    node = stmt
    while isinstance(node, cst.If):
        inner = node.body.body[-1] if isinstance(node.body, cst.IndentedBlock) else None
        node = inner if node.orelse is None else (node.orelse.body.body[-1] if isinstance(node.orelse, cst.Else)
                                                   else None)  # fmt: skip
    if isinstance(node, cst.SimpleStatementLine) and node.trailing_whitespace.comment is not None:
        return node.trailing_whitespace
    return None


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))  # fmt: skip
