"""Finding, reading and checking the configuration: :func:`load_settings`.

Lookup (:func:`find_config`): the path given, else ``./agcore.toml``, else
``$XDG_CONFIG_HOME/agcore-actors/config.toml`` (``~/.config`` when unset), else no file.
Then the environment is applied over the file (see :mod:`._env`), the result structured
into :class:`Settings`, names checked across tables, and the gaps filled: no provider at
all means the embedded local model (``providers.local``), no agent means one called
``assistant``. Relative paths (``store.path``, a local provider's ``gguf``,
``chat_template`` and ``cache_dir``) are taken from the config file's directory.
A key that was renamed (:data:`OLD_KEYS`: ``[host] max_live``, now ``max_sessions`` in
the file and in :class:`~agcore_actors.agent.HostConfig` alike) is an error that names
the new key.

Every failure is one :class:`ConfigError`; nothing else escapes, whatever the file holds.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any

import attrs

from ._convert import structure_settings
from ._env import apply_env
from ._errors import ConfigError
from ._problems import Path, describe, format_path
from ._schema import LocalProviderSettings, OpenAIProviderSettings, Settings

__all__ = [
    "LOCAL_NAME",
    "MAX_FILE_BYTES",
    "OLD_KEYS",
    "find_config",
    "load_settings",
    "parse_settings",
]

#: The name of the embedded model's provider when none is configured.
LOCAL_NAME = "local"
#: The largest configuration file read.
MAX_FILE_BYTES = 1 << 20
_FILE_NAME = "agcore.toml"
#: (table, an old key) → its new name: one name per setting, in the file and the library.
OLD_KEYS: dict[tuple[str, str], str] = {("host", "max_live"): "max_sessions"}


def find_config(
    explicit: str | os.PathLike[str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> FilePath | None:
    """The configuration file to read, or None (defaults and environment only).

    ``explicit`` is returned as it is (reading it reports a missing file).
    """
    if explicit is not None:
        return FilePath(explicit)
    env = os.environ if env is None else env
    local = FilePath(cwd or ".") / _FILE_NAME
    if local.is_file():
        return FilePath(_FILE_NAME) if cwd is None else local
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or "~", ".config")
    user = FilePath(xdg).expanduser() / "agcore-actors" / "config.toml"
    return user if user.is_file() else None


def load_settings(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Settings:
    """The settings of the file :func:`find_config` picks, under ``env`` (default: ours).

    Raises :class:`ConfigError` (one line: file, key path, what was expected).
    """
    env = os.environ if env is None else env
    file = find_config(path, cwd=cwd, env=env)
    if file is None:
        return parse_settings("", source=None, env=env)
    try:
        with open(file, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(str(file), "", f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(str(file), "", f"expected at most {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(str(file), "", f"expected UTF-8 text, byte {exc.start} is not") from None
    return parse_settings(text, source=str(file), env=env)


def parse_settings(
    text: str, *, source: str | None = "agcore.toml", env: Mapping[str, str] | None = None
) -> Settings:
    """The settings of TOML ``text`` (from ``source``, None: no file) under ``env``
    (default: none). Raises :class:`ConfigError`."""
    label = source or "<defaults>"
    try:
        data: dict[str, Any] = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(label, "", f"invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(label, "", "invalid TOML: nested too deeply") from None
    _refuse_renamed(data, label)
    in_file = _paths(data)
    origin = apply_env(data, {} if env is None else env)

    def source_of(path: Path) -> str:
        for length in range(len(path), 0, -1):
            if path[:length] in origin:
                return origin[path[:length]]
        below = [var for where, var in origin.items() if where[: len(path)] == path]
        return below[0] if below and path not in in_file else label

    try:
        settings = structure_settings(data, source_of)
    except RecursionError:
        raise ConfigError(label, "", "nested too deeply") from None
    settings = _complete(settings, source, env or {}, source_of)
    return attrs.evolve(settings, source=source)


def _refuse_renamed(data: dict[str, Any], label: str) -> None:
    """Refuse each :data:`OLD_KEYS` key of ``data``, naming the key to write instead."""
    for (table, old), name in OLD_KEYS.items():
        section = data.get(table)
        if isinstance(section, dict) and old in section:
            raise ConfigError(label, format_path((table, old)), f"renamed; write {name}")


def _paths(data: object, prefix: Path = ()) -> set[Path]:
    """The paths of every table and key in ``data`` (a TOML document)."""
    found: set[Path] = {prefix}
    stack: list[tuple[Path, object]] = [(prefix, data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                found.add((*path, key))
                stack.append(((*path, key), value))
    return found


def _check_name(name: str, names: list[str], path: Path, source_of: Any, what: str) -> None:
    if name in names:
        return
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]}?)" if near else ""
    choices = ", ".join(names) if names else "none is configured"
    raise ConfigError(
        source_of(path),
        format_path(path),
        f"expected a configured {what} ({choices}), got {describe(name)}{hint}",
    )


def _complete(
    settings: Settings, source: str | None, env: Mapping[str, str], source_of: Any
) -> Settings:
    for table in ("providers", "agents", "mcp_servers"):
        for name in getattr(settings, table):
            if not name.strip() or not name.isprintable():
                key = "mcpServers" if table == "mcp_servers" else table
                raise ConfigError(
                    source_of((key, name)),
                    format_path((key, name)),
                    "expected a name of printable characters, not blank",
                )
    providers = dict(settings.providers) or {LOCAL_NAME: LocalProviderSettings()}
    agents = dict(settings.agents)
    base = FilePath(source).parent if source else FilePath(".")
    for name, provider in providers.items():
        variable = None if isinstance(provider, LocalProviderSettings) else provider.api_key_env
        if variable and not isinstance(provider, LocalProviderSettings):
            path: Path = ("providers", name, "api_key_env")
            secret = env.get(variable)
            if not secret:
                raise ConfigError(
                    source_of(path),
                    format_path(path),
                    f"expected a set environment variable, got {describe(variable)}",
                )
            try:
                provider = attrs.evolve(provider, api_key=secret)
            except ValueError:
                raise ConfigError(
                    variable,
                    format_path(("providers", name, "api_key")),
                    "expected printable ASCII without whitespace, got str (value hidden)",
                ) from None
        if isinstance(provider, LocalProviderSettings):
            provider = attrs.evolve(
                provider,
                gguf=_under(base, provider.gguf),
                chat_template=_under(base, provider.chat_template),
                cache_dir=_under(base, provider.cache_dir),
            )
        providers[name] = provider
    if not agents:
        from ._schema import AgentSettings

        agents = {"assistant": AgentSettings()}
    names, agent_names = list(providers), list(agents)
    default_provider = settings.default_provider or names[0]
    _check_name(default_provider, names, ("default_provider",), source_of, "provider")
    default_agent = settings.default_agent or agent_names[0]
    _check_name(default_agent, agent_names, ("default_agent",), source_of, "agent")
    servers = list(settings.mcp_servers)
    for name, agent in agents.items():
        if agent.provider is not None:
            _check_name(agent.provider, names, ("agents", name, "provider"), source_of, "provider")
        for index, entry in enumerate(agent.fallback):
            path = ("agents", name, "fallback", index)
            _check_name(entry.partition("/")[0], names, path, source_of, "provider")
            _needs_key(providers, entry.partition("/")[0], source_of)
        for index, server in enumerate(agent.mcp_servers):
            path = ("agents", name, "mcp_servers", index)
            _check_name(server, servers, path, source_of, "MCP server")
        for index, other in enumerate(agent.subagents):
            path = ("agents", name, "subagents", index)
            _check_name(other, [a for a in agent_names if a != name], path, source_of, "agent")
        _needs_key(providers, agent.provider or default_provider, source_of)
    store = settings.store
    if store.path is not None and store.url is not None:
        path = ("store", "url")
        raise ConfigError(
            source_of(path),
            format_path(path),
            "expected either [store] path (SQLite) or url (PostgreSQL), not both",
        )
    if store.path is not None:
        store = attrs.evolve(store, path=_under(base, store.path))
    return attrs.evolve(
        settings,
        providers=providers,
        agents=agents,
        default_provider=default_provider,
        default_agent=default_agent,
        store=store,
    )


def _needs_key(providers: Mapping[str, Any], name: str, source_of: Any) -> None:
    """OpenAI's own API without a key would fail every call: say so now."""
    provider = providers[name]
    if (
        isinstance(provider, OpenAIProviderSettings)
        and not provider.api_key
        and provider.base_url.rstrip("/") == OpenAIProviderSettings().base_url
    ):
        path: Path = ("providers", name, "api_key")
        raise ConfigError(
            source_of(path),
            format_path(path),
            "expected a key for OpenAI's API (set OPENAI_API_KEY, api_key_env or base_url)",
        )


def _under(base: FilePath, value: str | None) -> str | None:
    if value is None or value == ":memory:":
        return value
    path = FilePath(value).expanduser()
    return str(path if path.is_absolute() else base / path)
