"""The fixture harness: inline expectations, matched exactly (public, like ``fixit.testing``).

A fixture is a kernel file whose comments say what tolk-lint must report::

    // flags: --target sm_80 --block 256,1,1          <- in the first 5 lines
    extern "C" __global__ void k(float* x)  // expect-clean   <- nothing for this kernel
    ...
        __syncthreads();                    // expect: TL101
        // expect: TL201 "shared"           <- alone on a line: applies to the next code line
        s[t] = v;

- ``expect: CODE`` (``//`` in PTX and CUDA C, ``#`` in Python) trails the line
  the diagnostic must point at, or stands alone on its own line and then
  applies to the next code line (stacked ones share it). Several codes may be
  listed: ``expect: TL101, TL201``; ``expect: [TL101]`` is the same as
  ``expect: TL101``. A ``"substring"`` after a code must occur in that
  diagnostic's message.
- ``expect-clean`` on a kernel's first line: nothing at all may be reported
  for that kernel (TL0xx included).
- ``flags:`` in the first five lines: command-line flags for the run
  (``--target``, ``--block``, ``--select``, ``--ignore``).

Matching is exact: the set of ``(line, code)`` reported (one per line and
code, since the unrolled copies of a source line all land on it) must equal
the expectations. TL0xx diagnostics count like any other.

CUDA C fixtures (``.cu``) are compiled with the machine's
``nvcc -ptx -lineinfo -arch=<target>`` at test time; the PTX is linted and each
diagnostic placed on the ``.cu`` line its ``.loc`` origin names (outermost
``inlined_at``), as the acceptance set's own checker does. A diagnostic that
lands on no line of the ``.cu`` counts as an extra one.

``check_fixture(path, update=True)`` rewrites the expectations in place from
what was reported (``pytest --update-fixtures``).

An acceptance set (a folder with a ``manifest.json`` of kernels and the
findings each must give) is checked by `acceptance_cases` /
`check_acceptance_case`, in process, with the semantics of its checker.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tolk_lint.config import Settings, resolve_settings
from tolk_lint.launch.mangled import read_entry

if TYPE_CHECKING:
    from tolk_lint.diagnostics import Diagnostic
    from tolk_lint.registry import Example

__all__ = [
    "AcceptanceCase",
    "AcceptanceResult",
    "CleanKernel",
    "Expectation",
    "Expectations",
    "FixtureError",
    "FixtureResult",
    "Placed",
    "acceptance_cases",
    "acceptance_result",
    "check_acceptance_case",
    "check_fixture",
    "collect_fixtures",
    "compile_cuda",
    "fixture_result",
    "language_of",
    "parse_expectations",
    "run_example",
    "settings_from_flags",
]

COMMENT = {"ptx": "//", "cuda": "//", "python": "#"}
SUFFIX_LANGUAGE = {".ptx": "ptx", ".cu": "cuda", ".py": "python"}
FIXTURE_LANGUAGES = ("ptx", "numba", "cuda")  # folders of fixtures/
DEFAULT_CUDA_ARCH = "sm_80"
FLAG_LINES = 5

_CODE = r"TL\d{3}"
_ITEM = re.compile(rf'\s*,?\s*\[?\s*({_CODE}(?:\s*,\s*{_CODE})*)\s*\]?\s*(?:"([^"]*)")?')


class FixtureError(ValueError):
    """A fixture that cannot be read as one: a malformed ``expect:`` or ``flags:``."""


@dataclass(frozen=True)
class Expectation:
    line: int  # the line the diagnostic must point at
    code: str
    substring: str | None = None
    comment_line: int = 0  # the line that holds the ``expect:`` comment

    def __str__(self) -> str:
        sub = f' "{self.substring}"' if self.substring else ""
        return f"line {self.line}: {self.code}{sub}"


@dataclass(frozen=True)
class CleanKernel:
    line: int
    name: str | None  # the kernel's name, when the marker's line (or the next ones) name it


@dataclass
class Expectations:
    language: str
    expected: list[Expectation] = field(default_factory=list)
    clean: list[CleanKernel] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    flags_line: int | None = None

    @property
    def pairs(self) -> set[tuple[int, str]]:
        return {(e.line, e.code) for e in self.expected}

    @property
    def codes(self) -> set[str]:
        return {e.code for e in self.expected}

    def settings(self, extra_flags: Iterable[str] = ()) -> Settings:
        return settings_from_flags(list(self.flags) + list(extra_flags))

    @property
    def target(self) -> str | None:
        return _flag_value(self.flags, "--target")


def language_of(path: str | os.PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIX_LANGUAGE:
        raise FixtureError(f"{path}: not a fixture (expected .ptx, .cu or .py)")
    return SUFFIX_LANGUAGE[suffix]


# -- expectations -----------------------------------------------------------------------


def _comment_re(marker: str, word: str) -> re.Pattern[str]:
    return re.compile(re.escape(marker) + r"\s*" + word)


def parse_expectations(text: str, language: str) -> Expectations:
    """Read the ``expect:``, ``expect-clean`` and ``flags:`` comments of a
    fixture written in ``language`` (``ptx``, ``cuda`` or ``python``)."""
    if language == "numba":
        language = "python"
    marker = COMMENT[language]
    expect_re = _comment_re(marker, r"expect:")
    clean_re = _comment_re(marker, r"expect-clean\b")
    flags_re = _comment_re(marker, r"flags:(.*)$")
    lines = text.splitlines()
    out = Expectations(language)
    waiting: list[tuple[int, str, str | None]] = []  # own-line expectations for the next code line
    for i, line in enumerate(lines, start=1):
        stripped = line.strip()
        if i <= FLAG_LINES and out.flags_line is None:
            m = flags_re.search(line)
            if m and stripped.startswith(marker):
                try:
                    out.flags = shlex.split(m.group(1))
                except ValueError as e:
                    raise FixtureError(f"line {i}: bad flags: {e}") from None
                out.flags_line = i
                continue
        own_line = stripped.startswith(marker)
        m = expect_re.search(line)
        if m:
            items = _parse_items(line[m.end() :], i)
            if own_line:
                waiting += [(i, code, sub) for code, sub in items]
                continue
            out.expected += [Expectation(i, code, sub, i) for code, sub in items]
        if clean_re.search(line):
            out.clean.append(CleanKernel(i, _kernel_name(lines, i - 1, language)))
        if own_line or not stripped:
            continue
        out.expected += [Expectation(i, code, sub, at) for at, code, sub in waiting]
        waiting = []
    if waiting:
        raise FixtureError(f"line {waiting[0][0]}: `expect:` on its own line with no code line after it")
    return out


def _parse_items(rest: str, lineno: int) -> list[tuple[str, str | None]]:
    items: list[tuple[str, str | None]] = []
    pos = 0
    while True:
        m = _ITEM.match(rest, pos)
        if not m or m.end() == pos:
            break
        codes = [c.strip() for c in m.group(1).split(",")]
        for c in codes[:-1]:
            items.append((c, None))
        items.append((codes[-1], m.group(2)))
        pos = m.end()
    if not items:
        raise FixtureError(f"line {lineno}: `expect:` names no code (write `expect: TL101`)")
    return items


_PTX_KERNEL = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)")
_PY_KERNEL = re.compile(r"\bdef\s+(\w+)")
_C_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _kernel_name(lines: list[str], index: int, language: str) -> str | None:
    """The name of the kernel declared on ``lines[index]`` (or the few lines after)."""
    for line in lines[index : index + 4]:
        code = line.split(COMMENT[language], 1)[0]
        if language == "ptx":
            m = _PTX_KERNEL.search(code)
            if m:
                return m.group(1)
        elif language == "python":
            m = _PY_KERNEL.search(code)
            if m:
                return m.group(1)
        else:
            for m in _C_CALL.finditer(code):
                if not m.group(1).startswith("__") and m.group(1) not in ("if", "for", "while", "switch"):
                    return m.group(1)
    return None


def _flag_value(flags: list[str], name: str) -> str | None:
    for i, f in enumerate(flags):
        if f == name and i + 1 < len(flags):
            return flags[i + 1]
        if f.startswith(name + "="):
            return f.split("=", 1)[1]
    return None


_KNOWN_FLAGS = ("--target", "--block", "--select", "--ignore")


def settings_from_flags(flags: list[str]) -> Settings:
    """``--target sm_80 --block 256,1,1 --select TL1 --ignore TL002`` as `Settings`."""
    values: dict[str, str] = {}
    i = 0
    while i < len(flags):
        f = flags[i]
        name, _, inline = f.partition("=")
        if name not in _KNOWN_FLAGS:
            raise FixtureError(f"unknown flag `{f}` (known: {', '.join(_KNOWN_FLAGS)})")
        if inline:
            values[name] = inline
            i += 1
        elif i + 1 < len(flags):
            values[name] = flags[i + 1]
            i += 2
        else:
            raise FixtureError(f"flag `{f}` needs a value")
    target = values.get("--target")
    if target:
        from tolk_lint.target import parse_target

        try:
            target = parse_target(target).name
        except ValueError as e:
            raise FixtureError(f"--target: {e}") from None
    block = None
    if values.get("--block"):
        try:
            dims = [int(x) for x in values["--block"].strip("()").split(",") if x.strip()]
        except ValueError:
            raise FixtureError(f"--block: expected X,Y,Z, got `{values['--block']}`") from None
        dims += [1] * (3 - len(dims))
        block = (dims[0], dims[1], dims[2])

    def codes(v: str | None) -> tuple[str, ...] | None:
        return tuple(c.strip().upper() for c in v.split(",") if c.strip()) if v else None

    return resolve_settings(
        select=codes(values.get("--select")), ignore=codes(values.get("--ignore")), target=target, block=block,
        time_budget=FIXTURE_TIME_BUDGET,
    )


# A fixture's answer must not depend on how busy the machine is: it runs under a
# budget far above any fixture's time (the budget itself is tested on its own).
FIXTURE_TIME_BUDGET = 600.0


# -- collecting ------------------------------------------------------------------------


def collect_fixtures(root: str | os.PathLike = "fixtures") -> list[Path]:
    """Every fixture under ``root/{ptx,numba,cuda}`` (``fixtures/corpus`` holds
    no expectations and is left out), sorted. ``*.fixed.*`` files (the
    expected output of a fix) are not fixtures of their own."""
    root = Path(root)
    out: list[Path] = []
    for sub in FIXTURE_LANGUAGES:
        folder = root / sub
        if not folder.is_dir():
            continue
        for p in sorted(folder.rglob("*")):
            if p.is_file() and p.suffix in SUFFIX_LANGUAGE and ".fixed." not in p.name:
                if "corpus" in p.relative_to(root).parts or "__pycache__" in p.parts:
                    continue
                out.append(p)
    return out


# -- compiling CUDA C ------------------------------------------------------------------

_PTX_CACHE: dict[tuple[str, str], Path] = {}
_CACHE_DIR: list[str] = []


def _cache_dir() -> Path:
    if not _CACHE_DIR:
        d = tempfile.mkdtemp(prefix="tolk-ptx-cache-")
        atexit.register(shutil.rmtree, d, True)
        _CACHE_DIR.append(d)
    return Path(_CACHE_DIR[0])


def compile_cuda(path: str | os.PathLike, arch: str = DEFAULT_CUDA_ARCH, out_dir: str | None = None) -> Path:
    """``nvcc -ptx -lineinfo -arch=ARCH`` on ``path``, run in the file's own
    folder so the PTX's ``.file`` names it; returns the PTX path (in
    ``out_dir``, or a fresh temporary folder). Each (source text, arch) is
    compiled once per process."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FixtureError("nvcc is not on PATH: CUDA C fixtures need it")
    src = Path(path).resolve()
    key = (hashlib.sha256(src.read_bytes() + str(src).encode()).hexdigest(), arch)
    out = Path(out_dir or tempfile.mkdtemp(prefix="tolk-cu-")) / (src.stem + ".ptx")
    cached = _PTX_CACHE.get(key)
    if cached is None or not cached.exists():
        cached = _cache_dir() / f"{key[0][:24]}.{arch}.ptx"
        cmd = [nvcc, "-ptx", "-lineinfo", f"-arch={arch}", "-o", str(cached), src.name]
        p = subprocess.run(cmd, check=False, cwd=src.parent, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise FixtureError(f"nvcc failed on {path} ({' '.join(cmd)}):\n{p.stderr.strip()}")
        _PTX_CACHE[key] = cached
    shutil.copyfile(cached, out)
    return out


# -- linting and placing ---------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """A diagnostic placed on a line of the fixture (``line`` None: it landed elsewhere)."""

    line: int | None
    code: str
    message: str
    kernel: str | None
    where: str  # where it was reported in the linted file, for messages

    def __str__(self) -> str:
        at = f"line {self.line}" if self.line is not None else f"no line of the fixture ({self.where})"
        return f"{at}: {self.code} {self.message}"


def _same_file(a: str | None, b: str | os.PathLike) -> bool:
    if not a:
        return False
    return os.path.basename(str(a)) == os.path.basename(str(b))


def place(diags: list[Diagnostic], source: str | os.PathLike, via_origin: bool) -> list[Placed]:
    """Put each diagnostic on a line of ``source``: its span line (PTX and
    Python fixtures), or the line its ``.loc`` origin reports at (CUDA C:
    `report_frame`)."""
    from tolk_lint.diagnostics import report_frame

    out = []
    for d in diags:
        where = f"{os.path.basename(d.span.path)}:{d.span.line}"
        line = None
        if via_origin:
            o = report_frame(d.origin)
            if o is not None and _same_file(o.path, source):
                line = o.line
        elif _same_file(d.span.path, source):
            line = d.span.line
        out.append(Placed(line, d.code, d.message, d.kernel, where))
    return out


def _lint(path: Path, settings: Settings) -> list[Diagnostic]:
    from tolk_lint.engine import lint_file

    return list(lint_file(str(path), settings).diagnostics)


def lint_fixture(path: str | os.PathLike, exp: Expectations, extra_flags: Iterable[str] = ()) -> list[Placed]:
    path = Path(path)
    settings = exp.settings(extra_flags)
    if exp.language == "cuda":
        arch = settings.target or DEFAULT_CUDA_ARCH
        with tempfile.TemporaryDirectory(prefix="tolk-cu-") as tmp:
            ptx = compile_cuda(path, arch, tmp)
            return place(_lint(ptx, settings), path, via_origin=True)
    return place(_lint(path, settings), path, via_origin=False)


# -- matching --------------------------------------------------------------------------


@dataclass
class FixtureResult:
    path: Path
    expectations: Expectations
    reported: list[Placed]
    missing: list[Expectation] = field(default_factory=list)
    extra: list[Placed] = field(default_factory=list)
    wrong_message: list[tuple[Expectation, list[Placed]]] = field(default_factory=list)
    dirty_clean: list[tuple[CleanKernel, Placed]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.wrong_message or self.dirty_clean)

    def mismatched_codes(self) -> set[str]:
        """Every code involved in a mismatch."""
        codes = {e.code for e in self.missing} | {p.code for p in self.extra}
        codes |= {e.code for e, _ in self.wrong_message} | {p.code for _, p in self.dirty_clean}
        return codes

    def report(self) -> str:
        out = [f"{self.path}: the diagnostics differ from the expectations"]
        out += [f"  missing {e}" for e in self.missing]
        out += [f"  extra   {p}" for p in self.extra]
        for e, got in self.wrong_message:
            msgs = "; ".join(p.message for p in got)
            out.append(f'  message line {e.line}: {e.code} does not contain "{e.substring}": {msgs}')
        for c, p in self.dirty_clean:
            out.append(f"  kernel `{c.name}` (line {c.line}) is expect-clean, but: {p}")
        out.append("  (run `pytest --update-fixtures` to rewrite the expectations from what is reported)")
        return "\n".join(out)


def _clean_kernel_of(p: Placed, clean: list[CleanKernel], all_starts: list[int]) -> CleanKernel | None:
    for c in clean:
        # a mangled entry names its kernel exactly: `_Z13load_tile_bigPKfPfi` is not `load_tile`
        mangled = p.kernel is not None and p.kernel.startswith("_Z")
        if c.name and p.kernel and (p.kernel == c.name or (mangled and read_entry(p.kernel).name == c.name)):
            return c
    if p.kernel is None and p.line is not None:
        # no kernel named: the clean kernel whose first line is the nearest before it
        before = [s for s in all_starts if s <= p.line]
        if before:
            start = max(before)
            for c in clean:
                if c.line == start:
                    return c
    return None


def match(path: Path, exp: Expectations, reported: list[Placed]) -> FixtureResult:
    res = FixtureResult(path, exp, reported)
    got: dict[tuple[int | None, str], list[Placed]] = {}
    for p in reported:
        got.setdefault((p.line, p.code), []).append(p)
    want = exp.pairs
    for e in exp.expected:
        if (e.line, e.code) not in got:
            if e not in res.missing:
                res.missing.append(e)
        elif e.substring and not any(e.substring in p.message for p in got[(e.line, e.code)]):
            res.wrong_message.append((e, got[(e.line, e.code)]))
    for key, ps in sorted(got.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1])):
        if key not in want:
            res.extra.append(ps[0])
    starts = sorted(c.line for c in exp.clean)
    for p in reported:
        c = _clean_kernel_of(p, exp.clean, starts)
        if c is not None and (p.line, p.code) in want:  # extras were reported above already
            res.dirty_clean.append((c, p))
    return res


