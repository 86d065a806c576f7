"""State shared by every actor of one system: options, names, dead letters, and
how the system is ending."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from ._deadletters import DeadLetters
from ._errors import DuplicateName

if TYPE_CHECKING:
    from ._node import Node

log = logging.getLogger("agcore_actors.actor")


class Runtime:
    """One per :class:`ActorSystem`; every cell and supervisor holds it."""

    __slots__ = (
        "dead_letters",
        "deadline",
        "fatal",
        "names",
        "on_interrupt",
        "on_stops",
        "stop_reason",
        "strict",
        "thread",
        "token",
    )

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.dead_letters = DeadLetters()
        self.names: dict[str, Node] = {}
        # The thread and run the system lives in (set when it is entered).
        self.thread = threading.get_ident()
        self.token: trio.lowlevel.TrioToken | None = None
        # The first KeyboardInterrupt or SystemExit seen in an actor: the
        # system stops in order, then raises it out of its block.
        self.fatal: BaseException | None = None
        # What ``on_stop`` of a gracefully stopped actor receives while the
        # system ends because of an interrupt or an outer cancellation.
        self.stop_reason: BaseException | None = None
        # No ``on_stop`` runs past this time (the system's shutdown timeout).
        self.deadline = math.inf
        self.on_interrupt: Callable[[], None] | None = None
        # The scopes of the on_stop calls running now (see cut_short).
        self.on_stops: set[trio.CancelScope] = set()

    def register(self, node: Node) -> None:
        if node.name in self.names:
            raise DuplicateName(node.name)
        self.names[node.name] = node

    def unregister(self, node: Node) -> None:
        if self.names.get(node.name) is node:
            del self.names[node.name]

    def cut_short(self) -> None:
        """No more time for anyone: every ``on_stop``, running or to come, is cancelled."""
        now = trio.current_time()
        self.deadline = min(self.deadline, now)
        for scope in self.on_stops:
            scope.deadline = min(scope.deadline, now)

    def interrupt(self, exc: BaseException) -> None:
        """A KeyboardInterrupt or SystemExit surfaced in an actor: end the system.

        The first one wins; the system then stops every actor in order and
        raises it out of ``async with ActorSystem()``.
        """
        if self.fatal is not None:
            return
        self.fatal = exc
        if self.stop_reason is None:
            self.stop_reason = exc
        if self.on_interrupt is not None:
            self.on_interrupt()
