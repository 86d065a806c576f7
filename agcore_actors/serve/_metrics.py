"""Prometheus metrics of a served host, in ``prometheus_client``'s text format.

Gauges are read at scrape time from :meth:`SessionHost.snapshot` and
:meth:`ActorSystem.snapshot`; counters and histograms are updated as turn events pass
(:meth:`Metrics.observe`). Each :class:`Metrics` has its own registry, so two servers in
one process never share a series.

Cardinality is bounded: the set of series does not depend on how many sessions are live
nor on their ids. Session actors (named ``session:<id>``) appear only in aggregates
(``agcore_sessions_actors`` by state, mailbox depth sum and max, requests in flight,
degraded and dormant counts); per-actor series (``name``, ``kind`` labels) are kept for
the other actors, which the configuration names (provider, tools, store, supervisors).
No counter carries a ``state`` label: an actor's state is ``agcore_actor_state``, one
0/1 gauge per possible state, so a state change moves a value, never a series.
Per-session detail is the observer's (``/observer/state``). A clustered host's ownership
is ``agcore_cluster_*``: leases held, and counters of grants, takeovers, activations
refused for another owner, fenced writes, lost leases, self-fencing and failed renewals.

The OpenTelemetry GenAI client metrics are exported under their Prometheus names:
``gen_ai_client_token_usage`` (histogram by ``gen_ai_token_type``, one observation per
model response that reports usage) and ``gen_ai_client_operation_duration_seconds``
(from the step's start, the turn's start or the end of the previous step's tool calls,
to the response's usage; retries included), both with ``gen_ai_operation_name="chat"``
and the semantic conventions' bucket boundaries. Both are observed at
:class:`~agcore_actors.agent.messages.UsageReported`: a response whose provider reports
no usage is neither counted nor timed.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..actor import ActorInfo, State
from ..agent import SessionHost, session_name
from ..agent import messages as am
from ..cluster import ClusterSnapshot
from ._turns import RunningTurn

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_HOST_GAUGES = ("live", "busy", "turns_in_flight", "parked")
_HOST_COUNTERS = ("activated", "deactivated", "evicted_idle", "evicted_cap", "crashes")
# Ownership of a clustered host (zeros on a host of one process: the same series).
_CLUSTER_COUNTERS = (
    "acquired",
    "takeovers",
    "owned_elsewhere",
    "fenced_writes",
    "lease_losses",
    "self_fences",
    "renewal_failures",
)
_SESSION = session_name("")
# The GenAI semantic conventions' advised bucket boundaries.
_TOKEN_BUCKETS = tuple(4.0**i for i in range(14))
_DURATION_BUCKETS = tuple(0.01 * 2**i for i in range(14))


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, doc)
    gauge.add_metric([], value)
    return gauge


def _sessions(rows: list[ActorInfo]) -> Iterator[GaugeMetricFamily]:
    """The session actors' aggregates: a fixed set of series, whatever the rows."""
    actors = GaugeMetricFamily(
        "agcore_sessions_actors", "Session actors, by state.", labels=["state"]
    )
    for state in State:
        actors.add_metric([state.value], sum(1 for row in rows if row.state is state))
    depths = [row.mailbox_depth for row in rows]
    yield actors
    yield _gauge("agcore_sessions_mailbox_depth_sum", "Messages queued, all sessions.", sum(depths))
    yield _gauge(
        "agcore_sessions_mailbox_depth_max", "Longest session mailbox.", max(depths, default=0)
    )
    yield _gauge(
        "agcore_sessions_in_flight",
        "Requests in flight, all sessions.",
        sum(row.in_flight for row in rows),
    )
    yield _gauge(
        "agcore_sessions_degraded",
        "Session actors working only in part.",
        sum(1 for row in rows if row.degraded is not None),
    )
    yield _gauge(
        "agcore_sessions_dormant",
        "Session actors hibernating (no task).",
        sum(1 for row in rows if row.dormant),
    )


def _actors(rows: list[ActorInfo]) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    """Per-actor series of the named (non-session) actors."""
    labels = ["name", "kind"]
    depth = GaugeMetricFamily("agcore_actor_mailbox_depth", "Mailbox depth.", labels=labels)
    flight = GaugeMetricFamily("agcore_actor_in_flight", "Requests in flight.", labels=labels)
    restarts = CounterMetricFamily("agcore_actor_restarts", "Restarts.", labels=labels)
    # 1 while the actor publishes a degraded state; the reason stays in the observer
    # (free text does not belong in a label).
    degraded = GaugeMetricFamily(
        "agcore_actor_degraded", "1 while the actor works only in part.", labels=labels
    )
    states = GaugeMetricFamily(
        "agcore_actor_state", "1 for the state the actor is in.", labels=[*labels, "state"]
    )
    for row in rows:
        key = [row.name, row.kind]
        depth.add_metric(key, row.mailbox_depth)
        flight.add_metric(key, row.in_flight)
        restarts.add_metric(key, row.restarts)
        degraded.add_metric(key, 0 if row.degraded is None else 1)
        for state in State:
            states.add_metric([*key, state.value], 1 if row.state is state else 0)
    yield from (depth, flight, restarts, degraded, states)