def fixture_result(path: str | os.PathLike, extra_flags: Iterable[str] = ()) -> FixtureResult:
    path = Path(path)
    exp = parse_expectations(path.read_text(encoding="utf-8"), language_of(path))
    return match(path, exp, lint_fixture(path, exp, extra_flags))


def check_fixture(
    path: str | os.PathLike, update: bool = False, extra_flags: Iterable[str] = ()
) -> FixtureResult:
    """Lint ``path`` and require exactly its expectations; with ``update``,
    rewrite the expectations from what was reported instead (and fail only on
    diagnostics that land on no line of the file)."""
    res = fixture_result(path, extra_flags)
    if update and not res.ok:
        rewrite_expectations(res)
        res = fixture_result(path, extra_flags)
    if not res.ok:
        raise AssertionError(res.report())
    return res


# -- updating --------------------------------------------------------------------------


def rewrite_expectations(res: FixtureResult) -> None:
    """Rewrite ``res.path``'s ``expect:`` comments to what was reported: drop
    every old one, put a trailing ``expect:`` on each reported line (keeping
    the substring of an old expectation that still holds), and drop
    ``expect-clean`` from kernels that now have diagnostics."""
    path, exp = res.path, res.expectations
    marker = COMMENT[exp.language]
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    expect_re = _comment_re(marker, r"expect:")
    clean_re = _comment_re(marker, r"expect-clean\b")
    kept_sub = {(e.line, e.code): e.substring for e in exp.expected if e.substring}
    by_line: dict[int, list[str]] = {}
    for p in res.reported:
        if p.line is None:
            continue
        codes = by_line.setdefault(p.line, [])
        if p.code not in codes:
            codes.append(p.code)
    dirty = {c.line for c, _ in res.dirty_clean}
    for p in res.extra:
        c = _clean_kernel_of(p, exp.clean, sorted(c.line for c in exp.clean))
        if c is not None:
            dirty.add(c.line)
    new: list[str] = []
    for i, line in enumerate(lines, start=1):
        stripped = line.strip()
        m = expect_re.search(line)
        if m and stripped.startswith(marker):
            continue  # an own-line expectation: dropped
        if m:
            line = line[: m.start()].rstrip()
        if i in dirty:
            cm = clean_re.search(line)
            if cm:
                line = line[: cm.start()].rstrip()
        if i in by_line:
            parts = []
            for code in sorted(by_line[i]):
                sub = kept_sub.get((i, code))
                parts.append(f'{code} "{sub}"' if sub else code)
            line = f"{line}  {marker} expect: {', '.join(parts)}"
        new.append(line)
    path.write_text("\n".join(new) + ("\n" if text.endswith("\n") else ""), encoding="utf-8")


