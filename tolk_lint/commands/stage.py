"""``tolk-lint stage PATH...``: the staging report.

One row per operand of each tensor core and sum of products (TL301's
question), per tile a loop copies through registers (TL302/TL303's) and per
decoded operand of a host kernel (TL401's):

    kernel, launch shape, op and line, operand, box (the thread and lane
    dimensions with extents and strides), tile shape, dtype, bytes a trip,
    re-reads today, depth on the file's target and on sm_75 / sm_80 / sm_90
    side by side, shared bytes of the budget, and the reason when not staged.

The launch shape each kernel was analysed under, and where it came from
(``--block``, the configuration, a call site, a host launch, ``.reqntid``,
a ``tolk: launch`` comment, Triton's ``.maxntid``: `tolk_lint.launch`), is
listed above the table and in every row (``launch``: the shape, its
source, its kind); a kernel with several launch shapes is analysed, and
reported, under each.

``--output-format json`` prints the rows as one JSON array (the keys are
those of `report_rows`); ``--html FILE`` also writes a page that draws each
staged tile and its slots (one SVG per tile) for people who would rather look
than read. Exit status: 0, or 2 on a usage or configuration error.
"""

from __future__ import annotations

import html
import json
import os
import sys
from typing import Any

import click

from tolk_lint.analysis.stage import (
    SIDE_BY_SIDE,
    StagingFacts,
    group_by_line,
    loop_trips,
    source_line,
    staging_facts,
)
from tolk_lint.config import Settings

__all__ = ["command", "render_html", "render_text", "report_rows", "stage_file"]


def _bytes(n: int | None) -> str:
    if not n:
        return "0"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def stage_file(path: str, settings: Settings) -> tuple[list[tuple[Any, StagingFacts]], list[str]]:
    """Parse ``path`` and compute the staging facts of each kernel: ([(kernel,
    facts)], [problems])."""
    from tolk_lint.engine import decode, kernel_target, parse, prepare
    from tolk_lint.launch.choose import SHAPE_FREE, forget, use
    from tolk_lint.launch.variants import launch_json

    try:
        with open(path, "rb") as f:
            text, err = decode(f.read(), path)
    except OSError as e:
        return [], [f"{path}: cannot read: {e.strerror or e}"]
    if err is not None:
        return [], [f"{path}: {err.message}"]
    try:
        module = parse(text or "", path)
    except Exception as e:  # noqa: BLE001 - reported, never a traceback
        return [], [f"{path}: internal error while reading the file: {type(e).__name__}: {e}"]
    problems = [f"{path}:{d.span.line}: {d.code} {d.message}" for d in module.diagnostics if d.code == "TL001"]
    prepare(module, settings)
    out = []
    for k in module.kernels:
        if not k.blocks:
            continue
        target = kernel_target(k, module, settings)
        for shape in k.launch.shapes or (None,):
            if len(k.launch.shapes) > 1:
                use(k, shape)
                forget(k, SHAPE_FREE)
            try:
                facts = staging_facts(k, module, settings, target)
            except Exception as e:  # noqa: BLE001
                problems.append(f"{path}: kernel `{k.name}`: internal error in the staging analysis: "
                                f"{type(e).__name__}: {e}")  # fmt: skip
                continue
            out.append((k, facts, launch_json(k, shape)))
    return out, problems


def _code_of_operand(v, target) -> str | None:
    if v.stageable and v.depth >= 1:
        return "TL301"
    if target.async_copy and v.box is not None and v.depth == 0 and v.budget_limited:
        return "TL303"
    return None


def _code_of_copy(tc, target) -> str | None:
    if tc.reason is not None or not target.async_copy:
        return None
    if tc.depth == 2:
        return "TL302"
    return "TL303" if tc.budget_limited else None


