"""What a supervisor needs from a child: an actor cell or a supervisor."""

from __future__ import annotations

import enum
from typing import Protocol

import msgspec
import trio


class State(enum.Enum):
    """Life-cycle state of an actor or supervisor, as shown in snapshots."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    RESTARTING = "restarting"  # waiting out its restart backoff
    PARKED = "parked"  # kept crashing: isolated until its next trial (see _isolation)
    STOPPED = "stopped"


class ActorInfo(msgspec.Struct, frozen=True):
    """One row of :meth:`ActorSystem.snapshot`.

    ``degraded`` is what the actor itself last published with
    :meth:`ActorContext.set_degraded`: None while it reports no trouble (and
    always for a supervisor), else why it serves only in part (for instance a
    store that reads but refuses writes because its disk is full).

    ``dormant``: a hibernating actor idle past its ``hibernate_after`` holds no
    task; it is still ``RUNNING`` (its next message wakes it).
    """

    name: str
    kind: str  # "actor" or "supervisor"
    parent: str | None
    state: State
    mailbox_depth: int
    mailbox_capacity: int
    restarts: int
    in_flight: int
    degraded: str | None = None
    dormant: bool = False


class Link(Protocol):
    """How a running child reports to its supervisor."""

    def started(self) -> None:
        """The incarnation is ready for messages."""

    def exited(self, reason: BaseException | None) -> None:
        """The incarnation ended: None for a normal exit, else the crash
        (or the Cancelled that ended it)."""


class Node(Protocol):
    """A supervised child.

    ``start`` starts one incarnation as a task in the supervisor's nursery;
    the task reports its start and its end to the link, and raises only the
    cancellation that ended it.
    """

    @property
    def name(self) -> str: ...

    restarts: int
    state: State

    def start(self, nursery: trio.Nursery, link: Link) -> None: ...

    def request_stop(self) -> None:
        """Ask the running incarnation to finish gracefully."""

    def interrupt_with(self, error: BaseException) -> None:
        """The error that requests cut short by a forced stop receive."""

    def kill(self) -> None:
        """Cancel the running incarnation now, without grace.

        Cancelling is all trio can do: a handler that shields itself from
        cancellation keeps running until it returns, and the incarnation ends
        only then.
        """

    def close(self) -> None:
        """Stop for good: refuse new messages and fail the queued ones."""

    def snapshot(self, parent: str | None, into: list[ActorInfo]) -> None: ...

    def runs_in(self, task: trio.lowlevel.Task) -> bool:
        """Whether ``task`` runs this child's code (on_start or a handler), or its subtree's."""

    def blocked_on(self) -> Node | None:
        """The node whose start or stop this one's task is waiting for, if any."""
