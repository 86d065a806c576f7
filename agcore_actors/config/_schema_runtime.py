"""The tables of the runtime: ``[store]``, ``[host]``, ``[cluster]``, ``[retry]``,
``[timeouts]``, ``[logging]`` and ``[telemetry]``."""

from __future__ import annotations

from typing import Literal

import attrs

from .._validators import at_least_one, non_negative, non_negative_int, positive
from ..agent import HostConfig
from ..cluster import ClusterConfig, default_host_id
from ..llm import RetryConfig, Timeouts
from ._schema_checks import limit, optional_postgres_url, unit_interval

__all__ = [
    "ClusterSettings",
    "HostSettings",
    "LoggingSettings",
    "RetrySettings",
    "StoreSettings",
    "TelemetrySettings",
    "TimeoutSettings",
]

# The library's own defaults are the file's (see ``_schema``).
_HOST = HostConfig()
_CLUSTER = ClusterConfig(host_id="defaults")
_RETRY = RetryConfig()
_TIMEOUTS = Timeouts()


@attrs.frozen(kw_only=True)
class StoreSettings:
    """Where sessions are kept."""

    #: A SQLite file (relative to the config file); absent: in memory, lost at exit.
    path: str | None = attrs.field(default=None)
    #: ``FULL``: a reply means durable on disk; ``NORMAL``: survives a killed process.
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    #: A PostgreSQL database instead of ``path`` (``postgresql://user:pw@host/db``),
    #: which several hosts may share (secret: never shown; prefer ``AGCORE_STORE__URL``).
    url: str | None = attrs.field(default=None, repr=False, validator=optional_postgres_url)


@attrs.frozen(kw_only=True)
class HostSettings:
    """Limits of the session host."""

    #: Live sessions at most; beyond it the least recently used idle one is put away.
    max_sessions: int = attrs.field(default=_HOST.max_sessions, validator=at_least_one)
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
    jitter: float = attrs.field(default=_RETRY.jitter, validator=unit_interval)
    #: A server asking to wait longer than this (seconds) is not retried.
    max_retry_after: float = attrs.field(default=_RETRY.max_retry_after, validator=non_negative)


@attrs.frozen(kw_only=True)
class TimeoutSettings:
    """Time limits of one model call, in seconds (``inf``: no limit)."""

    #: One non-streamed attempt; for a stream, the wait for its first event.
    attempt: float = attrs.field(default=limit(_TIMEOUTS.attempt), validator=positive)
    #: The longest silence of a stream once it has started.
    idle: float = attrs.field(default=limit(_TIMEOUTS.idle), validator=positive)
    #: TCP and TLS connect.
    connect: float = attrs.field(default=limit(_TIMEOUTS.connect), validator=positive)
    #: The whole call, retries and backoff included.
    call: float = attrs.field(default=limit(_TIMEOUTS.call), validator=positive)


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