def report_rows(path: str, kernels: list[tuple]) -> list[dict[str, Any]]:
    """The report's rows for one file (JSON-ready): ``kernels`` holds
    ``(kernel, facts, launch)``, the launch as `launch_json` gives it."""
    rows: list[dict[str, Any]] = []
    for item in kernels:
        k, facts = item[0], item[1]
        launch = item[2] if len(item) > 2 else None
        target = facts.target
        base = {"path": path, "kernel": k.name, "target": target.name, "launch": launch}
        for v, copies in group_by_line(facts.operands):
            box = v.box
            rows.append({
                **base,
                "kind": "operand",
                "op": v.op_desc,
                "op_line": v.op_line,
                "line": v.line,
                "operand": v.operand,
                "box": [d.to_json() for d in box.dims] if box else [],
                "tile_shape": list(box.shape) if box else [],
                "dtype": v.dtype,
                "tile_bytes": v.tile_bytes,
                "rereads": box.rereads if box else None,
                "depth": v.depth,
                "depths": dict(v.depths),
                "shared_bytes": v.shared_bytes,
                "budget": v.budget,
                "stageable": v.stageable,
                "reason": v.reason,
                "proof": box.proof if box else None,
                "k_unrolled_shape": list(v.k_unrolled_shape) if v.k_unrolled_shape else None,
                "proposed_splits": [list(s) for s in v.proposed[0]] if v.proposed else None,
                "copies": copies,
                "code": _code_of_operand(v, target),
            })  # fmt: skip
        for tc in facts.copies:
            box = tc.box
            for line in tc.lines:
                rows.append({
                    **base,
                    "kind": "tile-copy",
                    "op": "tile copy",
                    "op_line": tc.loop_line,
                    "line": line,
                    "operand": tc.buffer,
                    "box": [d.to_json() for d in box.dims] if box else [],
                    "tile_shape": list(box.shape) if box else list(tc.shape),
                    "dtype": tc.dtype,
                    "tile_bytes": tc.tile_bytes,
                    "rereads": box.rereads if box else None,
                    "depth": tc.depth,
                    "depths": dict(tc.depths),
                    "shared_bytes": tc.shared_bytes,
                    "budget": tc.budget,
                    "stageable": tc.reason is None and tc.depth >= 1,
                    "reason": tc.reason or (None if tc.depth >= 2 else tc.depth_why),
                    "optin_depth": tc.optin_depth,
                    "code": _code_of_copy(tc, target),
                })  # fmt: skip
        for d in facts.decodes:
            rows.append({
                **base,
                "kind": "decode",
                "op": "sum of products (host)",
                "op_line": source_line(d.sum),
                "line": d.line,
                "operand": d.operand,
                "box": [],
                "tile_shape": list(d.panel_shape),
                "dtype": d.decode.result.type,
                "tile_bytes": d.panel_bytes,
                "rereads": d.redecodes or None,
                "depth": 0,
                "depths": dict.fromkeys(SIDE_BY_SIDE, 0),
                "shared_bytes": 0,
                "budget": 0,
                "stageable": d.stageable,
                "reason": d.reason,
                "redecodes": d.redecodes,
                "other_loops": [loop_trips(lp) for lp in d.others],
                "code": "TL401" if d.stageable else None,
            })  # fmt: skip
    return rows


# ---------------------------------------------------------------- text


def _box_text(box: list[dict[str, Any]]) -> str:
    return " ".join(f"{d['name']}:{d['extent']}×{d['stride']}" for d in box) or "-"


def launch_text(launch: dict[str, Any] | None) -> str:
    """A row's launch shape, short: ``16x16x1``, the contract, or ``any``."""
    if not launch:
        return "-"
    if launch.get("block"):
        return "x".join(str(n) for n in launch["block"])
    if launch.get("contract"):
        return launch["contract"]["text"]
    return "any"


