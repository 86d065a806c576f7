"""What a Session needs from the session store, as one small interface.

A turn is two writes: :meth:`TurnStore.begin` makes the user's message durable and
opens the turn; :meth:`TurnStore.commit` adds everything else (assistant and tool
messages, usage, agent, facts) in one transaction and closes it. Both check the
session's version (compare-and-set), so a stale writer can never interleave turns.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from ..llm import Message as ChatMessage
from ..llm import Usage

__all__ = ["SessionSnapshot", "TurnStore"]


class SessionSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A session as loaded: the tail of its transcript (valid for any provider), its
    facts, the agent that owns it, and the counters a session enforces limits with."""

    session: str
    version: int
    agent: str = ""
    history: list[ChatMessage] = msgspec.field(default_factory=list)
    facts: dict[str, str] = msgspec.field(default_factory=dict)
    usage: Usage = msgspec.field(default_factory=Usage)
    turns: int = 0
    #: A turn that was open when the session was loaded and has just been repaired.
    repaired_turn: str | None = None


class TurnStore(Protocol):
    """The session store as a Session uses it (see the module docstring)."""

    async def load(self, session: str, tail: int | None) -> SessionSnapshot:
        """The session (a new, empty one at version 0 if it does not exist), with an
        interrupted turn repaired first."""
        ...

    async def begin(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], agent: str
    ) -> int:
        """Open ``turn`` with ``messages``; the new version."""
        ...

    async def commit(
        self,
        session: str,
        turn: str,
        version: int,
        *,
        messages: list[ChatMessage],
        usage: Usage,
        agent: str,
        status: str,
        facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> int:
        """Close ``turn`` with ``messages``, usage and facts in one transaction; the new
        version."""
        ...

    async def set_facts(
        self, session: str, version: int, facts_set: dict[str, str], facts_removed: list[str]
    ) -> int:
        """Change facts outside a turn; the new version."""
        ...
