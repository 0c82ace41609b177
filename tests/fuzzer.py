"""A seeded fuzzer for the whole lint pipeline: real kernels, mutated.

Each case takes one seed file (the fixture kernels of both languages and
``fixtures/corpus``: hand PTX, nvcc output, Numba), applies one to three
mutations -- delete, duplicate or swap lines, change a label, a number or a
register name, truncate, flip a byte -- and lints the result in this process
through `tolk_lint.engine.lint_text`, under a small time budget. A case is
fully determined by ``(seed, index)``: any case can be replayed alone
(`make_case`), and a long run split into ranges and resumed
(``bench/fuzz.py``).

What a case may do: parse or not (TL001), report anything, run out of its
budget (TL005). What it must never do: raise, report TL004 (an internal
error), or run past its budget (`outcome` says "hang" when the lint took
longer than ``budget + HANG_SLACK`` seconds; a lint that never returns is
interrupted by an alarm and reported the same way).

Used by ``tests/test_fuzz.py`` (1,000 cases in CI) and
``bench/fuzz.py`` (any number, in parallel processes).
"""

from __future__ import annotations

import contextlib
import random
import re
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED_FOLDERS = ("fixtures/ptx", "fixtures/numba", "fixtures/analysis", "fixtures/corpus", "tests/ptx_samples")
# A lint that takes this much longer than its budget is a hang.
HANG_SLACK = 4.0


@dataclass(frozen=True)
class Seed:
    path: str  # relative to the repository, with its suffix (the language)
    text: str
    flags: tuple[str, ...]  # the fixture's `flags:` line (--block, --target): the analysis it is meant for


def seed_files(extra: tuple[Path, ...] = ()) -> list[Seed]:
    """Every seed, sorted by path (so a case index means the same file on
    every machine)."""
    from tolk_lint.testing import parse_expectations

    paths = sorted(p for folder in SEED_FOLDERS for p in (REPO / folder).rglob("*")
                   if p.suffix in (".ptx", ".py") and p.is_file() and "__pycache__" not in p.parts)  # fmt: skip
    out = []
    for p in [*paths, *extra]:
        text = p.read_text(encoding="utf-8")
        lang = "ptx" if p.suffix == ".ptx" else "python"
        try:
            flags = tuple(parse_expectations(text, lang).flags)
        except ValueError:
            flags = ()
        name = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else p.name
        out.append(Seed(name, text, flags))
    return out


# -- mutations ------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.$%])-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)U?(?![\w.])")
_PTX_LABEL = re.compile(r"\$[\w$]+")
_PTX_REGISTER = re.compile(r"%[a-z]+\d+")
_PY_NAME = re.compile(r"\b[a-z_][a-z0-9_]*\b")
INTERESTING_NUMBERS = ("0", "1", "-1", "2", "31", "32", "33", "255", "256", "1024", "4096", "65536", "017",
                       "0x40", "0b101", "7U", "2147483647", "-2147483648", "4294967295", "0xFFFFFFFF",
                       "9223372036854775807", "-9223372036854775808", "0xFFFFFFFFFFFFFFFF",
                       "18446744073709551616", "1000000000000")  # fmt: skip


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def delete_line(text: str, r: random.Random) -> str:
    lines = _lines(text)
    del lines[r.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(text: str, r: random.Random) -> str:
    lines = _lines(text)
    i = r.randrange(len(lines))
    lines.insert(i, lines[i])
    return "".join(lines)


def swap_lines(text: str, r: random.Random) -> str:
    lines = _lines(text)
    i = r.randrange(len(lines))
    j = min(len(lines) - 1, i + 1) if r.random() < 0.6 else r.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def _replace_one(text: str, pattern: re.Pattern[str], r: random.Random, choose) -> str:
    found = list(pattern.finditer(text))
    if not found:
        return text
    m = r.choice(found)
    return text[: m.start()] + choose(m.group(0), [f.group(0) for f in found]) + text[m.end() :]


def change_number(text: str, r: random.Random) -> str:
    def choose(old: str, _all: list[str]) -> str:
        if r.random() < 0.7:
            return r.choice(INTERESTING_NUMBERS)
        return str(r.randrange(-(1 << 40), 1 << 40))

    return _replace_one(text, _NUMBER, r, choose)


def change_label(text: str, r: random.Random) -> str:
    """Another label (PTX), or another name of the file (Python)."""
    pattern = _PTX_LABEL if "$" in text and ".entry" in text else _PY_NAME
    return _replace_one(text, pattern, r, lambda old, every: r.choice(every))


def rename_register(text: str, r: random.Random) -> str:
    """One use of a register (PTX) or a name (Python) becomes another, or a fresh one."""
    pattern = _PTX_REGISTER if ".entry" in text else _PY_NAME

    def choose(old: str, every: list[str]) -> str:
        if r.random() < 0.8:
            return r.choice(every)
        return old + str(r.randrange(100))

    return _replace_one(text, pattern, r, choose)


def truncate(text: str, r: random.Random) -> str:
    return text[: r.randrange(len(text) + 1)]


def flip_byte(text: str, r: random.Random) -> bytes:
    data = bytearray(text.encode("utf-8"))
    if data:
        i = r.randrange(len(data))
        data[i] = r.choice((data[i] ^ (1 << r.randrange(8)), r.randrange(256), ord(r.choice("{}();,.%$[]@!\n"))))
    return bytes(data)


MUTATIONS = {
    "delete": delete_line,
    "duplicate": duplicate_line,
    "swap": swap_lines,
    "label": change_label,
    "number": change_number,
    "register": rename_register,
    "truncate": truncate,
    "flip": flip_byte,
}
_WEIGHTS = {"delete": 3, "duplicate": 2, "swap": 3, "label": 2, "number": 3, "register": 2, "truncate": 1, "flip": 1}


@dataclass
class Case:
    index: int
    seed: Seed
    mutations: list[str]
    data: bytes


def make_case(seeds: list[Seed], seed: int, index: int) -> Case:
    """Case ``index`` of the run seeded ``seed``: its own random stream, so
    it does not depend on the cases before it."""
    r = random.Random(f"{seed}:{index}")
    s = r.choice(seeds)
    text: str | bytes = s.text
    applied = []
    for _ in range(r.choice((1, 1, 1, 2, 2, 3))):
        name = r.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()))[0]
        if isinstance(text, bytes):  # a flipped byte came first: go on with what decodes of it
            text = text.decode("utf-8", "replace")
        text = MUTATIONS[name](text, r)
        applied.append(name)
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    return Case(index, s, applied, data)


