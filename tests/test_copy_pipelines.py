"""TL204: the cp.async pipelines of the research note's bug table
(`shared/research/staging.md` 4.5-4.7), written as PTX for every schedule
and checked against its happens-before model (Appendix B) for every trip
count the model runs; and where their diagnostics point."""

from __future__ import annotations

import textwrap

import pytest

from tolk_lint.config import resolve_settings
from tolk_lint.engine import lint_text

TL2 = ("TL2",)


def lint(src: str, path: str, block=None, target=None, select=TL2):
    s = resolve_settings(target=target, block=block, select=select)
    res = lint_text(textwrap.dedent(src).lstrip("\n"), path, s)
    return res.diagnostics


PIPE_HEAD = """
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry pipe(.param .u64 g, .param .u32 T)
    {{
        .shared .align 16 .b8 buf[{nbytes}];
        .reg .pred %p<200>;
        .reg .b32 %r<400>;
        .reg .b64 %rd<200>;
        .reg .f32 %f<100>;
        ld.param.u64 %rd1, [g];
        ld.param.u32 %r1, [T];
        mov.u32 %r2, %tid.x;
        shl.b32 %r3, %r2, 2;
        mov.u32 %r4, buf;
        cvt.u64.u32 %rd2, %r3;
        add.s32 %r5, %r2, 1;
        and.b32 %r6, %r5, 255;
        shl.b32 %r7, %r6, 2;
"""


class _Regs:
    def __init__(self):
        self.r, self.rd, self.p, self.f, self.label = 100, 100, 100, 50, 0

    def next(self, kind):
        n = getattr(self, kind)
        setattr(self, kind, n + 1)
        return f"%{kind}{n}"


def _copy(dk: int, k: str, S: int, label: str, regs: _Regs | None = None) -> str:
    regs = regs or _Regs()
    ra, rs, ro, rd_, rd2 = (regs.next("r") for _ in range(5))
    x, sa, sa2 = (regs.next("rd") for _ in range(3))
    p = regs.next("p")
    return f"""
        add.s32 {ra}, {k}, {dk};
        setp.ge.s32 {p}, {ra}, %r1;
        @{p} bra {label};
        rem.u32 {rs}, {ra}, {S};
        mul.lo.s32 {ro}, {rs}, 1024;
        add.s32 {rd_}, %r4, {ro};
        add.s32 {rd2}, {rd_}, %r3;
        mul.wide.s32 {x}, {ra}, 1024;
        add.s64 {sa}, %rd1, {x};
        add.s64 {sa2}, {sa}, %rd2;
        cp.async.ca.shared.global [{rd2}], [{sa2}], 4;
    {label}:"""


def _read(dk: int, k: str, S: int, regs: _Regs) -> str:
    ra, rs, ro, rd_, rd2 = (regs.next("r") for _ in range(5))
    f = regs.next("f")
    return f"""
        add.s32 {ra}, {k}, {dk};
        rem.u32 {rs}, {ra}, {S};
        mul.lo.s32 {ro}, {rs}, 1024;
        add.s32 {rd_}, %r4, {ro};
        add.s32 {rd2}, {rd_}, %r7;
        ld.shared.f32 {f}, [{rd2}];"""


def pipeline_ptx(S: int, prologue: list, body: list, epilogue: list) -> str:
    """A kernel whose loop `for k in 0..T-1` runs ``body``; ops: ("copy", d)
    copies tile k+d into slot (k+d) % S when k+d < T; ("copy+commit", d) also
    commits inside that guard; ("commit",), ("wait", n), ("bar",), ("read", d)
    reads tile k+d from its slot (each thread its right neighbour's word)."""
    regs = _Regs()
    out = [PIPE_HEAD.format(nbytes=S * 1024), "        mov.u32 %r8, 0;"]

    def emit(op, k):
        kind = op[0]
        if kind in ("copy", "copy+commit"):
            regs.label += 1
            lab = f"SKIP{regs.label}"
            text = _copy(op[1], k, S, lab, regs)
            if kind == "copy+commit":
                text = text.replace(f"\n    {lab}:", f"\n        cp.async.commit_group;\n    {lab}:")
            out.append(text)
        elif kind == "commit":
            out.append("        cp.async.commit_group;")
        elif kind == "wait":
            out.append(f"        cp.async.wait_group {op[1]};")
        elif kind == "bar":
            out.append("        bar.sync 0;")
        elif kind == "read":
            out.append(_read(op[1], k, S, regs))

    for op in prologue:
        emit(op, "%r8")
    out.append("""
        mov.u32 %r9, 0;
        setp.ge.s32 %p1, %r9, %r1;
        @%p1 bra DONE;
    LOOP:""")
    for op in body:
        emit(op, "%r9")
    out.append("""
        add.s32 %r9, %r9, 1;
        setp.lt.s32 %p2, %r9, %r1;
        @%p2 bra LOOP;
    DONE:""")
    for op in epilogue:
        emit(op, "%r8")
    out.append("        ret;\n    }")
    return "\n".join(out)


