"""`[tool.tolk-lint]`: discovery, validation, precedence, and `--show-settings`."""

from __future__ import annotations

import os
import textwrap

import pytest
from click.testing import CliRunner

from tolk_lint.cli import main
from tolk_lint.config import (
    DEFAULT_SETTINGS,
    ConfigError,
    Overrides,
    SettingsResolver,
    find_config,
    load_config,
    resolve_settings,
)


def write(path, text: str) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return str(path)


FULL = """
    [project]
    name = "kernels"

    [tool.tolk-lint]
    select = ["TL1", "tl2"]
    ignore = ["TL203"]
    extend-select = ["TL003"]
    target = "sm_90"
    shared-budget = "optin"
    exclude = ["generated/"]
    extend-exclude = ["*.tmp.ptx"]
    assume = ["n % 32 == 0"]
    respect-gitignore = false

    [tool.tolk-lint.launch]
    sgemm = [16, 16]
    reduce = { block = [256, 1, 1] }

    [tool.tolk-lint.per-file-ignores]
    "tests/**" = ["TL2"]
"""


def test_every_key_is_read(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", FULL)
    s = load_config(cfg)
    assert s.select == ("TL1", "TL2")  # upper-cased
    assert s.ignore == ("TL203",)
    assert s.extend_select == ("TL003",)
    assert s.effective_select == ("TL1", "TL2", "TL003")
    assert s.target == "sm_90"
    assert s.shared_budget == "optin"
    assert s.exclude == ("generated/",) and s.extend_exclude == ("*.tmp.ptx",)
    assert s.assume == ("n % 32 == 0",)
    assert s.respect_gitignore is False
    assert s.block_for("sgemm") == (16, 16, 1)
    assert s.block_for("reduce") == (256, 1, 1)
    assert s.block_for("other") is None
    assert s.per_file_ignores == (("tests/**", ("TL2",)),)
    assert s.config_path == os.path.abspath(cfg)
    assert s.project_root == str(tmp_path)


def test_nearest_pyproject_with_the_table_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.tolk-lint]\ntarget = "sm_75"\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "x"\n')  # no table: not a config
    write(tmp_path / "sub" / "deep" / "pyproject.toml", '[tool.tolk-lint]\ntarget = "sm_90"\n')
    os.makedirs(tmp_path / "sub" / "deep" / "k")
    assert find_config(str(tmp_path / "sub" / "x.py")) == str(tmp_path / "pyproject.toml")
    assert find_config(str(tmp_path / "sub" / "deep" / "k" / "x.ptx")) == str(
        tmp_path / "sub" / "deep" / "pyproject.toml"
    )
    r = SettingsResolver()
    assert r.for_path(str(tmp_path / "sub" / "a.py")).target == "sm_75"
    assert r.for_path(str(tmp_path / "sub" / "deep" / "k" / "b.py")).target == "sm_90"


def test_no_configuration_gives_the_defaults(tmp_path):
    s = SettingsResolver().for_path(str(tmp_path / "a.py"))
    # tmp_path has no pyproject.toml; unless a parent has a tolk-lint table, defaults apply
    if find_config(str(tmp_path)) is None:
        assert s == DEFAULT_SETTINGS


