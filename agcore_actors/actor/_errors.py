"""Errors raised by the actor runtime: the ``ActorError`` branch of the tree.

Every error the runtime itself raises derives from :class:`ActorError`, which
derives from :class:`~agcore_actors.AgcoreError`::

    ActorError                  a runtime failure (never raised itself)
    ├── MailboxFull             tell_nowait found the mailbox full (retryable)
    ├── ActorStopped            the actor has stopped, or stopped under the request
    ├── ActorCrashed            the actor crashed while this request ran (retryable)
    ├── ActorParked             the actor keeps crashing and is parked for ``retry_in`` s
    ├── AskTimeout              (TimeoutError) no reply within ``seconds`` (retryable)
    ├── StartTimeout            (TimeoutError) ``on_start`` ran past its start timeout
    ├── UnencodableMessage      (TypeError) strict mode refused a message or reply
    ├── UnknownMessage          (TypeError) not an instance of the actor's message type
    ├── WrongRequestKind        (TypeError) ``ask`` of a stream request, or the reverse
    ├── WouldDeadlock           (RuntimeError) a call that could never complete
    ├── ForeignThread           (RuntimeError) a ref used from a thread outside the run
    ├── DuplicateName           (ValueError) the name is taken
    ├── NoSuchActor             (LookupError) no actor of that name
    └── SupervisorGaveUp        restart intensity exceeded

Errors raised by a handler are *not* wrapped: the asker receives the handler's
own exception object, with a note naming the actor attached (see
:meth:`BaseException.add_note`), so ``except RateLimitError`` works across an
``ask``.
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError


class ActorError(AgcoreError):
    """Base class of every error the actor runtime raises."""

    kind: ClassVar[str] = "actor"


class MailboxFull(ActorError):
    """``tell_nowait`` found the bounded mailbox full.

    Retryable: the same message may fit once the actor has caught up.
    """

    kind: ClassVar[str] = "mailbox_full"

    def __init__(self, actor: str, capacity: int) -> None:
        super().__init__(f"mailbox of actor {actor!r} is full ({capacity} messages)")
        self.actor = actor
        self.capacity = capacity

    def is_retryable(self) -> bool:
        return True


class ActorStopped(ActorError):
    """The actor has stopped for good, or stopped while the request waited.

    Raised by ``tell``/``ask`` on a stopped actor and delivered to every ask
    that was still queued (or running past the shutdown grace period) when
    the actor stopped.
    """

    kind: ClassVar[str] = "actor_stopped"

    def __init__(self, actor: str, detail: str = "has stopped") -> None:
        super().__init__(f"actor {actor!r} {detail}")
        self.actor = actor


class ActorCrashed(ActorError):
    """The request was being handled when the actor crashed or was restarted.

    The request that *caused* a crash receives the handler's own exception;
    this error goes to the other requests that were running at the same time
    (concurrent actors, a background task's crash, or a sibling stopped by a
    ``one_for_all`` restart). Queued requests are not affected: they stay in
    the mailbox and are handled by the restarted instance. Retryable: the
    request did not cause the crash.
    """

    kind: ClassVar[str] = "actor_crashed"

    def __init__(self, actor: str, cause: BaseException | None = None) -> None:
        why = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        super().__init__(f"actor {actor!r} crashed while handling this request{why}")
        self.actor = actor
        self.cause = cause

    def is_retryable(self) -> bool:
        return True


class ActorParked(ActorError):
    """The actor keeps crashing, so its supervisor has parked it (isolated it).

    Only an actor whose :class:`ChildSpec` has ``isolate`` set is parked: after that
    many crashes in a row, every request queued or sent fails at once with this error
    for ``retry_in`` seconds; then the actor is started again and tried, parked again
    (for longer) if it still crashes. Its crashes never count against its
    supervisor's restart intensity. Retryable: after ``retry_in`` seconds.
    """

    kind: ClassVar[str] = "actor_parked"

    def __init__(self, actor: str, retry_in: float, cause: str = "") -> None:
        why = f" (last crash: {cause})" if cause else ""
        super().__init__(f"actor {actor!r} keeps crashing and is parked for {retry_in:g} s{why}")
        self.actor = actor
        self.retry_in = retry_in
        self.cause = cause

    def is_retryable(self) -> bool:
        return True


class AskTimeout(ActorError, TimeoutError):
    """``ask(..., timeout=seconds)`` got no reply in time; the handler was cancelled.

    Retryable: a later ask may be answered in time.
    """

    kind: ClassVar[str] = "ask_timeout"

    def __init__(self, actor: str, seconds: float) -> None:
        super().__init__(f"actor {actor!r} did not reply within {seconds:g} s")
        self.actor = actor
        self.seconds = seconds

    @property
    def timeout(self) -> float:
        """The same as :attr:`seconds` (the name this attribute had first)."""
        return self.seconds

    def is_retryable(self) -> bool:
        return True


class StartTimeout(ActorError, TimeoutError):
    """An actor's ``on_start`` did not finish within its child spec's ``start_timeout``.

    The supervisor treats it as a failed start (a crash of that incarnation).
    """

    kind: ClassVar[str] = "start_timeout"

    def __init__(self, actor: str, seconds: float) -> None:
        super().__init__(f"actor {actor!r} did not start within {seconds:g} s")
        self.actor = actor
        self.seconds = seconds


class UnencodableMessage(ActorError, TypeError):
    """Strict mode refused a message (or reply) that msgspec cannot round-trip."""

    kind: ClassVar[str] = "unencodable_message"

    def __init__(self, actor: str, obj: object, cause: BaseException) -> None:
        super().__init__(
            f"message {type(obj).__name__} for actor {actor!r} cannot cross an actor "
            f"boundary: {cause}"
        )
        self.actor = actor
        self.cause = cause


class UnknownMessage(ActorError, TypeError):
    """The message is not an instance of the message type the actor declares.

    An actor declares its message type as the type argument of its base class
    (``class Counter(Actor[Add | Get])``); every send checks it at the sender,
    before anything is enqueued. Actors declared ``Actor[Any]`` (or with a type
    variable) accept anything and check nothing.
    """

    kind: ClassVar[str] = "unknown_message"

    def __init__(self, actor: str, msg: object, accepted: tuple[type, ...]) -> None:
        names = " | ".join(t.__name__ for t in accepted)
        super().__init__(
            f"actor {actor!r} does not handle {type(msg).__name__} messages (it takes {names})"
        )
        self.actor = actor
        self.message_type: type = type(msg)
        self.accepted = accepted


class WrongRequestKind(ActorError, TypeError):
    """``ask`` of a :class:`StreamRequest`, or ``stream`` of a plain request.

    Raised in the caller before anything is enqueued: the actor never sees it.
    """

    kind: ClassVar[str] = "wrong_request_kind"

    def __init__(self, actor: str, msg: object, call: str, right: str) -> None:
        super().__init__(
            f"{call}() of {type(msg).__name__} to actor {actor!r}: use {right}() for this message"
        )
        self.actor = actor


class WouldDeadlock(ActorError, RuntimeError):
    """A call that could never complete was refused instead of hanging.

    For example a serial actor asking itself, a ``spawn`` from ``on_start``
    under the supervisor that is starting the caller, or ``system.stop`` of the
    caller's own actor from its handler.
    """

    kind: ClassVar[str] = "would_deadlock"

    def __init__(self, actor: str, detail: str) -> None:
        super().__init__(f"actor {actor!r}: {detail}")
        self.actor = actor


class ForeignThread(ActorError, RuntimeError):
    """``tell``, ``ask`` or ``stream`` was awaited outside the system's own trio run.

    Raised before the mailbox is touched. From a worker thread (say a sync tool
    run with ``trio.to_thread.run_sync``), call ``ref.tell_nowait(msg)``, which
    works from any thread, or ``trio.from_thread.run(ref.ask, msg)``.
    """

    kind: ClassVar[str] = "foreign_thread"

    def __init__(self, actor: str, call: str) -> None:
        super().__init__(
            f"{call}() to actor {actor!r} outside the trio run of its system: from a worker "
            f"thread use ref.tell_nowait(msg) or trio.from_thread.run(ref.{call}, msg)"
        )
        self.actor = actor


class DuplicateName(ActorError, ValueError):
    """An actor with this name already exists in the system."""

    kind: ClassVar[str] = "duplicate_actor_name"

    def __init__(self, name: str) -> None:
        super().__init__(f"an actor named {name!r} already exists")
        self.name = name


class NoSuchActor(ActorError, LookupError):
    """No actor with this name is registered."""

    kind: ClassVar[str] = "no_such_actor"

    def __init__(self, name: str) -> None:
        super().__init__(f"no actor named {name!r}")
        self.name = name


class SupervisorGaveUp(ActorError):
    """A supervisor exceeded its restart intensity and stopped all its children.

    It is raised out of the supervisor, so its own parent treats it as a
    crash of that supervisor; raised out of the root supervisor it ends the
    :class:`ActorSystem` block.
    """

    kind: ClassVar[str] = "supervisor_gave_up"

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