class _Snapshots(Collector):
    def __init__(self, host: SessionHost) -> None:
        self.host = host

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        snap = self.host.snapshot()
        for name in _HOST_GAUGES:
            yield _gauge(f"agcore_sessions_{name}", f"Sessions: {name}.", getattr(snap, name))
        for name in _HOST_COUNTERS:
            counter = CounterMetricFamily(f"agcore_sessions_{name}", f"Sessions: {name}.")
            counter.add_metric([], getattr(snap, name))
            yield counter
        cluster = snap.cluster or ClusterSnapshot(host="")
        yield _gauge("agcore_cluster_leases_held", "Leases held by this host.", cluster.leases_held)
        for name in _CLUSTER_COUNTERS:
            counter = CounterMetricFamily(f"agcore_cluster_{name}", f"Cluster: {name}.")
            counter.add_metric([], getattr(cluster, name))
            yield counter
        rows = self.host.system.snapshot()
        sessions = [row for row in rows if row.name.startswith(_SESSION)]
        named = [row for row in rows if not row.name.startswith(_SESSION)]
        yield _gauge("agcore_actors", "Actors and supervisors running.", len(rows))
        yield from _sessions(sessions)
        yield from _actors(named)


@attrs.define
class _Step:
    """Where a turn's current model call began, and its tool calls still running."""

    started: float
    tools: set[str] = attrs.field(factory=set)


class Metrics:
    """The registry of one server: snapshot gauges plus turn counters."""

    def __init__(self, host: SessionHost) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Snapshots(host))
        self.turns = Counter(
            "agcore_turns", "Turns ended, by outcome.", ["outcome"], registry=self.registry
        )
        self.tokens = Counter(
            "agcore_tokens", "Tokens used, by kind.", ["kind"], registry=self.registry
        )
        self.tool_calls = Counter(
            "agcore_tool_calls", "Tool calls ended, by status.", ["status"], registry=self.registry
        )
        self.retries = Counter(
            "agcore_model_retries", "Model calls retried.", registry=self.registry
        )
        self.latency = Histogram(
            "agcore_turn_seconds", "Turn duration in seconds.", registry=self.registry
        )
        self.token_usage = Histogram(
            "gen_ai_client_token_usage",
            "Number of input and output tokens used (per model response).",
            ["gen_ai_operation_name", "gen_ai_token_type"],
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.operation = Histogram(
            "gen_ai_client_operation_duration_seconds",
            "GenAI operation duration.",
            ["gen_ai_operation_name"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        self._steps: dict[tuple[str, str], _Step] = {}  # by (session, turn), while it runs

    def observe(self, turn: RunningTurn, event: am.TurnEvent, now: float) -> None:
        """Count ``event`` of ``turn`` (``now``: trio's clock)."""
        match event:
            case am.TurnStarted():
                self._steps[(turn.session, turn.turn)] = _Step(now)
            case am.TurnCompleted(result=r) | am.TurnCancelled(result=r) | am.TurnFailed(result=r):
                self._steps.pop((turn.session, turn.turn), None)
                self.turns.labels(r.status).inc()
                self.latency.observe(max(0.0, now - turn.started_at))
            case am.UsageReported(usage=usage):
                self._model_call(
                    (turn.session, turn.turn), now, usage.input_tokens, usage.output_tokens
                )
                for kind, value in (
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                    ("cache_read", usage.cache_read_tokens),
                    ("cache_write", usage.cache_write_tokens),
                    ("reasoning", usage.reasoning_tokens),
                ):
                    if value:
                        self.tokens.labels(kind).inc(value)
            case am.ToolCallStarted(call_id=call_id):
                step = self._steps.get((turn.session, turn.turn))
                if step is not None:
                    step.tools.add(call_id)
            case am.ToolCallFinished(call_id=call_id, status=status):
                self.tool_calls.labels(status).inc()
                step = self._steps.get((turn.session, turn.turn))
                if step is not None and call_id in step.tools:
                    step.tools.discard(call_id)
                    if not step.tools:  # the next model call starts now
                        step.started = now
            case am.RetryingModel():
                self.retries.inc()
            case _:
                pass

    def _model_call(
        self, turn: tuple[str, str], now: float, input_tokens: int, output_tokens: int
    ) -> None:
        self.token_usage.labels("chat", "input").observe(input_tokens)
        self.token_usage.labels("chat", "output").observe(output_tokens)
        step = self._steps.get(turn)
        if step is not None:
            self.operation.labels("chat").observe(max(0.0, now - step.started))
            step.started = now  # a further response in this step (none today) counts anew

    def render(self) -> bytes:
        return generate_latest(self.registry)
