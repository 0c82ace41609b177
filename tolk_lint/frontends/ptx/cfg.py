"""Step 2 of lowering a function: its flattened statements -> basic blocks.

Blocks (`Segment`) begin at labels and after ``bra``/``ret``/``exit``/
``trap``; a predicated instruction that is not a branch gets a block of its
own under a branch on its guard (``@!p`` swaps the targets), so a guard is
control dependence like any ``if``. Every block's successors are resolved
(a label is looked up in the ``{ }`` scope of the branch first) and its
dominator-tree interval numbered before any instruction is lowered, so the
fill step knows all blocks and edges from the start.

What it may import: `scope`, and `tolk_lint.ir`.
"""

from __future__ import annotations

from tolk_lint.ir.nodes import Block, Span

from .scope import Scope


class Segment:
    """A basic block before lowering: its statements and how it ends."""

    __slots__ = ("name", "span", "stmts", "term", "block", "fall", "npreds", "filled", "succ_segs", "dom_in",
                 "dom_out")

    def __init__(self, name: str | None, span: Span | None = None):
        self.name = name
        self.span = span
        self.stmts: list[tuple] = []  # (ins tuple, scope, origin, guarded-away)
        self.term: tuple | None = None
        self.block: Block | None = None
        self.fall: Segment | None = None
        self.npreds = 0
        self.filled = False
        self.succ_segs: list[Segment] = []
        self.dom_in = -1
        self.dom_out = -2


def find_label(labels: dict, name: str | None, scope: Scope) -> Segment | None:
    """The label ``name`` visible from ``scope`` (labels of ``{ }`` blocks are
    local to them), else any label of that name."""
    if not name:
        return None
    cands = labels.get(name)
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0][1]
    s: Scope | None = scope
    while s is not None:
        for ls, seg in cands:
            if ls is s:
                return seg
        s = s.parent
    return cands[0][1]


def split_into_segments(items: list[tuple], path: str, entry_span: Span | None) -> list[Segment]:
    """The basic blocks of a flattened body, with their successors and
    dominator intervals (step 2 of the lowering)."""
    entry = Segment("entry", entry_span)
    segs = [entry]
    labels: dict[str, list[tuple[Scope, Segment]]] = {}
    cur = entry
    pending_fall: list[Segment] = []
    closed = False  # cur ends with a terminator; the next statement starts a block

    def new_seg(name: str | None = None, span: Span | None = None) -> Segment:
        nonlocal pending_fall
        s = Segment(name, span)
        segs.append(s)
        for p in pending_fall:
            p.fall = s
        pending_fall = []
        return s

    for it in items:
        if it[0] == "L":
            _, name, line, col, lscope = it
            span = Span(path, line, col, line, col + len(name) + 1)
            if not closed:
                pending_fall.append(cur)
            bname = name if name not in labels else f"{name}'{lscope.id}"
            cur = new_seg(bname, span)
            labels.setdefault(name, []).append((lscope, cur))
            closed = False
            continue
        st, scope, origin = it
        if closed:
            cur = new_seg(None)
            closed = False
        guard = st[1]
        op = st[2]
        fam = op.split(".", 1)[0]
        if fam == "bra":
            target = st[3][0][1] if st[3] and st[3][0][0] == "r" else None
            if guard is None:
                cur.term = ("jump", target, st, origin, scope)
            else:
                cur.term = ("cbr", guard, target, st, origin, scope)
                pending_fall.append(cur)
            closed = True
        elif fam in ("ret", "exit", "trap"):
            if guard is None:
                cur.term = (fam, st, origin)
                closed = True
            else:
                then = new_seg(None)
                then.stmts = []
                then.term = (fam, st, origin)
                cur.term = ("pred", guard, then, None, st, origin, scope)
                pending_fall.append(cur)
                cur = then
                closed = True
        elif guard is not None:
            # a predicated instruction: its own block under a branch on the guard
            pred_seg = cur
            then = new_seg(None)
            then.stmts.append((st, scope, origin, True))
            pred_seg.term = ("pred", guard, then, None, st, origin, scope)
            pending_fall.append(then)
            pending_fall.append(pred_seg)
            cur = new_seg(None)  # the continuation
        else:
            cur.stmts.append((st, scope, origin, False))
    if pending_fall or not closed:
        # falling off the end of the body: an implicit return
        if not closed:
            pending_fall.append(cur)
        end = new_seg(None)
        end.term = ("ret", None, None)
    # resolve targets and successor lists
    for s in segs:
        t = s.term
        if t is None:
            s.succ_segs = [s.fall] if s.fall is not None else []
        elif t[0] == "jump":
            tgt = find_label(labels, t[1], t[4])
            s.succ_segs = [tgt] if tgt is not None else []
            if tgt is None:
                s.term = ("badjump", t[1], t[2], t[3])
        elif t[0] == "cbr":
            tgt = find_label(labels, t[2], t[5])
            if tgt is None:
                s.term = ("badjump", t[2], t[3], t[4])
                s.succ_segs = []
            else:
                s.succ_segs = [tgt, s.fall] if s.fall is not tgt else [tgt]
        elif t[0] == "pred":
            s.succ_segs = [t[2], s.fall] if s.fall is not t[2] else [t[2]]
        else:
            s.succ_segs = []
    dominator_intervals(segs)
    return segs