def model(S: int, prologue: list, body: list, epilogue: list, T: int) -> list[str]:
    """Appendix B of research/staging.md: the happens-before model, on the
    schedule unrolled for T trips."""
    ops = []

    def add(op, k):
        kind = op[0]
        if kind in ("copy", "copy+commit"):
            tile = k + op[1]
            if tile < T:
                ops.append(("copy", tile, tile % S))
                if kind == "copy+commit":
                    ops.append(("commit",))
        elif kind == "read":
            tile = k + op[1]
            ops.append(("read", tile, tile % S))
        else:
            ops.append(op)

    for op in prologue:
        add(op, 0)
    for k in range(T):
        for op in body:
            add(op, k)
    for op in epilogue:
        add(op, 0)
    errs, bars = [], [i for i, o in enumerate(ops) if o[0] == "bar"]

    def hb(i, j):
        return any(i < b < j for b in bars)

    groups, pending, retire = [], [], {}
    for i, o in enumerate(ops):
        if o[0] == "copy":
            pending.append(i)
        elif o[0] == "commit":
            groups.append(pending)
            pending = []
        elif o[0] == "wait":
            for g in groups[: len(groups) - o[1]] if o[1] else groups:
                for c in g:
                    retire.setdefault(c, i)
    copies = [i for i, o in enumerate(ops) if o[0] == "copy"]
    reads = [i for i, o in enumerate(ops) if o[0] == "read"]
    for r in reads:
        _, tile, slot = ops[r]
        cs = [i for i in copies if ops[i][1:] == (tile, slot) and i < r]
        if not cs:
            continue
        c = max(cs)
        w = retire.get(c)
        if w is None or w > r:
            errs.append(f"RAW read@{r}")
            continue
        if not hb(w, r):
            errs.append(f"RAW read@{r}: no barrier")
        errs += [f"WAW copy@{c2}" for c2 in copies if c < c2 < r and ops[c2][2] == slot]
    for c in copies:
        errs += [f"WAR copy@{c} vs read@{r}" for r in reads
                 if r < c and ops[r][2] == ops[c][2] and ops[r][1] != ops[c][1] and not hb(r, c)]  # fmt: skip
    return sorted(set(errs))


def form_a(S, wait=None, commit_empty=True):
    wait = S - 2 if wait is None else wait
    commit = ("commit",) if commit_empty else None
    pro = []
    for t in range(S - 1):
        pro += [("copy", t), ("commit",)] if commit_empty else [("copy+commit", t)]
    body = [("wait", wait), ("bar",)]
    body += [("copy", S - 1), commit] if commit_empty else [("copy+commit", S - 1)]
    body += [("read", 0)]
    return S, pro, [op for op in body if op], [("wait", 0)]


def form_b(wait=0):
    return 2, [("copy", 0), ("commit",), ("wait", 0), ("bar",)], \
        [("copy", 1), ("commit",), ("read", 0), ("wait", wait), ("bar",)], [("wait", 0)]  # fmt: skip


def form_b_no_wait():
    return 2, [("copy", 0), ("commit",), ("bar",)], [("copy", 1), ("commit",), ("read", 0), ("bar",)], [("wait", 0)]


def form_c(wait=1, trailing=True):
    body = [("copy", 1), ("commit",), ("wait", wait), ("bar",), ("read", 0)] + ([("bar",)] if trailing else [])
    return 2, [("copy", 0), ("commit",)], body, [("wait", 0)]


PIPELINES = {
    "form_a_s2": form_a(2),
    "form_a_s3": form_a(3),
    "form_a_s4": form_a(4),
    "form_b_seed": form_b(),
    "form_b_no_wait": form_b_no_wait(),
    "form_c": form_c(),
    "form_c_no_trailing_barrier": form_c(trailing=False),
    "form_c_wait2": form_c(wait=2),
    "form_a_s2_wait1": form_a(2, wait=1),
    "form_a_s3_wait2": form_a(3, wait=2),
    "form_a_s3_tail_uncommitted": form_a(3, commit_empty=False),
}
MODEL_VERDICTS = {  # research/staging.md 4.7
    "form_a_s2": False, "form_a_s3": False, "form_a_s4": False, "form_b_seed": False, "form_b_no_wait": True,
    "form_c": False, "form_c_no_trailing_barrier": True, "form_c_wait2": True, "form_a_s2_wait1": True,
    "form_a_s3_wait2": True, "form_a_s3_tail_uncommitted": True,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_against_the_happens_before_model(name):
    S, pro, body, epi = PIPELINES[name]
    hazard = any(model(S, pro, body, epi, T) for T in range(1, 9))
    assert hazard == MODEL_VERDICTS[name]  # the model itself, as the note reports it
    src = pipeline_ptx(S, pro, body, epi)
    diags = lint(src, f"{name}.ptx", block=(256, 1, 1))
    assert {d.code for d in diags} <= {"TL204"}, [d.message for d in diags]
    assert bool(diags) == hazard, "\n".join(d.message for d in diags) or "no TL204"


def test_pipeline_diagnostics_point_where_the_conventions_say():
    # no trailing barrier: the refill copy is the later access (a copy into a slot others may still read)
    S, pro, body, epi = form_c(trailing=False)
    diags = lint(pipeline_ptx(S, pro, body, epi), "c.ptx", block=(256, 1, 1))
    assert {d.data["kind"] for d in diags} == {"copy-into-read"}
    assert all("cp.async" in d.message.split(" copies")[0] for d in diags)
    # a wait count too large: the read is the later access
    S, pro, body, epi = form_a(2, wait=1)
    diags = lint(pipeline_ptx(S, pro, body, epi), "a.ptx", block=(256, 1, 1))
    assert {d.data["kind"] for d in diags} == {"read-before-wait"}
    assert all(d.message.startswith("`ld.shared") for d in diags)


def test_copies_without_any_wait_overwrite_in_flight_copies():
    S, pro, body, epi = 2, [("copy", 0), ("commit",)], [("copy", 1), ("commit",), ("bar",), ("read", 0), ("bar",)], []
    diags = lint(pipeline_ptx(S, pro, body, epi), "n.ptx", block=(256, 1, 1))
    kinds = {d.data["kind"] for d in diags}
    assert "copy-over-inflight" in kinds and "read-before-wait" in kinds
