"""Settings: what to check and how, from ``[tool.tolk-lint]`` and the command line.

`Settings` is the one resolved configuration every stage reads. It comes from
three layers, later ones winning (ruff's order):

1. the defaults (`DEFAULT_SETTINGS`: every rule, target from the file or sm_80);
2. the ``[tool.tolk-lint]`` table of the nearest ``pyproject.toml`` that holds
   one, searched from each linted file's folder upward (or the file
   ``--config`` names, for every file);
3. the command line (`Overrides`): ``--select`` replaces the configured
   selection outright (``--select TL101`` means exactly TL101), while
   ``--ignore`` and ``--extend-select`` add to it.

A bad key or value is a `ConfigError` naming the key and the file, never a
silent default: a typo in ``selct`` must not turn a check off unnoticed.

    [tool.tolk-lint]
    select = ["TL"]                      # codes or prefixes; "ALL" is everything
    ignore = ["TL203"]
    extend-select = []
    target = "sm_80"                     # Python kernels' target (PTX says its own)
    shared-budget = "static"             # or "optin": the opt-in dynamic maximum
    exclude = ["generated/", "*.tmp.ptx"]   # gitignore syntax, from this folder
    assume = ["n % 32 == 0"]
    [tool.tolk-lint.launch]
    sgemm_tiled16 = [16, 16, 1]          # a kernel's block shape
    [tool.tolk-lint.per-file-ignores]
    "tests/**" = ["TL2"]
"""

from __future__ import annotations

# hashlib, json, tomllib and difflib are imported where they are used: a run
# that reads no configuration file and keeps no cache needs none of them
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from tolk_lint.codes import unknown_selectors

TOOL_TABLE = "tolk-lint"
SELECTOR = re.compile(r"^(ALL|TL[0-9]{0,3})$")


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("TL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes)
    target: str | None = None  # overrides .target and the default (sm_80)
    block: tuple[int, int, int] | None = None  # --block: every kernel's launch shape
    launch: tuple[tuple[str, tuple[int, int, int]], ...] = ()  # per-kernel block shapes
    shared_budget: str = "static"  # "static" (48 KiB) or "optin"
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    assume: tuple[str, ...] = ()  # extra assumptions, in the kernel's language
    solver_rlimit: int = 10_000_000  # Z3's deterministic resource budget per query
    time_budget: float = 30.0  # seconds per file (tolk_lint.budget)
    kernel_time_budget: float | None = None  # seconds per kernel (None: the file's)
    memory_budget: int = 2048  # MiB of resident memory
    show_suppressed: bool = False
    unsafe_fixes: bool = False
    stage: bool = True  # the staging analysis (TL3xx) runs
    config_path: str | None = None  # the file these came from
    project_root: str | None = None  # folder of that file (SARIF %SRCROOT%, the cache)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def block_for(self, kernel_name: str) -> tuple[int, int, int] | None:
        if self.block is not None:
            return self.block
        for name, shape in self.launch:
            if name == kernel_name:
                return shape
        return None

    @property
    def effective_select(self) -> tuple[str, ...]:
        return tuple(self.select) + tuple(self.extend_select)

    @property
    def all_excludes(self) -> tuple[str, ...]:
        return tuple(self.exclude) + tuple(self.extend_exclude)

    def fingerprint(self) -> str:
        """A stable hash of everything that can change what a lint reports
        (the cache key's settings part). ``show_suppressed`` is left out:
        the cache keeps suppressed diagnostics either way, and the budgets
        only matter for results that ran out of them, which are not kept."""
        d = asdict(self)
        for name in ("show_suppressed", "time_budget", "kernel_time_budget", "memory_budget"):
            d.pop(name, None)  # a result that ran out of budget is never stored
        import hashlib
        import json

        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def to_toml(self) -> str:
        """The resolved configuration in the file's own syntax (``--show-settings``)."""
        out = [f"# config file: {self.config_path or '(none: defaults)'}",
               f"# project root: {self.project_root or '(none)'}"]  # fmt: skip
        for f in fields(self):
            if f.name in ("config_path", "project_root", "per_file_ignores", "launch"):
                continue
            value = getattr(self, f.name)
            key = f.name.replace("_", "-")
            out.append(f"# {key} is unset" if value is None else f"{key} = {_toml_value(value)}")
        out.append("[per-file-ignores]")
        out += [f"{_quoted(g)} = {_toml_value(codes)}" for g, codes in self.per_file_ignores]
        out.append("[launch]")
        out += [f"{_quoted(k)} = {_toml_value(shape)}" for k, shape in self.launch]
        return "\n".join(out) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, int):
        return str(v)
    return _quoted(str(v))


def _quoted(s: str) -> str:
    """``s`` as a quoted TOML (and JSON) string."""
    import json

    return json.dumps(s)


DEFAULT_SETTINGS = Settings()


@dataclass
class ConfigError(Exception):
    """A bad configuration value: names the key and the file."""

    message: str
    path: str | None = None
    key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        key = f"`{self.key}`: " if self.key else ""
        return f"{where}{key}{self.message}"


# ---------------------------------------------------------------- reading files


