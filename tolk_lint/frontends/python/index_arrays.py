"""Array parameters that can only hold integers: their loaded elements are
used as an index.

A parameter array with no signature has an unknown element type, which the
lowering takes as ``f32`` (`KernelLowering._params`). Numba only compiles an
index (a subscript, a slice bound, the index of ``cuda.atomic.*``) of integer
type, so an array whose loaded element reaches an index -- directly, or
through integer-preserving arithmetic and single assignments -- is an
integer array, and its loads are typed ``s64`` instead: then the guard that
bounds the element (``if 0 <= g < N: local[g] += 1``) is an integer
comparison the solver reads, not a float one whose conversion to the index
is unknown.

``s64`` is sound for bounds whatever the real integer dtype: every value of
a signed or unsigned integer narrower than 64 bits is an int64 value, so the
guard constrains exactly the value the index takes. A ``uint64`` element of
2**63 or more reads as a negative int64: a guard ``0 <= g < N`` still
excludes it (as it excludes the real, large value), and an unguarded or
upper-bound-only index of such an element is reported either way (negative
or past the end), so no bound is proved that the real array breaks.

Only the forms whose int result forces every operand to be int are
followed (``+ - * // % << >> & | ^``, unary ``- ~``, conditional
expressions): ``int(x)`` of a float is an int, so a call stops the walk,
as does a comparison. A local name is followed to the assignments that
reach its use along some path of the function (`_Reach`): Numba unifies the
types of every version that reaches a use, and int with float unifies to
float, which no index accepts -- so each of them is an integer, while an
assignment that reaches no index (``g = vals[i]`` after a ``for g in
range(n)`` loop that indexes by ``g``) says nothing. Reaching assignments
are under-approximated where the walk does not model a statement (``try``,
``match``, comprehensions): fewer arrays are found, none wrongly.

Imports: `scope.walk_body`, `vocabulary`.
"""

from __future__ import annotations

import ast

from tolk_lint.frontends.python.scope import FuncInfo, Scope
from tolk_lint.frontends.python.vocabulary import ATOMIC_OPS, CUDA

# arithmetic whose int result needs int operands (true division gives a float)
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift,
            ast.BitAnd, ast.BitOr, ast.BitXor)  # fmt: skip
# `cuda.atomic.<op>(ary, idx, ...)`: the ones with an index (compare_and_swap has none)
_INDEXED_ATOMICS = frozenset(ATOMIC_OPS) - {"compare_and_swap"}
_OPAQUE = "opaque"  # a binding whose value is not followed (loop target, unpacking, ...)
_PARAM = "param"  # the argument a parameter holds on entry

State = dict  # name -> frozenset of reaching definitions: expressions, _OPAQUE or _PARAM


def _join(*states: State | None) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    out: State = {}
    for s in live:
        for k, v in s.items():
            out[k] = out.get(k, frozenset()) | v
    return out