# -- running --------------------------------------------------------------------------


class Hang(BaseException):
    """The alarm: a lint ran far past its budget without returning."""


@contextlib.contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Interrupt the block with `Hang` after ``seconds`` (main thread, Unix)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum, frame):
        raise Hang(f"no answer after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    case: Case
    kind: str  # "ok", "exception", "hang"
    codes: frozenset[str]
    seconds: float
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.kind != "ok" or "TL004" in self.codes

    def describe(self) -> str:
        c = self.case
        what = self.detail or ", ".join(sorted(self.codes))
        return f"case {c.index}: {c.seed.path} {'+'.join(c.mutations)}: {self.kind} {what} ({self.seconds:.1f} s)"


def lint_case(data: bytes, path: str, flags: tuple[str, ...], budget: float):
    """What the command line does with a file's bytes (decode, then lint),
    in this process, under a time budget of ``budget`` seconds."""
    from tolk_lint.engine import LintResult, decode, lint_text
    from tolk_lint.testing import settings_from_flags

    try:
        settings = settings_from_flags(list(flags))
    except ValueError:
        from tolk_lint.config import DEFAULT_SETTINGS as settings
    settings = settings.with_(time_budget=budget)
    text, err = decode(data, path)
    if err is not None:
        return LintResult(path, None, [err])
    return lint_text(text, path, settings)


def outcome(case: Case, budget: float = 1.0) -> Outcome:
    start = time.monotonic()
    try:
        with alarm(budget + HANG_SLACK + 30):
            result = lint_case(case.data, case.seed.path, case.seed.flags, budget)
    except Hang as e:
        return Outcome(case, "hang", frozenset(), time.monotonic() - start, str(e))
    except BaseException as e:  # noqa: BLE001 - what the fuzzer looks for
        if isinstance(e, KeyboardInterrupt):
            raise
        tb = traceback.format_exc(limit=-3).strip().splitlines()
        return Outcome(case, "exception", frozenset(), time.monotonic() - start,
                       f"{type(e).__name__}: {e} | {' / '.join(tb[-4:])}")  # fmt: skip
    seconds = time.monotonic() - start
    codes = frozenset(d.code for d in result.diagnostics)
    if seconds > budget + HANG_SLACK:
        return Outcome(case, "hang", codes, seconds, f"{seconds:.1f} s on a {budget:g} s budget")
    detail = next((d.message for d in result.diagnostics if d.code == "TL004"), "")
    return Outcome(case, "ok", codes, seconds, detail)
