"""Probe: a test actor that crashes, exits or sleeps on request and records its life.

Every incarnation of a probe appends to an :class:`EventLog` shared by the
test (it is passed to the factory, never inside a message, so probes work in
strict mode)::

    log = EventLog()
    ref = await system.spawn(Probe.factory(log), name="a")
    await ref.tell(Crash())
    await settle()
    assert log.events == [("start", "a", 0), ("stop", "a", "crash"), ("start", "a", 1)]

Events are :class:`ProbeEvent` named tuples and compare equal to plain
tuples:

- ``("start", name, incarnation)`` when ``on_start`` runs; ``incarnation``
  is the actor's restart count (0 for the first start).
- ``("stop", name, reason)`` when ``on_stop`` runs, where ``reason`` names
  the reason the runtime passed (see :func:`stop_reason`): ``"normal"``
  (None: it exited by itself or its supervisor stopped it gracefully),
  ``"crash"`` (it was told to :class:`Crash`), ``"killed"`` (cancelled:
  its supervisor killed it after its shutdown grace ran out, which the
  runtime reports as :class:`ActorStopped`, or it was cancelled from
  outside, e.g. with its supervisor), ``"interrupted"`` (the system ended
  because of a KeyboardInterrupt or SystemExit) or ``"error:<Type>"`` for any
  other exception.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple, NoReturn, assert_never

import trio

from ..actor import Actor, ActorStopped, Request
from ..actor.lowlevel import is_cancellation
from ._errors import ProbeCrash


class ProbeEvent(NamedTuple):
    """One entry of an :class:`EventLog` (see the module docstring)."""

    kind: str  # "start" or "stop"
    name: str
    detail: int | str  # the incarnation of a start, the reason of a stop


class EventLog:
    """What probes report, in the order it happened, with the trio time of each event."""

    def __init__(self) -> None:
        self.events: list[ProbeEvent] = []
        self.times: list[float] = []

    def record(self, kind: str, name: str, detail: int | str) -> None:
        self.events.append(ProbeEvent(kind, name, detail))
        self.times.append(trio.current_time())

    def __len__(self) -> int:
        return len(self.events)

    def since(self, mark: int) -> list[ProbeEvent]:
        """Events recorded after the first ``mark`` ones (``mark = len(log)`` earlier)."""
        return self.events[mark:]

    def starts(self, name: str | None = None) -> list[ProbeEvent]:
        """Start events, of one actor if ``name`` is given."""
        return [e for e in self.events if e.kind == "start" and name in (None, e.name)]

    def stops(self, name: str | None = None) -> list[ProbeEvent]:
        """Stop events, of one actor if ``name`` is given."""
        return [e for e in self.events if e.kind == "stop" and name in (None, e.name)]

    def clear(self) -> None:
        self.events.clear()
        self.times.clear()


class Crash(Request[None], frozen=True, tag=True):
    """Raise :class:`ProbeCrash` (an abnormal exit). Tell it, or ask to get the error."""

    reason: str = "told to crash"


class Exit(Request[None], frozen=True, tag=True):
    """Stop normally (``ctx.stop()``) once this message is handled."""


class Sleep(Request[None], frozen=True, tag=True):
    """Sleep ``seconds`` of trio time inside the handler, then reply."""

    seconds: float


class Ping(Request[int], frozen=True, tag=True):
    """Reply with the incarnation (the restart count at the last start)."""


ProbeMsg = Crash | Exit | Sleep | Ping


class Probe(Actor[ProbeMsg]):
    """A serial test actor; see the module docstring."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.incarnation = -1

    @staticmethod
    def factory(log: EventLog) -> Callable[[], Probe]:
        """The factory to put in a :class:`ChildSpec` or pass to ``spawn``."""
        return functools.partial(Probe, log)

    async def on_start(self) -> None:
        self.incarnation = self.ctx.restarts
        self.log.record("start", self.ctx.name, self.incarnation)

    async def handle(self, msg: ProbeMsg) -> int | None:
        match msg:
            case Crash():
                self._on_crash(msg)
            case Exit():
                self._on_exit(msg)
            case Sleep():
                await self._on_sleep(msg)
            case Ping():
                return self._on_ping(msg)
            case _:
                assert_never(msg)
        return None

    def _on_crash(self, msg: Crash) -> NoReturn:
        raise ProbeCrash(msg.reason)

    def _on_exit(self, msg: Exit) -> None:
        self.ctx.stop()

    async def _on_sleep(self, msg: Sleep) -> None:
        await trio.sleep(msg.seconds)

    def _on_ping(self, msg: Ping) -> int:
        return self.incarnation

    async def on_stop(self, reason: BaseException | None) -> None:
        self.log.record("stop", self.ctx.name, stop_reason(reason))


def stop_reason(reason: BaseException | None) -> str:
    """How a probe's stop event names the ``reason`` given to ``on_stop``."""
    if reason is None:
        return "normal"
    if isinstance(reason, ProbeCrash):
        return "crash"
    if is_cancellation(reason) or isinstance(reason, ActorStopped):
        return "killed"
    if isinstance(reason, KeyboardInterrupt | SystemExit):
        return "interrupted"
    return f"error:{type(reason).__name__}"
