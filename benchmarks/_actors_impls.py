"""The three implementations measured by ``benchmarks/actors.py``, and their probes.

The same tiny actor (an ask of ``Ping(n)`` returns ``n``; a told ``Note`` is counted; an
ask of ``Count()`` returns the count) on agcore_actors (and its variants), as one trio task
reading a memory channel, and as a pykka ``ThreadingActor``; how fast each answers (asks/s,
tells/s) and how much memory each idle actor holds (see ``actors.py`` for the method).
"""

from __future__ import annotations

import gc
import math
import os
import time
import timeit
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec
import pykka
import trio

from agcore_actors import Actor, ActorSystem, Request

try:
    from agcore_actors.actor.lowlevel import message_types
except ImportError:  # an agcore_actors from before the message check (for before/after runs)
    message_types = None  # type: ignore[assignment]

#: Mailbox capacity of the channel actor: the default mailbox size of agcore_actors.
CHAN_CAPACITY = 1024
#: Asks and tells sent before each timed section.
WARMUP = 1000


# -- messages -------------------------------------------------------------------


class Ping(Request[int], frozen=True):
    """An ask; the reply is ``n``."""

    n: int


class Note(msgspec.Struct, frozen=True):
    """A tell; the actor counts it."""

    n: int


class Count(Request[int], frozen=True):
    """An ask; the reply is how many notes the actor has handled."""


Msg = Ping | Note | Count


def actor_name(i: int) -> str:
    """The name of the ``i``-th idle actor (made fresh, so memory counts it)."""
    return f"idle-actor-{i:06d}"


# -- the three implementations --------------------------------------------------


class EchoActor(Actor[Msg]):
    """The benchmark actor on agcore_actors."""

    def __init__(self) -> None:
        self.handled = 0

    async def handle(self, msg: Msg) -> int | None:
        """Reply ``n`` to a Ping, count a Note, reply the count to a Count."""
        if type(msg) is Ping:
            return msg.n
        if type(msg) is Note:
            self.handled += 1
            return None
        return self.handled


class UncheckedEcho(EchoActor, Actor[Any]):
    """The same actor declared ``Actor[Any]``: sends to it skip the message type check."""


class ConcurrentEcho(EchoActor):
    """The same actor, concurrent (a class attribute, so older versions run it too)."""

    max_concurrency = 16


#: agcore_actors variants whose ask cost is compared with the serial actor's.
VARIANTS = ("serial", "unchecked", "concurrent")
VARIANT_LABELS = {
    "serial": "serial actor (Actor[Msg], checked)",
    "unchecked": "serial actor declared Actor[Any] (unchecked)",
    "concurrent": "concurrent actor (max_concurrency=16)",
}


ChanReply = trio.MemorySendChannel[int]
ChanInbox = trio.MemoryReceiveChannel[tuple[Msg, ChanReply | None]]
ChanOutbox = trio.MemorySendChannel[tuple[Msg, ChanReply | None]]


async def chan_server(inbox: ChanInbox) -> None:
    """The benchmark actor as one trio task reading (msg, reply channel) pairs."""
    handled = 0
    async for msg, reply in inbox:
        if type(msg) is Note:
            handled += 1
        elif reply is not None:
            reply.send_nowait(msg.n if type(msg) is Ping else handled)


def start_chan_actor(nursery: trio.Nursery, name: str) -> ChanOutbox:
    """Start one channel actor called ``name``; return the channel to send to it."""
    outbox, inbox = trio.open_memory_channel[tuple[Msg, ChanReply | None]](CHAN_CAPACITY)
    nursery.start_soon(chan_server, inbox, name=name)
    return outbox


async def chan_ask(outbox: ChanOutbox, msg: Ping | Count) -> int:
    """Ask through a fresh one-slot reply channel, as plain trio code would."""
    reply_send, reply_recv = trio.open_memory_channel[int](1)
    await outbox.send((msg, reply_send))
    return await reply_recv.receive()


async def chan_tell(outbox: ChanOutbox, msg: Note) -> None:
    """Send a message that expects no reply."""
    await outbox.send((msg, None))


