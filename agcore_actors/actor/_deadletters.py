"""Dead letters: messages that were accepted but never handled or received.

Three things become dead letters:

- ``"stopped"``: a message still queued when its actor stopped for good (an
  ask among them also gets :class:`ActorStopped`);
- ``"parked"``: a message still queued when its supervisor parked its actor
  for crashing again and again (an ask among them also gets :class:`ActorParked`);
- ``"late_reply"``: a reply produced after its asker had given up (timeout
  or cancellation).

A message refused at the sender (mailbox full, actor already stopped or
parked) is not a dead letter: the sender got the error.

Subscribers each get a bounded buffer; a subscriber that falls behind loses
the newest letters and the loss is counted, so a slow observer can never
block an actor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import msgspec
import trio

DeadLetterReason = Literal["stopped", "late_reply", "parked"]


class DeadLetter(msgspec.Struct, frozen=True):
    recipient: str
    message: Any
    reason: DeadLetterReason
    time: float


class DeadLetters:
    """Fan-out of dead letters to any number of subscribers."""

    def __init__(self, buffer: int = 256) -> None:
        self._buffer = buffer
        self._subscribers: list[trio.MemorySendChannel[DeadLetter]] = []
        self.published = 0
        self.dropped = 0

    def publish(self, recipient: str, message: Any, reason: DeadLetterReason) -> None:
        letter = DeadLetter(recipient, message, reason, trio.current_time())
        self.published += 1
        for channel in self._subscribers:
            try:
                channel.send_nowait(letter)
            except trio.WouldBlock:
                self.dropped += 1
            except trio.BrokenResourceError:  # subscriber left; removed on exit
                pass

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[trio.MemoryReceiveChannel[DeadLetter]]:
        """Receive every dead letter published while the block is open."""
        send, receive = trio.open_memory_channel[DeadLetter](self._buffer)
        self._subscribers.append(send)
        try:
            async with receive:
                yield receive
        finally:
            self._subscribers.remove(send)
            send.close()
