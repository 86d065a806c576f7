"""What a :class:`~._session.Session` holds: the settings its host's sessions share
(:class:`SessionSettings`), what it holds only while turns run or wait (``_Busy``: the
turn lock, the queue count, the running turn) and the running turn's waits for
approvals and elicitations (``_Running``). Plain data: the rules of when each is held
and released are :class:`~._session_control.SessionControl`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Final

import attrs
import trio

from ..tools import ApprovalDecision, ApprovalRequest
from . import messages as am
from ._config import Agent, AgentConfig
from ._hooks import TurnHooks
from ._store_port import TurnStore
from ._turn import Turn, TurnPorts
from ._turn_setup import Deps

Emit = Callable[[am.TurnEvent], Awaitable[None]]


#: The facts of a session that has none (shared: an idle session holds no empty dict).
_NO_FACTS: Final[Mapping[str, str]] = MappingProxyType({})


@attrs.frozen
class SessionSettings:
    """What every session of a host shares (one object, not eight slots per session)."""

    agents: Mapping[str, Agent]
    #: The agent a new session starts with (a stored session keeps its own).
    default_agent: str
    ports: TurnPorts
    store: TurnStore
    config: AgentConfig
    max_queued: int = 4
    history_tail: int | None = 200
    commit_timeout: float = 30.0
    hooks: TurnHooks = attrs.field(factory=TurnHooks)
    #: ``deps(session id)``: the application's dependencies in each turn's run context.
    deps: Deps | None = None


class _Busy:
    """What a session holds only while turns run or wait: the turn lock (FIFO), how
    many turns wait for it, the running turn, and what info asks wait for when they
    come while the lock's holder has not loaded the session yet (see _on_info)."""

    __slots__ = ("loaded", "lock", "queued", "running")

    def __init__(self) -> None:
        self.lock = trio.StrictFIFOLock()
        self.queued = 0
        self.running: _Running | None = None
        # Made by the first info ask that waits; set and dropped when the holder has
        # loaded the session (its usage is known) or let go of the lock.
        self.loaded: trio.Event | None = None

    def wake(self) -> None:
        """Wake the info asks waiting (see ``loaded``)."""
        if self.loaded is not None:
            self.loaded.set()
            self.loaded = None


@attrs.define
class _Running:
    turn: Turn
    scope: trio.CancelScope
    emit: Emit
    approvals: dict[str, tuple[trio.Event, list[ApprovalDecision]]] = attrs.field(factory=dict)
    #: Elicitations waiting for the person, by id.
    elicitations: dict[str, tuple[trio.Event, list[am.ElicitationAnswer]]] = attrs.field(
        factory=dict
    )


SessionRequest = am.SessionMsg | ApprovalRequest