class PykkaEcho(pykka.ThreadingActor):
    """The benchmark actor on pykka: one thread per actor."""

    use_daemon_thread = True

    def __init__(self, name: str = "echo") -> None:
        super().__init__()
        self.name = name
        self.handled = 0

    def on_receive(self, message: Any) -> Any:
        """Reply ``n`` to a Ping, count a Note, reply the count to a Count."""
        if type(message) is Ping:
            return message.n
        if type(message) is Note:
            self.handled += 1
            return None
        return self.handled


def pykka_ask(ref: pykka.ActorRef[Any], msg: Ping | Count) -> int:
    """A blocking pykka ask, typed (pykka's ``ask`` returns ``Any``)."""
    return cast(int, ref.ask(msg))


# -- throughput -----------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    """Throughput of one implementation in one round."""

    asks: float
    tells: float


def check(what: str, got: int, expected: int) -> None:
    """Fail loudly if an actor answered wrongly (a benchmark of a broken actor is void)."""
    if got != expected:
        raise RuntimeError(f"{what}: expected {expected}, got {got}")


async def time_async(
    ask: Callable[[Any], Awaitable[int]],
    tell: Callable[[Note], Awaitable[None]],
    asks: int,
    tells: int,
) -> Rates:
    """Warm up, then time ``asks`` sequential asks and ``tells`` tells plus a flush."""
    for i in range(WARMUP):
        await ask(Ping(i))
        await tell(Note(i))
    check("warm-up count", await ask(Count()), WARMUP)
    gc.collect()

    total = 0
    start = time.perf_counter()
    for i in range(asks):
        total += await ask(Ping(i))
    ask_seconds = time.perf_counter() - start
    check("sum of ask replies", total, asks * (asks - 1) // 2)

    gc.collect()
    start = time.perf_counter()
    for i in range(tells):
        await tell(Note(i))
    handled = await ask(Count())
    tell_seconds = time.perf_counter() - start
    check("notes handled", handled, WARMUP + tells)
    return Rates(asks / ask_seconds, tells / tell_seconds)


async def _ours_rates(asks: int, tells: int) -> Rates:
    async with ActorSystem() as system:
        ref = await system.spawn(EchoActor, name="echo")
        return await time_async(ref.ask, ref.tell, asks, tells)


async def _chan_rates(asks: int, tells: int) -> Rates:
    async with trio.open_nursery() as nursery:
        outbox = start_chan_actor(nursery, "echo")

        async def ask(msg: Ping | Count) -> int:
            return await chan_ask(outbox, msg)

        async def tell(msg: Note) -> None:
            await chan_tell(outbox, msg)

        rates = await time_async(ask, tell, asks, tells)
        outbox.close()  # ends the server
    return rates


async def _variant_ask_rate(variant: str, asks: int) -> float:
    async with ActorSystem() as system:
        factory = {"serial": EchoActor, "unchecked": UncheckedEcho}.get(variant, ConcurrentEcho)
        ref = await system.spawn(factory, name="echo")
        for i in range(WARMUP):
            await ref.ask(Ping(i))
        gc.collect()
        total = 0
        start = time.perf_counter()
        for i in range(asks):
            total += await ref.ask(Ping(i))
        seconds = time.perf_counter() - start
        check("sum of ask replies", total, asks * (asks - 1) // 2)
    return asks / seconds


def variant_ask_rate(variant: str, asks: int) -> float:
    """Sequential asks/s of one agcore_actors variant (see ``VARIANTS``)."""
    return trio.run(_variant_ask_rate, variant, asks)


def type_check_ns(number: int = 2_000_000) -> float:
    """Nanoseconds of the sender's message type check, net of the loop's own cost."""
    if message_types is None:
        return math.nan
    env = {"accepts": message_types(EchoActor), "msg": Ping(1)}
    checked = timeit.timeit(
        "accepts is not None and not isinstance(msg, accepts)", globals=env, number=number
    )
    bare = timeit.timeit("accepts is not None", globals=env, number=number)
    return max(0.0, checked - bare) / number * 1e9


def ours_rates(asks: int, tells: int) -> Rates:
    """Throughput of agcore_actors (a fresh ActorSystem, strict=False)."""
    return trio.run(_ours_rates, asks, tells)


def chan_rates(asks: int, tells: int) -> Rates:
    """Throughput of the plain trio memory-channel actor."""
    return trio.run(_chan_rates, asks, tells)


def pykka_rates(asks: int, tells: int) -> Rates:
    """Throughput of a pykka ThreadingActor, asked from the main thread."""
    ref = PykkaEcho.start()
    try:
        for i in range(WARMUP):
            ref.ask(Ping(i))
            ref.tell(Note(i))
        check("warm-up count", pykka_ask(ref, Count()), WARMUP)
        gc.collect()

        total = 0
        start = time.perf_counter()
        for i in range(asks):
            total += pykka_ask(ref, Ping(i))
        ask_seconds = time.perf_counter() - start
        check("sum of ask replies", total, asks * (asks - 1) // 2)

        gc.collect()
        start = time.perf_counter()
        for i in range(tells):
            ref.tell(Note(i))
        handled = pykka_ask(ref, Count())
        tell_seconds = time.perf_counter() - start
        check("notes handled", handled, WARMUP + tells)
    finally:
        ref.stop()
    return Rates(asks / ask_seconds, tells / tell_seconds)


def pykka_pinned_rates(asks: int, tells: int) -> Rates:
    """Throughput of pykka with the client and the actor thread pinned to one CPU.

    The actor thread inherits the affinity of the thread that starts it.
    """
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        return pykka_rates(asks, tells)
    finally:
        os.sched_setaffinity(0, allowed)


RATES: dict[str, Callable[[int, int], Rates]] = {
    "ours": ours_rates,
    "chan": chan_rates,
    "pykka": pykka_rates,
    "pykka1": pykka_pinned_rates,
}


# -- memory per idle actor (runs in a child process) ----------------------------


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


class Probe:
    """Measures the memory growth between :meth:`start` and :meth:`stop`.

    ``traced`` selects the traced Python heap (tracemalloc) instead of RSS. Both
    ends run ``gc.collect()`` first.
    """

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self.base = 0

    def current(self) -> int:
        """The measured quantity now, in bytes."""
        return tracemalloc.get_traced_memory()[0] if self.traced else rss_bytes()

    def start(self) -> None:
        """Take the baseline (starting tracemalloc if traced)."""
        gc.collect()
        if self.traced:
            tracemalloc.start()
        self.base = self.current()

    def stop(self) -> int:
        """Return the growth since :meth:`start`, in bytes (stopping tracemalloc)."""
        gc.collect()
        grown = self.current() - self.base
        if self.traced:
            tracemalloc.stop()
        return grown


async def _ours_idle(n: int, probe: Probe) -> int:
    async with ActorSystem() as system:
        warm = await system.spawn(EchoActor, name="warm-up")
        check("warm-up ask", await warm.ask(Ping(7)), 7)
        probe.start()
        refs = [await system.spawn(EchoActor, name=actor_name(i)) for i in range(n)]
        for i, ref in enumerate(refs):
            check("idle actor ask", await ref.ask(Ping(i)), i)
        return probe.stop()


async def _chan_idle(n: int, probe: Probe) -> int:
    async with trio.open_nursery() as nursery:
        warm = start_chan_actor(nursery, "warm-up")
        check("warm-up ask", await chan_ask(warm, Ping(7)), 7)
        probe.start()
        outboxes = [start_chan_actor(nursery, actor_name(i)) for i in range(n)]
        for i, outbox in enumerate(outboxes):
            check("idle actor ask", await chan_ask(outbox, Ping(i)), i)
        grown = probe.stop()
        for outbox in [warm, *outboxes]:
            outbox.close()
    return grown


def ours_idle(n: int, probe: Probe) -> int:
    """Memory growth for ``n`` idle agcore_actors actors."""
    return trio.run(_ours_idle, n, probe)


def chan_idle(n: int, probe: Probe) -> int:
    """Memory growth for ``n`` idle channel actors."""
    return trio.run(_chan_idle, n, probe)


def pykka_idle(n: int, probe: Probe) -> int:
    """Memory growth for ``n`` idle pykka actors (threads)."""
    warm = PykkaEcho.start("warm-up")
    check("warm-up ask", pykka_ask(warm, Ping(7)), 7)
    probe.start()
    refs = [PykkaEcho.start(actor_name(i)) for i in range(n)]
    for i, ref in enumerate(refs):
        check("idle actor ask", pykka_ask(ref, Ping(i)), i)
    grown = probe.stop()
    pykka.ActorRegistry.stop_all()
    return grown


IDLE: dict[str, Callable[[int, Probe], int]] = {
    "ours": ours_idle,
    "chan": chan_idle,
    "pykka": pykka_idle,
}
