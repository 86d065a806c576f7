"""A counter actor under a supervisor: tell, ask, crash, restart, snapshot.

Run it with ``.venv/bin/python examples/supervised_counter.py`` (after ``./dev run`` or
``./dev test`` has set up the virtual environment).
"""

from __future__ import annotations

from typing import NoReturn, assert_never

import msgspec
import trio

from agcore_actors import (
    Actor,
    ActorSystem,
    Backoff,
    ChildSpec,
    Request,
    SupervisorSpec,
)


class Add(msgspec.Struct, frozen=True, tag=True):
    """Told: add ``by`` to the count."""

    by: int


class Get(Request[int], frozen=True, tag=True):
    """Asked: the current count."""


class Explode(msgspec.Struct, frozen=True, tag=True):
    """Told: crash (to show a restart)."""


CounterMsg = Add | Get | Explode


class Counter(Actor[CounterMsg]):
    """Counts what it is told to add; crashes when told to explode."""

    def __init__(self) -> None:
        self.count = 0

    async def handle(self, msg: CounterMsg) -> int | None:
        match msg:
            case Add():
                self._on_add(msg)
            case Get():
                return self._on_get(msg)
            case Explode():
                self._on_explode(msg)
            case _:
                assert_never(msg)
        return None

    def _on_add(self, msg: Add) -> None:
        self.count += msg.by

    def _on_get(self, msg: Get) -> int:
        return self.count

    def _on_explode(self, msg: Explode) -> NoReturn:
        raise RuntimeError("boom")


async def main() -> list[str]:
    lines: list[str] = []
    tree = SupervisorSpec(
        "counters",
        children=[ChildSpec("counter", Counter)],
        backoff=Backoff(initial=0.01),
    )
    async with ActorSystem(strict=True) as system:
        await system.start_supervisor(tree)
        counter = system.lookup("counter")
        for by in (1, 2, 3):
            await counter.tell(Add(by))
        lines.append(f"count: {await counter.ask(Get())}")
        await counter.tell(Explode())  # the instance crashes; a fresh one takes over
        lines.append(f"count after restart: {await counter.ask(Get(), timeout=5)}")
        for row in system.snapshot():
            lines.append(f"{row.kind} {row.name}: {row.state.value}, restarts={row.restarts}")
    return lines


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
