"""Child specifications: what a supervisor starts, and how it treats it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import attrs

from ._actor import Actor
from ._policy import DEFAULT_BACKOFF, DEFAULT_INTENSITY, Backoff, Intensity, Restart, Strategy

M = TypeVar("M")


def _valid_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, not {value!r}")


def _grace(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (value >= 0 or math.isinf(value)):
        raise ValueError(f"{attribute.name} must be >= 0 seconds, not {value!r}")


def _capacity(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, not {value!r}")


@attrs.frozen
class ChildSpec(Generic[M]):
    """An actor child.

    ``factory`` makes a fresh instance for every (re)start. ``shutdown`` is
    the grace period a stop waits for the current message and ``on_stop``
    before the instance is cancelled.
    """

    name: str = attrs.field(validator=_valid_name)
    factory: Callable[[], Actor[M]]
    restart: Restart = Restart.PERMANENT
    shutdown: float = attrs.field(default=5.0, validator=_grace)
    mailbox_size: int = attrs.field(default=1024, validator=_capacity)


def _tuple(children: Sequence[ChildSpec[Any] | SupervisorSpec]) -> tuple[Any, ...]:
    return tuple(children)


@attrs.frozen
class SupervisorSpec:
    """A supervisor child (or the root): its children in start order and its rules."""

    name: str = attrs.field(validator=_valid_name)
    children: tuple[ChildSpec[Any] | SupervisorSpec, ...] = attrs.field(
        default=(), converter=_tuple
    )
    strategy: Strategy = Strategy.ONE_FOR_ONE
    intensity: Intensity = DEFAULT_INTENSITY
    backoff: Backoff = DEFAULT_BACKOFF
    restart: Restart = Restart.PERMANENT
    #: Grace for stopping this supervisor as a whole; each child has its own.
    shutdown: float = attrs.field(default=math.inf, validator=_grace)

    def __attrs_post_init__(self) -> None:
        names = [c.name for c in self.children]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"supervisor {self.name!r}: duplicate child names {duplicates}")
