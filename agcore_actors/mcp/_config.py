"""Server configuration in the ``mcpServers`` format of Claude Desktop and
other MCP clients::

    {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                 "env": {"TZ": "UTC"}},
        "remote": {"url": "http://127.0.0.1:8000/mcp",
                   "headers": {"Authorization": "Bearer ..."}}}}

A server has either ``command`` (stdio) or ``url`` (streamable HTTP). Their reprs
show the names of ``env`` and ``headers`` but not the values, which are secrets.
Unknown keys (``type``, ``disabled``, ...) are accepted; ``disabled: true``
servers are skipped. Bad input raises :class:`McpConfigError` naming the
server and the field.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Any

import msgspec

from ._errors import McpConfigError

#: Variables a stdio server inherits from our environment unless configured
#: otherwise (the official SDK's POSIX default): secrets stay with us.
DEFAULT_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


class StdioServer(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A server run as a child process speaking JSON-RPC on its stdin and stdout."""

    command: str
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    #: Extra variable names passed through from our environment.
    inherit_env: list[str] = []

    def __repr__(self) -> str:  # env values are secrets: show the names only
        return (
            f"StdioServer(command={self.command!r}, args={self.args!r}, env={_names(self.env)}, "
            f"cwd={self.cwd!r}, inherit_env={self.inherit_env!r})"
        )


class HttpServer(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A server reached over streamable HTTP at ``url``, with ``headers`` on every request."""

    url: str
    headers: dict[str, str] = {}

    def __repr__(self) -> str:  # header values and a URL password are secrets
        url = urllib.parse.urlsplit(self.url)
        if url.password is not None:
            netloc = f"{url.username or ''}:{_HIDDEN}@{url.hostname or ''}"
            netloc += f":{url.port}" if url.port is not None else ""
            url = url._replace(netloc=netloc)
        return f"HttpServer(url={url.geturl()!r}, headers={_names(self.headers)})"


_HIDDEN = "[redacted]"


def _names(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{name!r}: {_HIDDEN!r}" for name in values) + "}"


ServerConfig = StdioServer | HttpServer


def server_from_dict(name: str, raw: Any) -> ServerConfig:
    """One ``mcpServers`` entry; raise :class:`McpConfigError` naming it."""
    if not isinstance(raw, dict):
        raise McpConfigError(f"mcpServers.{name}: expected an object, got {type(raw).__name__}")
    has_cmd, has_url = "command" in raw, "url" in raw
    if has_cmd == has_url:
        raise McpConfigError(f"mcpServers.{name}: needs exactly one of 'command' or 'url'")
    kind: type[ServerConfig] = StdioServer if has_cmd else HttpServer
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise McpConfigError(f"mcpServers.{name}: {exc}") from None


def parse_config(data: Any) -> dict[str, ServerConfig]:
    """The servers of an ``{"mcpServers": {...}}`` object (or of the inner object)."""
    if isinstance(data, dict) and "mcpServers" in data:
        data = data["mcpServers"]
    if not isinstance(data, dict):
        raise McpConfigError("expected an object with a 'mcpServers' object")
    servers: dict[str, ServerConfig] = {}
    for name, raw in data.items():
        if not isinstance(name, str) or not name:
            raise McpConfigError(f"server names must be non-empty strings, not {name!r}")
        if isinstance(raw, dict) and raw.get("disabled") is True:
            continue
        servers[name] = server_from_dict(name, raw)
    return servers


def load_config(path: str | os.PathLike[str]) -> dict[str, ServerConfig]:
    """The servers of a JSON file (see :func:`parse_config`); raise :class:`McpConfigError`."""
    try:
        text = Path(path).read_bytes()
        data = msgspec.json.decode(text)
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror}") from None
    except msgspec.DecodeError as exc:
        raise McpConfigError(f"{path}: not valid JSON: {exc}") from None
    return parse_config(data)


def child_environment(config: StdioServer, parent: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a stdio server: the allow-listed variables of
    ``parent`` (default: ours), then ``inherit_env``, then ``env``."""
    parent = dict(os.environ) if parent is None else parent
    env = {}
    for key in (*DEFAULT_INHERITED_ENV, *config.inherit_env):
        value = parent.get(key)
        if value is not None and not value.startswith("()"):  # skip shell functions
            env[key] = value
    env.update(config.env)
    return env
