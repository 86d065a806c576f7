"""Errors raised by the actor runtime.

Every error the runtime itself raises derives from :class:`ActorError`. Errors
raised by a handler are *not* wrapped: the asker receives the handler's own
exception object, with a note naming the actor attached (see
:meth:`BaseException.add_note`), so ``except RateLimitError`` works across an
``ask``.
"""

from __future__ import annotations


class ActorError(Exception):
    """Base class of every error the actor runtime raises."""


class MailboxFull(ActorError):
    """``tell_nowait`` found the bounded mailbox full."""

    def __init__(self, actor: str, capacity: int) -> None:
        super().__init__(f"mailbox of actor {actor!r} is full ({capacity} messages)")
        self.actor = actor
        self.capacity = capacity


class ActorStopped(ActorError):
    """The actor has stopped for good, or stopped while the request waited.

    Raised by ``tell``/``ask`` on a stopped actor and delivered to every ask
    that was still queued (or running past the shutdown grace period) when
    the actor stopped.
    """

    def __init__(self, actor: str, detail: str = "has stopped") -> None:
        super().__init__(f"actor {actor!r} {detail}")
        self.actor = actor


class ActorCrashed(ActorError):
    """The request was being handled when the actor crashed or was restarted.

    The request that *caused* a crash receives the handler's own exception;
    this error goes to the other requests that were running at the same time
    (concurrent actors, or a sibling stopped by a ``one_for_all`` restart).
    Queued requests are not affected: they stay in the mailbox and are handled
    by the restarted instance.
    """

    def __init__(self, actor: str, cause: BaseException | None = None) -> None:
        why = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        super().__init__(f"actor {actor!r} crashed while handling this request{why}")
        self.actor = actor
        self.cause = cause


class AskTimeout(ActorError, TimeoutError):
    """``ask(..., timeout=...)`` got no reply in time; the handler was cancelled."""

    def __init__(self, actor: str, timeout: float) -> None:
        super().__init__(f"actor {actor!r} did not reply within {timeout:g} s")
        self.actor = actor
        self.timeout = timeout


class UnencodableMessage(ActorError, TypeError):
    """Strict mode refused a message (or reply) that msgspec cannot round-trip."""

    def __init__(self, actor: str, obj: object, cause: BaseException) -> None:
        super().__init__(
            f"message {type(obj).__name__} for actor {actor!r} cannot cross an actor "
            f"boundary: {cause}"
        )
        self.actor = actor
        self.cause = cause


class DuplicateName(ActorError, ValueError):
    """An actor with this name already exists in the system."""

    def __init__(self, name: str) -> None:
        super().__init__(f"an actor named {name!r} already exists")
        self.name = name


class NoSuchActor(ActorError, LookupError):
    """No actor with this name is registered."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no actor named {name!r}")
        self.name = name


class SupervisorGaveUp(ActorError):
    """A supervisor exceeded its restart intensity and stopped all its children.

    It is raised out of the supervisor, so its own parent treats it as a
    crash of that supervisor; raised out of the root supervisor it ends the
    :class:`ActorSystem` block.
    """

    def __init__(
        self, supervisor: str, restarts: int, period: float, last: BaseException | None
    ) -> None:
        why = f"; last failure: {type(last).__name__}: {last}" if last is not None else ""
        super().__init__(
            f"supervisor {supervisor!r} gave up after {restarts} restarts within {period:g} s{why}"
        )
        self.supervisor = supervisor
        self.restarts = restarts
        self.period = period
        self.last = last
        if last is not None:
            self.__cause__ = last
