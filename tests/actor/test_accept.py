"""Unknown messages: every send checks the actor's declared message type, in the sender."""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import (
    Actor,
    ActorSystem,
    Request,
    StreamRequest,
    UnknownMessage,
    WrongRequestKind,
)
from agcore_actors.actor.lowlevel import declared_message_type, message_types, runtime_types

T = TypeVar("T")


class Add(msgspec.Struct, frozen=True, tag=True):
    by: int


class Get(Request[int], frozen=True, tag=True):
    pass


class Ticks(StreamRequest[int], frozen=True, tag=True):
    n: int


class Stranger(Request[int], frozen=True, tag=True):
    pass


class StrangeStream(StreamRequest[int], frozen=True, tag=True):
    pass


class Counter(Actor[Add | Get | Ticks]):
    def __init__(self) -> None:
        self.n = 0
        self.seen: list[str] = []

    async def handle(self, msg: Add | Get | Ticks) -> Any:
        self.seen.append(type(msg).__name__)
        match msg:
            case Add(by=by):
                self.n += by
                return None
            case Get():
                return self.n
            case Ticks(n=n):
                return self._ticks(n)

    async def _ticks(self, n: int) -> Any:
        for i in range(n):
            yield i


async def test_every_send_refuses_an_unknown_message_in_the_caller(system: ActorSystem) -> None:
    ref: Any = await system.spawn(Counter, name="c")
    with pytest.raises(UnknownMessage) as info:
        await ref.tell(Stranger())
    assert isinstance(info.value, TypeError)
    assert info.value.actor == "c" and info.value.message_type is Stranger
    assert info.value.accepted == (Add, Get, Ticks)
    assert info.value.kind == "unknown_message"
    with pytest.raises(UnknownMessage):
        ref.tell_nowait(Stranger())
    with pytest.raises(UnknownMessage):
        await ref.ask(Stranger())
    with pytest.raises(UnknownMessage):
        async with ref.stream(StrangeStream()):
            pass  # pragma: no cover - never entered
    # Nothing reached the actor, which never crashed.
    assert await ref.ask(Get()) == 0
    row = next(r for r in system.snapshot() if r.name == "c")
    assert (row.restarts, row.mailbox_depth) == (0, 0)


async def test_known_messages_pass_the_check(system: ActorSystem) -> None:
    ref = await system.spawn(Counter, name="c")
    await ref.tell(Add(2))
    ref.tell_nowait(Add(3))
    assert await ref.ask(Get()) == 5
    async with ref.stream(Ticks(3)) as events:
        assert [i async for i in events] == [0, 1, 2]


async def test_an_actor_of_any_accepts_everything(system: ActorSystem) -> None:
    seen: list[object] = []

    class Anything(Actor[Any]):
        async def handle(self, msg: Any) -> None:
            seen.append(msg)

    ref = await system.spawn(Anything, name="any")
    await ref.tell(Add(1))
    await ref.tell(Stranger())
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [Add(1), Stranger()]


class Box(Actor[T], Generic[T]):
    async def handle(self, msg: T) -> None:
        return None


class IntBox(Box[Add]):
    pass


class Child(Counter):
    pass


class Proto(Protocol):
    def f(self) -> None: ...


@pytest.mark.parametrize(
    ("actor_class", "expected"),
    [
        (Counter, (Add, Get, Ticks)),
        (Child, (Add, Get, Ticks)),  # inherited
        (IntBox, (Add,)),  # bound through a generic intermediate class
        (Box, None),  # a type variable: unchecked
    ],
    ids=["union", "subclass", "generic-bound", "typevar"],
)
def test_message_types_follow_the_declaration(
    actor_class: type[Actor[Any]], expected: tuple[type, ...] | None
) -> None:
    assert message_types(actor_class) == expected


def test_declared_message_type_of_a_generic_chain() -> None:
    assert declared_message_type(IntBox) is Add
    assert declared_message_type(object) is None


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (int, (int,)),
        (int | None, (int, type(None))),
        (list[int], (list,)),
        (Request[int], (Request,)),
        (Annotated[Add, "doc"], (Add,)),
        (Add | Annotated[Get, "doc"], (Add, Get)),
        (Any, None),
        (T, None),
        (Literal["a"], None),
        (Add | Literal["a"], None),  # one unchecked member leaves the whole union unchecked
        (Proto, None),  # not runtime-checkable
        ("Add", None),  # a forward reference
    ],
)
def test_runtime_types(tp: Any, expected: tuple[type, ...] | None) -> None:
    assert runtime_types(tp) == expected


async def test_an_actor_of_a_base_class_still_gets_the_kind_of_request_checked(
    system: ActorSystem,
) -> None:
    class Structs(Actor[msgspec.Struct]):
        async def handle(self, msg: msgspec.Struct) -> Any:
            if isinstance(msg, Ticks):
                return self._ticks()
            return 7

        async def _ticks(self) -> Any:
            yield 1

    ref: Any = await system.spawn(Structs, name="s")
    assert await ref.ask(Get()) == 7
    async with ref.stream(Ticks(1)) as events:
        assert [e async for e in events] == [1]
    with pytest.raises(WrongRequestKind):
        await ref.ask(Ticks(1))
    with pytest.raises(UnknownMessage):
        await ref.ask(3)
