"""The observer: what ``/observer`` shows, as one JSON document read at once.

:func:`observer_state` is a pure read of :meth:`ActorSystem.snapshot`,
:meth:`SessionHost.snapshot` and the turns a :class:`TurnRunner` remembers: the
supervision tree (every actor and supervisor with its state, mailbox depth, restarts
and requests in flight), the session counts, the busiest sessions, the turns in flight
with their current step, and the last finished turns with their events. The page
(``observer.html``, plain HTML and JS in the package, no build step, nothing fetched
from elsewhere) polls it every second.
"""

from __future__ import annotations

import collections
from importlib import resources
from typing import Any

import msgspec
import trio

from ..agent import SessionHost
from ._turns import TurnRunner
from ._wire import event_kind

__all__ = ["observer_page", "observer_state"]


def observer_page() -> bytes:
    """The page's HTML (the same bytes every call)."""
    return resources.files(__package__).joinpath("observer.html").read_bytes()


def observer_state(host: SessionHost, runner: TurnRunner, *, recent: int = 20) -> dict[str, Any]:
    """The observer's document (see the module docstring)."""
    now = trio.current_time()
    tree = [
        {
            "name": row.name,
            "kind": row.kind,
            "parent": row.parent,
            "state": row.state.value,
            "mailbox_depth": row.mailbox_depth,
            "mailbox_capacity": row.mailbox_capacity,
            "restarts": row.restarts,
            "in_flight": row.in_flight,
            "degraded": row.degraded,
        }
        for row in host.system.snapshot()
    ]
    snap = host.snapshot()
    turns = list(runner.turns.values())
    running = [t for t in turns if t.final is None]
    per_session = collections.Counter(t.session for t in turns)
    return {
        "tree": tree,
        "sessions": {
            "live": snap.live,
            "busy": snap.busy,
            "idle": snap.live - snap.busy,
            "evicted": snap.evicted_idle + snap.evicted_cap,
            "turns_in_flight": snap.turns_in_flight,
            "parked": snap.parked,
            "crashes": snap.crashes,
        },
        "cluster": None if snap.cluster is None else msgspec.to_builtins(snap.cluster),
        "busiest": [{"session": s, "turns": n} for s, n in per_session.most_common(10)],
        "in_flight": [
            {
                "session": t.session,
                "turn": t.turn,
                "step": event_kind(t.events[-1]) if t.events else "waiting",
                "events": len(t.events),
                "seconds": round(now - t.started_at, 3),
            }
            for t in running
        ],
        "recent": [
            {
                "session": t.session,
                "turn": t.turn,
                "status": t.final.result.status,
                "error_kind": t.final.result.error_kind,
                "events": [event_kind(e) for e in t.events],
            }
            for t in reversed(turns)
            if t.final is not None
        ][:recent],
    }
