"""The host's calls as the faces send them: one small trio function per call that needs
more than the host's own method (a keyword argument, a stream, a read of its state)."""

from __future__ import annotations

import functools
from collections.abc import Coroutine, Sequence
from typing import Any

from ..agent import HostSnapshot, SessionHost
from ..agent import messages as am
from ..llm import ContentPart
from ._portal import Job

__all__ = ["is_live", "live_sessions", "run_turn", "snapshot", "stream_turn"]


def run_turn(
    turn: str, parts: Sequence[ContentPart] = ()
) -> functools.partial[Coroutine[Any, Any, am.TurnResult]]:
    """``SessionHost.run`` with its keywords bound: ``run_turn(turn, parts)(host, session,
    text)`` (no coroutine of its own between the job and the host: one frame less per step)."""
    return functools.partial(SessionHost.run, turn=turn, parts=parts)


async def stream_turn(
    host: SessionHost,
    job: Job,
    session: str,
    text: str,
    turn: str,
    parts: Sequence[ContentPart] = (),
) -> None:
    """Hand each event of the turn to the job's reader (see :meth:`Job.put`)."""
    async with host.submit(session, text, turn=turn, parts=parts) as events:
        async for event in events:
            await job.put(event)


async def snapshot(host: SessionHost) -> HostSnapshot:
    return host.snapshot()


async def is_live(host: SessionHost, session: str) -> bool:
    return host.is_live(session)


async def live_sessions(host: SessionHost) -> list[str]:
    return host.live_sessions