def _err(path: str | None, key: str, message: str) -> ConfigError:
    return ConfigError(
        message, path, f"tool.{TOOL_TABLE}.{key}" if path and path.endswith("pyproject.toml") else key
    )


def _str_list(value: Any, path: str | None, key: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _err(path, key, f"expected a list of strings, got {value!r}")
    return tuple(value)


def _selectors(value: Any, path: str | None, key: str) -> tuple[str, ...]:
    out = []
    for s in _str_list(value, path, key):
        s = s.strip().upper()
        if not SELECTOR.match(s):
            raise _err(path, key, f"`{s}` is not a rule code or prefix (expected e.g. TL101, TL1, TL or ALL)")
        out.append(s)
    unknown = unknown_selectors(out)
    if unknown:
        raise _err(path, key, f"`{unknown[0]}` names no rule (see `tolk-lint rules`)")
    return tuple(out)


def block_shape(value: Any, path: str | None, key: str) -> tuple[int, int, int]:
    """``[X]``, ``[X, Y]`` or ``[X, Y, Z]`` positive sizes of at most 1024 threads."""
    if isinstance(value, dict):
        if set(value) != {"block"}:
            raise _err(path, key, f"expected [X, Y, Z] or {{ block = [X, Y, Z] }}, got {value!r}")
        value = value["block"]
    ok = isinstance(value, list) and 1 <= len(value) <= 3
    ok = ok and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in value)
    if not ok:
        raise _err(path, key, f"expected a block shape [X, Y, Z] of positive integers, got {value!r}")
    dims = list(value) + [1] * (3 - len(value))
    if dims[0] * dims[1] * dims[2] > 1024:
        raise _err(
            path, key, f"a block holds at most 1024 threads; {value} holds {dims[0] * dims[1] * dims[2]}"
        )
    return (dims[0], dims[1], dims[2])


def _target(value: Any, path: str | None, key: str) -> str:
    from tolk_lint.target import parse_target

    if not isinstance(value, str):
        raise _err(path, key, f'expected a target name such as "sm_80", got {value!r}')
    try:
        return parse_target(value).name
    except ValueError as e:
        raise _err(path, key, str(e)) from None


def _bool(value: Any, path: str | None, key: str) -> bool:
    if not isinstance(value, bool):
        raise _err(path, key, f"expected true or false, got {value!r}")
    return value


