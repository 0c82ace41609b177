"""One finding per user source line and rule.

nvcc copies a source line many times over (``#pragma unroll``, an inlined
function called in a loop, a template instantiated twice in one kernel): one
``__syncthreads()`` under a divergent branch in a loop unrolled 8 times is 8
``bar.sync`` lines of PTX, and each would be its own TL101 with its own
witness. `merge_copies` keeps the first (the lowest PTX line) of the
findings of one code in one kernel whose ``.loc`` origins are the same
source line (with the same chain of inlined calls, the toolkit's headers
left out: one ``grid.sync()`` is several barriers) and that name the same
shared array (``data["buffer"]``, when they name one), and lists the PTX lines
of the others in its ``data["also_at"]``; the text, GitHub and SARIF outputs
show them as "also at PTX lines ...".

It runs after the suppressions, so a ``tolk: noqa`` on one PTX line still
hides that copy alone. Findings with no origin (Python, PTX without
``.loc``) and the codes that say a kernel was not analysed are left as they
are.
"""

from __future__ import annotations

import dataclasses

from tolk_lint.diagnostics import NOT_ANALYSED, Diagnostic, is_toolkit_path, report_frame


def _key(d: Diagnostic) -> tuple | None:
    if d.origin is None or d.code in NOT_ANALYSED:
        return None
    frames = d.origin.chain()
    if frames[0].path == d.span.path:  # the origin is the linted file itself: no copies to speak of
        return None
    # the user's own frames: the PTX of one `grid.sync()` or `cg::reduce(...)`
    # holds several barriers or shuffles at different lines of the toolkit's
    # headers, one finding of the line that called it
    chain = tuple((o.path, o.line) for o in frames if not is_toolkit_path(o.path)) or tuple(
        (o.path, o.line) for o in frames
    )
    buffer = d.data.get("buffer") if d.data else None  # `sA[i] * sB[i]`: two arrays, two findings
    return (d.code, d.kernel, d.span.path, chain, str(buffer))


def merge_copies(diags: list[Diagnostic]) -> list[Diagnostic]:
    """``diags`` with the copies of one source line's finding merged into the first."""
    groups: dict[tuple, list[Diagnostic]] = {}
    order: list[tuple | Diagnostic] = []
    for d in sorted(diags, key=Diagnostic.sort_key):
        key = _key(d)
        if key is None:
            order.append(d)
        elif key in groups:
            groups[key].append(d)
        else:
            groups[key] = [d]
            order.append(key)
    out = []
    for item in order:
        if isinstance(item, Diagnostic):
            out.append(item)
            continue
        first, *rest = groups[item]
        lines = sorted({d.span.line for d in rest} - {first.span.line})
        if not lines:
            out.append(first)
            continue
        data = dict(first.data)
        data["also_at"] = lines
        out.append(dataclasses.replace(first, data=data))
    return out


def also_at_text(d: Diagnostic) -> str | None:
    """``also at PTX lines 55, 68 (the same line 9 of k.cu: ...)``, or None."""
    lines = d.data.get("also_at") if d.data else None
    if not lines:
        return None
    import os

    what = "PTX line" if len(lines) == 1 else "PTX lines"
    text = f"also at {what} {', '.join(str(n) for n in lines)}"
    if d.origin is not None:
        o = report_frame(d.origin)
        text += (f" (the same line {o.line} of {os.path.basename(o.path)}: an unrolled loop, or a call that compiles "
                 "to several instructions)")
    return text
