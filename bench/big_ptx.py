"""Write one large PTX module made of copies of real kernels, for measuring
how the lint scales with the size of a file (issue 16: 50 MB, ~8,000
kernels, must lint in under 2 minutes and 2 GB).

    python bench/big_ptx.py OUT.ptx --mb 50 PTX_FILE...
    python bench/big_ptx.py OUT.ptx --mb 50 --cu fixtures/cuda/memory/*.cu   # nvcc -ptx -lineinfo first

Each input's ``.entry`` and ``.func`` definitions are copied again and
again, every copy's functions renamed (``name`` -> ``name_<n>``, calls
included), until the output reaches the size asked for. One header
(``.version``, ``.target``, ``.address_size``: the first input's); each
input's ``.file`` table renumbered so that its ``.loc`` lines keep naming
its own CUDA source, the tables written once, at the end (as nvcc does).
Module-level variables are copied with their functions and renamed too;
of the DWARF ``.section``s only ``.debug_str`` is kept (the ``.loc``'s
``function_name`` labels), one per input. ptxas accepts the result when it accepts
the inputs.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

_FUNC = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
_VAR = re.compile(
    r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:global|shared|const)\b[^;]*?([\w$]+)\s*(?:\[[^\]]*\]\s*)*(?:=|;)",
    re.M,
)
_FILE = re.compile(r"^\s*\.file\s+(\d+)\s+(.*)$", re.M)
_LOC = re.compile(r"(\.loc\s+)(\d+)")
_INLINED = re.compile(r"(inlined_at\s+)(\d+)")
_INFO_STRING = re.compile(r"\$L__info_string(\d+)")
_DEBUG_STR = re.compile(r"\.section\s+\.debug_str\s*\{(.*?)\n\s*\}", re.S)
_HEADER = re.compile(r"^\s*\.(?:version|target|address_size)\b.*$", re.M)


def split_module(text: str) -> tuple[list[str], str, dict[int, str], str]:
    """``(header lines, the functions and variables, {file index: its path}, the .debug_str strings)``."""
    files = {int(m.group(1)): m.group(2) for m in _FILE.finditer(text)}
    header = _HEADER.findall(text)
    strings = "".join(m.group(1) for m in _DEBUG_STR.finditer(text))
    body = _HEADER.sub("", _FILE.sub("", text))
    cut = body.find(".section")
    if cut >= 0:
        body = body[:cut]
    return header, body, files, strings


def renamed(body: str, names: list[str], n: int) -> str:
    if not names:
        return body
    pattern = re.compile(
        r"(?<![\w$])(" + "|".join(re.escape(x) for x in sorted(names, key=len, reverse=True)) + r")(?![\w$])"
    )
    return pattern.sub(lambda m: f"{m.group(1)}_{n}", body)


def build(texts: list[str], target_bytes: int = 0, copies: int | None = None) -> str:
    """The module of copies of ``texts``' functions: ``copies`` rounds of
    one copy of each input, or as many rounds as reach ``target_bytes``."""
    header: list[str] = []
    units = []  # (body, names, file remap)
    table: dict[int, str] = {}
    strings = []
    for i, text in enumerate(texts):
        head, body, files, own = split_module(text)
        header = header or head
        # the `.loc`'s `function_name` labels: one set per input, shared by its copies
        body = _INFO_STRING.sub(rf"$L__info_string{i}_\1", body)
        strings.append(_INFO_STRING.sub(rf"$L__info_string{i}_\1", own))
        remap = {}
        for idx, name in sorted(files.items()):
            remap[idx] = len(table) + 1
            table[len(table) + 1] = name
        body = _LOC.sub(
            lambda m, remap=remap: f"{m.group(1)}{remap.get(int(m.group(2)), int(m.group(2)))}", body
        )
        body = _INLINED.sub(
            lambda m, remap=remap: f"{m.group(1)}{remap.get(int(m.group(2)), int(m.group(2)))}", body
        )
        names = sorted(
            set(_FUNC.findall(body)) | set(_VAR.findall(body[: body.find("{")] if "{" in body else body))
        )
        units.append((body, names))
    out = ["\n".join(header) + "\n"]
    size, n = len(out[0]), 0
    while size < target_bytes if copies is None else n < copies:
        for body, names in units:
            copy = renamed(body, names, n)
            out.append(copy)
            size += len(copy)
        n += 1
    out.append("\n".join(f"\t.file\t{i} {name}" for i, name in table.items()) + "\n")
    if any(x.strip() for x in strings):
        out.append("\t.section\t.debug_str\n\t{" + "".join(strings) + "\n\t}\n")
    return "".join(out)


def compile_cu(paths: list[str]) -> list[str]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in paths:
            dst = os.path.join(tmp, os.path.basename(p) + ".ptx")
            subprocess.run(["nvcc", "-ptx", "-lineinfo", "-arch=sm_80", p, "-o", dst], check=True)
            with open(dst) as f:
                out.append(f.read())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--cu", action="store_true", help="the inputs are CUDA C: compile them with nvcc first")
    a = ap.parse_args(argv)
    if a.cu:
        texts = compile_cu(a.inputs)
    else:
        texts = []
        for p in a.inputs:
            with open(p) as f:
                texts.append(f.read())
    text = build(texts, int(a.mb * 1024 * 1024))
    with open(a.out, "w") as f:
        f.write(text)
    print(
        f"{a.out}: {len(text) / 2**20:.1f} MB, {len(_FUNC.findall(text))} functions, {text.count(chr(10))} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
