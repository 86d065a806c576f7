"""The soak's client: each session takes its turns one after another, all sessions at
once, through one SessionHost; how each turn ended is counted, and a turn the host
answered is acknowledged (a JSON line appended to a file and fsynced) before the next.

A turn is taken one of four ways, chosen from the seed, the session and the turn number:

- ``run`` (70 %): ``host.run`` and its result;
- ``stream`` (15 %): ``host.submit``, every event read to the last one's result;
- ``leave`` (10 %): ``host.submit``, left right after ``TurnStarted`` (the turn is
  cancelled and committed before leaving returns);
- ``cancel`` (5 %): ``host.run``, with ``host.cancel`` a moment later.

A ``failed`` turn whose error is the store's own (``store_storage*``: the store could not
take it) is not acknowledged: nothing of it is promised stored.

Outcomes: ``completed``; ``failed`` with a typed error (its ``kind`` is one of the library's
error tree); ``cancelled`` (only a left or cancelled turn may end so); ``rejected`` (a typed
error before the turn ran: busy, parked; the turn is tried again, up to 5 times); and
``stale``: a turn refused or failed with an error its session's own serial turns must
never meet: a conflict or an invalid transcript (a wedged session), ``ActorStopped``
while the host is up (a dead session the host still hands out), ``DuplicateName`` (an
actor the host lost track of); ``lost``: anything else — no answer within the watchdog, an untyped
error, an outcome the way it was taken does not allow.

With ``cancel_rate`` (``--cancel-rate``), that share of the turns (seeded) is taken by a
caller that gives up after a random 0-0.5 s, wherever the turn is then (activation,
begin, model call, tools, commit): ``gave_up``, never acknowledged, and the session goes
on with its next turn.

Once :attr:`Driver.stopping` is set (the host is being shut down under load), any turn may
end ``cancelled`` (the drain cancels what outlives it), and a session whose next turn is
refused with ``ActorStopped`` stops taking turns (``refused_at_shutdown``).
"""

from __future__ import annotations

import json
import math
import os
import pkgutil
import random
from pathlib import Path
from typing import Any

import trio
from soak_check import turn_text

import agcore_actors
from agcore_actors._errors import AgcoreError
from agcore_actors.agent import SessionHost
from agcore_actors.agent import messages as am

#: Errors a session's own turns must never meet while the host is up: its view of the
#: store went stale (a conflict), it wrote what the store refuses, or the host still
#: hands out a session actor that is gone. Counted as ``stale`` (must be zero).
STALE = frozenset(
    {"store_conflict", "store_invalid_transcript", "actor_stopped", "duplicate_actor_name"}
)

WAYS = (("run", 70), ("stream", 15), ("leave", 10), ("cancel", 5))


def error_kinds() -> set[str]:
    """Every ``kind`` of the library's error tree."""
    for info in pkgutil.walk_packages(agcore_actors.__path__, "agcore_actors."):
        if info.name.endswith("._errors"):
            __import__(info.name)
    kinds, todo = set(), [AgcoreError]
    while todo:
        cls = todo.pop()
        kinds.add(cls.kind)
        todo += cls.__subclasses__()
    return kinds


def session_ids(n: int) -> list[str]:
    return [f"s{i:04d}" for i in range(n)]


def way(seed: int, session: str, k: int) -> str:
    """How turn ``k`` of ``session`` is taken."""
    names = [name for name, _ in WAYS]
    weights = [weight for _, weight in WAYS]
    return random.Random(f"{seed}:{session}:{k}").choices(names, weights)[0]