def launch_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Which launch shape each kernel was analysed under, and from where."""
    out = []
    for r in rows:
        launch = r.get("launch")
        if not launch:
            continue
        if launch.get("block") or launch.get("contract"):
            what = ("block=(" + ",".join(str(n) for n in launch["block"]) + ")") if launch.get("block") \
                else launch["contract"]["text"]  # fmt: skip
            line = f"  {r['path']}: {r['kernel']}: {what} from {launch['source']}"
        else:
            line = f"  {r['path']}: {r['kernel']}: no launch shape given ({launch.get('assumed', 'any block')})"
        if line not in out:
            out.append(line)
    return out


def render_text(rows: list[dict[str, Any]]) -> str:
    """The launch shapes assumed, a table, one line per row, then the
    reasons of the rows not staged."""
    if not rows:
        return "no tensor-core operand, sum of products, tile copy or decoded operand found\n"
    head = ["kernel", "launch", "op@line", "operand@line", "box", "tile", "dtype", "bytes/trip", "reread", "depth",
            *SIDE_BY_SIDE, "shared/budget", "finding"]  # fmt: skip
    table = [head]
    notes = []
    for r in rows:
        shape = "×".join(map(str, r["tile_shape"])) or "-"
        finding = r["code"] or ("-" if r["stageable"] else "not staged")
        if r["reason"]:
            notes.append(f"  {r['kernel']} {r['operand']}@{r['line']}: {r['reason']}")
        table.append([
            r["kernel"],
            launch_text(r.get("launch")),
            f"{r['op']}@{r['op_line']}",
            f"{r['operand']}@{r['line']}",
            _box_text(r["box"]),
            shape,
            r["dtype"] or "-",
            _bytes(r["tile_bytes"]),
            "-" if r["rereads"] is None else f"{r['rereads']}×",
            f"{r['depth']} ({r['target']})",
            *(str(r["depths"].get(t, 0)) for t in SIDE_BY_SIDE),
            f"{_bytes(r['shared_bytes'])}/{_bytes(r['budget'])}" if r["budget"] else "-",
            finding,
        ])  # fmt: skip
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    lines = []
    for n, row in enumerate(table):
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    launches = launch_lines(rows)
    out = ("launch shapes assumed:\n" + "\n".join(launches) + "\n\n" if launches else "") + "\n".join(lines) + "\n"
    if notes:
        out += "\nwhy not staged (or not at depth 2):\n" + "\n".join(notes) + "\n"
    return out


# ---------------------------------------------------------------- html


def _tile_svg(r: dict[str, Any]) -> str:
    """The tile as a grid of elements and its slots in shared memory: slot 0
    and slot 1 at depth 2 (the copy of trip k + 1 fills one while the cores
    read the other), one slot at depth 1."""
    shape = [int(x) for x in r["tile_shape"]] or [1]
    rows, cols = (shape[-2], shape[-1]) if len(shape) >= 2 else (1, shape[0])
    cell = max(2, min(12, 240 // max(rows, cols, 1)))
    w, h = cols * cell, rows * cell
    depth = max(1, int(r["depth"]))
    pad, gap = 20, 36
    total_w = pad * 2 + w * (1 + depth) + gap * depth
    total_h = pad * 2 + h + 30
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
             f'role="img" aria-label="tile {rows} by {cols} and {depth} slot(s)">')]  # fmt: skip
    x0 = pad

    def grid(x: int, fill: str, label: str) -> None:
        parts.append(f'<rect x="{x}" y="{pad}" width="{w}" height="{h}" fill="{fill}" stroke="#333"/>')
        step_r = max(1, rows // 16)
        step_c = max(1, cols // 16)
        for i in range(0, rows + 1, step_r):
            parts.append(f'<line x1="{x}" y1="{pad + i * cell}" x2="{x + w}" y2="{pad + i * cell}" '
                         'stroke="#999" stroke-width="0.5"/>')  # fmt: skip
        for j in range(0, cols + 1, step_c):
            parts.append(f'<line x1="{x + j * cell}" y1="{pad}" x2="{x + j * cell}" y2="{pad + h}" '
                         'stroke="#999" stroke-width="0.5"/>')  # fmt: skip
        parts.append(f'<text x="{x}" y="{pad + h + 18}" font-size="12" font-family="monospace">'
                     f"{html.escape(label)}</text>")  # fmt: skip

    grid(x0, "#cfe3ff", f"global {rows}×{cols}")
    for s in range(depth):
        x = x0 + (w + gap) * (s + 1)
        parts.append(f'<line x1="{x - gap + 4}" y1="{pad + h // 2}" x2="{x - 4}" y2="{pad + h // 2}" '
                     'stroke="#333" marker-end="url(#a)"/>')  # fmt: skip
        label = f"slot {s}" + (" (trip k)" if depth == 2 and s == 0 else " (trip k+1)" if depth == 2 else "")
        grid(x, "#ffe7b3" if s == 0 else "#d9f2d0", label)
    parts.insert(1, '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="6" refY="3" orient="auto">'
                    '<path d="M0,0 L6,3 L0,6 z" fill="#333"/></marker></defs>')  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def render_html(rows: list[dict[str, Any]]) -> str:
    cols = ["kernel", "launch", "op", "op_line", "operand", "line", "tile_shape", "dtype", "tile_bytes", "rereads",
            "depth", *SIDE_BY_SIDE, "shared_bytes", "budget", "code", "reason"]  # fmt: skip
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>tolk-lint staging report</title>",
           ("<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
           "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}th{background:#eee}"
           "section{margin:1.5em 0}code{background:#f4f4f4}</style></head><body>"),
           "<h1>Staging report</h1><table><tr>"]  # fmt: skip
    out += [f"<th>{html.escape(c)}</th>" for c in cols]
    out.append("</tr>")
    for r in rows:
        out.append("<tr>")
        for c in cols:
            if c in SIDE_BY_SIDE:
                val = r["depths"].get(c, 0)
            elif c == "tile_shape":
                val = "×".join(map(str, r[c]))
            elif c == "launch":
                val = launch_text(r.get("launch")) + (f" ({r['launch']['source']})" if r.get("launch") else "")
            else:
                val = r.get(c)
            out.append(f"<td>{html.escape('' if val is None else str(val))}</td>")
        out.append("</tr>")
    out.append("</table>")
    for r in rows:
        if not r["stageable"] or r["depth"] < 1 or r["kind"] == "decode":
            continue
        out.append("<section>")
        out.append(f"<h3><code>{html.escape(r['kernel'])}</code> {html.escape(str(r['operand']))} "
                   f"(line {r['line']}): depth {r['depth']} on {html.escape(r['target'])}</h3>")  # fmt: skip
        out.append(f"<p>{html.escape(_box_text(r['box']))}; {_bytes(r['tile_bytes'])} a trip</p>")
        out.append(_tile_svg(r))
        out.append("</section>")
    out.append("</body></html>\n")
    return "".join(out)


# ---------------------------------------------------------------- the command


@click.command("stage")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--target", help="Target architecture: sm_75, sm_80, sm_90, ..., or cpu.")
@click.option("--block", help="The launch's block shape X,Y,Z, for every kernel.")
@click.option("--config", "config", metavar="FILE|'KEY = VALUE'", help="A configuration file, or one setting.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--html", "html_file", type=click.Path(dir_okay=False), help="Also write an HTML page with the tiles.")
def command(paths, target, block, config, isolated, output_format, html_file) -> None:
    """The staging report: per operand, tile, bytes, depth and why."""
    from tolk_lint.commands.options import overrides_from_options
    from tolk_lint.config import SettingsResolver
    from tolk_lint.walk import iter_files

    resolver = SettingsResolver(overrides_from_options(target=target, block=block, config=config, isolated=isolated))
    files = list(iter_files(list(paths) or ["."], settings_for=resolver.for_path))
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for f in files:
        kernels, errs = stage_file(f, resolver.for_path(f))
        rows += report_rows(f, kernels)
        problems += errs
    for p in problems:
        click.echo(f"tolk-lint: {p}", err=True)
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(render_text(rows), nl=False)
    if html_file:
        with open(html_file, "w", encoding="utf-8") as fh:
            fh.write(render_html(rows))
        if output_format == "text":
            click.echo(f"wrote {os.path.abspath(html_file)}", err=True)
    sys.exit(0)
