"""A program for the SIGINT test: three actors, then it waits for a signal.

``python -m tests.actor.sigint_child busy`` keeps actor ``b`` in a handler that never
yields (where a real SIGINT lands in the handler's own code); ``idle`` leaves every actor
parked (SIGINT then reaches the main task); ``stubborn`` is idle, but ``c``'s ``on_stop``
takes 30 s (a second SIGINT cuts it short). Each actor prints ``stop <name> <reason>``
from ``on_stop``; the program prints ``interrupted`` and exits 130 when KeyboardInterrupt
comes out of ``trio.run``.
"""

from __future__ import annotations

import sys
import time

import msgspec
import trio

from agcore_actors import Actor, ActorSystem


class Spin(msgspec.Struct, frozen=True, tag=True):
    """Run without ever yielding to trio."""


def say(line: str) -> None:
    print(line, flush=True)


class Member(Actor[Spin]):
    def __init__(self, name: str, stubborn: bool = False) -> None:
        self.name = name
        self.stubborn = stubborn

    async def handle(self, msg: Spin) -> None:
        say("busy")
        while True:
            time.sleep(0.01)  # noqa: ASYNC251 - blocking on purpose: SIGINT must land here

    async def on_stop(self, reason: BaseException | None) -> None:
        try:
            if self.stubborn:
                say(f"stopping {self.name}")
                await trio.sleep(30)
        finally:
            say(f"stop {self.name} {type(reason).__name__}")


def member(name: str, mode: str) -> Member:
    return Member(name, stubborn=mode == "stubborn" and name == "c")


async def main(mode: str) -> None:
    async with ActorSystem() as system:
        for name in "abc":
            await system.spawn(
                lambda name=name: member(name, mode),  # type: ignore[misc]
                name=name,
                shutdown=60,
            )
        say("ready")
        if mode == "busy":
            await system.lookup("b").tell(Spin())
        await trio.sleep_forever()


if __name__ == "__main__":
    try:
        trio.run(main, sys.argv[1])
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