# -- rule examples ---------------------------------------------------------------------


def run_example(example: Example, name: str = "example") -> FixtureResult:
    """Check a rule's VALID/INVALID example like a fixture: its source is
    written to a temporary ``name<suffix>`` and its ``flags`` are added to
    the source's own ``flags:`` line."""
    with tempfile.TemporaryDirectory(prefix="tolk-example-") as tmp:
        path = Path(tmp) / (re.sub(r"\W", "_", name) + example.suffix)
        path.write_text(example.source, encoding="utf-8")
        return check_fixture(path, extra_flags=shlex.split(example.flags or ""))


# -- the acceptance set ----------------------------------------------------------------


@dataclass(frozen=True)
class AcceptanceCase:
    """One kernel of ``manifest.json`` on one asserted target."""

    folder: Path
    entry: dict
    target: str | None
    linted: Path  # the .ptx (CUDA) or .py file

    @property
    def source(self) -> str:
        return self.entry["file"]

    @property
    def kernel(self) -> str:
        return self.entry["kernel"]

    @property
    def is_cuda(self) -> bool:
        return self.entry["language"] == "cuda"

    @property
    def id(self) -> str:
        return f"{self.source}[{self.target}]" if self.target else self.source

    @property
    def expected(self) -> list[dict]:
        return self.entry.get("expected_by_target", {}).get(self.target, self.entry["expected"])

    @property
    def expected_codes(self) -> set[str]:
        return {e["code"] for e in self.expected}

    def settings(self) -> Settings:
        flags: list[str] = []
        if self.target and self.target != "cpu":
            flags += ["--target", self.target]
        launch = self.entry.get("launch") or {}
        if launch.get("block"):
            flags += ["--block", ",".join(str(n) for n in launch["block"])]
        return settings_from_flags(flags)


