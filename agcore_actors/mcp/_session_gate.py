"""SessionGate: the tool calls of one session at a time on a connection whose wire cannot
say which call a server request belongs to (stdio).

Over stdio an ``elicitation/create`` or ``sampling/createMessage`` carries nothing that
relates it to the ``tools/call`` it serves. The client gives such a request to the one
session with calls in flight, so when several sessions share a stdio server its
connection lets the calls of only one session run at a time: :meth:`enter` returns at
once for the session whose calls are running (any number of them, concurrently) or when
none are, else waits its turn. Turns are first come, first served: once another session
waits, new calls of the running session queue behind it (no session starves), and when
the last running call leaves, the first waiting session's calls all go in together.

Cancellation: a call cancelled while it waits leaves the queue and changes nothing else;
one cancelled after it was let in (or leaving by any exception) gives its place back
through :meth:`leave` like a finished one, so the next session is never stranded.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

__all__ = ["SessionGate"]


class _Waiter:
    __slots__ = ("admitted", "session")

    def __init__(self, session: str) -> None:
        self.session = session
        self.admitted = trio.Event()


class SessionGate:
    """Lets the calls of one session at a time through (see the module docstring)."""

    def __init__(self) -> None:
        #: The session whose calls are running, and how many are.
        self.current: str | None = None
        self.running = 0
        self._queue: collections.deque[_Waiter] = collections.deque()

    @asynccontextmanager
    async def enter(self, session: str) -> AsyncIterator[None]:
        """Run the block as a call of ``session``: waits while another session's calls
        run (or are queued first); gives the place back on leaving, however it leaves."""
        if self.current is None or (self.current == session and not self._queue):
            self.current = session
            self.running += 1
        else:
            waiter = _Waiter(session)
            self._queue.append(waiter)
            try:
                await waiter.admitted.wait()
            except BaseException:
                if waiter.admitted.is_set():  # let in, then cancelled: give it back
                    self._leave()
                else:
                    self._queue.remove(waiter)
                raise
        try:
            yield
        finally:
            self._leave()

    def _leave(self) -> None:
        self.running -= 1
        if self.running:
            return
        self.current = None
        if not self._queue:
            return
        # The first waiting session goes in, with every queued call of its own.
        session = self._queue[0].session
        admitted = [w for w in self._queue if w.session == session]
        self._queue = collections.deque(w for w in self._queue if w.session != session)
        self.current = session
        self.running = len(admitted)
        for waiter in admitted:
            waiter.admitted.set()