def _choice(*choices: str):
    def parse(value: Any, path: str | None, key: str) -> str:
        if value not in choices:
            raise _err(path, key, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    return parse


def _positive_int(value: Any, path: str | None, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _err(path, key, f"expected a positive integer, got {value!r}")
    return value


def _positive_number(value: Any, path: str | None, key: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise _err(path, key, f"expected a positive number, got {value!r}")
    return float(value)


def _per_file_ignores(value: Any, path: str | None, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise _err(path, key, f"expected a table of glob = [codes], got {value!r}")
    return tuple((g, _selectors(codes, path, f"{key}.{_quoted(g)}")) for g, codes in value.items())


def _launch(value: Any, path: str | None, key: str) -> tuple[tuple[str, tuple[int, int, int]], ...]:
    if not isinstance(value, dict):
        raise _err(path, key, f"expected a table of kernel-name = [X, Y, Z], got {value!r}")
    return tuple((k, block_shape(v, path, f"{key}.{k}")) for k, v in value.items())


# key in the file -> (Settings field, parser)
KEYS: dict[str, tuple[str, Any]] = {
    "select": ("select", _selectors),
    "ignore": ("ignore", _selectors),
    "extend-select": ("extend_select", _selectors),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "target": ("target", _target),
    "shared-budget": ("shared_budget", _choice("static", "optin")),
    "launch": ("launch", _launch),
    "exclude": ("exclude", _str_list),
    "extend-exclude": ("extend_exclude", _str_list),
    "respect-gitignore": ("respect_gitignore", _bool),
    "assume": ("assume", _str_list),
    "solver-rlimit": ("solver_rlimit", _positive_int),
    "time-budget": ("time_budget", _positive_number),
    "kernel-time-budget": ("kernel_time_budget", _positive_number),
    "memory-budget": ("memory_budget", _positive_int),
    "unsafe-fixes": ("unsafe_fixes", _bool),
    "stage": ("stage", _bool),
}


def parse_table(table: dict[str, Any], path: str | None) -> dict[str, Any]:
    """Validate a ``[tool.tolk-lint]`` table; return `Settings` field values."""
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.{TOOL_TABLE}] must be a table", path)
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f"; did you mean `{near[0]}`?" if near else f" (known keys: {', '.join(sorted(KEYS))})"
            raise _err(path, key, f"unknown key{hint}")
        name, parser = KEYS[key]
        out[name] = parser(value, path, key)
    return out


def read_toml(path: str) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read the configuration: {e.strerror or e}", path) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path) from None


def tool_table(doc: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The ``[tool.tolk-lint]`` table; a file that is not a pyproject.toml may
    also hold the keys at its top level (``--config tolk-lint.toml``)."""
    tool = doc.get("tool")
    if isinstance(tool, dict) and TOOL_TABLE in tool:
        return tool[TOOL_TABLE]
    if os.path.basename(path) == "pyproject.toml":
        return None
    return doc


def load_config(path: str) -> Settings:
    """`Settings` from one file, with ``config_path`` and ``project_root`` set."""
    path = os.path.abspath(path)
    table = tool_table(read_toml(path), path)
    values = parse_table(table or {}, path)
    return DEFAULT_SETTINGS.with_(config_path=path, project_root=os.path.dirname(path), **values)


def find_config(start: str) -> str | None:
    """The nearest ``pyproject.toml`` holding ``[tool.tolk-lint]``, from the
    folder ``start`` (or a file's folder) upward."""
    d = os.path.abspath(start)
    if not os.path.isdir(d):
        d = os.path.dirname(d)
    while True:
        cand = os.path.join(d, "pyproject.toml")
        if os.path.isfile(cand) and _has_table(cand):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _has_table(path: str) -> bool:
    # A cheap text test first: most pyproject.toml files never mention us.
    try:
        with open(path, "rb") as f:
            if TOOL_TABLE.encode() not in f.read():
                return False
    except OSError:
        return False
    tool = read_toml(path).get("tool")
    return isinstance(tool, dict) and TOOL_TABLE in tool


# ---------------------------------------------------------------- command line


@dataclass(frozen=True)
class Overrides:
    """What the command line says; None means "not given"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] | None = None
    target: str | None = None
    block: tuple[int, int, int] | None = None
    show_suppressed: bool | None = None
    unsafe_fixes: bool | None = None
    config: str | None = None  # --config FILE, or an inline 'key = value'
    isolated: bool = False  # ignore every configuration file
    time_budget: float | None = None
    memory_budget: int | None = None

    def apply(self, base: Settings) -> Settings:
        changes: dict[str, Any] = {}
        if self.select is not None:
            # ruff: a command-line --select starts the selection afresh
            changes.update(select=self.select, ignore=tuple(self.ignore or ()),
                           extend_select=tuple(self.extend_select or ()))  # fmt: skip
        else:
            if self.ignore:
                changes["ignore"] = tuple(base.ignore) + self.ignore
            if self.extend_select:
                changes["extend_select"] = tuple(base.extend_select) + self.extend_select
        for name in ("target", "block", "show_suppressed", "unsafe_fixes", "time_budget", "memory_budget"):
            v = getattr(self, name)
            if v is not None:
                changes[name] = v
        return base.with_(**changes)


def _inline_config(text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(
            f"--config `{text}` is neither a file nor a valid `key = value` TOML line: {e}"
        ) from None


class SettingsResolver:
    """Settings per linted file: the nearest configuration under the command
    line. Cached per folder, so a walk over many files reads each
    ``pyproject.toml`` once."""

    def __init__(self, overrides: Overrides = Overrides()):
        self.overrides = overrides
        self._by_dir: dict[str, Settings] = {}
        self._by_config: dict[str | None, Settings] = {}
        self._fixed: Settings | None = None
        inline: dict[str, Any] = {}
        cfg = overrides.config
        if cfg is not None and not os.path.exists(cfg) and "=" in cfg:
            inline = parse_table(_inline_config(cfg), "--config")
            cfg = None
        self._inline = inline
        if cfg is not None:
            if not os.path.isfile(cfg):
                raise ConfigError("no such configuration file", cfg)
            self._fixed = self._finish(load_config(cfg))
        elif overrides.isolated:
            self._fixed = self._finish(DEFAULT_SETTINGS)

    def _finish(self, base: Settings) -> Settings:
        if self._inline:
            base = base.with_(**self._inline)
        return self.overrides.apply(base)

    def for_path(self, path: str) -> Settings:
        if self._fixed is not None:
            return self._fixed
        d = os.path.abspath(path)
        if not os.path.isdir(d):
            d = os.path.dirname(d)
        s = self._by_dir.get(d)
        if s is None:
            cfg = find_config(d)
            s = self._by_config.get(cfg)
            if s is None:
                s = self._finish(load_config(cfg) if cfg else DEFAULT_SETTINGS)
                self._by_config[cfg] = s
            self._by_dir[d] = s
        return s


def resolve_settings(
    select: tuple[str, ...] | None = None,
    ignore: tuple[str, ...] | None = None,
    target: str | None = None,
    block: tuple[int, int, int] | None = None,
    base: Settings | None = None,
    extend_select: tuple[str, ...] | None = None,
    **extra: Any,
) -> Settings:
    """The settings for a run: command-line values over ``base`` (the
    defaults unless given). Other keyword arguments set `Settings` fields
    directly when not None."""
    s = Overrides(select=tuple(select) if select else None, ignore=tuple(ignore) if ignore else None,
                  extend_select=tuple(extend_select) if extend_select else None,
                  target=target, block=block).apply(base or DEFAULT_SETTINGS)  # fmt: skip
    changes = {k: v for k, v in extra.items() if v is not None}
    return s.with_(**changes) if changes else s


def settings_for_file(path: str, overrides: Overrides = Overrides()) -> Settings:
    """One file's settings (the language server's entry point)."""
    return SettingsResolver(overrides).for_path(path)