def acceptance_cases(folder: str | os.PathLike) -> list[AcceptanceCase]:
    """Every (kernel, asserted target) of ``folder/manifest.json``, in the
    order the acceptance set's checker runs them."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for k in manifest["kernels"]:
        if k["language"] == "cuda":
            runs = list(k.get("ptx", {}).items())
        else:
            runs = [(t, k["file"]) for t in k.get("targets", [None])[:1]]
        for target, path in runs:
            if target in k.get("unasserted_targets", {}):
                continue
            out.append(AcceptanceCase(folder, k, target, folder / path))
    return out


def _family_kept(code: str | None, prefixes: Iterable[str] | None) -> bool:
    if not code or not code.startswith("TL") or code[2:3] in ("0", ""):
        return False
    prefixes = list(prefixes or [])
    return not prefixes or any(code.startswith(p) for p in prefixes)


@dataclass
class AcceptanceResult:
    case: AcceptanceCase
    want: set[tuple[str, int]]
    got: set[tuple[str, int]]
    facts: list[str]
    notes: list[str]  # TL0xx diagnostics on the kernel
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return self.got == self.want and not self.facts and not self.notes

    @property
    def missing(self) -> list[tuple[str, int]]:
        return sorted(self.want - self.got)

    @property
    def extra(self) -> list[tuple[str, int]]:
        return sorted(self.got - self.want)

    def mismatched_codes(self) -> set[str]:
        codes = {c for c, _ in self.missing} | {c for c, _ in self.extra}
        codes |= {f.split("@", 1)[0] for f in self.facts}
        return codes | set(self.notes)

    def report(self) -> str:
        c = self.case
        out = [f"{c.id}: kernel `{c.kernel}` differs from the manifest ({c.entry.get('why', '')})"]
        out += [f"  missing {code}@{line}" for code, line in self.missing]
        for code, line in self.extra:
            msgs = [d.message for d in self.diagnostics if d.code == code and _acc_line(d, c) == line]
            out.append(f"  extra   {code}@{line} {msgs[0] if msgs else ''}")
        out += [f"  {f}" for f in self.facts]
        if self.notes:
            for d in self.diagnostics:
                if d.code in self.notes:
                    out.append(f"  tool diagnostic {d.code} at {d.span}: {d.message}")
        return "\n".join(out)


def _acc_line(d: Diagnostic, case: AcceptanceCase) -> int | None:
    [p] = place([d], case.source, via_origin=case.is_cuda)
    return p.line


def acceptance_result(case: AcceptanceCase, codes: Iterable[str] | None = None) -> AcceptanceResult:
    """Lint one acceptance case and compare it with the manifest, as
    ``acceptance.py --codes`` does (``codes``: prefixes to compare; all by default)."""
    prefixes = list(codes or [])
    diags = [d for d in _lint(case.linted, case.settings()) if d.kernel in (None, case.kernel)]
    want = {(e["code"], e["line"]) for e in case.expected if _family_kept(e["code"], prefixes)}
    got = set()
    for d in diags:
        line = _acc_line(d, case)
        if line is not None and _family_kept(d.code, prefixes):
            got.add((d.code, line))
    notes = sorted({d.code for d in diags if d.code.startswith("TL0")})
    facts = []
    for e in case.expected:
        if not _family_kept(e["code"], prefixes):
            continue
        wanted = {}
        if isinstance(e.get("depth"), dict) and case.target in e["depth"]:
            wanted["depth"] = e["depth"][case.target]
        if "ways" in e:
            wanted["ways"] = e["ways"]
        for key, value in wanted.items():
            seen = {
                (d.data or {}).get(key)
                for d in diags
                if d.code == e["code"] and _acc_line(d, case) == e["line"]
            }
            if seen and seen != {value}:
                facts.append(f"{e['code']}@{e['line']} {key} {sorted(map(str, seen))} != {value}")
    return AcceptanceResult(case, want, got, facts, notes, diags)


def check_acceptance_case(case: AcceptanceCase, codes: Iterable[str] | None = None) -> AcceptanceResult:
    res = acceptance_result(case, codes)
    if not res.ok:
        raise AssertionError(res.report())
    return res
