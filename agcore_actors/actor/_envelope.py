"""The envelope that carries one message through a mailbox, and its states.

An envelope is a request's one record from its send to its completion: the message,
the parked asker (for an ask) or the events' channel (for a stream), and where the
request is (queued, running, done, abandoned, deferred). :meth:`Envelope.complete`
wakes the asker at most once: with the reply, or with the asker's own Cancelled when
the asker was cancelled while the request ran.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import outcome
import trio
from trio.lowlevel import Abort, Task, reschedule


class AbortHandler(Protocol):
    def abort_ask(self, env: Envelope, raise_cancel: Any) -> Abort: ...


# Envelope states. Plain ints: compared on the hot path.
QUEUED: Final = 0
RUNNING: Final = 1
DONE: Final = 2
ABANDONED: Final = 3  # the asker was cancelled before the request started
DEFERRED: Final = 4  # the handler took its reply, to give it later (see _deferred)


class Envelope:
    """One message in flight, and for an ask, the parked asker waiting on it.

    An envelope is also the trio abort callback of its asker (``__call__``),
    which saves allocating one per ask. For a stream request it carries the
    channel the events go to (``sink``) and, once done, the error that ended
    the stream (``error``).
    """

    __slots__ = ("asker", "cell", "error", "msg", "raise_cancel", "scope", "sink", "state")

    def __init__(self, msg: Any, asker: Task | None, cell: AbortHandler | None = None) -> None:
        self.msg = msg
        self.asker = asker
        self.cell = cell
        self.state = QUEUED
        # Set when the asker was cancelled while the request ran: the asker is
        # then woken with this (a Cancelled) instead of the reply.
        self.raise_cancel: Any = None
        # Per-request cancel scope, only for requests of concurrent actors.
        self.scope: trio.CancelScope | None = None
        self.sink: trio.MemorySendChannel[Any] | None = None
        self.error: BaseException | None = None

    @property
    def awaited(self) -> bool:
        """Someone waits for this request to complete (an asker or a stream)."""
        return self.asker is not None or self.sink is not None

    def __call__(self, raise_cancel: Any) -> Abort:
        assert self.cell is not None
        return self.cell.abort_ask(self, raise_cancel)

    def complete(self, result: outcome.Outcome[Any]) -> bool:
        """Wake the asker with ``result``; returns False if the reply was dropped.

        A reply is dropped (and the asker woken with its Cancelled) when the
        asker was cancelled while the request ran. A stream's channel is
        closed here; an error is kept for the reader to raise.
        """
        self.state = DONE
        sink = self.sink
        if sink is not None:
            if isinstance(result, outcome.Error):
                self.error = result.error
            sink.close()
        asker = self.asker
        if asker is None:
            return True
        self.asker = None
        if self.raise_cancel is not None:
            reschedule(asker, outcome.capture(self.raise_cancel))
            return False
        reschedule(asker, result)
        return True
