"""The Actor base class and the context the runtime gives each instance.

An actor is a class with one async handler for its message union; the type
argument of its base declares what it accepts::

    CounterMsg = Add | Get

    class Counter(Actor[CounterMsg]):
        def __init__(self) -> None:
            self.n = 0

        async def handle(self, msg: CounterMsg) -> int | None:
            match msg:
                case Add():
                    self._on_add(msg)
                case Get():
                    return self._on_get(msg)
                case _:
                    assert_never(msg)
            return None

Semantics the runtime guarantees:

- Every send checks the message against the declared type (``Add | Get``
  here), in the sender: anything else raises :class:`UnknownMessage` there and
  never reaches the actor. ``Actor[Any]`` turns the check off.
- A *serial* actor (``max_concurrency`` 1, the default) handles one message
  at a time, in mailbox order, and may keep state in plain attributes.
- A *concurrent* actor (``max_concurrency`` N > 1, set on the class or per
  child with ``spawn(..., max_concurrency=N)`` / ``ChildSpec``) runs each
  request in its own task under the actor's nursery; at most N run at once
  and the mailbox is not read while N are busy, so senders feel
  back-pressure.
- The value a handler returns is the reply to an ``ask``. An exception whose
  type is listed in ``expected_errors`` goes to the asker only. Any other
  exception goes to the asker *and* crashes the instance: ``on_stop`` runs,
  and the supervisor decides whether a fresh instance (from the factory)
  takes over the same mailbox.
- A concurrent actor whose class sets ``hibernate = True`` (and keeps the
  default ``on_stop``) holds no task once idle ``hibernate_after`` seconds: the
  next message starts one again for the same instance (see :mod:`._dormant`).
- When an asker is cancelled (or its ask times out) while its request runs,
  the handler is cancelled. The asker's cancellation completes only once the
  handler has unwound, so a cancelled ask leaves nothing running.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import trio

if TYPE_CHECKING:
    from ._ref import ActorRef

M = TypeVar("M")


class ActorContext(abc.ABC, Generic[M]):
    """What an actor instance knows about its place in the system.

    The runtime sets ``self.ctx`` before ``on_start``.
    """

    __slots__ = ()

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The actor's name, unique in its system."""

    @property
    @abc.abstractmethod
    def self_ref(self) -> ActorRef[M]:
        """A ref to this actor (valid across restarts)."""

    @property
    @abc.abstractmethod
    def restarts(self) -> int:
        """How many times this actor has been restarted so far."""

    @property
    @abc.abstractmethod
    def nursery(self) -> trio.Nursery:
        """Nursery for background tasks that live as long as this incarnation.

        Available to concurrent actors and to actors with background tasks
        (``background_tasks = True`` on the class, or the spawn option). A
        background task that raises crashes the instance; all of them are
        cancelled when the instance stops.
        """

    @abc.abstractmethod
    def set_degraded(self, reason: str | None) -> None:
        """Publish whether this actor works only in part, and why.

        ``reason`` (a short line, no secrets) is shown as ``degraded`` in this
        actor's row of :meth:`ActorSystem.snapshot` until it is set again;
        None says the actor is healthy. Each incarnation starts healthy. Never
        blocks; safe to call as often as the state changes.
        """

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop this actor normally once the current message is handled.

        A normal stop is not a crash: a transient or temporary child is not
        restarted after it.
        """


class Actor(abc.ABC, Generic[M]):
    """Base class of actors; see the module docstring for the semantics."""

    #: How many requests may run at once; 1 makes the actor serial. The default
    #: for ``spawn(..., max_concurrency=...)`` / ``ChildSpec.max_concurrency``.
    max_concurrency: ClassVar[int] = 1
    #: Exceptions that are the asker's problem: replied, but not a crash.
    expected_errors: ClassVar[tuple[type[Exception], ...]] = ()
    #: Give a serial actor a nursery (``ctx.nursery``) for background tasks. The
    #: default for the ``background_tasks`` spawn / ``ChildSpec`` option.
    background_tasks: ClassVar[bool] = False
    #: A concurrent actor's first worker keeps its cancel scope while it waits for
    #: the next request: each request then costs one cancel scope less (about a
    #: third of an ask), an idle actor about 700 B more. Turn it off for actors that
    #: exist by the thousand and sit idle (sessions); leave it on for the few that
    #: are asked all the time (a provider, a tool executor, a store).
    idle_scope: ClassVar[bool] = True
    #: Let an idle concurrent actor hold no task: see :mod:`agcore_actors.actor._dormant`.
    #: Ignored for serial actors and for classes that override ``on_stop``.
    hibernate: ClassVar[bool] = False
    #: Seconds (trio's clock) a hibernating actor stays awake, its task parked, once
    #: idle: a burst of requests then pays one wake-up, not one per request.
    hibernate_after: ClassVar[float] = 0.0

    __slots__ = ("ctx",)

    ctx: ActorContext[M]

    async def on_start(self) -> None:
        """Called before the first message of each incarnation.

        An exception here is a crash (the supervisor may retry).
        """

    @abc.abstractmethod
    async def handle(self, msg: M) -> Any:
        """Handle one message; the return value is the reply to an ask."""

    async def on_stop(self, reason: BaseException | None) -> None:
        """Called when this incarnation ends; release clients, files and processes here.

        ``reason`` is None for a normal stop, else the crash, the cancellation
        that ended it, :class:`ActorStopped` when it was cancelled after its
        shutdown grace, or, when the whole system ends because of an interrupt
        or an outer cancellation, that KeyboardInterrupt, SystemExit or
        Cancelled.

        Runs shielded from cancellation, within what is left of the stop's
        ``shutdown`` grace (a stop, message and ``on_stop`` together, never takes
        longer than the grace) and never past the system's shutdown timeout.
        After the grace has run out, ``on_stop`` still runs, but already
        cancelled: synchronous cleanup happens, each await raises Cancelled.
        """
