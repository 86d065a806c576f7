"""The observer: what ``/observer`` shows, as one JSON document read at once, bounded.

:func:`observer_state` is a pure read of :meth:`ActorSystem.snapshot`,
:meth:`SessionHost.snapshot` and the turns a :class:`TurnRunner` remembers, sized for
thousands of sessions: every list holds at most ``limit`` rows (a ``*_total`` says how
many there were), so the document's size does not grow with the sessions. In order:

- ``sessions``: the host's counts, and ``summary``: the supervision tree counted by
  state, restarts, degraded actors, the fullest mailbox, the turns in flight and the
  slowest of them;
- ``in_flight``: the turns in flight, longest running first, with their current step;
- ``busiest``: the sessions with the most turns remembered (running or recent);
- ``recent``: the last finished turns with their timings (``seconds``, ``first_output``:
  seconds to the model's first output), model and tool calls and tokens;
- ``tree``: every actor and supervisor but the sessions', then the session actors worth
  a look first (not running, degraded, restarted, mail waiting), up to ``limit``.

``session`` (the page's search) keeps only the rows of sessions whose id contains it.
The page (``observer.html``, plain HTML and JS in the package, no build step, nothing
fetched from elsewhere) polls it every second.
"""

from __future__ import annotations

import collections
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import msgspec
import trio

from ..actor import ActorInfo
from ..agent import SessionHost
from ._errors import BadCommand
from ._turns import RunningTurn, TurnRunner
from ._wire import event_kind

__all__ = ["observer_page", "observer_query", "observer_state"]

#: The most rows a list of the document may hold (``limit`` is clamped to it).
MAX_ROWS = 500
_SESSION = "session:"


def observer_page() -> bytes:
    """The page's HTML (the same bytes every call)."""
    return resources.files(__package__).joinpath("observer.html").read_bytes()


def observer_query(scope: Any) -> tuple[int, str]:
    """``limit`` (1..:data:`MAX_ROWS`, default 50) and ``session`` (a search, at most 256
    characters) of ``GET /observer/state``; anything else is :class:`BadCommand`."""
    try:
        query = parse_qs(scope.get("query_string", b"").decode("ascii"), errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadCommand("the query string is not ASCII") from None
    text = query.get("limit", ["50"])[-1]
    if not (text.isascii() and text.isdigit() and len(text) <= 4 and 1 <= int(text) <= MAX_ROWS):
        raise BadCommand(f"'limit' must be an integer in 1..{MAX_ROWS}")
    search = query.get("session", [""])[-1]
    if len(search) > 256:
        raise BadCommand("'session' is longer than 256 characters")
    return int(text), search


def _row(row: ActorInfo) -> dict[str, Any]:
    return {
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


def _worth_a_look(row: ActorInfo) -> tuple[int, int, int]:
    """Sort key: troubled session actors first."""
    troubled = row.state.value != "running" or bool(row.degraded)
    return (0 if troubled else 1, -row.restarts, -row.mailbox_depth)


def _finished(turn: RunningTurn) -> dict[str, Any]:
    assert turn.final is not None
    result = turn.final.result
    end = turn.ended_at if turn.ended_at is not None else turn.started_at
    first = turn.first_output_at
    return {
        "session": turn.session,
        "turn": turn.turn,
        "status": result.status,
        "error_kind": result.error_kind,
        "seconds": round(end - turn.started_at, 3),
        "first_output": None if first is None else round(first - turn.started_at, 3),
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "tokens": result.usage.total_tokens,
    }


def observer_state(
    host: SessionHost, runner: TurnRunner, *, limit: int = 50, session: str = ""
) -> dict[str, Any]:
    """The observer's document (see the module docstring)."""
    limit = max(1, min(limit, MAX_ROWS))
    now = trio.current_time()

    def wanted(name: str) -> bool:
        return not session or session in name

    rows = host.system.snapshot()
    states = collections.Counter(row.state.value for row in rows)
    degraded = [row.name for row in rows if row.degraded]
    fullest = max(rows, key=lambda row: row.mailbox_depth, default=None)
    sessions = [r for r in rows if r.name.startswith(_SESSION) and wanted(r.name[len(_SESSION) :])]
    sessions.sort(key=_worth_a_look)
    tree = [_row(r) for r in rows if not r.name.startswith(_SESSION)]
    tree += [_row(r) for r in sessions[:limit]]
    snap = host.snapshot()
    turns = [t for t in runner.turns.values() if wanted(t.session)]
    running = sorted((t for t in turns if t.final is None), key=lambda t: t.started_at)
    finished = [t for t in reversed(turns) if t.final is not None]
    per_session = collections.Counter(t.session for t in turns)
    slowest = [
        {
            "session": t.session,
            "turn": t.turn,
            "step": event_kind(t.events[-1]) if t.events else "waiting",
            "events": len(t.events),
            "seconds": round(now - t.started_at, 3),
        }
        for t in running[:limit]
    ]
    return {
        "sessions": {
            "live": snap.live,
            "busy": snap.busy,
            "idle": snap.live - snap.busy,
            "evicted": snap.evicted_idle + snap.evicted_cap,
            "turns_in_flight": snap.turns_in_flight,
            "parked": snap.parked,
            "crashes": snap.crashes,
        },
        "summary": {
            "actors": len(rows),
            "states": dict(sorted(states.items())),
            "restarts": sum(row.restarts for row in rows),
            "degraded": degraded[:limit],
            "fullest_mailbox": None
            if fullest is None or not fullest.mailbox_depth
            else {"name": fullest.name, "depth": fullest.mailbox_depth},
            "slowest_seconds": slowest[0]["seconds"] if slowest else 0.0,
        },
        "search": session,
        "cluster": None if snap.cluster is None else msgspec.to_builtins(snap.cluster),
        "in_flight": slowest,
        "in_flight_total": len(running),
        "busiest": [{"session": s, "turns": n} for s, n in per_session.most_common(limit)],
        "recent": [_finished(t) for t in finished[:limit]],
        "recent_total": len(finished),
        "tree": tree,
        "tree_total": len(rows),
    }