def dominator_intervals(segs: list[Segment]) -> None:
    """Dominator-tree intervals of the segments (pre/post numbers), so
    that a read of a once-written register whose definition dominates
    the read takes that definition directly (what SSA construction would
    find, without walking and placing trivial PHIs)."""
    entry = segs[0]
    # reverse post-order
    order: dict[int, int] = {}
    post: list[Segment] = []
    seen = {id(entry)}
    stack: list[tuple[Segment, int]] = [(entry, 0)]
    while stack:
        x, i = stack.pop()
        succ = x.succ_segs
        if i < len(succ):
            stack.append((x, i + 1))
            y = succ[i]
            if y is not None and id(y) not in seen:
                seen.add(id(y))
                stack.append((y, 0))
        else:
            post.append(x)
    rpo = post[::-1]
    for i, x in enumerate(rpo):
        order[id(x)] = i
    preds: dict[int, list[Segment]] = {}
    for x in rpo:
        for y in x.succ_segs:
            if y is not None:
                preds.setdefault(id(y), []).append(x)
    idom: dict[int, Segment] = {id(entry): entry}
    changed = True
    while changed:
        changed = False
        for x in rpo[1:]:
            ps = [p for p in preds.get(id(x), ()) if id(p) in idom]
            if not ps:
                continue
            new = ps[0]
            for p in ps[1:]:
                a, c = p, new
                while a is not c:
                    while order[id(a)] > order[id(c)]:
                        a = idom[id(a)]
                    while order[id(c)] > order[id(a)]:
                        c = idom[id(c)]
                new = a
            if idom.get(id(x)) is not new:
                idom[id(x)] = new
                changed = True
    children: dict[int, list[Segment]] = {}
    for x in rpo[1:]:
        d = idom.get(id(x))
        if d is not None:
            children.setdefault(id(d), []).append(x)
    n = 0
    pre: dict[int, int] = {}
    last: dict[int, int] = {}
    st2: list[tuple[Segment, int]] = [(entry, 0)]
    pre[id(entry)] = 0
    while st2:
        x, i = st2.pop()
        ch = children.get(id(x), [])
        if i < len(ch):
            st2.append((x, i + 1))
            n += 1
            pre[id(ch[i])] = n
            st2.append((ch[i], 0))
        else:
            last[id(x)] = n
    for x in segs:
        x.dom_in = pre.get(id(x), -1)
        x.dom_out = last.get(id(x), -2)
