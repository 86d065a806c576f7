"""Server configuration in the ``mcpServers`` format of Claude Desktop and
other MCP clients::

    {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                 "env": {"TZ": "UTC"}},
        "remote": {"url": "http://127.0.0.1:8000/mcp",
                   "headers": {"Authorization": "Bearer ..."}}}}

A server has either ``command`` (stdio) or ``url`` (streamable HTTP). Their reprs
show the names of ``env`` and ``headers`` but not the values, which are secrets.
Unknown keys (``disabled``, ...) are accepted; ``disabled: true`` servers are skipped.
``type`` may be ``stdio``, ``http``, ``streamable-http`` or ``sse`` (the legacy
HTTP+SSE transport of protocol 2024-11-05: ``url`` is the server's SSE endpoint).
VS Code's shape, ``{"servers": {...}}``, is read too.

Every string value may hold ``${VAR}`` or ``${env:VAR}`` (as in Claude Code and VS
Code), replaced by the environment variable; an unset one is an error naming the server,
the field and the variable (never a literal ``${VAR}`` on the wire). ``$${`` is a
literal ``${``. Bad input raises :class:`McpConfigError` naming the server and the
field.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

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
    #: Every tool needs approval (true), none does (false); unset: the tools the server
    #: marks ``destructiveHint``.
    require_approval: bool | None = None
    #: Offer the model a ``{server}-read_resource`` tool that reads the server's resources.
    resources_tool: bool = False
    #: Let the tool calls of several sessions run at once. Default: one session's at a
    #: time when elicitation or sampling is answered, since nothing on a stdio wire says
    #: which call a server's request belongs to (with this set, such a request during
    #: the calls of two sessions is declined instead).
    parallel_sessions: bool = False

    def __repr__(self) -> str:  # env values are secrets: show the names only
        return (
            f"StdioServer(command={self.command!r}, args={self.args!r}, env={_names(self.env)}, "
            f"cwd={self.cwd!r}, inherit_env={self.inherit_env!r})"
        )


class OAuthConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """OAuth 2.1 for an HTTP server (``"oauth": {...}`` in its entry; ``{}`` is enough for a
    server that supports dynamic registration). See :mod:`agcore_actors.mcp._oauth`."""

    #: ``authorization_code`` (a person logs in once: ``agcore-actors mcp login NAME``)
    #: or ``client_credentials`` (a machine client: ``client_secret`` or ``private_key``).
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    #: A pre-registered client (else dynamic registration or ``client_metadata_url``).
    client_id: str | None = None
    client_secret: str | None = None
    #: PEM private key: the client authenticates with a signed JWT (private_key_jwt).
    private_key: str | None = None
    signing_algorithm: str = "RS256"
    #: Space-separated scopes to ask for (else from the server's metadata).
    scope: str | None = None
    #: How the client authenticates at the token endpoint (else what was registered).
    token_auth: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    #: An https URL of a client-id metadata document (used when the server supports it).
    client_metadata_url: str | None = None
    #: The loopback port ``mcp login`` listens on for the redirect (0: any free port).
    redirect_port: int = 0

    def __repr__(self) -> str:  # the secret and the key are secrets
        return (
            f"OAuthConfig(grant={self.grant!r}, client_id={self.client_id!r}, "
            f"scope={self.scope!r}, secret={'set' if self.client_secret else None}, "
            f"private_key={'set' if self.private_key else None})"
        )


class HttpServer(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A server reached over streamable HTTP at ``url``, with ``headers`` on every request,
    and OAuth when ``oauth`` is given."""

    url: str
    headers: dict[str, str] = {}
    oauth: OAuthConfig | None = None
    #: As :attr:`StdioServer.require_approval`.
    require_approval: bool | None = None
    #: As :attr:`StdioServer.resources_tool`.
    resources_tool: bool = False
    #: The legacy HTTP+SSE transport (``"type": "sse"``): ``url`` is the SSE endpoint.
    sse: bool = False

    def __repr__(self) -> str:  # header values and a URL password are secrets
        url = urllib.parse.urlsplit(self.url)
        if url.password is not None:
            netloc = f"{url.username or ''}:{_HIDDEN}@{url.hostname or ''}"
            netloc += f":{url.port}" if url.port is not None else ""
            url = url._replace(netloc=netloc)
        oauth = "" if self.oauth is None else f", oauth={self.oauth!r}"
        return f"HttpServer(url={url.geturl()!r}, headers={_names(self.headers)}{oauth})"


_HIDDEN = "[redacted]"


def _names(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{name!r}: {_HIDDEN!r}" for name in values) + "}"


ServerConfig = StdioServer | HttpServer


_PLACEHOLDER = re.compile(r"\$\$\{|\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(value: Any, where: str, env: Mapping[str, str]) -> Any:
    """``value`` with ``${VAR}``/``${env:VAR}`` replaced in every string inside it."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            variable = match.group(1)
            if variable is None:
                return "${"
            if variable not in env:
                raise McpConfigError(f"{where}: environment variable {variable} is not set")
            return env[variable]

        return _PLACEHOLDER.sub(one, value)
    if isinstance(value, list):
        return [expand(v, f"{where}[{i}]", env) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: expand(v, f"{where}.{k}", env) for k, v in value.items()}
    return value


def server_from_dict(name: str, raw: Any, env: Mapping[str, str] | None = None) -> ServerConfig:
    """One ``mcpServers`` entry; raise :class:`McpConfigError` naming it."""
    if not isinstance(raw, dict):
        raise McpConfigError(f"mcpServers.{name}: expected an object, got {type(raw).__name__}")
    kind_name = raw.get("type")
    if kind_name not in (None, "stdio", "http", "streamable-http", "sse"):
        raise McpConfigError(f"mcpServers.{name}.type: unknown transport {kind_name!r}")
    if kind_name == "sse":
        if "url" not in raw:
            raise McpConfigError(f"mcpServers.{name}: type 'sse' needs 'url' (its SSE endpoint)")
        raw = {**raw, "sse": True}
    raw = expand(raw, f"mcpServers.{name}", os.environ if env is None else env)
    has_cmd, has_url = "command" in raw, "url" in raw
    if has_cmd == has_url:
        raise McpConfigError(f"mcpServers.{name}: needs exactly one of 'command' or 'url'")
    kind: type[ServerConfig] = StdioServer if has_cmd else HttpServer
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise McpConfigError(f"mcpServers.{name}: {exc}") from None


def parse_config(data: Any, env: Mapping[str, str] | None = None) -> dict[str, ServerConfig]:
    """The servers of an ``{"mcpServers": {...}}`` object, of VS Code's
    ``{"servers": {...}}``, or of the inner object; placeholders from ``env`` (default:
    ours)."""
    if isinstance(data, dict) and "mcpServers" in data:
        data = data["mcpServers"]
    elif isinstance(data, dict) and _vscode(data.get("servers")):
        data = data["servers"]
    if not isinstance(data, dict):
        raise McpConfigError("expected an object with a 'mcpServers' (or 'servers') object")
    servers: dict[str, ServerConfig] = {}
    for name, raw in data.items():
        if not isinstance(name, str) or not name:
            raise McpConfigError(f"server names must be non-empty strings, not {name!r}")
        if isinstance(raw, dict) and raw.get("disabled") is True:
            continue
        servers[name] = server_from_dict(name, raw, env)
    return servers


def _vscode(servers: Any) -> bool:
    """VS Code's ``servers`` object (not one server named ``servers``)."""
    return isinstance(servers, dict) and not ({"command", "url"} & servers.keys())


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