@pytest.mark.parametrize(
    "body, key, words",
    [
        ('selct = ["TL1"]', "selct", "did you mean `select`"),
        ('select = "TL1"', "select", "list of strings"),
        ('select = ["E501"]', "select", "not a rule code"),
        ('ignore = ["TLX"]', "ignore", "not a rule code"),
        ('target = "sm_9000x"', "target", ""),
        ('shared-budget = "huge"', "shared-budget", "'static', 'optin'"),
        ("launch = { k = [0, 1, 1] }", "launch.k", "positive"),
        ("launch = { k = [64, 32, 1] }", "launch.k", "at most 1024 threads"),
        ("launch = { k = [1, 2, 3, 4] }", "launch.k", "block shape"),
        ('exclude = "gen"', "exclude", "list of strings"),
        ('per-file-ignores = { "a.py" = ["nope"] }', 'per-file-ignores."a.py"', "not a rule code"),
        ("respect-gitignore = 1", "respect-gitignore", "true or false"),
    ],
)
def test_bad_values_name_the_key_and_the_file(tmp_path, body, key, words):
    cfg = write(tmp_path / "pyproject.toml", f"[tool.tolk-lint]\n{body}\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    msg = str(e.value)
    assert cfg in msg
    assert f"tool.tolk-lint.{key}" in msg
    assert words in msg


def test_invalid_toml_names_the_file(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", "[tool.tolk-lint\nselect = [\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    assert cfg in str(e.value) and "invalid TOML" in str(e.value)


def test_command_line_select_replaces_ignore_and_extend_select_add(tmp_path):
    base = load_config(
        write(tmp_path / "pyproject.toml", '[tool.tolk-lint]\nselect=["TL1"]\nignore=["TL103"]\n')
    )
    # --select starts afresh: exactly what was asked, the file's ignore gone (ruff)
    s = Overrides(select=("TL101",)).apply(base)
    assert s.select == ("TL101",) and s.ignore == ()
    s = Overrides(ignore=("TL102",), extend_select=("TL2",)).apply(base)
    assert s.select == ("TL1",) and s.ignore == ("TL103", "TL102") and s.extend_select == ("TL2",)
    s = Overrides(target="sm_75", block=(32, 1, 1)).apply(base)
    assert s.target == "sm_75" and s.block_for("anything") == (32, 1, 1)


def test_config_flag_overrides_discovery(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.tolk-lint]\ntarget = "sm_75"\n')
    other = write(tmp_path / "ci" / "tolk-lint.toml", 'target = "sm_90"\n')  # top-level keys
    r = SettingsResolver(Overrides(config=other))
    assert r.for_path(str(tmp_path / "a.py")).target == "sm_90"
    inline = SettingsResolver(Overrides(config='target = "sm_86"'))
    assert inline.for_path(str(tmp_path / "a.py")).target == "sm_86"
    with pytest.raises(ConfigError):
        SettingsResolver(Overrides(config=str(tmp_path / "missing.toml")))


def test_fingerprint_follows_what_changes_results():
    a = resolve_settings()
    assert a.fingerprint() == resolve_settings().fingerprint()
    assert a.fingerprint() != resolve_settings(select=("TL1",)).fingerprint()
    assert a.fingerprint() != resolve_settings(target="sm_90").fingerprint()
    # showing suppressed diagnostics does not change what is computed
    assert a.fingerprint() == a.with_(show_suppressed=True).fingerprint()


def test_show_settings_prints_the_resolved_configuration(tmp_path):
    write(tmp_path / "pyproject.toml", FULL)
    write(tmp_path / "k.py", "x = 1\n")
    res = CliRunner().invoke(main, ["check", "--show-settings", "--ignore", "TL101", str(tmp_path / "k.py")])
    assert res.exit_code == 0, res.output
    out = res.output
    assert f"# config file: {tmp_path / 'pyproject.toml'}" in out
    assert 'select = ["TL1", "TL2"]' in out
    assert 'ignore = ["TL203", "TL101"]' in out  # the command line adds to the file
    assert 'target = "sm_90"' in out
    assert 'shared-budget = "optin"' in out
    assert '"sgemm" = [16, 16, 1]' in out
    assert '"tests/**" = ["TL2"]' in out


def test_bad_configuration_exits_2_with_a_clear_error(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.tolk-lint]\nselect = ["TL1"]\nfrobnicate = true\n')
    write(tmp_path / "k.py", "x = 1\n")
    res = CliRunner().invoke(main, ["check", str(tmp_path / "k.py")])
    assert res.exit_code == 2
    assert "tolk-lint: error:" in res.output
    assert "frobnicate" in res.output and str(tmp_path / "pyproject.toml") in res.output