class Driver:
    """See the module docstring."""

    def __init__(
        self,
        host: SessionHost,
        acks: Path,
        turns: int,
        watchdog: float,
        seed: int,
        cancel_rate: float = 0.0,
    ) -> None:
        self.host, self.turns, self.watchdog, self.seed = host, turns, watchdog, seed
        self.cancel_rate = cancel_rate
        self.kinds = error_kinds()
        self.counts: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.ways: dict[str, int] = {}
        self.lost: list[str] = []
        self.done = 0
        self.acked = 0
        #: The host is shutting down: see the module docstring.
        self.stopping = False
        self._acks = open(acks, "a")  # noqa: SIM115 - closed by close()
        self.on_progress: Any = None

    def close(self) -> None:
        self._acks.close()

    def _count(self, what: str, kind: str = "") -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        if kind:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def _ack(self, session: str, turn: str, k: int, status: str, text: str) -> None:
        record = {"session": session, "turn": turn, "k": k, "status": status, "text": text}
        self._acks.write(json.dumps(record) + "\n")
        self._acks.flush()
        os.fsync(self._acks.fileno())
        self.acked += 1

    async def _take(self, how: str, session: str, k: int, turn: str) -> am.TurnResult | None:
        """The turn's result; None for a turn left after it started."""
        text = turn_text(session, k)
        if how == "run":
            return await self.host.run(session, text, turn=turn)
        if how == "cancel":
            results: list[am.TurnResult | Exception] = []

            async def run() -> None:
                try:
                    results.append(await self.host.run(session, text, turn=turn))
                except Exception as exc:  # raised as itself below, not in a group
                    results.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                await trio.sleep(random.Random(turn).uniform(0.0, 0.2))
                await self.host.cancel(session)
            if isinstance(results[0], Exception):
                raise results[0]
            return results[0]
        async with self.host.submit(session, text, turn=turn) as events:
            async for event in events:
                if how == "leave" and isinstance(event, am.TurnStarted):
                    return None
                if isinstance(event, am.TurnCompleted | am.TurnFailed | am.TurnCancelled):
                    return event.result
        raise AssertionError("the turn's events ended without its result")

    async def session(self, session: str, first: int, nonce: str) -> None:
        k, rejected = first, 0
        while k < self.turns:
            turn = f"{session}-t{k}-{nonce}-{rejected}"
            how = way(self.seed, session, k)
            chance = random.Random(f"{self.seed}:{session}:{k}:{rejected}:give-up")
            give_up = chance.uniform(0.0, 0.5) if chance.random() < self.cancel_rate else None
            try:
                with trio.fail_after(self.watchdog):
                    with trio.move_on_after(math.inf if give_up is None else give_up) as caller:
                        result = await self._take(how, session, k, turn)
                if caller.cancelled_caught:  # the outcome is unknown to this caller
                    self._count("gave_up")
                    self.ways["gave_up"] = self.ways.get("gave_up", 0) + 1
                    k, rejected = k + 1, 0
                    self.done += 1
                    continue
            except trio.TooSlowError:
                self.lost.append(f"{turn} ({how}): no answer within {self.watchdog:g} s")
                self._count("lost")
            except AgcoreError as exc:  # refused before it ran (busy, parked, ...)
                if self.stopping and exc.kind == "actor_stopped":
                    self._count("refused_at_shutdown")
                    return
                self._count("rejected", exc.kind)
                if exc.kind in STALE:
                    self._count("stale")
                rejected += 1
                if rejected < 5:
                    await trio.sleep(0.05)
                    continue
            except Exception as exc:
                self.lost.append(f"{turn} ({how}): untyped {type(exc).__name__}: {exc}")
                self._count("lost")
            else:
                self._settle(how, session, k, turn, result)
            self.ways[how] = self.ways.get(how, 0) + 1
            k, rejected = k + 1, 0
            self.done += 1
            if self.on_progress is not None:
                self.on_progress()

    def _settle(
        self, how: str, session: str, k: int, turn: str, result: am.TurnResult | None
    ) -> None:
        if result is None:  # left after TurnStarted: cancelled, committed as such
            self._count("cancelled")
            self._ack(session, turn, k, "cancelled", "")
            return
        ok = result.status == "completed" or (
            result.status == "failed" and result.error_kind in self.kinds
        )
        ok = ok or (result.status == "cancelled" and (how == "cancel" or self.stopping))
        if not ok:
            self.lost.append(f"{turn} ({how}): {result.status} {result.error_kind}")
            self._count("lost")
            return
        self._count(result.status, result.error_kind)
        if result.error_kind in STALE:
            self._count("stale")
        if result.error_kind.startswith("store_storage"):
            return  # the store could not take the turn: nothing of it is promised stored
        self._ack(session, turn, k, result.status, result.text)

    async def wedged(self, sessions: list[str], nonce: str, tries: int = 5) -> list[str]:
        """Sessions whose next turn, with no caller giving up, does not complete within
        ``tries`` attempts (a provider fault fails one now and then: that is no wedge).
        These turns are not acknowledged (nor counted): the store check still reads them."""
        stuck: list[str] = []

        async def check(session: str) -> None:
            problem = ""
            for attempt in range(tries):
                turn = f"{session}-t{self.turns}-{nonce}-check{attempt}"
                try:
                    with trio.fail_after(self.watchdog):
                        result = await self.host.run(
                            session, turn_text(session, self.turns), turn=turn
                        )
                except Exception as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                    continue
                if result.status == "completed":
                    return
                problem = f"{result.status} {result.error_kind}"
            stuck.append(f"{session}: {problem}")

        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(check, session)
        return stuck

    async def run(self, plan: dict[str, int], nonce: str) -> None:
        async with trio.open_nursery() as nursery:
            for session, first in plan.items():
                nursery.start_soon(self.session, session, first, nonce)
