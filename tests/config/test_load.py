"""Which file is read (``--config``, ``./agcore.toml``, the user's ``config.toml``, none),
how it is read (size, encoding, relative paths), and that secrets stay out of reprs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agcore_actors.config import (
    ConfigError,
    LocalProviderSettings,
    find_config,
    load_settings,
)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A working directory and an XDG config home, both empty."""
    cwd, xdg = tmp_path / "cwd", tmp_path / "xdg"
    cwd.mkdir()
    (xdg / "agcore-actors").mkdir(parents=True)
    return cwd, xdg, {"XDG_CONFIG_HOME": str(xdg)}


def test_lookup_prefers_the_explicit_path_then_cwd_then_xdg_then_none(
    places: tuple[Path, Path, dict[str, str]],
) -> None:
    cwd, xdg, env = places
    assert find_config(cwd=cwd, env=env) is None
    user = xdg / "agcore-actors" / "config.toml"
    user.write_text("[host]\nmax_sessions = 1\n")
    assert find_config(cwd=cwd, env=env) == user
    local = cwd / "agcore.toml"
    local.write_text("[host]\nmax_sessions = 2\n")
    assert find_config(cwd=cwd, env=env) == local
    assert find_config("other.toml", cwd=cwd, env=env) == Path("other.toml")
    assert load_settings(cwd=cwd, env=env).host.max_sessions == 2
    local.unlink()
    assert load_settings(cwd=cwd, env=env).host.max_sessions == 1


def test_without_xdg_config_home_the_users_config_is_under_home(tmp_path: Path) -> None:
    user = tmp_path / ".config" / "agcore-actors" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("")
    assert find_config(cwd=tmp_path / "nowhere", env={"HOME": str(tmp_path)}) == user


def test_no_file_means_defaults_and_environment(places: tuple[Path, Path, dict[str, str]]) -> None:
    cwd, _, env = places
    settings = load_settings(cwd=cwd, env=env)
    assert settings.source is None
    assert isinstance(settings.providers["local"], LocalProviderSettings)


def test_a_missing_explicit_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path / "nope.toml", env={})
    assert str(info.value) == f"{tmp_path / 'nope.toml'}: cannot read: No such file or directory"


def test_a_file_that_is_not_utf8_or_too_large_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a = '\xff'")
    with pytest.raises(ConfigError, match=r"bad\.toml: expected UTF-8 text, byte 5 is not"):
        load_settings(bad, env={})
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (1 << 20) + b"\n")
    with pytest.raises(ConfigError, match=r"big\.toml: expected at most 1048576 bytes"):
        load_settings(big, env={})


def test_relative_paths_are_taken_from_the_files_directory(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "bot.toml"
    config.parent.mkdir()
    config.write_text(
        '[store]\npath = "data/s.db"\n'
        '[providers.l]\nkind = "local"\ngguf = "m.gguf"\ncache_dir = "/abs/cache"\n'
    )
    settings = load_settings(config, env={})
    assert settings.store.path == str(tmp_path / "etc" / "data" / "s.db")
    local = settings.providers["l"]
    assert isinstance(local, LocalProviderSettings)
    assert local.gguf == str(tmp_path / "etc" / "m.gguf") and local.cache_dir == "/abs/cache"
    assert settings.source == str(config)


def test_a_home_relative_store_path_is_expanded(tmp_path: Path) -> None:
    config = tmp_path / "a.toml"
    config.write_text('[store]\npath = "~/s.db"\n')
    assert load_settings(config, env={}).store.path == os.path.expanduser("~/s.db")


def test_secrets_never_appear_in_reprs(tmp_path: Path) -> None:
    config = tmp_path / "a.toml"
    config.write_text(
        '[providers.p]\nkind = "openai"\napi_key = "sk-SECRET1"\n'
        'headers = { Authorization = "Bearer SECRET2" }\n'
        '[providers.c]\nkind = "anthropic"\napi_key_env = "CLAUDE_KEY"\n'
        '[mcpServers.fs]\ncommand = "srv"\nenv = { TOKEN = "SECRET3" }\n'
        '[mcpServers.web]\nurl = "http://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer SECRET4" }\n'
    )
    settings = load_settings(config, env={"CLAUDE_KEY": "SECRET5"})
    shown = repr(settings) + str(settings)
    assert "SECRET" not in shown
    assert "TOKEN" not in shown  # not even the names of an MCP server's variables
    assert settings.providers["c"].kind == "anthropic"
