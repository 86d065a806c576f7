"""Prometheus metrics of a served host, in ``prometheus_client``'s text format.

Gauges are read at scrape time from :meth:`SessionHost.snapshot` and
:meth:`ActorSystem.snapshot`; counters and the latency histogram are updated as turn
events pass (:meth:`Metrics.observe`). Each :class:`Metrics` has its own registry, so
two servers in one process never share a series.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..agent import SessionHost
from ..agent import messages as am
from ._turns import RunningTurn

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_HOST_GAUGES = ("live", "busy", "turns_in_flight", "parked")
_HOST_COUNTERS = ("activated", "deactivated", "evicted_idle", "evicted_cap", "crashes")


class _Snapshots(Collector):
    def __init__(self, host: SessionHost) -> None:
        self.host = host

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        snap = self.host.snapshot()
        for name in _HOST_GAUGES:
            gauge = GaugeMetricFamily(f"agcore_sessions_{name}", f"Sessions: {name}.")
            gauge.add_metric([], getattr(snap, name))
            yield gauge
        for name in _HOST_COUNTERS:
            counter = CounterMetricFamily(f"agcore_sessions_{name}", f"Sessions: {name}.")
            counter.add_metric([], getattr(snap, name))
            yield counter
        rows = self.host.system.snapshot()
        labels = ["name", "kind", "state"]
        depth = GaugeMetricFamily("agcore_actor_mailbox_depth", "Mailbox depth.", labels=labels)
        flight = GaugeMetricFamily("agcore_actor_in_flight", "Requests in flight.", labels=labels)
        restarts = CounterMetricFamily("agcore_actor_restarts", "Restarts.", labels=labels)
        # 1 while the actor publishes a degraded state; the reason stays in the observer
        # (free text does not belong in a label).
        degraded = GaugeMetricFamily(
            "agcore_actor_degraded", "1 while the actor works only in part.", labels=labels
        )
        for row in rows:
            key = [row.name, row.kind, row.state.value]
            depth.add_metric(key, row.mailbox_depth)
            flight.add_metric(key, row.in_flight)
            restarts.add_metric(key, row.restarts)
            degraded.add_metric(key, 0 if row.degraded is None else 1)
        actors = GaugeMetricFamily("agcore_actors", "Actors and supervisors running.")
        actors.add_metric([], len(rows))
        yield from (actors, depth, flight, restarts, degraded)


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

    def observe(self, turn: RunningTurn, event: am.TurnEvent, now: float) -> None:
        """Count ``event`` of ``turn`` (``now``: trio's clock)."""
        match event:
            case am.TurnCompleted(result=r) | am.TurnCancelled(result=r) | am.TurnFailed(result=r):
                self.turns.labels(r.status).inc()
                self.latency.observe(max(0.0, now - turn.started_at))
            case am.UsageReported(usage=usage):
                for kind, value in (
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                    ("cache_read", usage.cache_read_tokens),
                    ("cache_write", usage.cache_write_tokens),
                    ("reasoning", usage.reasoning_tokens),
                ):
                    if value:
                        self.tokens.labels(kind).inc(value)
            case am.ToolCallFinished(status=status):
                self.tool_calls.labels(status).inc()
            case am.RetryingModel():
                self.retries.inc()
            case _:
                pass

    def render(self) -> bytes:
        return generate_latest(self.registry)
