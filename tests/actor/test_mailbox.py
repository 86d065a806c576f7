"""Bounded mailboxes: back-pressure, MailboxFull, order, cancel safety."""

from __future__ import annotations

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorSystem, MailboxFull, Request
from agcore_actors.actor._mailbox import Envelope, Mailbox


class Item(msgspec.Struct, frozen=True, tag=True):
    n: int


class Release(msgspec.Struct, frozen=True, tag=True):
    pass


class Seen(Request[list[int]], frozen=True, tag=True):
    pass


class Gate(Actor[Item | Release | Seen]):
    """Blocks on its first Item until a Release arrives in a side channel."""

    def __init__(self, gate: trio.Event) -> None:
        self.gate = gate
        self.seen: list[int] = []

    async def handle(self, msg: Item | Release | Seen) -> list[int] | None:
        if isinstance(msg, Seen):
            return self.seen
        if isinstance(msg, Item):
            await self.gate.wait()
            self.seen.append(msg.n)
        return None


async def test_tell_blocks_when_full_and_resumes_in_order(system: ActorSystem) -> None:
    gate = trio.Event()
    ref = await system.spawn(lambda: Gate(gate), name="gate", mailbox_size=3)
    await ref.tell(Item(0))  # taken by the handler, which blocks on the gate
    await trio.testing.wait_all_tasks_blocked()
    for n in (1, 2, 3):  # fills the mailbox
        await ref.tell(Item(n))
    with pytest.raises(MailboxFull) as info:
        ref.tell_nowait(Item(99))
    assert info.value.capacity == 3

    sent: list[int] = []

    async def producer() -> None:
        for n in (4, 5, 6):
            await ref.tell(Item(n))
            sent.append(n)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert sent == []  # back-pressure: the producer waits
        gate.set()
    assert sent == [4, 5, 6]
    assert await ref.ask(Seen()) == [0, 1, 2, 3, 4, 5, 6]


async def test_cancelled_blocked_sender_enqueues_nothing(system: ActorSystem) -> None:
    gate = trio.Event()
    ref = await system.spawn(lambda: Gate(gate), name="gate", mailbox_size=1)
    await ref.tell(Item(0))
    await trio.testing.wait_all_tasks_blocked()
    await ref.tell(Item(1))
    with trio.move_on_after(0.01):
        await ref.tell(Item(2))  # blocks: the mailbox is full
    gate.set()
    assert await ref.ask(Seen()) == [0, 1]


async def test_ask_also_waits_for_room(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    gate = trio.Event()
    ref = await system.spawn(lambda: Gate(gate), name="gate", mailbox_size=1)
    await ref.tell(Item(0))
    await trio.testing.wait_all_tasks_blocked()
    await ref.tell(Item(1))

    async def open_gate_later() -> None:
        await trio.sleep(1)
        gate.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_gate_later)
        # Waits for room, then for Item(1) to be handled: after the gate opens.
        assert await ref.ask(Seen()) == [0, 1]
        assert trio.current_time() >= 1


async def test_many_senders_never_lose_a_message(system: ActorSystem) -> None:
    gate = trio.Event()
    gate.set()
    ref = await system.spawn(lambda: Gate(gate), name="gate", mailbox_size=2)

    async def sender(base: int) -> None:
        for i in range(50):
            await ref.tell(Item(base + i))

    async with trio.open_nursery() as nursery:
        for base in range(0, 400, 100):
            nursery.start_soon(sender, base)
    seen = await ref.ask(Seen())
    assert sorted(seen) == sorted(b + i for b in range(0, 400, 100) for i in range(50))
    for base in range(0, 400, 100):  # each sender's messages stay in its order
        mine = [n for n in seen if base <= n < base + 100]
        assert mine == sorted(mine)


async def test_mailbox_size_must_be_positive(system: ActorSystem) -> None:
    with pytest.raises(ValueError, match="mailbox_size"):
        await system.spawn(lambda: Gate(trio.Event()), name="bad", mailbox_size=0)


class Busy(Actor[Item | Seen]):
    """A concurrent actor whose Items wait for a shared gate."""

    max_concurrency = 2

    def __init__(self, gate: trio.Event) -> None:
        self.gate = gate
        self.seen: list[int] = []

    async def handle(self, msg: Item | Seen) -> list[int] | None:
        if isinstance(msg, Seen):
            return self.seen
        await self.gate.wait()
        self.seen.append(msg.n)
        return None


async def test_concurrent_actor_stops_reading_while_all_slots_are_busy(
    system: ActorSystem,
) -> None:
    gate = trio.Event()
    ref = await system.spawn(lambda: Busy(gate), name="busy", mailbox_size=2)
    for n in range(4):  # two start running, two wait in the mailbox
        await ref.tell(Item(n))
        await trio.testing.wait_all_tasks_blocked()
    row = next(r for r in system.snapshot() if r.name == "busy")
    assert (row.in_flight, row.mailbox_depth) == (2, 2)
    with pytest.raises(MailboxFull):
        ref.tell_nowait(Item(99))
    gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert sorted(await ref.ask(Seen())) == [0, 1, 2, 3]


async def test_withdrawn_asks_free_their_mailbox_slots(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    gate = trio.Event()
    ref = await system.spawn(lambda: Gate(gate), name="gate", mailbox_size=4)
    await ref.tell(Item(0))  # the handler blocks on the gate
    await trio.testing.wait_all_tasks_blocked()
    for _ in range(4):  # four asks time out while queued
        with trio.move_on_after(1):
            await ref.ask(Seen())
    for n in (1, 2, 3, 4):  # their slots are free again
        ref.tell_nowait(Item(n))
    gate.set()
    assert await ref.ask(Seen()) == [0, 1, 2, 3, 4]


async def test_a_freed_slot_goes_to_the_blocked_sender_not_to_a_newcomer() -> None:
    mailbox = Mailbox("m", 1)
    first, blocked, newcomer = (
        Envelope("first", None),
        Envelope("blocked", None),
        Envelope("new", None),
    )
    mailbox.put_nowait(first)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mailbox.put, blocked)  # waits: the mailbox is full
        await trio.testing.wait_all_tasks_blocked()
        assert mailbox.get_nowait() is first  # frees the slot and wakes the blocked sender
        with pytest.raises(MailboxFull):  # before it has run: the slot is its, not ours
            mailbox.put_nowait(newcomer)
    assert mailbox.get_nowait() is blocked
    assert mailbox.get_nowait() is None