class _Reach:
    """Reaching definitions of a function body's names, per use, and the
    index expressions it holds."""

    def __init__(self, fi: FuncInfo):
        self.fi = fi
        self.scope: Scope = fi.body_scope or fi.scope
        self.reach: dict[ast.Name, frozenset] = {}  # a Name load -> the definitions reaching it
        self.indices: list[ast.expr] = []
        state: State = {p: frozenset({_PARAM}) for p in fi.params}
        self.block(fi.node.body, state)

    # -- expressions: record what reaches each name, collect the indices -------------------------
    def expr(self, e: ast.AST | None, state: State) -> None:
        if e is None:
            return
        stack = [e]
        walrus: list[str] = []  # `(g := ...)`: bound after the expression, not followed
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                # own scopes: their names are not this function's (but a walrus
                # in a comprehension binds the function's name)
                walrus += [x.target.id for x in ast.walk(n)
                           if isinstance(x, ast.NamedExpr) and isinstance(x.target, ast.Name)]  # fmt: skip
                continue
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                walrus.append(n.target.id)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.reach[n] = self.reach.get(n, frozenset()) | state.get(n.id, frozenset())
            elif isinstance(n, ast.Subscript):
                self.indices.append(n.slice)
            elif isinstance(n, ast.Call) and len(n.args) >= 2 and not (
                    isinstance(n.func, ast.Name) and n.func.id in self.fi.locals):  # fmt: skip
                q = self.scope.qual(n.func, self.fi.line) or ""
                if q.startswith(CUDA + "atomic.") and q[len(CUDA) + 7 :] in _INDEXED_ATOMICS:
                    self.indices.append(n.args[1])
            stack.extend(ast.iter_child_nodes(n))
        for name in walrus:
            state[name] = frozenset({_OPAQUE})

    def bind(self, target: ast.expr, value: ast.expr | None, state: State) -> None:
        if isinstance(target, ast.Name):
            state[target.id] = frozenset({value if value is not None else _OPAQUE})
            return
        for n in ast.walk(target):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                state[n.id] = frozenset({_OPAQUE})
            elif isinstance(n, ast.Subscript):  # `a[i] = v`: the index is read
                self.expr(n.value, state)
                self.expr(n.slice, state)
                self.indices.append(n.slice)

    # -- statements ------------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], state: State | None) -> tuple[State | None, list, list]:
        """Walk ``stmts`` from ``state``: the state falling out of them (None
        if none does), and the states at their ``break`` and ``continue``."""
        breaks: list[State] = []
        conts: list[State] = []
        for st in stmts:
            if state is None:
                break
            state, b, c = self.stmt(st, state)
            breaks += b
            conts += c
        return state, breaks, conts

    def stmt(self, st: ast.stmt, state: State) -> tuple[State | None, list, list]:
        if isinstance(st, ast.Assign):
            self.expr(st.value, state)
            for t in st.targets:
                self.bind(t, st.value, state)
        elif isinstance(st, ast.AnnAssign):
            self.expr(st.value, state)
            self.bind(st.target, st.value, state)
        elif isinstance(st, ast.AugAssign):
            self.expr(st.value, state)
            if isinstance(st.target, ast.Name):
                self.expr(st.target, state)  # the old value is read: it reaches the new one
                state[st.target.id] = state.get(st.target.id, frozenset()) | {st.value}
            else:
                self.bind(st.target, None, state)
        elif isinstance(st, ast.If):
            self.expr(st.test, state)
            a, b1, c1 = self.block(st.body, dict(state))
            b, b2, c2 = self.block(st.orelse, dict(state))
            return _join(a, b), b1 + b2, c1 + c2
        elif isinstance(st, (ast.For, ast.While)):
            return self.loop(st, state), [], []
        elif isinstance(st, ast.With):
            for it in st.items:
                self.expr(it.context_expr, state)
                if it.optional_vars is not None:
                    self.bind(it.optional_vars, None, state)
            return self.block(st.body, state)
        elif isinstance(st, (ast.Return, ast.Raise)):
            self.expr(getattr(st, "value", None) or getattr(st, "exc", None), state)
            return None, [], []
        elif isinstance(st, ast.Break):
            return None, [state], []
        elif isinstance(st, ast.Continue):
            return None, [], [state]
        elif isinstance(st, (ast.Expr, ast.Assert, ast.Delete)):
            for c in ast.iter_child_nodes(st):
                self.expr(c, state)
        else:  # try, match, nested defs, ...: what they bind is not followed, their reads not recorded
            for n in ast.walk(st):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    state[n.id] = frozenset({_OPAQUE})
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    state[n.name] = frozenset({_OPAQUE})
        return state, [], []

    def loop(self, st: ast.For | ast.While, state: State) -> State | None:
        """The state after a loop: its header's (the loop ends, or never
        starts) joined with its ``break`` states; the header joins the entry
        with what the body carries back, to a fixpoint (the sets only grow)."""
        if isinstance(st, ast.For):
            self.expr(st.iter, state)
        head: State = dict(state)
        breaks: list[State] = []
        for _ in range(64):  # as many rounds as the sets can grow; bounded for safety
            entry = dict(head)
            if isinstance(st, ast.While):
                self.expr(st.test, entry)
            else:
                self.bind(st.target, None, entry)
            out, breaks, conts = self.block(st.body, entry)
            new = _join(head, out, *conts) or head
            if new == head:
                break
            head = new
        after, b2, _ = self.block(st.orelse, dict(head))
        return _join(after, *breaks, *b2)


def index_params(fi: FuncInfo) -> set[str]:
    """The array parameters of ``fi`` whose loaded elements reach an index."""
    r = _Reach(fi)
    params = set(fi.array_params)
    found: set[str] = set()
    seen: set[int] = set()

    def sources(e: ast.expr | None) -> None:
        """Mark the parameters whose loads ``e``, an integer, is built from."""
        if e is None or id(e) in seen:
            return
        seen.add(id(e))
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id in params:
            if r.reach.get(e.value) == frozenset({_PARAM}):  # the argument, not a rebinding
                found.add(e.value.id)
        elif isinstance(e, ast.Name):
            for d in r.reach.get(e, ()):
                if isinstance(d, ast.AST):
                    sources(d)
        elif isinstance(e, ast.BinOp) and isinstance(e.op, _INT_OPS):
            sources(e.left)
            sources(e.right)
        elif isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)):
            sources(e.operand)
        elif isinstance(e, ast.IfExp):
            sources(e.body)
            sources(e.orelse)

    for ix in r.indices:
        for x in ix.elts if isinstance(ix, ast.Tuple) else [ix]:
            if isinstance(x, ast.Slice):
                for b in (x.lower, x.upper, x.step):
                    sources(b)
            else:
                sources(x)
    return found
