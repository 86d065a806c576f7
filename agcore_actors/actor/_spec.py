"""Child specifications: what a supervisor starts, and how it treats it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import attrs

from .._validators import non_empty, non_negative, positive
from ._actor import Actor
from ._breaker import CircuitBreaker
from ._policy import DEFAULT_BACKOFF, DEFAULT_INTENSITY, Backoff, Intensity, Restart, Strategy

M = TypeVar("M")


def _count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, not {value!r}")


def _optional_count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _count(_, attribute, value)


@attrs.frozen
class ChildSpec(Generic[M]):
    """An actor child: how to make it, and how its supervisor treats it.

    The options left at None take the value the actor class declares (its
    ``max_concurrency`` and ``background_tasks`` class attributes), so one
    actor class serves every limit without a subclass per limit.
    """

    #: The actor's name, unique in its system.
    name: str = attrs.field(validator=non_empty)
    #: Makes a fresh instance for every (re)start (a class, or a function of none).
    factory: Callable[[], Actor[M]]
    #: When the supervisor restarts the child (see :class:`Restart`).
    restart: Restart = Restart.PERMANENT
    #: Seconds a stop may take: the current message, then ``on_stop`` in what is left;
    #: then the incarnation is cancelled (a handler that shields itself from
    #: cancellation still runs until it returns: trio cannot kill a task).
    shutdown: float = attrs.field(default=5.0, validator=non_negative)
    #: Messages the mailbox holds before senders wait (``tell``) or fail (``tell_nowait``).
    mailbox_size: int = attrs.field(default=1024, validator=_count)
    #: Requests that may run at once; 1 is a serial actor. None: the class's attribute.
    max_concurrency: int | None = attrs.field(default=None, validator=_optional_count)
    #: Give a serial actor ``ctx.nursery`` for background tasks. None: the class's attribute.
    background_tasks: bool | None = None
    #: Seconds ``on_start`` may take; past them the start fails with StartTimeout
    #: (a crash, for a restart) and the supervisor moves on. ``math.inf``: no limit.
    start_timeout: float = attrs.field(default=30.0, validator=positive)
    #: Isolate the child when it keeps crashing (see :mod:`._isolation`): its crashes
    #: never count against the supervisor's intensity; at the breaker's ``threshold``
    #: of crashes in a row it is parked (asks fail at once with ActorParked) for the
    #: breaker's backoff, then tried again. None: an OTP child. Shared actors (a
    #: provider, a store) take ``DEFAULT_ISOLATION``.
    isolate: CircuitBreaker | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(CircuitBreaker)),
    )


def _tuple(children: Sequence[ChildSpec[Any] | SupervisorSpec]) -> tuple[Any, ...]:
    return tuple(children)


@attrs.frozen
class SupervisorSpec:
    """A supervisor child (or the root): its children in start order and its rules."""

    #: The supervisor's name, unique in its system (shared with actor names).
    name: str = attrs.field(validator=non_empty)
    #: Children in start order; they stop in the reverse order.
    children: tuple[ChildSpec[Any] | SupervisorSpec, ...] = attrs.field(
        default=(), converter=_tuple
    )
    #: Which children one child's failure restarts (see :class:`Strategy`).
    strategy: Strategy = Strategy.ONE_FOR_ONE
    #: How many restarts within how long make the supervisor give up.
    intensity: Intensity = DEFAULT_INTENSITY
    #: The delay before each restart of a child.
    backoff: Backoff = DEFAULT_BACKOFF
    #: When this supervisor's own parent restarts it.
    restart: Restart = Restart.PERMANENT
    #: Grace for stopping this supervisor as a whole; each child has its own.
    shutdown: float = attrs.field(default=math.inf, validator=non_negative)

    def __attrs_post_init__(self) -> None:
        names = [c.name for c in self.children]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"supervisor {self.name!r}: duplicate child names {duplicates}")
