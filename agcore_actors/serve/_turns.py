"""Turns run apart from whoever asked for them, so a reader can leave and come back.

:class:`TurnRunner` starts each turn as a task of its own nursery, records its events,
and keeps every turn still running and the last ``keep`` finished ones, keyed by
(session, turn id): two sessions may use one turn id. Any number of readers follow a
turn from its first event (:meth:`RunningTurn.follow`); a reader that leaves — an HTTP
client that disconnects — cancels nothing: the turn runs to its end and is committed, and a later
reader gets every event again, the final one included.

Every turn ends with exactly one final event (``TurnCompleted``, ``TurnCancelled``,
``TurnSuspended`` or ``TurnFailed``): one the host refused (``SessionBusy``,
``SessionParked``) or that crashed its session gets a ``TurnFailed`` made here, one
cancelled before its own final event a ``TurnCancelled``.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

import trio

from .._errors import AgcoreError
from .._ids import new_id
from ..agent import SessionHost
from ..agent import messages as am
from ..llm import ContentPart

__all__ = ["RunningTurn", "TurnRunner"]

FINAL = (am.TurnCompleted, am.TurnCancelled, am.TurnFailed, am.TurnSuspended)
FinalEvent = am.TurnCompleted | am.TurnCancelled | am.TurnFailed | am.TurnSuspended
OUTPUT = (am.TextDelta, am.ThinkingDelta, am.ContentStarted, am.ToolCallStarted)


class RunningTurn:
    """One turn's events so far; :meth:`follow` reads them as they come."""

    def __init__(self, session: str, turn: str) -> None:
        self.session = session
        self.turn = turn
        self.events: list[am.TurnEvent] = []
        self.final: FinalEvent | None = None
        self.started_at = trio.current_time()
        #: When the model's first output (text, thinking) came, and when the turn ended
        #: (trio's clock; None: not yet).
        self.first_output_at: float | None = None
        self.ended_at: float | None = None
        self._changed = trio.Event()

    def push(self, event: am.TurnEvent) -> None:
        if self.final is not None:
            return
        self.events.append(event)
        if self.first_output_at is None and isinstance(event, OUTPUT):
            self.first_output_at = trio.current_time()
        if isinstance(event, FINAL):
            self.final = event
            self.ended_at = trio.current_time()
        self._changed.set()
        self._changed = trio.Event()

    async def follow(self) -> AsyncGenerator[am.TurnEvent, None]:
        """Every event from the first, waiting for more until the final one."""
        index = 0
        while True:
            while index < len(self.events):
                index += 1
                yield self.events[index - 1]
            if self.final is not None:
                return
            await self._changed.wait()

    async def result(self) -> am.TurnResult:
        """The turn's result, once it has ended."""
        async with aclosing(self.follow()) as events:
            async for _ in events:
                pass
        assert self.final is not None
        return self.final.result


class TurnRunner:
    """Starts turns in ``nursery`` and remembers the last ``keep`` of them."""

    def __init__(
        self,
        host: SessionHost,
        nursery: trio.Nursery,
        *,
        keep: int = 256,
        observe: Callable[[RunningTurn, am.TurnEvent], None] | None = None,
    ) -> None:
        self.host = host
        self.nursery = nursery
        self.keep = keep
        self.observe = observe
        self.turns: collections.OrderedDict[tuple[str, str], RunningTurn] = (
            collections.OrderedDict()
        )
        self.running = 0
        #: Turns started that have not reported their end yet: what admission counts. A
        #: turn reports its end (committed) before its task is done; its client may send
        #: the next turn at once, which must not find the slot still taken.
        self.open = 0
        #: Turns started that have not reported their end, per session.
        self.pending: collections.Counter[str] = collections.Counter()
        #: No more turns start (the server is shutting down).
        self.closed = False
        self._finished = 0
        self._idle = trio.Event()

    def start(
        self,
        session: str,
        text: str,
        turn: str = "",
        settings: am.ModelOverrides | None = None,
        parts: Sequence[ContentPart] = (),
    ) -> RunningTurn:
        """Start a turn (an id is chosen when ``turn`` is ""; ``settings``: its model
        settings; ``parts``: images and files after ``text``); returns at once. A turn
        this runner knows by (``session``, ``turn``) is the caller's to check first
        (:meth:`get`): starting it again replaces it."""
        running = RunningTurn(session, turn or new_id())
        self.turns[(session, running.turn)] = running
        self.running += 1
        self.open += 1
        self.pending[session] += 1
        self.nursery.start_soon(self._run, running, text, settings, parts)
        return running

    def get(self, session: str, turn: str) -> RunningTurn | None:
        return self.turns.get((session, turn))

    def _forget_finished(self) -> None:
        """Keep at most ``keep`` finished turns, the newest: a turn that runs for ever
        holds its own events only, never those of the turns that end after it."""
        if self._finished <= self.keep:
            return
        for key, running in list(self.turns.items()):
            if running.final is not None:
                del self.turns[key]
                self._finished -= 1
                if self._finished <= self.keep:
                    return

    def _push(self, running: RunningTurn, event: am.TurnEvent) -> None:
        was_open = running.final is None
        running.push(event)
        if was_open and running.final is not None:
            self.open -= 1
            self.pending[running.session] -= 1
            if not self.pending[running.session]:
                del self.pending[running.session]
        if self.observe is not None:
            self.observe(running, event)

    async def _run(
        self,
        running: RunningTurn,
        text: str,
        settings: am.ModelOverrides | None = None,
        parts: Sequence[ContentPart] = (),
    ) -> None:
        session, turn = running.session, running.turn
        try:
            submit = self.host.submit(session, text, turn=turn, settings=settings, parts=parts)
            async with submit as events:
                async for event in events:
                    self._push(running, event)
        except AgcoreError as exc:
            self._fail(running, exc.kind, str(exc))
        except Exception as exc:  # the session's actor crashed; the host restarts it
            self._fail(running, "crash", type(exc).__name__)
        finally:
            if running.final is None:
                result = am.TurnResult(session=session, turn=turn, status="cancelled")
                self._push(running, am.TurnCancelled(result))
            self.running -= 1
            if self.turns.get((session, turn)) is running:
                self._finished += 1
                self._forget_finished()
            if not self.running:
                self._idle.set()
                self._idle = trio.Event()

    async def wait_idle(self) -> None:
        """Return once no turn runs."""
        if self.running:
            await self._idle.wait()

    def _fail(self, running: RunningTurn, kind: str, error: str) -> None:
        result = am.TurnResult(
            session=running.session,
            turn=running.turn,
            status="failed",
            error_kind=kind,
            error=error,
        )
        self._push(running, am.TurnFailed(result))
